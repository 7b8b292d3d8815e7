// GpuBatchDecoder: JPEG places of a batch decoded by nvJPEG and transformed by crop_images; the
// other places uploaded as the CPU made them.
#include "data/gpu_batch_decoder.h"

#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "data/image_io.h"
#include "data/jpeg_codec.h"

namespace crema {

GpuShare::GpuShare(int batch_size, int settle, int places)
    : batch_size_(batch_size),
      settle_(settle),
      step_(std::max(1, batch_size / 16)),
      places_(places),
      hold_(settle),
      cap_(batch_size) {}

void GpuShare::update(double waited_ms, double interval_ms, double busy_ms, double workers_idle) {
  const double weight = mean_interval_ == 0 ? 1 : 1.0 / 8;
  mean_interval_ += (interval_ms - mean_interval_) * weight;
  mean_busy_ += (busy_ms - mean_busy_) * weight;
  if (hold_ > 0) {
    --hold_;
    return;
  }
  level_n_ = std::min(level_n_ + 1, kLevelBatches);
  level_ += (interval_ms - level_) / level_n_;
  if (level_n_ < kTrial) return;
  if (std::exchange(on_trial_, false) && level_ > kSlower * before_) {
    // The change made the consumer's batches slower: back, and no further that way for a while.
    if (places_ > before_places_)
      cap_ = before_places_, floor_ = std::min(floor_, cap_);
    else
      floor_ = before_places_, cap_ = std::max(cap_, floor_);
    bound_left_ = kBoundBatches;
    places_ = before_places_;
    level_ = before_;
    level_n_ = kTrial;
    hold_ = settle_;
    quiet_ = 0;
    return;
  }
  if (bound_left_ > 0 && --bound_left_ == 0) floor_ = 0, cap_ = batch_size_;
  int places = places_;
  const bool waited = waited_ms > kWaitMs;
  if (waited && mean_busy_ >= kSaturated * mean_interval_) {
    places -= step_;
    quiet_ = 0;
  } else if (waited && workers_idle < kIdleWorkers) {
    // Against the mean interval where it is longer: the interval right after a long wait is
    // short, and a wait in it says little.
    const double interval = std::max(interval_ms, mean_interval_);
    const double short_by = std::min(1.0, waited_ms / interval);
    int more = int(std::ceil(double(batch_size_ - places) * short_by / step_)) * step_;
    // No more than keeps the GPU side's finishes, at their cost per place (busy_ms over its
    // places: the transform of the whole batch counts in, so the room errs low), within
    // kSaturated of the consumer's own time between batches, the interval less its wait: past
    // that the GPU side would hold up the consumer in turn. Where no finish was timed (no
    // places yet, or every finish of the interval set nvJPEG up for a new size) that cost is
    // unknown, and it takes one step.
    if (places == 0 || busy_ms <= 0) {
      more = step_;
    } else {
      const double room = double(places) * (kSaturated * (interval_ms - waited_ms) / busy_ms - 1);
      if (room < more) more = int(std::max(0.0, room) / step_) * step_;
    }
    places += std::max(step_, more);
    quiet_ = 0;
  } else if (++quiet_ >= kQuietBatches) {
    places -= step_;
    quiet_ = 0;
  }
  places = std::clamp(places, floor_, cap_);
  if (places != places_) {
    before_places_ = places_;
    before_ = level_;
    places_ = places;
    level_ = 0;
    level_n_ = 0;
    hold_ = settle_;
    on_trial_ = true;
  }
}

GpuBatchDecoder::GpuBatchDecoder(prim::Handle& upload, const DataTransformer& transformer,
                                 ColorMode color, DataParameter::Decoder decoder, int batch_size,
                                 int depth, int channels, int height, int width)
    : upload_(upload),
      transformer_(transformer),
      color_(color),
      batch_size_(batch_size),
      channels_(channels),
      height_(height),
      width_(width),
      pixels_(size_t(channels) * size_t(height) * size_t(width)),
      adapt_(decoder == DataParameter::AUTO),
      // AUTO starts on the CPU; the batches in flight at the start fill before any wait counts.
      share_(batch_size, depth, decoder == DataParameter::GPU ? batch_size : 0),
      places_(share_.places()),
      last_take_(std::chrono::steady_clock::now()) {
  if (decoder != DataParameter::CPU) decoder_ = std::make_unique<NvjpegDecoder>(upload);
  const std::vector<int> out = transformer.output_shape(channels, height, width);
  example_ = size_t(out[0]) * size_t(out[1]) * size_t(out[2]);
  desc_ = transformer.crop_desc(channels, height, width);
  desc_.pixels = prim::PixelType::kUInt8;
  const std::vector<float> values = transformer.mean_values(channels);
  const std::vector<float>& mean = desc_.mean_image ? transformer.mean_image() : values;
  if (!mean.empty()) {
    mean_ = prim::DeviceBuffer(prim::Device::kCUDA, mean.size() * sizeof(float));
    prim::device_memcpy(mean_.get(), prim::Device::kCUDA, mean.data(), prim::Device::kCPU,
                        mean.size() * sizeof(float));
    const float* on_gpu = static_cast<const float*>(mean_.get());
    if (desc_.mean_image)
      desc_.mean_image = on_gpu;
    else
      desc_.mean_values = on_gpu;
  }
}

void GpuBatchDecoder::begin(HostBatch* batch) const {
  batch->arrivals.assign(size_t(batch_size_), Arrival::kValues);
  batch->gpu_jpegs.resize(size_t(batch_size_));
  batch->gpu_crops.resize(size_t(batch_size_));
  batch->pixels.resize(pixels_ * size_t(batch_size_));
  batch->gpu_places = places_;
}

void GpuBatchDecoder::took_batch(std::chrono::steady_clock::time_point asked,
                                 std::chrono::nanoseconds workers_idle, int workers) {
  if (!adapt_) return;
  const auto now = std::chrono::steady_clock::now();
  const auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  const double interval = ms(now - last_take_);
  const double idle = interval > 0 ? ms(workers_idle - last_idle_) / (interval * workers) : 0;
  const double waited = ms(now - asked), busy = double(busy_us_.exchange(0)) / 1000.0;
  share_.update(waited, interval, busy, idle);
  last_take_ = now;
  last_idle_ = workers_idle;
  // glog's --v=1 (GLOG_v=1) logs each change with the reading that made it.
  if (share_.places() != places_)
    VLOG(1) << "AUTO decoder: " << share_.places() << " of " << batch_size_
            << " places to the GPU after a wait of " << waited << " ms in " << interval
            << " ms, finishes " << busy << " ms, workers idle " << 100 * idle << "%";
  places_ = share_.places();
}

bool GpuBatchDecoder::take(std::string* jpeg, const std::string& where, uint64_t number, int slot,
                           HostBatch* batch) const {
  if (slot >= batch->gpu_places || !looks_like_jpeg(*jpeg)) return false;
  // A header libjpeg refuses, and another shape, are the worker's to judge: its decoder may
  // still read the file (OpenCV's), or refuse it with the layer's message.
  JpegHeader header;
  try {
    header = read_jpeg_header(*jpeg, where, color_);
  } catch (const Error&) {
    return false;
  }
  if (!NvjpegDecoder::takes(*jpeg, header, channels_) || header.height != height_ ||
      header.width != width_)
    return false;
  GpuJpeg& g = batch->gpu_jpegs[size_t(slot)];
  g.bytes.swap(*jpeg);
  g.header = header;
  g.where = where;
  g.number = number;
  batch->arrivals[size_t(slot)] = Arrival::kJpeg;
  return true;
}

void GpuBatchDecoder::take_pixels(const ChwPixels& pixels, uint64_t number, int slot,
                                  HostBatch* batch) const {
  std::copy(pixels.data.begin(), pixels.data.end(), batch->pixels.begin() + pixels_ * size_t(slot));
  batch->gpu_crops[size_t(slot)] = transformer_.crop(height_, width_, number);
  batch->arrivals[size_t(slot)] = Arrival::kPixels;
}

void GpuBatchDecoder::finish(HostBatch* batch) {
  const auto start = std::chrono::steady_clock::now();
  const size_t bytes = batch->data.size() * sizeof(float);
  if (batch->device_data.bytes() < bytes)
    batch->device_data = prim::DeviceBuffer(prim::Device::kCUDA, bytes);
  float* device = static_cast<float*>(batch->device_data.get());
  std::vector<int> places;
  std::vector<std::string_view> jpegs;
  std::vector<JpegHeader> headers;
  for (size_t i = 0; i < batch->arrivals.size(); ++i)
    if (batch->arrivals[i] == Arrival::kJpeg) {
      places.push_back(int(i));
      jpegs.push_back(batch->gpu_jpegs[i].bytes);
      headers.push_back(batch->gpu_jpegs[i].header);
    }
  std::vector<prim::ImageCrop> crops(places.size());
  const uint64_t setups = decoder_ ? decoder_->set_up() : 0;
  bool decoded = false;
  if (!places.empty())
    decoder_->decode(int(places.size()), jpegs.data(), headers.data(), channels_,
                     &batch->gpu_pixels, crops.data(), &decoded);
  if (!decoded) {
    // The hardware refused the batch: the CPU decodes its files, or names the corrupt one.
    ChwImage image;
    for (int p : places) {
      const GpuJpeg& g = batch->gpu_jpegs[size_t(p)];
      decode_image(g.bytes, g.where, color_, &image);
      transformer_.transform(image.data.data(), channels_, height_, width_,
                             batch->data.data() + example_ * size_t(p), g.number);
      batch->arrivals[size_t(p)] = Arrival::kValues;
    }
  }
  // Runs of places: values uploaded; the workers' pixels uploaded and transformed; the GPU's
  // decoded images transformed in place.
  const size_t n = batch->arrivals.size();
  size_t k = 0;  // the next of `crops`
  for (size_t begin = 0; begin < n;) {
    const Arrival arrival = batch->arrivals[begin];
    size_t end = begin;
    while (end < n && batch->arrivals[end] == arrival) ++end;
    if (arrival == Arrival::kValues) {
      prim::memcpy_async(upload_, device + example_ * begin, prim::Device::kCUDA,
                         batch->data.data() + example_ * begin, prim::Device::kCPU,
                         (end - begin) * example_ * sizeof(float));
      begin = end;
      continue;
    }
    // The crops are pinned and the batch's own: the copy to the device reads them after this
    // returns.
    if (arrival == Arrival::kPixels) {
      if (batch->device_pixels.bytes() < batch->pixels.size())
        batch->device_pixels = prim::DeviceBuffer(prim::Device::kCUDA, batch->pixels.size());
      uint8_t* device_pixels = static_cast<uint8_t*>(batch->device_pixels.get());
      prim::memcpy_async(upload_, device_pixels + pixels_ * begin, prim::Device::kCUDA,
                         batch->pixels.data() + pixels_ * begin, prim::Device::kCPU,
                         (end - begin) * pixels_);
      for (size_t i = begin; i < end; ++i) {
        prim::ImageCrop& c = batch->gpu_crops[i];
        c.pixels = device_pixels + pixels_ * i;
        c.pitch = width_;
      }
    } else {
      for (size_t i = begin; i < end; ++i, ++k) {
        const GpuJpeg& g = batch->gpu_jpegs[i];
        prim::ImageCrop& c = batch->gpu_crops[i];
        c = transformer_.crop(g.header.height, g.header.width, g.number);
        c.pixels = crops[k].pixels;
        c.pitch = crops[k].pitch;
      }
    }
    prim::crop_images(upload_, desc_, int(end - begin), &batch->gpu_crops[begin],
                      device + example_ * begin);
    begin = end;
  }
  // A finish that set nvJPEG up for a new size waited for the whole GPU, no sign of a saturated
  // GPU side.
  if (adapt_ && decoder_->set_up() == setups)
    busy_us_ += std::chrono::duration_cast<std::chrono::microseconds>(
                    std::chrono::steady_clock::now() - start)
                    .count();
}

}  // namespace crema
