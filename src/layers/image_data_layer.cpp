// ImageData layer: list file -> image files -> C-H-W floats, for BasePrefetchingDataLayer.
#include "layers/image_data_layer.h"

#include <glog/logging.h>

#include <algorithm>

namespace crema {

template <typename Dtype>
ImageDataLayer<Dtype>::ImageDataLayer(const LayerParameter& param, Device device)
    : BasePrefetchingDataLayer<Dtype>(param, device) {}

template <typename Dtype>
ImageDataLayer<Dtype>::~ImageDataLayer() {
  this->stop_prefetch();
}

template <typename Dtype>
void ImageDataLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors& top) {
  (void)bottom;
  const ImageDataParameter& p = this->param_.image_data_param();
  if (p.source().empty()) this->error("image_data_param.source is not set");
  if (p.batch_size() == 0) this->error("image_data_param.batch_size must be positive");
  if ((p.new_height() > 0) != (p.new_width() > 0))
    this->error("image_data_param: set both new_height and new_width, or neither; got ",
                p.new_height(), " and ", p.new_width());
  if (p.new_height() > uint32_t(INT32_MAX) || p.new_width() > uint32_t(INT32_MAX))
    this->error("image_data_param: new_height and new_width are too large");
  if (!image_io_available())
    this->error(p.source(), ": cannot read images: crema was built without OpenCV");
  options_.color = p.is_color() ? ColorMode::kColor : ColorMode::kGray;
  options_.new_height = int(p.new_height());
  options_.new_width = int(p.new_width());

  const TransformationParameter tp = merge_legacy_transform(this->param_.transform_param(), p);
  if (tp.force_color() || tp.force_gray())
    this->error(
        "transform_param force_color/force_gray do not apply; use image_data_param "
        "is_color");
  try {
    entries_ = read_image_list(p.source());
    this->init_transformer(tp);
    shuffle_rng_.seed(thread_rng()());
    if (p.shuffle()) std::shuffle(entries_.begin(), entries_.end(), shuffle_rng_);
    // Caffe's rand_skip: start at a random entry, so that parallel runs see different orders.
    if (p.rand_skip() > 0) position_ = size_t(shuffle_rng_() % p.rand_skip()) % entries_.size();
    // The first image defines the example shape; it is read again by the first batch.
    ChwImage image;
    std::string where;
    read_entry(position_, &image, &where);
    this->start_prefetch(p.batch_size(), "image_data_param.batch_size", image.channels,
                         image.height, image.width, top);
  } catch (const Error& e) {
    this->error(e.what());
  }
  LOG(INFO) << "layer " << this->name() << ": " << entries_.size() << " images in " << p.source()
            << ", output data size: " << top[0]->shape_string();
}

template <typename Dtype>
void ImageDataLayer<Dtype>::read_entry(size_t i, ChwImage* image, std::string* where) {
  const ImageDataParameter& p = this->param_.image_data_param();
  const ImageListEntry& e = entries_[i];
  const std::string path = p.root_folder() + e.path;
  *where = detail::make_message(p.source(), ":", e.line, ": image ", path);
  try {
    read_image_to_datum(path, e.label, options_, &datum_);
  } catch (const Error& err) {
    fail(p.source(), ":", e.line, ": ", err.what());
  }
  datum_to_chw(datum_, *where, ColorMode::kNative, image);
}

template <typename Dtype>
float ImageDataLayer<Dtype>::read_example(ChwImage* image, std::string* where) {
  read_entry(position_, image, where);
  const float label = float(entries_[position_].label);
  skip_example();
  return label;
}

template <typename Dtype>
void ImageDataLayer<Dtype>::skip_example() {
  if (++position_ < entries_.size()) return;
  position_ = 0;
  if (this->param_.image_data_param().shuffle())
    std::shuffle(entries_.begin(), entries_.end(), shuffle_rng_);
}

template class ImageDataLayer<float>;
template class ImageDataLayer<double>;

}  // namespace crema
