// Convolution primitives against a naive double-precision reference (the oracle below, plain
// loops over the index map of conv.h): every algorithm, float and double, forward with blend and
// epilogue, backward data, filter and bias, on unit, random and named real-layer shapes.
#include "primitives/conv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "doc_tables.h"
#include "prim_test_util.h"
#include "primitives/common/dtype_visit.h"
#include "primitives/handle.h"
#include "problems.h"
#include "test_util.h"
#include "winograd_tolerance.h"

namespace crema::prim {
namespace {

using test::ConvProblem;
using test::Descs;
using test::descs_of;
using test::winograd_tolerances;
using test::WinogradTolerances;

constexpr Tolerance kExact{0.0, 0.0, false};

int out_dim(int in, int k, int pad, int stride, int dil) {
  return (in + 2 * pad - dil * (k - 1) - 1) / stride + 1;
}

struct Shapes {
  int p, q, cg, kg;
  int64_t x, w, y;
};

Shapes shapes_of(const ConvProblem& pb) {
  Shapes s;
  s.p = out_dim(pb.h, pb.r, pb.pad_h, pb.stride_h, pb.dilation_h);
  s.q = out_dim(pb.w, pb.s, pb.pad_w, pb.stride_w, pb.dilation_w);
  s.cg = pb.c / pb.groups;
  s.kg = pb.k / pb.groups;
  s.x = int64_t(pb.n) * pb.c * pb.h * pb.w;
  s.w = int64_t(pb.k) * s.cg * pb.r * pb.s;
  s.y = int64_t(pb.n) * pb.k * s.p * s.q;
  return s;
}

// The oracle: one scan of every (output, tap) pair accumulates y, dx and dw together.
struct Reference {
  std::vector<double> y, dx, dw, db;
  // How many y, dx and dw elements some (output, tap) pair reaches; the others are zero by
  // construction, which the vacuous-comparison guard must not mistake for an unwritten output.
  int64_t y_reached = 0, dx_reached = 0, dw_reached = 0;
};

Reference reference(const ConvProblem& pb, const std::vector<double>& x,
                    const std::vector<double>& w, const std::vector<double>& dy) {
  const Shapes sh = shapes_of(pb);
  Reference ref;
  ref.y.assign(sh.y, 0.0);
  ref.dx.assign(sh.x, 0.0);
  ref.dw.assign(sh.w, 0.0);
  ref.db.assign(pb.k, 0.0);
  std::vector<char> y_hit(sh.y, 0), x_hit(sh.x, 0), w_hit(sh.w, 0);
  // Loop order keeps one input plane and one output plane hot; the arithmetic is the formula.
  for (int n = 0; n < pb.n; ++n)
    for (int k = 0; k < pb.k; ++k)
      for (int cl = 0; cl < sh.cg; ++cl) {
        const int c = k / sh.kg * sh.cg + cl;
        for (int r = 0; r < pb.r; ++r)
          for (int s = 0; s < pb.s; ++s) {
            const int64_t wi = ((int64_t(k) * sh.cg + cl) * pb.r + r) * pb.s + s;
            for (int p = 0; p < sh.p; ++p)
              for (int q = 0; q < sh.q; ++q) {
                const int hh = p * pb.stride_h - pb.pad_h + r * pb.dilation_h;
                const int ww = q * pb.stride_w - pb.pad_w + s * pb.dilation_w;
                if (hh < 0 || hh >= pb.h || ww < 0 || ww >= pb.w) continue;
                const int64_t xi = ((int64_t(n) * pb.c + c) * pb.h + hh) * pb.w + ww;
                const int64_t yi = ((int64_t(n) * pb.k + k) * sh.p + p) * sh.q + q;
                ref.y[yi] += x[xi] * w[wi];
                ref.dx[xi] += dy[yi] * w[wi];
                ref.dw[wi] += dy[yi] * x[xi];
                y_hit[yi] = x_hit[xi] = w_hit[wi] = 1;
              }
          }
      }
  for (int64_t i = 0; i < sh.y; ++i) ref.db[i / (int64_t(sh.p) * sh.q) % pb.k] += dy[i];
  ref.y_reached = std::count(y_hit.begin(), y_hit.end(), 1);
  ref.dx_reached = std::count(x_hit.begin(), x_hit.end(), 1);
  ref.dw_reached = std::count(w_hit.begin(), w_hit.end(), 1);
  return ref;
}

template <typename T>
std::vector<T> cast(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

// Integer-valued data: every product and partial sum is exact in float, so all algorithms and
// summation orders must agree with the oracle exactly.
struct Data {
  std::vector<double> x, w, dy, bias, y0, dx0, dw0, db0;
};

Data make_data(const ConvProblem& pb, uint64_t seed) {
  const Shapes sh = shapes_of(pb);
  Data d;
  d.x = test::random_int_vector<double>(sh.x, seed + 1);
  d.w = test::random_int_vector<double>(sh.w, seed + 2);
  d.dy = test::random_int_vector<double>(sh.y, seed + 3);
  d.bias = test::random_int_vector<double>(pb.k, seed + 4, -4, 8);
  d.y0 = test::random_int_vector<double>(sh.y, seed + 5);
  d.dx0 = test::random_int_vector<double>(sh.x, seed + 6);
  d.dw0 = test::random_int_vector<double>(sh.w, seed + 7);
  d.db0 = test::random_int_vector<double>(pb.k, seed + 8);
  return d;
}

// out[i] = alpha * a[i] + beta * b[i]
std::vector<double> blend(double alpha, const std::vector<double>& a, double beta,
                          const std::vector<double>& b) {
  std::vector<double> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = alpha * a[i] + beta * b[i];
  return out;
}

// Exact comparison; zeros may dominate only where the problem's structure puts them.
Tolerance exact_unless_sparse(int64_t reached, int64_t size) {
  return Tolerance{0.0, 0.0, reached * 4 < size * 3};
}

// Large named layers run fewer combinations: float checks every concrete algorithm (direct
// without blending), double only the heuristic's choice; kAuto and kFind are covered by the
// smaller problems.
struct RunOptions {
  bool large = false;
  bool is_double = false;
};

template <typename T>
void check_problem(const ConvProblem& pb, const Data& d, const Reference& ref, RunOptions opt) {
  const Shapes sh = shapes_of(pb);
  const Descs ds = descs_of(pb, dtype_of<T>());
  const auto x = cast<T>(d.x), w = cast<T>(d.w), dy = cast<T>(d.dy), bias = cast<T>(d.bias);
  const Tolerance y_exact = exact_unless_sparse(ref.y_reached, sh.y);
  const Tolerance dx_exact = exact_unless_sparse(ref.dx_reached, sh.x);
  const Tolerance dw_exact = exact_unless_sparse(ref.dw_reached, sh.w);
  Handle h;
  const ConvAlgo heuristic = conv_heuristic(h, ds.cd, ds.xd, ds.wd, ds.yd);
  std::vector<ConvAlgo> algos = conv_algos(h.device());
  algos.insert(algos.end(), {ConvAlgo::kAuto, ConvAlgo::kFind});
  for (ConvAlgo algo : algos) {
    if (!conv_supports(h, algo, ds.cd, ds.xd, ds.wd, ds.yd)) continue;
    if (opt.large && (algo == ConvAlgo::kAuto || algo == ConvAlgo::kFind)) continue;
    if (opt.large && opt.is_double && algo != heuristic) continue;
    SCOPED_TRACE(conv_algo_name(algo));
    const bool approx = (algo == ConvAlgo::kWinograd || algo == ConvAlgo::kFind) &&
                        conv_supports(h, ConvAlgo::kWinograd, ds.cd, ds.xd, ds.wd, ds.yd);
    const WinogradTolerances wt = winograd_tolerances(pb, opt.is_double);
    const Tolerance y_tol = approx ? wt.y : y_exact, dx_tol = approx ? wt.dx : dx_exact,
                    dw_tol = approx ? wt.dw : dw_exact;

    auto y = test::poisoned<T>(sh.y);
    conv_fwd(h, ds.cd, algo, ds.xd, x.data(), ds.wd, w.data(), ds.yd, y.data());
    EXPECT_TRUE(all_close(y, ref.y, y_tol)) << "forward";

    auto dx = test::poisoned<T>(sh.x);
    conv_bwd_data(h, ds.cd, algo, ds.wd, w.data(), ds.yd, dy.data(), ds.xd, dx.data());
    EXPECT_TRUE(all_close(dx, ref.dx, dx_tol)) << "backward data";

    auto dw = test::poisoned<T>(sh.w);
    conv_bwd_filter(h, ds.cd, algo, ds.xd, x.data(), ds.yd, dy.data(), ds.wd, dw.data());
    EXPECT_TRUE(all_close(dw, ref.dw, dw_tol)) << "backward filter";

    if (opt.large && (opt.is_double || algo == ConvAlgo::kDirect)) continue;
    // y = relu(2 * conv + y0 + bias): beta = 1 accumulates onto the existing values.
    y = cast<T>(d.y0);
    conv_fwd(h, ds.cd, algo, ds.xd, x.data(), ds.wd, w.data(), ds.yd, y.data(), {2.0, 1.0},
             {bias.data(), true});
    auto want = blend(2.0, ref.y, 1.0, d.y0);
    for (int64_t i = 0; i < sh.y; ++i)
      want[i] = std::max(0.0, want[i] + d.bias[i / (int64_t(sh.p) * sh.q) % pb.k]);
    // ReLU zeroes about half the outputs; the pre-activation was checked above.
    EXPECT_TRUE(all_close(y, want, {y_tol.abs, 0.0, true})) << "forward blend + bias + relu";

    y = test::poisoned<T>(sh.y);
    conv_fwd(h, ds.cd, algo, ds.xd, x.data(), ds.wd, w.data(), ds.yd, y.data(), {}, {bias.data()});
    want = ref.y;
    for (int64_t i = 0; i < sh.y; ++i) want[i] += d.bias[i / (int64_t(sh.p) * sh.q) % pb.k];
    EXPECT_TRUE(all_close(y, want, y_tol)) << "forward + bias";

    dx = cast<T>(d.dx0);
    conv_bwd_data(h, ds.cd, algo, ds.wd, w.data(), ds.yd, dy.data(), ds.xd, dx.data(), {2.0, 3.0});
    EXPECT_TRUE(all_close(dx, blend(2.0, ref.dx, 3.0, d.dx0), dx_tol)) << "backward data blend";

    // beta = 3 must apply once, not once per image of the batch.
    dw = cast<T>(d.dw0);
    conv_bwd_filter(h, ds.cd, algo, ds.xd, x.data(), ds.yd, dy.data(), ds.wd, dw.data(),
                    {-2.0, 3.0});
    EXPECT_TRUE(all_close(dw, blend(-2.0, ref.dw, 3.0, d.dw0), dw_tol)) << "backward filter blend";
  }

  auto db = test::poisoned<T>(pb.k);
  conv_bwd_bias(h, ds.yd, dy.data(), db.data());
  EXPECT_TRUE(all_close(db, ref.db, {0.0, 0.0, true})) << "backward bias";
  db = cast<T>(d.db0);
  conv_bwd_bias(h, ds.yd, dy.data(), db.data(), {2.0, -1.0});
  EXPECT_TRUE(all_close(db, blend(2.0, ref.db, -1.0, d.db0), {0.0, 0.0, true}))
      << "backward bias blend";
}

int64_t macs(const ConvProblem& pb) {
  const Shapes sh = shapes_of(pb);
  return sh.y * sh.cg * pb.r * pb.s;
}

void check_both_types(const ConvProblem& pb, uint64_t seed) {
  SCOPED_TRACE(pb.name);
  const Data d = make_data(pb, seed);
  const Reference ref = reference(pb, d.x, d.w, d.dy);
  const bool large = macs(pb) > 20'000'000;
  {
    SCOPED_TRACE("float");
    check_problem<float>(pb, d, ref, RunOptions{large, false});
  }
  {
    SCOPED_TRACE("double");
    check_problem<double>(pb, d, ref, RunOptions{large, true});
  }
}

// The case list every backend runs (problems.h).

class ConvProblemTest : public ::testing::TestWithParam<ConvProblem> {};

TEST_P(ConvProblemTest, AllAlgorithmsMatchReference) { check_both_types(GetParam(), 1234); }

INSTANTIATE_TEST_SUITE_P(Cases, ConvProblemTest, ::testing::ValuesIn(test::conv_cases()),
                         test::ParamName());

// Real-valued inputs: rounding differs between algorithms, so compare with a tolerance.
TEST(ConvReal, RandomRealInputsWithinTolerance) {
  const ConvProblem pb{"real", 3, 8, 11, 13, 6, 3, 3, 1, 1, 1, 2, 1, 1, 2};
  const Shapes sh = shapes_of(pb);
  const auto x = test::random_vector<double>(sh.x, 11);
  const auto w = test::random_vector<double>(sh.w, 12);
  const auto dy = test::random_vector<double>(sh.y, 13);
  const Reference ref = reference(pb, x, w, dy);
  const Descs ds = descs_of(pb, DataType::kFloat32);
  const auto xf = cast<float>(x), wf = cast<float>(w), dyf = cast<float>(dy);
  // im2col runs in chunks of images sized by the workspace budget per thread: the whole share,
  // chunks of 2 then 1, and one image at a time.
  const size_t per_image = (8 * 3 * 3 + 6) * size_t(sh.p) * sh.q * sizeof(float);
  // The batch is also split over 1, 2 and 3 threads (3 images: shares of 1 and 2, or 1 each).
  for (int threads : {1, 2, 3})
    for (size_t budget : {size_t(32) << 20, 2 * per_image, size_t(1)})
      for (ConvAlgo algo : {ConvAlgo::kIm2colGemm, ConvAlgo::kDirect}) {
        SCOPED_TRACE(::testing::Message()
                     << conv_algo_name(algo) << " budget " << budget << " threads " << threads);
        Handle h;
        h.set_cpu_threads(threads);
        h.set_workspace_budget(budget * threads);
        auto y = test::poisoned<float>(sh.y);
        conv_fwd(h, ds.cd, algo, ds.xd, xf.data(), ds.wd, wf.data(), ds.yd, y.data());
        EXPECT_TRUE(all_close(y, ref.y, {1e-5, 1e-4}));
        auto dx = test::poisoned<float>(sh.x);
        conv_bwd_data(h, ds.cd, algo, ds.wd, wf.data(), ds.yd, dyf.data(), ds.xd, dx.data());
        EXPECT_TRUE(all_close(dx, ref.dx, {1e-5, 1e-4}));
        auto dw = test::poisoned<float>(sh.w);
        conv_bwd_filter(h, ds.cd, algo, ds.xd, xf.data(), ds.yd, dyf.data(), ds.wd, dw.data());
        EXPECT_TRUE(all_close(dw, ref.dw, {1e-5, 1e-4}));
      }
}

// Winograd against the double oracle on real values: every output within 2^-14 (fp32) or 2^-43
// (fp64) of the magnitude it sums (the oracle on |x|, |w|, |dy|), the bound conv_winograd.h
// documents; padding 0, 1, 2 and mixed, groups, planes that end mid-tile; whole batches and chunks
// of one image. The values do not depend on the thread count.
template <typename T>
void check_winograd_bound(const ConvProblem& pb, double unit) {
  const Shapes sh = shapes_of(pb);
  const auto x = test::random_vector<double>(sh.x, 21), w = test::random_vector<double>(sh.w, 22),
             dy = test::random_vector<double>(sh.y, 23);
  const auto magnitudes = [](std::vector<double> v) {
    for (double& a : v) a = std::fabs(a);
    return v;
  };
  const Reference ref = reference(pb, x, w, dy);
  const Reference mag = reference(pb, magnitudes(x), magnitudes(w), magnitudes(dy));
  const Descs ds = descs_of(pb, dtype_of<T>());
  const auto xt = cast<T>(x), wt = cast<T>(w), dyt = cast<T>(dy);
  for (size_t budget : {size_t(32) << 20, size_t(1)}) {
    std::vector<T> first_y, first_dx, first_dw;
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(::testing::Message() << "threads " << threads << " budget " << budget);
      Handle h;
      h.set_cpu_threads(threads);
      h.set_workspace_budget(budget);
      auto y = test::poisoned<T>(sh.y);
      conv_fwd(h, ds.cd, ConvAlgo::kWinograd, ds.xd, xt.data(), ds.wd, wt.data(), ds.yd, y.data());
      auto dx = test::poisoned<T>(sh.x);
      conv_bwd_data(h, ds.cd, ConvAlgo::kWinograd, ds.wd, wt.data(), ds.yd, dyt.data(), ds.xd,
                    dx.data());
      auto dw = test::poisoned<T>(sh.w);
      conv_bwd_filter(h, ds.cd, ConvAlgo::kWinograd, ds.xd, xt.data(), ds.yd, dyt.data(), ds.wd,
                      dw.data());
      for (const auto& [got, want, m] :
           {std::tie(y, ref.y, mag.y), std::tie(dx, ref.dx, mag.dx), std::tie(dw, ref.dw, mag.dw)})
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_LE(std::fabs(double(got[i]) - want[i]), unit * m[i]) << i;
      if (first_y.empty()) {
        first_y = y, first_dx = dx, first_dw = dw;
      } else {
        EXPECT_EQ(y, first_y);
        EXPECT_EQ(dx, first_dx);
        EXPECT_EQ(dw, first_dw);
      }
    }
  }
}

TEST(ConvWinograd, WithinItsErrorBoundOnRealValues) {
  for (const ConvProblem& pb :
       {ConvProblem{"pad1", 3, 8, 11, 13, 6, 3, 3, 1, 1, 1, 1},
        ConvProblem{"pad0_groups", 2, 8, 10, 9, 4, 3, 3, 0, 0, 1, 1, 1, 1, 2},
        ConvProblem{"pad2", 2, 5, 7, 6, 7, 3, 3, 2, 2, 1, 1},
        ConvProblem{"pad1x0", 2, 4, 9, 14, 5, 3, 3, 1, 0, 1, 1}}) {
    SCOPED_TRACE(pb.name);
    check_winograd_bound<float>(pb, 0x1p-14);
    check_winograd_bound<double>(pb, 0x1p-43);
  }
}

// Strided descriptors: channels-last tensors run on every algorithm that runs the problem (the
// direct loops read them as stored, the others through packed NCHW copies; Winograd, which
// rounds, is left to its own test); a channel slice of a wider output (as a concat layer makes)
// keeps the GEMM algorithms and leaves the other channels untouched.
TEST(ConvStrided, NhwcAndChannelSliceViews) {
  const ConvProblem pb{"strided", 2, 4, 7, 6, 5, 3, 3, 1, 1, 1, 1};
  const Shapes sh = shapes_of(pb);
  const Data d = make_data(pb, 99);
  const Reference ref = reference(pb, d.x, d.w, d.dy);
  Descs ds = descs_of(pb, DataType::kFloat32);
  Handle h;

  auto nhwc = [](const TensorDesc& t) { return TensorDesc::nhwc(t.dtype, t.n, t.c, t.h, t.w); };
  auto to_nhwc = [&](const std::vector<double>& v, const TensorDesc& t) {
    return test::laid_out<float>(v, nhwc(t));
  };
  const TensorDesc xn = nhwc(ds.xd), yn = nhwc(ds.yd);
  EXPECT_TRUE(xn.is_packed_nhwc() && !xn.is_packed_nchw());
  const auto x = to_nhwc(d.x, ds.xd), w = cast<float>(d.w), dy = to_nhwc(d.dy, ds.yd);
  const std::vector<float> want_y = to_nhwc(ref.y, ds.yd), want_dx = to_nhwc(ref.dx, ds.xd);
  std::vector<ConvAlgo> algos{ConvAlgo::kAuto};
  for (ConvAlgo a : conv_algos(Device::kCPU))
    if (a != ConvAlgo::kWinograd) algos.push_back(a);
  for (ConvAlgo algo : algos) {
    if (!conv_supports(h, algo, ds.cd, ds.xd, ds.wd, ds.yd)) continue;  // gemm_1x1: 3x3 filter
    SCOPED_TRACE(conv_algo_name(algo));
    ASSERT_TRUE(conv_supports(h, algo, ds.cd, xn, ds.wd, yn));
    auto y = test::poisoned<float>(sh.y);
    conv_fwd(h, ds.cd, algo, xn, x.data(), ds.wd, w.data(), yn, y.data());
    EXPECT_TRUE(all_close(y, want_y, kExact)) << "forward";
    auto dx = test::poisoned<float>(sh.x);
    conv_bwd_data(h, ds.cd, algo, ds.wd, w.data(), yn, dy.data(), xn, dx.data());
    EXPECT_TRUE(all_close(dx, want_dx, kExact)) << "backward data";
    auto dw = test::poisoned<float>(size_t(ds.wd.count()));
    conv_bwd_filter(h, ds.cd, algo, xn, x.data(), yn, dy.data(), ds.wd, dw.data());
    EXPECT_TRUE(all_close(dw, ref.dw, kExact)) << "backward filter";
  }

  // Output channels [k, 2k) of a 2k-channel tensor.
  TensorDesc slice = ds.yd;
  slice.stride_n *= 2;
  const int64_t plane = int64_t(pb.k) * sh.p * sh.q;
  const auto xc = cast<float>(d.x);
  for (ConvAlgo algo : {ConvAlgo::kIm2colGemm, ConvAlgo::kDirect}) {
    std::vector<float> wide(2 * sh.y, 7.0f);
    conv_fwd(h, ds.cd, algo, ds.xd, xc.data(), ds.wd, w.data(), slice, wide.data() + plane);
    std::vector<float> got, untouched;
    for (int n = 0; n < pb.n; ++n) {
      auto base = wide.begin() + 2 * n * plane;
      untouched.insert(untouched.end(), base, base + plane);
      got.insert(got.end(), base + plane, base + 2 * plane);
    }
    EXPECT_TRUE(all_close(got, ref.y, kExact)) << conv_algo_name(algo);
    EXPECT_TRUE(all_close(untouched, std::vector<float>(untouched.size(), 7.0f), kExact));
  }
}

TEST(ConvFind, CachesOneEntryPerPassAndShapeAndReusesIt) {
  const ConvProblem pb{"find", 2, 4, 9, 9, 6, 3, 3, 1, 1, 1, 1};
  const Shapes sh = shapes_of(pb);
  const Data d = make_data(pb, 5);
  const Reference ref = reference(pb, d.x, d.w, d.dy);
  const Descs ds = descs_of(pb, DataType::kFloat32);
  const auto x = cast<float>(d.x), w = cast<float>(d.w), dy = cast<float>(d.dy);
  Handle h;
  const WinogradTolerances found = winograd_tolerances(pb, false);  // kFind may pick it
  auto y = test::poisoned<float>(sh.y);
  conv_fwd(h, ds.cd, ConvAlgo::kFind, ds.xd, x.data(), ds.wd, w.data(), ds.yd, y.data());
  EXPECT_TRUE(all_close(y, ref.y, found.y));
  ASSERT_EQ(h.algo_cache().size(), 1u);
  const ConvAlgo chosen = ConvAlgo(h.algo_cache().begin()->second);
  EXPECT_TRUE(chosen == ConvAlgo::kIm2colGemm || chosen == ConvAlgo::kDirect ||
              chosen == ConvAlgo::kWinograd)
      << conv_algo_name(chosen);

  // Plant another supported algorithm: a second find must use it rather than time again.
  const ConvAlgo planted = chosen == ConvAlgo::kDirect ? ConvAlgo::kIm2colGemm : ConvAlgo::kDirect;
  h.algo_cache().begin()->second = int(planted);
  y = test::poisoned<float>(sh.y);
  conv_fwd(h, ds.cd, ConvAlgo::kFind, ds.xd, x.data(), ds.wd, w.data(), ds.yd, y.data());
  EXPECT_TRUE(all_close(y, ref.y, kExact));
  ASSERT_EQ(h.algo_cache().size(), 1u);
  EXPECT_EQ(ConvAlgo(h.algo_cache().begin()->second), planted);

  // An entry naming an algorithm that cannot run this shape is re-timed, not trusted.
  h.algo_cache().begin()->second = int(ConvAlgo::kGemm1x1);
  conv_fwd(h, ds.cd, ConvAlgo::kFind, ds.xd, x.data(), ds.wd, w.data(), ds.yd, y.data());
  EXPECT_NE(ConvAlgo(h.algo_cache().begin()->second), ConvAlgo::kGemm1x1);

  // The backward passes and another shape get their own entries; blending is still honoured.
  auto dw = cast<float>(d.dw0);
  conv_bwd_filter(h, ds.cd, ConvAlgo::kFind, ds.xd, x.data(), ds.yd, dy.data(), ds.wd, dw.data(),
                  {1.0, 1.0});
  EXPECT_TRUE(all_close(dw, blend(1.0, ref.dw, 1.0, d.dw0), found.dw));
  auto dx = test::poisoned<float>(sh.x);
  conv_bwd_data(h, ds.cd, ConvAlgo::kFind, ds.wd, w.data(), ds.yd, dy.data(), ds.xd, dx.data());
  EXPECT_TRUE(all_close(dx, ref.dx, found.dx));
  EXPECT_EQ(h.algo_cache().size(), 3u);
  TensorDesc x1 = ds.xd, y1 = ds.yd;
  x1.n = y1.n = 1;
  conv_fwd(h, ds.cd, ConvAlgo::kFind, x1, x.data(), ds.wd, w.data(), y1, y.data());
  EXPECT_EQ(h.algo_cache().size(), 4u);
}

// Autotuning: kAuto times the rows as kFind does and caches the winner; the cache survives a
// save and a load on the same device, and a file from another device or with unreadable lines
// gives nothing (or only its readable lines).
TEST(ConvAutotune, KAutoTimesOnceAndTheChoicesSurviveAFile) {
  const ConvProblem pb{"autotune", 2, 4, 9, 9, 6, 3, 3, 1, 1, 1, 1};
  const Shapes sh = shapes_of(pb);
  const Data d = make_data(pb, 6);
  const Reference ref = reference(pb, d.x, d.w, d.dy);
  const Descs ds = descs_of(pb, DataType::kFloat32);
  const auto x = cast<float>(d.x), w = cast<float>(d.w);
  Handle h;
  h.set_conv_autotune(true);
  EXPECT_GT(conv_workspace_size(h, ConvAlgo::kAuto, ds.cd, ds.xd, ds.wd, ds.yd),
            0u);  // every row it may try: im2col's patch matrix
  auto y = test::poisoned<float>(sh.y);
  conv_fwd(h, ds.cd, ConvAlgo::kAuto, ds.xd, x.data(), ds.wd, w.data(), ds.yd, y.data());
  EXPECT_TRUE(all_close(y, ref.y, winograd_tolerances(pb, false).y));  // it may be timed fastest
  ASSERT_EQ(h.algo_cache().size(), 1u);
  EXPECT_EQ(h.algo_cache().begin()->first.rfind("conv_fwd ", 0), 0u);

  const std::string path = ::testing::TempDir() + "/conv_autotune/algos";
  conv_algos_save(h, path);
  Handle again;
  EXPECT_EQ(conv_algos_load(again, path), 1u);
  EXPECT_EQ(again.algo_cache(), h.algo_cache());

  const std::string key = h.algo_cache().begin()->first;
  const auto write = [&](const std::string& text) {
    std::ofstream(path, std::ios::trunc) << text;
    Handle fresh;
    return conv_algos_load(fresh, path);
  };
  EXPECT_EQ(write("crema conv algorithms 1 | cuda NVIDIA H200 9.0\n" + key + "\tdirect\n"), 0u);
  EXPECT_EQ(write("crema conv algorithms 1 | cpu\nno tab here\n" + key + "\tno_such_algo\n\t" +
                  "direct\n" + key + "\tdirect\n"),
            1u);
  EXPECT_EQ(write(""), 0u);
  Handle none;
  EXPECT_EQ(conv_algos_load(none, ::testing::TempDir() + "/conv_autotune/missing"), 0u);
  EXPECT_THROW(conv_algos_save(h, "/proc/crema_no_such_dir/algos"), PrimError);
}

// docs/primitives.md lists each device's rows in the table's order: the reference cannot drift
// from the table.
TEST(ConvTable, DocsListEveryRowInOrder) {
  test::expect_documented("Convolution algorithms", conv_algos, conv_algo_name);
  EXPECT_EQ(conv_algos(Device::kCPU).size(), 4u);
}

// A plane of 2^31 elements or more is no GEMM's row or column (OpenBLAS and cuBLAS take 32-bit
// sizes): the GEMM rows refuse it and kAuto takes the direct loops, on the CPU here and on CUDA
// in ConvCuda.HugePlanesGoToTheDirectRow. Descriptors only: nothing is allocated.
TEST(ConvTable, HugePlanesGoToTheDirectRow) {
  Handle cpu(Device::kCPU);
  for (const int r : {1, 3}) {
    const test::Descs ds =
        test::descs_of({"huge_plane", 1, 1, 46341, 46341, 2, r, r, 0, 0, 1, 1}, DataType::kFloat32);
    for (const ConvAlgo a : {ConvAlgo::kGemm1x1, ConvAlgo::kIm2colGemm, ConvAlgo::kWinograd})
      EXPECT_FALSE(conv_supports(cpu, a, ds.cd, ds.xd, ds.wd, ds.yd)) << conv_algo_name(a);
    for (const ConvPass pass : {ConvPass::kFwd, ConvPass::kBwdData, ConvPass::kBwdFilter})
      EXPECT_EQ(conv_heuristic(cpu, ds.cd, ds.xd, ds.wd, ds.yd, pass), ConvAlgo::kDirect) << r;
  }
}

TEST(ConvCheck, RejectsInconsistentDescriptorsWithPrimError) {
  const DataType f = DataType::kFloat32;
  const ConvDesc cd{1, 1, 1, 1, 1, 1, 1};
  const TensorDesc x = TensorDesc::nchw(f, 2, 4, 8, 8);
  const FilterDesc w{f, 6, 4, 3, 3};
  const TensorDesc y = TensorDesc::nchw(f, 2, 6, 8, 8);
  EXPECT_NO_THROW(conv_check(cd, x, w, y));
  EXPECT_THROW(conv_check(cd, TensorDesc::nchw(f, 2, 3, 8, 8), w, y), PrimError);  // channels
  ConvDesc g4 = cd;
  g4.groups = 4;
  EXPECT_THROW(conv_check(g4, x, FilterDesc{f, 6, 1, 3, 3}, y), PrimError);  // 4 does not divide 6
  EXPECT_THROW(conv_check(cd, x, w, TensorDesc::nchw(f, 2, 6, 7, 8)), PrimError);  // size
  EXPECT_THROW(conv_check(cd, x, w, TensorDesc::nchw(f, 1, 6, 8, 8)), PrimError);  // batch
  EXPECT_THROW(conv_check(cd, x, FilterDesc{f, 6, 4, 11, 3}, y), PrimError);       // kernel > input
  EXPECT_THROW(conv_check(cd, x, FilterDesc{DataType::kFloat64, 6, 4, 3, 3}, y), PrimError);
  try {
    conv_check(cd, TensorDesc::nchw(f, 2, 3, 8, 8), w, y);
  } catch (const PrimError& e) {
    EXPECT_NE(std::string(e.what()).find("channels"), std::string::npos) << e.what();
  }

  EXPECT_EQ(conv_out_dim(227, 11, 0, 4, 1), 55);
  EXPECT_EQ(conv_out_dim(27, 5, 2, 1, 1), 27);
  EXPECT_EQ(conv_out_dim(20, 3, 12, 1, 12), 20);
  EXPECT_EQ(conv_out_dim(28, 5, 0, 1, 1), 24);
  EXPECT_THROW(conv_out_dim(4, 3, 0, 1, 2), PrimError);  // dilated extent 5 > 4
  EXPECT_THROW(conv_out_dim(4, 3, 0, 0, 1), PrimError);

  Handle h;
  h.set_cpu_threads(1);  // the sizes below are those of one thread
  std::vector<float> buf(4096);
  EXPECT_FALSE(conv_supports(h, ConvAlgo::kGemm1x1, cd, x, w, y));
  EXPECT_THROW(conv_fwd(h, cd, ConvAlgo::kGemm1x1, x, buf.data(), w, buf.data(), y, buf.data()),
               PrimError);
  // The patch matrix (C*R*S rows) and the output-side matrix (K rows) of both images side by
  // side: the batch fits one chunk of one thread.
  EXPECT_EQ(conv_workspace_size(h, ConvAlgo::kIm2colGemm, cd, x, w, y),
            size_t((4 * 3 * 3 + 6) * 8 * 8 * 2 * sizeof(float)));
  EXPECT_EQ(conv_workspace_size(h, ConvAlgo::kDirect, cd, x, w, y), 0u);
  const FilterDesc w1{f, 6, 4, 1, 1};
  const ConvDesc cd0{};
  EXPECT_EQ(conv_heuristic(h, cd0, x, w1, y), ConvAlgo::kGemm1x1);
  EXPECT_EQ(conv_workspace_size(h, ConvAlgo::kAuto, cd0, x, w1, y), 0u);
  // Two threads each take one image and keep a partial filter gradient.
  h.set_cpu_threads(2);
  EXPECT_EQ(conv_workspace_size(h, ConvAlgo::kIm2colGemm, cd, x, w, y),
            size_t(2 * ((4 * 3 * 3 + 6) * 8 * 8 + 6 * 4 * 3 * 3) * sizeof(float)));
  EXPECT_EQ(conv_workspace_size(h, ConvAlgo::kAuto, cd0, x, w1, y),
            size_t(2 * 6 * 4 * sizeof(float)));
  EXPECT_EQ(conv_heuristic(h, cd, x, w, y), ConvAlgo::kIm2colGemm);
}

}  // namespace
}  // namespace crema::prim
