// MVN layer (Caffe's MVN): mean-variance normalization of each channel of each image (or of
// each whole image with across_channels), computed by the mvn primitives (formulas and
// gradients in primitives/mvn.h):
//   y = (x - mean) / (sigma + eps)     or, without normalize_variance, y = x - mean
// mvn_param: normalize_variance (true), across_channels (false), eps (1e-9). Any rank: axis 0
// is the image, axis 1 the channel, the rest the values normalized together. Not in place:
// backward recomputes the statistics from the input.
#pragma once

#include "core/layer.h"
#include "primitives/mvn.h"

namespace crema {

template <typename Dtype>
class MvnLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"MVN", exactly(1), exactly(1)}; }
  // Backward reads the input, never the output.
  DataUse bottom_data_use(int) const override { return DataUse::kBackward; }
  DataUse top_data_use(int) const override { return DataUse::kForward; }

 private:
  prim::MvnDesc mvn_;
  prim::TensorDesc desc_;
};

}  // namespace crema
