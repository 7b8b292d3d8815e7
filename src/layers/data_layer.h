// Data layer (Caffe's "Data"): examples from an LMDB of Datum records, read, decoded and
// transformed (transform_param: crop, mirror, mean, scale) by a background thread into
// data_param.prefetch (default 4) host batches ahead of use. Records are taken in key order and
// wrap around to the first after the last.
//
// Tops: top[0] data, batch_size x C x H' x W' (the first record's C x H x W, after the crop);
// top[1] label, batch_size (optional). forward() copies the next ready batch to the layer's
// device. A bad record (corrupt bytes, a shape unlike the first record's) met by the thread is
// thrown by the forward() that would have used it, as crema::Error naming the DB and the key.
//
// Crops and flips draw from the layer's own generator, seeded at setup from the calling thread's
// generator (crema::thread_rng, seeded with random_seed), so seeded runs repeat exactly.
#pragma once

#include <memory>
#include <vector>

#include "core/layer.h"
#include "data/datum.h"

namespace crema {

class DataTransformer;
class LmdbReader;
class Prefetcher;
struct HostBatch;

template <typename Dtype>
class DataLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;

  DataLayer(const LayerParameter& param, Device device);
  // Stops and joins the prefetch thread.
  ~DataLayer() override;

  // Opens data_param.source, shapes the tops from the first record, starts the thread.
  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  // Shapes are fixed at setup.
  void reshape(const Tensors&, const Tensors&) override {}
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle&, const Tensors&, const std::vector<bool>&, const Tensors&) override {}

  const char* type() const override { return "Data"; }
  int exact_num_bottom() const override { return 0; }
  int min_num_top() const override { return 1; }
  int max_num_top() const override { return 2; }

 private:
  // Runs on the prefetch thread: reads, decodes and transforms one batch.
  void fill(HostBatch* batch, ColorMode color, const Prefetcher& prefetcher);

  int batch_size_ = 0;
  int channels_ = 0, height_ = 0, width_ = 0;  // of every record
  std::vector<int> out_shape_;                 // of one transformed example
  std::unique_ptr<LmdbReader> reader_;
  std::unique_ptr<DataTransformer> transformer_;
  std::vector<Dtype> staging_;  // host conversion when Dtype is not float
  Datum datum_;                 // prefetch thread's scratch
  ChwImage image_;              // prefetch thread's scratch
  // Declared last so that it is destroyed (its thread joined) before what the thread uses.
  std::unique_ptr<Prefetcher> prefetcher_;
};

}  // namespace crema
