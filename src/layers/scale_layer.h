// Scale layer (Caffe's Scale): multiplies bottom[0] by a scale broadcast over it, optionally
// adding a bias (bias_term). The scale is a learned blob or a second bottom; its shape must equal
// bottom[0]'s shape over axes [axis, axis + its rank) (see BiasLayer for the view).
//   y[o, c, i] = x[o, c, i] * s[c] (+ b[c])
//   dx = dy * s[c]     ds[c] = sum_{o,i} dy * x     db[c] = sum_{o,i} dy
// scale_param: axis (1), num_axes (1; -1: all remaining, 0: scalar), filler (constant 1) of a
// learned scale; bias_term (false) with bias_filler (constant 0): the bias has the scale's shape
// and is the last blob. Works in place: the input is then kept for the scale gradient (by the
// layer before when it keeps a copy anyway: BatchNorm in training).
#pragma once

#include <memory>

#include "core/layer.h"
#include "primitives/scale_bias.h"

namespace crema {

template <typename Dtype>
class ScaleLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"Scale", between(1, 2), exactly(1)}; }
  // Backward reads the input for the scale gradient (in place: a kept copy instead) and a scale
  // given as bottom 1.
  DataUse bottom_data_use(int i) const override;
  DataUse top_data_use(int) const override { return DataUse::kForward; }
  // In place, the input is kept for the scale gradient: in `kept` when the layer before keeps it
  // (BatchNorm), else in a copy of this layer's own.
  bool use_kept_bottom(int j, const Tensor<Dtype>* kept) override;
  // bf16/f16 data with a learned scale; a scale that is a bottom stays f32 with its input.
  StorageSupport half_storage() const override {
    return learned_ ? StorageSupport::kUniform : StorageSupport::kNone;
  }
  // Channels last where a learned vector scales the channels of a 4-d input (N*H*W rows of C
  // values then).
  StorageSupport channels_last() const override {
    return per_channel_4d_ ? StorageSupport::kUniform : StorageSupport::kNone;
  }
  // Whether this layer multiplies axis 1 of its one input by a learned vector of `channels`
  // values (what BatchNorm can fuse); the bias is then blob bias_index(), if any.
  bool learned_per_channel(int64_t channels) const {
    return learned_ && axis_ == 1 && this->blobs_[0]->num_axes() == 1 &&
           this->blobs_[0]->count() == channels;
  }
  int bias_index() const { return bias_index_; }

 private:
  const Tensor<Dtype>& scale(const Tensors& bottom) const {
    return bottom.size() > 1 ? *bottom[1] : *this->blobs_[0];
  }

  int axis_ = 1;
  int bias_index_ = -1;          // blob index of the bias, -1 without bias_term
  bool per_channel_4d_ = false;  // set by reshape: learned_per_channel of a 4-d input
  prim::ScaleBiasDesc view_;
  std::unique_ptr<Tensor<Dtype>> x_copy_;      // the input, when running in place
  const Tensor<Dtype>* kept_input_ = nullptr;  // or the input as the layer before keeps it
  bool in_place_ = false;
  bool learned_ = false;  // the scale is blob 0, not bottom 1
};

}  // namespace crema
