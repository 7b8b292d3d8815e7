// InfogainLoss layer: the infogain matrix (file or bottom) and its shape checks, the softmax and
// the infogain loss primitives.
#include "layers/infogain_loss_layer.h"

#include "core/proto_io.h"
#include "layers/loss_helpers.h"

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
void InfogainLossLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors&) {
  const LossParameter& p = this->param_.loss_param();
  loss_.dtype = softmax_.dtype = dtype_of<Dtype>();
  loss_.has_ignore_label = p.has_ignore_label();
  loss_.ignore_label = p.ignore_label();
  loss_.normalization = loss_normalization(p, LossParameter::VALID);
  prob_ = std::make_unique<Tensor<Dtype>>(this->device_);
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
  const int axis = x.canonical_axis(this->param_.infogain_loss_param().axis());
  softmax_.outer = loss_.outer = x.count(0, axis);
  softmax_.channels = loss_.channels = x.shape(axis);
  softmax_.inner = loss_.inner = x.count(axis + 1);
  if (x.count() == 0 || bottom[1]->count() != loss_.outer * loss_.inner)
    this->error("the number of labels must match the number of predictions: the scores are (",
                x.shape_string(), ") with infogain axis ", axis, ", so ", loss_.outer * loss_.inner,
                " labels are needed, but the labels are (", bottom[1]->shape_string(), ")");
  const Tensor<Dtype>& H = infogain(bottom);
  if (H.count() != loss_.channels * loss_.channels)
    this->error("the infogain matrix ",
                bottom.size() > 2 ? std::string("(bottom 2)") : "in " + source_, " is (",
                H.shape_string(), ") but the ", loss_.channels, " classes need ", loss_.channels,
                " x ", loss_.channels);
  reshape_softmax_loss_tops(x, *prob_, top);
}

template <typename Dtype>
void InfogainLossLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  prim::softmax_fwd(h, softmax_, bottom[0]->data(), prob_->mutable_data(), prim::Blend{1, 0});
  this->naming_layer_prim([&] {
    prim::infogain_loss_fwd(h, loss_, prob_->data(), bottom[1]->data(), infogain(bottom).data(),
                            top[0]->mutable_data());
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
    prim::infogain_loss_bwd(h, loss_, prob_->data(), bottom[1]->data(), infogain(bottom).data(),
                            this->top_loss_weight(0, *top[0]), bottom[0]->mutable_diff());
  });
}

template class InfogainLossLayer<float>;
template class InfogainLossLayer<double>;

}  // namespace crema
