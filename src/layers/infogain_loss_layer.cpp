// InfogainLoss layer: the infogain matrix (file or bottom) and its shape checks, the softmax and
// the infogain loss primitives.
#include "layers/infogain_loss_layer.h"

#include "core/proto_io.h"

namespace crema {
namespace {

// The element count a stored blob's shape claims, or -1 past kMaxTensorElements; computed before
// anything is allocated because the file is untrusted.
int64_t claimed_count(const BlobProto& b) {
  std::vector<int64_t> dims;
  if (b.has_num() || b.has_channels() || b.has_height() || b.has_width())
    dims = {b.num(), b.channels(), b.height(), b.width()};
  else
    dims.assign(b.shape().dim().begin(), b.shape().dim().end());
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || (d > 0 && n > kMaxTensorElements / d)) return -1;
    n *= d;
  }
  return n;
}

}  // namespace

template <typename Dtype>
void InfogainLossLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors& top) {
  SoftmaxLossLayer<Dtype, prim::InfogainLossDesc>::layer_setup(bottom, top);
  if (bottom.size() > 2) return;

  source_ = this->param_.infogain_loss_param().source();
  if (source_.empty())
    this->error(
        "infogain_loss_param.source is required when the infogain matrix is not given "
        "as a third bottom");
  const int64_t classes =
      bottom[0]->shape(bottom[0]->canonical_axis(this->param_.infogain_loss_param().axis()));
  BlobProto blob;
  try {
    read_binary_proto(source_, &blob);
  } catch (const Error& e) {
    this->error("infogain matrix: ", e.what());
  }
  const int64_t stored = blob.double_data_size() > 0 ? blob.double_data_size() : blob.data_size();
  const int64_t claimed = claimed_count(blob);
  if (claimed != classes * classes || stored != claimed)
    this->error("infogain matrix in ", source_, " holds ", stored, " values for a shape of ",
                claimed < 0 ? std::string("too many") : std::to_string(claimed),
                " elements, but the ", classes, " classes need ", classes, " x ", classes);
  infogain_ = std::make_unique<Tensor<Dtype>>(this->device_);
  try {
    infogain_->from_proto(blob);
  } catch (const Error& e) {
    this->error("infogain matrix in ", source_, ": ", e.what());
  }
}

template <typename Dtype>
void InfogainLossLayer<Dtype>::reshape(const Tensors& bottom, const Tensors& top) {
  const Tensor<Dtype>& x = *bottom[0];
  const int axis = this->shape_softmax(x, this->param_.infogain_loss_param().axis());
  const prim::InfogainLossDesc& loss = this->loss_;
  if (x.count() == 0 || bottom[1]->count() != loss.outer * loss.inner)
    this->error("the number of labels must match the number of predictions: the scores are (",
                x.shape_string(), ") with infogain axis ", axis, ", so ", loss.outer * loss.inner,
                " labels are needed, but the labels are (", bottom[1]->shape_string(), ")");
  const Tensor<Dtype>& H = infogain(bottom);
  if (H.count() != loss.channels * loss.channels)
    this->error("the infogain matrix ",
                bottom.size() > 2 ? std::string("(bottom 2)") : "in " + source_, " is (",
                H.shape_string(), ") but the ", loss.channels, " classes need ", loss.channels,
                " x ", loss.channels);
  this->shape_tops(x, top);
}

template <typename Dtype>
void InfogainLossLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  this->softmax_forward(h, *bottom[0]);
  this->naming_layer_prim([&] {
    prim::infogain_loss_fwd(h, this->loss_, this->prob_->data(), bottom[1]->data(),
                            infogain(bottom).data(), top[0]->mutable_data());
  });
}

template <typename Dtype>
void InfogainLossLayer<Dtype>::backward(Handle& h, const Tensors& top,
                                        const std::vector<bool>& propagate_down,
                                        const Tensors& bottom) {
  const bool to_scores = this->propagate_to_predictions(propagate_down);
  if (propagate_down.size() > 2 && propagate_down[2])
    this->error("cannot backpropagate to the infogain matrix input");
  if (!to_scores) return;
  this->naming_layer_prim([&] {
    prim::infogain_loss_bwd(h, this->loss_, this->prob_->data(), bottom[1]->data(),
                            infogain(bottom).data(), this->top_loss_weight(0, *top[0]),
                            bottom[0]->mutable_diff());
  });
}

template class InfogainLossLayer<float>;
template class InfogainLossLayer<double>;

}  // namespace crema
