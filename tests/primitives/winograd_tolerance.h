// How close the `winograd` convolution rows come on the tests' integer data (|values| <= 3):
// their transforms hold fractions (1/6, 1/24), so they are exact only to the error bound
// conv_winograd.h documents, 2^-14 (fp32) or 2^-43 (fp64) of the magnitude an output sums: 9 per
// product it adds up, doubled for the tests' blends with alpha 2. kFind may pick the row wherever
// it runs.
#pragma once

#include "problems.h"
#include "test_util.h"

namespace crema::test {

struct WinogradTolerances {
  Tolerance y, dx, dw;
};

inline WinogradTolerances winograd_tolerances(const ConvProblem& pb, bool is_double) {
  const double unit = 2 * 9 * (is_double ? 0x1p-43 : 0x1p-14);
  const auto tol = [&](double products) { return Tolerance{unit * products, 0.0, true}; };
  const int p = prim::conv_out_dim(pb.h, pb.r, pb.pad_h, pb.stride_h, pb.dilation_h);
  const int q = prim::conv_out_dim(pb.w, pb.s, pb.pad_w, pb.stride_w, pb.dilation_w);
  return {tol(9.0 * (pb.c / pb.groups)), tol(9.0 * (pb.k / pb.groups)), tol(double(pb.n) * p * q)};
}

}  // namespace crema::test
