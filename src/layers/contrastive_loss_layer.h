// ContrastiveLoss layer (Caffe's ContrastiveLoss): for pairs of N x D features a, b and N
// similarity labels y (int(y) != 0 = similar), with d_n = |a_n - b_n|:
//   loss = 1/(2N) sum_n [similar: d_n^2;  dissimilar: max(margin - d_n, 0)^2, or with
//          legacy_version max(margin - d_n^2, 0)]
//   da_n = loss_weight/N * g_n (a_n - b_n), db_n = -da_n, where g_n = 1 (similar),
//          -(margin - d_n) / (d_n + 1e-4) when margin > d_n (dissimilar), or -1 when
//          margin > d_n^2 (legacy); 0 otherwise. The 1e-4 is Caffe's guard against d = 0.
// The labels get no gradient.
#pragma once

#include "layers/loss_layer.h"
#include "primitives/losses.h"

namespace crema {

template <typename Dtype>
class ContrastiveLossLayer : public LossLayer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using LossLayer<Dtype>::LossLayer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"ContrastiveLoss", exactly(3), exactly(1)}; }
  bool allow_force_backward(int bottom_index) const override { return bottom_index != 2; }

 private:
  prim::ContrastiveLossDesc desc_;
};

}  // namespace crema
