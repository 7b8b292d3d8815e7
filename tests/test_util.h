// Shared test helpers: seeded random fills, NaN poisoning of outputs, and comparison that
// reports max abs/rel error and the first mismatching indices. A comparison also fails when the
// checked output is mostly zeros (a vacuous pass) unless the caller says zeros are expected.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace crema::test {

// The storage types every CPU primitive test runs in.
using FloatTypes = ::testing::Types<float, double>;

// Declares the typed test fixture Name and its suite over FloatTypes (TYPED_TEST(Name, ...)).
#define CREMA_FLOAT_TYPED_TEST_SUITE(Name) \
  template <typename T>                    \
  class Name : public ::testing::Test {};  \
  TYPED_TEST_SUITE(Name, ::crema::test::FloatTypes)

// Whether this test binary runs under AddressSanitizer (scripts/fuzz.sh --tests): its SEGV
// handler reports a fault and exits 1 rather than letting the signal kill the process, and its
// runtime is not linked into programs built against an installed library.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

// n values drawn from dist, reproducible from the seed.
template <typename T, typename Distribution>
std::vector<T> random_values(size_t n, uint64_t seed, Distribution dist) {
  std::mt19937_64 gen(seed);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(dist(gen));
  return v;
}

// Uniform values in [lo, hi), reproducible from the seed.
template <typename T>
std::vector<T> random_vector(size_t n, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  return random_values<T>(n, seed, std::uniform_real_distribution<double>(lo, hi));
}

// Small integers in [lo, hi]: sums and products of these are exact in float, so results can be
// compared exactly.
template <typename T>
std::vector<T> random_int_vector(size_t n, uint64_t seed, int lo = -3, int hi = 3) {
  return random_values<T>(n, seed, std::uniform_int_distribution<int>(lo, hi));
}

// kAuto, then every row of a primitive's implementation table (what its *_algos(device) lists):
// the algorithms its tests force one by one.
template <typename Algo>
std::vector<Algo> auto_then(const std::vector<Algo>& rows) {
  std::vector<Algo> algos = {Algo::kAuto};
  algos.insert(algos.end(), rows.begin(), rows.end());
  return algos;
}

template <typename T>
std::vector<T> poisoned(size_t n) {
  return std::vector<T>(n, std::numeric_limits<T>::quiet_NaN());
}

struct Tolerance {
  double abs = 1e-5;
  double rel = 1e-4;
  bool allow_mostly_zero = false;
};

// A tolerance for each storage type of FloatTypes; of<T>() is T's.
struct TypedTolerance {
  Tolerance f64, f32;
  template <typename T>
  Tolerance of() const {
    return sizeof(T) == 8 ? f64 : f32;
  }
};

// Compares got against the reference; every element must be finite (so a poisoned, unwritten
// element fails) and within abs + rel * |ref|.
template <typename T, typename R>
::testing::AssertionResult all_close(const std::vector<T>& got, const std::vector<R>& ref,
                                     Tolerance tol = {}) {
  if (got.size() != ref.size())
    return ::testing::AssertionFailure()
           << "size " << got.size() << " != reference size " << ref.size();
  double max_abs = 0, max_rel = 0;
  size_t bad = 0, zeros = 0;
  std::ostringstream first;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = double(got[i]), r = double(ref[i]);
    const double err = std::fabs(g - r);
    if (r == 0.0) ++zeros;
    if (!std::isfinite(g) || err > tol.abs + tol.rel * std::fabs(r)) {
      if (bad < 5) first << " [" << i << "] got " << g << " want " << r << ";";
      ++bad;
    }
    if (std::isfinite(g)) {
      max_abs = std::max(max_abs, err);
      if (r != 0.0) max_rel = std::max(max_rel, err / std::fabs(r));
    }
  }
  if (bad)
    return ::testing::AssertionFailure()
           << bad << " of " << got.size() << " elements differ (max abs " << max_abs << ", max rel "
           << max_rel << "):" << first.str();
  if (!tol.allow_mostly_zero && got.size() >= 4 && zeros * 2 > got.size())
    return ::testing::AssertionFailure() << "vacuous comparison: " << zeros << " of " << got.size()
                                         << " reference values are zero";
  return ::testing::AssertionSuccess();
}

}  // namespace crema::test

// Every test of crema (and of crema::prim) reaches the helpers above by their short names.
namespace crema {
using test::all_close;
using test::auto_then;
using test::poisoned;
using test::random_int_vector;
using test::random_vector;
using test::Tolerance;
using test::TypedTolerance;
}  // namespace crema
