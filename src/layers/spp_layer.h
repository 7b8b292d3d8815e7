// SPP layer (Caffe's spatial pyramid pooling): pools an N x C x H x W input at pyramid_height
// levels; level l splits each image into 2^l x 2^l bins with
//   kernel = ceil(H / 2^l), stride = kernel, pad = (kernel * 2^l - H + 1) / 2  (likewise W),
// MAX or AVE pooling (Caffe's rules). The levels are flattened and concatenated per image:
//   top is N x (C * sum_l 4^l), level l occupying [C * sum_{j<l} 4^j, C * sum_{j<=l} 4^j) in
//   c-major, then row-major bin order; with pyramid_height 1 the top is the pooled N x C x 1 x 1,
//   as in Caffe.
// Each level is one pool_fwd writing straight into its strided view of the top; the gradient is
// the sum over levels of pool_bwd from the same views (the first level overwrites dx).
#pragma once

#include <vector>

#include "core/layer.h"
#include "primitives/pool.h"

namespace crema {

template <typename Dtype>
class SppLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"SPP", exactly(1), exactly(1)}; }
  // Each level's pooling backward reads x and its slice of y; the levels fill the top.
  DataUse bottom_data_use(int) const override { return DataUse::kBackward; }
  DataUse top_data_use(int) const override { return DataUse::kBackward; }

 private:
  struct Level {
    prim::PoolDesc pool;
    prim::TensorDesc view;  // the level's bins inside the top
    int64_t offset = 0;     // of the view's first element in the top
  };
  int pyramid_height_ = 0;
  prim::PoolMode mode_ = prim::PoolMode::kMax;
  prim::TensorDesc x_desc_;
  std::vector<Level> levels_;
};

}  // namespace crema
