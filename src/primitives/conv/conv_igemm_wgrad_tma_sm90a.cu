// The implicit GEMM's backward filter on Hopper where the tensor memory accelerator can gather
// x (BF16/FP16): dW[k][(r,s,c)] = sum over m = (n,p,q) of dy[m][k]
// x[n][p*sh-ph+r*dh][q*sw-pw+s*dw][c], the GEMM of conv_igemm_wgrad_cuda.cu with its k-tiles
// brought by TMA to a warp-specialized wgmma loop, as the forward's TMA kernel
// (conv_igemm_tma_sm90a.cu) does. The cp.async kernel (conv_igemm_wgrad_wgmma_sm90a.cu) divides
// every staged row's depth index into (n, p, q) and waits at a block barrier per 32 rows of depth.
//
// A k-tile is 64 pixels m of depth. Operand A, dy's NHWC copy read as a matrix of N*P*Q rows by
// K channels, is a 2-D box of 64 rows x 64 channels (TM / 64 of them). Operand B is x's NHWC copy
// in im2col mode: 64 output pixels walked across plane and image edges, each read at one tap's
// offset, by 64 channels; GEMM column j is channel j % cpad of tap j / cpad, where each tap's
// channels of a group are padded to cpad, whole 64-channel boxes (the padded columns are computed
// and dropped: they are never summed into anything). Both operands land depth-major in wgmma's
// 128-byte swizzle layout, read as MN-major operands (8-row atoms of 1 KiB along the depth, 64
// columns a box). Past the depth's end dy's rows are zeros, so whatever x brings there adds none.
//
// Block: one warpgroup multiplies a TM x 128 tile (TM = 128, or 64 where a group has no more
// output channels), one warp loads; 3 stages of 32 KiB (TM = 128) or 4 of 24 KiB leave room for
// two blocks an SM. The depth is split over blocks (WgradGeo's splits), each writing its partial
// filter in GEMM column order; finish_kernel adds them in split order.
//
// Built only for sm_90a (CMake compiles the *_sm90a.cu files for that target alone).
#include "primitives/conv/conv_igemm_wgmma.cuh"
#include "primitives/conv/conv_igemm_wgrad.cuh"
#include "primitives/conv/conv_tma.cuh"

namespace crema::prim::cuda::igemm {
namespace {

constexpr int kMathThreads = 128;            // the multiplying warpgroup
constexpr int kThreads = kMathThreads + 32;  // and the loading warp
constexpr int kBox = kWgradTmaDepth * 128;   // bytes of a 64-row x 128-byte box
constexpr int kTileN = kWgradTile;           // 128 columns: two boxes of B
template <int TM>
constexpr int kStages = TM == 128 ? 3 : 4;
template <int TM>
constexpr int kStage = (TM / 64 + kTileN / 64) * kBox;
template <int TM>
constexpr int kSmem = kStages<TM>* kStage<TM> + 2 * kStages<TM> * 8 + kWgmmaAlign;

template <MathMode M, int TM>
__global__ void __launch_bounds__(kThreads)
    wgrad_tma_kernel(const __grid_constant__ CUtensorMap dy_map,
                     const __grid_constant__ CUtensorMap x_map, WgradGeo g,
                     float* __restrict__ part) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(M != MathMode::kTF32, "TF32 operands cannot be read MN-major");
  constexpr int kK = 128 / int(sizeof(Bits<M>));  // channels of a box: 64
  constexpr int kA = TM / 64 * kBox;              // bytes of a stage's A
  extern __shared__ unsigned char smem_raw[];
  unsigned char* const smem = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + kWgmmaAlign - 1) & ~uintptr_t(kWgmmaAlign - 1));
  uint64_t* const full = reinterpret_cast<uint64_t*>(smem + kStages<TM> * kStage<TM>);
  uint64_t* const empty = full + kStages<TM>;
  const int tid = threadIdx.x;
  const int m0 = blockIdx.x * TM, n0 = blockIdx.y * kTileN;
  const int grp = blockIdx.z / g.splits, split = blockIdx.z % g.splits;
  const int k_tiles = (g.depth + kWgradTmaDepth - 1) / kWgradTmaDepth;
  const int kt0 = split * g.tiles, tiles = min(k_tiles, kt0 + g.tiles) - kt0;
  // B's boxes in this tile: the last column tile may hold one.
  const int boxes = min(kTileN, g.gk - n0) / kK;
  if (tid == 0) {
    for (int s = 0; s < kStages<TM>; ++s) {
      barrier_init(full + s, 1);
      barrier_init(empty + s, kMathThreads / 32);
    }
    barrier_init_fence();
  }
  __syncthreads();

  if (tid >= kMathThreads) {  // the loading warp: one thread issues every copy
    if (tid != kMathThreads) return;
    prefetch_map(&dy_map);
    prefetch_map(&x_map);
    // Each box of B: its channels and tap offset (columns n0 + 64 b on).
    int chan[kTileN / 64];
    uint16_t ow[kTileN / 64], oh[kTileN / 64];
#pragma unroll
    for (int b = 0; b < kTileN / 64; ++b) {
      const int j = n0 + b * kK, tap = j / g.cpad, r = tap / g.s, s = tap - r * g.s;
      chan[b] = grp * g.cg + j - tap * g.cpad;
      ow[b] = uint16_t(s * g.dw);
      oh[b] = uint16_t(r * g.dh);
    }
    const int bytes = kA + boxes * kBox;
    for (int i = 0; i < tiles; ++i) {
      const int st = i % kStages<TM>;
      if (i >= kStages<TM>) barrier_wait(empty + st, (i / kStages<TM> - 1) & 1);
      unsigned char* const as = smem + st * kStage<TM>;
      barrier_expect(full + st, bytes);
      const int m = (kt0 + i) * kWgradTmaDepth;
      const int n = int(g.pq.div(uint32_t(m))), pq = m - n * int(g.pq.d);
      const int p = int(g.q.div(uint32_t(pq))), q = pq - p * int(g.q.d);
#pragma unroll
      for (int a = 0; a < TM / 64; ++a)
        load_tile(as + a * kBox, &dy_map, full + st, grp * g.kg + m0 + a * kK, m);
#pragma unroll
      for (int b = 0; b < kTileN / 64; ++b)
        if (b < boxes)
          load_im2col(as + kA + b * kBox, &x_map, full + st, chan[b], q * g.sw - g.pw,
                      p * g.sh - g.ph, n, ow[b], oh[b]);
    }
    return;
  }

  float acc[TM / 64][kTileN / 2];
#pragma unroll
  for (int h = 0; h < TM / 64; ++h)
#pragma unroll
    for (int i = 0; i < kTileN / 2; ++i) acc[h][i] = 0.f;
  // Every split has a k-tile; a loop that may run none would merge the zero accumulators into
  // the multiplies' path, and ptxas would then serialize every wgmma.
  int i = 0;
  do {
    const int st = i % kStages<TM>;
    barrier_wait(full + st, (i / kStages<TM>)&1);
    const unsigned char* const as = smem + st * kStage<TM>;
    const unsigned char* const bs = as + kA;
    wgmma_fence();
#pragma unroll
    for (int step = 0; step < kWgradTmaDepth / 16; ++step)  // k16: two 8-row atoms
#pragma unroll
      for (int h = 0; h < TM / 64; ++h)
        wgmma<M, kTileN, true>(acc[h], descriptor<128>(as + h * kBox + step * 2048, kBox, 1024),
                               descriptor<128>(bs + step * 2048, kBox, 1024));
    wgmma_commit();
    wgmma_wait<1>();  // k-tile i - 1's multiplies are done: its stage may be refilled
    if (i > 0 && (tid & 31) == 0) barrier_arrive(empty + (i - 1) % kStages<TM>);
  } while (++i < tiles);
  wgmma_wait<0>();

  // This split's partial filter, rows grp*Kg + row, GEMM columns in order.
  float* out = part + (int64_t(split) * g.k + grp * g.kg) * g.gk;
  const int warp = tid >> 5, lane = tid & 31, gid = lane >> 2, tig = lane & 3;
#pragma unroll
  for (int h = 0; h < TM / 64; ++h)
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const int row = m0 + h * 64 + warp * 16 + gid + hi * 8;
      if (row >= g.kg) continue;
#pragma unroll
      for (int c = 0; c < kTileN / 8; ++c) {
        const int col = n0 + 8 * c + 2 * tig;  // even, and gk is even: both or neither
        if (col < g.gk)
          *reinterpret_cast<float2*>(out + int64_t(row) * g.gk + col) =
              make_float2(acc[h][4 * c + 2 * hi], acc[h][4 * c + 2 * hi + 1]);
      }
    }
#else
  __trap();  // built for sm_90a only
#endif
}

template <MathMode M, int TM>
void launch(cudaStream_t st, const WgradGeo& g, const void* dy, const void* x, float* part,
            int groups) {
  constexpr int smem = kSmem<TM>;
  allow_shared_memory<wgrad_tma_kernel<M, TM>>(smem, "wgrad_tma_kernel shared memory");
  const CUtensorMap dy_map =
      tiled_map<M>(dy, g.k, g.depth, kWgradTmaDepth, "cuTensorMapEncodeTiled (convolution dy)");
  const int p = int(g.pq.d / g.q.d), q = int(g.q.d), n = g.depth / int(g.pq.d);
  const CUtensorMap x_map =
      im2col_map<M>(x, g.c, g.w, g.h, n, p, q, g.sh, g.sw, -g.ph, -g.pw, kWgradTmaDepth);
  const dim3 grid((g.kg + TM - 1) / TM, (g.gk + kTileN - 1) / kTileN, groups * g.splits);
  wgrad_tma_kernel<M, TM><<<grid, kThreads, smem, st>>>(dy_map, x_map, g, part);
  check_launch("wgrad_tma_kernel");
}

template <MathMode M>
void launch_as(int tm, cudaStream_t st, const WgradGeo& g, const void* dy, const void* x,
               float* part, int groups) {
  if (tm == 64) return launch<M, 64>(st, g, dy, x, part, groups);
  launch<M, 128>(st, g, dy, x, part, groups);
}

}  // namespace

void wgrad_tma_launch(MathMode math, int tm, cudaStream_t st, const WgradGeo& g, const void* dy,
                      const void* x, float* part, int groups) {
  if (math == MathMode::kBF16) return launch_as<MathMode::kBF16>(tm, st, g, dy, x, part, groups);
  launch_as<MathMode::kFP16>(tm, st, g, dy, x, part, groups);
}

}  // namespace crema::prim::cuda::igemm
