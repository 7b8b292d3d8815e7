// MemoryData layer (Caffe's "MemoryData"): the in-process input for programs that use crema as
// a library and hold their examples in memory. memory_data_param gives batch_size, channels,
// height and width; the program hands the layer host arrays with set_input():
//
//   auto* input = dynamic_cast<MemoryDataLayer<float>*>(net.layer_by_name("data"));
//   input->set_input(images, labels, n);   // n examples, n a multiple of batch_size
//
// Each forward() copies the next batch_size examples to the tops: top[0] data, batch_size x C x
// H x W, and top[1] labels, batch_size (optional); after the last batch it starts again at the
// first. The layer keeps its own copy of the arrays, so the caller's may be freed. The examples
// are used as given: no transform_param (preprocess them before set_input). forward() before
// set_input() is an error.
#pragma once

#include <cstdint>
#include <vector>

#include "core/layer.h"

namespace crema {

template <typename Dtype>
class MemoryDataLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  // Shapes are fixed at setup.
  void reshape(const Tensors&, const Tensors&) override {}
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle&, const Tensors&, const std::vector<bool>&, const Tensors&) override {}

  // Replaces the input with n examples: data holds n x C x H x W values, labels n values
  // (labels may be null when the layer has no label top). Throws crema::Error when n is not a
  // positive multiple of batch_size or an array is missing; the next forward() starts at the
  // first example.
  void set_input(const Dtype* data, const Dtype* labels, int64_t n);

  // Examples held, and the index of the first example of the next batch.
  int64_t num_examples() const { return n_; }
  int64_t position() const { return position_; }
  int batch_size() const { return batch_size_; }

  LayerSignature signature() const override { return {"MemoryData", exactly(0), between(1, 2)}; }

 private:
  int batch_size_ = 0;
  int64_t example_size_ = 0;  // C * H * W
  bool has_label_top_ = false;
  std::vector<Dtype> data_, labels_;
  int64_t n_ = 0, position_ = 0;
};

}  // namespace crema
