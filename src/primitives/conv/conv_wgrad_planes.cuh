// Internal: the TF32 backward filter over padded planes (host side and copies in
// conv_wgrad_planes_cuda.cu, the wgmma kernel in conv_wgrad_planes_sm90a.cu).
//
// wgmma reads TF32 operands K-major only, and a backward filter's depth is the output pixels,
// which NHWC tensors hold across rows. Copied plane-major instead, x as xp[c][n][H'][W'] with its
// padding written out (H' = H + 2 ph, W' = W + 2 pw) and dy as dyp[k][n][H'][W'] at the same
// strides (zeros past its P x Q corner), both rows of one flat index v = (n H' + h) W' + w, a
// stride-1 convolution's tap (r, s) becomes one shift of that index:
//   dW[k][c][r][s] = sum_v dyp[k][v] * xp[c][v + r dh W' + s dw]
// a GEMM per group of R*S*Cg rows (tap-major: row t Cg + c) by Kg columns over the copies' whole
// depth, both operands' depth along memory. The padded positions add zero multiplies: 1 -
// P Q / (H' W') of the depth (CaffeNet's 13 x 13 planes in 15 x 15: 25%).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace crema::prim::cuda::igemm {

constexpr int kPlanesDepth = 32;   // depth of a k-tile: 128 bytes of TF32 values
constexpr int kPlanesTileM = 128;  // GEMM rows of a block: two warpgroups of 64
constexpr int kPlanesBoxRows = 8;  // rows of one of x's boxes: 8 channels of one tap

struct PlanesGeo {
  int rows, kg;    // GEMM rows (taps x channels of a group), columns (output channels of a group)
  int cg, s;       // channels of a group, filter width
  int wp, dh, dw;  // padded plane width; tap (r, s) shifts the depth by r dh W' + s dw
  int depth;       // the copies' row length: N H' W' rounded up to 4 values (16 bytes)
  int k;           // output channels of all groups
  int splits, tiles;  // depth splits, k-tiles per split
};

// The kernel's column tiles (wgmma widths), and the one a group of kg output channels takes:
// the fewest padded columns, the wider on a tie (CaffeNet's 384: two of 192). 256 columns would
// need more registers than a thread of a 288-thread block has, and ptxas would serialize the
// wgmma.
constexpr int kPlanesWidths[] = {64, 96, 128, 192};
inline int planes_width(int kg) {
  int best = 192;
  for (int w : kPlanesWidths)
    if ((kg + w - 1) / w * w <= (kg + best - 1) / best * best) best = w;
  return best;
}

// The partial filters of the splits into part[split][k][row] (as the mma.sync kernel writes its
// GEMM columns), from the copies xp (C rows) and dyp (K rows) of g.depth values each.
void wgrad_planes_launch(cudaStream_t st, const PlanesGeo& g, const uint32_t* dyp,
                         const uint32_t* xp, float* part, int groups);

}  // namespace crema::prim::cuda::igemm
