// Concat layer (Caffe's Concat): joins K >= 1 bottoms along concat_param.axis (or the legacy
// concat_dim); every other axis must agree. With each bottom viewed as (outer, a_k, inner):
//   y[o, off_k + j, i] = x_k[o, j, i],  off_k = a_0 + ... + a_{k-1}
//   dx_k[o, j, i] = dy[o, off_k + j, i]
// Both directions are one tensor_copy per bottom between a packed view and a window of the top.
#pragma once

#include "core/layer.h"

namespace crema {

template <typename Dtype>
class ConcatLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"Concat", at_least(1), exactly(1)}; }
  DataUse bottom_data_use(int) const override { return DataUse::kForward; }
  DataUse top_data_use(int) const override { return DataUse::kForward; }

 private:
  int axis_ = 1;
  int64_t outer_ = 0, inner_ = 0, total_ = 0;  // total_: the top's size along the axis
};

}  // namespace crema
