// Split layer (Caffe's Split): one bottom feeding several consumers. Every top shares the
// bottom's data; each keeps its own diff, and backward sums them:
//   y_i = x,  dx = sum_i dy_i
// The Net inserts it where one top is used by several layers.
#pragma once

#include "core/layer.h"

namespace crema {

template <typename Dtype>
class SplitLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle&, const Tensors&, const Tensors&) override {}
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"Split", exactly(1), at_least(1)}; }
  // Every top is a view of the bottom's data; backward sums the tops' diffs.
  DataUse bottom_data_use(int) const override { return DataUse::kForward; }
  DataUse top_data_use(int) const override { return DataUse::kForward; }
  int data_view_of(int) const override { return 0; }
  StorageSupport half_storage() const override { return StorageSupport::kUniform; }
  StorageSupport channels_last() const override { return StorageSupport::kUniform; }
};

}  // namespace crema
