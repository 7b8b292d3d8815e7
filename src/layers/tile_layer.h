// Tile layer (Caffe's Tile): repeats the bottom tile_param.tiles times along tile_param.axis.
// With x viewed as (outer, inner), inner = the count from the axis on, y is (outer, T, inner):
//   y[o, t, i] = x[o, i]
//   dx[o, i] = sum_t dy[o, t, i]
// Forward is a tensor_copy reading x with stride 0 over t; backward is reduce_fwd kSum over t.
#pragma once

#include "core/layer.h"

namespace crema {

template <typename Dtype>
class TileLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"Tile", exactly(1), exactly(1)}; }
  // Backward sums the copies' gradients: no data.
  DataUse bottom_data_use(int) const override { return DataUse::kForward; }
  DataUse top_data_use(int) const override { return DataUse::kForward; }

 private:
  int64_t tiles_ = 1, outer_ = 0, inner_ = 0;
};

}  // namespace crema
