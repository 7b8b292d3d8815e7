// Internal: the device pieces both implicit-GEMM kernels use (conv_igemm_cuda.cu stages fp32,
// conv_igemm_nhwc_cuda.cu 16-byte pieces of NHWC copies): the padding test of a gathered
// element, the cp.async group fences, one tensor-core mma in each math format, and the opt-in
// to more than 48 KiB of shared memory.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <climits>
#include <cstdint>

#include "primitives/cuda_util.cuh"
#include "primitives/types.h"

namespace crema::prim::cuda::igemm {

// A coordinate that no tap brings into the plane (rows past the GEMM's edge, taps past its depth).
inline constexpr int kNoPoint = INT_MIN / 2;

// Whether a gathered point lies in the hmax x wmax plane (else the element is padding: zero).
__device__ __forceinline__ bool inside(int h, int w, int hmax, int wmax) {
  return unsigned(h) < unsigned(hmax) && unsigned(w) < unsigned(wmax);
}

// v rounded to TF32 (nearest, ties away), as the bits a TF32 mma operand register holds.
__device__ __forceinline__ uint32_t tf32(float v) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
  return r;
}

__device__ __forceinline__ void copy_commit() { asm volatile("cp.async.commit_group;"); }
// Waits until at most N committed copy groups are still in flight.
template <int N>
__device__ __forceinline__ void copy_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

// d += a b on one 16 x 8 tile: k16 for BF16/FP16 (two values per register, the lower k in the
// low half), k8 for TF32.
template <MathMode M>
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                    uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (M == MathMode::kTF32)
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else if constexpr (M == MathMode::kBF16)
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  __trap();  // the support rule keeps older GPUs away
#endif
}

// Lets Kernel use `bytes` of dynamic shared memory (past the default 48 KiB), once per device.
template <auto Kernel>
void allow_shared_memory(int bytes, const char* name) {
  static std::atomic<uint64_t> done{0};
  int dev = 0;
  check_cuda(cudaGetDevice(&dev), "cudaGetDevice");
  const uint64_t bit = uint64_t(1) << (dev & 63);
  if (done.load() & bit) return;
  check_cuda(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes),
             name);
  done |= bit;
}

}  // namespace crema::prim::cuda::igemm
