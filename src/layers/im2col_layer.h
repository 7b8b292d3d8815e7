// Im2col layer (Caffe's Im2col): exposes the patch matrix of a 2-d convolution as its top, using
// convolution_param's kernel, pad, stride and dilation. For x (N x C x H x W):
//   y[n, (c*R + r)*S + s, p, q] = x[n, c, p*sh - ph + r*dh, q*sw - pw + s*dw]  (0 outside x)
//   top shape N x (C*R*S) x P x Q, P = (H + 2*ph - dh*(R-1) - 1) / sh + 1, likewise Q.
// Gradient: dx = col2im(dy), the transpose (each input cell sums the dy entries that copied it).
// Axes before convolution_param.axis are folded into N.
#pragma once

#include "core/layer.h"
#include "primitives/im2col.h"

namespace crema {

template <typename Dtype>
class Im2colLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"Im2col", exactly(1), exactly(1)}; }
  DataUse bottom_data_use(int) const override { return DataUse::kForward; }
  DataUse top_data_use(int) const override { return DataUse::kForward; }

 private:
  prim::Im2colDesc desc_;
  int channel_axis_ = 1;
};

}  // namespace crema
