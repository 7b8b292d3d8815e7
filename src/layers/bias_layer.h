// Bias layer (Caffe's Bias): adds a bias broadcast over bottom[0]. The bias is a learned blob
// or a second bottom; its shape must equal bottom[0]'s shape over axes [axis, axis + its rank).
//   y[o, c, i] = x[o, c, i] + b[c]      dx = dy      db[c] = sum_{o,i} dy[o, c, i]
// with (outer, c, inner) the view of bottom[0] around the bias axes (primitives/scale_bias.h).
// bias_param: axis (1; negative counts from the end), num_axes (1; -1: all remaining axes, 0: a
// scalar) and filler (constant 0) for a learned bias. Works in place.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/layer.h"
#include "primitives/scale_bias.h"

namespace crema {

// Shared by the Bias and Scale layers: the learned blob's shape, bottom[0]'s axes [axis,
// axis + num_axes) with num_axes -1 meaning all remaining. Returns an empty string when fine,
// otherwise what is wrong.
std::string broadcast_param_shape(const std::vector<int64_t>& x_shape, int axis, int num_axes,
                                  std::vector<int64_t>* shape);
// The (outer, channels, inner) view of x around param's axes, starting at axis (at 0 for a
// scalar param, whatever axis says, as in Caffe). Returns an empty string or the mismatch.
std::string broadcast_view(const std::vector<int64_t>& x_shape, int axis,
                           const std::vector<int64_t>& param_shape, prim::ScaleBiasDesc* view);

template <typename Dtype>
class BiasLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"Bias", between(1, 2), exactly(1)}; }
  // The gradients are dy and its sums: backward reads no data.
  DataUse bottom_data_use(int) const override { return DataUse::kForward; }
  DataUse top_data_use(int) const override { return DataUse::kForward; }

 private:
  int axis_ = 1;
  prim::ScaleBiasDesc view_;
};

}  // namespace crema
