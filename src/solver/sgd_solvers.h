// The update rules of Caffe's solvers, one small subclass each. g is the regularized gradient
// of one parameter (its diff), r = rate * lr_mult the local rate, h (and h2) its history, and
// the value left in g is subtracted from the weights:
//   SGD:      h = momentum * h + r * g;                            g = h
//   Nesterov: h' = momentum * h + r * g;  g = (1 + momentum) * h' - momentum * h;  h = h'
//   AdaGrad:  h = h + g^2;                                         g = r * g / (sqrt(h) + delta)
//   RMSProp:  h = rms_decay * h + (1 - rms_decay) * g^2;           g = r * g / (sqrt(h) + delta)
//   AdaDelta: h = momentum * h + (1 - momentum) * g^2;
//             g = g * sqrt((h2 + delta) / (h + delta));
//             h2 = momentum * h2 + (1 - momentum) * g^2;           g = r * g
//   Adam:     m = b1 * m + (1 - b1) * g;  v = b2 * v + (1 - b2) * g^2   (b1 = momentum,
//             b2 = momentum2, t = iter + 1);
//             g = r * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + delta)
// AdaDelta and Adam keep two history sets (h, h2 / m, v), stored set-major in snapshots.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "solver/solver.h"

namespace crema {

template <typename Dtype>
class SgdSolver : public Solver<Dtype> {
 public:
  SgdSolver(const SolverParameter& param, Device device, Handle& h,
            const std::string& source_name = "")
      : Solver<Dtype>(param, device, h, 1, source_name) {}
  const char* type() const override { return "SGD"; }

 protected:
  void describe_update(prim::SolverUpdateDesc& d) const override;
};

template <typename Dtype>
class NesterovSolver : public Solver<Dtype> {
 public:
  NesterovSolver(const SolverParameter& param, Device device, Handle& h,
                 const std::string& source_name = "")
      : Solver<Dtype>(param, device, h, 1, source_name) {}
  const char* type() const override { return "Nesterov"; }

 protected:
  void describe_update(prim::SolverUpdateDesc& d) const override;
};

template <typename Dtype>
class AdaGradSolver : public Solver<Dtype> {
 public:
  // Throws crema::Error when momentum is set: AdaGrad has none.
  AdaGradSolver(const SolverParameter& param, Device device, Handle& h,
                const std::string& source_name = "");
  const char* type() const override { return "AdaGrad"; }

 protected:
  void describe_update(prim::SolverUpdateDesc& d) const override;
};

template <typename Dtype>
class RmsPropSolver : public Solver<Dtype> {
 public:
  // Throws crema::Error when momentum is set or rms_decay is outside [0, 1].
  RmsPropSolver(const SolverParameter& param, Device device, Handle& h,
                const std::string& source_name = "");
  const char* type() const override { return "RMSProp"; }

 protected:
  void describe_update(prim::SolverUpdateDesc& d) const override;
};

template <typename Dtype>
class AdaDeltaSolver : public Solver<Dtype> {
 public:
  AdaDeltaSolver(const SolverParameter& param, Device device, Handle& h,
                 const std::string& source_name = "")
      : Solver<Dtype>(param, device, h, 2, source_name) {}
  const char* type() const override { return "AdaDelta"; }

 protected:
  void describe_update(prim::SolverUpdateDesc& d) const override;
};

template <typename Dtype>
class AdamSolver : public Solver<Dtype> {
 public:
  AdamSolver(const SolverParameter& param, Device device, Handle& h,
             const std::string& source_name = "")
      : Solver<Dtype>(param, device, h, 2, source_name) {}
  const char* type() const override { return "Adam"; }

 protected:
  void describe_update(prim::SolverUpdateDesc& d) const override;
};

}  // namespace crema
