// Filter layer (Caffe's Filter): keeps the batch items whose selector is non-zero. Bottoms are
// K data tensors (N, ...) and, last, the selector with N values (shape (N) or (N, 1, ...));
// tops are the K filtered tensors (S, ...), S = number of selected items, in batch order:
//   y_k[s] = x_k[sel_s]
//   dx_k[n] = dy_k[s] where n = sel_s, 0 for items not selected
// The top size depends on the selector's values: reshape sizes the tops for the whole batch
// (the selector has no data yet at setup, as in Caffe's first reshape) and forward resizes them
// to S. The selector gets a zero gradient (the output is piecewise constant in it).
#pragma once

#include <memory>

#include "core/layer.h"

namespace crema {

template <typename Dtype>
class FilterLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"Filter", at_least(2), at_least(1)}; }
  const char* not_replayable() const override {
    return "waits for the GPU to count the items it keeps";
  }
  bool allow_force_backward(int bottom_index) const override {
    return bottom_index + 1 < int(this->param_.bottom_size());
  }

 private:
  int64_t n_ = 0, selected_ = 0;
  std::unique_ptr<Tensor<Dtype>> indices_;  // the selected items, as values of Dtype
};

}  // namespace crema
