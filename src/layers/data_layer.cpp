// Data layer: LMDB or LevelDB -> Datum -> C-H-W floats, for BasePrefetchingDataLayer.
#include "layers/data_layer.h"

#include <glog/logging.h>

#include <string>

#include "core/rng.h"
#include "data/batch_engine.h"
#include "data/datum.h"
#include "data/jpeg_codec.h"
#include "data/record_db.h"

namespace crema {

namespace {

std::string record_name(const std::string& db, std::string_view key) {
  return detail::make_message(db, ": record '", key, "'");
}

}  // namespace

template <typename Dtype>
DataLayer<Dtype>::DataLayer(const LayerParameter& param, Device device)
    : BasePrefetchingDataLayer<Dtype>(param, device) {}

template <typename Dtype>
DataLayer<Dtype>::~DataLayer() {
  this->stop_prefetch();
}

template <typename Dtype>
void DataLayer<Dtype>::layer_setup(const Tensors&, const Tensors& top) {
  const DataParameter& p = this->param_.data_param();
  const std::string& source = p.source();
  if (source.empty()) this->error("data_param.source is not set");
  const RecordBackend backend = !p.has_backend() ? detect_record_backend(source)
                                : p.backend() == DataParameter::LEVELDB ? RecordBackend::kLevelDb
                                                                        : RecordBackend::kLmdb;
  if (p.batch_size() == 0) this->error("data_param.batch_size must be positive");

  const TransformationParameter tp = merge_legacy_transform(this->param_.transform_param(), p);
  color_ = tp.force_color()  ? ColorMode::kColor
           : tp.force_gray() ? ColorMode::kGray
                             : ColorMode::kNative;
  this->naming_layer([&] {
    reader_ = open_record_reader(source, backend);
    this->init_transformer(tp);
    // The first record defines the example shape; the reader stays on it.
    ChwImage image;
    Datum datum;
    decode_datum(reader_->value(), source, reader_->key(), &datum);
    datum_to_chw(datum, record_name(source, reader_->key()), color_, &image);
    // Caffe's rand_skip: start at a random record, so that parallel runs see different orders.
    if (p.rand_skip() > 0 && this->phase() == TRAIN) {
      start_skip_ = thread_rng()() % p.rand_skip();
      for (uint64_t i = 0; i < start_skip_; ++i) reader_->next();
    }
    if (datum.encoded() && looks_like_jpeg(datum.data())) this->decode_jpegs(p.decoder(), color_);
    this->start_prefetch(p.batch_size(), "data_param.batch_size", p.threads(), image.channels,
                         image.height, image.width, top);
  });
  LOG(INFO) << "layer " << this->name() << ": " << reader_->size() << " records in "
            << record_backend_name(backend) << " " << source
            << ", output data size: " << top[0]->shape_string() << ", " << this->decode_workers()
            << " decode worker(s)" << (this->gpu_decodes() ? ", JPEGs decoded on the GPU" : "");
}

template <typename Dtype>
void DataLayer<Dtype>::read_record(SourceRecord* record) {
  // Copied: the reader's views end when it moves on, and the workers decode later.
  record->key.assign(reader_->key());
  record->value.assign(reader_->value());
  reader_->next();
}

template <typename Dtype>
float DataLayer<Dtype>::decode_record(const SourceRecord& record, ChwImage* image,
                                      std::string* where) const {
  const std::string& source = reader_->path();
  *where = record_name(source, record.key);
  Datum datum;
  decode_datum(record.value, source, record.key, &datum);
  datum_to_chw(datum, *where, color_, image);
  return float(datum.label());
}

template <typename Dtype>
bool DataLayer<Dtype>::jpeg_record(const SourceRecord& record, std::string* jpeg, float* label,
                                   std::string* where) const {
  const std::string& source = reader_->path();
  *where = record_name(source, record.key);
  Datum datum;
  decode_datum(record.value, source, record.key, &datum);
  if (!datum.encoded() || !looks_like_jpeg(datum.data())) return false;
  jpeg->swap(*datum.mutable_data());
  *label = float(datum.label());
  return true;
}

template <typename Dtype>
void DataLayer<Dtype>::skip_example() {
  reader_->next();
}

template <typename Dtype>
void DataLayer<Dtype>::seek_source(uint64_t records) {
  // Records wrap around after the last, so the place is the count modulo the size.
  const uint64_t size = reader_->size();
  if (size == 0) return;
  const uint64_t place = (start_skip_ % size + records % size) % size;
  reader_->rewind();
  for (uint64_t i = 0; i < place; ++i) reader_->next();
}

template class DataLayer<float>;
template class DataLayer<double>;

}  // namespace crema
