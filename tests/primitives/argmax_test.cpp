// argmax_fwd on the CPU against a naive reference (repeated selection of the largest remaining
// value), for both output layouts, top_k 1 and > 1, and Caffe's tie order.
#include "primitives/argmax.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "primitives/common/dtype_visit.h"
#include "test_util.h"

namespace crema::prim {
namespace {

CREMA_FLOAT_TYPED_TEST_SUITE(ArgMaxTest);

// Ranks by repeatedly taking the largest unused value; an equal value at a larger index wins.
std::vector<int64_t> ranking(const std::vector<double>& v, int k) {
  std::vector<bool> used(v.size(), false);
  std::vector<int64_t> out;
  for (int j = 0; j < k; ++j) {
    int64_t best = -1;
    for (size_t c = 0; c < v.size(); ++c)
      if (!used[c] && (best < 0 || v[c] >= v[size_t(best)])) best = int64_t(c);
    used[size_t(best)] = true;
    out.push_back(best);
  }
  return out;
}

TYPED_TEST(ArgMaxTest, MatchesReference) {
  using T = TypeParam;
  Handle h;
  struct Shape {
    int64_t outer, channels, inner;
    int k;
  };
  for (Shape s : {Shape{3, 7, 1, 1}, Shape{2, 5, 4, 3}, Shape{1, 6, 3, 6}, Shape{4, 1, 2, 1}}) {
    for (bool interleaved : {false, true}) {
      SCOPED_TRACE(std::to_string(s.outer) + "x" + std::to_string(s.channels) + "x" +
                   std::to_string(s.inner) + " k " + std::to_string(s.k) + " interleaved " +
                   std::to_string(interleaved));
      // Small integers: plenty of ties.
      const auto x = test::random_int_vector<T>(size_t(s.outer * s.channels * s.inner), 3, -2, 2);
      ArgMaxDesc ad{dtype_of<T>(), s.outer, s.channels, s.inner, s.k, 0};
      const int64_t per = int64_t(s.k) * s.inner;
      std::vector<T> index, value;
      T *ip, *vp;
      if (interleaved) {
        ad.out_outer_stride = 2 * per;
        index = poisoned<T>(size_t(s.outer * 2 * per));
        ip = index.data();
        vp = index.data() + per;
      } else {
        index = poisoned<T>(size_t(s.outer * per));
        value = poisoned<T>(size_t(s.outer * per));
        ip = index.data();
        vp = value.data();
      }
      argmax_fwd(h, ad, x.data(), ip, vp);
      const int64_t stride = interleaved ? 2 * per : per;
      for (int64_t o = 0; o < s.outer; ++o) {
        for (int64_t i = 0; i < s.inner; ++i) {
          std::vector<double> col;
          for (int64_t c = 0; c < s.channels; ++c)
            col.push_back(double(x[size_t((o * s.channels + c) * s.inner + i)]));
          const auto r = ranking(col, s.k);
          for (int j = 0; j < s.k; ++j) {
            const int64_t at = o * stride + j * s.inner + i;
            EXPECT_EQ(double(ip[at]), double(r[size_t(j)]))
                << "o " << o << " i " << i << " j " << j;
            EXPECT_EQ(double(vp[at]), col[size_t(r[size_t(j)])]);
          }
        }
      }
    }
  }
}

TEST(ArgMax, TiesRankTheLargerIndexFirst) {
  Handle h;
  const float x[5] = {1, 3, 2, 3, 0};
  float index[3], value[3];
  argmax_fwd(h, ArgMaxDesc{DataType::kFloat32, 1, 5, 1, 3, 0}, x, index, value);
  EXPECT_EQ(index[0], 3);
  EXPECT_EQ(index[1], 1);
  EXPECT_EQ(index[2], 2);
  EXPECT_EQ(value[2], 2);
  argmax_fwd(h, ArgMaxDesc{DataType::kFloat32, 1, 5, 1, 1, 0}, x, index, nullptr);
  EXPECT_EQ(index[0], 3);
}

TEST(ArgMax, TopKLargerThanChannelsIsAnError) {
  Handle h;
  float x[4] = {}, y[8] = {};
  try {
    argmax_fwd(h, ArgMaxDesc{DataType::kFloat32, 1, 4, 1, 5, 0}, x, y, nullptr);
    FAIL() << "no error";
  } catch (const PrimError& e) {
    EXPECT_STREQ(e.what(), "argmax_fwd: top_k 5 must be in [1, 4] (the size of the searched axis)");
  }
}

}  // namespace
}  // namespace crema::prim
