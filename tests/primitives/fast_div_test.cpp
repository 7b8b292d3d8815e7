// FastDiv against the hardware division: every divisor up to 4096 and powers of two and their
// neighbours up to 2^31 - 1, each with the dividends where a quotient changes (multiples of the
// divisor and their neighbours), small and largest dividends, and random ones.
#include "primitives/common/fast_div.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace crema::prim {
namespace {

constexpr uint32_t kMax = (uint32_t(1) << 31) - 1;

void check_divisor(uint32_t d, std::mt19937& gen) {
  const FastDiv f(d);
  std::vector<uint32_t> n = {0, 1, 2, 3, kMax, kMax - 1, kMax - d + 1};
  std::uniform_int_distribution<uint32_t> multiple(0, kMax / d), any(0, kMax);
  for (int k = 0; k < 64; ++k) {
    const uint32_t m = multiple(gen) * d;
    n.push_back(m);
    if (m > 0) n.push_back(m - 1);
    if (m < kMax) n.push_back(m + 1);
    n.push_back(any(gen));
  }
  for (uint32_t v : n) ASSERT_EQ(f.div(v), v / d) << v << " / " << d;
}

TEST(FastDiv, EqualsDivision) {
  std::mt19937 gen(5);
  for (uint32_t d = 1; d <= 4096; ++d) check_divisor(d, gen);
  for (int s = 12; s < 31; ++s)
    for (uint32_t d : {(uint32_t(1) << s) - 1, uint32_t(1) << s, (uint32_t(1) << s) + 1})
      check_divisor(d, gen);
  check_divisor(kMax, gen);
  std::uniform_int_distribution<uint32_t> any(1, kMax);
  for (int k = 0; k < 2000; ++k) check_divisor(any(gen), gen);
}

}  // namespace
}  // namespace crema::prim
