// Reshape layer: Caffe's shape rules (0 copies, one -1 inferred) and the shared memory.
#include "layers/reshape_layer.h"

#include <algorithm>
#include <sstream>

#include "layers/structure_util.h"

namespace crema {
namespace {

std::string dims_string(const BlobShape& s) {
  std::ostringstream os;
  for (int i = 0; i < s.dim_size(); ++i) os << (i ? " " : "") << s.dim(i);
  return os.str();
}

}  // namespace

template <typename Dtype>
void ReshapeLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors& top) {
  if (top[0] == bottom[0]) this->error("cannot run in place (a top must not be its bottom)");
  const ReshapeParameter& p = this->param_.reshape_param();
  int inferred = 0;
  for (int64_t d : p.shape().dim()) {
    if (d == -1) ++inferred;
    if (d < -1) this->error("shape dim ", d, " is invalid: use a size, 0 (copy) or -1 (infer)");
  }
  if (inferred > 1)
    this->error("shape { ", dims_string(p.shape()), " } has ", inferred,
                " dims of -1; at most one can be inferred");
  if (p.num_axes() < -1) this->error("num_axes ", p.num_axes(), " must be -1 or non-negative");
}

template <typename Dtype>
void ReshapeLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const ReshapeParameter& p = this->param_.reshape_param();
  const Tensor<Dtype>& x = *bottom[0];
  const int n = x.num_axes();
  const int start = p.axis() >= 0 ? p.axis() : n + p.axis() + 1;
  if (start < 0 || start > n)
    this->error("axis ", p.axis(), " is out of range for an input of shape (", x.shape_string(),
                ")");
  const int end = p.num_axes() == -1 ? n : start + p.num_axes();
  if (end > n)
    this->error("axis ", p.axis(), " with num_axes ", p.num_axes(),
                " goes past the last axis of the input (", x.shape_string(), ")");
  std::vector<int64_t> shape(x.shape().begin(), x.shape().begin() + start);
  int infer_at = -1;
  int64_t known = x.count(0, start) * x.count(end, n);
  for (int i = 0; i < p.shape().dim_size(); ++i) {
    int64_t d = p.shape().dim(i);
    if (d == 0) {
      if (start + i >= n)
        this->error("shape dim ", i, " is 0 (copy) but the input (", x.shape_string(),
                    ") has no axis ", start + i);
      d = x.shape(start + i);
    }
    if (d == -1) {
      infer_at = int(shape.size());
    } else {
      // Saturate just above the largest tensor: sizes come from the model file, and the
      // product must not overflow.
      const int64_t c = checked_count({known, d});
      known = c < 0 ? kMaxTensorElements + 1 : c;
    }
    shape.push_back(d);
  }
  shape.insert(shape.end(), x.shape().begin() + end, x.shape().end());
  if (infer_at >= 0) {
    if (known == 0 || x.count() % known != 0)
      this->error("cannot infer the -1 dim of shape { ", dims_string(p.shape()), " }: the input (",
                  x.shape_string(), ") has ", x.count(), " elements, not a multiple of ", known);
    shape[size_t(infer_at)] = x.count() / known;
  } else if (known != x.count()) {
    std::ostringstream os;
    for (size_t i = 0; i < shape.size(); ++i) os << (i ? " " : "") << shape[i];
    this->error("shape { ", dims_string(p.shape()), " } gives (", os.str(), ") with ", known,
                " elements but the input (", x.shape_string(), ") has ", x.count());
  }
  structure::layer_reshape(*this, top[0], shape);
  // Re-shared on every reshape: the bottom's memory may have been reallocated to grow.
  top[0]->share_data(x);
  top[0]->share_diff(x);
}

template class ReshapeLayer<float>;
template class ReshapeLayer<double>;

}  // namespace crema
