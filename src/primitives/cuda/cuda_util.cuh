// Internal helpers shared by the CUDA implementations (<op>_cuda.cu): the handle's stream and
// cuBLAS handle, launch geometry, launch checking and the alpha/beta blend store. Only included
// by .cu files of the primitives library.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "primitives/common/dtype_visit.h"
#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::prim::cuda {

inline cudaStream_t stream_of(const Handle& h) { return static_cast<cudaStream_t>(h.stream()); }

class LtGemms;
// What Handle::blas() points to: the stream's cuBLAS handle and its cuBLASLt GEMMs (gemm_lt.cuh).
struct BlasContext {
  cublasHandle_t blas = nullptr;
  LtGemms* lt = nullptr;
};
inline BlasContext& blas_context(const Handle& h) { return *static_cast<BlasContext*>(h.blas()); }
inline cublasHandle_t blas_of(const Handle& h) { return blas_context(h).blas; }

inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw PrimError(std::string(what) + ": " + cudaGetErrorString(e));
}

inline void check_cublas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw PrimError(std::string(what) + ": cuBLAS status " + std::to_string(int(s)));
}

// Checks the launch just made (bad configuration, missing kernel image). Asynchronous faults
// surface at the next synchronizing call, which checks too.
inline void check_launch(const char* kernel) { check_cuda(cudaGetLastError(), kernel); }

// Blocks until the work queued on h's stream is done, for a value the host needs, then raises a
// deferred error recorded meanwhile (handle.h).
inline void wait_for_stream(Handle& h, const char* what) {
  check_cuda(cudaStreamSynchronize(stream_of(h)), what);
  h.raise_deferred_error();
}

// The cuBLAS compute type of an fp32 GEMM under a math mode: each FAST type lets cuBLAS round
// the inputs to that format on tensor cores, accumulating in fp32.
inline cublasComputeType_t fp32_compute_type(MathMode m) {
  switch (m) {
    case MathMode::kTF32:
      return CUBLAS_COMPUTE_32F_FAST_TF32;
    case MathMode::kBF16:
      return CUBLAS_COMPUTE_32F_FAST_16BF;
    case MathMode::kFP16:
      return CUBLAS_COMPUTE_32F_FAST_16F;
    case MathMode::kFP32:
      break;
  }
  return CUBLAS_COMPUTE_32F;
}

inline cudaDataType cuda_data_type(DataType t) {
  return t == DataType::kBFloat16 ? CUDA_R_16BF : t == DataType::kFloat16 ? CUDA_R_16F : CUDA_R_32F;
}

// cuBLAS's Ex form on operands stored as the given types (f32, bf16, f16; A and B of one
// type), with fp32 alpha and beta.
inline cublasStatus_t gemm_batched_ex(cublasHandle_t b, cublasComputeType_t compute,
                                      cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                      int k, const float* alpha, const void* a, DataType at,
                                      int lda, long long sa, const void* bb, DataType bt, int ldb,
                                      long long sb, const float* beta, void* c, DataType ct,
                                      int ldc, long long sc, int batch) {
  return cublasGemmStridedBatchedEx(b, ta, tb, m, n, k, alpha, a, cuda_data_type(at), lda, sa, bb,
                                    cuda_data_type(bt), ldb, sb, beta, c, cuda_data_type(ct), ldc,
                                    sc, batch, compute, CUBLAS_GEMM_DEFAULT);
}

// fp32 data: the Ex form, whose compute type carries the math mode (tensor cores for
// TF32/BF16/FP16). fp64: strict DGEMM whatever the mode (a permission, see conv.h's
// ConvDesc::math).
inline cublasStatus_t gemm_batched(cublasHandle_t b, MathMode math, cublasOperation_t ta,
                                   cublasOperation_t tb, int m, int n, int k, const float* alpha,
                                   const float* a, int lda, long long sa, const float* bb, int ldb,
                                   long long sb, const float* beta, float* c, int ldc, long long sc,
                                   int batch) {
  constexpr DataType f32 = DataType::kFloat32;
  return gemm_batched_ex(b, fp32_compute_type(math), ta, tb, m, n, k, alpha, a, f32, lda, sa, bb,
                         f32, ldb, sb, beta, c, f32, ldc, sc, batch);
}
inline cublasStatus_t gemm_batched(cublasHandle_t b, MathMode, cublasOperation_t ta,
                                   cublasOperation_t tb, int m, int n, int k, const double* alpha,
                                   const double* a, int lda, long long sa, const double* bb,
                                   int ldb, long long sb, const double* beta, double* c, int ldc,
                                   long long sc, int batch) {
  return cublasDgemmStridedBatched(b, ta, tb, m, n, k, alpha, a, lda, sa, bb, ldb, sb, beta, c, ldc,
                                   sc, batch);
}

inline constexpr int kBlock = 256;

// Whether p is aligned to `bytes`: what a kernel moving vectors of that size needs.
__host__ __device__ inline bool aligned(const void* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// Blocks for a grid-stride loop over n elements: enough to fill the GPU, never more than needed.
inline unsigned grid_for(int64_t n, int block = kBlock) {
  const int64_t blocks = (n + block - 1) / block;
  return unsigned(blocks < 1 ? 1 : blocks > 65536 ? 65536 : blocks);
}

// Grid-stride loop index range for element-wise kernels.
#define CREMA_CUDA_LOOP(i, n)                                                      \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < int64_t(n); \
       i += int64_t(blockDim.x) * gridDim.x)

// Grid-stride loop over n warp-sized work items (warp w: threads 32w .. 32w + 31 of the grid),
// for kernels whose lanes cooperate by shuffles: every lane of a warp runs the same iterations.
#define CREMA_CUDA_WARP_LOOP(w, n)                                                        \
  for (int64_t w = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; w < int64_t(n); \
       w += (int64_t(blockDim.x) * gridDim.x) >> 5)

// out = alpha * v + beta * out in M, the math type of the storage type T (MathOf<T>), rounded to
// T; beta == 0 never reads out (it may hold NaN poison).
template <typename T, typename M>
__device__ __forceinline__ void blend_store(T* out, M v, M alpha, M beta) {
  *out = store_from_float<T>(beta == M(0) ? alpha * v : alpha * v + beta * M(load_as_float(*out)));
}

}  // namespace crema::prim::cuda
