// Solver update: descriptor validation and the one device dispatcher.
#include "primitives/solver_update.h"

#include <cmath>
#include <string>

#include "primitives/common/dispatch.h"

namespace crema::prim {

// The implementations (solver_update_cpu.cpp, solver_update_cuda.cu) take the list form.
CREMA_BACKENDS(void solver_update(Handle& h, const SolverUpdateParam* params, size_t count);)

namespace {

void check_param(const SolverUpdateParam& p, size_t index) {
  const SolverUpdateDesc& d = p.desc;
  if (int(d.rule) < int(UpdateRule::kSgd) || int(d.rule) > int(UpdateRule::kAdam))
    throw PrimError("solver_update: unknown update rule");
  if (int(d.regularization) < int(Regularization::kNone) ||
      int(d.regularization) > int(Regularization::kL1))
    throw PrimError("solver_update: unknown regularization");
  if (d.count < 0) throw PrimError("solver_update: negative count");
  const std::pair<const char*, double> coefficients[] = {{"grad_scale", d.grad_scale},
                                                         {"decay", d.decay},
                                                         {"rate", d.rate},
                                                         {"momentum", d.momentum},
                                                         {"momentum2", d.momentum2},
                                                         {"rms_decay", d.rms_decay},
                                                         {"delta", d.delta}};
  for (const auto& [name, v] : coefficients)
    if (!std::isfinite(v))
      throw PrimError("solver_update: parameter " + std::to_string(index) + ": " + name + " is " +
                      std::to_string(v) + "; the coefficients must be finite");
  if (d.count == 0) return;
  if (!p.w || !p.g || !p.hist) throw PrimError("solver_update: null weights, gradient or history");
  if (solver_update_history(d.rule) == 2 && !p.hist2)
    throw PrimError("solver_update: this rule needs a second history");
}

}  // namespace

int solver_update_history(UpdateRule rule) {
  return rule == UpdateRule::kAdaDelta || rule == UpdateRule::kAdam ? 2 : 1;
}

void solver_update(Handle& h, const SolverUpdateDesc& d, void* w, void* g, void* hist,
                   void* hist2) {
  const SolverUpdateParam p{d, w, g, hist, hist2};
  solver_update(h, &p, 1);
}

void solver_update(Handle& h, const SolverUpdateParam* params, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const SolverUpdateParam& p = params[i];
    check_param(p, i);
    if (p.desc.rule != params[0].desc.rule || p.desc.dtype != params[0].desc.dtype)
      throw PrimError("solver_update: the parameters of one list need one rule and one dtype");
  }
  if (count > 0) CREMA_DISPATCH(h, solver_update, h, params, count);
}

}  // namespace crema::prim
