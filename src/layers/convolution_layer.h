// Convolution layer (Caffe's Convolution): 2-d cross-correlation with pad, stride, dilation and
// groups, computed by the conv primitives. For input x (N x C x H x W), weight w (K x C/g x R x S)
// and bias b (K):
//   y[n, k, p, q] = b[k] + sum_{c in group(k), r, s} x[n, c, p*sh - ph + r*dh, q*sw - pw + s*dw]
//                                                    * w[k, c', r, s]
//   P = (H + 2*ph - dh*(R-1) - 1) / sh + 1, likewise Q.
// Gradients: dx = conv_bwd_data(w, dy) (overwritten); dw += sum_{n,p,q} dy * x and
// db[k] += sum_{n,p,q} dy[n, k, p, q] (accumulated: the solver zeroes parameter diffs).
// Axes before convolution_param.axis are folded into N. Several bottoms share the weights, each
// producing its own top, as in Caffe; all bottoms must have the same shape.
#pragma once

#include "core/layer.h"
#include "primitives/conv.h"

namespace crema {

template <typename Dtype>
class ConvolutionLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using typename Layer<Dtype>::DataUse;
  using Layer<Dtype>::Layer;

  // Reads convolution_param, validates it and creates and fills the weight (and bias) blobs.
  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  const char* type() const override { return "Convolution"; }
  int min_num_bottom() const override { return 1; }
  int min_num_top() const override { return 1; }
  bool equal_num_bottom_top() const override { return true; }
  // Backward reads the input (filter gradient), never the output.
  DataUse bottom_data_use(int) const override { return DataUse::kBackward; }
  DataUse top_data_use(int) const override { return DataUse::kForward; }

 private:
  prim::ConvDesc conv_;      // the forward pass, with the layer's forward math
  prim::ConvDesc conv_bwd_;  // the same geometry with its backward math
  prim::FilterDesc filter_;
  prim::TensorDesc x_desc_, y_desc_;
  int channel_axis_ = 1;
  int num_output_ = 0;
  bool bias_term_ = true;
};

}  // namespace crema
