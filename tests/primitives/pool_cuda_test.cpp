// pool_fwd/pool_bwd on CUDA against the CPU implementation, through kAuto and through every row of
// the table that runs the case: the CPU tests' unit shapes, the named layer shapes of
// problems.h, every mode, CEIL and FLOOR shapes, an NHWC view, both blends, f32 and f64.
// Integer-valued inputs make max pooling (and its argmax routing) exact and the average sums exact;
// only the average's division rounds.
#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cuda_test_util.h"
#include "primitives/pool.h"
#include "problems.h"

namespace crema::prim {
namespace {

struct Case {
  std::string name;
  PoolMode mode;
  int n, c, h, w, kh, kw, ph, pw, sh, sw;
  bool ceil_mode;
  bool nhwc = false;
  int shift = 0;        // device tensors start this many elements into their buffers
  bool lowest = false;  // most x cells hold the lowest finite value (max pooling only)
};

TensorDesc make_desc(DataType t, int n, int c, int h, int w, bool nhwc) {
  TensorDesc d = TensorDesc::nchw(t, n, c, h, w);
  if (nhwc) {
    d.stride_c = 1;
    d.stride_w = c;
    d.stride_h = int64_t(w) * c;
    d.stride_n = int64_t(h) * w * c;
  }
  return d;
}

// The (row, forward?) pairs this process has run.
std::set<std::pair<PoolAlgo, bool>>& rows_run() {
  static std::set<std::pair<PoolAlgo, bool>> run;
  return run;
}

template <typename T>
void check_case(const Case& k, Blend blend) {
  SCOPED_TRACE(k.name + (blend.beta != 0 ? " beta" : "") + (sizeof(T) == 8 ? " f64" : " f32"));
  constexpr DataType t = sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32;
  const int P = pool_out_dim(k.h, k.kh, k.ph, k.sh, k.ceil_mode);
  const int Q = pool_out_dim(k.w, k.kw, k.pw, k.sw, k.ceil_mode);
  const TensorDesc xd = make_desc(t, k.n, k.c, k.h, k.w, k.nhwc);
  const TensorDesc yd = make_desc(t, k.n, k.c, P, Q, k.nhwc);
  const PoolDesc pd{k.mode, k.kh, k.kw, k.ph, k.pw, k.sh, k.sw};
  const size_t nx = size_t(xd.count()), ny = size_t(yd.count());
  // Small integers: ties are common, which exercises the first-maximum rule.
  auto x = test::random_int_vector<T>(nx, 11, -4, 4);
  // Cells of 3 and 4 (2 in 9) stay; one 3 x 3 window in 10 holds only lowest().
  if (k.lowest)
    for (T& v : x)
      if (v < T(3)) v = std::numeric_limits<T>::lowest();
  const auto dy = test::random_int_vector<T>(ny, 12, -4, 4);
  const bool is_max = k.mode == PoolMode::kMax;
  // Max and all blends of integers are exact; the average divides once (f64 also sums exactly).
  const test::Tolerance exact{0, 0, true};
  const test::Tolerance tol = is_max           ? exact
                              : sizeof(T) == 8 ? test::Tolerance{1e-14, 1e-13, true}
                                               : test::Tolerance{1e-6, 1e-5, true};
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);

  // Forward: y0 is the prior output for beta != 0, NaN poison for beta 0.
  const auto y0 =
      blend.beta != 0 ? test::random_int_vector<T>(ny, 13, -4, 4) : test::poisoned<T>(ny);
  std::vector<T> y_ref = y0;
  pool_fwd(cpu, pd, xd, x.data(), yd, y_ref.data(), blend);
  // Device copies of v starting k.shift elements into their buffers, and the tensor's address.
  auto shifted = [&](const std::vector<T>& v) {
    std::vector<T> s(size_t(k.shift), T(0));
    s.insert(s.end(), v.begin(), v.end());
    return to_gpu(s);
  };
  auto at = [&](const DeviceBuffer& b) { return static_cast<T*>(b.get()) + k.shift; };
  auto back = [&](const DeviceBuffer& b, size_t n) {
    const auto all = from_gpu<T>(gpu, b, n + size_t(k.shift));
    return std::vector<T>(all.begin() + k.shift, all.end());
  };
  DeviceBuffer gx = shifted(x);
  // Backward from a plain forward result (the argmax comes from comparing x with it).
  std::vector<T> y(ny);
  pool_fwd(cpu, pd, xd, x.data(), yd, y.data());
  const auto dx0 =
      blend.beta != 0 ? test::random_int_vector<T>(nx, 14, -4, 4) : test::poisoned<T>(nx);
  std::vector<T> dx_ref = dx0;
  pool_bwd(cpu, pd, yd, y.data(), dy.data(), xd, x.data(), dx_ref.data(), blend);
  DeviceBuffer g_y = shifted(y), g_dy = shifted(dy);

  // kAuto, then every row of the table that runs the case.
  for (PoolAlgo a : auto_then(pool_algos(Device::kCUDA))) {
    PoolDesc forced = pd;
    forced.algo = a;
    SCOPED_TRACE(pool_algo_name(a));
    DeviceBuffer gy = shifted(y0);
    if (!pool_fwd_unsupported(gpu, forced, xd, at(gx), yd, at(gy), blend)) {
      pool_fwd(gpu, forced, xd, at(gx), yd, at(gy), blend);
      EXPECT_TRUE(all_close(back(gy, ny), y_ref, tol)) << "forward";
      rows_run().insert({a, true});
    }
    DeviceBuffer g_dx = shifted(dx0);
    if (!pool_bwd_unsupported(gpu, forced, yd, at(g_y), at(g_dy), xd, at(gx), at(g_dx), blend)) {
      pool_bwd(gpu, forced, yd, at(g_y), at(g_dy), xd, at(gx), at(g_dx), blend);
      EXPECT_TRUE(all_close(back(g_dx, nx), dx_ref, tol)) << "backward";
      rows_run().insert({a, false});
    }
  }
}

void check_all(const Case& k) {
  for (Blend blend : {Blend{}, Blend{0.5, -1.5}}) {
    check_case<float>(k, blend);
    check_case<double>(k, blend);
  }
}

const std::vector<PoolMode> kAllModes = {PoolMode::kMax, PoolMode::kAverage,
                                         PoolMode::kAverageExcludePad};

std::vector<Case> expand(const std::string& name, int n, int c, int h, int w, int kh, int kw,
                         int ph, int pw, int sh, int sw, const std::vector<PoolMode>& modes,
                         bool floor_too = true) {
  std::vector<Case> out;
  for (PoolMode m : modes)
    for (bool ceil_mode : {true, false}) {
      if (!ceil_mode && !floor_too) continue;
      const char* mode_name = m == PoolMode::kMax       ? "max"
                              : m == PoolMode::kAverage ? "avg"
                                                        : "avg_excl";
      out.push_back({name + "_" + mode_name + (ceil_mode ? "_ceil" : "_floor"), m, n, c, h, w, kh,
                     kw, ph, pw, sh, sw, ceil_mode});
    }
  return out;
}

const std::vector<PoolMode> kMaxOnly = {PoolMode::kMax};
const std::vector<PoolMode> kAvgOnly = {PoolMode::kAverage, PoolMode::kAverageExcludePad};

// The cases of several expand() calls, in order.
std::vector<Case> concat(std::initializer_list<std::vector<Case>> parts) {
  std::vector<Case> all;
  for (const std::vector<Case>& v : parts) all.insert(all.end(), v.begin(), v.end());
  return all;
}

// v with every case's device tensors starting `shift` elements into their buffers.
std::vector<Case> shifted(std::vector<Case> v, int shift) {
  for (Case& k : v) k.shift = shift;
  return v;
}

// v with every case's tensors viewed as NHWC.
std::vector<Case> as_nhwc(std::vector<Case> v) {
  for (Case& k : v) k.nhwc = true;
  return v;
}

void check_all(const std::vector<Case>& cases) {
  for (const Case& k : cases) check_all(k);
}

TEST(PoolCuda, UnitShapesMatchCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  std::vector<Case> unit;  // the CPU test's shapes
  for (const test::PoolProblem& pb : test::unit_pool_problems()) {
    const std::vector<Case> v = expand(pb.name, pb.n, pb.c, pb.h, pb.w, pb.kernel_h, pb.kernel_w,
                                       pb.pad_h, pb.pad_w, pb.stride_h, pb.stride_w, kAllModes);
    unit.insert(unit.end(), v.begin(), v.end());
  }
  check_all(concat({
      unit,
      // The staged global forward and the average's global backward: planes of 49 cells not filling
      // the last warp (3 x 37 planes), 64 cells (the largest staged, an even tile stride), one
      // cell.
      expand("global_7x7_planes", 3, 37, 7, 7, 7, 7, 0, 0, 1, 1, kAllModes, false),
      expand("global_8x8", 2, 33, 8, 8, 8, 8, 0, 0, 1, 1, kAllModes, false),
      expand("global_1x1", 2, 40, 1, 1, 1, 1, 0, 0, 1, 1, kAllModes, false),
      // Windows of 64 cells and more take the warp-per-output kernels (the global average backward
      // of any size takes the global kernel).
      expand("global_14x14", 2, 5, 14, 14, 14, 14, 0, 0, 1, 1, kAllModes, false),
      expand("big_window_pad", 1, 3, 20, 17, 9, 8, 2, 3, 4, 3, kAllModes),
      // A max window of 6400 cells: the first-maximum scan of a large window.
      expand("global_80x80", 1, 2, 80, 80, 80, 80, 0, 0, 1, 1, {PoolMode::kMax}, false),
      // Stride above the kernel with padding: inputs no window covers, tiles with gaps.
      expand("gaps_pad", 2, 3, 23, 19, 2, 3, 1, 1, 4, 5, kAllModes),
      // Many small planes per block, and planes wider than one 32-column tile.
      expand("tiny_planes", 3, 70, 4, 4, 2, 2, 0, 0, 2, 2, kAllModes),
      expand("wide", 1, 2, 9, 131, 3, 3, 1, 1, 2, 2, kAllModes),
      // The sweep kernels (square 2/2, 3/2, 3/1 windows): a pad as large as the stride (a first
      // block of pad cells only), and tall planes cut into bands of rows whose first steps gather
      // what the windows above the band add.
      expand("pad2_k3s2", 2, 3, 13, 11, 3, 3, 2, 2, 2, 2, kAllModes),
      expand("bands_k3s2", 1, 2, 41, 6, 3, 3, 1, 1, 2, 2, kAllModes),
      expand("bands_k2s2", 2, 1, 37, 5, 2, 2, 1, 1, 2, 2, kAllModes),
      expand("bands_k3s1", 1, 2, 30, 5, 3, 3, 1, 1, 1, 1, kAllModes),
      // The lane kernels of the 3/1 pad-1 max pool, a cell per lane (the forward up to 32 wide, the
      // backward on odd widths up to 32): one full warp per line less one lane (31 wide), six lines
      // per warp with idle lanes (5 wide), bands of rows whose lines share a warp, and 33 wide,
      // which takes the sweep. Two cells per lane (the backward on even widths up to 64): a full
      // warp per line (64 wide, and 32: two lines), four lines of 7 lanes (14 wide), a lane per
      // line (2 wide), and 66 wide, which takes the sweep; the same 14-wide planes shifted by one
      // element (no 2-cell rows) take a cell per lane.
      expand("lanes_w31", 2, 3, 9, 31, 3, 3, 1, 1, 1, 1, kMaxOnly, false),
      expand("lanes_w5_bands", 1, 3, 40, 5, 3, 3, 1, 1, 1, 1, kMaxOnly, false),
      expand("lanes_w7_planes", 3, 50, 7, 7, 3, 3, 1, 1, 1, 1, kMaxOnly, false),
      expand("lanes_w1", 2, 3, 6, 1, 3, 3, 1, 1, 1, 1, kMaxOnly, false),
      expand("sweep_w33", 1, 2, 6, 33, 3, 3, 1, 1, 1, 1, kMaxOnly, false),
      expand("lanes_pairs_w64", 2, 3, 9, 64, 3, 3, 1, 1, 1, 1, kMaxOnly, false),
      expand("lanes_pairs_w32", 2, 3, 9, 32, 3, 3, 1, 1, 1, 1, kMaxOnly, false),
      expand("lanes_pairs_w14_bands", 2, 9, 37, 14, 3, 3, 1, 1, 1, 1, kMaxOnly, false),
      expand("lanes_pairs_w2", 3, 50, 5, 2, 3, 3, 1, 1, 1, 1, kMaxOnly, false),
      expand("sweep_w66", 1, 2, 6, 66, 3, 3, 1, 1, 1, 1, kMaxOnly, false),
      shifted(expand("lanes_w14_shifted", 2, 9, 11, 14, 3, 3, 1, 1, 1, 1, kMaxOnly, false), 1),
      // The lane kernel of the 3/2 max backward (at most 32 two-column blocks a line): 32 blocks
      // (64 and 63 wide, pad 0 and 1), 33 blocks (65 wide: the sweep), one and two blocks (1 wide
      // with pad 1, 3 wide), 16 lines of two blocks with bands, pad 2 (a first block of pad alone),
      // and rectangular pads.
      expand("lanes_s2_w64", 2, 3, 11, 64, 3, 3, 0, 0, 2, 2, kMaxOnly),
      expand("lanes_s2_w63_pad1", 1, 3, 12, 63, 3, 3, 1, 1, 2, 2, kMaxOnly),
      expand("sweep_s2_w65", 1, 2, 7, 65, 3, 3, 0, 0, 2, 2, kMaxOnly),
      expand("lanes_s2_w1_pad1", 2, 3, 9, 1, 3, 3, 1, 1, 2, 2, kMaxOnly),
      expand("lanes_s2_w3", 2, 3, 8, 3, 3, 3, 0, 0, 2, 2, kMaxOnly),
      expand("lanes_s2_w4_bands", 3, 5, 61, 4, 3, 3, 0, 0, 2, 2, kMaxOnly),
      expand("lanes_s2_pad2", 2, 4, 12, 13, 3, 3, 2, 2, 2, 2, kMaxOnly),
      expand("lanes_s2_pads_1_2", 2, 3, 10, 15, 3, 3, 1, 2, 2, 2, kMaxOnly),
      // The element-wise max backward of 2/2 windows tiling their planes: two windows per thread
      // (12 wide), one (6 wide, and 12 wide shifted by two elements: rows off a 4-cell boundary),
      // and tensors it leaves to the sweep: shifted by one element, an odd height (an NHWC view
      // below).
      expand("k2s2_tiles_w12", 2, 5, 6, 12, 2, 2, 0, 0, 2, 2, kMaxOnly),
      expand("k2s2_tiles_w6", 3, 4, 8, 6, 2, 2, 0, 0, 2, 2, kMaxOnly),
      expand("k2s2_tiles_h7", 2, 3, 7, 8, 2, 2, 0, 0, 2, 2, kMaxOnly),
      shifted(expand("k2s2_tiles_shifted", 2, 3, 4, 12, 2, 2, 0, 0, 2, 2, kMaxOnly, false), 1),
      shifted(expand("k2s2_tiles_shifted", 2, 3, 4, 12, 2, 2, 0, 0, 2, 2, kMaxOnly, false), 2),
      // The average backward of 2/2 and 3/2 windows by row vectors: four cells per thread (widths
      // of 4k), two (4k + 2), padding (windows clipped at both ends), rows no window covers (floor
      // shapes), and rows off a 4-cell boundary (shifted by one element: the sweep; by two f32: two
      // cells).
      expand("avg_rows_k3_w12", 2, 3, 9, 12, 3, 3, 0, 0, 2, 2, kAvgOnly),
      expand("avg_rows_k3_w10_pad1", 2, 3, 8, 10, 3, 3, 1, 1, 2, 2, kAvgOnly),
      expand("avg_rows_k2_w8_pad1", 1, 4, 7, 8, 2, 2, 1, 1, 2, 2, kAvgOnly),
      expand("avg_rows_k2_w12", 2, 2, 5, 12, 2, 2, 0, 0, 2, 2, kAvgOnly),
      shifted(expand("avg_rows_shifted", 2, 3, 6, 8, 3, 3, 0, 0, 2, 2, kAvgOnly, false), 1),
      shifted(expand("avg_rows_shifted", 2, 3, 6, 8, 3, 3, 0, 0, 2, 2, kAvgOnly, false), 2),
      // The forward of 2/2 windows and 3/2 average windows by row vectors (four and two outputs per
      // thread): a ceil-mode last window past the right edge (16 wide, 3/2; its 7-output floor
      // shape takes the sweep), a ceil-mode last row past the bottom (7 high, 2/2, 12 wide: two
      // outputs per thread), and a last window that reads column 16 inside the row (17 wide; 18
      // wide floor).
      expand("fwd_rows_k3_w16", 2, 3, 16, 16, 3, 3, 0, 0, 2, 2, kAllModes),
      expand("fwd_rows_k2_h7_w12", 2, 3, 7, 12, 2, 2, 0, 0, 2, 2, kAllModes),
      expand("fwd_rows_k3_w17", 1, 3, 9, 17, 3, 3, 0, 0, 2, 2, kAllModes),
      expand("fwd_rows_k3_w18", 1, 3, 9, 18, 3, 3, 0, 0, 2, 2, kAllModes),
      // Many small planes: the plane/channel split of the flat index.
      expand("many_planes", 1, 70000, 3, 3, 2, 2, 0, 0, 1, 1, kAllModes, false),
  }));
  // Each row ran both passes on some of these cases.
  for (PoolAlgo a : pool_algos(Device::kCUDA))
    for (bool forward : {true, false})
      EXPECT_TRUE(rows_run().count({a, forward}))
          << pool_algo_name(a) << (forward ? " forward" : " backward") << " never ran";
}

// Channels last, every row runs what it takes; kAuto takes the window row, whose threads walk the
// channels of a pixel, one value a thread (3 channels) or a pack of 2-4 (4 and 64 channels).
TEST(PoolCuda, NhwcViewMatchesCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  check_all(as_nhwc(concat({
      expand("nhwc", 2, 3, 7, 6, 3, 3, 1, 1, 2, 2, kAllModes),
      expand("nhwc_c64", 2, 64, 13, 12, 3, 3, 1, 1, 2, 2, kAllModes, false),
  })));
  // Tensors two values off a 16-byte boundary: packs of 2 (f32: 8 bytes; f64: 16).
  check_all(shifted(
      as_nhwc(expand("nhwc_c64_shift2", 2, 64, 9, 8, 3, 3, 1, 1, 2, 2, kAllModes, false)), 2));
  check_all(as_nhwc(concat({
      // Global pooling of planes whose cells are not contiguous: the general kernels.
      expand("nhwc_global", 2, 3, 5, 4, 5, 4, 0, 0, 1, 1, kAllModes, false),
      expand("nhwc_k3s1", 2, 3, 7, 6, 3, 3, 1, 1, 1, 1, kMaxOnly, false),
      expand("nhwc_k2s2", 2, 4, 6, 8, 2, 2, 0, 0, 2, 2, kMaxOnly, false),
  })));
  // Max backward whose argmax passes 16 MiB runs over slices of the batch: packed NHWC, a byte an
  // output (17.7 MB: two slices of 9 images), and NCHW, an int an output (19.7 MB: 3 and 2).
  check_all(as_nhwc(
      expand("nhwc_argmax_in_slices", 18, 64, 124, 124, 3, 3, 1, 1, 1, 1, kMaxOnly, false)));
  check_all(expand("argmax_in_slices", 5, 64, 124, 124, 3, 3, 1, 1, 1, 1, kMaxOnly, false));
}

// The staged forward and max backward of small packed planes (pool_planes_cuda.cu) run on grids
// of at least one wave (forward) or two (backward) of 8 blocks per SM, so these cases have
// 2400-3000 groups of planes, the last one partial: 13 x 13 planes in groups of 12 (a span
// ending in a partial 16-byte vector), 8 x 8 in groups of 32 (the forward; the max backward of
// these tiling windows takes pool_rows_cuda.cu), and padded 2/2 windows (one phase of backward
// windows). 3/1 windows with pad 1 (nine phases) take the lane kernels. The cases are split over
// three tests so that each runs within the sanitizer sweep's time limit.
TEST(PoolCuda, StagedPlanesMatchCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  check_all(concat({
      expand("planes_13x13", 7, 5001, 13, 13, 3, 3, 0, 0, 2, 2, kAllModes, false),
      expand("planes_8x8", 7, 12001, 8, 8, 2, 2, 0, 0, 2, 2, kAllModes, false),
      expand("planes_k2s2_pad1", 4, 10001, 11, 11, 2, 2, 1, 1, 2, 2, kAllModes),
      expand("planes_k3s1_pad1", 7, 2001, 14, 14, 3, 3, 1, 1, 1, 1, {PoolMode::kMax}, false),
  }));
}

// Larger staged planes: 32 x 32 (2 per group), 55 x 55 (4 per group, the largest forward tile; too
// large for the backward's), and rectangular windows.
TEST(PoolCuda, StagedLargePlanesMatchCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  check_all(concat({
      expand("planes_32x32", 3, 1601, 32, 32, 3, 3, 0, 0, 2, 2, {PoolMode::kMax}, false),
      expand("planes_55x55", 8, 1001, 55, 55, 3, 3, 0, 0, 2, 2, {PoolMode::kMax}, false),
      expand("planes_k5x3_s3x2", 3, 7001, 17, 14, 5, 3, 2, 1, 3, 2, kAllModes, false),
  }));
}

// Tensors that do not start on a 16-byte boundary, which the staged kernels leave to the others
// (every shift of f32; 1 and 3 of f64).
TEST(PoolCuda, StagedPlanesShiftedMatchCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  for (int shift : {1, 2, 3})
    check_all(shifted(
        expand("planes_shifted", 2, 18001, 13, 13, 3, 3, 0, 0, 2, 2, kAllModes, false), shift));
}

// The 3/1 lane forward stages a warp's planes in shared memory where they are packed, fit in
// 4 KB and make at least 2^12 warps of whole planes: 14 x 14 planes two to a warp, the last warp
// holding one (f64 too), and 28 x 28 planes one to a warp (f64 over 4 KB: not staged). The
// shifted and smaller cases of UnitShapesMatchCpu take the unstaged kernel.
TEST(PoolCuda, StagedLanesMatchCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  check_all(concat({
      expand("staged_lanes_w14", 1, 8193, 14, 14, 3, 3, 1, 1, 1, 1, {PoolMode::kMax}, false),
      expand("staged_lanes_w28", 1, 4097, 28, 28, 3, 3, 1, 1, 1, 1, {PoolMode::kMax}, false),
  }));
}

// Max windows whose cells all hold the lowest finite value: the maximum equals the scans' initial
// value, and the gradient still goes to the window's first cell, as on the CPU. Each max kernel:
// the lanes of 3/1 windows (a cell and two cells per lane) and of 3/2 windows, the staged planes,
// the sweep and the general kernel.
TEST(PoolCuda, WindowsOfLowestValuesMatchCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  std::vector<Case> all = concat({
      expand("lowest_lanes", 3, 50, 7, 7, 3, 3, 1, 1, 1, 1, kMaxOnly, false),
      expand("lowest_lanes_pairs", 3, 50, 7, 14, 3, 3, 1, 1, 1, 1, kMaxOnly, false),
      expand("lowest_lanes_s2", 2, 3, 11, 64, 3, 3, 1, 1, 2, 2, kMaxOnly, false),
      expand("lowest_planes", 7, 5001, 13, 13, 3, 3, 0, 0, 2, 2, kMaxOnly, false),
      expand("lowest_k2s2", 2, 3, 6, 12, 2, 2, 0, 0, 2, 2, kMaxOnly, false),
      expand("lowest_sweep", 1, 2, 6, 33, 3, 3, 1, 1, 1, 1, kMaxOnly, false),
      expand("lowest_general", 1, 3, 20, 17, 9, 8, 2, 3, 4, 3, kMaxOnly, false),
  });
  for (Case& k : all) k.lowest = true;
  check_all(all);
}

TEST(PoolCuda, NamedLayerShapesMatchCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  for (const test::PoolProblem& pb : test::named_pool_problems()) {
    const PoolMode m = pb.kind == test::PoolKind::kMax ? PoolMode::kMax : PoolMode::kAverage;
    for (const Case& k : expand(pb.name, pb.n, pb.c, pb.h, pb.w, pb.kernel_h, pb.kernel_w, pb.pad_h,
                                pb.pad_w, pb.stride_h, pb.stride_w, {m}, false))
      check_all(k);
  }
}

// Full-size layers at batch 8, where the tiles, plane groups and grid shape are those of
// training (googlenet:inception_4a's pool: two 14-wide lines per warp).
TEST(PoolCuda, RealSizeLayersMatchCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  check_all(concat({
      expand("caffenet:pool1_b8", 8, 96, 55, 55, 3, 3, 0, 0, 2, 2, {PoolMode::kMax}, false),
      expand("caffenet:pool2_b8", 8, 256, 27, 27, 3, 3, 0, 0, 2, 2, {PoolMode::kMax}, false),
      expand("googlenet:pool2_b8", 8, 192, 56, 56, 3, 3, 0, 0, 2, 2, {PoolMode::kMax}, false),
      expand("googlenet:3a_pool_b8", 8, 192, 28, 28, 3, 3, 1, 1, 1, 1, {PoolMode::kMax}, false),
      expand("googlenet:4a_pool_b8", 8, 480, 14, 14, 3, 3, 1, 1, 1, 1, {PoolMode::kMax}, false),
      expand("caffenet:pool5_b8", 8, 256, 13, 13, 3, 3, 0, 0, 2, 2, {PoolMode::kMax}, false),
      expand("googlenet:pool4_b8", 8, 480, 14, 14, 3, 3, 0, 0, 2, 2, {PoolMode::kMax}, false),
      expand("cifar10_quick:pool2_b16", 16, 32, 16, 16, 3, 3, 0, 0, 2, 2, {PoolMode::kAverage},
             false),
      // Average pooling on bands of several rows (small layers get one-row bands).
      expand("avg_k3s2_55_b8", 8, 96, 55, 55, 3, 3, 0, 0, 2, 2,
             {PoolMode::kAverage, PoolMode::kAverageExcludePad}, false),
      expand("googlenet:pool5_b8", 8, 1024, 7, 7, 7, 7, 0, 0, 1, 1, {PoolMode::kAverage}, false),
  }));
}

}  // namespace
}  // namespace crema::prim
