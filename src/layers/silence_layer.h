// Silence layer (Caffe's Silence): consumes bottoms nobody else uses, so the Net does not report
// them as outputs. No tops; backward writes dx = 0 where asked, as the inputs influence nothing.
#pragma once

#include "core/layer.h"

namespace crema {

template <typename Dtype>
class SilenceLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void reshape(const Tensors&, const Tensors&) override {}
  void forward(Handle&, const Tensors&, const Tensors&) override {}
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"Silence", at_least(1), exactly(0)}; }
  DataUse bottom_data_use(int) const override { return DataUse::kForward; }
};

}  // namespace crema
