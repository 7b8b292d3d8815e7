// The TF32 backward filter over padded planes on Hopper tensor cores (conv_wgrad_planes.cuh has
// the GEMM): dW rows (tap, channel) by output-channel columns over the copies' flat depth.
//
// wgmma reads TF32 operands from shared memory K-major only; its A operand may instead come from
// registers, in any arrangement the threads load. B, dy's copy, is K-major as it stands: a 2-D
// TMA box of 32 depth values (128 bytes) by the tile's output channels, in the 128-byte swizzle
// layout. A, x's copy, needs each tap's rows shifted by that tap's offset, which no 16-byte
// aligned box reaches (TMA's first coordinate along a row must sit on 16 bytes): A arrives as
// boxes of 8 channels of one tap by 36 values starting at the aligned point at or below the
// shifted one, and each thread reads its fragment from the box at the shift's remainder (0-3).
// Rows of 36 values put a fragment's 8 rows x 4 columns on 32 distinct banks.
//
// Block: two warpgroups each multiply 64 rows by the tile's N columns (one m64nNk8 wgmma per 8
// of depth, A from registers) and one warp loads; 4 stages. The depth splits over blocks into
// partial filters, summed by the finish kernel in split order.
//
// Built only for sm_90a (CMake compiles the *_sm90a.cu files for that target alone).
#include "primitives/conv/conv_igemm_wgmma.cuh"
#include "primitives/conv/conv_tma.cuh"
#include "primitives/conv/conv_wgrad_planes.cuh"

namespace crema::prim::cuda::igemm {
namespace {

constexpr int kWindow = kPlanesDepth + 4;  // values of an A row: a k-tile's 32 from any shift
constexpr int kBoxBytes = kPlanesBoxRows * kWindow * 4;  // 1152: a multiple of 128 bytes
constexpr int kBoxes = kPlanesTileM / kPlanesBoxRows;    // 16 boxes of A a stage
constexpr int kABytes = kBoxes * kBoxBytes;              // 18432: whole 1 KiB swizzle atoms
constexpr int kMathThreads = 256;                        // two multiplying warpgroups
constexpr int kThreads = kMathThreads + 32;              // and the loading warp
constexpr int kStages = 4;
template <int N>
constexpr int kBBytes = N * 128;
template <int N>
constexpr int kStage = kBBytes<N> + kABytes;
template <int N>
constexpr int kSmem = kStages* kStage<N> + 2 * kStages * 8 + kWgmmaAlign;

// The accumulator operands of an m64nNk8 wgmma: N / 2 registers.
#define CREMA_PLANES_D32                                                                          \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),    \
      "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),  \
      "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),  \
      "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define CREMA_PLANES_D48                                                                          \
  CREMA_PLANES_D32, "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), \
      "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]),  \
      "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
#define CREMA_PLANES_D64                                                                          \
  CREMA_PLANES_D48, "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), \
      "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]),  \
      "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define CREMA_PLANES_D96                                                                          \
  CREMA_PLANES_D64, "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), \
      "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),  \
      "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),  \
      "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),  \
      "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])

// d (64 x N fp32, the warpgroup's fragments) += a b over 8 of depth: a in registers (a0 row
// 16 w + gid and a1 row + 8 at depth lane % 4, a2 and a3 the same rows at depth + 4), b N x 8
// K-major in shared memory.
template <int N>
__device__ __forceinline__ void wgmma_rs(float* d, const uint32_t (&a)[4], uint64_t b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (N == 64)
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
        "}, {%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
        : CREMA_PLANES_D32
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
  else if constexpr (N == 96)
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %53, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n96k8.f32.tf32.tf32 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47"
        "}, {%48, %49, %50, %51}, %52, p, 1, 1;\n}\n"
        : CREMA_PLANES_D48
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
  else if constexpr (N == 128)
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, {%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
        : CREMA_PLANES_D64
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
  else if constexpr (N == 192)
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %101, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n192k8.f32.tf32.tf32 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
        "}, {%96, %97, %98, %99}, %100, p, 1, 1;\n}\n"
        : CREMA_PLANES_D96
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
#else
  __trap();  // built for sm_90a only
#endif
}

#undef CREMA_PLANES_D32
#undef CREMA_PLANES_D48
#undef CREMA_PLANES_D64
#undef CREMA_PLANES_D96

// The offset of GEMM row m's tap, r dh W' + s dw, for rows t Cg + c.
__device__ __forceinline__ int tap_offset(const PlanesGeo& g, int m) {
  const int t = m / g.cg, r = t / g.s;
  return r * g.dh * g.wp + (t - r * g.s) * g.dw;
}

template <int N>
__global__ void __launch_bounds__(kThreads)
    wgrad_planes_kernel(const __grid_constant__ CUtensorMap dy_map,
                        const __grid_constant__ CUtensorMap x_map, PlanesGeo g,
                        float* __restrict__ part) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char smem_raw[];
  unsigned char* const smem = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + kWgmmaAlign - 1) & ~uintptr_t(kWgmmaAlign - 1));
  uint64_t* const full = reinterpret_cast<uint64_t*>(smem + kStages * kStage<N>);
  uint64_t* const empty = full + kStages;
  const int tid = threadIdx.x;
  const int m0 = blockIdx.x * kPlanesTileM, n0 = blockIdx.y * N;
  const int grp = blockIdx.z / g.splits, split = blockIdx.z % g.splits;
  const int k_tiles = (g.depth + kPlanesDepth - 1) / kPlanesDepth;
  const int kt0 = split * g.tiles, tiles = min(k_tiles, kt0 + g.tiles) - kt0;
  // A's boxes in this tile: the last row tile may hold fewer (rows are whole boxes: Cg % 8 == 0).
  const int boxes = min(kBoxes, (g.rows - m0) / kPlanesBoxRows);
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      barrier_init(full + s, 1);
      barrier_init(empty + s, kMathThreads / 32);
    }
    barrier_init_fence();
  }
  __syncthreads();

  if (tid >= kMathThreads) {  // the loading warp: one thread issues every copy
    if (tid != kMathThreads) return;
    prefetch_map(&dy_map);
    prefetch_map(&x_map);
    // Each box of A: its window's aligned offset and its first channel.
    int window[kBoxes], chan[kBoxes];
#pragma unroll
    for (int b = 0; b < kBoxes; ++b) {
      const int m = min(m0 + b * kPlanesBoxRows, g.rows - kPlanesBoxRows);
      window[b] = tap_offset(g, m) & ~3;
      chan[b] = grp * g.cg + m % g.cg;
    }
    const int bytes = kBBytes<N> + boxes * kBoxBytes;
    for (int i = 0; i < tiles; ++i) {
      const int st = i % kStages;
      if (i >= kStages) barrier_wait(empty + st, (i / kStages - 1) & 1);
      unsigned char* const bs = smem + st * kStage<N>;
      barrier_expect(full + st, bytes);
      const int v = (kt0 + i) * kPlanesDepth;
      load_tile(bs, &dy_map, full + st, v, grp * g.kg + n0);
#pragma unroll
      for (int b = 0; b < kBoxes; ++b)
        if (b < boxes)
          load_tile(bs + kBBytes<N> + b * kBoxBytes, &x_map, full + st, v + window[b], chan[b]);
    }
    return;
  }

  // Warp w of warpgroup wg holds rows 64 wg + 16 w + gid (+ 8): their A row addresses (in values,
  // from a stage's A) at the shift's remainder, past the tile's rows any box's.
  const int wg = tid >> 7, warp = (tid >> 5) & 3, lane = tid & 31, gid = lane >> 2, tig = lane & 3;
  const int row0 = wg * 64 + warp * 16 + gid;
  int at[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = row0 + 8 * h, m = min(m0 + row, g.rows - 1);
    at[h] = row * kWindow + (tap_offset(g, m) & 3) + tig;
  }
  float acc[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) acc[i] = 0.f;
  // Every split has a k-tile; a loop that may run none would merge the zero accumulators into
  // the multiplies' path, and ptxas would then serialize every wgmma.
  int i = 0;
  do {
    const int st = i % kStages;
    barrier_wait(full + st, (i / kStages) & 1);
    const unsigned char* const bs = smem + st * kStage<N>;
    const uint32_t* const as = reinterpret_cast<const uint32_t*>(bs + kBBytes<N>);
    uint32_t a[kPlanesDepth / 8][4];
#pragma unroll
    for (int ks = 0; ks < kPlanesDepth / 8; ++ks) {
      a[ks][0] = as[at[0] + 8 * ks];
      a[ks][1] = as[at[1] + 8 * ks];
      a[ks][2] = as[at[0] + 8 * ks + 4];
      a[ks][3] = as[at[1] + 8 * ks + 4];
    }
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < kPlanesDepth / 8; ++ks)
      wgmma_rs<N>(acc, a[ks], descriptor<128>(bs + ks * 32, 16, 1024));
    wgmma_commit();
    wgmma_wait<0>();  // the stage's multiplies are done: it may be refilled
    if (lane == 0) barrier_arrive(empty + st);
  } while (++i < tiles);

  // This split's partial filter: part[split][grp Kg + col][row], register 4 j + 2 h + e holding
  // column 8 j + 2 tig + e of row row0 + 8 h.
  float* const out = part + (int64_t(split) * g.k + grp * g.kg) * g.rows;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int m = m0 + row0 + 8 * h;
    if (m >= g.rows) continue;
#pragma unroll
    for (int j = 0; j < N / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int col = n0 + 8 * j + 2 * tig + e;
        if (col < g.kg) out[int64_t(col) * g.rows + m] = acc[4 * j + 2 * h + e];
      }
  }
#else
  __trap();  // built for sm_90a only
#endif
}

// x's copy as C rows of g.depth values, each copy a box of 8 rows x 36 values (no swizzle: the
// threads read it); past a row's end, zeros.
CUtensorMap window_map(const void* src, int64_t cols, int64_t rows) {
  static const auto encode =
      driver_function<PFN_cuTensorMapEncodeTiled_v12000>("cuTensorMapEncodeTiled");
  const cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {dims[0] * 4};
  const cuuint32_t box[2] = {cuuint32_t(kWindow), cuuint32_t(kPlanesBoxRows)}, steps[2] = {1, 1};
  CUtensorMap map;
  check_encode(
      encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, const_cast<void*>(src), dims, strides, box,
             steps, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
             CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
      "cuTensorMapEncodeTiled (convolution input planes)");
  return map;
}

template <int N>
void launch(cudaStream_t st, const PlanesGeo& g, const uint32_t* dyp, const uint32_t* xp,
            float* part, int groups) {
  constexpr int smem = kSmem<N>;
  allow_shared_memory<wgrad_planes_kernel<N>>(smem, "wgrad_planes_kernel shared memory");
  const CUtensorMap dy_map = tiled_map<MathMode::kTF32>(
      dyp, g.depth, int64_t(g.k), N, "cuTensorMapEncodeTiled (convolution dy planes)");
  const CUtensorMap x_map = window_map(xp, g.depth, int64_t(g.cg) * groups);
  const dim3 grid((g.rows + kPlanesTileM - 1) / kPlanesTileM, (g.kg + N - 1) / N,
                  groups * g.splits);
  wgrad_planes_kernel<N><<<grid, kThreads, smem, st>>>(dy_map, x_map, g, part);
  check_launch("wgrad_planes_kernel");
}

}  // namespace

void wgrad_planes_launch(cudaStream_t st, const PlanesGeo& g, const uint32_t* dyp,
                         const uint32_t* xp, float* part, int groups) {
  switch (planes_width(g.kg)) {
    case 64:
      return launch<64>(st, g, dyp, xp, part, groups);
    case 96:
      return launch<96>(st, g, dyp, xp, part, groups);
    case 128:
      return launch<128>(st, g, dyp, xp, part, groups);
    default:
      return launch<192>(st, g, dyp, xp, part, groups);
  }
}

}  // namespace crema::prim::cuda::igemm
