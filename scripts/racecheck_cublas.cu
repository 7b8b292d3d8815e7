// Batched GEMMs of ResNet-50's 1x1 convolutions at batch 2 (crema's StepSyncCuda test), through
// cuBLAS alone, with no crema code: run it bare and under compute-sanitizer's racecheck to tell
// a fault of the tool (or of cuBLAS under it) from one of crema's.
//   nvcc -O2 -arch=sm_90 scripts/racecheck_cublas.cu -lcublas -o /tmp/racecheck_cublas
//   /tmp/racecheck_cublas && compute-sanitizer --tool racecheck /tmp/racecheck_cublas
// Prints one line per GEMM and stops at the first that fails.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

namespace {

struct Shape {
  int m, n, k;  // row-major C (m x n) = A (m x k) B (k x n), per image
};

bool run(cublasHandle_t h, const Shape& s, cudaDataType type, cublasComputeType_t compute,
         const char* name) {
  const int batch = 2;
  const size_t e = type == CUDA_R_32F ? 4 : 2;
  void *a, *b, *c;
  cudaMalloc(&a, size_t(s.m) * s.k * e);
  cudaMalloc(&b, size_t(s.k) * s.n * e * batch);
  cudaMalloc(&c, size_t(s.m) * s.n * e * batch);
  cudaMemset(a, 0, size_t(s.m) * s.k * e);
  cudaMemset(b, 0, size_t(s.k) * s.n * e * batch);
  const float alpha = 1, beta = 0;
  // Column-major C^T (n x m) = B^T A^T: the filter shared by both images (stride 0).
  const cublasStatus_t st = cublasGemmStridedBatchedEx(
      h, CUBLAS_OP_N, CUBLAS_OP_N, s.n, s.m, s.k, &alpha, b, type, s.n, (long long)s.k * s.n, a,
      type, s.k, 0, &beta, c, type, s.n, (long long)s.m * s.n, batch, compute, CUBLAS_GEMM_DEFAULT);
  const cudaError_t err = cudaDeviceSynchronize();
  std::printf("%-5s m=%4d n=%4d k=%4d: cublas %d, %s\n", name, s.m, s.n, s.k, int(st),
              cudaGetErrorString(err));
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return st == CUBLAS_STATUS_SUCCESS && err == cudaSuccess;
}

}  // namespace

int main() {
  const std::vector<Shape> shapes = {{64, 3136, 64},  {256, 3136, 64},  {64, 3136, 256},
                                     {128, 784, 256}, {512, 784, 128},  {128, 784, 512},
                                     {256, 196, 512}, {1024, 196, 256}, {256, 196, 1024},
                                     {512, 49, 1024}, {2048, 49, 512},  {512, 49, 2048}};
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 2;
  for (const Shape& s : shapes)
    if (!run(h, s, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, "tf32") ||
        !run(h, s, CUDA_R_32F, CUBLAS_COMPUTE_32F, "fp32") ||
        !run(h, s, CUDA_R_16BF, CUBLAS_COMPUTE_32F, "bf16"))
      return 1;
  cublasDestroy(h);
  return 0;
}
