// Pooling, max and average, forward and backward, with Caffe's conventions.
//
// Output size: P = ceil((H + 2*ph - R) / sh) + 1 with Caffe's CEIL rounding (the default) or
// floor with FLOOR; when padded, the last window must start inside the input plus the top/left
// pad, else P is reduced by one (Caffe's clip rule).
//   max:     y = max over the window clipped to the input (pads never win); dx gets dy at the
//            first maximum in scan order (row-major), recomputed from x and y.
//   average: y = sum over the window clipped to the input / size of the window clipped to the
//            padded input (Caffe counts pad cells, not cells past the padded edge);
//            kAverageExcludePad divides by the number of input cells instead (cuDNN's
//            EXCLUDE_PADDING).
//   A window that covers no input cell (CEIL rounding with stride > kernel and no pad, where
//   Caffe's result is undefined) yields 0 and passes no gradient.
// Both blend: out = alpha * op + beta * out. pool_bwd's y must be the pool_fwd result computed
// with alpha = 1, beta = 0.
//
// Implementations: an ordered table of rows per device (pool_impl.h), each with its support rule.
// PoolDesc::algo kAuto takes the first row that runs the problem and is not known to be slower
// on it (CREMA_VERBOSE=1 logs the choice and every row passed over, with the reason); any other
// value forces that row and throws PrimError, with the row's reason, where it cannot run the
// problem. docs/primitives.md lists the rows.
#pragma once

#include <string>
#include <vector>

#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::prim {

enum class PoolMode { kMax, kAverage, kAverageExcludePad };

enum class PoolAlgo {
  kAuto,
  kDisjoint,  // cpu: max backward of windows that tile without overlap (stride = kernel, no pad)
  kDirect,    // cpu: any window
  kGlobal,    // cuda: one window per plane
  kRows,      // cuda: 2/2 and 3/2 windows by row vectors
  kPlanes,    // cuda: small packed planes staged in shared memory
  kLanes,     // cuda: max 3/1 windows with pad 1, narrow planes, a column per lane
  kLanesS2,   // cuda: max 3/2 windows, planes of at most 32 two-column blocks
  kSweep,     // cuda: square 2/2, 3/2 and 3/1 windows, a column walk with rows in registers
  kWindow,    // cuda: any window, a thread (or warp) per output; backward gathers
};

struct PoolDesc {
  PoolMode mode = PoolMode::kMax;
  int kernel_h = 1, kernel_w = 1;
  int pad_h = 0, pad_w = 0;
  int stride_h = 1, stride_w = 1;
  PoolAlgo algo = PoolAlgo::kAuto;
};

// "auto", "disjoint", "direct", "global", "rows", "planes", "lanes", "lanes_s2", "sweep",
// "window"; pool_algo_of is its inverse and throws PrimError for any other name.
const char* pool_algo_name(PoolAlgo a);
PoolAlgo pool_algo_of(const std::string& name);
// A device's rows in the order kAuto tries them.
std::vector<PoolAlgo> pool_algos(Device device);

// Output size of one dimension (ceil_mode true = Caffe's default CEIL); throws PrimError when
// the kernel is larger than the padded input or pad >= kernel.
int pool_out_dim(int in, int kernel, int pad, int stride, bool ceil_mode);

void pool_fwd(Handle& h, const PoolDesc& pd, const TensorDesc& xd, const void* x,
              const TensorDesc& yd, void* y, Blend blend = {});
void pool_bwd(Handle& h, const PoolDesc& pd, const TensorDesc& yd, const void* y, const void* dy,
              const TensorDesc& xd, const void* x, void* dx, Blend blend = {});

// With the arguments of the call: nullptr where pd.algo runs it (kAuto always does), else why
// not. Pointers count (rows that move 16-byte vectors need aligned data); the descriptors must
// be valid (pool_fwd would not throw for them).
const char* pool_fwd_unsupported(Handle& h, const PoolDesc& pd, const TensorDesc& xd, const void* x,
                                 const TensorDesc& yd, const void* y, Blend blend = {});
const char* pool_bwd_unsupported(Handle& h, const PoolDesc& pd, const TensorDesc& yd, const void* y,
                                 const void* dy, const TensorDesc& xd, const void* x,
                                 const void* dx, Blend blend = {});

}  // namespace crema::prim
