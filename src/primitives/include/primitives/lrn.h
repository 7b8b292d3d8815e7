// Local Response Normalization (Caffe's LRN, cuDNN's LRN/DivisiveNormalization), forward and
// backward, on packed NCHW tensors, or across channels also on packed channels-last (NHWC) ones.
// n = local_size (odd), r = (n - 1) / 2.
//
// kAcrossChannels: each value is divided by the energy of a window of n channels centred on its
// own channel, at the same pixel; channels outside [0, C) count as zeros.
//   scale_c = k + alpha / n * sum_{c' = c-r .. c+r} x_{c'}^2
//   y_c     = x_c * scale_c^-beta
//   dx_c    = dy_c * scale_c^-beta
//             - 2 * alpha * beta / n * x_c * sum_{c' = c-r .. c+r} dy_{c'} * y_{c'} / scale_{c'}
//
// kWithinChannel: the window is n x n pixels of the same channel, centred on the pixel. Caffe
// computes it as AVE pooling of x^2 (kernel n, stride 1, pad r); its divisor counts the padding,
// so it is always n * n, also at the borders:
//   scale_p = k + alpha / (n * n) * sum_{q in window(p), inside the image} x_q^2
//   y_p     = x_p * scale_p^-beta
//   dx_p    = dy_p * scale_p^-beta
//             - 2 * alpha * beta / (n * n) * x_p * sum_{q in window(p)} dy_q * y_q / scale_q
// (the window is symmetric, so p in window(q) iff q in window(p)). Caffe's layer ignores
// lrn_param.k here and uses 1; the primitive keeps k general and the layer passes 1.
//
// lrn_bwd recomputes the scale from x rather than keeping it from the forward pass: it costs one
// window sum, and the two calls share no hidden state. y must be what lrn_fwd produced from x
// with the default blend (alpha 1, beta 0); it enters the gradient as in Caffe. (The CUDA
// backend may recompute y from x in the same pass instead of reading it, which moves fewer
// bytes; the result is the same.)
//
// Blends: out = alpha * op + beta * out. No output may overlap an input, except that dx may be
// dy itself (the gradient is accumulated in place); scratch comes from the Handle workspace.
// local_size must be odd and positive. The scale must stay positive: k > 0 with alpha >= 0
// ensures it.
//
// The kernels form an implementation table (impl_table.h; docs/primitives.md lists the rows):
// LrnDesc::algo kAuto takes the first row that runs the call; another value forces its row, and
// a row that cannot run the call throws PrimError saying why.
#pragma once

#include <string>
#include <vector>

#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::prim {

enum class LrnMode { kAcrossChannels, kWithinChannel };

enum class LrnAlgo {
  kAuto,
  kAcrossLanes,  // cuda: across channels on images of one pixel (channels last), local_size up to 7
  kAcrossRing,   // cuda: across channels, local_size up to 7, the window in registers
  kAcross,       // cpu, cuda: across channels, any local_size
  kWithin,       // cpu, cuda: within a channel
};

struct LrnDesc {
  LrnMode mode = LrnMode::kAcrossChannels;
  int local_size = 5;
  double alpha = 1.0;
  double beta = 0.75;
  double k = 1.0;
  LrnAlgo algo = LrnAlgo::kAuto;
};

void lrn_fwd(Handle& h, const LrnDesc& ld, const TensorDesc& xd, const void* x,
             const TensorDesc& yd, void* y, Blend blend = {});
void lrn_bwd(Handle& h, const LrnDesc& ld, const TensorDesc& yd, const void* y, const void* dy,
             const TensorDesc& xd, const void* x, void* dx, Blend blend = {});

// "auto", "across_lanes", "across_ring", "across", "within"; lrn_algo_of is the inverse and throws
// PrimError for any other name. lrn_algos lists a device's rows in kAuto's order.
const char* lrn_algo_name(LrnAlgo a);
LrnAlgo lrn_algo_of(const std::string& name);
std::vector<LrnAlgo> lrn_algos(Device device);
// With the arguments of the call: nullptr where ld.algo runs it (kAuto always does), else why not.
const char* lrn_fwd_unsupported(Handle& h, const LrnDesc& ld, const TensorDesc& xd, const void* x,
                                const TensorDesc& yd, const void* y, Blend blend = {});
const char* lrn_bwd_unsupported(Handle& h, const LrnDesc& ld, const TensorDesc& yd, const void* y,
                                const void* dy, const TensorDesc& xd, const void* x, const void* dx,
                                Blend blend = {});

}  // namespace crema::prim
