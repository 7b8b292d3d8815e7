// MVN on CUDA against the CPU implementation: mean only and variance normalization, per channel
// and across channels, both blends, in place, f32 and f64, short rows (the small-block path)
// and long ones; the inputs have a mean far from 0.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "primitives/mvn.h"

namespace crema::prim {
namespace {

struct Shape {
  int n, c, h, w;
};
const Shape kShapes[] = {{2, 3, 4, 5},  {1, 1, 1, 1},    {4, 3, 1, 1},
                         {3, 7, 9, 11}, {2, 64, 56, 56}, {1, 3, 227, 227}};

template <typename T>
void check(const Shape& s, const MvnDesc& md, Blend b, bool in_place) {
  SCOPED_TRACE(std::to_string(s.n) + "x" + std::to_string(s.c) + "x" + std::to_string(s.h) + "x" +
               std::to_string(s.w) + (md.normalize_variance ? " var" : "") +
               (md.across_channels ? " across" : "") + " beta " + std::to_string(b.beta) +
               (in_place ? " in place" : "") + (sizeof(T) == 8 ? " f64" : " f32"));
  const TensorDesc d = TensorDesc::nchw(sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32,
                                        s.n, s.c, s.h, s.w);
  const size_t n = size_t(d.count());
  const test::Tolerance tol =
      sizeof(T) == 8 ? test::Tolerance{1e-10, 1e-9, true} : test::Tolerance{5e-5, 5e-4, true};
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  const auto x = random_vector<T>(n, 1, 3, 5), dy = random_vector<T>(n, 2);
  std::vector<T> y = in_place ? x : (b.beta == 0 ? test::poisoned<T>(n) : random_vector<T>(n, 3));
  DeviceBuffer gx = to_gpu(x), gy = to_gpu(y);
  mvn_fwd(cpu, md, d, in_place ? y.data() : x.data(), d, y.data(), b);
  mvn_fwd(gpu, md, d, in_place ? gy.get() : gx.get(), d, gy.get(), b);
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gy, n), y, tol)) << "fwd";
  std::vector<T> dx = in_place ? dy : (b.beta == 0 ? test::poisoned<T>(n) : random_vector<T>(n, 4));
  DeviceBuffer gdx = to_gpu(dx), gdy = to_gpu(dy);
  mvn_bwd(cpu, md, d, x.data(), in_place ? dx.data() : dy.data(), d, dx.data(), b);
  mvn_bwd(gpu, md, d, gx.get(), in_place ? gdx.get() : gdy.get(), d, gdx.get(), b);
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gdx, n), dx, tol)) << "bwd";
}

TEST(MvnCuda, MatchesCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  for (const Shape& s : kShapes)
    for (bool var : {true, false})
      for (bool across : {false, true})
        for (bool in_place : {false, true})
          for (Blend b : {Blend{}, Blend{0.5, -1}}) {
            if (in_place && b.beta != 0) continue;
            const MvnDesc md{var, across, 1e-9};
            check<float>(s, md, b, in_place);
            check<double>(s, md, b, in_place);
          }
}

}  // namespace
}  // namespace crema::prim
