// MemoryData layer: host arrays handed in by the program -> device tops, batch by batch.
#include "layers/memory_data_layer.h"

namespace crema {

template <typename Dtype>
void MemoryDataLayer<Dtype>::layer_setup(const Tensors&, const Tensors& top) {
  const MemoryDataParameter& p = this->param_.memory_data_param();
  const uint64_t n = p.batch_size(), c = p.channels(), h = p.height(), w = p.width();
  if (n == 0 || c == 0 || h == 0 || w == 0)
    this->error(
        "memory_data_param: batch_size, channels, height and width must all be "
        "positive; got ",
        n, ", ", c, ", ", h, ", ", w);
  if (checked_count({int64_t(n), int64_t(c), int64_t(h), int64_t(w)}) < 0)
    this->error("memory_data_param: a batch of ", n, " x ", c, " x ", h, " x ", w,
                " exceeds the tensor limit of ", kMaxTensorElements, " values");
  if (this->param_.has_transform_param())
    this->error(
        "transform_param does not apply to MemoryData; preprocess the arrays before "
        "set_input");
  if (n > uint64_t(INT32_MAX))
    this->error("memory_data_param: batch_size ", n, " is more than ", INT32_MAX);
  batch_size_ = int(n);
  example_size_ = int64_t(c * h * w);
  has_label_top_ = top.size() > 1;
  top[0]->reshape({int64_t(n), int64_t(c), int64_t(h), int64_t(w)});
  if (has_label_top_) top[1]->reshape({int64_t(n)});
}

template <typename Dtype>
void MemoryDataLayer<Dtype>::set_input(const Dtype* data, const Dtype* labels, int64_t n) {
  if (batch_size_ == 0) this->error("set_input before the layer is set up");
  if (n <= 0 || n % batch_size_ != 0)
    this->error("set_input: the number of examples (", n,
                ") must be a positive multiple of batch_size ", batch_size_);
  if (n > kMaxTensorElements / example_size_)
    this->error("set_input: ", n, " examples of ", example_size_, " values are too many");
  if (!data) this->error("set_input: no data array");
  if (has_label_top_ && !labels)
    this->error("set_input: no labels array, but the layer has a label top");
  data_.assign(data, data + n * example_size_);
  if (labels)
    labels_.assign(labels, labels + n);
  else
    labels_.clear();
  n_ = n;
  position_ = 0;
}

template <typename Dtype>
void MemoryDataLayer<Dtype>::forward(Handle&, const Tensors&, const Tensors& top) {
  if (n_ == 0)
    this->error("forward without input: hand the layer its examples with set_input() first");
  prim::device_memcpy(top[0]->mutable_data(), top[0]->device(),
                      data_.data() + position_ * example_size_, Device::kCPU, top[0]->bytes());
  if (has_label_top_)
    prim::device_memcpy(top[1]->mutable_data(), top[1]->device(), labels_.data() + position_,
                        Device::kCPU, top[1]->bytes());
  position_ = (position_ + batch_size_) % n_;
}

template class MemoryDataLayer<float>;
template class MemoryDataLayer<double>;

}  // namespace crema
