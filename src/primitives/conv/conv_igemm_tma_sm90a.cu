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
// room for two blocks per SM, so one block's epilogue overlaps the other's main loop. Each stage
// has a "full" barrier (the loads' bytes, counted by TMA) and an "empty" one (one arrival per
// multiplying warp once the wgmma that read the stage have completed).
//
// Built only for sm_90a (CMake compiles the *_sm90a.cu files for that target alone).
#include <cuda.h>
#include <cudaTypedefs.h>

#include <string>

#include "primitives/conv/conv_igemm_nhwc.cuh"
#include "primitives/conv/conv_igemm_wgmma.cuh"
#include "primitives/cuda/cuda_pack.cuh"

namespace crema::prim::cuda::igemm {
namespace {

constexpr int kTmaRowBytes = kNhwcTmaRowBytes;

constexpr int kTmaMathThreads = 128;               // the multiplying warpgroup
constexpr int kTmaThreads = kTmaMathThreads + 32;  // and the loading warp
constexpr int kTmaA = kNhwcTileM * kTmaRowBytes;   // bytes of a stage's A tile
template <int TN>
constexpr int kTmaStages = TN == 128 ? 3 : 4;
template <int TN>
constexpr int kTmaStage = kTmaA + TN* kTmaRowBytes;
template <int TN>
constexpr int kTmaSmem = kTmaStages<TN>* kTmaStage<TN> + 2 * kTmaStages<TN> * 8 + kWgmmaAlign;

__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return uint32_t(__cvta_generic_to_shared(p));
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ void barrier_init(uint64_t* bar, int arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(bar)), "r"(arrivals));
}
// The producer's arrival on a full barrier, announcing the bytes its copies will bring.
__device__ __forceinline__ void barrier_expect(uint64_t* bar, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(bar)),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void barrier_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(shared_address(bar)) : "memory");
}
// Waits until the barrier's phase of this parity has completed.
__device__ __forceinline__ void barrier_wait(uint64_t* bar, int parity) {
  asm volatile(
      "{\n.reg .pred done;\nWAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n}\n" ::"r"(shared_address(bar)),
      "r"(parity)
      : "memory");
}
// 128 pixels x 128 bytes of channels of the NHWC source: the pixel walk starts at base point
// (w, h) of image n, each pixel read at the tap's offset (ow, oh) from its base point.
__device__ __forceinline__ void load_im2col(void* dst, const CUtensorMap* map, uint64_t* bar, int c,
                                            int w, int h, int n, uint16_t ow, uint16_t oh) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};" ::"r"(shared_address(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c), "r"(w), "r"(h), "r"(n),
      "r"(shared_address(bar)), "h"(ow), "h"(oh)
      : "memory");
}
__device__ __forceinline__ void load_tile(void* dst, const CUtensorMap* map, uint64_t* bar, int x,
                                          int y) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(shared_address(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(shared_address(bar))
      : "memory");
}
#endif

// Where a block's k-tiles come from: k-tile kt is channel block kt % cblocks of filter tap
// kt / cblocks (tap = r * taps_w + s, read at (s * dx, r * dy) from each row's base point); GEMM
// row m = (n, p, q) has base point (p * sy + oy, q * sx + ox) of image n.
struct TmaGeo {
  int tiles, cblocks, taps_w;
  int cin;            // source channels of a group (group g's start at g * cin)
  int b_cols;         // filter-row values per tap: channels padded to whole k-tiles
  int gn;             // filter rows per group
  int rows_w, plane;  // the output plane: q's extent, p's * q's
  int sy, sx, oy, ox, dy, dx;
};

// Stores W rows of one output column from v, adjacent in memory from element `at`:
// out = relu(alpha v + beta out + bias), in fp32, rounded once to O.
template <int W, typename O>
__device__ __forceinline__ void store_rows(const NhwcOut& o, int at, float bias, const float* v) {
  O* const p = static_cast<O*>(o.out) + at;
  float x[W];
#pragma unroll
  for (int e = 0; e < W; ++e) x[e] = o.alpha * v[e];
  if (o.beta != 0.f) {
    float old[W];
    load_pack<W>(p, old);
#pragma unroll
    for (int e = 0; e < W; ++e) x[e] += o.beta * old[e];
  }
#pragma unroll
  for (int e = 0; e < W; ++e) {
    x[e] += bias;
    if (o.relu) x[e] = x[e] > 0.f ? x[e] : 0.f;
  }
  store_pack<W>(p, x);
}

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

template <MathMode M, int TN, typename O>
__global__ void __launch_bounds__(kTmaThreads)
    tma_wgmma_kernel(const __grid_constant__ CUtensorMap a_map,
                     const __grid_constant__ CUtensorMap b_map, TmaGeo t, NhwcGeo g, NhwcOut o) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int kStages = kTmaStages<TN>, kStage = kTmaStage<TN>;
  constexpr int kK = kTmaRowBytes / int(sizeof(Bits<M>));
  extern __shared__ unsigned char smem_raw[];
  unsigned char* const smem = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + kWgmmaAlign - 1) & ~uintptr_t(kWgmmaAlign - 1));
  uint64_t* const full = reinterpret_cast<uint64_t*>(smem + kStages * kStage);
  uint64_t* const empty = full + kStages;
  const int tid = threadIdx.x;
  const int m0 = blockIdx.x * kNhwcTileM, n0 = blockIdx.y * TN, grp = blockIdx.z;
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      barrier_init(full + s, 1);
      barrier_init(empty + s, kTmaMathThreads / 32);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  if (tid >= kTmaMathThreads) {  // the loading warp: one thread issues every copy
    if (tid != kTmaMathThreads) return;
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&a_map)) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&b_map)) : "memory");
    const int n = m0 / t.plane, pq = m0 - n * t.plane, p = pq / t.rows_w, q = pq - p * t.rows_w;
    const int h = p * t.sy + t.oy, w = q * t.sx + t.ox;
    int tap = 0, cb = 0;
    for (int kt = 0; kt < t.tiles; ++kt) {
      const int s = kt % kStages;
      if (kt >= kStages) barrier_wait(empty + s, (kt / kStages - 1) & 1);
      unsigned char* const as = smem + s * kStage;
      barrier_expect(full + s, kStage);
      const int r = tap / t.taps_w, sc = tap - r * t.taps_w;
      load_im2col(as, &a_map, full + s, grp * t.cin + cb * kK, w, h, n, uint16_t(sc * t.dx),
                  uint16_t(r * t.dy));
      load_tile(as + kTmaA, &b_map, full + s, tap * t.b_cols + cb * kK, grp * t.gn + n0);
      if (++cb == t.cblocks) cb = 0, ++tap;
    }
    return;
  }

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
    const unsigned char* const as = smem + s * kStage;
    const unsigned char* const bs = as + kTmaA;
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
  } while (++kt < t.tiles);
  wgmma_wait<0>();

  if (g.oc == 1) {  // channels side by side (NHWC): each thread's column pairs are adjacent
    nhwc_store_fragments<O, TN>(g, o, acc, m0, n0, grp, tid);
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
  const int warp = tid >> 5, lane = tid & 31, gid = lane >> 2, tig = lane & 3;  // as the fragments
  static_assert(TN * kLd * 4 <= kStages * kStage, "the staged tile fits the stages");
  float* const tile = reinterpret_cast<float*>(smem);
  asm volatile("bar.sync 1, %0;" ::"n"(kTmaMathThreads) : "memory");  // every multiply is done
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
  asm volatile("bar.sync 1, %0;" ::"n"(kTmaMathThreads) : "memory");
  const int hl = lane & 15, r0 = hl * kRun;
  const unsigned half = 0xFFFFu << (lane & 16);
  int run[kRun];  // output rows of this lane's run
  output_rows<kRun>(g, m0 + r0, 1, run);
  bool adjacent = run[0] >= 0;
#pragma unroll
  for (int k = 1; k < kRun; ++k) adjacent = adjacent && run[k] == run[0] + k;
  int spread[kRun];  // output rows hl + 16 k, found the first time a column needs them
  bool spread_found = false;
  O* const out = static_cast<O*>(o.out);
  for (int c = 2 * warp + (lane >> 4); c < TN; c += 2 * kTmaMathThreads / 32) {
    const bool live = n0 + c < g.gn;  // the whole warp stays for the vote
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
      if (!spread_found) output_rows<kRun>(g, m0 + hl, 16, spread), spread_found = true;
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

// The driver's tensor-map encoders, found through the runtime (nothing links libcuda).
template <typename F>
F driver_function(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  check_cuda(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found), name);
  if (!fn || found != cudaDriverEntryPointSuccess)
    throw PrimError(std::string(name) + ": not offered by this CUDA driver");
  return reinterpret_cast<F>(fn);
}

void check_encode(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS)
    throw PrimError(std::string(what) + ": CUDA driver error " + std::to_string(int(r)));
}

template <MathMode M>
constexpr CUtensorMapDataType kMapType = M == MathMode::kTF32   ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                         : M == MathMode::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                                : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;

template <MathMode M>
CUtensorMap activation_map(const NhwcGeo& g, const TmaGeo& t, const void* act) {
  static const auto encode =
      driver_function<PFN_cuTensorMapEncodeIm2col_v12000>("cuTensorMapEncodeIm2col");
  constexpr cuuint64_t e = sizeof(Bits<M>);
  const cuuint64_t dims[4] = {cuuint64_t(g.src_c), cuuint64_t(g.src_w), cuuint64_t(g.src_h),
                              cuuint64_t(g.gm) / (cuuint64_t(g.rows_h) * g.rows_w)};
  const cuuint64_t strides[3] = {dims[0] * e, dims[0] * dims[1] * e,
                                 dims[0] * dims[1] * dims[2] * e};
  // The base points' plane, as corners relative to the source's first and last points.
  const int lower[2] = {t.ox, t.oy};
  const int upper[2] = {(g.rows_w - 1) * t.sx + t.ox - (g.src_w - 1),
                        (g.rows_h - 1) * t.sy + t.oy - (g.src_h - 1)};
  const cuuint32_t steps[4] = {1, cuuint32_t(t.sx), cuuint32_t(t.sy), 1};
  CUtensorMap map;
  check_encode(encode(&map, kMapType<M>, 4, const_cast<void*>(act), dims, strides, lower, upper,
                      kTmaRowBytes / e, kNhwcTileM, steps, CU_TENSOR_MAP_INTERLEAVE_NONE,
                      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
               "cuTensorMapEncodeIm2col (convolution activations)");
  return map;
}

template <MathMode M>
CUtensorMap filter_map(const TmaGeo& t, int taps, int rows, int tn, const void* w) {
  static const auto encode =
      driver_function<PFN_cuTensorMapEncodeTiled_v12000>("cuTensorMapEncodeTiled");
  constexpr cuuint64_t e = sizeof(Bits<M>);
  const cuuint64_t dims[2] = {cuuint64_t(taps) * t.b_cols, cuuint64_t(rows)};
  const cuuint64_t strides[1] = {dims[0] * e};
  const cuuint32_t box[2] = {kTmaRowBytes / e, cuuint32_t(tn)}, steps[2] = {1, 1};
  CUtensorMap map;
  check_encode(encode(&map, kMapType<M>, 2, const_cast<void*>(w), dims, strides, box, steps,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
               "cuTensorMapEncodeTiled (convolution filter)");
  return map;
}

template <MathMode M, int TN, typename O>
void launch_out(cudaStream_t st, const NhwcGeo& g, const TmaGeo& t, int taps, int rows,
                const void* act, const void* w, const NhwcOut& o, int groups) {
  constexpr int smem = kTmaSmem<TN>;
  allow_shared_memory<tma_wgmma_kernel<M, TN, O>>(smem, "tma_wgmma_kernel shared memory");
  const CUtensorMap a = activation_map<M>(g, t, act), b = filter_map<M>(t, taps, rows, TN, w);
  const dim3 grid((g.gm + kNhwcTileM - 1) / kNhwcTileM, (g.gn + TN - 1) / TN, groups);
  tma_wgmma_kernel<M, TN, O><<<grid, kTmaThreads, smem, st>>>(a, b, t, g, o);
  check_launch("tma_wgmma_kernel");
}

template <MathMode M, int TN>
void launch(cudaStream_t st, const NhwcGeo& g, const TmaGeo& t, int taps, int rows, const void* act,
            const void* w, const NhwcOut& o, int groups) {
  if constexpr (M != MathMode::kTF32)
    if (o.type != DataType::kFloat32)
      return launch_out<M, TN, HalfOut<M>>(st, g, t, taps, rows, act, w, o, groups);
  launch_out<M, TN, float>(st, g, t, taps, rows, act, w, o, groups);
}

template <MathMode M>
void launch_as(int tn, cudaStream_t st, const NhwcGeo& g, const TmaGeo& t, int taps, int rows,
               const void* act, const void* w, const NhwcOut& o, int groups) {
  if (tn == 64) return launch<M, 64>(st, g, t, taps, rows, act, w, o, groups);
  launch<M, 128>(st, g, t, taps, rows, act, w, o, groups);
}

}  // namespace

void nhwc_tma_launch(MathMode math, int tn, cudaStream_t st, const NhwcGeo& g, const NhwcTaps& k,
                     const void* act, const void* w, const NhwcOut& o, int groups) {
  TmaGeo t{};
  const int per_tile = kTmaRowBytes / (math == MathMode::kTF32 ? 4 : 2);
  t.cblocks = k.padded / per_tile;
  t.taps_w = g.s;
  t.tiles = k.taps * t.cblocks;
  t.cin = g.cin;
  t.b_cols = k.padded;
  t.gn = g.gn;
  t.rows_w = g.rows_w, t.plane = g.rows_h * g.rows_w;
  t.sy = g.sy, t.sx = g.sx, t.oy = k.oy, t.ox = k.ox, t.dy = k.dy, t.dx = k.dx;
  switch (math) {
    case MathMode::kTF32:
      return launch_as<MathMode::kTF32>(tn, st, g, t, k.taps, k.rows, act, w, o, groups);
    case MathMode::kBF16:
      return launch_as<MathMode::kBF16>(tn, st, g, t, k.taps, k.rows, act, w, o, groups);
    default:
      return launch_as<MathMode::kFP16>(tn, st, g, t, k.taps, k.rows, act, w, o, groups);
  }
}

}  // namespace crema::prim::cuda::igemm
