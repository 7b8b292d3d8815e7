// Base of the prefetching data layers (Data, ImageData): what they share besides where examples
// come from. The layer's BatchEngine (data/batch_engine.h) runs the source's reader on one thread
// (read_record: the DB cursor, the image list, in order) and decodes the records on a pool of
// workers (decode_record), which also check that every example has the shape fixed at setup and
// transform it with the DataTransformer (transform_param: crop, mirror, mean, scale) into its
// place in a host batch; data_param.prefetch (default 4) batches are in flight, and forward()
// copies the next one in order to the layer's device. Crops and flips are drawn per example
// number, so the batches are the same for any number of workers. On a GPU the batch is uploaded
// from pinned memory on the layer's own upload stream as soon as it is complete, so the upload
// overlaps the previous iteration's kernels; forward() only queues a device-to-device copy behind
// it, without blocking the host. An error met by the reader or a worker (a corrupt record, an
// unreadable image) is thrown by the forward() that would have used the example, as a layer error
// naming the example.
//
// JPEG records (decode_jpegs) skip the floats: a worker transforms the 8-bit pixels it decoded,
// and on a GPU (float data) hands them to the batch's finish, which uploads them (a third of the
// bytes) and transforms them there, with the same crops and flips (data/gpu_batch_decoder.h).
// There the GPU's hardware JPEG decoder may also decode places itself: the workers then only read
// the header of each file it takes and leave the file in its place; every place (decoder GPU), or
// for AUTO as many as keep forward() from waiting for its batches.
//
// Workers: the layer's `threads` field (data_param, image_data_param), or when it is 0 (the
// default) the usable cores less one per training thread, shared by the replicas, at least 1
// (data/batch_engine.h: default_decode_workers).
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
#include <string>
#include <vector>

#include "core/layer.h"
#include "core/replica.h"
#include "data/datum.h"

namespace crema {

class BatchEngine;
class GpuBatchDecoder;
class DataTransformer;
struct HostBatch;
struct SourceRecord;

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

  // The records passed by the batches handed out so far (rounded up to whole rounds of the
  // replicas, so that each replica resumes at its next record) and the transformer's generator.
  // Restoring stops the engine, moves the source there and starts it again; a replica other than
  // the first keeps its own generator (the state is the first's).
  bool reader_state(DataReaderState* state) const override;
  void restore_reader_state(const DataReaderState& state) override;

  // The number of decode workers the layer runs; whether the GPU decodes JPEGs, and how many
  // places of each batch it takes now.
  int decode_workers() const { return workers_; }
  bool gpu_decodes() const;
  int gpu_places() const;

 protected:
  // The signature of every prefetching data layer: no bottoms; the data, and the labels where
  // the layer has a second top.
  static LayerSignature signature_of(const char* type) { return {type, exactly(0), between(1, 2)}; }
  // Runs on the reader thread, in order: copies the source's next example into *record (its
  // bytes, or which entry it is: whatever decode_record needs) and moves past it. Throws
  // crema::Error on bad data.
  virtual void read_record(SourceRecord* record) = 0;
  // Runs on the decode workers, several at once: decodes record into *image (C-H-W floats) and
  // returns its label; *where names the example in error messages. Throws crema::Error on bad
  // data. Touches nothing of the layer that the reader changes.
  virtual float decode_record(const SourceRecord& record, ChwImage* image,
                              std::string* where) const = 0;
  // Runs on the decode workers like decode_record: when the record is an encoded JPEG file,
  // moves its bytes into *jpeg, sets *label and *where, and returns true (the GPU may decode
  // it); false otherwise, and then decode_record runs.
  virtual bool jpeg_record(const SourceRecord& record, std::string* jpeg, float* label,
                           std::string* where) const {
    (void)record, (void)jpeg, (void)label, (void)where;
    return false;
  }
  // Runs on the reader thread: moves past the next example without reading it (another
  // replica's).
  virtual void skip_example() = 0;
  // Runs with the engine stopped: puts the source where it stands after `records` records from
  // the layer's start (read or skipped), in time bounded by the source's size.
  virtual void seek_source(uint64_t records) = 0;
  // The end of the error for an example whose shape differs from the first one's.
  virtual const char* shape_mismatch_hint() const {
    return "every record must have the same shape";
  }

  // Creates the transformer, seeded from the calling thread's generator (crema::thread_rng), so
  // seeded runs repeat their crops and flips. Throws crema::Error (e.g. an unreadable mean file).
  void init_transformer(const TransformationParameter& param);
  // Validates batch_size (batch_field names it in errors), the worker count `threads` (0: the
  // default) and data_param.prefetch, fixes the example shape c x h x w (checked against the
  // transformer), shapes the tops and starts the engine. Throws crema::Error.
  void start_prefetch(uint32_t batch_size, const char* batch_field, uint32_t threads, int channels,
                      int height, int width, const Tensors& top);
  // Called before start_prefetch by a layer whose first record is a JPEG file: where its JPEGs
  // are decoded (data_param.decoder), and the colour its decoder asks for. On the GPU they are
  // decoded by nvJPEG (data/gpu_batch_decoder.h) when the layer runs on a GPU with a hardware
  // JPEG decoder and its data is float: always for GPU (else an error), where possible for AUTO.
  // The workers decode the others to 8-bit pixels, which they transform as they are.
  void decode_jpegs(DataParameter::Decoder where, ColorMode color) {
    jpegs_ = true;
    jpeg_decoder_ = where;
    jpeg_color_ = color;
  }
  // Stops and joins the engine's threads. Subclass destructors call it first, since the threads
  // call read_record and decode_record.
  void stop_prefetch();

  int batch_size() const { return batch_size_; }

 private:
  // The engine's steps (data/batch_engine.h: BatchEngine::Hooks).
  void begin_batch(HostBatch* batch);
  void read_next(SourceRecord* record);
  void process(int worker, const SourceRecord& record, int slot, HostBatch* batch);
  void upload(HostBatch* batch);
  void launch_engine();

  // A decode worker's buffers, reused from example to example.
  struct WorkerScratch {
    ChwImage image;
    ChwPixels pixels;  // a JPEG record's
    std::string where;
    std::string jpeg;
  };

  int batch_size_ = 0;
  int workers_ = 0;
  uint32_t depth_ = 0;                         // batches prefetched
  uint64_t consumed_records_ = 0;              // after the batches forward handed out
  Replica replica_;                            // whose records this layer keeps
  uint64_t next_record_ = 0;                   // counted from the first record read
  int channels_ = 0, height_ = 0, width_ = 0;  // of every example
  std::vector<int> out_shape_;                 // of one transformed example
  std::unique_ptr<DataTransformer> transformer_;
  std::vector<Dtype> staging_;  // host conversion when Dtype is not float
  std::vector<WorkerScratch> scratch_;
  // The stream for uploads (GPU layers with float data only).
  std::unique_ptr<Handle> upload_;
  bool jpegs_ = false;                                        // decode_jpegs() was called
  DataParameter::Decoder jpeg_decoder_ = DataParameter::CPU;  // as decode_jpegs() asked
  ColorMode jpeg_color_ = ColorMode::kNative;
  std::unique_ptr<GpuBatchDecoder> gpu_decoder_;  // on upload_'s stream
  // Declared last so that it is destroyed (its threads joined) before what the threads use.
  std::unique_ptr<BatchEngine> engine_;
};

}  // namespace crema
