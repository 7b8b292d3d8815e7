// Reshape layer (Caffe's Reshape): changes the shape, not the data. The axes
// [reshape_param.axis, axis + num_axes) of the bottom (num_axes -1: to the end; a negative axis
// counts from the end, -1 meaning after the last axis) are replaced by reshape_param.shape,
// where a 0 copies the bottom's size at that position and one -1 is inferred so the element
// count is kept. The top shares the bottom's data and diff: y = x, dx = dy, nothing moves.
#pragma once

#include "core/layer.h"

namespace crema {

template <typename Dtype>
class ReshapeLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using typename Layer<Dtype>::DataUse;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle&, const Tensors&, const Tensors&) override {}
  void backward(Handle&, const Tensors&, const std::vector<bool>&, const Tensors&) override {}

  const char* type() const override { return "Reshape"; }
  int exact_num_bottom() const override { return 1; }
  int exact_num_top() const override { return 1; }
  // The top is a view of the bottom's data and diff.
  DataUse bottom_data_use(int) const override { return DataUse::kForward; }
  DataUse top_data_use(int) const override { return DataUse::kForward; }
  int data_view_of(int) const override { return 0; }
  int diff_view_of(int) const override { return 0; }
};

}  // namespace crema
