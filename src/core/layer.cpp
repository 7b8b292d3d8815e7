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
  const LayerSignature sig = signature();
  const auto check = [this](const BlobCount& count, int n, const char* verb, const char* what) {
    if (count.min == count.max && n != count.min)
      error(verb, " ", count.min, " ", what, "(s), got ", n);
    if (n < count.min) error(verb, " at least ", count.min, " ", what, "(s), got ", n);
    if (count.max != BlobCount::kAny && n > count.max)
      error(verb, " at most ", count.max, " ", what, "(s), got ", n);
  };
  const int nb = int(bottom.size()), nt = int(top.size());
  check(sig.bottoms, nb, "takes", "bottom");
  check(sig.tops, nt, "produces", "top");
  if (sig.tops_match_bottoms && nb != nt)
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
