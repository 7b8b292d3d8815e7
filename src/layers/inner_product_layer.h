// InnerProduct layer (Caffe's InnerProduct): a fully connected layer. The input is viewed as an
// M x K matrix X (M = product of the axes before inner_product_param.axis, K = the rest); the
// weight W is N x K (K x N with transpose) and the bias b has N values:
//   Y = X * W^T + b            (transpose: Y = X * W + b)
// Gradients, with dY = M x N:
//   dX  = dY * W               (transpose: dY * W^T)           overwritten
//   dW += dY^T * X             (transpose: dW += X^T * dY)     accumulated
//   db += sum over rows of dY                                  accumulated
// The top has the bottom's leading axes followed by N. A bottom or top stored in bf16 or f16 (the
// edge of a mixed-precision net's half-size region, storage_plan.h) is converted through an f32
// copy: the GEMMs and the bias run on f32.
#pragma once

#include <memory>

#include "core/layer.h"

namespace crema {

template <typename Dtype>
class InnerProductLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  // Reads inner_product_param and creates and fills the weight (and bias) blobs.
  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"InnerProduct", exactly(1), exactly(1)}; }
  // Backward reads the input (weight gradient), never the output.
  DataUse bottom_data_use(int) const override { return DataUse::kBackward; }
  // With a ReLU absorbed, backward reads the output for the ReLU's gradient.
  DataUse top_data_use(int) const override {
    return relu_ ? DataUse::kBackward : DataUse::kForward;
  }
  StorageSupport half_storage() const override { return StorageSupport::kMixed; }
  // The ReLU after it runs in the GEMM's epilogue, with the bias.
  bool absorb(Layer<Dtype>& next, bool backward) override;
  void release_absorbed() override { relu_ = false; }

 private:
  // f32 copies of a half-size bottom and top (data and diff), allocated where used.
  std::unique_ptr<Tensor<Dtype>> x32_, y32_;
  int axis_ = 1;
  int m_ = 0, n_ = 0, k_ = 0;  // rows of X, outputs, inputs per row
  bool bias_term_ = true;
  bool transpose_ = false;
  bool relu_ = false;  // a ReLU absorbed into the epilogue
  prim::MathMode fwd_math_ = prim::MathMode::kFP32, bwd_math_ = prim::MathMode::kFP32;
};

}  // namespace crema
