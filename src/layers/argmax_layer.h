// ArgMax layer (Caffe's ArgMax): the indices of the top_k largest values (ranked larger first;
// equal values put the larger index first, as Caffe). Without argmax_param.axis each item of the
// batch is searched over all its values flattened, and the top is (N, 1, top_k) -- or
// (N, 2, top_k) holding the indices then the values with out_max_val -- padded with 1s to the
// bottom's rank. With axis, the top is the bottom with that axis resized to top_k, holding the
// indices, or the values with out_max_val. Indices are stored as values of the data type. Not
// differentiable: asking for a bottom gradient is an error.
#pragma once

#include "core/layer.h"
#include "primitives/argmax.h"

namespace crema {

template <typename Dtype>
class ArgMaxLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override;

  LayerSignature signature() const override { return {"ArgMax", exactly(1), exactly(1)}; }
  bool allow_force_backward(int) const override { return false; }
  // Backward only refuses; the top holds indices and/or values for every output.
  DataUse bottom_data_use(int) const override { return DataUse::kForward; }
  DataUse top_data_use(int) const override { return DataUse::kForward; }

 private:
  prim::ArgMaxDesc desc_;
  bool has_axis_ = false;
  bool out_max_val_ = false;
};

}  // namespace crema
