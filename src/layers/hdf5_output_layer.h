// HDF5Output layer (Caffe's "HDF5Output"): writes its two bottoms to the HDF5 file
// hdf5_output_param.file_name, as datasets "data" (bottom 0) and "label" (bottom 1) of the net's
// type. The file is created (truncated) at setup. Each forward appends its batch as rows, so
// the datasets hold every batch forwarded so far, each row in Caffe's 4-axis layout (num,
// channels, height, width; a bottom of fewer axes gets trailing 1s); the file is flushed after
// each forward, so it is complete whenever the net is between forwards. (Caffe writes the
// datasets once and fails on a second forward.) Both bottoms must have the same number of rows.
// No tops; nothing propagates back.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/hdf5_io.h"
#include "core/layer.h"

namespace crema {

template <typename Dtype>
class Hdf5OutputLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  void reshape(const Tensors& bottom, const Tensors& top) override;
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle&, const Tensors&, const std::vector<bool>&, const Tensors&) override {}

  LayerSignature signature() const override { return {"HDF5Output", exactly(2), exactly(0)}; }
  bool allow_force_backward(int) const override { return false; }
  DataUse bottom_data_use(int) const override { return DataUse::kForward; }
  const char* not_replayable() const override {
    return "copies its bottoms to the host and writes them to a file";
  }

  // Rows written so far.
  int64_t rows() const { return data_ ? data_->rows() : 0; }

 private:
  std::unique_ptr<hdf5::File> file_;
  std::unique_ptr<hdf5::RowAppender> data_, label_;
};

}  // namespace crema
