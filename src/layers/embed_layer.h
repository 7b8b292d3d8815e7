// Embed layer (Caffe's Embed): a lookup table. Each bottom value is an index v in
// [0, input_dim) (an integer stored in the data type); the top has the bottom's shape followed
// by num_output. With the weight W (input_dim x num_output) and bias b (num_output):
//   y[i, :] = W[v_i, :] + b
//   dW[r, :] += sum_{i: v_i = r} dy[i, :]       db += sum_i dy[i, :]       (accumulated)
// Forward is gather_rows (+ bias_add), backward scatter_add_rows (+ bias_bwd). The output is
// piecewise constant in the indices, so their gradient is 0; an index out of range or not an
// integer is an error naming it.
#pragma once

#include "core/layer.h"

namespace crema {

template <typename Dtype>
class EmbedLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"Embed", exactly(1), exactly(1)}; }
  const char* not_replayable() const override { return "waits for the GPU to check its indices"; }
  bool allow_force_backward(int) const override { return false; }
  // Backward reads the indices (the weight gradient), never the output.
  DataUse bottom_data_use(int) const override { return DataUse::kBackward; }
  DataUse top_data_use(int) const override { return DataUse::kForward; }

 private:
  int64_t input_dim_ = 0, num_output_ = 0, m_ = 0;  // m_: number of indices
  bool bias_term_ = true;
};

}  // namespace crema
