// gather_rows / scatter_add_rows / nonzero_indices on CUDA against the CPU implementation:
// repeated indices (the scatter must add them in index order, deterministically), rows no index
// names, both blends, f32 and f64, an Embed-sized table; bad indices throw the CPU's message
// and write nothing; nonzero_indices returns the count on the host. Integer data: exact.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "primitives/gather.h"

namespace crema::prim {
namespace {

template <typename T>
void check(int64_t num_indices, int64_t row_size, int64_t num_rows, Blend blend, bool ints) {
  SCOPED_TRACE(std::to_string(num_indices) + " of " + std::to_string(num_rows) + "x" +
               std::to_string(row_size) + " beta " + std::to_string(blend.beta) +
               (ints ? " ints" : "") + (sizeof(T) == 8 ? " f64" : " f32"));
  const RowsDesc rd{sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32, num_indices, row_size,
                    num_rows};
  const size_t nt = size_t(num_rows * row_size), no = size_t(num_indices * row_size);
  // Indices concentrated on the low half of the table, so rows repeat and others stay unnamed.
  std::vector<T> idx(static_cast<size_t>(num_indices));
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = T((i * 7919 + 13) % size_t((num_rows + 1) / 2));
  const auto table = ints ? random_int_vector<T>(nt, 1) : random_vector<T>(nt, 1);
  const auto src = ints ? random_int_vector<T>(no, 2) : random_vector<T>(no, 2);
  const test::Tolerance tol = ints             ? test::Tolerance{0, 0, true}
                              : sizeof(T) == 8 ? test::Tolerance{1e-12, 1e-11, true}
                                               : test::Tolerance{1e-6, 1e-5, true};
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  const DeviceBuffer gidx = to_gpu(idx), gtable = to_gpu(table), gsrc = to_gpu(src);

  std::vector<T> out = blend.beta == 0 ? test::poisoned<T>(no) : random_int_vector<T>(no, 3);
  DeviceBuffer gout = to_gpu(out);
  gather_rows(cpu, rd, table.data(), idx.data(), out.data(), blend);
  gather_rows(gpu, rd, gtable.get(), gidx.get(), gout.get(), blend);
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gout, no), out, tol)) << "gather";

  std::vector<T> t2 = blend.beta == 0 ? test::poisoned<T>(nt) : table;
  DeviceBuffer gt2 = to_gpu(t2);
  scatter_add_rows(cpu, rd, src.data(), idx.data(), t2.data(), blend);
  scatter_add_rows(gpu, rd, gsrc.get(), gidx.get(), gt2.get(), blend);
  // Non-integer data too: the same order of additions gives the same bits.
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gt2, nt), t2, {0, 0, true})) << "scatter";
}

template <typename T>
void check_all() {
  struct S {
    int64_t n, d, rows;
  };
  for (const S& s :
       {S{1, 1, 1}, S{5, 3, 4}, S{37, 16, 10}, S{0, 4, 6}, S{1000, 300, 10000}, S{20000, 7, 50}})
    for (Blend b : {Blend{}, Blend{1, 1}, Blend{0.5, -2}})
      for (bool ints : {true, false}) check<T>(s.n, s.d, s.rows, b, ints);
}

TEST(GatherCuda, MatchesCpuF32) {
  CREMA_SKIP_WITHOUT_GPU();
  check_all<float>();
}

TEST(GatherCuda, MatchesCpuF64) {
  CREMA_SKIP_WITHOUT_GPU();
  check_all<double>();
}

TEST(GatherCuda, BadIndexThrowsAndWritesNothing) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle gpu(Device::kCUDA);
  const RowsDesc rd{DataType::kFloat32, 4, 2, 3};
  const std::vector<float> idx = {0, 2, 1.5f, 7};
  const DeviceBuffer gidx = to_gpu(idx), gsrc = to_gpu(std::vector<float>(8, 1));
  DeviceBuffer gtable = to_gpu(std::vector<float>(6, 42)), gout = to_gpu(std::vector<float>(8, 42));
  try {
    gather_rows(gpu, rd, gtable.get(), gidx.get(), gout.get());
    ADD_FAILURE() << "no throw";
  } catch (const PrimError& e) {
    EXPECT_NE(std::string(e.what()).find("gather_rows: index 1.5 at position 2 is not a row"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(scatter_add_rows(gpu, rd, gsrc.get(), gidx.get(), gtable.get()), PrimError);
  EXPECT_EQ(from_gpu<float>(gpu, gout, 8), std::vector<float>(8, 42));
  EXPECT_EQ(from_gpu<float>(gpu, gtable, 6), std::vector<float>(6, 42));
}

template <typename T>
void check_nonzero(int64_t n) {
  SCOPED_TRACE("n " + std::to_string(n) + (sizeof(T) == 8 ? " f64" : " f32"));
  const DataType t = sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32;
  auto mask = random_int_vector<T>(size_t(n), 5, -1, 2);  // about half zero
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  std::vector<T> idx(size_t(n), T(-1));
  const int64_t count = nonzero_indices(cpu, t, n, mask.data(), idx.data());
  const DeviceBuffer gm = to_gpu(mask);
  DeviceBuffer gi = to_gpu(std::vector<T>(size_t(n), T(-1)));
  EXPECT_EQ(nonzero_indices(gpu, t, n, gm.get(), gi.get()), count);
  const auto got = from_gpu<T>(gpu, gi, size_t(n));
  EXPECT_EQ(std::vector<T>(got.begin(), got.begin() + count),
            std::vector<T>(idx.begin(), idx.begin() + count));
}

TEST(GatherCuda, NonzeroIndicesMatchesCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  for (int64_t n : {int64_t(1), int64_t(2), int64_t(1000), int64_t(1) << 20}) {
    check_nonzero<float>(n);
    check_nonzero<double>(n);
  }
  Handle gpu(Device::kCUDA);
  const DeviceBuffer zeros = to_gpu(std::vector<float>(100, 0.f));
  DeviceBuffer gi(Device::kCUDA, 400);
  EXPECT_EQ(nonzero_indices(gpu, DataType::kFloat32, 100, zeros.get(), gi.get()), 0);
}

}  // namespace
}  // namespace crema::prim
