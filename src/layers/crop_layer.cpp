// Crop layer: offsets and sizes checked against both bottoms, then the window views.
#include "layers/crop_layer.h"

#include "layers/structure_util.h"
#include "primitives/blas.h"
#include "primitives/tensor_copy.h"

namespace crema {

template <typename Dtype>
void CropLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const CropParameter& p = this->param_.crop_param();
  const Tensor<Dtype>& x = *bottom[0];
  const Tensor<Dtype>& ref = *bottom[1];
  if (top[0] == bottom[0]) this->error("cannot run in place (a top must not be its bottom)");
  if (x.num_axes() != ref.num_axes())
    this->error("bottom 0 (", x.shape_string(), ") and bottom 1 (", ref.shape_string(),
                ") must have the same number of axes");
  const int start = structure::layer_axis(*this, x, p.axis());
  const int cropped = x.num_axes() - start;
  if (p.offset_size() > 1 && p.offset_size() != cropped)
    this->error(p.offset_size(), " offsets for ", cropped, " cropped axes (", start, " to ",
                x.num_axes() - 1, "): give none, one, or one per cropped axis");
  // The view: axes before `start` folded into one, then every cropped axis.
  if (1 + cropped > prim::ViewDesc::kMaxDims)
    this->error("crops ", cropped, " axes; at most ", prim::ViewDesc::kMaxDims - 1,
                " are supported");
  std::vector<int64_t> shape = x.shape();
  std::vector<int64_t> sizes = {x.count(0, start)};
  int64_t offset = 0;
  for (int i = start; i < x.num_axes(); ++i) {
    const int64_t o = p.offset_size() == 0 ? 0 : p.offset(p.offset_size() == 1 ? 0 : i - start);
    if (o + ref.shape(i) > x.shape(i))
      this->error("crop of size ", ref.shape(i), " at offset ", o, " on axis ", i,
                  " does not fit in the input (", x.shape_string(), "), whose axis ", i,
                  " has size ", x.shape(i));
    shape[i] = ref.shape(i);
    sizes.push_back(ref.shape(i));
    offset += o * x.count(i + 1);
  }
  structure::layer_reshape(*this, top[0], shape);
  packed_ = prim::ViewDesc::packed(dtype_of<Dtype>(), sizes);
  window_ = packed_;
  window_.stride[0] = x.count(start);
  for (int i = start; i < x.num_axes(); ++i) window_.stride[1 + i - start] = x.count(i + 1);
  window_offset_ = offset;
}

template <typename Dtype>
void CropLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  prim::tensor_copy(h, window_, bottom[0]->data() + window_offset_, packed_,
                    top[0]->mutable_data());
}

template <typename Dtype>
void CropLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                const std::vector<bool>& propagate_down, const Tensors& bottom) {
  const prim::DataType t = dtype_of<Dtype>();
  if (propagate_down[0]) {
    Dtype* dx = bottom[0]->mutable_diff();
    prim::fill(h, t, bottom[0]->count(), 0.0, dx);
    prim::tensor_copy(h, packed_, top[0]->diff(), window_, dx + window_offset_);
  }
  // The output does not depend on bottom 1's values.
  if (propagate_down.size() > 1 && propagate_down[1])
    prim::fill(h, t, bottom[1]->count(), 0.0, bottom[1]->mutable_diff());
}

template class CropLayer<float>;
template class CropLayer<double>;

}  // namespace crema
