// HingeLoss layer (Caffe's HingeLoss): one-vs-all hinge loss of N x D scores x against N integer
// labels l in [0, D). With s_nj = -1 for j == l_n and +1 otherwise and v_nj = max(0, 1 + s_nj
// x_nj):
//   L1 (default): loss = sum v / N,    dx = loss_weight/N * s * [v > 0]
//   L2:           loss = sum v^2 / N,  dx = loss_weight/N * 2 s v
// Labels get no gradient.
#pragma once

#include "layers/loss_layer.h"
#include "primitives/losses.h"

namespace crema {

template <typename Dtype>
class HingeLossLayer
    : public PrimLossLayer<Dtype, prim::HingeLossDesc, prim::hinge_loss_fwd, prim::hinge_loss_bwd> {
 public:
  using typename Layer<Dtype>::Tensors;
  using PrimLossLayer<Dtype, prim::HingeLossDesc, prim::hinge_loss_fwd,
                      prim::hinge_loss_bwd>::PrimLossLayer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;

  LayerSignature signature() const override { return this->signature_of("HingeLoss"); }
  const char* not_replayable() const override { return "waits for the GPU to check its labels"; }
};

}  // namespace crema
