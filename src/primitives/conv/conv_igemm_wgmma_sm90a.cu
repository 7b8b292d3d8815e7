// The implicit GEMM's NHWC path on Hopper tensor cores: wgmma (warpgroup MMA, sm_90a) reads both
// operands straight from shared memory through matrix descriptors, where the mma.sync kernel
// (conv_igemm_nhwc_cuda.cu) first moves every fragment into registers with ldmatrix. The GEMM,
// the staging of its k-tiles (16-byte cp.async, 4 stages) and the epilogue are that kernel's
// (conv_igemm_nhwc.cuh); the k-tile's rows are already in the layout of wgmma's 64-byte swizzle
// mode (8-row groups 512 bytes apart, 16-byte pieces XOR-swizzled by row pair).
//
// One warpgroup a block, tile 128 x TN (TN = 128 or 64): per 32-byte step of depth (k16 for
// BF16/FP16, k8 for TF32) two m64nTN wgmma, one per 64-row half, accumulating in fp32
// registers (TN / 2 a thread per half); the k-tiles flow through wgmma_pipeline.
//
// Built only for sm_90a (CMake compiles this file alone for that target); the row that launches
// it requires compute capability 9.0.
#include "primitives/conv/conv_igemm_nhwc.cuh"
#include "primitives/conv/conv_igemm_wgmma.cuh"

namespace crema::prim::cuda::igemm {
namespace {

template <MathMode M, int TN, typename O>
__global__ void __launch_bounds__(kNhwcThreads)
    nhwc_wgmma_kernel(NhwcGeo g, const Bits<M>* __restrict__ a_src,
                      const Bits<M>* __restrict__ b_src, const Piece* __restrict__ pieces,
                      NhwcOut o) {
  using T = Bits<M>;
  constexpr int kK = nhwc_tile_k<M>();
  constexpr int kStage = (kNhwcTileM + TN) * kK;  // values
  extern __shared__ unsigned char smem_raw[];
  T* const smem = reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(smem_raw) + kWgmmaAlign - 1) &
                                       ~uintptr_t(kWgmmaAlign - 1));
  const int tid = threadIdx.x;
  const int m0 = blockIdx.x * kNhwcTileM, n0 = blockIdx.y * TN, grp = blockIdx.z;
  NhwcStager<M, TN> stager(g, pieces, m0, n0, grp, tid);
  auto issue = [&](int kt, int st) {
    T* as = smem + st * kStage;
    stager.issue(g, a_src, b_src, pieces, kt, as, as + kNhwcTileM * kK);
  };

  float acc[2][TN / 2];
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int i = 0; i < TN / 2; ++i) acc[h][i] = 0.f;

  wgmma_pipeline<kNhwcStages>(0, (g.gk + kK - 1) / kK, issue, [&](int st) {
    const auto* as = reinterpret_cast<const unsigned char*>(smem + st * kStage);
    const unsigned char* bs = as + kNhwcTileM * kNhwcRowBytes;
#pragma unroll
    for (int step = 0; step < 2; ++step)  // 32 bytes of depth each
#pragma unroll
      for (int h = 0; h < 2; ++h)
        wgmma<M, TN, false>(acc[h],
                            descriptor<64>(as + h * 64 * kNhwcRowBytes + step * 32, 16, 512),
                            descriptor<64>(bs + step * 32, 16, 512));
  });

  if (g.oc == 1) {  // channels side by side (NHWC): rows of channels from shared memory
    static_assert(64 * (TN + 8) * 4 <= kNhwcStages * kStage * int(sizeof(T)),
                  "the staged half fits the stages");
    nhwc_store_staged<O, TN>(g, o, acc, m0, n0, grp, tid, reinterpret_cast<float*>(smem), 1);
    return;
  }
  nhwc_store_fragments<O, TN>(g, o, acc, m0, n0, grp, tid);
}

template <MathMode M, int TN, typename O>
void launch_out(cudaStream_t st, const NhwcGeo& g, const void* act, const void* w,
                const Piece* pieces, const NhwcOut& o, int groups) {
  const int smem = nhwc_smem_bytes(TN) + kWgmmaAlign;
  allow_shared_memory<nhwc_wgmma_kernel<M, TN, O>>(smem, "nhwc_wgmma_kernel shared memory");
  const dim3 grid((g.gm + kNhwcTileM - 1) / kNhwcTileM, (g.gn + TN - 1) / TN, groups);
  nhwc_wgmma_kernel<M, TN, O><<<grid, kNhwcThreads, smem, st>>>(
      g, static_cast<const Bits<M>*>(act), static_cast<const Bits<M>*>(w), pieces, o);
  check_launch("nhwc_wgmma_kernel");
}

template <MathMode M, int TN>
void launch(cudaStream_t st, const NhwcGeo& g, const void* act, const void* w, const Piece* pieces,
            const NhwcOut& o, int groups) {
  if constexpr (M != MathMode::kTF32)
    if (o.type != DataType::kFloat32)
      return launch_out<M, TN, HalfOut<M>>(st, g, act, w, pieces, o, groups);
  launch_out<M, TN, float>(st, g, act, w, pieces, o, groups);
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
