// The implicit GEMM's backward filter on Hopper tensor cores (BF16/FP16): the mma.sync kernel's
// GEMM (conv_igemm_wgrad_cuda.cu: dW[k][(r,s,c)] = sum over m = (n,p,q) of dy[m][k] x[..][c],
// the depth split over blocks into partial filters) with wgmma reading both operands from shared
// memory. Both operands arrive with their depth across rows (a row of dy holds output channels,
// a row of x channels of one tap), which wgmma reads as MN-major operands: the k-tile is staged
// in 128-byte swizzle atoms, 8 depth rows x 64 values (128 bytes, 16-byte pieces XOR-swizzled by
// the row), atoms of one column block 1 KiB apart along the depth and 4 KiB apart along the
// columns.
//
// One warpgroup a block, tile TM x 128 (TM = 128, or 64 where a group has no more output
// channels) by 32 of depth, 4 stages of 16-byte cp.async copies; per k16 step one m64n128 wgmma
// per 64 rows; the k-tiles flow through wgmma_pipeline.
#include "primitives/conv/conv_igemm_wgmma.cuh"
#include "primitives/conv/conv_igemm_wgrad.cuh"

namespace crema::prim::cuda::igemm {
namespace {

// Value (row = depth, col = M or N index) of an operand in 128-byte swizzle atoms: atom
// (col / 64, row / 8), each 512 values (1 KiB), four atoms (the k-tile's 32 rows) per 64 columns.
struct AtomSwizzle {
  template <MathMode M, int kRow>
  static __device__ __forceinline__ int at(int row, int col) {
    const int r = row & 7;
    return ((col >> 6) * 4 + (row >> 3)) * 512 + r * 64 + ((((col & 63) >> 3) ^ r) << 3) +
           (col & 7);
  }
};
constexpr uint32_t kAtomBytes = 1024;
constexpr uint32_t kColumnBlockBytes = 4 * kAtomBytes;  // 32 depth rows of 64 columns

template <MathMode M, int TM>
__global__ void __launch_bounds__(kWgradThreads)
    wgrad_wgmma_kernel(WgradGeo g, const Bits<M>* __restrict__ dy, const Bits<M>* __restrict__ x,
                       float* __restrict__ part) {
  static_assert(M != MathMode::kTF32, "TF32 operands cannot be read MN-major");
  using T = Bits<M>;
  constexpr int kDepth = depth_of<M>();
  constexpr int kStage = kDepth * (TM + kWgradTile);  // values
  extern __shared__ unsigned char smem_raw[];
  T* const smem = reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(smem_raw) + kWgmmaAlign - 1) &
                                       ~uintptr_t(kWgmmaAlign - 1));
  const int tid = threadIdx.x;
  const int m0 = blockIdx.x * TM, n0 = blockIdx.y * kWgradTile;
  const int grp = blockIdx.z / g.splits, split = blockIdx.z % g.splits;
  const int k_tiles = (g.depth + kDepth - 1) / kDepth;
  const int kt0 = split * g.tiles, kt1 = min(k_tiles, kt0 + g.tiles);
  const WgradStager<M, TM, AtomSwizzle> stager(g, m0, n0, grp, tid);
  auto issue = [&](int kt, int st) {
    T* as = smem + st * kStage;
    stager.issue(g, dy, x, kt, as, as + kDepth * TM);
  };

  float acc[TM / 64][64];
#pragma unroll
  for (int h = 0; h < TM / 64; ++h)
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[h][i] = 0.f;

  wgmma_pipeline<kWgradStages>(kt0, kt1, issue, [&](int st) {
    const auto* as = reinterpret_cast<const unsigned char*>(smem + st * kStage);
    const unsigned char* bs = as + kDepth * TM * sizeof(T);
#pragma unroll
    for (int step = 0; step < 2; ++step)  // k16: two 8-row atoms
#pragma unroll
      for (int h = 0; h < TM / 64; ++h)
        wgmma<M, 128, true>(
            acc[h],
            descriptor<128>(as + h * kColumnBlockBytes + 2 * step * kAtomBytes, kColumnBlockBytes,
                            kAtomBytes),
            descriptor<128>(bs + 2 * step * kAtomBytes, kColumnBlockBytes, kAtomBytes));
  });

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
      for (int i = 0; i < 16; ++i) {
        const int col = n0 + 8 * i + 2 * tig;  // even, and gk is even: both or neither
        if (col < g.gk)
          *reinterpret_cast<float2*>(out + int64_t(row) * g.gk + col) =
              make_float2(acc[h][4 * i + 2 * hi], acc[h][4 * i + 2 * hi + 1]);
      }
    }
}

template <MathMode M, int TM>
void launch(cudaStream_t st, const WgradGeo& g, const void* dy, const void* x, float* part,
            int groups) {
  const int smem = wgrad_smem_bytes(TM) + kWgmmaAlign;
  allow_shared_memory<wgrad_wgmma_kernel<M, TM>>(smem, "wgrad_wgmma_kernel shared memory");
  const dim3 grid((g.kg + TM - 1) / TM, (g.gk + kWgradTile - 1) / kWgradTile, groups * g.splits);
  wgrad_wgmma_kernel<M, TM><<<grid, kWgradThreads, smem, st>>>(
      g, static_cast<const Bits<M>*>(dy), static_cast<const Bits<M>*>(x), part);
  check_launch("wgrad_wgmma_kernel");
}

template <MathMode M>
void launch_as(int tm, cudaStream_t st, const WgradGeo& g, const void* dy, const void* x,
               float* part, int groups) {
  if (tm == 64) return launch<M, 64>(st, g, dy, x, part, groups);
  launch<M, 128>(st, g, dy, x, part, groups);
}

}  // namespace

void wgrad_wgmma_launch(MathMode math, int tm, cudaStream_t st, const WgradGeo& g, const void* dy,
                        const void* x, float* part, int groups) {
  if (math == MathMode::kBF16) return launch_as<MathMode::kBF16>(tm, st, g, dy, x, part, groups);
  launch_as<MathMode::kFP16>(tm, st, g, dy, x, part, groups);
}

}  // namespace crema::prim::cuda::igemm
