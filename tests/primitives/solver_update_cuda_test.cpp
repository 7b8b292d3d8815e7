// solver_update on CUDA against the CPU implementation: every rule and regularization, three
// steps, f32 and f64, including a size that is not a multiple of the block; and the list form
// over more parameters than one launch takes, each with its own size and coefficients.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "primitives/solver_update.h"

namespace crema::prim {
namespace {

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

// 20 parameters (two launches of at most 16), sizes around the 1024-element tile and an empty
// one, each with its own rate, decay and regularization, against one CPU call per parameter.
template <typename T>
void check_list(UpdateRule rule) {
  SCOPED_TRACE("rule " + std::to_string(int(rule)) + (sizeof(T) == 8 ? " f64" : " f32"));
  const std::vector<int64_t> sizes = {1,    1023, 1024, 1025, 0,  5000, 100003, 7, 2048,  3,
                                      4097, 31,   500,  20,   50, 800,  1,      2, 65537, 10};
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  struct Param {
    std::vector<T> w, g, h, h2;
    DeviceBuffer gw, gg, gh, gh2;
  };
  std::vector<Param> ps(sizes.size());
  std::vector<SolverUpdateParam> list;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const size_t n = size_t(sizes[i]);
    Param& p = ps[i];
    p.w = random_vector<T>(n, 100 + int(i));
    p.g = random_vector<T>(n, 200 + int(i));
    p.h = random_vector<T>(n, 300 + int(i));
    p.h2 = std::vector<T>(n, T(0.25));
    p.gw = to_gpu(p.w);
    p.gg = to_gpu(p.g);
    p.gh = to_gpu(p.h);
    p.gh2 = to_gpu(p.h2);
    SolverUpdateDesc d;
    d.rule = rule;
    d.dtype = sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32;
    d.count = sizes[i];
    d.regularization = Regularization(i % 3);
    d.decay = 0.001 * double(i + 1);
    d.rate = 0.01 * double(i % 4 + 1);
    d.momentum = 0.9;
    d.momentum2 = 0.999;
    d.delta = 1e-6;
    list.push_back({d, p.gw.get(), p.gg.get(), p.gh.get(), p.gh2.get()});
    solver_update(cpu, d, p.w.data(), p.g.data(), p.h.data(), p.h2.data());
  }
  solver_update(gpu, list.data(), list.size());
  const test::Tolerance tol =
      sizeof(T) == 8 ? test::Tolerance{1e-12, 1e-10} : test::Tolerance{1e-5, 1e-5};
  for (size_t i = 0; i < sizes.size(); ++i) {
    const size_t n = size_t(sizes[i]);
    const Param& p = ps[i];
    ASSERT_TRUE(all_close(from_gpu<T>(gpu, p.gw, n), p.w, tol)) << "weights of parameter " << i;
    ASSERT_TRUE(all_close(from_gpu<T>(gpu, p.gg, n), p.g, tol)) << "step of parameter " << i;
    ASSERT_TRUE(all_close(from_gpu<T>(gpu, p.gh, n), p.h, tol)) << "history of parameter " << i;
    ASSERT_TRUE(all_close(from_gpu<T>(gpu, p.gh2, n), p.h2, tol)) << "history 2 of " << i;
  }
}

TEST(SolverUpdateCuda, ParameterListMatchesCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  for (UpdateRule rule : {UpdateRule::kSgd, UpdateRule::kAdam}) {
    check_list<float>(rule);
    check_list<double>(rule);
  }
}

}  // namespace
}  // namespace crema::prim
