// The implicit GEMM's NHWC path on Hopper tensor cores: wgmma (warpgroup MMA, sm_90a) reads both
// operands straight from shared memory through matrix descriptors, where the mma.sync kernel
// (conv_igemm_nhwc_cuda.cu) first moves every fragment into registers with ldmatrix. The GEMM,
// the staging of its k-tiles (16-byte cp.async, 4 stages) and the epilogue are that kernel's
// (conv_igemm_nhwc.cuh); the k-tile's rows are already in the layout of wgmma's 64-byte swizzle
// mode (8-row groups 512 bytes apart, 16-byte pieces XOR-swizzled by row pair).
//
// One warpgroup a block, tile 128 x TN (TN = 128 or 64): per 32-byte step of depth (k16 for
// BF16/FP16, k8 for TF32) two m64nTN wgmma, one per 64-row half, accumulating in fp32
// registers (TN / 2 a thread per half). Each k-tile's multiplies are committed as one group and
// left running while the next tile's are issued; a stage is refilled once the group that read
// it has completed (wgmma.wait_group 1), so copies, multiplies and the next tile's wait overlap.
//
// Built only for sm_90a (CMake compiles this file alone for that target); the row that launches
// it requires compute capability 9.0.
#include "primitives/conv_igemm_nhwc.cuh"

namespace crema::prim::cuda::igemm {
namespace {

// wgmma's shared-memory matrix descriptor for a K-major operand in the 64-byte swizzle mode:
// start address, leading byte offset (unused by swizzled K-major layouts: 1), stride byte offset
// between 8-row groups (8 rows x 64 bytes), swizzle mode 2 (64 bytes). The start must sit on a
// 512-byte boundary plus the k step's byte offset.
__device__ __forceinline__ uint64_t descriptor(const void* p) {
  const uint32_t a = uint32_t(__cvta_generic_to_shared(p));
  return uint64_t((a & 0x3FFFF) >> 4) | uint64_t(1) << 16 | uint64_t(512 >> 4) << 32 |
         uint64_t(2) << 62;
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

// d (64 x N fp32, the warpgroup's fragments) += a b^T over one 32-byte step of depth: a 64 rows
// and b N rows, both K-major in shared memory (scale-d true: accumulate).
template <MathMode M, int N>
__device__ __forceinline__ void wgmma(float* d, uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (N == 128 && M == MathMode::kBF16)
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
        ", %64, %65, p, 1, 1, 0, 0;\n}\n"
        : CREMA_WGMMA_D64
        : "l"(a), "l"(b), "r"(1));
  else if constexpr (N == 128 && M == MathMode::kFP16)
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
        ", %64, %65, p, 1, 1, 0, 0;\n}\n"
        : CREMA_WGMMA_D64
        : "l"(a), "l"(b), "r"(1));
  else if constexpr (N == 128)
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
        ", %64, %65, p, 1, 1;\n}\n"
        : CREMA_WGMMA_D64
        : "l"(a), "l"(b), "r"(1));
  else if constexpr (M == MathMode::kBF16)
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
        ", %32, %33, p, 1, 1, 0, 0;\n}\n"
        : CREMA_WGMMA_D32
        : "l"(a), "l"(b), "r"(1));
  else if constexpr (M == MathMode::kFP16)
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
        ", %32, %33, p, 1, 1, 0, 0;\n}\n"
        : CREMA_WGMMA_D32
        : "l"(a), "l"(b), "r"(1));
  else
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
        ", %32, %33, p, 1, 1;\n}\n"
        : CREMA_WGMMA_D32
        : "l"(a), "l"(b), "r"(1));
#else
  __trap();  // built for sm_90a only
#endif
}

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

constexpr int kAlign = 1024;  // the dynamic shared memory is aligned up to this by hand

template <MathMode M, int TN>
__global__ void __launch_bounds__(kNhwcThreads)
    nhwc_wgmma_kernel(NhwcGeo g, const Bits<M>* __restrict__ a_src,
                      const Bits<M>* __restrict__ b_src, const Piece* __restrict__ pieces,
                      NhwcOut o) {
  using T = Bits<M>;
  constexpr int kK = nhwc_tile_k<M>();
  constexpr int kStage = (kNhwcTileM + TN) * kK;  // values
  extern __shared__ unsigned char smem_raw[];
  T* const smem = reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(smem_raw) + kAlign - 1) &
                                       ~uintptr_t(kAlign - 1));
  const int tid = threadIdx.x;
  const int m0 = blockIdx.x * kNhwcTileM, n0 = blockIdx.y * TN, grp = blockIdx.z;
  const NhwcStager<M, TN> stager(g, m0, n0, grp, tid);
  auto issue = [&](int kt, int st) {
    T* as = smem + st * kStage;
    stager.issue(g, a_src, b_src, pieces, kt, as, as + kNhwcTileM * kK);
  };

  float acc[2][TN / 2];
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int i = 0; i < TN / 2; ++i) acc[h][i] = 0.f;

  const int k_tiles = (g.gk + kK - 1) / kK;
#pragma unroll
  for (int s = 0; s < kNhwcStages - 1; ++s) {
    if (s < k_tiles) issue(s, s);
    copy_commit();
  }
  for (int kt = 0; kt < k_tiles; ++kt) {
    copy_wait<kNhwcStages - 2>();
    fence_shared_for_wgmma();
    __syncthreads();
    const unsigned char* as =
        reinterpret_cast<const unsigned char*>(smem + (kt % kNhwcStages) * kStage);
    const unsigned char* bs = as + kNhwcTileM * kNhwcRowBytes;
    wgmma_fence();
#pragma unroll
    for (int step = 0; step < 2; ++step)  // 32 bytes of depth each
#pragma unroll
      for (int h = 0; h < 2; ++h)
        wgmma<M, TN>(acc[h], descriptor(as + h * 64 * kNhwcRowBytes + step * 32),
                     descriptor(bs + step * 32));
    wgmma_commit();
    wgmma_wait<1>();  // tile kt - 1's multiplies are done: its stage may be refilled
    const int next = kt + kNhwcStages - 1;
    if (next < k_tiles) issue(next, next % kNhwcStages);
    copy_commit();
  }
  wgmma_wait<0>();
  copy_wait<0>();

  // Fragment of half h: warp w holds rows 16 w + gid (+ 8), columns 8 i + 2 tig (+ 1).
  const int warp = tid >> 5, lane = tid & 31, gid = lane >> 2, tig = lane & 3;
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const int m = m0 + h * 64 + warp * 16 + gid + hi * 8;
      if (m >= g.gm) continue;
      float* orow = nhwc_out_row(g, o.out, m);
#pragma unroll
      for (int i = 0; i < TN / 8; ++i)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int col = n0 + 8 * i + 2 * tig + e;
          if (col < g.gn) nhwc_store(g, o, orow, grp, col, acc[h][4 * i + 2 * hi + e]);
        }
    }
}

template <MathMode M, int TN>
void launch(cudaStream_t st, const NhwcGeo& g, const void* act, const void* w, const Piece* pieces,
            const NhwcOut& o, int groups) {
  const int smem = nhwc_smem_bytes(TN) + kAlign;
  allow_shared_memory<nhwc_wgmma_kernel<M, TN>>(smem, "nhwc_wgmma_kernel shared memory");
  const dim3 grid((g.gm + kNhwcTileM - 1) / kNhwcTileM, (g.gn + TN - 1) / TN, groups);
  nhwc_wgmma_kernel<M, TN><<<grid, kNhwcThreads, smem, st>>>(
      g, static_cast<const Bits<M>*>(act), static_cast<const Bits<M>*>(w), pieces, o);
  check_launch("nhwc_wgmma_kernel");
}

template <MathMode M>
void launch_as(int tn, cudaStream_t st, const NhwcGeo& g, const void* act, const void* w,
               const Piece* pieces, const NhwcOut& o, int groups) {
  if (tn == 64) return launch<M, 64>(st, g, act, w, pieces, o, groups);
  launch<M, 128>(st, g, act, w, pieces, o, groups);
}

}  // namespace

void nhwc_wgmma_launch(MathMode math, int tn, cudaStream_t st, const NhwcGeo& g, const void* act,
                       const void* w, const Piece* pieces, const NhwcOut& o, int groups) {
  switch (math) {
    case MathMode::kTF32:
      return launch_as<MathMode::kTF32>(tn, st, g, act, w, pieces, o, groups);
    case MathMode::kBF16:
      return launch_as<MathMode::kBF16>(tn, st, g, act, w, pieces, o, groups);
    default:
      return launch_as<MathMode::kFP16>(tn, st, g, act, w, pieces, o, groups);
  }
}

}  // namespace crema::prim::cuda::igemm
