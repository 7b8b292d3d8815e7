// The per-type update rules (formulas in sgd_solvers.h) and the solver factory. Each rule works
// on one parameter through primitives, in the order of operations Caffe uses, so results match
// Caffe's up to the rounding of the underlying BLAS.
#include "solver/sgd_solvers.h"

#include <cmath>

#include "core/errors.h"
#include "primitives/blas.h"
#include "primitives/elementwise.h"

namespace crema {
namespace {

std::string who(const std::string& source_name) {
  return source_name.empty() ? "solver" : "solver " + source_name;
}

}  // namespace

template <typename Dtype>
void SgdSolver<Dtype>::compute_update_value(int id, Dtype rate) {
  // h = momentum * h + r * g; g = h. Momentum averages the steps over about 1 / (1 - momentum)
  // iterations.
  Tensor<Dtype>& p = this->param_tensor(id);
  Tensor<Dtype>& h = this->history(0, id);
  const Dtype local_rate = rate * this->net().params_lr()[id];
  const Dtype momentum = this->param_.momentum();
  const auto t = this->dtype();
  prim::axpby(this->h_, t, p.count(), double(local_rate), p.diff(), double(momentum),
              h.mutable_data());
  prim::axpby(this->h_, t, p.count(), 1.0, h.data(), 0.0, p.mutable_diff());
}

template <typename Dtype>
void NesterovSolver<Dtype>::compute_update_value(int id, Dtype rate) {
  // Look-ahead momentum: step with the new velocity, corrected by the old one.
  Tensor<Dtype>& p = this->param_tensor(id);
  Tensor<Dtype>& h = this->history(0, id);
  Tensor<Dtype>& old = this->temp(id);
  const Dtype local_rate = rate * this->net().params_lr()[id];
  const Dtype momentum = this->param_.momentum();
  const auto t = this->dtype();
  const int64_t n = p.count();
  prim::axpby(this->h_, t, n, 1.0, h.data(), 0.0, old.mutable_data());
  prim::axpby(this->h_, t, n, double(local_rate), p.diff(), double(momentum), h.mutable_data());
  prim::axpby(this->h_, t, n, double(Dtype(1) + momentum), h.data(), double(-momentum),
              old.mutable_data());
  prim::axpby(this->h_, t, n, 1.0, old.data(), 0.0, p.mutable_diff());
}

template <typename Dtype>
AdaGradSolver<Dtype>::AdaGradSolver(const SolverParameter& param, Device device, Handle& h,
                                    const std::string& source_name)
    : Solver<Dtype>(param, device, h, 1, source_name) {
  CREMA_REQUIRE(param.momentum() == 0, who(source_name),
                ": momentum cannot be used with AdaGrad (got ", param.momentum(), ")");
}

template <typename Dtype>
void AdaGradSolver<Dtype>::compute_update_value(int id, Dtype rate) {
  // Per-weight step sizes shrink with the sum of all past squared gradients.
  Tensor<Dtype>& p = this->param_tensor(id);
  Tensor<Dtype>& h = this->history(0, id);
  Tensor<Dtype>& u = this->temp(id);
  const Dtype local_rate = rate * this->net().params_lr()[id];
  const auto t = this->dtype();
  const int64_t n = p.count();
  prim::elt_mul(this->h_, t, n, p.diff(), p.diff(), u.mutable_data());
  prim::axpy(this->h_, t, n, 1.0, u.data(), h.mutable_data());
  prim::elt_sqrt(this->h_, t, n, h.data(), u.mutable_data());
  prim::elt_add_scalar(this->h_, t, n, double(Dtype(this->param_.delta())), u.mutable_data());
  prim::elt_div(this->h_, t, n, p.diff(), u.data(), u.mutable_data());
  prim::axpby(this->h_, t, n, double(local_rate), u.data(), 0.0, p.mutable_diff());
}

template <typename Dtype>
RmsPropSolver<Dtype>::RmsPropSolver(const SolverParameter& param, Device device, Handle& h,
                                    const std::string& source_name)
    : Solver<Dtype>(param, device, h, 1, source_name) {
  CREMA_REQUIRE(param.momentum() == 0, who(source_name),
                ": momentum cannot be used with RMSProp (got ", param.momentum(), ")");
  CREMA_REQUIRE(param.rms_decay() >= 0 && param.rms_decay() <= 1, who(source_name),
                ": rms_decay must be in [0, 1], got ", param.rms_decay());
}

template <typename Dtype>
void RmsPropSolver<Dtype>::compute_update_value(int id, Dtype rate) {
  // Like AdaGrad with a decaying (not growing) mean of squared gradients.
  Tensor<Dtype>& p = this->param_tensor(id);
  Tensor<Dtype>& h = this->history(0, id);
  Tensor<Dtype>& u = this->temp(id);
  const Dtype local_rate = rate * this->net().params_lr()[id];
  const Dtype decay = this->param_.rms_decay();
  const auto t = this->dtype();
  const int64_t n = p.count();
  prim::elt_mul(this->h_, t, n, p.diff(), p.diff(), u.mutable_data());
  prim::axpby(this->h_, t, n, double(Dtype(1) - decay), u.data(), double(decay), h.mutable_data());
  prim::elt_sqrt(this->h_, t, n, h.data(), u.mutable_data());
  prim::elt_add_scalar(this->h_, t, n, double(Dtype(this->param_.delta())), u.mutable_data());
  prim::elt_div(this->h_, t, n, p.diff(), u.data(), u.mutable_data());
  prim::axpby(this->h_, t, n, double(local_rate), u.data(), 0.0, p.mutable_diff());
}

template <typename Dtype>
void AdaDeltaSolver<Dtype>::compute_update_value(int id, Dtype rate) {
  // The step is the gradient scaled by RMS(past updates) / RMS(past gradients), so its units
  // match the weights'; history set 0 holds E[g^2], set 1 holds E[dx^2].
  Tensor<Dtype>& p = this->param_tensor(id);
  Tensor<Dtype>& hg = this->history(0, id);
  Tensor<Dtype>& hx = this->history(1, id);
  Tensor<Dtype>& u = this->temp(id);
  const Dtype local_rate = rate * this->net().params_lr()[id];
  const Dtype momentum = this->param_.momentum();
  const double delta = double(Dtype(this->param_.delta()));
  const auto t = this->dtype();
  const int64_t n = p.count();
  auto& h = this->h_;
  // E[g^2] = momentum * E[g^2] + (1 - momentum) * g^2
  prim::elt_mul(h, t, n, p.diff(), p.diff(), u.mutable_data());
  prim::axpby(h, t, n, double(Dtype(1) - momentum), u.data(), double(momentum), hg.mutable_data());
  // ratio = (E[dx^2] + delta) / (E[g^2] + delta) in u; delta keeps both sides positive.
  if (denom_.size() <= size_t(id)) denom_.resize(size_t(id) + 1);
  if (!denom_[id]) denom_[id] = std::make_unique<Tensor<Dtype>>(p.shape(), this->device_);
  Tensor<Dtype>& denom = *denom_[id];
  prim::axpby(h, t, n, 1.0, hg.data(), 0.0, denom.mutable_data());
  prim::elt_add_scalar(h, t, n, delta, denom.mutable_data());
  prim::axpby(h, t, n, 1.0, hx.data(), 0.0, u.mutable_data());
  prim::elt_add_scalar(h, t, n, delta, u.mutable_data());
  prim::elt_div(h, t, n, u.data(), denom.data(), u.mutable_data());
  prim::elt_sqrt(h, t, n, u.data(), u.mutable_data());
  // g = g * sqrt(ratio); E[dx^2] = momentum * E[dx^2] + (1 - momentum) * g^2; g = r * g
  prim::elt_mul(h, t, n, p.diff(), u.data(), p.mutable_diff());
  prim::elt_mul(h, t, n, p.diff(), p.diff(), u.mutable_data());
  prim::axpby(h, t, n, double(Dtype(1) - momentum), u.data(), double(momentum), hx.mutable_data());
  prim::scal(h, t, n, double(local_rate), p.mutable_diff());
}

template <typename Dtype>
void AdamSolver<Dtype>::compute_update_value(int id, Dtype rate) {
  // Bias-corrected first and second moment estimates (Kingma & Ba); set 0 holds m, set 1 v.
  Tensor<Dtype>& p = this->param_tensor(id);
  Tensor<Dtype>& m = this->history(0, id);
  Tensor<Dtype>& v = this->history(1, id);
  Tensor<Dtype>& u = this->temp(id);
  const Dtype local_rate = rate * this->net().params_lr()[id];
  const Dtype beta1 = this->param_.momentum();
  const Dtype beta2 = this->param_.momentum2();
  const int step = this->iter() + 1;
  const Dtype correction = std::sqrt(Dtype(1) - Dtype(std::pow(double(beta2), step))) /
                           (Dtype(1) - Dtype(std::pow(double(beta1), step)));
  const auto t = this->dtype();
  const int64_t n = p.count();
  auto& h = this->h_;
  prim::axpby(h, t, n, double(Dtype(1) - beta1), p.diff(), double(beta1), m.mutable_data());
  prim::elt_mul(h, t, n, p.diff(), p.diff(), u.mutable_data());
  prim::axpby(h, t, n, double(Dtype(1) - beta2), u.data(), double(beta2), v.mutable_data());
  prim::elt_sqrt(h, t, n, v.data(), u.mutable_data());
  prim::elt_add_scalar(h, t, n, double(Dtype(this->param_.delta())), u.mutable_data());
  prim::elt_div(h, t, n, m.data(), u.data(), u.mutable_data());
  prim::axpby(h, t, n, double(local_rate * correction), u.data(), 0.0, p.mutable_diff());
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
