// Dropout layer (Caffe's Dropout, inverted dropout). In TRAIN each element is kept with
// probability 1 - r (r = dropout_param.dropout_ratio) and scaled so inference is the identity:
//   train: y = x * m * s,  dx = dy * m * s,  m ~ Bernoulli(1 - r), s = 1 / (1 - r)
//   test:  y = x,          dx = dy
// With scale_train false (where the schema has that field) training uses s = 1 and test
// multiplies by 1 - r instead, in both passes. The mask lives in a device buffer between
// forward and backward; it is drawn from the Handle's seeded generator. Works in place.
#pragma once

#include "core/layer.h"
#include "primitives/dropout.h"

namespace crema {

template <typename Dtype>
class DropoutLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"Dropout", exactly(1), exactly(1)}; }
  // Backward reads the mask only.
  DataUse bottom_data_use(int) const override { return DataUse::kForward; }
  DataUse top_data_use(int) const override { return DataUse::kForward; }
  // Each training forward draws a new mask (the handle's counter moves on the host).
  const char* not_replayable() const override {
    return this->phase() == TRAIN ? "draws a new mask every step" : nullptr;
  }

 private:
  // y = scale * x for the TEST pass, in place or not.
  void scaled_copy(Handle& h, double scale, const Dtype* x, Dtype* y) const;

  prim::DropoutDesc desc_;
  prim::DeviceBuffer mask_;
};

}  // namespace crema
