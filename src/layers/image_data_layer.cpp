// ImageData layer: list file -> image files -> C-H-W floats, for BasePrefetchingDataLayer.
#include "layers/image_data_layer.h"

#include <glog/logging.h>

#include <algorithm>

#include "data/batch_engine.h"

namespace crema {

template <typename Dtype>
ImageDataLayer<Dtype>::ImageDataLayer(const LayerParameter& param, Device device)
    : BasePrefetchingDataLayer<Dtype>(param, device) {}

template <typename Dtype>
ImageDataLayer<Dtype>::~ImageDataLayer() {
  this->stop_prefetch();
}

template <typename Dtype>
void ImageDataLayer<Dtype>::layer_setup(const Tensors&, const Tensors& top) {
  const ImageDataParameter& p = this->param_.image_data_param();
  if (p.source().empty()) this->error("image_data_param.source is not set");
  if (p.batch_size() == 0) this->error("image_data_param.batch_size must be positive");
  if ((p.new_height() > 0) != (p.new_width() > 0))
    this->error("image_data_param: set both new_height and new_width, or neither; got ",
                p.new_height(), " and ", p.new_width());
  if (p.new_height() > uint32_t(INT32_MAX) || p.new_width() > uint32_t(INT32_MAX))
    this->error("image_data_param: new_height and new_width are too large");
  options_.color = p.is_color() ? ColorMode::kColor : ColorMode::kGray;
  options_.new_height = int(p.new_height());
  options_.new_width = int(p.new_width());

  const TransformationParameter tp = merge_legacy_transform(this->param_.transform_param(), p);
  if (tp.force_color() || tp.force_gray())
    this->error(
        "transform_param force_color/force_gray do not apply; use image_data_param "
        "is_color");
  this->naming_layer([&] {
    entries_ = read_image_list(p.source());
    this->init_transformer(tp);
    shuffle_seed_ = thread_rng()();
    // Caffe's rand_skip: start at a random entry, so that parallel runs see different orders.
    if (p.rand_skip() > 0)
      start_position_ = size_t(thread_rng()() % p.rand_skip()) % entries_.size();
    go_to(0, start_position_);
    // The first image defines the example shape; it is read again by the first batch.
    ChwImage image;
    std::string where;
    read_entry(order_.empty() ? position_ : order_[position_], &image, &where);
    this->start_prefetch(p.batch_size(), "image_data_param.batch_size", p.threads(), image.channels,
                         image.height, image.width, top);
  });
  LOG(INFO) << "layer " << this->name() << ": " << entries_.size() << " images in " << p.source()
            << ", output data size: " << top[0]->shape_string() << ", " << this->decode_workers()
            << " decode worker(s)";
}

template <typename Dtype>
void ImageDataLayer<Dtype>::read_entry(size_t i, ChwImage* image, std::string* where) const {
  const ImageDataParameter& p = this->param_.image_data_param();
  const ImageListEntry& e = entries_[i];
  const std::string path = p.root_folder() + e.path;
  *where = detail::make_message(p.source(), ":", e.line, ": image ", path);
  Datum datum;
  try {
    read_image_to_datum(path, e.label, options_, &datum);
  } catch (const Error& err) {
    fail(p.source(), ":", e.line, ": ", err.what());
  }
  datum_to_chw(datum, *where, ColorMode::kNative, image);
}

template <typename Dtype>
void ImageDataLayer<Dtype>::read_record(SourceRecord* record) {
  record->entry = order_.empty() ? position_ : order_[position_];
  skip_example();
}

template <typename Dtype>
float ImageDataLayer<Dtype>::decode_record(const SourceRecord& record, ChwImage* image,
                                           std::string* where) const {
  read_entry(record.entry, image, where);
  return float(entries_[record.entry].label);
}

template <typename Dtype>
void ImageDataLayer<Dtype>::skip_example() {
  if (++position_ < entries_.size()) return;
  go_to(epoch_ + 1, 0);
}

template <typename Dtype>
void ImageDataLayer<Dtype>::go_to(uint64_t epoch, size_t position) {
  position_ = position;
  if (!this->param_.image_data_param().shuffle() || (epoch == epoch_ && !order_.empty())) {
    epoch_ = epoch;
    return;
  }
  epoch_ = epoch;
  order_.resize(entries_.size());
  for (size_t i = 0; i < order_.size(); ++i) order_[i] = i;
  Rng rng(shuffle_seed_ + epoch * 0x9E3779B97F4A7C15ull);
  std::shuffle(order_.begin(), order_.end(), rng);
}

template <typename Dtype>
void ImageDataLayer<Dtype>::seek_source(uint64_t records) {
  const uint64_t size = entries_.size();
  if (size == 0) return;
  // start + records, as an epoch and a place in it, without overflowing 64 bits.
  const uint64_t place = start_position_ + records % size;
  go_to(records / size + place / size, size_t(place % size));
}

template class ImageDataLayer<float>;
template class ImageDataLayer<double>;

}  // namespace crema
