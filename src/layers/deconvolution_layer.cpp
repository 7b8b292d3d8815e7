// Deconvolution layer: the swapped conv primitive calls (setup and shapes: base_conv_layer.cpp).
#include "layers/deconvolution_layer.h"

#include "primitives/blas.h"

namespace crema {

template <typename Dtype>
void DeconvolutionLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  const Dtype* w = this->blobs_[0]->data();
  for (size_t i = 0; i < bottom.size(); ++i) {
    Dtype* y = top[i]->mutable_data();
    prim::conv_bwd_data(h, this->conv_, prim::ConvAlgo::kAuto, this->filter_, w, this->y_desc_,
                        bottom[i]->data(), this->x_desc_, y, prim::Blend{1, 0});
    if (this->bias_term_) prim::bias_add(h, this->x_desc_, y, this->blobs_[1]->data());
  }
}

template <typename Dtype>
void DeconvolutionLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                         const std::vector<bool>& propagate_down,
                                         const Tensors& bottom) {
  const prim::Blend accumulate{1, 1};
  const bool beside = this->filter_grad_beside();
  if (beside) h.fork();
  for (size_t i = 0; i < top.size(); ++i) {
    const Dtype* dy = top[i]->diff();
    // The convolution's input is our top (its gradient dy here) and its output our bottom.
    if (this->param_propagate_down(0))
      prim::conv_bwd_filter(beside ? h.side() : h, this->conv_bwd_, prim::ConvAlgo::kAuto,
                            this->x_desc_, dy, this->y_desc_, bottom[i]->data(), this->filter_,
                            this->blobs_[0]->mutable_diff(), accumulate);
    if (this->bias_term_ && this->param_propagate_down(1))
      prim::conv_bwd_bias(h, this->x_desc_, dy, this->blobs_[1]->mutable_diff(), accumulate);
    if (propagate_down[i])
      prim::conv_fwd(h, this->conv_bwd_, prim::ConvAlgo::kAuto, this->x_desc_, dy, this->filter_,
                     this->blobs_[0]->data(), this->y_desc_, bottom[i]->mutable_diff(),
                     prim::Blend{1, 0});
  }
  if (beside) h.join();
}

template class DeconvolutionLayer<float>;
template class DeconvolutionLayer<double>;

}  // namespace crema
