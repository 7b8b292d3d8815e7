// Data layer (Caffe's "Data"): examples from an LMDB or a LevelDB of Datum records
// (data_param.backend; left out, what is at the source: Caffe's schema defaults to LEVELDB, yet
// nets that leave it out usually point at an LMDB), read in key order by the engine's reader and
// decoded (raw pixels, float_data, or an encoded JPEG/PNG: data/image_io.h) by its workers
// (BasePrefetchingDataLayer, which also transforms and batches them; data_param.threads sets the
// number of workers), or, for JPEG records, by the GPU's hardware decoder (data_param.decoder).
// Records wrap around to the first after the last.
//
// Tops: top[0] data, batch_size x C x H' x W' (the first record's C x H x W, after the crop);
// top[1] label, batch_size (optional). A bad record (corrupt bytes, a shape unlike the first
// record's) is thrown by the forward() that would have used it, as crema::Error naming the DB
// and the key.
//
// Crops, flips and rand_skip draw from generators seeded at setup from the calling thread's
// generator (crema::thread_rng, seeded with random_seed), so seeded runs repeat exactly.
#pragma once

#include <memory>
#include <string>

#include "layers/base_data_layer.h"

namespace crema {

class RecordReader;

template <typename Dtype>
class DataLayer : public BasePrefetchingDataLayer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;

  DataLayer(const LayerParameter& param, Device device);
  // Stops and joins the prefetch thread.
  ~DataLayer() override;

  // Opens data_param.source, shapes the tops from the first record, starts the thread.
  void layer_setup(const Tensors& bottom, const Tensors& top) override;

  LayerSignature signature() const override { return this->signature_of("Data"); }

 protected:
  void read_record(SourceRecord* record) override;
  float decode_record(const SourceRecord& record, ChwImage* image,
                      std::string* where) const override;
  bool jpeg_record(const SourceRecord& record, std::string* jpeg, float* label,
                   std::string* where) const override;
  void skip_example() override;
  void seek_source(uint64_t records) override;

 private:
  ColorMode color_ = ColorMode::kNative;
  uint64_t start_skip_ = 0;  // rand_skip's draw
  std::unique_ptr<RecordReader> reader_;
};

}  // namespace crema
