// Eltwise: descriptor validation and the one device dispatcher.
#include "primitives/eltwise.h"

#include <cmath>
#include <string>

#include "primitives/common/dispatch.h"

namespace crema::prim {

// The implementations (eltwise_cpu.cpp, eltwise_cuda.cu), with the public signatures.
CREMA_BACKENDS(void eltwise_fwd(Handle& h, const EltwiseDesc& ed, const void* const* x, void* y,
                                int32_t* argmax, Blend blend);
               void eltwise_bwd(Handle& h, const EltwiseDesc& ed, const void* const* x,
                                const void* y, const void* dy, const int32_t* argmax,
                                void* const* dx, Blend blend);)

namespace {

[[noreturn]] void fail(const char* op, const std::string& why) {
  throw PrimError(std::string(op) + ": " + why);
}

void check(const char* op, const EltwiseDesc& ed) {
  if (ed.op != EltwiseOp::kSum && ed.op != EltwiseOp::kProd && ed.op != EltwiseOp::kMax)
    fail(op, "unknown operation");
  if (ed.n < 0) fail(op, "negative length");
  if (ed.num_inputs < 1) fail(op, "needs at least one input");
  if (!ed.coeff.empty() && (ed.op != EltwiseOp::kSum || int(ed.coeff.size()) != ed.num_inputs))
    fail(op, "coefficients apply to kSum only, one per input (" + std::to_string(ed.num_inputs) +
                 "), got " + std::to_string(ed.coeff.size()));
  if (ed.relu && !(ed.negative_slope >= 0 && std::isfinite(ed.negative_slope)))
    fail(op, "the fused ReLU's negative_slope must be finite and >= 0, got " +
                 std::to_string(ed.negative_slope));
}

void check_inputs(const char* op, const EltwiseDesc& ed, const void* const* x) {
  if (!x) fail(op, "null input array");
  for (int k = 0; k < ed.num_inputs; ++k)
    if (!x[k]) fail(op, "input " + std::to_string(k) + " is null");
}

}  // namespace

void eltwise_fwd(Handle& h, const EltwiseDesc& ed, const void* const* x, void* y, int32_t* argmax,
                 Blend blend) {
  check("eltwise_fwd", ed);
  if (ed.n == 0) return;
  check_inputs("eltwise_fwd", ed, x);
  if (!y) fail("eltwise_fwd", "null output");
  CREMA_DISPATCH(h, eltwise_fwd, h, ed, x, y, argmax, blend);
}

void eltwise_bwd(Handle& h, const EltwiseDesc& ed, const void* const* x, const void* y,
                 const void* dy, const int32_t* argmax, void* const* dx, Blend blend) {
  check("eltwise_bwd", ed);
  if (ed.n == 0) return;
  if (!dy || !dx) fail("eltwise_bwd", "null gradient pointer");
  if (ed.op == EltwiseOp::kProd) check_inputs("eltwise_bwd", ed, x);
  if (ed.op == EltwiseOp::kMax && !argmax) fail("eltwise_bwd", "kMax needs the argmax");
  if (ed.op == EltwiseOp::kProd && !ed.stable_prod_grad && !y)
    fail("eltwise_bwd", "the unstable kProd gradient needs y");
  if (ed.relu && ed.op != EltwiseOp::kSum)
    fail("eltwise_bwd", "the fused ReLU's gradient is defined for kSum only");
  if (ed.relu && !y) fail("eltwise_bwd", "the fused ReLU's gradient needs y");
  CREMA_DISPATCH(h, eltwise_bwd, h, ed, x, y, dy, argmax, dx, blend);
}

}  // namespace crema::prim
