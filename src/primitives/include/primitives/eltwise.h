// Element-wise combination of K >= 1 inputs of n elements each (Caffe's Eltwise):
//   kSum:  y = sum_k c_k x_k                      (c_k = coeff[k], 1 when coeff is empty)
//   kProd: y = prod_k x_k
//   kMax:  y = max_k x_k, argmax = the first k reaching the max (int32, one per element)
// With relu (a ReLU fused after the operation, Caffe's Eltwise then an in-place ReLU; negative
// slope s >= 0): y = v > 0 ? v : s v of the operation's value v, and for kSum only
//   dx_k = c_k dz,  dz = y > 0 ? dy : s dy        (y as a default-blend forward wrote it)
// Gradients of input k (eltwise_bwd writes every input whose dx pointer is not null):
//   kSum:  dx_k = c_k dy
//   kProd: dx_k = dy * prod_{j != k} x_j          (stable_prod_grad, exact at x_k = 0)
//          dx_k = dy * y / x_k                     (otherwise: Caffe's fast form, inf at 0)
//   kMax:  dx_k = argmax == k ? dy : 0            (reads the argmax stored by eltwise_fwd)
// All outputs are blended: out = alpha * value + beta * out (beta == 0 never reads out); argmax
// is written as is. x and dx are host arrays of K device pointers. y may alias an input in
// eltwise_fwd, and dy may be dx[0] in eltwise_bwd (each element is read before it is written).
#pragma once

#include <cstdint>
#include <vector>

#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::prim {

enum class EltwiseOp { kSum, kProd, kMax };

struct EltwiseDesc {
  DataType dtype = DataType::kFloat32;
  EltwiseOp op = EltwiseOp::kSum;
  int64_t n = 0;              // elements per input
  int num_inputs = 0;         // K
  std::vector<double> coeff;  // kSum only: empty or K values
  bool stable_prod_grad = true;
  bool relu = false;  // fused ReLU after the operation
  double negative_slope = 0;
};

// argmax (n int32 values on the device) is written for kMax when not null.
void eltwise_fwd(Handle& h, const EltwiseDesc& ed, const void* const* x, void* y, int32_t* argmax,
                 Blend blend = {});
// y is read by the unstable kProd gradient and the fused ReLU's, x by kProd, argmax by kMax;
// others may be null.
void eltwise_bwd(Handle& h, const EltwiseDesc& ed, const void* const* x, const void* y,
                 const void* dy, const int32_t* argmax, void* const* dx, Blend blend = {});

}  // namespace crema::prim
