// Deconvolution layer (Caffe's Deconvolution): the transpose of a convolution, computed by the
// conv primitives with the roles of input and output swapped. For input x (N x C x H x W),
// weight w stored as Caffe stores it, C x K/g x R x S (K = num_output), and bias b (K):
//   y = conv_bwd_data(w, x) + b, i.e. y[n, k, i, j] = b[k] + sum over (c, p, q, r, s) with
//       i = p*sh - ph + r*dh, j = q*sw - pw + s*dw of x[n, c, p, q] * w[c, k', r, s]
//   output size H' = sh*(H - 1) + dh*(R - 1) + 1 - 2*ph, likewise W'.
// The weight is the filter of the convolution from y back to x (its K x C/g x R x S is our
// C x K/g x R x S), so the passes map as:
//   dx = conv_fwd(dy, w) (overwritten);  dw += conv_bwd_filter(x_conv = dy, dy_conv = x);
//   db[k] += sum_{n,i,j} dy[n, k, i, j].
// Axes before convolution_param.axis are folded into N; several bottoms share the weights.
#pragma once

#include "layers/base_conv_layer.h"

namespace crema {

template <typename Dtype>
class DeconvolutionLayer : public BaseConvLayer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  DeconvolutionLayer(const LayerParameter& param, Device device)
      : BaseConvLayer<Dtype>(param, device, true) {}

  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;
};

}  // namespace crema
