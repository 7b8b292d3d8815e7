// Tests of dropout_fwd/dropout_bwd on the CPU and of the Philox4x32-10 generator behind them.
#include "primitives/dropout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "primitives/common/dtype_visit.h"
#include "primitives/common/philox.h"
#include "test_util.h"

namespace crema::prim {
namespace {

DropoutDesc desc(DataType t, int64_t count, double ratio, bool scale_train = true) {
  return DropoutDesc{t, count, ratio, scale_train};
}

// Published known-answer vectors of Philox4x32-10 (Random123's kat_vectors): counter, key,
// expected output.
TEST(PhiloxTest, KnownAnswerVectors) {
  struct Kat {
    philox::Counter ctr;
    philox::Key key;
    uint32_t want[4];
  };
  const Kat kats[] = {
      {{{0, 0, 0, 0}}, {{0, 0}}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
       {{0xffffffff, 0xffffffff}},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
       {{0xa4093822, 0x299f31d0}},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& k : kats) {
    const philox::Counter got = philox::philox4x32_10(k.ctr, k.key);
    for (int w = 0; w < 4; ++w) EXPECT_EQ(got.v[w], k.want[w]) << "word " << w;
  }
}

CREMA_FLOAT_TYPED_TEST_SUITE(DropoutTest);

// Kept elements are x * 1/(1-ratio) exactly, dropped ones 0, the mask only 0/1, the kept
// fraction within 5 standard deviations of 1 - ratio, and backward applies the same mask.
TYPED_TEST(DropoutTest, ForwardBackwardAndKeptFraction) {
  using T = TypeParam;
  const int64_t n = 100000;
  const auto x = random_vector<T>(size_t(n), 91, 0.5, 2.0);
  const auto dy = random_vector<T>(size_t(n), 92, 0.5, 2.0);
  for (double ratio : {0.1, 0.5, 0.8}) {
    for (bool scale_train : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "ratio " << ratio << " scale " << scale_train);
      Handle h;
      h.set_seed(1234);
      const DropoutDesc dd = desc(dtype_of<T>(), n, ratio, scale_train);
      const T scale = scale_train ? T(1.0 / (1.0 - ratio)) : T(1);
      auto y = poisoned<T>(size_t(n));
      std::vector<uint8_t> mask(size_t(n), 7);
      dropout_fwd(h, dd, x.data(), y.data(), mask.data());
      auto dx = poisoned<T>(size_t(n));
      dropout_bwd(h, dd, dy.data(), mask.data(), dx.data());
      int64_t kept = 0, bad_mask = 0, bad_y = 0, bad_dx = 0;
      for (size_t i = 0; i < size_t(n); ++i) {
        bad_mask += mask[i] > 1;
        kept += mask[i] == 1;
        const T want_y = mask[i] == 1 ? x[i] * scale : T(0);
        const T want_dx = mask[i] == 1 ? dy[i] * scale : T(0);
        bad_y += !(y[i] == want_y);
        bad_dx += !(dx[i] == want_dx);
      }
      EXPECT_EQ(bad_mask, 0);
      EXPECT_EQ(bad_y, 0);
      EXPECT_EQ(bad_dx, 0);
      const double p = 1.0 - ratio;
      EXPECT_NEAR(double(kept) / double(n), p, 5 * std::sqrt(p * (1 - p) / double(n)));
    }
  }
}

// The same seed and call sequence reproduce the masks; each call draws a fresh counter range,
// so consecutive calls differ; consecutive calls continue one stream, so a call of 5 then one of
// 12 equal a single call of 17; another seed gives another mask.
TEST(DropoutMaskTest, MaskDependsOnSeedAndCounter) {
  const int64_t n = 1000;
  const auto x = random_vector<float>(size_t(n), 93, 0.5, 2.0);
  std::vector<float> y(static_cast<size_t>(n));
  auto draw = [&](Handle& h, int64_t count) {
    std::vector<uint8_t> m(size_t(count), 7);
    dropout_fwd(h, desc(DataType::kFloat32, count, 0.5), x.data(), y.data(), m.data());
    return m;
  };
  Handle a, b, c;
  a.set_seed(42);
  b.set_seed(42);
  c.set_seed(43);
  const auto a1 = draw(a, n), a2 = draw(a, n);
  const auto b1 = draw(b, n), b2 = draw(b, n);
  const auto c1 = draw(c, n);
  EXPECT_EQ(a1, b1);
  EXPECT_EQ(a2, b2);
  EXPECT_NE(a1, a2);
  EXPECT_NE(a1, c1);

  Handle s, t;
  s.set_seed(7);
  t.set_seed(7);
  const auto head = draw(s, 5), tail = draw(s, 12), whole = draw(t, 17);
  EXPECT_EQ(head, std::vector<uint8_t>(whole.begin(), whole.begin() + 5));
  EXPECT_EQ(tail, std::vector<uint8_t>(whole.begin() + 5, whole.end()));
}

// The mask is Philox's stream compared with ratio * 2^32: the contract a CUDA kernel must meet
// to draw the same mask for the same seed and counter.
TEST(DropoutMaskTest, MaskIsThePhiloxStream) {
  const int64_t n = 37;
  const double ratio = 0.3;
  Handle h;
  h.set_seed(0x0123456789abcdefull);
  h.next_counter(6);  // start mid-block
  std::vector<float> x(static_cast<size_t>(n), 1.0f), y(static_cast<size_t>(n));
  std::vector<uint8_t> mask(static_cast<size_t>(n));
  dropout_fwd(h, desc(DataType::kFloat32, n, ratio), x.data(), y.data(), mask.data());
  const philox::Key key = {{0x89abcdefu, 0x01234567u}};
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t pos = 6 + uint64_t(i);
    const philox::Counter r = philox::philox4x32_10({{uint32_t(pos / 4), 0, 0, 0}}, key);
    const bool keep = double(r.v[pos % 4]) >= ratio * 4294967296.0;
    EXPECT_EQ(mask[size_t(i)], keep ? 1 : 0) << "element " << i;
  }
}

TEST(DropoutMaskTest, RatioZeroKeepsAllAndBadRatioThrows) {
  Handle h;
  const auto x = random_vector<double>(64, 94);
  auto y = poisoned<double>(64);
  std::vector<uint8_t> mask(64);
  dropout_fwd(h, desc(DataType::kFloat64, 64, 0.0), x.data(), y.data(), mask.data());
  EXPECT_EQ(y, x);
  for (double bad : {1.0, -0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_THROW(dropout_fwd(h, desc(DataType::kFloat64, 64, bad), x.data(), y.data(), mask.data()),
                 PrimError)
        << bad;
    EXPECT_THROW(dropout_bwd(h, desc(DataType::kFloat64, 64, bad), x.data(), mask.data(), y.data()),
                 PrimError)
        << bad;
  }
}

}  // namespace
}  // namespace crema::prim
