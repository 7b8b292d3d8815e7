// BatchNorm layer (Caffe's BatchNorm): normalizes each channel of an N x C x ... input to zero
// mean and unit variance, without a learned scale or shift (follow it with a Scale layer).
// The formulas and gradients are in primitives/batchnorm.h.
//   training (use_global_stats false): y = (x - mean_batch) / sqrt(var_batch + eps)
//   global statistics (TEST by default): y = (x - mean_run) / sqrt(var_run + eps)
// Blobs, as Caffe stores them in a .caffemodel (so weights load unchanged):
//   0: running mean sum (C)      mean_run = blob0 / blob2   (0 when blob2 is 0)
//   1: running variance sum (C)  var_run  = blob1 / blob2
//   2: moving-average scale factor (1)
// Each training forward updates, with f = moving_average_fraction and m = N * H * W:
//   blob2 = f * blob2 + 1;  blob0 = f * blob0 + mean_batch;
//   blob1 = f * blob1 + m / (m - 1) * var_batch  (unbiased; factor 1 when m == 1)
// The blobs are statistics, not parameters: backward never writes their diffs (they stay zero,
// so a solver step with lr_mult 0 leaves them alone), a param { lr_mult } other than 0 is
// refused, and param() lists lr_mult 0 and decay_mult 0 for the specs the definition left out,
// as Caffe amends its copy. Works in place; the normalized output is kept for backward because a
// later in-place layer may overwrite the top.
// Fusion (Layer::absorb): an in-place Scale of the channels with a learned scale (and bias) and
// an in-place ReLU after it, as in every ResNet block, run inside this layer's forward and
// backward (primitives' batchnorm_*_fused): in training, 9 values move per element instead of
// 22. The Scale's blobs stay its own (its weights load and save as before); this layer writes
// their gradients. With the stored statistics the fusion is for forward-only nets, where a
// Convolution right before takes this layer in turn (fold_into).
#pragma once

#include <memory>

#include "core/layer.h"
#include "layers/scale_layer.h"
#include "primitives/batchnorm.h"

namespace crema {

template <typename Dtype>
class BatchNormLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"BatchNorm", exactly(1), exactly(1)}; }
  // Backward reads its own copies (the normalized output, the statistics), not the blobs.
  DataUse bottom_data_use(int) const override { return DataUse::kForward; }
  DataUse top_data_use(int) const override { return DataUse::kForward; }

  bool use_global_stats() const { return use_global_stats_; }
  // In training, the normalized output (the top) is kept for backward.
  const Tensor<Dtype>* kept_top(int j) const override {
    return j == 0 && !use_global_stats_ ? x_norm_.get() : nullptr;
  }
  bool absorb(Layer<Dtype>& next, bool backward) override;
  void release_absorbed() override;
  StorageSupport half_storage() const override { return StorageSupport::kUniform; }
  // Channels last: the primitives see N*H*W rows of C values (prim::channel_view).
  StorageSupport channels_last() const override { return StorageSupport::kUniform; }
  // With the stored statistics, folds this normalization and an absorbed Scale into the
  // convolution before it, whose K x inner weights w and K-value bias (null: 0) it writes as
  // w_out and bias_out (K = channels): the convolution then computes this layer's output.
  void fold_into(Handle& h, int64_t inner, const Dtype* w, Dtype* w_out, const Dtype* bias,
                 Dtype* bias_out);

 private:
  prim::BatchNormDesc bn_;
  prim::TensorDesc desc_;
  bool use_global_stats_ = false;
  double moving_average_fraction_ = 0.999;
  int64_t channels_ = 0;
  // Per-channel statistics of the last forward (batch or scaled running), 1 / sqrt(var + eps),
  // and the normalized output of a training forward.
  std::unique_ptr<Tensor<Dtype>> mean_, var_, inv_std_, x_norm_;
  std::unique_ptr<Tensor<Dtype>> zeros_;  // C zeros for fold_into, made at its first call
  // Absorbed layers: the Scale (null if none) and whether a ReLU follows, with its slope.
  ScaleLayer<Dtype>* scale_ = nullptr;
  bool relu_ = false;
  double relu_slope_ = 0;
  bool fused() const { return scale_ || relu_; }
  prim::BatchNormEpilogue epilogue() const;
  void load_running_statistics(Handle& h);
};

}  // namespace crema
