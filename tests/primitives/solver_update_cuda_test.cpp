// solver_update on CUDA against the CPU implementation: every rule and regularization, three
// steps, f32 and f64, including a size that is not a multiple of the block.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "primitives/solver_update.h"

namespace crema::prim {
namespace {

using test::all_close;
using test::from_gpu;
using test::random_vector;
using test::to_gpu;

template <typename T>
void check_rule(UpdateRule rule, Regularization reg) {
  SCOPED_TRACE("rule " + std::to_string(int(rule)) + " reg " + std::to_string(int(reg)) +
               (sizeof(T) == 8 ? " f64" : " f32"));
  const size_t n = 100003;
  SolverUpdateDesc d;
  d.rule = rule;
  d.dtype = sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32;
  d.count = int64_t(n);
  d.regularization = reg;
  d.decay = 0.01;
  d.grad_scale = 0.5;
  d.rate = 0.05;
  d.momentum = 0.9;
  d.momentum2 = 0.999;
  d.rms_decay = 0.98;
  d.delta = 1e-6;
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  std::vector<T> w = random_vector<T>(n, 1), h(n, T(0)), h2(n, T(0));
  DeviceBuffer gw = to_gpu(w), gh = to_gpu(h), gh2 = to_gpu(h2);
  // CUDA contracts a * b + c into one FMA, the CPU build does not: where an update nearly
  // cancels (g + decay * w close to 0) the relative difference can exceed 1e-5, so the absolute
  // bound is scaled to the O(0.1) step sizes.
  const test::Tolerance tol =
      sizeof(T) == 8 ? test::Tolerance{1e-12, 1e-10} : test::Tolerance{1e-5, 1e-5};
  for (int step = 0; step < 3; ++step) {
    std::vector<T> g = random_vector<T>(n, 10 + step);
    DeviceBuffer gg = to_gpu(g);
    solver_update(cpu, d, w.data(), g.data(), h.data(), h2.data());
    solver_update(gpu, d, gw.get(), gg.get(), gh.get(), gh2.get());
    ASSERT_TRUE(all_close(from_gpu<T>(gpu, gw, n), w, tol)) << "weights, step " << step;
    ASSERT_TRUE(all_close(from_gpu<T>(gpu, gg, n), g, tol)) << "step value, step " << step;
    ASSERT_TRUE(all_close(from_gpu<T>(gpu, gh, n), h, tol)) << "history, step " << step;
    if (solver_update_history(rule) == 2) {
      ASSERT_TRUE(all_close(from_gpu<T>(gpu, gh2, n), h2, tol)) << "history 2, step " << step;
    }
  }
}

TEST(SolverUpdateCuda, EveryRuleMatchesCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  for (UpdateRule rule : {UpdateRule::kSgd, UpdateRule::kNesterov, UpdateRule::kAdaGrad,
                          UpdateRule::kRmsProp, UpdateRule::kAdaDelta, UpdateRule::kAdam})
    for (Regularization reg : {Regularization::kNone, Regularization::kL2, Regularization::kL1}) {
      check_rule<float>(rule, reg);
      check_rule<double>(rule, reg);
    }
}

}  // namespace
}  // namespace crema::prim
