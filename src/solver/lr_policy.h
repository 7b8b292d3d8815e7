// Learning-rate policies of Caffe's SGD solvers, selected by SolverParameter.lr_policy. With
// base_lr = b, iteration i and the solver's gamma, power, stepsize, stepvalue and max_iter:
//   fixed:     b
//   step:      b * gamma^floor(i / stepsize)
//   exp:       b * gamma^i
//   inv:       b * (1 + gamma * i)^(-power)
//   multistep: b * gamma^s, s = how many stepvalue entries i has reached (i >= stepvalue[s])
//   poly:      b * (1 - i / max_iter)^power
//   sigmoid:   b / (1 + exp(-gamma * (i - stepsize)))
// The solver stores the step position s (SolverState.current_step) so multistep resumes where it
// stopped; step recomputes it from i, as Caffe does.
#pragma once

#include <string>
#include <vector>

#include "crema.pb.h"

namespace crema {

// The known policy names, in the order above.
const std::vector<std::string>& lr_policies();

// Checks that param names a known policy and sets the fields that policy reads (stepsize > 0
// for step and sigmoid, gamma, power, stepvalue, max_iter > 0 for poly). Throws crema::Error.
void check_lr_policy(const SolverParameter& param);

// The learning rate at iteration iter. *current_step is the multistep position; it is advanced
// past every stepvalue that iter has reached (and set to floor(iter / stepsize) by step).
// Throws crema::Error for an unknown policy or a missing field.
double learning_rate(const SolverParameter& param, int iter, int* current_step);

}  // namespace crema
