// The solver update of one learnable parameter as ONE pass over its elements (one kernel on
// CUDA): normalize, regularize, the rule's step, and apply. With w the weights, g the gradient
// (the diff; left holding the step, as Caffe leaves it), h and h2 the rule's history, r the
// local rate:
//
//   g = g * grad_scale                                   (1 / iter_size)
//   g = g + decay * w        (L2)   or   g + decay * sign(w)   (L1)
//   SGD:      h = r * g + momentum * h;                        g = h
//   Nesterov: h' = r * g + momentum * h;  g = (1 + momentum) * h' - momentum * h;  h = h'
//   AdaGrad:  h = g^2 + h;                                     g = r * (g / (sqrt(h) + delta))
//   RMSProp:  h = (1 - rms_decay) * g^2 + rms_decay * h;       g = r * (g / (sqrt(h) + delta))
//   AdaDelta: h = (1 - momentum) * g^2 + momentum * h;
//             g = g * sqrt((h2 + delta) / (h + delta));
//             h2 = (1 - momentum) * g^2 + momentum * h2;       g = r * g
//   Adam:     m = (1 - b1) * g + b1 * m;  v = (1 - b2) * g^2 + b2 * v   (m = h, v = h2)
//             g = r_adam * (m / (sqrt(v) + delta)),  r_adam = r * sqrt(1 - b2^t) / (1 - b1^t)
//   w = w - g
//
// Each rule rounds in the order written, which is the order of Caffe's chain of BLAS calls, so
// the fused pass matches Caffe's results (CUDA may contract a * b + c into one FMA).
#pragma once

#include <cstdint>

#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::prim {

enum class UpdateRule { kSgd, kNesterov, kAdaGrad, kRmsProp, kAdaDelta, kAdam };
enum class Regularization { kNone, kL2, kL1 };

struct SolverUpdateDesc {
  UpdateRule rule = UpdateRule::kSgd;
  DataType dtype = DataType::kFloat32;
  int64_t count = 0;
  double grad_scale = 1.0;  // 1 / iter_size
  Regularization regularization = Regularization::kNone;
  double decay = 0.0;      // weight_decay * decay_mult
  double rate = 0.0;       // learning rate * lr_mult (Adam: times its bias correction)
  double momentum = 0.0;   // SGD, Nesterov, AdaDelta; Adam's b1
  double momentum2 = 0.0;  // Adam's b2
  double rms_decay = 0.0;  // RMSProp
  double delta = 0.0;      // AdaGrad, RMSProp, AdaDelta, Adam
};

// History tensors the rule reads and writes: 1 (h) or 2 (h, h2).
int solver_update_history(UpdateRule rule);

// w, g, h: count elements each; h2 only for rules with two histories (else may be null).
void solver_update(Handle& h, const SolverUpdateDesc& d, void* w, void* g, void* hist, void* hist2);

// One parameter of a list update: its descriptor and tensors, as above.
struct SolverUpdateParam {
  SolverUpdateDesc desc;
  void* w = nullptr;
  void* g = nullptr;
  void* hist = nullptr;
  void* hist2 = nullptr;
};

// Every parameter of the list, all of one rule and dtype (a solver's step): the same results as
// one call per parameter, in fewer kernel launches on CUDA (one per 16 parameters).
void solver_update(Handle& h, const SolverUpdateParam* params, size_t count);

}  // namespace crema::prim
