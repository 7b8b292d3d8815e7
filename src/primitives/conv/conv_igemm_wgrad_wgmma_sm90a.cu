// The implicit GEMM's backward filter on Hopper tensor cores (BF16/FP16): the mma.sync kernel's
// GEMM (conv_igemm_wgrad_cuda.cu: dW[k][(r,s,c)] = sum over m = (n,p,q) of dy[m][k] x[..][c],
// the depth split over blocks into partial filters) with wgmma reading both operands from shared
// memory. Both operands arrive with their depth across rows (a row of dy holds output channels,
// a row of x channels of one tap), which wgmma reads as MN-major operands in 128-byte swizzle
// atoms: 8 depth rows x 64 values (128 bytes, 16-byte pieces XOR-swizzled by the row).
//
// Two kernels. Where the tensor memory accelerator can gather x (WgradGeo::cpad > 0), a
// warp-specialized one as the forward's (conv_igemm_tma_sm90a.cu): a k-tile is 64 pixels m of
// depth; dy's NHWC copy, read as a matrix of N*P*Q rows by K channels, comes as 2-D boxes of 64
// rows x 64 channels (TM / 64 of them), x's NHWC copy in im2col mode as 64 output pixels walked
// across plane and image edges, each read at one tap's offset, by 64 channels. GEMM column j is
// channel j % cpad of tap j / cpad: each tap's channels of a group are padded to whole 64-channel
// boxes, and the padded columns are computed and dropped. Past the depth's end dy's rows are
// zeros, so whatever x brings there adds none. One warpgroup multiplies a TM x 128 tile (TM =
// 128, or 64 where a group has no more output channels), one warp loads; 3 stages of 32 KiB (TM
// = 128) or 4 of 24 KiB leave room for two blocks an SM.
//
// Elsewhere, one warpgroup a block stages 32 rows of depth with 16-byte cp.async copies (each
// row's depth index divided into (n, p, q)) in 4 stages and waits at a block barrier per k-tile;
// per k16 step one m64n128 wgmma per 64 rows; the k-tiles flow through wgmma_pipeline.
//
// Built only for sm_90a (CMake compiles the *_sm90a.cu files for that target alone).
#include "primitives/conv/conv_igemm_wgmma.cuh"
#include "primitives/conv/conv_igemm_wgrad.cuh"
#include "primitives/conv/conv_tma.cuh"

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

// Stores a block's TM x 128 tile of this split's partial filter (rows grp*Kg + row, GEMM
// columns in order) from the warpgroup's m64n128 fragments.
template <int TM>
__device__ __forceinline__ void store_partial(const WgradGeo& g, const float (&acc)[TM / 64][64],
                                              float* part, int m0, int n0, int grp, int split,
                                              int tid) {
  float* out = part + (int64_t(split) * g.k + grp * g.kg) * g.gk;
  const int warp = (tid >> 5) & 3, lane = tid & 31, gid = lane >> 2, tig = lane & 3;
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

  store_partial<TM>(g, acc, part, m0, n0, grp, split, tid);
}

constexpr int kTmaMathThreads = 128;               // the multiplying warpgroup
constexpr int kTmaThreads = kTmaMathThreads + 32;  // and the loading warp
constexpr int kTmaBox = kWgradTmaDepth * 128;      // bytes of a 64-row x 128-byte box
template <int TM>
constexpr int kTmaStages = TM == 128 ? 3 : 4;
template <int TM>
constexpr int kTmaStage = (TM / 64 + kWgradTile / 64) * kTmaBox;
template <int TM>
constexpr int kTmaSmem = kTmaStages<TM>* kTmaStage<TM> + 2 * kTmaStages<TM> * 8 + kWgmmaAlign;

template <MathMode M, int TM>
__global__ void __launch_bounds__(kTmaThreads)
    wgrad_tma_kernel(const __grid_constant__ CUtensorMap dy_map,
                     const __grid_constant__ CUtensorMap x_map, WgradGeo g,
                     float* __restrict__ part) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(M != MathMode::kTF32, "TF32 operands cannot be read MN-major");
  constexpr int kK = 128 / int(sizeof(Bits<M>));  // channels of a box: 64
  constexpr int kA = TM / 64 * kTmaBox;           // bytes of a stage's A
  extern __shared__ unsigned char smem_raw[];
  unsigned char* const smem = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + kWgmmaAlign - 1) & ~uintptr_t(kWgmmaAlign - 1));
  uint64_t* const full = reinterpret_cast<uint64_t*>(smem + kTmaStages<TM> * kTmaStage<TM>);
  uint64_t* const empty = full + kTmaStages<TM>;
  const int tid = threadIdx.x;
  const int m0 = blockIdx.x * TM, n0 = blockIdx.y * kWgradTile;
  const int grp = blockIdx.z / g.splits, split = blockIdx.z % g.splits;
  const int k_tiles = (g.depth + kWgradTmaDepth - 1) / kWgradTmaDepth;
  const int kt0 = split * g.tiles, tiles = min(k_tiles, kt0 + g.tiles) - kt0;
  // B's boxes in this tile: the last column tile may hold one.
  const int boxes = min(kWgradTile, g.gk - n0) / kK;
  if (tid == 0) {
    for (int s = 0; s < kTmaStages<TM>; ++s) {
      barrier_init(full + s, 1);
      barrier_init(empty + s, kTmaMathThreads / 32);
    }
    barrier_init_fence();
  }
  __syncthreads();

  if (tid >= kTmaMathThreads) {  // the loading warp: one thread issues every copy
    if (tid != kTmaMathThreads) return;
    prefetch_map(&dy_map);
    prefetch_map(&x_map);
    // Each box of B: its channels and tap offset (columns n0 + 64 b on).
    int chan[kWgradTile / 64];
    uint16_t ow[kWgradTile / 64], oh[kWgradTile / 64];
#pragma unroll
    for (int b = 0; b < kWgradTile / 64; ++b) {
      const int j = n0 + b * kK, tap = j / g.cpad, r = tap / g.s, s = tap - r * g.s;
      chan[b] = grp * g.cg + j - tap * g.cpad;
      ow[b] = uint16_t(s * g.dw);
      oh[b] = uint16_t(r * g.dh);
    }
    const int bytes = kA + boxes * kTmaBox;
    for (int i = 0; i < tiles; ++i) {
      const int st = i % kTmaStages<TM>;
      if (i >= kTmaStages<TM>) barrier_wait(empty + st, (i / kTmaStages<TM> - 1) & 1);
      unsigned char* const as = smem + st * kTmaStage<TM>;
      barrier_expect(full + st, bytes);
      const int m = (kt0 + i) * kWgradTmaDepth;
      const int n = int(g.pq.div(uint32_t(m))), pq = m - n * int(g.pq.d);
      const int p = int(g.q.div(uint32_t(pq))), q = pq - p * int(g.q.d);
#pragma unroll
      for (int a = 0; a < TM / 64; ++a)
        load_tile(as + a * kTmaBox, &dy_map, full + st, grp * g.kg + m0 + a * kK, m);
#pragma unroll
      for (int b = 0; b < kWgradTile / 64; ++b)
        if (b < boxes)
          load_im2col(as + kA + b * kTmaBox, &x_map, full + st, chan[b], q * g.sw - g.pw,
                      p * g.sh - g.ph, n, ow[b], oh[b]);
    }
    return;
  }

  float acc[TM / 64][kWgradTile / 2];
#pragma unroll
  for (int h = 0; h < TM / 64; ++h)
#pragma unroll
    for (int i = 0; i < kWgradTile / 2; ++i) acc[h][i] = 0.f;
  // Every split has a k-tile; a loop that may run none would merge the zero accumulators into
  // the multiplies' path, and ptxas would then serialize every wgmma.
  int i = 0;
  do {
    const int st = i % kTmaStages<TM>;
    barrier_wait(full + st, (i / kTmaStages<TM>)&1);
    const unsigned char* const as = smem + st * kTmaStage<TM>;
    const unsigned char* const bs = as + kA;
    wgmma_fence();
#pragma unroll
    for (int step = 0; step < kWgradTmaDepth / 16; ++step)  // k16: two 8-row atoms
#pragma unroll
      for (int h = 0; h < TM / 64; ++h)
        wgmma<M, kWgradTile, true>(acc[h],
                                   descriptor<128>(as + h * kTmaBox + step * 2048, kTmaBox, 1024),
                                   descriptor<128>(bs + step * 2048, kTmaBox, 1024));
    wgmma_commit();
    wgmma_wait<1>();  // k-tile i - 1's multiplies are done: its stage may be refilled
    if (i > 0 && (tid & 31) == 0) barrier_arrive(empty + (i - 1) % kTmaStages<TM>);
  } while (++i < tiles);
  wgmma_wait<0>();

  store_partial<TM>(g, acc, part, m0, n0, grp, split, tid);
#else
  __trap();  // built for sm_90a only
#endif
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

template <MathMode M, int TM>
void launch_tma(cudaStream_t st, const WgradGeo& g, const void* dy, const void* x, float* part,
                int groups) {
  constexpr int smem = kTmaSmem<TM>;
  allow_shared_memory<wgrad_tma_kernel<M, TM>>(smem, "wgrad_tma_kernel shared memory");
  const CUtensorMap dy_map =
      tiled_map<M>(dy, g.k, g.depth, kWgradTmaDepth, "cuTensorMapEncodeTiled (convolution dy)");
  const int p = int(g.pq.d / g.q.d), q = int(g.q.d), n = g.depth / int(g.pq.d);
  const CUtensorMap x_map =
      im2col_map<M>(x, g.c, g.w, g.h, n, p, q, g.sh, g.sw, -g.ph, -g.pw, kWgradTmaDepth);
  const dim3 grid((g.kg + TM - 1) / TM, (g.gk + kWgradTile - 1) / kWgradTile, groups * g.splits);
  wgrad_tma_kernel<M, TM><<<grid, kTmaThreads, smem, st>>>(dy_map, x_map, g, part);
  check_launch("wgrad_tma_kernel");
}

template <MathMode M>
void launch_as(int tm, cudaStream_t st, const WgradGeo& g, const void* dy, const void* x,
               float* part, int groups) {
  if (g.cpad && tm == 64) return launch_tma<M, 64>(st, g, dy, x, part, groups);
  if (g.cpad) return launch_tma<M, 128>(st, g, dy, x, part, groups);
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
