// HDF5Output layer: bottoms "data" and "label" appended to an HDF5 file at every forward.
#include "layers/hdf5_output_layer.h"

#include <glog/logging.h>

#include "core/errors.h"

namespace crema {
namespace {

// Caffe's legacy view of a blob: num, channels, height, width (more axes are kept as they are).
template <typename Dtype>
std::vector<int64_t> legacy_dims(const Tensor<Dtype>& t) {
  if (t.num_axes() > 4) return t.shape();
  return {t.num(), t.channels(), t.height(), t.width()};
}

}  // namespace

template <typename Dtype>
void Hdf5OutputLayer<Dtype>::layer_setup(const Tensors&, const Tensors&) {
  const std::string& name = this->param_.hdf5_output_param().file_name();
  if (name.empty()) this->error("hdf5_output_param.file_name is missing");
  this->naming_layer([&] { file_ = std::make_unique<hdf5::File>(hdf5::File::create(name)); });
  data_ = std::make_unique<hdf5::RowAppender>(file_->id(), "data", name);
  label_ = std::make_unique<hdf5::RowAppender>(file_->id(), "label", name);
}

template <typename Dtype>
void Hdf5OutputLayer<Dtype>::reshape(const Tensors& bottom, const Tensors&) {
  if (bottom[0]->num_axes() == 0 || bottom[1]->num_axes() == 0 ||
      bottom[0]->shape(0) != bottom[1]->shape(0))
    this->error("the data (", bottom[0]->shape_string(), ") and label (", bottom[1]->shape_string(),
                ") bottoms must have the same number of rows");
}

template <typename Dtype>
void Hdf5OutputLayer<Dtype>::forward(Handle&, const Tensors& bottom, const Tensors&) {
  this->naming_layer([&] {
    data_->append(legacy_dims(*bottom[0]), bottom[0]->data_vector().data());
    label_->append(legacy_dims(*bottom[1]), bottom[1]->data_vector().data());
    file_->flush();
  });
  DLOG(INFO) << "Saved " << bottom[0]->num() << " rows to " << file_->name();
}

template class Hdf5OutputLayer<float>;
template class Hdf5OutputLayer<double>;

}  // namespace crema
