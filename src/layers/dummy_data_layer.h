// DummyData layer: tops filled by fillers, for tests and benchmarks (Caffe's DummyData).
// dummy_data_param gives one shape for all tops or one per top (BlobShape `shape`, or the legacy
// num/channels/height/width lists), and 0, 1 or one filler per top (none means constant 0).
// Constant tops are filled once at setup; tops with a random filler are refilled every forward.
#pragma once

#include <vector>

#include "core/layer.h"

namespace crema {

template <typename Dtype>
class DummyDataLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  // Shapes are fixed at setup, as in Caffe.
  void reshape(const Tensors&, const Tensors&) override {}
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle&, const Tensors&, const std::vector<bool>&, const Tensors&) override {}

  LayerSignature signature() const override { return {"DummyData", exactly(0), at_least(1)}; }

 private:
  const FillerParameter& filler(size_t top_index) const;

  FillerParameter zero_filler_;
  std::vector<bool> refill_;
};

}  // namespace crema
