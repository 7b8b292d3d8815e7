// Reductions: view validation and the one device dispatcher.
#include "primitives/reduce.h"

#include <string>

#include "primitives/common/dispatch.h"

namespace crema::prim {

// The implementations (reduce_cpu.cpp, reduce_cuda.cu), with the public signatures.
CREMA_BACKENDS(void reduce_fwd(Handle& h, const ReduceDesc& rd, const ViewDesc& xd, const void* x,
                               const ViewDesc& yd, void* y, Blend blend);
               void reduce_bwd(Handle& h, const ReduceDesc& rd, const ViewDesc& xd, const void* x,
                               const ViewDesc& dyd, const void* dy, const ViewDesc& dxd, void* dx,
                               Blend blend);)

namespace {

[[noreturn]] void fail(const char* op, const std::string& why) {
  throw PrimError(std::string(op) + ": " + why);
}

void check_view(const char* op, const char* name, const ViewDesc& d) {
  if (d.rank < 0 || d.rank > ViewDesc::kMaxDims)
    fail(op, std::string(name) + " has rank " + std::to_string(d.rank));
  for (int i = 0; i < d.rank; ++i)
    if (d.size[i] < 0 || d.stride[i] < 0)
      fail(op, std::string(name) + " axis " + std::to_string(i) + " has a negative size or stride");
}

// y (or dy) must have x's rank with each size either x's or 1.
void check_reduced(const char* op, const ViewDesc& xd, const ViewDesc& yd) {
  check_view(op, "x", xd);
  check_view(op, "y", yd);
  if (xd.dtype != yd.dtype) fail(op, "x and y data types differ");
  bool ok = xd.rank == yd.rank;
  for (int i = 0; ok && i < xd.rank; ++i) ok = yd.size[i] == xd.size[i] || yd.size[i] == 1;
  if (!ok)
    fail(op, "y " + yd.sizes_string() + " is not a reduction of x " + xd.sizes_string() +
                 " (each axis must keep x's size or be 1)");
}

void check_op(const char* op, const ReduceDesc& rd) {
  if (rd.op != ReduceOp::kSum && rd.op != ReduceOp::kAsum && rd.op != ReduceOp::kSumSq &&
      rd.op != ReduceOp::kMean)
    fail(op, "unknown reduction");
}

}  // namespace

void reduce_fwd(Handle& h, const ReduceDesc& rd, const ViewDesc& xd, const void* x,
                const ViewDesc& yd, void* y, Blend blend) {
  check_op("reduce_fwd", rd);
  check_reduced("reduce_fwd", xd, yd);
  for (int i = 0; i < yd.rank; ++i)
    if (yd.stride[i] == 0 && yd.size[i] > 1 && yd.count() > 0)
      fail("reduce_fwd", "y repeats elements (stride 0)");
  if (yd.count() == 0) return;
  if (!y || (xd.count() > 0 && !x)) fail("reduce_fwd", "null data pointer");
  CREMA_DISPATCH(h, reduce_fwd, h, rd, xd, x, yd, y, blend);
}

void reduce_bwd(Handle& h, const ReduceDesc& rd, const ViewDesc& xd, const void* x,
                const ViewDesc& dyd, const void* dy, const ViewDesc& dxd, void* dx, Blend blend) {
  check_op("reduce_bwd", rd);
  check_reduced("reduce_bwd", xd, dyd);
  check_view("reduce_bwd", "dx", dxd);
  bool same = dxd.rank == xd.rank && dxd.dtype == xd.dtype;
  for (int i = 0; same && i < xd.rank; ++i) same = dxd.size[i] == xd.size[i];
  if (!same)
    fail("reduce_bwd", "dx " + dxd.sizes_string() + " differs from x " + xd.sizes_string());
  for (int i = 0; i < dxd.rank; ++i)
    if (dxd.stride[i] == 0 && dxd.size[i] > 1 && dxd.count() > 0)
      fail("reduce_bwd", "dx repeats elements (stride 0)");
  if (xd.count() == 0) return;
  const bool needs_x = rd.op == ReduceOp::kAsum || rd.op == ReduceOp::kSumSq;
  if (!dy || !dx || (needs_x && !x)) fail("reduce_bwd", "null data pointer");
  CREMA_DISPATCH(h, reduce_bwd, h, rd, xd, x, dyd, dy, dxd, dx, blend);
}

}  // namespace crema::prim
