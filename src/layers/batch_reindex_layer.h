// BatchReindex layer (Caffe's BatchReindex): picks items of a batch by index. Bottom 0 is the
// data (N, ...), bottom 1 a 1-d list of M indices in [0, N) (integers in the data type); the top
// is (M, ...):
//   y[i] = x[idx_i]
//   dx[n] = sum_{i: idx_i = n} dy[i]          (0 for items never picked)
// One gather_rows forward, one scatter_add_rows backward. The indices get a zero gradient
// (the output is piecewise constant in them).
#pragma once

#include "core/layer.h"

namespace crema {

template <typename Dtype>
class BatchReindexLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"BatchReindex", exactly(2), exactly(1)}; }
  const char* not_replayable() const override { return "waits for the GPU to check its indices"; }
  bool allow_force_backward(int bottom_index) const override { return bottom_index == 0; }
  // Backward scatters by the indices (bottom 1); the gathered rows fill the top.
  DataUse bottom_data_use(int i) const override {
    return i == 1 ? DataUse::kBackward : DataUse::kForward;
  }
  DataUse top_data_use(int) const override { return DataUse::kForward; }

 private:
  int64_t n_ = 0, m_ = 0, inner_ = 0;
};

}  // namespace crema
