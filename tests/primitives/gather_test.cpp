// gather_rows / scatter_add_rows / nonzero_indices on the CPU against naive double references,
// with repeated indices, blending, and the errors for a bad index.
#include "primitives/gather.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "primitives/common/dtype_visit.h"
#include "test_util.h"

namespace crema::prim {
namespace {

CREMA_FLOAT_TYPED_TEST_SUITE(GatherTest);

TYPED_TEST(GatherTest, GatherAndScatterMatchReference) {
  using T = TypeParam;
  Handle h;
  const int64_t rows = 5, d = 7, m = 9;
  const std::vector<T> idx = {4, 0, 2, 2, 4, 1, 4, 0, 2};  // repeats; row 3 never named
  const RowsDesc rd{dtype_of<T>(), m, d, rows};
  const auto table = random_vector<T>(size_t(rows * d), 1);
  for (Blend b : {Blend{1, 0}, Blend{-0.5, 0}, Blend{2, 0.5}}) {
    SCOPED_TRACE("alpha " + std::to_string(b.alpha) + " beta " + std::to_string(b.beta));
    auto out = b.beta == 0 ? poisoned<T>(size_t(m * d)) : random_vector<T>(size_t(m * d), 2);
    std::vector<double> ref(size_t(m * d));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < d; ++j) {
        const size_t o = size_t(i * d + j);
        ref[o] = b.alpha * double(table[size_t(int64_t(idx[size_t(i)]) * d + j)]) +
                 (b.beta == 0 ? 0.0 : b.beta * double(out[o]));
      }
    gather_rows(h, rd, table.data(), idx.data(), out.data(), b);
    EXPECT_TRUE(all_close(out, ref, Tolerance{1e-6, 1e-6}));

    const auto src = random_vector<T>(size_t(m * d), 3);
    auto tab = b.beta == 0 ? poisoned<T>(size_t(rows * d)) : random_vector<T>(size_t(rows * d), 4);
    std::vector<double> tref(size_t(rows * d));
    for (size_t k = 0; k < tref.size(); ++k) tref[k] = b.beta == 0 ? 0.0 : b.beta * double(tab[k]);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < d; ++j)
        tref[size_t(int64_t(idx[size_t(i)]) * d + j)] += b.alpha * double(src[size_t(i * d + j)]);
    scatter_add_rows(h, rd, src.data(), idx.data(), tab.data(), b);
    EXPECT_TRUE(all_close(tab, tref, Tolerance{1e-6, 1e-6, true}));
    if (b.beta == 0) {
      for (int64_t j = 0; j < d; ++j) EXPECT_EQ(tab[size_t(3 * d + j)], T(0));  // row 3 cleared
    }
  }
}

TYPED_TEST(GatherTest, NonzeroIndices) {
  using T = TypeParam;
  Handle h;
  const std::vector<T> mask = {0, 1, 0, 0, 2.5, -1, 0};
  auto out = poisoned<T>(mask.size());
  EXPECT_EQ(nonzero_indices(h, dtype_of<T>(), int64_t(mask.size()), mask.data(), out.data()), 3);
  EXPECT_EQ(out[0], T(1));
  EXPECT_EQ(out[1], T(4));
  EXPECT_EQ(out[2], T(5));
}

TEST(Gather, BadIndexIsAnErrorNamingIt) {
  Handle h;
  const float table[6] = {1, 2, 3, 4, 5, 6};
  float out[6] = {9, 9, 9, 9, 9, 9};
  const float out_of_range[3] = {0, 3, 1};
  try {
    gather_rows(h, RowsDesc{DataType::kFloat32, 3, 2, 3}, table, out_of_range, out);
    FAIL() << "no error";
  } catch (const PrimError& e) {
    EXPECT_STREQ(e.what(), "gather_rows: index 3 at position 1 is not a row of the table [0, 3)");
  }
  EXPECT_EQ(out[0], 9);  // nothing written
  const float fractional[2] = {0.5, 1};
  EXPECT_THROW(gather_rows(h, RowsDesc{DataType::kFloat32, 2, 2, 3}, table, fractional, out),
               PrimError);
  const float negative[1] = {-1};
  float tab[6] = {};
  EXPECT_THROW(scatter_add_rows(h, RowsDesc{DataType::kFloat32, 1, 2, 3}, table, negative, tab),
               PrimError);
}

}  // namespace
}  // namespace crema::prim
