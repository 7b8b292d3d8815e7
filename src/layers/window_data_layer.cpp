// WindowData layer: foreground and background windows of listed images, warped into batches.
#include "layers/window_data_layer.h"

#include <glog/logging.h>

#include "core/errors.h"
#include "core/proto_io.h"
#include "core/rng.h"
#include "data/batch_engine.h"
#include "data/image_io.h"

namespace crema {

namespace {
constexpr int kChannels = 3;  // images are always decoded as colour, as Caffe does
}  // namespace

template <typename Dtype>
WindowDataLayer<Dtype>::WindowDataLayer(const LayerParameter& param, Device device)
    : BasePrefetchingDataLayer<Dtype>(param, device) {}

template <typename Dtype>
WindowDataLayer<Dtype>::~WindowDataLayer() {
  this->stop_prefetch();
}

template <typename Dtype>
void WindowDataLayer<Dtype>::load_mean(const TransformationParameter& t) {
  if (t.has_mean_file() && t.mean_value_size() > 0)
    fail("transform_param: give mean_file or mean_value, not both");
  if (t.mean_value_size() > 0) {
    if (t.mean_value_size() != 1 && t.mean_value_size() != kChannels)
      fail("transform_param: give 1 or ", kChannels, " mean_value; got ", t.mean_value_size());
    for (int c = 0; c < kChannels; ++c)
      mean_.values.push_back(t.mean_value(t.mean_value_size() == 1 ? 0 : c));
  }
  if (!t.has_mean_file()) return;
  BlobProto blob;
  read_binary_proto(t.mean_file(), &blob);
  std::vector<int64_t> dims(blob.shape().dim().begin(), blob.shape().dim().end());
  if (blob.has_num() || blob.has_channels() || blob.has_height() || blob.has_width())
    dims = {blob.num(), blob.channels(), blob.height(), blob.width()};
  while (dims.size() > 3 && dims.front() == 1) dims.erase(dims.begin());
  if (dims.size() != 3 || dims[0] != kChannels || dims[1] > 65536 || dims[2] > 65536 ||
      blob.data_size() != dims[0] * dims[1] * dims[2])
    fail(t.mean_file(), ": the mean must be one ", kChannels, "-channel image");
  mean_.height = int(dims[1]);
  mean_.width = int(dims[2]);
  // Caffe reads the mean at the crop's place in the centre crop_size square of the mean image.
  const int offset = (mean_.width - crop_size_) / 2;
  if (offset < 0 || offset + crop_size_ > mean_.height)
    fail(t.mean_file(), ": the ", mean_.height, "x", mean_.width,
         " mean image is smaller than its centre crop_size ", crop_size_, " square");
  mean_.image.assign(blob.data().begin(), blob.data().end());
}

template <typename Dtype>
void WindowDataLayer<Dtype>::layer_setup(const Tensors&, const Tensors& top) {
  const WindowDataParameter& p = this->param_.window_data_param();
  if (!image_io_available())
    this->error(p.source(), ": cannot read images: crema was built without OpenCV");
  const TransformationParameter t = merge_legacy_transform(this->param_.transform_param(), p);
  crop_size_ = int(t.crop_size());
  context_pad_ = int(p.context_pad());
  if (crop_size_ <= 0 || crop_size_ > 4096)
    this->error("crop_size (transform_param or window_data_param) must be in [1, 4096]");
  if (2 * int64_t(p.context_pad()) >= crop_size_)
    this->error("context_pad ", p.context_pad(), " leaves nothing of a ", crop_size_,
                " crop; it must be below crop_size / 2");
  if (p.crop_mode() != "warp" && p.crop_mode() != "square")
    this->error("crop_mode must be \"warp\" or \"square\"; got \"", p.crop_mode(), "\"");
  if (!(p.fg_fraction() >= 0 && p.fg_fraction() <= 1))
    this->error("fg_fraction must be in [0, 1]; got ", p.fg_fraction());
  if (t.force_color() || t.force_gray())
    this->error("transform_param force_color/force_gray do not apply: images are read in colour");
  square_ = p.crop_mode() == "square";
  mirror_ = t.mirror();
  scale_ = t.scale();
  batch_size_ = int(std::min<uint32_t>(p.batch_size(), INT32_MAX));
  foreground_per_batch_ = int(float(batch_size_) * p.fg_fraction());
  this->naming_layer([&] {
    windows_ = read_window_file(p.source(), p.root_folder(), p.fg_threshold(), p.bg_threshold());
    if (foreground_per_batch_ > 0 && windows_.foreground.empty())
      fail(p.source(), ": no foreground window (overlap >= fg_threshold ", p.fg_threshold(),
           "), but fg_fraction asks for ", foreground_per_batch_, " per batch");
    if (batch_size_ > foreground_per_batch_ && windows_.background.empty())
      fail(p.source(), ": no background window (overlap < bg_threshold ", p.bg_threshold(),
           "), but fg_fraction asks for ", batch_size_ - foreground_per_batch_, " per batch");
    if (p.cache_images())
      for (const WindowImage& image : windows_.images)
        cache_.push_back(read_file_bytes(image.path));
    load_mean(t);
    seed_ = thread_rng()();
    // The window is warped, mirrored and normalized here: the base's transform does nothing.
    this->init_transformer(TransformationParameter());
    // window_data_param has no worker count field: the default (data/batch_engine.h).
    this->start_prefetch(p.batch_size(), "window_data_param.batch_size", 0, kChannels, crop_size_,
                         crop_size_, top);
  });
  LOG(INFO) << "layer " << this->name() << ": " << windows_.images.size() << " images, "
            << windows_.foreground.size() << " foreground and " << windows_.background.size()
            << " background windows in " << p.source() << "; " << foreground_per_batch_
            << " foreground windows per batch of " << batch_size_;
}

template <typename Dtype>
void WindowDataLayer<Dtype>::read_record(SourceRecord* record) {
  (void)record;  // its number (the base's count, equal to next_example_) is all a window needs
  ++next_example_;
}

template <typename Dtype>
float WindowDataLayer<Dtype>::decode_record(const SourceRecord& record, ChwImage* image,
                                            std::string* where) const {
  const uint64_t n = record.number;
  Rng rng(seed_ + n * 0x9E3779B97F4A7C15ull);
  // Background windows first in each batch, then foreground ones.
  const bool foreground = int(n % uint64_t(batch_size_)) >= batch_size_ - foreground_per_batch_;
  const std::vector<Window>& set = foreground ? windows_.foreground : windows_.background;
  const Window& w = set[uint32_t(rng()) % set.size()];
  const bool mirror = mirror_ && uint32_t(rng()) % 2 == 1;
  const WindowImage& source = windows_.images[size_t(w.image)];
  *where =
      this->param_.window_data_param().source() + ":" + std::to_string(w.line) + ": " + source.path;
  std::string read_bytes;
  if (cache_.empty()) {
    try {
      read_bytes = read_file_bytes(source.path);
    } catch (const Error& e) {
      fail(this->param_.window_data_param().source(), ":", w.line, ": ", e.what());
    }
  }
  const std::string& bytes = cache_.empty() ? read_bytes : cache_[size_t(w.image)];
  image->channels = kChannels;
  image->height = image->width = crop_size_;
  image->data.resize(size_t(kChannels) * crop_size_ * crop_size_);
  crop_window(bytes, *where, w, crop_size_, context_pad_, square_, mirror, scale_, mean_,
              image->data.data());
  return float(w.label);
}

template class WindowDataLayer<float>;
template class WindowDataLayer<double>;

}  // namespace crema
