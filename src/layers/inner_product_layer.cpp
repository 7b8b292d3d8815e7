// InnerProduct layer: one GEMM forward (the bias and an absorbed ReLU in its epilogue), two
// backward, plus the bias gradient.
#include "layers/inner_product_layer.h"

#include <string>

#include "core/filler.h"
#include "core/precision.h"
#include "primitives/activation.h"
#include "primitives/blas.h"
#include "primitives/tensor_copy.h"
#include "primitives/view.h"

namespace crema {
namespace {

// n values from one storage type to another.
void convert(Handle& h, prim::DataType from, const void* x, prim::DataType to, void* y, int64_t n) {
  prim::tensor_copy(h, prim::ViewDesc::packed(from, {n}), x, prim::ViewDesc::packed(to, {n}), y);
}

}  // namespace

template <typename Dtype>
void InnerProductLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors&) {
  const InnerProductParameter& p = this->param_.inner_product_param();
  if (p.num_output() == 0) this->error("num_output must be positive");
  axis_ = bottom[0]->canonical_axis(p.axis());
  bias_term_ = p.bias_term();
  fwd_math_ = layer_forward_math(this->param_, this->device());
  bwd_math_ = layer_backward_math(this->param_, this->device());
  transpose_ = p.transpose();
  const int64_t n = p.num_output();
  const int64_t k = bottom[0]->count(axis_);
  // Sizes come from the model file: check the weight count before allocating anything, so an
  // absurd num_output is a clear error rather than an allocation failure.
  if (k > 0 && n > kMaxTensorElements / k)
    this->error("weight of ", n, " x ", k, " elements is too large (num_output ", n, ", at most ",
                kMaxTensorElements, " elements per tensor)");
  const std::vector<int64_t> wshape =
      transpose_ ? std::vector<int64_t>{k, n} : std::vector<int64_t>{n, k};
  this->naming_layer([&] {
    // Shaping checks the weight against the device's memory, before anything is filled.
    this->blobs_.clear();
    this->blobs_.push_back(std::make_shared<Tensor<Dtype>>(wshape, this->device_));
    if (bias_term_)
      this->blobs_.push_back(
          std::make_shared<Tensor<Dtype>>(std::vector<int64_t>{n}, this->device_));
    // GEMM (OpenBLAS, cuBLAS) takes 32-bit sizes.
    n_ = desc_size(n, "num_output");
    k_ = desc_size(k, "the inputs per row");
    fill_tensor(p.weight_filler(), this->blobs_[0].get());
    if (bias_term_) fill_tensor(p.bias_filler(), this->blobs_[1].get());
  });
  x32_ = std::make_unique<Tensor<Dtype>>(this->device_);
  y32_ = std::make_unique<Tensor<Dtype>>(this->device_);
}

template <typename Dtype>
bool InnerProductLayer<Dtype>::absorb(Layer<Dtype>& next, bool) {
  if (relu_ || next.type() != std::string("ReLU") ||
      next.param().relu_param().negative_slope() != 0)
    return false;
  relu_ = true;
  return true;
}

template <typename Dtype>
void InnerProductLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& x = *bottom[0];
  if (x.num_axes() <= axis_) this->error("input (", x.shape_string(), ") has no axis ", axis_);
  if (x.count(axis_) != k_)
    this->error("input (", x.shape_string(), ") has ", x.count(axis_), " values per row from axis ",
                axis_, " but the weights expect ", k_);
  m_ = desc_size(x.count(0, axis_), "the rows of the input");
  std::vector<int64_t> shape(x.shape().begin(), x.shape().begin() + axis_);
  shape.push_back(n_);
  this->naming_layer([&] { top[0]->reshape(shape); });
  if (x.storage() != dtype_of<Dtype>()) x32_->reshape_like(x);
  if (top[0]->storage() != dtype_of<Dtype>()) y32_->reshape_like(*top[0]);
}

template <typename Dtype>
void InnerProductLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  const prim::DataType t = dtype_of<Dtype>();
  const Tensor<Dtype>& xt = *bottom[0];
  Tensor<Dtype>& yt = *top[0];
  const bool half_x = xt.storage() != t, half_y = yt.storage() != t;
  if (half_x) convert(h, xt.storage(), xt.raw_data(), t, x32_->mutable_data(), xt.count());
  Dtype* y = half_y ? y32_->mutable_data() : yt.mutable_data();
  prim::gemm(h, t, prim::Trans::kNo, transpose_ ? prim::Trans::kNo : prim::Trans::kYes, m_, n_, k_,
             1.0, half_x ? x32_->data() : xt.data(), this->blobs_[0]->data(), 0.0, y, fwd_math_,
             prim::GemmEpilogue{bias_term_ ? this->blobs_[1]->data() : nullptr, relu_});
  if (half_y) convert(h, t, y, yt.storage(), yt.mutable_raw_data(), yt.count());
}

template <typename Dtype>
void InnerProductLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                        const std::vector<bool>& propagate_down,
                                        const Tensors& bottom) {
  const prim::DataType t = dtype_of<Dtype>();
  Tensor<Dtype>& xt = *bottom[0];
  const Tensor<Dtype>& yt = *top[0];
  const bool half_x = xt.storage() != t, half_y = yt.storage() != t;
  if (relu_) {  // the absorbed ReLU's backward, in place: dy where the output is positive
    const prim::TensorDesc d = flat_desc(yt.storage(), yt.count());
    prim::act_bwd(h, prim::ActDesc{}, d, nullptr, yt.raw_diff(), d, yt.raw_data(),
                  top[0]->mutable_raw_diff());
  }
  if (half_y) convert(h, yt.storage(), yt.raw_diff(), t, y32_->mutable_diff(), yt.count());
  const Dtype* dy = half_y ? y32_->diff() : yt.diff();
  const Dtype* x = half_x ? x32_->data() : xt.data();  // the copy forward made
  const bool beside =
      this->param_propagate_down(0) && this->weight_grad_beside(double(m_) * n_ * k_);
  if (beside) h.fork();
  if (this->param_propagate_down(0)) {
    Handle& g = beside ? h.side() : h;
    Dtype* dw = this->blobs_[0]->mutable_diff();
    if (transpose_) {
      prim::gemm(g, t, prim::Trans::kYes, prim::Trans::kNo, k_, n_, m_, 1.0, x, dy, 1.0, dw,
                 bwd_math_);
    } else {
      prim::gemm(g, t, prim::Trans::kYes, prim::Trans::kNo, n_, k_, m_, 1.0, dy, x, 1.0, dw,
                 bwd_math_);
    }
  }
  if (bias_term_ && this->param_propagate_down(1))
    prim::bias_bwd(h, prim::TensorDesc::nchw(t, m_, n_, 1, 1), dy, this->blobs_[1]->mutable_diff(),
                   prim::Blend{1, 1});
  if (propagate_down[0]) {
    Dtype* dx = half_x ? x32_->mutable_diff() : xt.mutable_diff();
    prim::gemm(h, t, prim::Trans::kNo, transpose_ ? prim::Trans::kYes : prim::Trans::kNo, m_, k_,
               n_, 1.0, dy, this->blobs_[0]->data(), 0.0, dx, bwd_math_);
    if (half_x) convert(h, t, dx, xt.storage(), xt.mutable_raw_diff(), xt.count());
  }
  if (beside) h.join();
}

template class InnerProductLayer<float>;
template class InnerProductLayer<double>;

}  // namespace crema
