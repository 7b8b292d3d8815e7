// The per-type update rules (formulas in sgd_solvers.h) and the solver factory. Each type only
// names its rule and coefficients: the update itself is one fused primitive pass per parameter
// (prim/solver_update.h), rounding in the order of Caffe's chain of BLAS calls.
#include "solver/sgd_solvers.h"

#include <cmath>

#include "core/errors.h"

namespace crema {
namespace {

std::string who(const std::string& source_name) {
  return source_name.empty() ? "solver" : "solver " + source_name;
}

// AdaGrad and RMSProp keep no momentum term: a solver that sets one is refused.
void require_no_momentum(const SolverParameter& param, const std::string& source_name,
                         const char* rule) {
  CREMA_REQUIRE(param.momentum() == 0, who(source_name), ": momentum cannot be used with ", rule,
                " (got ", param.momentum(), ")");
}

}  // namespace

template <typename Dtype>
void SgdSolver<Dtype>::describe_update(prim::SolverUpdateDesc& d) const {
  d.rule = prim::UpdateRule::kSgd;
  d.momentum = this->param_.momentum();
}

template <typename Dtype>
void NesterovSolver<Dtype>::describe_update(prim::SolverUpdateDesc& d) const {
  d.rule = prim::UpdateRule::kNesterov;
  d.momentum = this->param_.momentum();
}

template <typename Dtype>
AdaGradSolver<Dtype>::AdaGradSolver(const SolverParameter& param, Device device, Handle& h,
                                    const std::string& source_name)
    : Solver<Dtype>(param, device, h, 1, source_name) {
  require_no_momentum(param, source_name, "AdaGrad");
}

template <typename Dtype>
void AdaGradSolver<Dtype>::describe_update(prim::SolverUpdateDesc& d) const {
  d.rule = prim::UpdateRule::kAdaGrad;
  d.delta = double(Dtype(this->param_.delta()));
}

template <typename Dtype>
RmsPropSolver<Dtype>::RmsPropSolver(const SolverParameter& param, Device device, Handle& h,
                                    const std::string& source_name)
    : Solver<Dtype>(param, device, h, 1, source_name) {
  require_no_momentum(param, source_name, "RMSProp");
  CREMA_REQUIRE(param.rms_decay() >= 0 && param.rms_decay() <= 1, who(source_name),
                ": rms_decay must be in [0, 1], got ", param.rms_decay());
}

template <typename Dtype>
void RmsPropSolver<Dtype>::describe_update(prim::SolverUpdateDesc& d) const {
  d.rule = prim::UpdateRule::kRmsProp;
  d.rms_decay = this->param_.rms_decay();
  d.delta = double(Dtype(this->param_.delta()));
}

template <typename Dtype>
void AdaDeltaSolver<Dtype>::describe_update(prim::SolverUpdateDesc& d) const {
  d.rule = prim::UpdateRule::kAdaDelta;
  d.momentum = this->param_.momentum();
  d.delta = double(Dtype(this->param_.delta()));
}

template <typename Dtype>
void AdamSolver<Dtype>::describe_update(prim::SolverUpdateDesc& d) const {
  // Bias-corrected moments (Kingma & Ba): the correction folds into the rate.
  const Dtype beta1 = this->param_.momentum();
  const Dtype beta2 = this->param_.momentum2();
  const int step = this->iter() + 1;
  const Dtype correction = std::sqrt(Dtype(1) - Dtype(std::pow(double(beta2), step))) /
                           (Dtype(1) - Dtype(std::pow(double(beta1), step)));
  d.rule = prim::UpdateRule::kAdam;
  d.momentum = beta1;
  d.momentum2 = beta2;
  d.delta = double(Dtype(this->param_.delta()));
  d.rate = double(Dtype(d.rate) * correction);
}

const std::vector<std::string>& solver_types() {
  static const std::vector<std::string> kTypes = {"SGD",     "Nesterov", "AdaGrad",
                                                  "RMSProp", "AdaDelta", "Adam"};
  return kTypes;
}

template <typename Dtype>
std::unique_ptr<Solver<Dtype>> create_solver(const SolverParameter& param, Device device, Handle& h,
                                             const std::string& source_name) {
  const std::string& type = param.type();
  if (type == "SGD") return std::make_unique<SgdSolver<Dtype>>(param, device, h, source_name);
  if (type == "Nesterov")
    return std::make_unique<NesterovSolver<Dtype>>(param, device, h, source_name);
  if (type == "AdaGrad")
    return std::make_unique<AdaGradSolver<Dtype>>(param, device, h, source_name);
  if (type == "RMSProp")
    return std::make_unique<RmsPropSolver<Dtype>>(param, device, h, source_name);
  if (type == "AdaDelta")
    return std::make_unique<AdaDeltaSolver<Dtype>>(param, device, h, source_name);
  if (type == "Adam") return std::make_unique<AdamSolver<Dtype>>(param, device, h, source_name);
  std::string known;
  for (const auto& t : solver_types()) known += (known.empty() ? "" : ", ") + t;
  fail(who(source_name), ": unknown solver type \"", type, "\"; known types: ", known);
}

#define CREMA_INSTANTIATE(T)                                                                    \
  template class SgdSolver<T>;                                                                  \
  template class NesterovSolver<T>;                                                             \
  template class AdaGradSolver<T>;                                                              \
  template class RmsPropSolver<T>;                                                              \
  template class AdaDeltaSolver<T>;                                                             \
  template class AdamSolver<T>;                                                                 \
  template std::unique_ptr<Solver<T>> create_solver<T>(const SolverParameter&, Device, Handle&, \
                                                       const std::string&);
CREMA_INSTANTIATE(float)
CREMA_INSTANTIATE(double)
#undef CREMA_INSTANTIATE

}  // namespace crema
