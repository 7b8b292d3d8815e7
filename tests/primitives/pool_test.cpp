// Pooling primitives against a naive double-precision reference written from Caffe's rules:
// max and average (counting pad cells, and excluding them), CEIL and FLOOR shapes, padding,
// global pooling, blending; plus the output-size rule on Caffe's known layer shapes.
#include "primitives/pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "doc_tables.h"
#include "prim_test_util.h"
#include "primitives/handle.h"
#include "problems.h"
#include "test_util.h"

namespace crema::prim {
namespace {

using test::PoolProblem;

struct PoolCase {
  std::string name;
  PoolMode mode;
  int n, c, h, w;
  int kh, kw, ph, pw, sh, sw;
  bool ceil_mode;
  int p = 0, q = 0;  // output size, filled in by finish()
};

// Output size written out independently of the library: Caffe's rounding and clip rule.
int ref_out_dim(int in, int k, int pad, int stride, bool ceil_mode) {
  const double span = double(in + 2 * pad - k) / stride;
  int out = int(ceil_mode ? std::ceil(span) : std::floor(span)) + 1;
  if (pad > 0 && (out - 1) * stride >= in + pad) --out;
  return out;
}

PoolCase finish(PoolCase pc) {
  pc.p = ref_out_dim(pc.h, pc.kh, pc.ph, pc.sh, pc.ceil_mode);
  pc.q = ref_out_dim(pc.w, pc.kw, pc.pw, pc.sw, pc.ceil_mode);
  return pc;
}

struct Reference {
  std::vector<double> y, dx;
  // Inputs inside some window and outputs whose window holds an input; the others are zero by
  // construction, which the vacuous-comparison guard must not mistake for unwritten outputs.
  int64_t covered = 0, y_reached = 0;
};

// The oracle: for each output, walk its window over the padded input; max takes the first
// strictly larger value in row-major order and routes dy there.
Reference reference(const PoolCase& pc, const std::vector<double>& x,
                    const std::vector<double>& dy) {
  Reference ref;
  ref.y.assign(int64_t(pc.n) * pc.c * pc.p * pc.q, 0.0);
  ref.dx.assign(x.size(), 0.0);
  std::vector<char> touched(x.size(), 0);
  for (int n = 0; n < pc.n; ++n)
    for (int c = 0; c < pc.c; ++c)
      for (int p = 0; p < pc.p; ++p)
        for (int q = 0; q < pc.q; ++q) {
          const int64_t yi = ((int64_t(n) * pc.c + c) * pc.p + p) * pc.q + q;
          double best = -std::numeric_limits<double>::infinity(), sum = 0;
          int64_t arg = -1;
          int padded_cells = 0, input_cells = 0;
          for (int i = 0; i < pc.kh; ++i)
            for (int j = 0; j < pc.kw; ++j) {
              const int hh = p * pc.sh - pc.ph + i, ww = q * pc.sw - pc.pw + j;
              if (hh >= pc.h + pc.ph || ww >= pc.w + pc.pw) continue;  // past the padded edge
              ++padded_cells;
              if (hh < 0 || ww < 0 || hh >= pc.h || ww >= pc.w) continue;  // a pad cell
              ++input_cells;
              const int64_t xi = ((int64_t(n) * pc.c + c) * pc.h + hh) * pc.w + ww;
              touched[xi] = 1;
              sum += x[xi];
              if (x[xi] > best) {
                best = x[xi];
                arg = xi;
              }
            }
          if (input_cells == 0) continue;  // a window past the input pools to 0
          ++ref.y_reached;
          if (pc.mode == PoolMode::kMax) {
            ref.y[yi] = best;
            ref.dx[arg] += dy[yi];
            continue;
          }
          const int div = pc.mode == PoolMode::kAverage ? padded_cells : input_cells;
          ref.y[yi] = sum / div;
          for (int i = 0; i < pc.kh; ++i)
            for (int j = 0; j < pc.kw; ++j) {
              const int hh = p * pc.sh - pc.ph + i, ww = q * pc.sw - pc.pw + j;
              if (hh < 0 || ww < 0 || hh >= pc.h || ww >= pc.w) continue;
              ref.dx[((int64_t(n) * pc.c + c) * pc.h + hh) * pc.w + ww] += dy[yi] / div;
            }
        }
  ref.covered = std::count(touched.begin(), touched.end(), 1);
  return ref;
}

template <typename T>
std::vector<T> cast(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

std::vector<double> blend(double alpha, const std::vector<double>& a, double beta,
                          const std::vector<double>& b) {
  std::vector<double> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = alpha * a[i] + beta * b[i];
  return out;
}

template <typename T>
void check_case(const PoolCase& pc, uint64_t seed) {
  const DataType t = sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32;
  const TensorDesc xd = TensorDesc::nchw(t, pc.n, pc.c, pc.h, pc.w);
  const TensorDesc yd = TensorDesc::nchw(t, pc.n, pc.c, pc.p, pc.q);
  const PoolDesc base{pc.mode, pc.kh, pc.kw, pc.ph, pc.pw, pc.sh, pc.sw};
  // Small integers make ties common, which exercises the first-maximum rule.
  const auto xr = test::random_int_vector<double>(xd.count(), seed + 1, -4, 4);
  const auto dyr = test::random_int_vector<double>(yd.count(), seed + 2, -4, 4);
  const auto y0 = test::random_int_vector<double>(yd.count(), seed + 3, -4, 4);
  const auto dx0 = test::random_int_vector<double>(xd.count(), seed + 4, -4, 4);
  const Reference ref = reference(pc, xr, dyr);
  const bool is_max = pc.mode == PoolMode::kMax;
  // Max is exact; average divides once, rounding in T.
  const Tolerance tol{is_max ? 0.0 : 1e-6, is_max ? 0.0 : 1e-6, ref.y_reached * 4 < yd.count() * 3};
  // Max routes each gradient to one input, and inputs between windows get none, so much of dx
  // can legitimately be zero.
  const Tolerance dx_tol{tol.abs, tol.rel, is_max || ref.covered * 4 < xd.count() * 3};
  const auto x = cast<T>(xr), dy = cast<T>(dyr);
  Handle h;
  // kAuto, then every row of the table; each call runs where the row supports it.
  for (PoolAlgo a : auto_then(pool_algos(Device::kCPU))) {
    SCOPED_TRACE(pool_algo_name(a));
    PoolDesc pd = base;
    pd.algo = a;
    auto fwd = [&](std::vector<T>& y, Blend b) {
      if (pool_fwd_unsupported(h, pd, xd, x.data(), yd, y.data(), b)) return false;
      pool_fwd(h, pd, xd, x.data(), yd, y.data(), b);
      return true;
    };
    // The backward reads the plain forward result.
    std::vector<T> y = cast<T>(ref.y);
    auto bwd = [&](std::vector<T>& dx, Blend b) {
      if (pool_bwd_unsupported(h, pd, yd, y.data(), dy.data(), xd, x.data(), dx.data(), b))
        return false;
      pool_bwd(h, pd, yd, y.data(), dy.data(), xd, x.data(), dx.data(), b);
      return true;
    };
    auto yp = test::poisoned<T>(yd.count());
    if (fwd(yp, {})) {
      EXPECT_TRUE(all_close(yp, ref.y, tol)) << "forward";
    }
    auto dx = test::poisoned<T>(xd.count());
    if (bwd(dx, {})) {
      EXPECT_TRUE(all_close(dx, ref.dx, dx_tol)) << "backward";
    }
    auto yb = cast<T>(y0);
    if (fwd(yb, {2.0, 1.0})) {
      EXPECT_TRUE(all_close(yb, blend(2.0, ref.y, 1.0, y0), tol)) << "forward blend";
    }
    dx = cast<T>(dx0);
    if (bwd(dx, {-1.0, 2.0})) {
      EXPECT_TRUE(all_close(dx, blend(-1.0, ref.dx, 2.0, dx0), tol)) << "backward blend";
    }
  }
}

void check_all(const PoolCase& pc) {
  SCOPED_TRACE(pc.name);
  check_case<float>(pc, 17);
  check_case<double>(pc, 17);
}

std::vector<PoolCase> expand(const std::string& name, int n, int c, int h, int w, int kh, int kw,
                             int ph, int pw, int sh, int sw, std::vector<PoolMode> modes) {
  std::vector<PoolCase> out;
  for (PoolMode m : modes)
    for (bool ceil_mode : {true, false}) {
      PoolCase pc = finish({name, m, n, c, h, w, kh, kw, ph, pw, sh, sw, ceil_mode});
      if (!ceil_mode) {
        // Skip FLOOR where it gives the same shape as CEIL: it would be the same computation.
        if (PoolCase other = finish({name, m, n, c, h, w, kh, kw, ph, pw, sh, sw, true});
            other.p == pc.p && other.q == pc.q)
          continue;
      }
      const char* mode_name = m == PoolMode::kMax       ? "max"
                              : m == PoolMode::kAverage ? "avg"
                                                        : "avg_excl";
      pc.name = name + "_" + mode_name + (ceil_mode ? "_ceil" : "_floor");
      out.push_back(pc);
    }
  return out;
}

const std::vector<PoolMode> kAllModes = {PoolMode::kMax, PoolMode::kAverage,
                                         PoolMode::kAverageExcludePad};

std::vector<PoolCase> unit_cases() {
  std::vector<PoolCase> all;
  for (const PoolProblem& pb : test::unit_pool_problems()) {
    std::vector<PoolCase> v = expand(pb.name, pb.n, pb.c, pb.h, pb.w, pb.kernel_h, pb.kernel_w,
                                     pb.pad_h, pb.pad_w, pb.stride_h, pb.stride_w, kAllModes);
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

std::vector<PoolCase> random_cases(int count, uint64_t seed) {
  std::mt19937_64 gen(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
  std::vector<PoolCase> out;
  while (int(out.size()) < count) {
    const int kh = pick(1, 4), kw = pick(1, 4);
    const int ph = pick(0, kh - 1), pw = pick(0, kw - 1);
    const int h = pick(1, 13), w = pick(1, 13);
    if (kh > h + 2 * ph || kw > w + 2 * pw) continue;
    const PoolMode m = kAllModes[pick(0, 2)];
    PoolCase pc = finish({"random_" + std::to_string(out.size()), m, pick(1, 3), pick(1, 4), h, w,
                          kh, kw, ph, pw, pick(1, 3), pick(1, 3), pick(0, 1) == 0});
    out.push_back(pc);
  }
  return out;
}

std::vector<PoolCase> named_cases() {
  std::vector<PoolCase> all;
  for (const PoolProblem& pb : test::named_pool_problems()) {
    const PoolMode m = pb.kind == test::PoolKind::kMax ? PoolMode::kMax : PoolMode::kAverage;
    std::vector<PoolCase> v = expand(pb.name, pb.n, pb.c, pb.h, pb.w, pb.kernel_h, pb.kernel_w,
                                     pb.pad_h, pb.pad_w, pb.stride_h, pb.stride_w, {m});
    all.push_back(v.front());  // the CEIL shape, as in the network
  }
  return all;
}

std::string param_name(const ::testing::TestParamInfo<PoolCase>& info) {
  std::string s = info.param.name;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

class PoolCaseTest : public ::testing::TestWithParam<PoolCase> {};

TEST_P(PoolCaseTest, MatchesReference) { check_all(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Unit, PoolCaseTest, ::testing::ValuesIn(unit_cases()), param_name);
INSTANTIATE_TEST_SUITE_P(Random, PoolCaseTest, ::testing::ValuesIn(random_cases(40, 3)),
                         param_name);
INSTANTIATE_TEST_SUITE_P(Named, PoolCaseTest, ::testing::ValuesIn(named_cases()), param_name);

TEST(PoolOutDim, CaffeLayerShapes) {
  EXPECT_EQ(pool_out_dim(55, 3, 0, 2, true), 27);   // caffenet pool1
  EXPECT_EQ(pool_out_dim(27, 3, 0, 2, true), 13);   // caffenet pool2
  EXPECT_EQ(pool_out_dim(13, 3, 0, 2, true), 6);    // caffenet pool5
  EXPECT_EQ(pool_out_dim(24, 2, 0, 2, true), 12);   // lenet pool1
  EXPECT_EQ(pool_out_dim(32, 3, 0, 2, true), 16);   // cifar10_quick pool1: CEIL rounds up
  EXPECT_EQ(pool_out_dim(32, 3, 0, 2, false), 15);  // the same with FLOOR
  EXPECT_EQ(pool_out_dim(112, 3, 0, 2, true), 56);  // googlenet pool1
  EXPECT_EQ(pool_out_dim(28, 3, 1, 1, true), 28);   // googlenet inception pool
  EXPECT_EQ(pool_out_dim(7, 7, 0, 1, true), 1);     // global
  // Clip rule: CEIL gives 4 windows, but the 4th would start at 6 = input 5 + pad 1.
  EXPECT_EQ(pool_out_dim(5, 2, 1, 2, true), 3);
  EXPECT_EQ(pool_out_dim(6, 3, 2, 3, true), 3);
}

TEST(PoolOutDim, RejectsBadGeometry) {
  EXPECT_THROW(pool_out_dim(3, 5, 0, 1, true), PrimError);  // kernel larger than the input
  EXPECT_THROW(pool_out_dim(2, 5, 1, 1, true), PrimError);  // ... than the padded input
  EXPECT_THROW(pool_out_dim(8, 2, 2, 1, true), PrimError);  // pad >= kernel
  EXPECT_THROW(pool_out_dim(8, 2, 0, 0, true), PrimError);  // stride 0
  EXPECT_NO_THROW(pool_out_dim(1, 3, 1, 1, true));          // 3 == 1 + 2 * 1 fits
}

TEST(PoolCheck, RejectsMismatchedDescriptors) {
  Handle h;
  std::vector<float> buf(1024);
  const DataType f = DataType::kFloat32;
  const TensorDesc xd = TensorDesc::nchw(f, 2, 3, 8, 8);
  const PoolDesc pd{PoolMode::kMax, 2, 2, 0, 0, 2, 2};
  EXPECT_THROW(pool_fwd(h, pd, xd, buf.data(), TensorDesc::nchw(f, 2, 3, 5, 4), buf.data()),
               PrimError);
  EXPECT_THROW(pool_fwd(h, pd, xd, buf.data(), TensorDesc::nchw(f, 2, 2, 4, 4), buf.data()),
               PrimError);
  EXPECT_THROW(
      pool_fwd(h, pd, xd, buf.data(), TensorDesc::nchw(DataType::kFloat64, 2, 3, 4, 4), buf.data()),
      PrimError);
  const PoolDesc big{PoolMode::kMax, 9, 9, 0, 0, 1, 1};
  EXPECT_THROW(pool_fwd(h, big, xd, buf.data(), TensorDesc::nchw(f, 2, 3, 1, 1), buf.data()),
               PrimError);
  // FLOOR and CEIL shapes are both accepted: 9 with 2x2 s2 gives 5 (ceil) or 4 (floor).
  const TensorDesc x9 = TensorDesc::nchw(f, 1, 1, 9, 9);
  EXPECT_NO_THROW(pool_fwd(h, pd, x9, buf.data(), TensorDesc::nchw(f, 1, 1, 5, 5), buf.data()));
  EXPECT_NO_THROW(pool_fwd(h, pd, x9, buf.data(), TensorDesc::nchw(f, 1, 1, 4, 4), buf.data()));
}

// A forced row runs only what it supports, and says why not: the CPU's disjoint row runs the max
// backward of non-overlapping windows alone; the CUDA rows are not CPU algorithms.
TEST(PoolAlgos, ForcedRowsExplainWhatTheyCannotRun) {
  Handle h;
  std::vector<float> x(64), y(16), dy(16), dx(64);
  const TensorDesc xd = TensorDesc::nchw(DataType::kFloat32, 1, 1, 8, 8);
  const TensorDesc yd = TensorDesc::nchw(DataType::kFloat32, 1, 1, 4, 4);
  PoolDesc pd{PoolMode::kMax, 2, 2, 0, 0, 2, 2, PoolAlgo::kDisjoint};
  EXPECT_EQ(pool_bwd_unsupported(h, pd, yd, y.data(), dy.data(), xd, x.data(), dx.data()), nullptr);
  EXPECT_STREQ(pool_fwd_unsupported(h, pd, xd, x.data(), yd, y.data()), "backward only");
  EXPECT_THROW(
      try { pool_fwd(h, pd, xd, x.data(), yd, y.data()); } catch (const PrimError& e) {
        EXPECT_STREQ(e.what(), "pool_fwd: algorithm disjoint on cpu: backward only");
        throw;
      },
      PrimError);
  pd.mode = PoolMode::kAverage;
  EXPECT_STREQ(pool_bwd_unsupported(h, pd, yd, y.data(), dy.data(), xd, x.data(), dx.data()),
               "not max pooling");
  pd.algo = PoolAlgo::kSweep;
  EXPECT_STREQ(pool_fwd_unsupported(h, pd, xd, x.data(), yd, y.data()), "not a cpu algorithm");
  EXPECT_THROW(pool_bwd(h, pd, yd, y.data(), dy.data(), xd, x.data(), dx.data()), PrimError);
  pd.algo = PoolAlgo::kAuto;
  EXPECT_EQ(pool_fwd_unsupported(h, pd, xd, x.data(), yd, y.data()), nullptr);
}

TEST(PoolAlgos, NamesRoundTrip) {
  for (Device d : {Device::kCPU, Device::kCUDA})
    for (PoolAlgo a : pool_algos(d)) EXPECT_EQ(pool_algo_of(pool_algo_name(a)), a);
  EXPECT_EQ(pool_algo_of("auto"), PoolAlgo::kAuto);
  EXPECT_THROW(pool_algo_of("fastest"), PrimError);
  const std::vector<PoolAlgo> cpu = pool_algos(Device::kCPU);
  EXPECT_EQ(cpu, (std::vector<PoolAlgo>{PoolAlgo::kDisjoint, PoolAlgo::kDirect}));
}

// docs/primitives.md lists each device's rows in the table's order.
TEST(PoolAlgos, DocsListEveryRowInOrder) {
  test::expect_documented("Pooling algorithms", pool_algos, pool_algo_name);
}

// A strided (NHWC) view pools the same values as the packed layout, forward and backward.
TEST(PoolStrided, NhwcMatchesReference) {
  const PoolCase pc = finish({"nhwc", PoolMode::kAverage, 2, 3, 7, 6, 3, 3, 1, 1, 2, 2, true});
  auto nhwc = [](int n, int c, int h, int w) {
    TensorDesc t = TensorDesc::nchw(DataType::kFloat64, n, c, h, w);
    t.stride_c = 1;
    t.stride_w = c;
    t.stride_h = int64_t(w) * c;
    t.stride_n = int64_t(h) * w * c;
    return t;
  };
  const TensorDesc xd = nhwc(pc.n, pc.c, pc.h, pc.w), yd = nhwc(pc.n, pc.c, pc.p, pc.q);
  auto to_nhwc = [](const std::vector<double>& v, const TensorDesc& t) {
    return test::laid_out(v, t);
  };
  const auto x = test::random_int_vector<double>(xd.count(), 3, -4, 4);
  const auto dy = test::random_int_vector<double>(yd.count(), 4, -4, 4);
  const Reference ref = reference(pc, x, dy);
  const PoolDesc pd{pc.mode, pc.kh, pc.kw, pc.ph, pc.pw, pc.sh, pc.sw};
  Handle h;
  const auto xn = to_nhwc(x, xd), dyn = to_nhwc(dy, yd);
  auto y = test::poisoned<double>(yd.count());
  pool_fwd(h, pd, xd, xn.data(), yd, y.data());
  EXPECT_TRUE(all_close(y, to_nhwc(ref.y, yd), {1e-12, 1e-12}));
  auto dx = test::poisoned<double>(xd.count());
  pool_bwd(h, pd, yd, y.data(), dyn.data(), xd, xn.data(), dx.data());
  EXPECT_TRUE(all_close(dx, to_nhwc(ref.dx, xd), {1e-12, 1e-12}));
}

}  // namespace
}  // namespace crema::prim
