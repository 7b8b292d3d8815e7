// DummyData layer: shapes from dummy_data_param, data from fillers.
#include "layers/dummy_data_layer.h"

#include "core/filler.h"

namespace crema {

template <typename Dtype>
const FillerParameter& DummyDataLayer<Dtype>::filler(size_t top_index) const {
  const DummyDataParameter& p = this->param_.dummy_data_param();
  if (p.data_filler_size() == 0) return zero_filler_;
  return p.data_filler(p.data_filler_size() == 1 ? 0 : int(top_index));
}

template <typename Dtype>
void DummyDataLayer<Dtype>::layer_setup(const Tensors&, const Tensors& top) {
  const DummyDataParameter& p = this->param_.dummy_data_param();
  const int num_top = int(top.size());
  auto one_or_all = [num_top](int n) { return n == 1 || n == num_top; };
  if (p.data_filler_size() != 0 && !one_or_all(p.data_filler_size()))
    this->error("dummy_data_param.data_filler must be given 0, 1 or ", num_top,
                " (one per top) times; got ", p.data_filler_size());

  const bool legacy =
      p.num_size() > 0 || p.channels_size() > 0 || p.height_size() > 0 || p.width_size() > 0;
  if (legacy) {
    if (p.shape_size() > 0)
      this->error("dummy_data_param: give either shape or num/channels/height/width, not both");
    if (!one_or_all(p.num_size()) || !one_or_all(p.channels_size()) ||
        !one_or_all(p.height_size()) || !one_or_all(p.width_size()))
      this->error("dummy_data_param: num, channels, height and width must each be given 1 or ",
                  num_top, " (one per top) times");
  } else if (!one_or_all(p.shape_size())) {
    this->error("dummy_data_param.shape must be given 1 or ", num_top, " (one per top) times; got ",
                p.shape_size());
  }

  zero_filler_.set_type("constant");
  zero_filler_.set_value(0);
  refill_.assign(num_top, false);
  for (int i = 0; i < num_top; ++i) {
    std::vector<int64_t> shape;
    if (legacy) {
      auto pick = [i](const auto& field) { return int64_t(field.Get(field.size() == 1 ? 0 : i)); };
      shape = {pick(p.num()), pick(p.channels()), pick(p.height()), pick(p.width())};
    } else {
      const BlobShape& s = p.shape(p.shape_size() == 1 ? 0 : i);
      shape.assign(s.dim().begin(), s.dim().end());
    }
    try {
      top[i]->reshape(shape);
      // A constant top never changes, so it is filled once; a random one is redrawn each
      // forward (filled here too, so the top is valid right after setup).
      refill_[i] = filler(i).type() != "constant";
      fill_tensor(filler(i), top[i]);
    } catch (const Error& e) {
      this->error("top ", i, ": ", e.what());
    }
  }
}

template <typename Dtype>
void DummyDataLayer<Dtype>::forward(Handle&, const Tensors&, const Tensors& top) {
  for (size_t i = 0; i < top.size(); ++i)
    if (refill_[i]) fill_tensor(filler(i), top[i]);
}

template class DummyDataLayer<float>;
template class DummyDataLayer<double>;

}  // namespace crema
