// GpuBatchDecoder: the GPU half of a prefetching data layer on a GPU whose records are JPEG
// files: each batch's transform runs there, and with nvJPEG some of its decoding. A decode worker
// offers it each file first (take), whose header it reads there: a file the hardware decodes as
// the CPU would (NvjpegDecoder::takes) and of the layer's shape waits in its place of the batch.
// The worker decodes the others itself and hands over their 8-bit pixels (take_pixels), a
// third of the bytes of the floats they become; records of no JPEG it transforms itself. The
// batch's finish (one batch at a time, on the layer's upload stream) decodes the waiting files
// with NvjpegDecoder, uploads the workers' pixels and values, and transforms every image with
// prim::crop_images into the batch's device data, with the crop, flip and mean the CPU's
// DataTransformer draws for the same example numbers (so the workers' pixels give the CPU's
// floats bit for bit). A batch the hardware refuses is decoded there on the CPU instead, with
// the CPU's errors.
//
// How many places of each batch the GPU decodes: none without nvJPEG (data_param.decoder CPU),
// all of them (GPU), or for AUTO as many as keep the layer's consumer from waiting (GpuShare),
// since decoding on the GPU is not free for the training step beside it. Which decoder a place
// gets then depends on timing: only CPU or GPU repeat a run's pixels exactly.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "data/batch_engine.h"
#include "data/datum.h"
#include "data/nvjpeg_decoder.h"
#include "data/transformer.h"

namespace crema {

// AUTO's share of each batch for the GPU, in places, adjusted once per batch the consumer takes.
// After a wait for the batch: where the batches' finishes kept their thread busy kSaturated or more
// of the consumer's interval between batches, both as running means over about 8 batches (a single
// interval misleads: the one after a long wait is short, and the finish of its batch, last in the
// pipeline, fills it), the GPU side is saturated and gives the CPU a step. Else, where the decode
// workers waited for records less than kIdleWorkers of their time, they are short: having filled
// the CPU's places in the interval, of which the consumer waited `waited`, they would keep up with
// (1 - waited / interval) of those places (the larger of this interval and the mean), and the GPU
// takes the rest, in whole steps (one at least), but no more than its finishes' time per place so
// far leaves room for within kSaturated of the consumer's own time, the interval less its wait
// (past that the GPU side would hold up the consumer in turn); where that cost is unknown (no
// places yet, or no finish timed in the interval), one step. A wait with neither (the consumer ran
// ahead of the GPU and waited for a batch's buffers to come back, which decoding elsewhere does not
// shorten) changes nothing and counts as quiet: after kQuietBatches quiet batches the GPU gives a
// step back. A step is a sixteenth of the batch.
//
// Each change is a trial: once the `settle` batches already in flight have passed, the mean of the
// next kTrial intervals is set against the mean interval before it (of up to kLevelBatches), and a
// change that made it longer by more than kSlower is undone, the share it left then bounding the
// share in that direction for kBoundBatches batches. The model above errs (the finishes' time does
// not count what decoding on the GPU takes from the consumer's own work on it, nor what nvJPEG's
// hardware does past its calls), and the consumer's interval is what counts.
class GpuShare {
 public:
  static constexpr double kWaitMs = 0.5;  // a shorter wait for the batch is a handoff
  static constexpr double kIdleWorkers = 0.1;
  static constexpr double kSaturated = 0.9;  // the finishes' share of a time that fills it
  static constexpr int kQuietBatches = 32;
  static constexpr int kTrial = 4;
  static constexpr int kLevelBatches = 16;
  static constexpr double kSlower = 1.03;
  static constexpr int kBoundBatches = 256;

  GpuShare(int batch_size, int settle, int places);
  // The consumer took a batch after waiting waited_ms for it, interval_ms after the last; in
  // that interval the batches' finishes took busy_ms of their thread's time, and the decode
  // workers spent the fraction workers_idle of theirs waiting for records.
  void update(double waited_ms, double interval_ms, double busy_ms, double workers_idle);
  int places() const { return places_; }

 private:
  const int batch_size_, settle_, step_;
  int places_;
  int hold_;                  // batches to take before the share's intervals count
  double mean_interval_ = 0;  // ms
  double mean_busy_ = 0;      // ms
  int quiet_ = 0;             // batches taken without a wait since the last step
  double level_ = 0;          // ms, the mean of this share's last level_n_ intervals
  int level_n_ = 0;
  bool on_trial_ = false;  // this share is set against the last after kTrial intervals
  int before_places_ = 0;  // the last share, and its mean interval
  double before_ = 0;
  int floor_ = 0, cap_;  // the share's bounds, set by an undone change
  int bound_left_ = 0;   // batches before they lift
};

class GpuBatchDecoder {
 public:
  // For batches of batch_size examples of channels x height x width before the transform, on
  // upload's GPU, `depth` of them in flight. `decoder`: CPU (the GPU transforms only), GPU (it
  // decodes every place it can) or AUTO (GpuShare's places). Throws crema::Error for GPU or AUTO
  // where NvjpegDecoder::available() is false.
  GpuBatchDecoder(prim::Handle& upload, const DataTransformer& transformer, ColorMode color,
                  DataParameter::Decoder decoder, int batch_size, int depth, int channels,
                  int height, int width);

  // Reader thread: clears the batch's places and fixes how many of them the GPU may take.
  void begin(HostBatch* batch) const;
  // Decode worker: keeps *jpeg (moved from) for place `slot` of the batch, example `number`,
  // when the GPU decodes it; false leaves it (and any error it holds) to the caller's decoder.
  // Several workers may call it at once, for different places.
  bool take(std::string* jpeg, const std::string& where, uint64_t number, int slot,
            HostBatch* batch) const;
  // Decode worker: the pixels of place `slot`, example `number`, of the layer's shape (checked
  // by the caller), for the finish to transform.
  void take_pixels(const ChwPixels& pixels, uint64_t number, int slot, HostBatch* batch) const;
  // The batch's finish: its data on the device, ready once the upload stream passes it.
  void finish(HostBatch* batch);
  // The layer's consumer took a batch it had asked for at `asked`; its `workers` decode workers
  // have waited workers_idle for records since they started (BatchEngine::workers_idle).
  void took_batch(std::chrono::steady_clock::time_point asked,
                  std::chrono::nanoseconds workers_idle, int workers);
  // Places of each batch the GPU may take now.
  int gpu_places() const { return places_; }

  // Whether the GPU decodes some places (nvJPEG).
  bool decodes() const { return decoder_ != nullptr; }

 private:
  prim::Handle& upload_;
  const DataTransformer& transformer_;
  const ColorMode color_;
  const int batch_size_, channels_, height_, width_;
  const size_t pixels_;  // bytes of one image's pixels
  size_t example_ = 0;   // floats of one transformed example
  const bool adapt_;
  GpuShare share_;                    // the consumer thread's
  std::atomic<int> places_;           // share_.places(), for the reader
  std::atomic<int64_t> busy_us_ = 0;  // AUTO: the finishes' time since the consumer's last batch
  std::chrono::steady_clock::time_point last_take_;
  std::chrono::nanoseconds last_idle_{0};   // workers_idle at the last take
  std::unique_ptr<NvjpegDecoder> decoder_;  // null for data_param.decoder CPU
  prim::DeviceBuffer mean_;                 // the mean image or the per-channel values, on the GPU
  prim::CropImagesDesc desc_;
};

}  // namespace crema
