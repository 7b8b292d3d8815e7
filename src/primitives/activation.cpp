// Activations: descriptor validation and the one device dispatcher.
#include "primitives/activation.h"

#include <string>

namespace crema::prim {

// The CPU implementation (activation_cpu.cpp) has the public signatures.
namespace cpu {
void act_fwd(Handle& h, const ActDesc& ad, const TensorDesc& xd, const void* x,
             const TensorDesc& yd, void* y, Blend blend);
void act_bwd(Handle& h, const ActDesc& ad, const TensorDesc& yd, const void* y, const void* dy,
             const TensorDesc& xd, const void* x, void* dx, Blend blend);
}  // namespace cpu

namespace {

std::string dims(const TensorDesc& d) {
  return std::to_string(d.n) + "x" + std::to_string(d.c) + "x" + std::to_string(d.h) + "x" +
         std::to_string(d.w);
}

// The kernels walk count() contiguous elements, so both tensors must be packed and the same
// shape and type; a strided view would silently read the wrong elements.
void check_pair(const char* op, const ActDesc& ad, const TensorDesc& xd, const TensorDesc& yd) {
  if (ad.mode != ActMode::kRelu && ad.mode != ActMode::kSigmoid && ad.mode != ActMode::kTanh)
    throw PrimError(std::string(op) + ": unknown activation mode");
  if (xd.n < 0 || xd.c < 0 || xd.h < 0 || xd.w < 0)
    throw PrimError(std::string(op) + ": negative size " + dims(xd));
  if (xd.dtype != yd.dtype)
    throw PrimError(std::string(op) + ": x is " + dtype_name(xd.dtype) + " but y is " +
                    dtype_name(yd.dtype));
  if (xd.n != yd.n || xd.c != yd.c || xd.h != yd.h || xd.w != yd.w)
    throw PrimError(std::string(op) + ": x is " + dims(xd) + " but y is " + dims(yd));
  if (!xd.is_packed_nchw() || !yd.is_packed_nchw())
    throw PrimError(std::string(op) + ": tensors must be packed NCHW");
}

}  // namespace

void act_fwd(Handle& h, const ActDesc& ad, const TensorDesc& xd, const void* x,
             const TensorDesc& yd, void* y, Blend blend) {
  check_pair("act_fwd", ad, xd, yd);
  if (xd.count() == 0) return;
  if (!x || !y) throw PrimError("act_fwd: null x or y");
  if (h.device() == Device::kCPU) return cpu::act_fwd(h, ad, xd, x, yd, y, blend);
  throw PrimError("act_fwd: CUDA backend not built yet");
}

void act_bwd(Handle& h, const ActDesc& ad, const TensorDesc& yd, const void* y, const void* dy,
             const TensorDesc& xd, const void* x, void* dx, Blend blend) {
  check_pair("act_bwd", ad, xd, yd);
  if (xd.count() == 0) return;
  if (!dy || !dx) throw PrimError("act_bwd: null dy or dx");
  // ReLU's gradient depends on the sign of the input; sigmoid and tanh on the output only.
  if (ad.mode == ActMode::kRelu ? !x : !y)
    throw PrimError(std::string("act_bwd: ") +
                    (ad.mode == ActMode::kRelu ? "relu needs x" : "sigmoid/tanh need y"));
  if (h.device() == Device::kCPU) return cpu::act_bwd(h, ad, yd, y, dy, xd, x, dx, blend);
  throw PrimError("act_bwd: CUDA backend not built yet");
}

}  // namespace crema::prim
