// Eltwise layer (Caffe's Eltwise): combines K >= 2 bottoms of the same shape element by
// element with eltwise_param.operation:
//   SUM:  y = sum_k c_k x_k (coeff: one per bottom, default 1)   dx_k = c_k dy
//   PROD: y = prod_k x_k                                          dx_k = dy prod_{j != k} x_j
//         (stable_prod_grad false: dx_k = dy y / x_k, Caffe's faster form, wrong at x_k = 0)
//   MAX:  y = max_k x_k                                           dx_k = dy where x_k won
// The winner of MAX (the first maximal bottom) is stored in a device buffer by forward. SUM and
// MAX may run in place on bottom 0; PROD may not (its gradient reads the inputs).
// Fusion (Layer::absorb): an in-place ReLU on the top, as after every ResNet shortcut sum, runs
// inside this layer (eltwise's fused ReLU): y = relu(sum) in one pass, and backward writes every
// bottom's gradient from one read of dy and y. With backward, for SUM only.
#pragma once

#include <memory>

#include "core/layer.h"
#include "primitives/eltwise.h"

namespace crema {

template <typename Dtype>
class EltwiseLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"Eltwise", at_least(2), exactly(1)}; }
  // PROD's gradient reads the inputs (and the output); SUM's and MAX's (by its argmax) none.
  DataUse bottom_data_use(int) const override { return uses(); }
  // With the ReLU fused, backward reads y for the ReLU's mask.
  DataUse top_data_use(int) const override { return desc_.relu ? DataUse::kBackward : uses(); }
  bool absorb(Layer<Dtype>& next, bool backward) override;
  void release_absorbed() override { desc_.relu = false; }
  StorageSupport half_storage() const override { return StorageSupport::kUniform; }
  // Element-wise on flat memory: any layout its inputs and output share.
  StorageSupport channels_last() const override { return StorageSupport::kUniform; }

 private:
  DataUse uses() const {
    return desc_.op == prim::EltwiseOp::kProd ? DataUse::kBackward : DataUse::kForward;
  }

  prim::EltwiseDesc desc_;
  std::unique_ptr<prim::DeviceBuffer> argmax_;  // MAX: int32 winner per element
};

}  // namespace crema
