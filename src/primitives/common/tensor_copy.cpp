// tensor_copy: view validation and the one device dispatcher.
#include "primitives/tensor_copy.h"

#include <string>

#include "primitives/common/dispatch.h"

namespace crema::prim {

// The implementations (tensor_copy_cpu.cpp, tensor_copy_cuda.cu), with the public signatures.
CREMA_BACKENDS(void tensor_copy(Handle& h, const ViewDesc& xd, const void* x, const ViewDesc& yd,
                                void* y, Blend blend);)

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
  if (xd.rank != yd.rank) fail("x is " + xd.sizes_string() + " but y is " + yd.sizes_string());
  for (int i = 0; i < xd.rank; ++i) {
    if (xd.size[i] != yd.size[i])
      fail("x is " + xd.sizes_string() + " but y is " + yd.sizes_string());
    if (yd.stride[i] == 0 && yd.size[i] > 1)
      fail("y repeats elements on axis " + std::to_string(i) + " (stride 0)");
  }
  if (xd.count() == 0) return;
  if (!x || !y) fail("null data pointer");
  CREMA_DISPATCH(h, tensor_copy, h, xd, x, yd, y, blend);
}

}  // namespace crema::prim
