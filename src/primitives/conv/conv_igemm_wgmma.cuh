// Internal: the device pieces of the wgmma kernels (the *_sm90a.cu files, compiled for sm_90a
// only): shared-memory matrix descriptors, the warpgroup MMA in each math format and width, its
// fences, and the proxy fence that makes cp.async's writes visible to it. Fragment of a 64 x N
// fp32 accumulator: warp w of the warpgroup holds rows 16 w + gid and 16 w + gid + 8 (gid =
// lane / 4), register 4 i + 2 h + e being column 8 i + 2 (lane % 4) + e of row 16 w + gid + 8 h.
#pragma once

#include "primitives/conv/conv_igemm.cuh"

namespace crema::prim::cuda::igemm {

constexpr int kWgmmaAlign = 1024;  // kernels align their dynamic shared memory up to this

// wgmma's shared-memory matrix descriptor: start address, leading and stride byte offsets, and
// the swizzle mode (kSwizzle bytes: 128 -> 1, 64 -> 2, 32 -> 3). K-major, swizzled: the leading
// offset is unused (1), the stride offset separates 8-row groups. MN-major, swizzled: the
// leading offset separates swizzle atoms along M (or N), the stride offset 8-row groups along K.
// The start sits on the atom's boundary (8 rows x kSwizzle bytes) plus a k step's byte offset.
template <int kSwizzle>
__device__ __forceinline__ uint64_t descriptor(const void* p, uint32_t lead, uint32_t stride) {
  static_assert(kSwizzle == 128 || kSwizzle == 64 || kSwizzle == 32, "a swizzle mode");
  constexpr uint64_t mode = kSwizzle == 128 ? 1 : kSwizzle == 64 ? 2 : 3;
  const uint32_t a = uint32_t(__cvta_generic_to_shared(p));
  return uint64_t((a & 0x3FFFF) >> 4) | uint64_t(lead >> 4) << 16 | uint64_t(stride >> 4) << 32 |
         mode << 62;
}

#define CREMA_WGMMA_D32                                                                           \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),    \
      "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),  \
      "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),  \
      "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define CREMA_WGMMA_D64                                                                          \
  CREMA_WGMMA_D32, "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), \
      "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), \
      "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), \
      "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), \
      "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

// One wgmma over 64 (N = 128) or 32 (N = 64) accumulator registers: the instruction's shape
// and types, and its tail (the transpose flags of BF16/FP16 operands, %67 or %35; TF32 has
// none). Operands: the registers, then a and b descriptors, scale-d, the transpose flag.
#define CREMA_WGMMA_N128(INSTR, TAIL)                                               \
  asm volatile(                                                                     \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                  \
      "wgmma.mma_async.sync.aligned." INSTR                                         \
      " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "    \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, " \
      "%31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, " \
      "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, " \
      "%61, %62, %63}, %64, %65, p, 1, 1" TAIL ";\n}\n"                             \
      : CREMA_WGMMA_D64                                                             \
      : "l"(a), "l"(b), "r"(1), "n"(int(kMnMajor)))
#define CREMA_WGMMA_N64(INSTR, TAIL)                                                \
  asm volatile(                                                                     \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                  \
      "wgmma.mma_async.sync.aligned." INSTR                                         \
      " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "    \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, " \
      "%31}, %32, %33, p, 1, 1" TAIL ";\n}\n"                                       \
      : CREMA_WGMMA_D32                                                             \
      : "l"(a), "l"(b), "r"(1), "n"(int(kMnMajor)))

// d (64 x N fp32, the warpgroup's fragments) += a b over one 32-byte step of depth (k16, or k8
// in TF32): a 64 x k, b k x N, both K-major in shared memory, or both MN-major (kMnMajor: the
// operands' rows run along M and N; BF16/FP16 only). scale-d true: accumulate.
template <MathMode M, int N, bool kMnMajor>
__device__ __forceinline__ void wgmma(float* d, uint64_t a, uint64_t b) {
  static_assert(!kMnMajor || M != MathMode::kTF32, "TF32 operands are K-major only");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (N == 128 && M == MathMode::kBF16)
    CREMA_WGMMA_N128("m64n128k16.f32.bf16.bf16", ", %67, %67");
  else if constexpr (N == 128 && M == MathMode::kFP16)
    CREMA_WGMMA_N128("m64n128k16.f32.f16.f16", ", %67, %67");
  else if constexpr (N == 128)
    CREMA_WGMMA_N128("m64n128k8.f32.tf32.tf32", "");
  else if constexpr (M == MathMode::kBF16)
    CREMA_WGMMA_N64("m64n64k16.f32.bf16.bf16", ", %35, %35");
  else if constexpr (M == MathMode::kFP16)
    CREMA_WGMMA_N64("m64n64k16.f32.f16.f16", ", %35, %35");
  else
    CREMA_WGMMA_N64("m64n64k8.f32.tf32.tf32", "");
#else
  __trap();  // built for sm_90a only
#endif
}

#undef CREMA_WGMMA_N64
#undef CREMA_WGMMA_N128
#undef CREMA_WGMMA_D64
#undef CREMA_WGMMA_D32

__device__ __forceinline__ void wgmma_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}
// Waits until at most N committed wgmma groups are still running.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
#endif
}
// Makes this thread's completed cp.async writes to shared memory visible to wgmma's reads.
__device__ __forceinline__ void fence_shared_for_wgmma() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

// The k-tile loop of a wgmma kernel over tiles [kt0, kt1) with kStages shared stages, as
// igemm::pipeline is for mma.sync: issue(kt, stage) starts the copies of tile kt into a stage,
// compute(stage) issues the wgmma of a landed one. Each tile's multiplies are committed as one
// group and left running while the next tile's are issued; a stage is refilled only once the
// group that read it has completed (wait_group 1), so copies, multiplies and the next tile's
// wait overlap.
template <int kStages, typename Issue, typename Compute>
__device__ __forceinline__ void wgmma_pipeline(int kt0, int kt1, Issue&& issue, Compute&& compute) {
  pipeline_prologue<kStages>(kt0, kt1, issue);
  for (int kt = kt0; kt < kt1; ++kt) {
    copy_wait<kStages - 2>();
    fence_shared_for_wgmma();
    __syncthreads();
    wgmma_fence();
    compute((kt - kt0) % kStages);
    wgmma_commit();
    wgmma_wait<1>();  // tile kt - 1's multiplies are done: its stage may be refilled
    const int next = kt + kStages - 1;
    if (next < kt1) issue(next, (next - kt0) % kStages);
    copy_commit();
  }
  wgmma_wait<0>();
  copy_wait<0>();
}

}  // namespace crema::prim::cuda::igemm
