// Learning-rate policies (see lr_policy.h for the formulas). Rates are computed in double; the
// solver rounds them to its Dtype once.
#include "solver/lr_policy.h"

#include <cmath>

#include "core/errors.h"

namespace crema {
namespace {

std::string known_policies() {
  std::string s;
  for (const auto& p : lr_policies()) s += (s.empty() ? "" : ", ") + p;
  return s;
}

void require_field(bool present, const std::string& policy, const char* field) {
  CREMA_REQUIRE(present, "lr_policy \"", policy, "\" needs ", field);
}

}  // namespace

const std::vector<std::string>& lr_policies() {
  static const std::vector<std::string> kPolicies = {"fixed",     "step", "exp",    "inv",
                                                     "multistep", "poly", "sigmoid"};
  return kPolicies;
}

void check_lr_policy(const SolverParameter& param) {
  const std::string& policy = param.lr_policy();
  if (!param.has_lr_policy()) fail("solver names no lr_policy; known policies: ", known_policies());
  CREMA_REQUIRE(std::isfinite(param.base_lr()) && param.base_lr() >= 0,
                "base_lr must be finite and >= 0, got ", param.base_lr());
  if (policy == "fixed") return;
  if (policy == "step" || policy == "sigmoid") {
    require_field(param.stepsize() > 0, policy, "stepsize > 0");
    require_field(param.has_gamma(), policy, "gamma");
  } else if (policy == "exp") {
    require_field(param.has_gamma(), policy, "gamma");
  } else if (policy == "inv") {
    require_field(param.has_gamma(), policy, "gamma");
    require_field(param.has_power(), policy, "power");
  } else if (policy == "multistep") {
    require_field(param.has_gamma(), policy, "gamma");
    require_field(param.stepvalue_size() > 0, policy, "at least one stepvalue");
  } else if (policy == "poly") {
    require_field(param.has_power(), policy, "power");
    require_field(param.max_iter() > 0, policy, "max_iter > 0");
  } else {
    fail("unknown lr_policy \"", policy, "\"; known policies: ", known_policies());
  }
  // sigmoid falls from base_lr to 0 with a negative gamma (Caffe's decaying schedule).
  if (policy != "poly" && policy != "sigmoid")
    CREMA_REQUIRE(param.gamma() >= 0, "lr_policy \"", policy, "\": gamma < 0");
  // Values that can only be mistakes: a rate that grows without bound (negative power), steps
  // out of order.
  if (policy == "poly" || policy == "inv")
    CREMA_REQUIRE(param.power() >= 0, "lr_policy \"", policy, "\": power must be >= 0, got ",
                  param.power());
  if (policy == "multistep")
    for (int i = 0; i < param.stepvalue_size(); ++i)
      CREMA_REQUIRE(
          param.stepvalue(i) >= 0 && (i == 0 || param.stepvalue(i) > param.stepvalue(i - 1)),
          "lr_policy \"multistep\": stepvalue ", i + 1, " (", param.stepvalue(i),
          ") must be >= 0 and above the one before");
}

double learning_rate(const SolverParameter& param, int iter, int* current_step) {
  check_lr_policy(param);
  const std::string& policy = param.lr_policy();
  const double base = param.base_lr();
  const double gamma = param.gamma();
  const double i = iter;
  if (policy == "fixed") return base;
  if (policy == "step") {
    *current_step = iter / param.stepsize();
    return base * std::pow(gamma, *current_step);
  }
  if (policy == "exp") return base * std::pow(gamma, i);
  if (policy == "inv") return base * std::pow(1.0 + gamma * i, -double(param.power()));
  if (policy == "multistep") {
    // Caffe advances one step per call; calling every iteration that is the same as advancing
    // past every boundary reached, which also holds when the caller skips iterations.
    while (*current_step < param.stepvalue_size() && iter >= param.stepvalue(*current_step))
      ++*current_step;
    return base * std::pow(gamma, *current_step);
  }
  if (policy == "poly")
    return base * std::pow(1.0 - i / double(param.max_iter()), double(param.power()));
  // sigmoid: centered at stepsize, rising from 0 to base_lr (gamma > 0) or falling (gamma < 0).
  return base / (1.0 + std::exp(-gamma * (i - double(param.stepsize()))));
}

}  // namespace crema
