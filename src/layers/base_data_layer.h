// Base of the prefetching data layers (Data, ImageData): what they share besides where examples
// come from. A subclass reads one example at a time (read_example, on the prefetch thread); the
// base checks that every example has the shape fixed at setup, transforms it with the
// DataTransformer (transform_param: crop, mirror, mean, scale), fills data_param.prefetch
// (default 4) host batches ahead of use, and forward() copies the next batch to the layer's
// device. On a GPU the prefetch thread also uploads each batch from pinned memory on its own
// stream, so the upload overlaps the previous iteration's kernels; forward() only queues a
// device-to-device copy behind it, without blocking the host. An error met by the thread (a corrupt
// record, an unreadable image) is thrown by the forward() that would have used the example, as a
// layer error naming the example.
//
// In data-parallel training (core/replica.h) a TRAIN-phase layer keeps the records of its replica
// only, as Caffe does: counting from the first record it reads, record i goes to replica
// i mod count, so the replicas' batches together are the batch of one run at count times the
// batch size.
//
// Tops: top[0] data, batch_size x C x H' x W' (after the crop); top[1] label, batch_size
// (optional). No bottoms, no backward.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/layer.h"
#include "core/replica.h"
#include "data/datum.h"

namespace crema {

class DataTransformer;
class Prefetcher;
struct HostBatch;

// Caffe's old nets put the preprocessing fields (scale, mean_file, crop_size, mirror) in the data
// layer's own parameter; they count where transform_param leaves them unset.
template <typename LegacyParam>
TransformationParameter merge_legacy_transform(const TransformationParameter& t0,
                                               const LegacyParam& legacy) {
  TransformationParameter t = t0;
  if (legacy.has_scale() && !t.has_scale()) t.set_scale(legacy.scale());
  if (legacy.has_mean_file() && !t.has_mean_file()) t.set_mean_file(legacy.mean_file());
  if (legacy.has_crop_size() && !t.has_crop_size()) t.set_crop_size(legacy.crop_size());
  if (legacy.has_mirror() && !t.has_mirror()) t.set_mirror(legacy.mirror());
  return t;
}

template <typename Dtype>
class BasePrefetchingDataLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;

  BasePrefetchingDataLayer(const LayerParameter& param, Device device);
  ~BasePrefetchingDataLayer() override;

  // Shapes are fixed at setup.
  void reshape(const Tensors&, const Tensors&) override {}
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle&, const Tensors&, const std::vector<bool>&, const Tensors&) override {}

  int exact_num_bottom() const override { return 0; }
  int min_num_top() const override { return 1; }
  int max_num_top() const override { return 2; }

  // The records passed by the batches handed out so far (rounded up to whole rounds of the
  // replicas, so that each replica resumes at its next record) and the transformer's generator
  // after them. Restoring stops the prefetch thread, moves the source there and starts it again;
  // a replica other than the first keeps its own generator (the state is the first's).
  bool reader_state(DataReaderState* state) const override;
  void restore_reader_state(const DataReaderState& state) override;

 protected:
  // Runs on the prefetch thread: reads the next example into *image (C-H-W floats) and returns
  // its label; *where names the example in error messages. Throws crema::Error on bad data.
  virtual float read_example(ChwImage* image, std::string* where) = 0;
  // Runs on the prefetch thread: moves past the next example without reading it (another
  // replica's).
  virtual void skip_example() = 0;
  // Runs with the prefetch thread stopped: puts the source where it stands after `records`
  // records from the layer's start (read or skipped), in time bounded by the source's size.
  virtual void seek_source(uint64_t records) = 0;
  // The end of the error for an example whose shape differs from the first one's.
  virtual const char* shape_mismatch_hint() const {
    return "every record must have the same shape";
  }

  // Creates the transformer, seeded from the calling thread's generator (crema::thread_rng), so
  // seeded runs repeat their crops and flips. Throws crema::Error (e.g. an unreadable mean file).
  void init_transformer(const TransformationParameter& param);
  // Validates batch_size (batch_field names it in errors) and data_param.prefetch, fixes the
  // example shape c x h x w (checked against the transformer), shapes the tops and starts the
  // prefetch thread. Throws crema::Error.
  void start_prefetch(uint32_t batch_size, const char* batch_field, int channels, int height,
                      int width, const Tensors& top);
  // Stops and joins the prefetch thread. Subclass destructors call it first, since the thread
  // calls read_example.
  void stop_prefetch();

  int batch_size() const { return batch_size_; }

 private:
  void fill(HostBatch* batch, const Prefetcher& prefetcher);
  void upload(HostBatch* batch);
  void launch_prefetcher();

  int batch_size_ = 0;
  uint32_t depth_ = 0;                         // batches prefetched
  uint64_t consumed_records_ = 0;              // after the batches forward handed out
  std::mt19937_64 consumed_random_;            // the transformer's generator after them
  Replica replica_;                            // whose records this layer keeps
  uint64_t next_record_ = 0;                   // counted from the first record read
  int channels_ = 0, height_ = 0, width_ = 0;  // of every example
  std::vector<int> out_shape_;                 // of one transformed example
  std::unique_ptr<DataTransformer> transformer_;
  std::vector<Dtype> staging_;  // host conversion when Dtype is not float
  ChwImage image_;              // prefetch thread's scratch
  std::string where_;           // prefetch thread's scratch
  // The prefetch thread's stream for uploads (GPU layers with float data only).
  std::unique_ptr<Handle> upload_;
  // Declared last so that it is destroyed (its thread joined) before what the thread uses.
  std::unique_ptr<Prefetcher> prefetcher_;
};

}  // namespace crema
