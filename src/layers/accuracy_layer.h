// Accuracy layer (Caffe's Accuracy): the fraction of positions whose label is among the top_k
// highest scores along accuracy_param.axis. Bottoms: scores (outer x C x inner around the axis)
// and labels (outer * inner values). Tops: the accuracy, and optionally the per-class accuracy
// (C values: each class's accuracy over the positions labelled with it).
//   accuracy = #{valid i : #{c : x[i, c] > x[i, label_i]} < top_k} / #valid
// Positions labelled accuracy_param.ignore_label are not valid. A score tied with the label's
// does not count against it. There is no gradient.
#pragma once

#include "core/layer.h"
#include "primitives/softmax.h"

namespace crema {

template <typename Dtype>
class AccuracyLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  // Refuses any propagate_down: accuracy is not differentiable.
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"Accuracy", exactly(2), between(1, 2)}; }
  const char* not_replayable() const override { return "waits for the GPU to check its labels"; }
  bool allow_force_backward(int) const override { return false; }
  DataUse bottom_data_use(int) const override { return DataUse::kForward; }
  DataUse top_data_use(int) const override { return DataUse::kForward; }

 private:
  prim::AccuracyDesc desc_;
};

}  // namespace crema
