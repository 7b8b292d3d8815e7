// Local Response Normalization: descriptor validation and the one device dispatcher.
#include "primitives/lrn.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "primitives/dispatch.h"

namespace crema::prim {

// The implementations (lrn_cpu.cpp, lrn_cuda.cu), with the public signatures.
CREMA_BACKENDS(void lrn_fwd(Handle& h, const LrnDesc& ld, const TensorDesc& xd, const void* x,
                            const TensorDesc& yd, void* y, Blend blend);
               void lrn_bwd(Handle& h, const LrnDesc& ld, const TensorDesc& yd, const void* y,
                            const void* dy, const TensorDesc& xd, const void* x, void* dx,
                            Blend blend);)

namespace {

std::string dims(const TensorDesc& d) {
  return std::to_string(d.n) + "x" + std::to_string(d.c) + "x" + std::to_string(d.h) + "x" +
         std::to_string(d.w);
}

void check_desc(const char* op, const LrnDesc& ld) {
  const std::string o(op);
  if (ld.mode != LrnMode::kAcrossChannels && ld.mode != LrnMode::kWithinChannel)
    throw PrimError(o + ": unknown LRN mode");
  // An even window has no centre: Caffe refuses it too.
  if (ld.local_size < 1 || ld.local_size % 2 == 0)
    throw PrimError(o + ": local_size must be odd and positive, got " +
                    std::to_string(ld.local_size));
  if (!std::isfinite(ld.alpha) || !std::isfinite(ld.beta) || !std::isfinite(ld.k))
    throw PrimError(o + ": alpha, beta and k must be finite");
}

// The kernels walk packed NCHW planes, so both tensors must be packed and the same shape and
// type; a strided view would silently read the wrong elements.
void check_pair(const char* op, const TensorDesc& xd, const TensorDesc& yd) {
  const std::string o(op);
  if (xd.n < 0 || xd.c < 0 || xd.h < 0 || xd.w < 0)
    throw PrimError(o + ": negative size " + dims(xd));
  if (xd.dtype != yd.dtype)
    throw PrimError(o + ": x is " + dtype_name(xd.dtype) + " but y is " + dtype_name(yd.dtype));
  if (xd.n != yd.n || xd.c != yd.c || xd.h != yd.h || xd.w != yd.w)
    throw PrimError(o + ": x is " + dims(xd) + " but y is " + dims(yd));
  if (!xd.is_packed_nchw() || !yd.is_packed_nchw())
    throw PrimError(o + ": tensors must be packed NCHW");
}

// Whether two buffers of `bytes` bytes share any byte. The CPU kernels read inputs ahead of the
// output they write (the channel window), so an overlapping output would corrupt its own input.
bool overlap(const void* a, const void* b, size_t bytes) {
  const auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return pa < pb + bytes && pb < pa + bytes;
}

}  // namespace

void lrn_fwd(Handle& h, const LrnDesc& ld, const TensorDesc& xd, const void* x,
             const TensorDesc& yd, void* y, Blend blend) {
  check_desc("lrn_fwd", ld);
  check_pair("lrn_fwd", xd, yd);
  if (xd.count() == 0) return;
  if (!x || !y) throw PrimError("lrn_fwd: null x or y");
  const size_t bytes = size_t(xd.count()) * dtype_size(xd.dtype);
  if (overlap(x, y, bytes)) throw PrimError("lrn_fwd: y overlaps x (no in-place LRN)");
  CREMA_DISPATCH(h, lrn_fwd, h, ld, xd, x, yd, y, blend);
}

void lrn_bwd(Handle& h, const LrnDesc& ld, const TensorDesc& yd, const void* y, const void* dy,
             const TensorDesc& xd, const void* x, void* dx, Blend blend) {
  check_desc("lrn_bwd", ld);
  check_pair("lrn_bwd", xd, yd);
  if (xd.count() == 0) return;
  if (!x || !y || !dy || !dx) throw PrimError("lrn_bwd: null x, y, dy or dx");
  const size_t bytes = size_t(xd.count()) * dtype_size(xd.dtype);
  // dx == dy is fine (each dx element is written after its own dy element is read, and the
  // window of dy * y / scale is kept in the workspace); any other overlap is not.
  if (overlap(dx, x, bytes) || overlap(dx, y, bytes) || (dx != dy && overlap(dx, dy, bytes)))
    throw PrimError("lrn_bwd: dx overlaps x, y or part of dy");
  CREMA_DISPATCH(h, lrn_bwd, h, ld, yd, y, dy, xd, x, dx, blend);
}

}  // namespace crema::prim
