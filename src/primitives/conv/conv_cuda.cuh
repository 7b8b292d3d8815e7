// Internal: the pieces the CUDA convolution rows share (conv_cuda.cu, conv_gemm1x1_cuda.cu,
// conv_igemm_cuda.cu): row-major strided-batched GEMM through cuBLAS under a math mode
// (cuda_util.cuh's gemm_batched), the bias/ReLU epilogue, the gather of planes side by side, the
// fixed-order sum of partial filter gradients, and the implicit GEMM's NHWC path.
#pragma once

#include <cstdint>

#include "primitives/conv.h"
#include "primitives/conv/conv_impl.h"
#include "primitives/cuda/cuda_index.cuh"
#include "primitives/cuda/cuda_util.cuh"

namespace crema::prim::cuda {

// One row-major operand of a batched GEMM: base pointer, leading dimension, batch stride, and
// whether it is used transposed.
template <typename T>
struct Mat {
  const T* p;
  int ld;
  int64_t stride;
  bool trans = false;
};

// Row-major C_i (m x n) = alpha * op(A_i) op(B_i) + beta * C_i for i < batch, through the
// column-major cuBLAS as C^T = op(B)^T op(A)^T. beta == 0 never reads C (cuBLAS contract).
template <typename T>
void gemm_rm(Handle& h, MathMode math, int m, int n, int k, T alpha, Mat<T> a, Mat<T> b, T beta,
             T* c, int ldc, int64_t stride_c, int batch) {
  cublasHandle_t bh = blas_of(h);
  check_cublas(cublasSetPointerMode(bh, CUBLAS_POINTER_MODE_HOST), "cublasSetPointerMode");
  check_cublas(cublasSetMathMode(bh, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  check_cublas(gemm_batched(bh, math, b.trans ? CUBLAS_OP_T : CUBLAS_OP_N,
                            a.trans ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b.p, b.ld,
                            b.stride, a.p, a.ld, a.stride, &beta, c, ldc, stride_c, batch),
               "cublas gemm strided batched");
}

// y = act(y + bias[k]) after the blended convolution, any strides.
template <typename T>
__global__ void epilogue_kernel(StridedIndex ix, const T* bias, bool relu, T* y) {
  CREMA_CUDA_LOOP(i, ix.count) {
    int k;
    const int64_t off = ix.offset(i, &k);
    T v = y[off];
    if (bias) v = add_rn(v, bias[k]);
    if (relu) v = v > T(0) ? v : T(0);
    y[off] = v;
  }
}

template <typename T>
void launch_epilogue(cudaStream_t st, const TensorDesc& yd, const T* bias, bool relu, T* y) {
  if (!bias && !relu) return;
  const StridedIndex ix(yd);
  epilogue_kernel<<<grid_for(ix.count), kBlock, 0, st>>>(ix, bias, relu, y);
  check_launch("epilogue_kernel");
}

// out[k][i*P*Q + j] = src[i][k][j] for the b images of a chunk: planes of b images side by side
// (K x B*P*Q), the layout of the chunk-wide GEMMs. One thread per out element, so both the
// writes and the reads (contiguous P*Q segments) coalesce.
template <typename T, typename I>
__global__ void gather_planes_kernel(int b, int k, I pq, const T* __restrict__ src,
                                     int64_t src_image, T* out) {
  const I ld = I(b) * pq;
  const int64_t total = int64_t(k) * ld;
  CREMA_CUDA_LOOP(i, total) {
    const I ii = I(i);
    const I kk = ii / ld;
    const I col = ii - kk * ld;
    const I img = col / pq;
    const I j = col - img * pq;
    out[i] = src[int64_t(img) * src_image + kk * pq + j];
  }
}

template <typename T>
void launch_gather_planes(cudaStream_t st, int b, int k, int64_t pq, const T* src,
                          int64_t src_image, T* out) {
  const int64_t total = int64_t(b) * k * pq;
  if (total == 0) return;
  if (total < (int64_t(1) << 31))
    gather_planes_kernel<T, uint32_t>
        <<<grid_for(total), kBlock, 0, st>>>(b, k, uint32_t(pq), src, src_image, out);
  else
    gather_planes_kernel<T, int64_t>
        <<<grid_for(total), kBlock, 0, st>>>(b, k, pq, src, src_image, out);
  check_launch("gather_planes_kernel");
}

// dw[i] = alpha * sum_img part[img][i] + beta * dw[i], images summed in order: the fixed-order
// reduction of per-image partial filters. Consecutive threads read consecutive elements.
template <typename T>
__global__ void sum_partials_kernel(int b, int64_t count, const T* __restrict__ part, T* dw,
                                    T alpha, T beta) {
  CREMA_CUDA_LOOP(i, count) {
    T s = part[i];
    for (int img = 1; img < b; ++img) s = add_rn(s, part[img * count + i]);
    dw[i] = blend_rn(s, alpha, beta, dw + i);
  }
}

// The implicit GEMM's NHWC path (conv_igemm_nhwc_cuda.cu): forward or stride-1 backward data in
// TF32/BF16/FP16 math through NHWC copies in the math format, when the inner channels per group
// fill 16-byte pieces (forward: or are padded to one, igemm_nhwc_applies). `act` is x (forward) or
// dy, `out` is y or dx, each stored as its descriptor says (f32, bf16, f16); bias and ReLU apply to
// the forward only; `wgmma` runs the GEMM on Hopper's warpgroup MMA (compute capability 9.0, a
// build with sm_90a code).
size_t igemm_nhwc_workspace(const ConvProblem& p, ConvPass pass);
// Whether the path takes a problem's half-size tensors as they are: any input; an output in f32
// or in the math's own 16-bit type (bf16 in BF16 math, f16 in FP16).
bool igemm_nhwc_takes_half(const ConvProblem& p, ConvPass pass);
void igemm_nhwc_run(Handle& h, const ConvProblem& p, ConvPass pass, const void* act, const float* w,
                    void* out, Blend blend, const float* bias, bool relu, bool wgmma);
// Its backward filter (conv_igemm_wgrad_cuda.cu): through NHWC copies of x and dy (each f32,
// bf16 or f16), the depth split over blocks into partial filters summed in order into the f32
// dw; `wgmma` as above (BF16/FP16).
size_t igemm_wgrad_workspace(Handle& h, const ConvProblem& p);
void igemm_wgrad_run(Handle& h, const ConvProblem& p, const void* x, const void* dy, float* dw,
                     Blend blend, bool wgmma);
// The Hopper row's TF32 backward filter where wgrad_planes_unsupported allows it
// (conv_wgrad_planes_cuda.cu): through plane-major copies of x and dy.
size_t wgrad_planes_workspace(Handle& h, const ConvProblem& p);
void wgrad_planes_run(Handle& h, const ConvProblem& p, const void* x, const void* dy, float* dw,
                      Blend blend);

}  // namespace crema::prim::cuda
