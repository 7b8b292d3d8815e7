// Data layer: LMDB -> Datum -> transformer -> prefetched host batches -> device tops.
#include "layers/data_layer.h"

#include <glog/logging.h>
#include <sys/stat.h>

#include <cstring>
#include <string>
#include <type_traits>

#include "core/rng.h"
#include "data/datum.h"
#include "data/lmdb_db.h"
#include "data/prefetch.h"
#include "data/transformer.h"

namespace crema {

namespace {

constexpr uint32_t kMaxPrefetch = 1024;

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Caffe's old nets put the preprocessing fields in data_param; they count where transform_param
// leaves them unset.
TransformationParameter transform_of(const LayerParameter& p) {
  TransformationParameter t = p.transform_param();
  const DataParameter& d = p.data_param();
  if (d.has_scale() && !t.has_scale()) t.set_scale(d.scale());
  if (d.has_mean_file() && !t.has_mean_file()) t.set_mean_file(d.mean_file());
  if (d.has_crop_size() && !t.has_crop_size()) t.set_crop_size(d.crop_size());
  if (d.has_mirror() && !t.has_mirror()) t.set_mirror(d.mirror());
  return t;
}

std::string record_name(const std::string& db, std::string_view key) {
  return detail::make_message(db, ": record '", key, "'");
}

}  // namespace

template <typename Dtype>
DataLayer<Dtype>::DataLayer(const LayerParameter& param, Device device)
    : Layer<Dtype>(param, device) {}

template <typename Dtype>
DataLayer<Dtype>::~DataLayer() {
  prefetcher_.reset();
}

template <typename Dtype>
void DataLayer<Dtype>::layer_setup(const Tensors& bottom, const Tensors& top) {
  (void)bottom;
  const DataParameter& p = this->param_.data_param();
  const std::string& source = p.source();
  if (source.empty()) this->error("data_param.source is not set");
  const std::string leveldb_help =
      "LevelDB is not supported; convert the data set to LMDB (convert_mnist --backend=lmdb, or "
      "Caffe's convert_imageset --backend=lmdb) and set data_param.backend: LMDB";
  // backend defaults to LEVELDB in Caffe's schema, yet nets that leave it out usually point at
  // an LMDB: only an explicit LEVELDB, or a directory that looks like a LevelDB, is refused.
  if (p.has_backend() && p.backend() == DataParameter::LEVELDB)
    this->error(source, ": ", leveldb_help);
  if (!p.has_backend() && file_exists(source + "/CURRENT") && !file_exists(source + "/data.mdb"))
    this->error(source, ": this looks like a LevelDB. ", leveldb_help);
  if (p.batch_size() == 0) this->error("data_param.batch_size must be positive");
  if (p.batch_size() > uint32_t(INT32_MAX)) this->error("data_param.batch_size is too large");
  if (p.prefetch() == 0 || p.prefetch() > kMaxPrefetch)
    this->error("data_param.prefetch must be between 1 and ", kMaxPrefetch, "; got ", p.prefetch());
  batch_size_ = int(p.batch_size());

  const TransformationParameter tp = transform_of(this->param_);
  const ColorMode color = tp.force_color()  ? ColorMode::kColor
                          : tp.force_gray() ? ColorMode::kGray
                                            : ColorMode::kNative;
  if (tp.force_color() && tp.force_gray())
    this->error("transform_param: force_color and force_gray exclude each other");
  Rng& rng = thread_rng();
  try {
    reader_ = std::make_unique<LmdbReader>(source);
    transformer_ = std::make_unique<DataTransformer>(tp, this->phase(), rng());

    // The first record defines the example shape.
    Datum datum;
    ChwImage image;
    decode_datum(reader_->value(), source, reader_->key(), &datum);
    datum_to_chw(datum, record_name(source, reader_->key()), color, &image);
    channels_ = image.channels;
    height_ = image.height;
    width_ = image.width;
    out_shape_ = transformer_->output_shape(channels_, height_, width_);
    top[0]->reshape({batch_size_, out_shape_[0], out_shape_[1], out_shape_[2]});
    if (top.size() > 1) top[1]->reshape({batch_size_});
  } catch (const Error& e) {
    this->error(e.what());
  }
  // Caffe's rand_skip: start at a random record, so that parallel runs see different orders.
  if (p.rand_skip() > 0 && this->phase() == TRAIN) {
    const uint64_t skip = rng() % p.rand_skip();
    for (uint64_t i = 0; i < skip; ++i) reader_->next();
  }
  LOG(INFO) << "layer " << this->name() << ": " << reader_->size() << " records in " << source
            << ", output data size: " << top[0]->shape_string();

  prefetcher_ = std::make_unique<Prefetcher>(
      p.prefetch(),
      [this, color](HostBatch* batch, const Prefetcher& self) { fill(batch, color, self); });
}

template <typename Dtype>
void DataLayer<Dtype>::fill(HostBatch* batch, ColorMode color, const Prefetcher& prefetcher) {
  const size_t example = size_t(out_shape_[0]) * out_shape_[1] * out_shape_[2];
  batch->data.resize(example * batch_size_);
  batch->label.resize(batch_size_);
  const std::string& source = reader_->path();
  for (int i = 0; i < batch_size_; ++i) {
    if (prefetcher.stopping()) return;
    decode_datum(reader_->value(), source, reader_->key(), &datum_);
    const std::string where = record_name(source, reader_->key());
    datum_to_chw(datum_, where, color, &image_);
    if (image_.channels != channels_ || image_.height != height_ || image_.width != width_)
      fail(where, ": shape ", image_.channels, "x", image_.height, "x", image_.width,
           " differs from the first record's ", channels_, "x", height_, "x", width_,
           "; every record must have the same shape");
    transformer_->transform(image_.data.data(), channels_, height_, width_,
                            batch->data.data() + example * i);
    batch->label[i] = float(datum_.label());
    reader_->next();
  }
}

template <typename Dtype>
void DataLayer<Dtype>::forward(Handle& h, const Tensors& bottom, const Tensors& top) {
  (void)h;
  (void)bottom;
  HostBatch* batch = nullptr;
  try {
    batch = prefetcher_->next();
  } catch (const Error& e) {
    this->error(e.what());
  }
  // Copies the host floats to a top on the layer's device, converting first when Dtype is not
  // float.
  auto copy = [this](const std::vector<float>& src, Tensor<Dtype>* dst) {
    const void* host = src.data();
    if constexpr (!std::is_same_v<Dtype, float>) {
      staging_.assign(src.begin(), src.end());
      host = staging_.data();
    }
    prim::device_memcpy(dst->mutable_data(), dst->device(), host, Device::kCPU, dst->bytes());
  };
  copy(batch->data, top[0]);
  if (top.size() > 1) copy(batch->label, top[1]);
  prefetcher_->release(batch);
}

template class DataLayer<float>;
template class DataLayer<double>;

}  // namespace crema
