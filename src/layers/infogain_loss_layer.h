// InfogainLoss layer (Caffe's InfogainLoss, the version that applies softmax itself): a
// generalization of SoftmaxWithLoss weighting every (true label, predicted class) pair by an
// infogain matrix H (L x L, L = the classes along infogain_loss_param.axis). Bottoms: scores x
// (outer x L x inner around the axis), labels (outer * inner integers), and optionally H as a
// third bottom instead of the .binaryproto file infogain_loss_param.source. Tops: the loss and
// optionally the probabilities.
//   p = softmax(x) over the axis
//   loss = -sum_{valid n} sum_c H[l_n, c] log(max(p_nc, 1e-20)) / normalizer
//   dx_nc = loss_weight / normalizer * (p_nc sum_c' H[l_n, c'] - H[l_n, c]), 0 where ignored
// Positions labelled loss_param.ignore_label are skipped; normalizer follows
// loss_param.normalization (VALID by default). Labels and H get no gradient.
#pragma once

#include <memory>
#include <string>

#include "layers/loss_layer.h"
#include "primitives/losses.h"

namespace crema {

template <typename Dtype>
class InfogainLossLayer : public SoftmaxLossLayer<Dtype, prim::InfogainLossDesc> {
 public:
  using typename Layer<Dtype>::Tensors;
  using SoftmaxLossLayer<Dtype, prim::InfogainLossDesc>::SoftmaxLossLayer;

  // The loss parameters (SoftmaxLossLayer) and, with two bottoms, the infogain matrix file.
  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override {
    return {"InfogainLoss", between(2, 3), between(1, 2)};
  }
  const char* not_replayable() const override { return "waits for the GPU to check its labels"; }
  bool allow_force_backward(int bottom_index) const override { return bottom_index == 0; }

 private:
  const Tensor<Dtype>& infogain(const Tensors& bottom) const {
    return bottom.size() > 2 ? *bottom[2] : *infogain_;
  }

  std::unique_ptr<Tensor<Dtype>> infogain_;  // from the source file, with two bottoms
  std::string source_;
};

}  // namespace crema
