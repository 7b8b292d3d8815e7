// The base of the layers whose one top is its one bottom under another shape (Flatten,
// Reshape): the top shares the bottom's data and diff, so forward and backward move nothing
// (y = x, dx = dy); a subclass only computes the top's shape.
#pragma once

#include "core/layer.h"

namespace crema {

template <typename Dtype>
class ViewLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void forward(Handle&, const Tensors&, const Tensors&) override {}
  void backward(Handle&, const Tensors&, const std::vector<bool>&, const Tensors&) override {}

  DataUse bottom_data_use(int) const override { return DataUse::kForward; }
  DataUse top_data_use(int) const override { return DataUse::kForward; }
  int data_view_of(int) const override { return 0; }
  int diff_view_of(int) const override { return 0; }
};

}  // namespace crema
