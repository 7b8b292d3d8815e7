// Eltwise layer: parameter checks and the eltwise primitives.
#include "layers/eltwise_layer.h"

#include <string>

#include "layers/proto_enum.h"
#include "layers/structure_util.h"

namespace crema {

template <typename Dtype>
void EltwiseLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors& top) {
  const EltwiseParameter& p = this->param_.eltwise_param();
  desc_.num_inputs = int(bottom.size());
  desc_.stable_prod_grad = p.stable_prod_grad();
  desc_.op = from_proto<prim::EltwiseOp>(*this, p.operation(), "operation",
                                         {{EltwiseParameter::SUM, prim::EltwiseOp::kSum},
                                          {EltwiseParameter::PROD, prim::EltwiseOp::kProd},
                                          {EltwiseParameter::MAX, prim::EltwiseOp::kMax}});
  if (p.coeff_size() > 0 && desc_.op != prim::EltwiseOp::kSum)
    this->error("coeff applies to the SUM operation only");
  if (p.coeff_size() > 0 && p.coeff_size() != int(bottom.size()))
    this->error(p.coeff_size(), " coeff(s) for ", bottom.size(), " bottoms: give one per bottom");
  desc_.coeff.assign(p.coeff().begin(), p.coeff().end());
  for (size_t k = 1; k < bottom.size(); ++k)
    if (bottom[k] == top[0]) this->error("only bottom 0 may be computed in place");
  if (bottom[0] == top[0] && desc_.op == prim::EltwiseOp::kProd)
    this->error("PROD cannot run in place: its gradient needs the inputs");
}

template <typename Dtype>
void EltwiseLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& x0 = *bottom[0];
  for (size_t k = 1; k < bottom.size(); ++k)
    if (bottom[k]->shape() != x0.shape())
      this->error("bottom ", k, " has shape (", bottom[k]->shape_string(), ") but bottom 0 has (",
                  x0.shape_string(), "): all bottoms must have the same shape");
  if (top[0] != bottom[0]) top[0]->reshape_like(x0);
  desc_.n = x0.count();
  desc_.dtype = x0.storage();
  if (desc_.op == prim::EltwiseOp::kMax) {
    const size_t bytes = size_t(desc_.n) * sizeof(int32_t);
    if (!argmax_ || argmax_->bytes() < bytes)
      argmax_ = std::make_unique<prim::DeviceBuffer>(this->device_, bytes);
  }
}

template <typename Dtype>
void EltwiseLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  std::vector<const void*> x;
  for (Tensor<Dtype>* b : bottom) x.push_back(b->raw_data());
  int32_t* argmax = argmax_ ? static_cast<int32_t*>(argmax_->get()) : nullptr;
  prim::eltwise_fwd(h, desc_, x.data(), top[0]->mutable_raw_data(), argmax);
}

template <typename Dtype>
bool EltwiseLayer<Dtype>::absorb(Layer<Dtype>& next, bool backward) {
  const double slope = next.param().relu_param().negative_slope();
  if (std::string(next.type()) != "ReLU" || desc_.relu || !(slope >= 0) ||
      (backward && desc_.op != prim::EltwiseOp::kSum))
    return false;
  desc_.relu = true;
  desc_.negative_slope = slope;
  return true;
}

template <typename Dtype>
void EltwiseLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                   const std::vector<bool>& propagate_down, const Tensors& bottom) {
  // Only PROD's gradient reads data (uses()), and the fused ReLU's reads y; others get none.
  const bool reads = uses() == DataUse::kBackward;
  std::vector<const void*> x;
  std::vector<void*> dx;
  for (size_t k = 0; k < bottom.size(); ++k) {
    x.push_back(reads ? bottom[k]->raw_data() : nullptr);
    dx.push_back(propagate_down[k] ? bottom[k]->mutable_raw_diff() : nullptr);
  }
  const int32_t* argmax = argmax_ ? static_cast<const int32_t*>(argmax_->get()) : nullptr;
  prim::eltwise_bwd(h, desc_, x.data(), reads || desc_.relu ? top[0]->raw_data() : nullptr,
                    top[0]->raw_diff(), argmax, dx.data());
}

template class EltwiseLayer<float>;
template class EltwiseLayer<double>;

}  // namespace crema
