// Flatten layer (Caffe's Flatten): merges axes [flatten_param.axis, flatten_param.end_axis] into
// one. The top is a reshaped view: it shares the bottom's data and diff, so forward and backward
// move nothing (y = x, dx = dy).
#pragma once

#include "core/layer.h"

namespace crema {

template <typename Dtype>
class FlattenLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using typename Layer<Dtype>::DataUse;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle&, const Tensors&, const Tensors&) override {}
  void backward(Handle&, const Tensors&, const std::vector<bool>&, const Tensors&) override {}

  const char* type() const override { return "Flatten"; }
  int exact_num_bottom() const override { return 1; }
  int exact_num_top() const override { return 1; }
  // The top is a view of the bottom's data and diff.
  DataUse bottom_data_use(int) const override { return DataUse::kForward; }
  DataUse top_data_use(int) const override { return DataUse::kForward; }
  int data_view_of(int) const override { return 0; }
  int diff_view_of(int) const override { return 0; }
};

}  // namespace crema
