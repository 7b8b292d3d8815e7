// Crop layer (Caffe's Crop): crops bottom 0 to the shape of bottom 1 on the axes from
// crop_param.axis on (earlier axes keep bottom 0's size), starting at crop_param.offset (none:
// 0; one: the same for every cropped axis; else one per cropped axis). With o the offset vector:
//   y[i] = x[i + o]
//   dx[i + o] = dy[i], dx = 0 outside the window;  bottom 1 only gives a shape (its gradient is 0)
// Forward is one tensor_copy from the window of x; backward zeroes dx and copies dy into it.
#pragma once

#include "core/layer.h"
#include "primitives/view.h"

namespace crema {

template <typename Dtype>
class CropLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"Crop", exactly(2), exactly(1)}; }
  bool allow_force_backward(int bottom_index) const override { return bottom_index == 0; }
  // Backward copies the top's gradient into a window of bottom 0's; bottom 1 gives a shape only.
  DataUse bottom_data_use(int) const override { return DataUse::kForward; }
  DataUse top_data_use(int) const override { return DataUse::kForward; }

 private:
  prim::ViewDesc window_;  // the cropped window inside bottom 0 (from window_offset_)
  prim::ViewDesc packed_;  // the top, packed, same sizes
  int64_t window_offset_ = 0;
};

}  // namespace crema
