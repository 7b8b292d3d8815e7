// Pooling layer: parameter parsing, shape inference and the calls into the pool primitives.
#include "layers/pooling_layer.h"

namespace crema {

template <typename Dtype>
void PoolingLayer<Dtype>::layer_setup(const Tensors&, const Tensors& top) {
  const PoolingParameter& p = this->param_.pooling_param();
  switch (p.pool()) {
    case PoolingParameter::MAX:
      pool_.mode = prim::PoolMode::kMax;
      break;
    case PoolingParameter::AVE:
      pool_.mode = prim::PoolMode::kAverage;
      break;
    default:
      this->error("pool method ", PoolingParameter::PoolMethod_Name(p.pool()),
                  " is not supported (use MAX or AVE)");
  }
  if (top.size() > 1)
    this->error(pool_.mode == prim::PoolMode::kMax
                    ? "the max-pooling mask top is not supported: give one top"
                    : "average pooling produces one top");

  global_ = p.global_pooling();
  const bool has_kernel = p.has_kernel_size() || p.has_kernel_h() || p.has_kernel_w();
  if (global_) {
    if (has_kernel) this->error("with global_pooling the kernel size cannot be given");
  } else {
    if (p.has_kernel_size() && (p.has_kernel_h() || p.has_kernel_w()))
      this->error("give either kernel_size or kernel_h/kernel_w, not both");
    if (!p.has_kernel_size() && !(p.has_kernel_h() && p.has_kernel_w()))
      this->error("kernel_size (or both kernel_h and kernel_w) is required");
    pool_.kernel_h = int(p.has_kernel_size() ? p.kernel_size() : p.kernel_h());
    pool_.kernel_w = int(p.has_kernel_size() ? p.kernel_size() : p.kernel_w());
    if (pool_.kernel_h <= 0 || pool_.kernel_w <= 0)
      this->error("kernel size must be positive, got ", pool_.kernel_h, "x", pool_.kernel_w);
  }
  if (p.has_pad() && (p.has_pad_h() || p.has_pad_w()))
    this->error("give either pad or pad_h/pad_w, not both");
  if (p.has_pad_h() != p.has_pad_w()) this->error("both pad_h and pad_w are needed");
  pool_.pad_h = int(p.has_pad_h() ? p.pad_h() : p.pad());
  pool_.pad_w = int(p.has_pad_w() ? p.pad_w() : p.pad());
  if (p.has_stride() && (p.has_stride_h() || p.has_stride_w()))
    this->error("give either stride or stride_h/stride_w, not both");
  if (p.has_stride_h() != p.has_stride_w()) this->error("both stride_h and stride_w are needed");
  pool_.stride_h = int(p.has_stride_h() ? p.stride_h() : p.stride());
  pool_.stride_w = int(p.has_stride_w() ? p.stride_w() : p.stride());
  if (pool_.stride_h <= 0 || pool_.stride_w <= 0)
    this->error("stride must be positive, got ", pool_.stride_h, "x", pool_.stride_w);
  if (global_ &&
      (pool_.pad_h != 0 || pool_.pad_w != 0 || pool_.stride_h != 1 || pool_.stride_w != 1))
    this->error("with global_pooling, pad must be 0 and stride 1");
  ceil_mode_ = p.round_mode() == PoolingParameter::CEIL;
}

template <typename Dtype>
void PoolingLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& x = *bottom[0];
  if (x.num_axes() != 4)
    this->error("input must have 4 axes (num, channels, height, width), got (", x.shape_string(),
                ")");
  const int in_h = desc_size(x.height(), "the input height");
  const int in_w = desc_size(x.width(), "the input width");
  if (global_) {
    pool_.kernel_h = in_h;
    pool_.kernel_w = in_w;
  }
  int out_h = 0, out_w = 0;
  try {
    out_h = prim::pool_out_dim(in_h, pool_.kernel_h, pool_.pad_h, pool_.stride_h, ceil_mode_);
    out_w = prim::pool_out_dim(in_w, pool_.kernel_w, pool_.pad_w, pool_.stride_w, ceil_mode_);
  } catch (const prim::PrimError& e) {
    this->error("kernel ", pool_.kernel_h, "x", pool_.kernel_w, " with pad ", pool_.pad_h, "x",
                pool_.pad_w, " does not fit the input ", in_h, "x", in_w, ": ", e.what());
  }
  x_desc_ = x.desc();
  y_desc_ = (top[0]->channels_last() ? prim::TensorDesc::nhwc : prim::TensorDesc::nchw)(
      x.storage(), x_desc_.n, x_desc_.c, out_h, out_w);
  top[0]->reshape({x.num(), x.channels(), out_h, out_w});
}

template <typename Dtype>
void PoolingLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  prim::pool_fwd(h, pool_, x_desc_, bottom[0]->raw_data(), y_desc_, top[0]->mutable_raw_data(),
                 prim::Blend{1, 0});
}

template <typename Dtype>
void PoolingLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                   const std::vector<bool>& propagate_down, const Tensors& bottom) {
  if (!propagate_down[0]) return;
  // Average pooling's gradient reads no data (uses()): it gets none.
  const bool reads = uses() == DataUse::kBackward;
  prim::pool_bwd(h, pool_, y_desc_, reads ? top[0]->raw_data() : nullptr, top[0]->raw_diff(),
                 x_desc_, reads ? bottom[0]->raw_data() : nullptr, bottom[0]->mutable_raw_diff(),
                 prim::Blend{1, 0});
}

template class PoolingLayer<float>;
template class PoolingLayer<double>;

}  // namespace crema
