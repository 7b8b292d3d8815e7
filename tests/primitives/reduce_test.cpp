// reduce_fwd / reduce_bwd on the CPU against naive double references, for every operation, on
// random shapes with random sets of reduced axes, packed and strided, with blending.
#include "primitives/reduce.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "primitives/common/dtype_visit.h"
#include "test_util.h"

namespace crema::prim {
namespace {

const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAsum, ReduceOp::kSumSq, ReduceOp::kMean};

const char* op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kAsum:
      return "asum";
    case ReduceOp::kSumSq:
      return "sumsq";
    default:
      return "mean";
  }
}

// Multi-index iteration: calls f(index vector) for every index of sizes, row-major.
template <typename F>
void for_each_index(const std::vector<int64_t>& sizes, F&& f) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<int64_t> idx(sizes.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    f(idx);
    for (int i = int(sizes.size()) - 1; i >= 0; --i) {
      if (++idx[size_t(i)] < sizes[size_t(i)]) break;
      idx[size_t(i)] = 0;
    }
  }
}

// Packed offset of idx in sizes, with reduced axes (keep[i] false) read as 0.
int64_t packed_offset(const std::vector<int64_t>& idx, const std::vector<int64_t>& sizes,
                      const std::vector<bool>& keep) {
  int64_t off = 0;
  for (size_t i = 0; i < sizes.size(); ++i)
    off = off * (keep[i] ? sizes[i] : 1) + (keep[i] ? idx[i] : 0);
  return off;
}

CREMA_FLOAT_TYPED_TEST_SUITE(ReduceTest);

TYPED_TEST(ReduceTest, ForwardAndBackwardMatchReference) {
  using T = TypeParam;
  const DataType t = dtype_of<T>();
  const Tolerance tol = sizeof(T) == 8 ? Tolerance{1e-12, 1e-12} : Tolerance{1e-5, 1e-5};
  Handle h;
  std::mt19937_64 gen(7);
  for (int trial = 0; trial < 24; ++trial) {
    const int rank = 1 + trial % 4;
    std::vector<int64_t> sizes;
    std::vector<bool> keep;
    for (int i = 0; i < rank; ++i) {
      sizes.push_back(1 + int64_t(gen() % 5));
      keep.push_back(gen() % 2 == 0);
    }
    if (trial % 6 == 0) keep.assign(size_t(rank), false);  // everything to one value
    std::vector<int64_t> ysizes;
    for (int i = 0; i < rank; ++i) ysizes.push_back(keep[size_t(i)] ? sizes[size_t(i)] : 1);
    const ViewDesc xd = ViewDesc::packed(t, sizes), yd = ViewDesc::packed(t, ysizes);
    const int64_t n = xd.count(), m = yd.count(), per = n / m;
    const auto x = random_vector<T>(size_t(n), 100 + trial, -2, 2);
    for (ReduceOp op : kOps) {
      for (Blend b : {Blend{1, 0}, Blend{0.5, -2}}) {
        SCOPED_TRACE(std::string(op_name(op)) + " trial " + std::to_string(trial) + " beta " +
                     std::to_string(b.beta));
        // Forward.
        auto y = b.beta == 0 ? poisoned<T>(size_t(m)) : random_vector<T>(size_t(m), 5);
        std::vector<double> acc(size_t(m), 0.0);
        for_each_index(sizes, [&](const std::vector<int64_t>& idx) {
          const double v =
              double(x[size_t(packed_offset(idx, sizes, std::vector<bool>(size_t(rank), true)))]);
          double term = v;
          if (op == ReduceOp::kAsum) term = std::fabs(v);
          if (op == ReduceOp::kSumSq) term = v * v;
          acc[size_t(packed_offset(idx, sizes, keep))] += term;
        });
        std::vector<double> ref(static_cast<size_t>(m));
        for (int64_t j = 0; j < m; ++j) {
          const double r = op == ReduceOp::kMean ? acc[size_t(j)] / double(per) : acc[size_t(j)];
          ref[size_t(j)] = b.alpha * r + (b.beta == 0 ? 0.0 : b.beta * double(y[size_t(j)]));
        }
        reduce_fwd(h, ReduceDesc{op}, xd, x.data(), yd, y.data(), b);
        EXPECT_TRUE(all_close(y, ref, Tolerance{tol.abs, tol.rel, true}));
        // Backward.
        const auto dy = random_vector<T>(size_t(m), 200 + trial, -1, 1);
        auto dx = b.beta == 0 ? poisoned<T>(size_t(n)) : random_vector<T>(size_t(n), 6);
        std::vector<double> dref(static_cast<size_t>(n));
        for_each_index(sizes, [&](const std::vector<int64_t>& idx) {
          const size_t i = size_t(packed_offset(idx, sizes, std::vector<bool>(size_t(rank), true)));
          const double g = double(dy[size_t(packed_offset(idx, sizes, keep))]);
          const double v = double(x[i]);
          double d = g;
          if (op == ReduceOp::kAsum) d = g * (v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0));
          if (op == ReduceOp::kSumSq) d = g * 2 * v;
          if (op == ReduceOp::kMean) d = g / double(per);
          dref[i] = b.alpha * d + (b.beta == 0 ? 0.0 : b.beta * double(dx[i]));
        });
        reduce_bwd(h, ReduceDesc{op}, xd, x.data(), yd, dy.data(), xd, dx.data(), b);
        EXPECT_TRUE(all_close(dx, dref, Tolerance{tol.abs, tol.rel, true}));
      }
    }
  }
}

TYPED_TEST(ReduceTest, TileBackwardSumsStridedTiles) {
  using T = TypeParam;
  const DataType t = dtype_of<T>();
  Handle h;
  // dy is (outer 2, tiles 3, inner 4); dx[o, i] = sum_t dy[o, t, i], all integers: exact.
  const auto dy = test::random_int_vector<T>(24, 9);
  auto dx = poisoned<T>(8);
  reduce_fwd(h, ReduceDesc{ReduceOp::kSum}, ViewDesc::packed(t, {2, 3, 4}), dy.data(),
             ViewDesc::packed(t, {2, 1, 4}), dx.data());
  std::vector<double> ref(8, 0.0);
  for (int o = 0; o < 2; ++o)
    for (int k = 0; k < 3; ++k)
      for (int i = 0; i < 4; ++i) ref[size_t(o * 4 + i)] += double(dy[size_t((o * 3 + k) * 4 + i)]);
  EXPECT_TRUE(all_close(dx, ref, Tolerance{0, 0, true}));
}

TEST(Reduce, BadShapesAreErrors) {
  Handle h;
  float x[6] = {}, y[6] = {};
  const DataType t = DataType::kFloat32;
  try {
    reduce_fwd(h, ReduceDesc{}, ViewDesc::packed(t, {2, 3}), x, ViewDesc::packed(t, {2, 2}), y);
    FAIL() << "no error";
  } catch (const PrimError& e) {
    EXPECT_STREQ(e.what(),
                 "reduce_fwd: y 2x2 is not a reduction of x 2x3 (each axis must keep x's size or "
                 "be 1)");
  }
  EXPECT_THROW(reduce_fwd(h, ReduceDesc{}, ViewDesc::packed(t, {6}), x, ViewDesc::packed(t, {}), y),
               PrimError);
}

}  // namespace
}  // namespace crema::prim
