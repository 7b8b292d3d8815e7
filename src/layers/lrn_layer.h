// LRN layer (Caffe's LRN): local response normalization of an N x C x H x W input, computed by
// the lrn primitives (the formulas and their gradients are in primitives/lrn.h).
//   ACROSS_CHANNELS (default): scale = k + alpha / n * sum of x^2 over n neighbouring channels
//   WITHIN_CHANNEL:            scale = 1 + alpha / (n * n) * sum of x^2 over an n x n square
//                              (Caffe's average pooling of x^2, padded with zeros; Caffe ignores
//                              k in this mode, and so do we)
//   y = x * scale^-beta
// lrn_param: local_size n (odd, default 5), alpha (1), beta (0.75), k (1), norm_region. Not in
// place: backward needs both the input and the output.
#pragma once

#include "core/layer.h"
#include "primitives/lrn.h"

namespace crema {

template <typename Dtype>
class LrnLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"LRN", exactly(1), exactly(1)}; }
  DataUse bottom_data_use(int) const override { return DataUse::kBackward; }
  DataUse top_data_use(int) const override { return DataUse::kBackward; }
  StorageSupport half_storage() const override { return StorageSupport::kUniform; }
  // Across channels, a channels-last pixel's channels are adjacent: the primitive takes it.
  StorageSupport channels_last() const override {
    return lrn_.mode == prim::LrnMode::kAcrossChannels ? StorageSupport::kUniform
                                                       : StorageSupport::kNone;
  }

 private:
  prim::LrnDesc lrn_;
  prim::TensorDesc desc_;
};

}  // namespace crema
