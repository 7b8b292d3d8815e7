// Solver update on the CPU: one loop per rule (solver_update_ops.h), split over the handle's
// threads; every element is independent, so the split does not change the result.
#include "primitives/common/dtype_visit.h"
#include "primitives/common/solver_update_ops.h"
#include "primitives/cpu/parallel.h"
#include "primitives/solver_update.h"

namespace crema::prim::cpu {
namespace {

template <typename T>
void update(Handle& h, const SolverUpdateDesc& d, T* w, T* g, T* hist, T* hist2) {
  const update_ops::Coefficients<T> k = update_ops::coefficients<T>(d);
  update_ops::visit_rule(d.rule, [&](auto rule) {
    constexpr UpdateRule R = decltype(rule)::value;
    // Small tensors (biases) are not worth a thread start.
    const int threads = d.count < (int64_t(1) << 16) ? 1 : h.cpu_threads();
    parallel_for(threads, [&](int t) {
      const int64_t begin = d.count * t / threads, end = d.count * (t + 1) / threads;
      for (int64_t i = begin; i < end; ++i) update_ops::update_one<R>(k, i, w, g, hist, hist2);
    });
  });
}

template <typename T>
T* as(void* p) {
  return static_cast<T*>(p);
}

}  // namespace

void solver_update(Handle& h, const SolverUpdateParam* params, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const SolverUpdateParam& p = params[i];
    visit_dtype(kFloatTypes, p.desc.dtype, "solver_update", Device::kCPU, [&](auto tag) {
      using T = typename decltype(tag)::type;
      update(h, p.desc, as<T>(p.w), as<T>(p.g), as<T>(p.hist), as<T>(p.hist2));
    });
  }
}

}  // namespace crema::prim::cpu
