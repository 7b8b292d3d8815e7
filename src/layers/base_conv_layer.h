// What Convolution and Deconvolution share (Caffe's BaseConvolutionLayer): reading
// convolution_param, the weight and bias blobs, the output-size rule and the descriptors of the
// one convolution both compute. A Deconvolution is the transpose of the convolution from its top
// back to its bottom, so the two differ only in which side is the convolution's input:
//   Convolution:   x = bottom, y = top;    weight K x C/g x R x S (K = num_output)
//   Deconvolution: x = top,    y = bottom; weight C x K/g x R x S (Caffe's layout)
// Each subclass writes its own forward and backward with these descriptors.
#pragma once

#include "core/layer.h"
#include "primitives/conv.h"

namespace crema {

template <typename Dtype>
class BaseConvLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;

  // `transposed`: a Deconvolution, whose bottom is the convolution's output.
  BaseConvLayer(const LayerParameter& param, Device device, bool transposed)
      : Layer<Dtype>(param, device), transposed_(transposed) {}

  // Reads convolution_param, validates it and creates and fills the weight (and bias) blobs.
  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  // Checks the bottoms, sizes the tops and sets x_desc_ / y_desc_.
  void reshape(const Tensors& bottom, const Tensors& top) override;

  // One top per bottom, all sharing the weights; the name says which direction (transposed_).
  LayerSignature signature() const override {
    return {transposed_ ? "Deconvolution" : "Convolution", at_least(1), at_least(1), true};
  }
  // Backward reads the input (filter gradient), never the output.
  DataUse bottom_data_use(int) const override { return DataUse::kBackward; }
  DataUse top_data_use(int) const override { return DataUse::kForward; }

 protected:
  // The top's shape for bottom x (checked against the filter: channels, kernel, padding).
  std::vector<int64_t> output_shape(const Tensor<Dtype>& x) const;
  // Whether backward computes the filter gradient on the handle's side stream
  // (Layer::weight_grad_beside; its multiply-adds: one per weight and output position).
  bool filter_grad_beside() const {
    return this->param_propagate_down(0) &&
           this->weight_grad_beside(double(filter_.count()) * y_desc_.n * y_desc_.h * y_desc_.w);
  }

  prim::ConvDesc conv_;      // with the layer's forward math
  prim::ConvDesc conv_bwd_;  // the same geometry with its backward math
  prim::FilterDesc filter_;
  prim::TensorDesc x_desc_, y_desc_;  // the convolution's input and output (see above)
  int channel_axis_ = 1;
  int num_output_ = 0;
  bool bias_term_ = true;
  const bool transposed_;
};

}  // namespace crema
