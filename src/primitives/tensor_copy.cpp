// tensor_copy: view validation and the device dispatcher. The CPU body lives in
// tensor_copy_cpu.cpp; the CUDA backend is not built yet.
#include "primitives/tensor_copy.h"

#include <string>

namespace crema::prim {

// Defined in tensor_copy_cpu.cpp; only this dispatcher calls it.
namespace cpu {
void tensor_copy(const ViewDesc& xd, const void* x, const ViewDesc& yd, void* y, Blend blend);
}  // namespace cpu

namespace {

[[noreturn]] void fail(const std::string& why) { throw PrimError("tensor_copy: " + why); }

void check_view(const char* name, const ViewDesc& d) {
  if (d.rank < 0 || d.rank > ViewDesc::kMaxDims)
    fail(std::string(name) + " has rank " + std::to_string(d.rank) + ", expected 0.." +
         std::to_string(ViewDesc::kMaxDims));
  for (int i = 0; i < d.rank; ++i)
    if (d.size[i] < 0 || d.stride[i] < 0)
      fail(std::string(name) + " axis " + std::to_string(i) + " has a negative size or stride");
}

}  // namespace

void tensor_copy(Handle& h, const ViewDesc& xd, const void* x, const ViewDesc& yd, void* y,
                 Blend blend) {
  check_view("x", xd);
  check_view("y", yd);
  if (xd.dtype != yd.dtype)
    fail(std::string("x is ") + dtype_name(xd.dtype) + " but y is " + dtype_name(yd.dtype));
  if (xd.rank != yd.rank) fail("x is " + xd.sizes_string() + " but y is " + yd.sizes_string());
  for (int i = 0; i < xd.rank; ++i) {
    if (xd.size[i] != yd.size[i])
      fail("x is " + xd.sizes_string() + " but y is " + yd.sizes_string());
    if (yd.stride[i] == 0 && yd.size[i] > 1)
      fail("y repeats elements on axis " + std::to_string(i) + " (stride 0)");
  }
  if (xd.count() == 0) return;
  if (!x || !y) fail("null data pointer");
  if (h.device() != Device::kCPU) fail("CUDA backend not built yet");
  cpu::tensor_copy(xd, x, yd, y, blend);
}

}  // namespace crema::prim
