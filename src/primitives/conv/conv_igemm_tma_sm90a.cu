// The NHWC path's Hopper kernel where the tensor memory accelerator can gather the activation
// operand: a warp-specialized wgmma GEMM whose k-tiles arrive by TMA. The cp.async kernel
// (conv_igemm_wgmma_sm90a.cu) spends about 300 instructions per warp and k-tile computing and
// issuing 16-byte copies and waits at a block barrier per tile; here one thread issues two TMA
// copies per k-tile and the multiplying warpgroup only waits on a barrier in shared memory.
//
// Operand A, the activation, is loaded in TMA's im2col mode: a box of 128 output pixels (GEMM
// rows, in order across rows of the plane and across images) by 128 bytes of one filter tap's
// channels (64 BF16/FP16 or 32 TF32 values). The tensor map holds the NHWC copy's shape, the
// stride of the conv as the traversal stride and the plane of base points as a bounding box, so
// the hardware walks the rows of a tile across plane and image edges and fills padding and
// everything past the tensor with zeros. Operand B, the filter rows (one tap's channels padded to
// whole 128-byte k-tiles), is a plain 2-D tile. Both land in wgmma's 128-byte swizzle layout.
//
// Block: one warpgroup multiplies a 128 x TN tile (two m64nTN wgmma per 32 bytes of depth) and
// one warp loads; stages in flight (3 of 32 KiB for TN = 128, 4 of 24 KiB for TN = 64) leave
// room for two blocks per SM, so one block's epilogue overlaps the other's main loop. Where the
// grid is big enough, two warpgroups share each stage's 128 filter rows in a 256 x 128 tile (4
// stages of 48 KiB, one block an SM): a k-tile brings 48 KiB for twice a 32 KiB one's multiplies,
// which in TF32 (half BF16's flops a byte) shortened CaffeNet's conv3 forward from 0.326 to 0.295
// ms and VGG-16's conv3_2 from 1.070 to 0.939 ms (H200, NHWC). Each stage
// has a "full" barrier (the loads' bytes, counted by TMA) and an "empty" one (one arrival per
// multiplying warp once the wgmma that read the stage have completed).
//
// Built only for sm_90a (CMake compiles the *_sm90a.cu files for that target alone).
#include "primitives/conv/conv_igemm_nhwc.cuh"
#include "primitives/conv/conv_igemm_wgmma.cuh"
#include "primitives/conv/conv_tma.cuh"

namespace crema::prim::cuda::igemm {
namespace {

constexpr int kTmaRowBytes = kNhwcTmaRowBytes;

// A block of WG multiplying warpgroups (one per 128 GEMM rows of its tile) and a loading warp.
template <int WG>
constexpr int kTmaMathThreads = 128 * WG;
template <int WG>
constexpr int kTmaThreads = kTmaMathThreads<WG> + 32;
template <int WG>
constexpr int kTmaTileM = kNhwcTileM* WG;  // GEMM rows of a block's tile
template <int WG>
constexpr int kTmaA = kTmaTileM<WG>* kTmaRowBytes;  // bytes of a stage's A tile
template <int TN, int WG>
constexpr int kTmaStages = WG == 1 && TN == 128 ? 3 : 4;
template <int TN, int WG>
constexpr int kTmaStage = kTmaA<WG> + TN* kTmaRowBytes;
template <int TN, int WG>
constexpr int kTmaSmem =
    kTmaStages<TN, WG>* kTmaStage<TN, WG> + 2 * kTmaStages<TN, WG> * 8 + kWgmmaAlign;

// The output rows (nhwc_out_row) of GEMM rows m, m + step, ..., kCount of them, -1 past the
// GEMM's edge: one division, then steps along the plane.
template <int kCount>
__device__ __forceinline__ void output_rows(const NhwcGeo& g, int m, int step,
                                            int (&rows)[kCount]) {
  const int plane = g.rows_h * g.rows_w;
  int n = m / plane, y = m % plane / g.rows_w, x = m % g.rows_w;
#pragma unroll
  for (int k = 0; k < kCount; ++k) {
    rows[k] = m + k * step < g.gm ? n * g.on + y * g.oh + x * g.ow : -1;
    for (x += step; x >= g.rows_w;) {
      x -= g.rows_w;
      if (++y == g.rows_h) y = 0, ++n;
    }
  }
}

template <MathMode M, int TN, int WG, typename O>
__global__ void __launch_bounds__(kTmaThreads<WG>)
    tma_wgmma_kernel(const __grid_constant__ CUtensorMap a_map,
                     const __grid_constant__ CUtensorMap b_map, NhwcTaps walk, NhwcGeo g,
                     NhwcOut o) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int kStages = kTmaStages<TN, WG>, kStage = kTmaStage<TN, WG>;
  constexpr int kMath = kTmaMathThreads<WG>;
  constexpr int kK = kTmaRowBytes / int(sizeof(Bits<M>));
  extern __shared__ unsigned char smem_raw[];
  unsigned char* const smem = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + kWgmmaAlign - 1) & ~uintptr_t(kWgmmaAlign - 1));
  uint64_t* const full = reinterpret_cast<uint64_t*>(smem + kStages * kStage);
  uint64_t* const empty = full + kStages;
  const int tid = threadIdx.x;
  const int m0 = blockIdx.x * kTmaTileM<WG>, n0 = blockIdx.y * TN, grp = blockIdx.z;
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      barrier_init(full + s, 1);
      barrier_init(empty + s, kMath / 32);
    }
    barrier_init_fence();
  }
  __syncthreads();

  const int cblocks = walk.padded / kK, tiles = walk.taps * cblocks;
  if (tid >= kMath) {  // the loading warp: one thread issues every copy
    if (tid != kMath) return;
    prefetch_map(&a_map);
    prefetch_map(&b_map);
    // Each warpgroup's 128 rows are one im2col box, walked from the base point of its first row.
    const int plane = g.rows_h * g.rows_w;
    int n[WG], h[WG], w[WG];
#pragma unroll
    for (int i = 0; i < WG; ++i) {
      const int m = m0 + i * kNhwcTileM;
      n[i] = m / plane;
      const int pq = m - n[i] * plane, p = pq / g.rows_w, q = pq - p * g.rows_w;
      h[i] = p * g.sy + walk.oy, w[i] = q * g.sx + walk.ox;
    }
    int tap = 0, cb = 0;
    for (int kt = 0; kt < tiles; ++kt) {
      const int s = kt % kStages;
      if (kt >= kStages) barrier_wait(empty + s, (kt / kStages - 1) & 1);
      unsigned char* const as = smem + s * kStage;
      barrier_expect(full + s, kStage);
      const int r = tap / g.s, sc = tap - r * g.s;
#pragma unroll
      for (int i = 0; i < WG; ++i)
        load_im2col(as + i * kNhwcTileM * kTmaRowBytes, &a_map, full + s, grp * g.cin + cb * kK,
                    w[i], h[i], n[i], uint16_t(sc * walk.dx), uint16_t(r * walk.dy));
      load_tile(as + kTmaA<WG>, &b_map, full + s, tap * walk.padded + cb * kK, grp * g.gn + n0);
      if (++cb == cblocks) cb = 0, ++tap;
    }
    return;
  }

  // Warpgroup wg multiplies rows 128 wg on of the tile (and stores them: wm0, wtid below).
  const int wg = tid >> 7;
  float acc[2][TN / 2];
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int i = 0; i < TN / 2; ++i) acc[h][i] = 0.f;
  // Every problem has a k-tile; a loop that may run none would merge the zero accumulators into
  // the multiplies' path, and ptxas would then serialize every wgmma.
  int kt = 0;
  do {
    const int s = kt % kStages;
    barrier_wait(full + s, (kt / kStages) & 1);
    const unsigned char* const bs = smem + s * kStage + kTmaA<WG>;
    const unsigned char* const as = smem + s * kStage + wg * kNhwcTileM * kTmaRowBytes;
    wgmma_fence();
#pragma unroll
    for (int step = 0; step < kTmaRowBytes / 32; ++step)  // 32 bytes of depth each
#pragma unroll
      for (int h = 0; h < 2; ++h)
        wgmma<M, TN, false>(acc[h],
                            descriptor<128>(as + h * 64 * kTmaRowBytes + step * 32, 16, 1024),
                            descriptor<128>(bs + step * 32, 16, 1024));
    wgmma_commit();
    wgmma_wait<1>();  // k-tile kt - 1's multiplies are done: its stage may be refilled
    if (kt > 0 && (tid & 31) == 0) barrier_arrive(empty + (kt - 1) % kStages);
  } while (++kt < tiles);
  wgmma_wait<0>();
  // The epilogues reuse the stages, which every warpgroup's last multiplies may still read.
  asm volatile("bar.sync 1, %0;" ::"n"(kMath) : "memory");
  const int wm0 = m0 + wg * kNhwcTileM, wtid = tid & 127;

  if (g.oc == 1) {  // channels side by side (NHWC): rows of channels from shared memory
    constexpr int kHalf = 64 * (TN + 8);  // floats of a warpgroup's staged half
    static_assert(WG * kHalf * 4 <= kStages * kStage, "the staged halves fit the stages");
    nhwc_store_staged<O, TN>(g, o, acc, wm0, n0, grp, wtid,
                             reinterpret_cast<float*>(smem) + wg * kHalf, 2 + wg);
    return;
  }
  // Channels planes apart (NCHW): from the fragments, a warp's stores hit 16 bytes of each of 4
  // planes, half of every 32-byte sector wasted, and took 40% of the kernel's time (res3b_branch2b,
  // ncu). The tile goes through shared memory (the stages, all consumed once the warpgroup's
  // multiplies are) as [column][row], rows padded by 4 floats so that the fragments' writes hit
  // 32 banks; then each half-warp writes one column along the plane: each lane a run of 8 rows
  // in 16-byte packs where every lane's run is adjacent in memory and aligned, else lane l rows
  // l + 16 k one value at a time (32 adjacent bytes a store for 16-bit outputs).
  constexpr int kLd = kNhwcTileM + 4, kRun = 8, kPack = 16 / int(sizeof(O));
  const int warp = wtid >> 5, lane = tid & 31, gid = lane >> 2, tig = lane & 3;  // as the fragments
  static_assert(WG * TN * kLd * 4 <= kStages * kStage, "the staged tiles fit the stages");
  float* const tile = reinterpret_cast<float*>(smem) + wg * TN * kLd;
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int hi = 0; hi < 2; ++hi)
#pragma unroll
      for (int i = 0; i < TN / 8; ++i)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          tile[(8 * i + 2 * tig + e) * kLd + h * 64 + warp * 16 + gid + hi * 8] =
              acc[h][4 * i + 2 * hi + e];
  asm volatile("bar.sync 1, %0;" ::"n"(kMath) : "memory");
  const int hl = lane & 15, r0 = hl * kRun;
  const unsigned half = 0xFFFFu << (lane & 16);
  int run[kRun];  // output rows of this lane's run
  output_rows<kRun>(g, wm0 + r0, 1, run);
  bool adjacent = run[0] >= 0;
#pragma unroll
  for (int k = 1; k < kRun; ++k) adjacent = adjacent && run[k] == run[0] + k;
  int spread[kRun];  // output rows hl + 16 k, found the first time a column needs them
  bool spread_found = false;
  O* const out = static_cast<O*>(o.out);
  for (int c = 2 * warp + (lane >> 4); c < TN; c += 8) {  // a warpgroup's 4 warps, 2 columns each
    const bool live = n0 + c < g.gn;                      // the whole warp stays for the vote
    const int ch = grp * g.gn + n0 + c;
    const float bias = live && o.bias ? o.bias[ch] : 0.f;
    const bool packs = adjacent && reinterpret_cast<uintptr_t>(out + run[0] + ch * g.oc) % 16 == 0;
    if ((__ballot_sync(~0u, packs) & half) == half) {
      float v[kRun];
#pragma unroll
      for (int k = 0; k < kRun; k += 4)
        *reinterpret_cast<float4*>(v + k) =
            *reinterpret_cast<const float4*>(tile + c * kLd + r0 + k);
#pragma unroll
      for (int k = 0; k < kRun; k += kPack)
        if (live) store_rows<kPack, O>(o, run[0] + ch * g.oc + k, bias, v + k);
    } else {
      if (!spread_found) output_rows<kRun>(g, wm0 + hl, 16, spread), spread_found = true;
#pragma unroll
      for (int k = 0; k < kRun; ++k)
        if (live && spread[k] >= 0)
          store_rows<1, O>(o, spread[k] + ch * g.oc, bias, tile + c * kLd + hl + 16 * k);
    }
  }
#else
  __trap();  // built for sm_90a only
#endif
}

template <MathMode M, int TN, int WG, typename O>
void launch_out(cudaStream_t st, const NhwcGeo& g, const NhwcTaps& walk, const void* act,
                const void* w, const NhwcOut& o, int groups) {
  constexpr int smem = kTmaSmem<TN, WG>;
  allow_shared_memory<tma_wgmma_kernel<M, TN, WG, O>>(smem, "tma_wgmma_kernel shared memory");
  const CUtensorMap a = im2col_map<M>(act, g.src_c, g.src_w, g.src_h, g.gm / (g.rows_h * g.rows_w),
                                      g.rows_h, g.rows_w, g.sy, g.sx, walk.oy, walk.ox, kNhwcTileM);
  const CUtensorMap b = tiled_map<M>(w, int64_t(walk.taps) * walk.padded, walk.rows, TN,
                                     "cuTensorMapEncodeTiled (convolution filter)");
  const dim3 grid((g.gm + kTmaTileM<WG> - 1) / kTmaTileM<WG>, (g.gn + TN - 1) / TN, groups);
  tma_wgmma_kernel<M, TN, WG, O><<<grid, kTmaThreads<WG>, smem, st>>>(a, b, walk, g, o);
  check_launch("tma_wgmma_kernel");
}

template <MathMode M, int TN, int WG>
void launch(cudaStream_t st, const NhwcGeo& g, const NhwcTaps& walk, const void* act, const void* w,
            const NhwcOut& o, int groups) {
  if constexpr (M != MathMode::kTF32)
    if (o.type != DataType::kFloat32)
      return launch_out<M, TN, WG, HalfOut<M>>(st, g, walk, act, w, o, groups);
  launch_out<M, TN, WG, float>(st, g, walk, act, w, o, groups);
}

template <MathMode M>
void launch_as(int tn, int wg, cudaStream_t st, const NhwcGeo& g, const NhwcTaps& walk,
               const void* act, const void* w, const NhwcOut& o, int groups) {
  if (tn == 64) return launch<M, 64, 1>(st, g, walk, act, w, o, groups);
  if (wg == 2) return launch<M, 128, 2>(st, g, walk, act, w, o, groups);
  launch<M, 128, 1>(st, g, walk, act, w, o, groups);
}

}  // namespace

void nhwc_tma_launch(MathMode math, int tn, int wg, cudaStream_t st, const NhwcGeo& g,
                     const NhwcTaps& walk, const void* act, const void* w, const NhwcOut& o,
                     int groups) {
  switch (math) {
    case MathMode::kTF32:
      return launch_as<MathMode::kTF32>(tn, wg, st, g, walk, act, w, o, groups);
    case MathMode::kBF16:
      return launch_as<MathMode::kBF16>(tn, wg, st, g, walk, act, w, o, groups);
    default:
      return launch_as<MathMode::kFP16>(tn, wg, st, g, walk, act, w, o, groups);
  }
}

}  // namespace crema::prim::cuda::igemm
