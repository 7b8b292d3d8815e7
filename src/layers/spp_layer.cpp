// SPP layer: per-level pooling geometry and strided views of the concatenated top.
#include "layers/spp_layer.h"

#include <string>

namespace crema {

template <typename Dtype>
void SppLayer<Dtype>::layer_setup(const Tensors&, const Tensors&) {
  const SPPParameter& p = this->param_.spp_param();
  // 2^l bins per side must fit an int and an input dimension; 16 levels is far beyond either.
  if (p.pyramid_height() < 1 || p.pyramid_height() > 16)
    this->error("spp_param.pyramid_height must be in [1, 16], got ", p.pyramid_height());
  pyramid_height_ = int(p.pyramid_height());
  switch (p.pool()) {
    case SPPParameter::MAX:
      mode_ = prim::PoolMode::kMax;
      break;
    case SPPParameter::AVE:
      mode_ = prim::PoolMode::kAverage;
      break;
    default:
      this->error("only MAX and AVE pooling are supported (STOCHASTIC is not)");
  }
}

template <typename Dtype>
void SppLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& x = *bottom[0];
  if (x.num_axes() != 4) this->error("input (", x.shape_string(), ") must be N x C x H x W");
  x_desc_ = x.desc();
  x_desc_.dtype = dtype_of<Dtype>();
  const int n = x_desc_.n, c = x_desc_.c, in_h = x_desc_.h, in_w = x_desc_.w;
  int64_t total = 0;  // values per image in the top
  for (int l = 0; l < pyramid_height_; ++l) total += int64_t(c) << (2 * l);

  levels_.clear();
  int64_t offset = 0;
  for (int l = 0; l < pyramid_height_; ++l) {
    const int bins = 1 << l;
    Level lv;
    lv.pool.mode = mode_;
    lv.pool.kernel_h = (in_h + bins - 1) / bins;
    lv.pool.kernel_w = (in_w + bins - 1) / bins;
    lv.pool.pad_h = (lv.pool.kernel_h * bins - in_h + 1) / 2;
    lv.pool.pad_w = (lv.pool.kernel_w * bins - in_w + 1) / 2;
    lv.pool.stride_h = lv.pool.kernel_h;
    lv.pool.stride_w = lv.pool.kernel_w;
    try {
      const int out_h =
          prim::pool_out_dim(in_h, lv.pool.kernel_h, lv.pool.pad_h, lv.pool.stride_h, true);
      const int out_w =
          prim::pool_out_dim(in_w, lv.pool.kernel_w, lv.pool.pad_w, lv.pool.stride_w, true);
      if (out_h != bins || out_w != bins)
        throw prim::PrimError("pooling gives " + std::to_string(out_h) + "x" +
                              std::to_string(out_w) + " bins");
    } catch (const prim::PrimError& e) {
      this->error("input ", in_h, "x", in_w, " is too small for pyramid_height ", pyramid_height_,
                  ": level ", l, " needs ", bins, "x", bins, " bins (", e.what(), ")");
    }
    // Packed bins per channel, channels per image, images total values apart.
    lv.view = prim::TensorDesc::nchw(dtype_of<Dtype>(), n, c, bins, bins);
    lv.view.stride_n = pyramid_height_ == 1 ? lv.view.stride_n : total;
    lv.offset = offset;
    offset += int64_t(c) * bins * bins;
    levels_.push_back(lv);
  }
  this->naming_layer([&] {
    if (pyramid_height_ == 1)
      top[0]->reshape({n, c, 1, 1});
    else
      top[0]->reshape({n, total});
  });
}

template <typename Dtype>
void SppLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  Dtype* y = top[0]->mutable_data();
  for (const Level& lv : levels_)
    prim::pool_fwd(h, lv.pool, x_desc_, bottom[0]->data(), lv.view, y + lv.offset,
                   prim::Blend{1, 0});
}

template <typename Dtype>
void SppLayer<Dtype>::backward(Handle& h, const Tensors& top,
                               const std::vector<bool>& propagate_down, const Tensors& bottom) {
  if (!propagate_down[0]) return;
  const Dtype* y = top[0]->data();
  const Dtype* dy = top[0]->diff();
  Dtype* dx = bottom[0]->mutable_diff();
  for (size_t l = 0; l < levels_.size(); ++l) {
    const Level& lv = levels_[l];
    prim::pool_bwd(h, lv.pool, lv.view, y + lv.offset, dy + lv.offset, x_desc_, bottom[0]->data(),
                   dx, prim::Blend{1, l == 0 ? 0.0 : 1.0});
  }
}

template class SppLayer<float>;
template class SppLayer<double>;

}  // namespace crema
