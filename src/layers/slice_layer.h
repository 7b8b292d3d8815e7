// Slice layer (Caffe's Slice): cuts its bottom along slice_param.axis (or the legacy slice_dim)
// into one piece per top, at the strictly increasing slice_point positions inside the axis, or
// into equal pieces when there are none. With piece k = [s_k, s_{k+1}) of the axis:
//   y_k[o, j, i] = x[o, s_k + j, i]
//   dx[o, s_k + j, i] = dy_k[o, j, i]        (the pieces cover x, so dx is fully written)
// The inverse of Concat, with the same tensor_copy views swapped.
#pragma once

#include "core/layer.h"

namespace crema {

template <typename Dtype>
class SliceLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"Slice", exactly(1), at_least(1)}; }
  DataUse bottom_data_use(int) const override { return DataUse::kForward; }
  DataUse top_data_use(int) const override { return DataUse::kForward; }

 private:
  int axis_ = 1;
  int64_t outer_ = 0, inner_ = 0, total_ = 0;
  std::vector<int64_t> starts_;  // per top, plus the axis size at the end
};

}  // namespace crema
