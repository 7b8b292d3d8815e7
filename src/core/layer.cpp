// Layer base: setup, bottom/top count checks, loss weights.
#include "core/layer.h"

#include "core/filler.h"

namespace crema {

template <typename Dtype>
void Layer<Dtype>::setup(const Tensors& bottom, const Tensors& top) {
  check_counts(bottom, top);
  layer_setup(bottom, top);
  param_propagate_down_.resize(blobs_.size(), true);
  reshape(bottom, top);
}

template <typename Dtype>
void Layer<Dtype>::set_param_propagate_down(int i, bool value) {
  if (i >= int(param_propagate_down_.size())) param_propagate_down_.resize(i + 1, true);
  param_propagate_down_[i] = value;
}

template <typename Dtype>
double Layer<Dtype>::top_loss_weight(int i, const Tensor<Dtype>& top) const {
  if (i < int(top_loss_weights_.size()) && top_loss_weights_[i]) return *top_loss_weights_[i];
  Dtype w = 0;
  prim::device_memcpy(&w, Device::kCPU, top.diff(), top.device(), sizeof(Dtype));
  return double(w);
}

template <typename Dtype>
void Layer<Dtype>::set_top_loss_weight(int i, double weight) {
  if (i >= int(top_loss_weights_.size())) top_loss_weights_.resize(i + 1);
  top_loss_weights_[i] = weight;
}

template <typename Dtype>
void Layer<Dtype>::check_counts(const Tensors& bottom, const Tensors& top) const {
  const int nb = int(bottom.size()), nt = int(top.size());
  if (exact_num_bottom() >= 0 && nb != exact_num_bottom())
    error("takes ", exact_num_bottom(), " bottom(s), got ", nb);
  if (min_num_bottom() >= 0 && nb < min_num_bottom())
    error("takes at least ", min_num_bottom(), " bottom(s), got ", nb);
  if (max_num_bottom() >= 0 && nb > max_num_bottom())
    error("takes at most ", max_num_bottom(), " bottom(s), got ", nb);
  if (exact_num_top() >= 0 && nt != exact_num_top())
    error("produces ", exact_num_top(), " top(s), got ", nt);
  if (min_num_top() >= 0 && nt < min_num_top())
    error("produces at least ", min_num_top(), " top(s), got ", nt);
  if (max_num_top() >= 0 && nt > max_num_top())
    error("produces at most ", max_num_top(), " top(s), got ", nt);
  if (equal_num_bottom_top() && nb != nt)
    error("needs as many tops as bottoms, got ", nb, " bottom(s) and ", nt, " top(s)");
}

template <typename Dtype>
void Layer<Dtype>::make_weight_and_bias(const std::vector<int64_t>& weight_shape,
                                        const FillerParameter& weight_filler, bool bias_term,
                                        int64_t bias_size, const FillerParameter& bias_filler) {
  naming_layer([&] {
    blobs_.clear();
    blobs_.push_back(std::make_shared<Tensor<Dtype>>(weight_shape, device_));
    fill_tensor(weight_filler, blobs_[0].get());
    if (bias_term) {
      blobs_.push_back(std::make_shared<Tensor<Dtype>>(std::vector<int64_t>{bias_size}, device_));
      fill_tensor(bias_filler, blobs_[1].get());
    }
  });
}

template class Layer<float>;
template class Layer<double>;

}  // namespace crema
