// Local Response Normalization: descriptor validation and the implementation table
// (lrn_impl.h).
#include "primitives/lrn.h"

#include <climits>
#include <cmath>
#include <cstdint>
#include <string>

#include "primitives/common/desc_checks.h"
#include "primitives/common/lrn_impl.h"

namespace crema::prim {
namespace {

// Each device's rows in order of preference (the kAuto walk).
const LrnImpl* const kTable[] = {
#ifdef CREMA_WITH_CUDA
    &cuda::kLrnAcrossLanes, &cuda::kLrnAcrossRing, &cuda::kLrnAcross, &cuda::kLrnWithin,
#endif
    &cpu::kLrnAcross,       &cpu::kLrnWithin,
};

constexpr std::pair<LrnAlgo, const char*> kNames[] = {
    {LrnAlgo::kAuto, "auto"},
    {LrnAlgo::kAcrossLanes, "across_lanes"},
    {LrnAlgo::kAcrossRing, "across_ring"},
    {LrnAlgo::kAcross, "across"},
    {LrnAlgo::kWithin, "within"},
};

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

// Whether two buffers of `bytes` bytes share any byte. The CPU kernels read inputs ahead of the
// output they write (the channel window), so an overlapping output would corrupt its own input.
bool overlap(const void* a, const void* b, size_t bytes) {
  const auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return pa < pb + bytes && pb < pa + bytes;
}

// "f32 across n5 x128x96x55x55".
std::string call_key(const LrnArgs& a) {
  return std::string(dtype_name(a.xd.dtype)) + (a.across() ? " across" : " within") + " n" +
         std::to_string(a.ld.local_size) + " x" + dims(a.xd);
}

// The tensors the kernels walk: packed NCHW as given, or, across channels, a packed channels-last
// pair as its channel_view: packed NCHW N*H*W images of 1 x 1 pixels (each pixel's channels are
// adjacent there, as a 1 x 1 image's are).
TensorDesc walked(const char* op, const LrnDesc& ld, const TensorDesc& xd, const TensorDesc& yd) {
  check_dense_pair(op, xd, yd);
  if (xd.is_packed_nchw() && yd.is_packed_nchw()) return xd;
  const std::string o(op);
  if (ld.mode != LrnMode::kAcrossChannels)
    throw PrimError(o + ": the within-channel mode takes packed NCHW tensors only");
  const ChannelView v = channel_view(xd);
  if (v.outer > INT_MAX)
    throw PrimError(o + ": " + std::to_string(v.outer) + " pixels on channels last (at most " +
                    std::to_string(INT_MAX) + ")");
  return TensorDesc::nchw(xd.dtype, int(v.outer), xd.c, 1, 1);
}

void run(Handle& h, const LrnArgs& a) {
  choose_row(kTable, h, a.ld.algo, a, a.forward ? "lrn_fwd" : "lrn_bwd", lrn_algo_name, [&] {
    return call_key(a);
  }).run(h, a);
}

}  // namespace

void lrn_fwd(Handle& h, const LrnDesc& ld, const TensorDesc& xd, const void* x,
             const TensorDesc& yd, void* y, Blend blend) {
  check_desc("lrn_fwd", ld);
  const TensorDesc d = walked("lrn_fwd", ld, xd, yd);
  if (xd.count() == 0) return;
  if (!x || !y) throw PrimError("lrn_fwd: null x or y");
  const size_t bytes = size_t(xd.count()) * dtype_size(xd.dtype);
  if (overlap(x, y, bytes)) throw PrimError("lrn_fwd: y overlaps x (no in-place LRN)");
  run(h, LrnArgs{true, ld, d, x, nullptr, nullptr, y, blend});
}

void lrn_bwd(Handle& h, const LrnDesc& ld, const TensorDesc& yd, const void* y, const void* dy,
             const TensorDesc& xd, const void* x, void* dx, Blend blend) {
  check_desc("lrn_bwd", ld);
  const TensorDesc d = walked("lrn_bwd", ld, xd, yd);
  if (xd.count() == 0) return;
  if (!x || !y || !dy || !dx) throw PrimError("lrn_bwd: null x, y, dy or dx");
  const size_t bytes = size_t(xd.count()) * dtype_size(xd.dtype);
  // dx == dy is fine (each dx element is written after its own dy element is read, and the
  // window of dy * y / scale is kept in the workspace); any other overlap is not.
  if (overlap(dx, x, bytes) || overlap(dx, y, bytes) || (dx != dy && overlap(dx, dy, bytes)))
    throw PrimError("lrn_bwd: dx overlaps x, y or part of dy");
  run(h, LrnArgs{false, ld, d, x, y, dy, dx, blend});
}

const char* lrn_algo_name(LrnAlgo a) { return name_in(kNames, a); }

LrnAlgo lrn_algo_of(const std::string& name) { return algo_in(kNames, name, "lrn"); }

std::vector<LrnAlgo> lrn_algos(Device device) { return table_algos(kTable, device); }

const char* lrn_fwd_unsupported(Handle& h, const LrnDesc& ld, const TensorDesc& xd, const void* x,
                                const TensorDesc& yd, const void* y, Blend blend) {
  const TensorDesc d = walked("lrn_fwd", ld, xd, yd);
  return forced_unsupported(kTable, h.device(), ld.algo,
                            LrnArgs{true, ld, d, x, nullptr, nullptr, const_cast<void*>(y), blend});
}

const char* lrn_bwd_unsupported(Handle& h, const LrnDesc& ld, const TensorDesc& yd, const void* y,
                                const void* dy, const TensorDesc& xd, const void* x, const void* dx,
                                Blend blend) {
  const TensorDesc d = walked("lrn_bwd", ld, xd, yd);
  return forced_unsupported(kTable, h.device(), ld.algo,
                            LrnArgs{false, ld, d, x, y, dy, const_cast<void*>(dx), blend});
}

}  // namespace crema::prim
