// Pooling layer (Caffe's Pooling): max or average pooling over 2-d windows of an N x C x H x W
// input, computed by the pool primitives.
//   P = ceil((H + 2*ph - R) / sh) + 1 (round_mode CEIL, the default; FLOOR rounds down), minus
//       one when the last window would start in the bottom/right padding (Caffe's clip rule).
//   max:     y = max over the window clipped to the input; dx gets dy at the first maximum.
//   average: y = sum over the clipped window / window size clipped to the padded input;
//            dx spreads dy / size evenly over the window.
// global_pooling makes the window the whole H x W. STOCHASTIC pooling and the max-mask second
// top are not supported (the primitives recompute the argmax from x and y instead of storing it).
#pragma once

#include "core/layer.h"
#include "primitives/pool.h"

namespace crema {

template <typename Dtype>
class PoolingLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"Pooling", exactly(1), between(1, 2)}; }
  // Caffe allows a mask top for MAX; accepting the count lets layer_setup say why it is refused.
  // MAX's gradient reads the input and the output; AVE's neither.
  DataUse bottom_data_use(int) const override { return uses(); }
  DataUse top_data_use(int) const override { return uses(); }
  StorageSupport half_storage() const override { return StorageSupport::kUniform; }
  // Input and output each in its own layout (the pooling rows read any strides).
  StorageSupport channels_last() const override { return StorageSupport::kMixed; }

 private:
  DataUse uses() const {
    return pool_.mode == prim::PoolMode::kMax ? DataUse::kBackward : DataUse::kForward;
  }

  prim::PoolDesc pool_;
  prim::TensorDesc x_desc_, y_desc_;
  bool global_ = false;
  bool ceil_mode_ = true;
};

}  // namespace crema
