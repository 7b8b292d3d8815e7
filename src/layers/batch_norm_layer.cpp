// BatchNorm layer: batch_norm_param, the statistics blobs, Caffe's running-average update and
// the batchnorm primitives.
#include "layers/batch_norm_layer.h"

#include <string>

#include "primitives/blas.h"
#include "primitives/elementwise.h"

namespace crema {

template <typename Dtype>
void BatchNormLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors&) {
  const BatchNormParameter& p = this->param_.batch_norm_param();
  use_global_stats_ = p.has_use_global_stats() ? p.use_global_stats() : this->phase() == TEST;
  moving_average_fraction_ = p.moving_average_fraction();
  bn_.eps = p.eps();
  if (!(bn_.eps >= 0)) this->error("eps must be >= 0, got ", p.eps());
  if (!(moving_average_fraction_ >= 0 && moving_average_fraction_ <= 1))
    this->error("moving_average_fraction must be in [0, 1], got ", p.moving_average_fraction());
  const Tensor<Dtype>& x = *bottom[0];
  if (x.num_axes() < 1) this->error("input must have at least 1 axis, got a scalar");
  channels_ = x.num_axes() == 1 ? 1 : x.shape(1);
  // The statistics are never learned: Caffe refuses to treat them as parameters, and, as Caffe
  // does, the layer's own copy of its definition gets the missing specs with lr_mult 0 (and
  // decay_mult 0, so weight decay cannot shrink them either) for whoever reads param().
  for (int i = 0; i < this->param_.param_size(); ++i)
    if (this->param_.param(i).lr_mult() != 0)
      this->error("param ", i, " has lr_mult ", this->param_.param(i).lr_mult(),
                  ": the batch statistics cannot be learned (use lr_mult 0 or no param)");
  while (this->param_.param_size() < 3) {
    ParamSpec* spec = this->param_.add_param();
    spec->set_lr_mult(0);
    spec->set_decay_mult(0);
  }
  this->blobs_.clear();
  this->blobs_.push_back(
      std::make_shared<Tensor<Dtype>>(std::vector<int64_t>{channels_}, this->device_));
  this->blobs_.push_back(
      std::make_shared<Tensor<Dtype>>(std::vector<int64_t>{channels_}, this->device_));
  this->blobs_.push_back(std::make_shared<Tensor<Dtype>>(std::vector<int64_t>{1}, this->device_));
  for (auto& b : this->blobs_) b->fill_data(Dtype(0));
  for (int i = 0; i < 3; ++i) this->set_param_propagate_down(i, false);
  mean_ = std::make_unique<Tensor<Dtype>>(std::vector<int64_t>{channels_}, this->device_);
  var_ = std::make_unique<Tensor<Dtype>>(std::vector<int64_t>{channels_}, this->device_);
  inv_std_ = std::make_unique<Tensor<Dtype>>(std::vector<int64_t>{channels_}, this->device_);
  x_norm_ = std::make_unique<Tensor<Dtype>>(this->device_);
}

template <typename Dtype>
void BatchNormLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& x = *bottom[0];
  const int64_t c = x.num_axes() < 1 ? 0 : x.num_axes() == 1 ? 1 : x.shape(1);
  if (c != channels_)
    this->error("input (", x.shape_string(), ") has ", c, " channels but the layer was set up for ",
                channels_);
  const int64_t n = x.shape(0), inner = n * c == 0 ? 0 : x.count() / (n * c);
  desc_ = x.channels_last()
              ? x.desc()
              : prim::TensorDesc::nchw(x.storage(), desc_size(n, "the batch"), int(c), 1,
                                       desc_size(inner, "the values per channel of an image"));
  if (top[0] != bottom[0]) top[0]->reshape_like(x);
  if (!use_global_stats_) {
    x_norm_->set_storage(x.storage());
    x_norm_->set_channels_last(x.channels_last());
    x_norm_->reshape_like(x);
  }
}

template <typename Dtype>
bool BatchNormLayer<Dtype>::absorb(Layer<Dtype>& next, bool backward) {
  // The fused backward needs x_hat, kept only with the batch's statistics.
  if (use_global_stats_ && backward) return false;
  const std::string type = next.type();
  if (type == "Scale" && !fused()) {
    auto* scale = dynamic_cast<ScaleLayer<Dtype>*>(&next);
    if (!scale || !scale->learned_per_channel(channels_)) return false;
    scale_ = scale;
    return true;
  }
  if (type == "ReLU" && !relu_) {
    relu_ = true;
    relu_slope_ = next.param().relu_param().negative_slope();
    return true;
  }
  return false;
}

template <typename Dtype>
void BatchNormLayer<Dtype>::release_absorbed() {
  scale_ = nullptr;
  relu_ = false;
}

template <typename Dtype>
prim::BatchNormEpilogue BatchNormLayer<Dtype>::epilogue() const {
  prim::BatchNormEpilogue ep;
  if (scale_) {
    ep.gamma = scale_->blobs()[0]->data();
    if (scale_->bias_index() >= 0) ep.beta = scale_->blobs()[size_t(scale_->bias_index())]->data();
  }
  ep.relu = relu_;
  ep.negative_slope = relu_slope_;
  return ep;
}

// mean_ and var_ from the stored sums, scaled by the running weight blob2 (one explicit scalar
// read).
template <typename Dtype>
void BatchNormLayer<Dtype>::load_running_statistics(Handle& h) {
  const prim::DataType t = dtype_of<Dtype>();
  auto& blobs = this->blobs_;
  Dtype weight = 0;
  prim::device_memcpy(&weight, Device::kCPU, blobs[2]->data(), blobs[2]->device(), sizeof(Dtype));
  const double factor = weight == 0 ? 0.0 : 1.0 / double(weight);
  prim::axpby(h, t, channels_, factor, blobs[0]->data(), 0.0, mean_->mutable_data());
  prim::axpby(h, t, channels_, factor, blobs[1]->data(), 0.0, var_->mutable_data());
}

// The normalization is y_k = a_k (x_k - mean_k) + beta_k with a_k = gamma_k / sqrt(var_k + eps),
// so the fused inference primitive computes both products: on the weights (as 1 x K x 1 x inner,
// mean 0, no shift) a_k w_k, and on the bias (1 x K x 1 x 1) a_k (b_k - mean_k) + beta_k.
template <typename Dtype>
void BatchNormLayer<Dtype>::fold_into(Handle& h, int64_t inner, const Dtype* w, Dtype* w_out,
                                      const Dtype* bias, Dtype* bias_out) {
  const prim::DataType t = dtype_of<Dtype>();
  const int k = int(channels_);
  if (!zeros_) {
    zeros_ = std::make_unique<Tensor<Dtype>>(std::vector<int64_t>{channels_}, this->device_);
    zeros_->fill_data(Dtype(0));
  }
  load_running_statistics(h);
  prim::BatchNormEpilogue ep = epilogue();
  ep.relu = false;  // the convolution's epilogue applies the ReLU
  prim::BatchNormEpilogue scale_only = ep;
  scale_only.beta = nullptr;
  const prim::TensorDesc wd = prim::TensorDesc::nchw(t, 1, k, 1, desc_size(inner, "a filter"));
  prim::batchnorm_fwd_inference_fused(h, bn_, scale_only, wd, w, wd, w_out, zeros_->data(),
                                      var_->data());
  const prim::TensorDesc bd = prim::TensorDesc::nchw(t, 1, k, 1, 1);
  prim::batchnorm_fwd_inference_fused(h, bn_, ep, bd, bias ? bias : zeros_->data(), bd, bias_out,
                                      mean_->data(), var_->data());
}

template <typename Dtype>
void BatchNormLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  const prim::DataType t = dtype_of<Dtype>();
  const int64_t c = channels_;
  auto& blobs = this->blobs_;
  if (use_global_stats_) {
    load_running_statistics(h);
    if (fused())
      prim::batchnorm_fwd_inference_fused(h, bn_, epilogue(), desc_, bottom[0]->raw_data(), desc_,
                                          top[0]->mutable_raw_data(), mean_->data(), var_->data());
    else
      prim::batchnorm_fwd_inference(h, bn_, desc_, bottom[0]->raw_data(), desc_,
                                    top[0]->mutable_raw_data(), mean_->data(), var_->data());
    return;
  }
  if (fused())
    prim::batchnorm_fwd_training_fused(h, bn_, epilogue(), desc_, bottom[0]->raw_data(), desc_,
                                       top[0]->mutable_raw_data(), x_norm_->mutable_raw_data(),
                                       mean_->mutable_data(), var_->mutable_data(),
                                       inv_std_->mutable_data());
  else
    prim::batchnorm_fwd_training(h, bn_, desc_, bottom[0]->raw_data(), desc_,
                                 top[0]->mutable_raw_data(), mean_->mutable_data(),
                                 var_->mutable_data(), inv_std_->mutable_data());
  // Caffe's running averages: the weight counts the (decayed) number of batches averaged.
  const double f = moving_average_fraction_;
  const int64_t m = desc_.count() / c;
  const double unbias = m > 1 ? double(m) / double(m - 1) : 1.0;
  prim::scal(h, t, 1, f, blobs[2]->mutable_data());
  prim::elt_add_scalar(h, t, 1, 1.0, blobs[2]->mutable_data());
  prim::axpby(h, t, c, 1.0, mean_->data(), f, blobs[0]->mutable_data());
  prim::axpby(h, t, c, unbias, var_->data(), f, blobs[1]->mutable_data());
  if (!fused())
    prim::memcpy_async(h, x_norm_->mutable_raw_data(), x_norm_->device(), top[0]->raw_data(),
                       top[0]->device(), top[0]->bytes());
}

template <typename Dtype>
void BatchNormLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                     const std::vector<bool>& propagate_down,
                                     const Tensors& bottom) {
  // Fused, the Net runs this backward only where it propagates down (Net::fuse_layers).
  if (!propagate_down[0]) return;
  // dx may be dy (in place): the primitives read each channel's dy before writing it.
  if (fused()) {
    const auto param_diff = [&](int i) -> Dtype* {
      return i >= 0 && scale_->param_propagate_down(i) ? scale_->blobs()[size_t(i)]->mutable_diff()
                                                       : nullptr;
    };
    prim::batchnorm_bwd_training_fused(
        h, bn_, epilogue(), desc_, x_norm_->raw_data(), top[0]->raw_diff(), inv_std_->data(),
        scale_ ? param_diff(0) : nullptr, scale_ ? param_diff(scale_->bias_index()) : nullptr,
        desc_, bottom[0]->mutable_raw_diff());
  } else if (use_global_stats_) {
    prim::batchnorm_bwd_inference(h, bn_, desc_, top[0]->raw_diff(), var_->data(), desc_,
                                  bottom[0]->mutable_raw_diff());
  } else {
    prim::batchnorm_bwd_training(h, bn_, desc_, x_norm_->raw_data(), top[0]->raw_diff(),
                                 inv_std_->data(), desc_, bottom[0]->mutable_raw_diff());
  }
}

template class BatchNormLayer<float>;
template class BatchNormLayer<double>;

}  // namespace crema
