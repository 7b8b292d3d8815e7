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
// Fusion (Layer::absorb): an in-place ReLU (negative_slope 0) on the only top runs in the
// convolution's epilogue, with the bias: one pass over the output fewer. Backward then masks
// the top's gradient in place as the ReLU would, reading the output. In a forward-only net an
// in-place BatchNorm with stored statistics (and the per-channel Scale after it) folds into the
// weights and bias: every forward computes w' = a w and b' = a (b - mean) + beta per output
// channel (a = gamma / sqrt(var + eps); a pass over the weights, which follow any change to the
// layers' blobs) and convolves with them, so neither layer touches the activations; a ReLU after
// them still runs in the epilogue.
#pragma once

#include <memory>

#include "layers/base_conv_layer.h"

namespace crema {

template <typename Dtype>
class BatchNormLayer;

template <typename Dtype>
class ConvolutionLayer : public BaseConvLayer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  ConvolutionLayer(const LayerParameter& param, Device device)
      : BaseConvLayer<Dtype>(param, device, false) {}

  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;
  DataUse top_data_use(int) const override {
    return relu_ ? DataUse::kBackward : DataUse::kForward;
  }
  bool absorb(Layer<Dtype>& next, bool backward) override;
  void release_absorbed() override;
  // With one bottom, input and output each in their own type (the primitive converts); several
  // bottoms share the layer's descriptors, so then all of one type.
  StorageSupport half_storage() const override {
    return this->param_.bottom_size() == 1 ? StorageSupport::kMixed : StorageSupport::kUniform;
  }
  // Input and output each in its own layout (the convolution takes any), one of each; several
  // bottoms share one descriptor, so they stay NCHW.
  StorageSupport channels_last() const override {
    return this->param_.bottom_size() == 1 ? StorageSupport::kMixed : StorageSupport::kNone;
  }

 private:
  bool relu_ = false;  // a ReLU absorbed into the epilogue
  // A BatchNorm folded into the weights (it holds the absorbed Scale), and the folded weights.
  BatchNormLayer<Dtype>* bn_ = nullptr;
  std::unique_ptr<Tensor<Dtype>> folded_w_, folded_b_;
};

}  // namespace crema
