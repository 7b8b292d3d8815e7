// PReLU on CUDA against the CPU implementation: per-channel and shared slopes, forward, data
// gradient and slope gradient with their separate blends, dx in place over dy, f32 and f64, on
// the CPU tests' shapes and real layer shapes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "primitives/prelu.h"

namespace crema::prim {
namespace {

struct Shape {
  const char* name;
  int n, c, h, w;
};
const Shape kShapes[] = {{"2x3x4x5", 2, 3, 4, 5},          {"1x1x1x1", 1, 1, 1, 1},
                         {"4x6x1x1", 4, 6, 1, 1},          {"3x7x9x11", 3, 7, 9, 11},
                         {"resnet50:res2", 2, 64, 56, 56}, {"fc", 64, 4096, 1, 1}};

template <typename T>
void check(const Shape& s, bool shared, Blend b, Blend sb, bool in_place) {
  SCOPED_TRACE(std::string(s.name) + (shared ? " shared" : "") + " beta " + std::to_string(b.beta) +
               " slope beta " + std::to_string(sb.beta) + (in_place ? " in place" : "") +
               (sizeof(T) == 8 ? " f64" : " f32"));
  const TensorDesc d = TensorDesc::nchw(sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32,
                                        s.n, s.c, s.h, s.w);
  const size_t n = size_t(d.count()), ns = shared ? 1 : size_t(s.c);
  const test::Tolerance tol =
      sizeof(T) == 8 ? test::Tolerance{1e-12, 1e-11, true} : test::Tolerance{1e-5, 1e-5, true};
  const PreluDesc pd{shared};
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  const auto x = random_vector<T>(n, 1), dy = random_vector<T>(n, 2);
  const auto slope = random_vector<T>(ns, 3, 0.05, 0.5);
  const DeviceBuffer gx = to_gpu(x), gs = to_gpu(slope);
  std::vector<T> y = b.beta == 0 ? test::poisoned<T>(n) : random_vector<T>(n, 4);
  DeviceBuffer gy = to_gpu(y);
  prelu_fwd(cpu, pd, d, x.data(), slope.data(), d, y.data(), b);
  prelu_fwd(gpu, pd, d, gx.get(), gs.get(), d, gy.get(), b);
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gy, n), y, tol)) << "fwd";

  std::vector<T> dx = in_place ? dy : (b.beta == 0 ? test::poisoned<T>(n) : random_vector<T>(n, 5));
  std::vector<T> ds = sb.beta == 0 ? test::poisoned<T>(ns) : random_vector<T>(ns, 6);
  DeviceBuffer gdx = to_gpu(dx), gds = to_gpu(ds), gdy = to_gpu(dy);
  prelu_bwd(cpu, pd, d, x.data(), in_place ? dx.data() : dy.data(), slope.data(), dx.data(),
            ds.data(), b, sb);
  prelu_bwd(gpu, pd, d, gx.get(), in_place ? gdx.get() : gdy.get(), gs.get(), gdx.get(), gds.get(),
            b, sb);
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gdx, n), dx, tol)) << "dx";
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gds, ns), ds, tol)) << "dslope";

  // Each gradient alone.
  std::vector<T> ds2 = test::poisoned<T>(ns);
  DeviceBuffer gds2 = to_gpu(ds2);
  prelu_bwd(cpu, pd, d, x.data(), dy.data(), slope.data(), nullptr, ds2.data(), b, {});
  prelu_bwd(gpu, pd, d, gx.get(), gdy.get(), gs.get(), nullptr, gds2.get(), b, {});
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, gds2, ns), ds2, tol)) << "dslope alone";
}

TEST(PreluCuda, MatchesCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  for (const Shape& s : kShapes)
    for (bool shared : {false, true})
      for (bool in_place : {false, true})
        for (Blend b : {Blend{}, Blend{0.5, -1}}) {
          if (in_place && b.beta != 0) continue;
          for (Blend sb : {Blend{}, Blend{1, 1}}) {
            check<float>(s, shared, b, sb, in_place);
            check<double>(s, shared, b, sb, in_place);
          }
        }
}

}  // namespace
}  // namespace crema::prim
