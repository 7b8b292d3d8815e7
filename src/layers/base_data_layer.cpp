// Prefetching data layers: the engine's steps (read, decode, check, transform, upload) and the
// copy to the device.
#include "layers/base_data_layer.h"

#include <chrono>
#include <type_traits>

#include "core/errors.h"
#include "core/rng.h"
#include "data/batch_engine.h"
#include "data/gpu_batch_decoder.h"
#include "data/jpeg_codec.h"
#include "data/transformer.h"

namespace crema {

namespace {
constexpr uint32_t kMaxPrefetch = 1024;
// More workers than this is a typo, not a machine.
constexpr uint32_t kMaxThreads = 1024;
}  // namespace

template <typename Dtype>
BasePrefetchingDataLayer<Dtype>::BasePrefetchingDataLayer(const LayerParameter& param,
                                                          Device device)
    : Layer<Dtype>(param, device) {}

template <typename Dtype>
BasePrefetchingDataLayer<Dtype>::~BasePrefetchingDataLayer() {
  stop_prefetch();
}

template <typename Dtype>
void BasePrefetchingDataLayer<Dtype>::stop_prefetch() {
  engine_.reset();
}

template <typename Dtype>
void BasePrefetchingDataLayer<Dtype>::init_transformer(const TransformationParameter& param) {
  if (param.force_color() && param.force_gray())
    fail("transform_param: force_color and force_gray exclude each other");
  transformer_ = std::make_unique<DataTransformer>(param, this->phase(), thread_rng()());
}

template <typename Dtype>
void BasePrefetchingDataLayer<Dtype>::start_prefetch(uint32_t batch_size, const char* batch_field,
                                                     uint32_t threads, int channels, int height,
                                                     int width, const Tensors& top) {
  if (batch_size == 0) fail(batch_field, " must be positive");
  if (batch_size > uint32_t(INT32_MAX)) fail(batch_field, " is too large");
  const uint32_t depth = this->param_.data_param().prefetch();
  if (depth == 0 || depth > kMaxPrefetch)
    fail("data_param.prefetch must be between 1 and ", kMaxPrefetch, "; got ", depth);
  if (threads > kMaxThreads)
    fail("the layer's threads must be at most ", kMaxThreads,
         " (0: from the machine's cores); got ", threads);
  batch_size_ = int(batch_size);
  if (this->phase() == TRAIN) replica_ = this_replica();
  workers_ = threads > 0 ? int(threads) : default_decode_workers(replica_.count);
  scratch_.resize(size_t(workers_));
  channels_ = channels;
  height_ = height;
  width_ = width;
  out_shape_ = transformer_->output_shape(channels, height, width);
  top[0]->reshape({batch_size_, out_shape_[0], out_shape_[1], out_shape_[2]});
  if (top.size() > 1) top[1]->reshape({batch_size_});
  if constexpr (std::is_same_v<Dtype, float>) {
    // The Net is built after its Handle, which made the handle's GPU the thread's current one.
    // Urgent: nvJPEG's per-image kernels would otherwise wait behind the training step's, and
    // the batch arrive late.
    if (this->device() == Device::kCUDA)
      upload_ = std::make_unique<Handle>(Device::kCUDA, prim::cuda_current_device(),
                                         prim::StreamPriority::kUrgent);
  }
  if (jpegs_) {
    std::string why;
    if (!upload_)
      why =
          this->device() == Device::kCUDA ? "the layer's data is not float" : "it runs on the CPU";
    else if (jpeg_decoder_ != DataParameter::CPU)
      NvjpegDecoder::available(&why);
    if (jpeg_decoder_ == DataParameter::GPU && !why.empty())
      fail("data_param.decoder is GPU but JPEGs cannot be decoded there: ", why);
    // On a GPU the batches are transformed there; AUTO without nvJPEG decodes on the CPU.
    if (upload_)
      gpu_decoder_ = std::make_unique<GpuBatchDecoder>(
          *upload_, *transformer_, jpeg_color_, why.empty() ? jpeg_decoder_ : DataParameter::CPU,
          batch_size_, int(depth), channels, height, width);
  }
  depth_ = depth;
  consumed_records_ = next_record_;
  launch_engine();
}

template <typename Dtype>
bool BasePrefetchingDataLayer<Dtype>::gpu_decodes() const {
  return gpu_decoder_ && gpu_decoder_->decodes();
}

template <typename Dtype>
int BasePrefetchingDataLayer<Dtype>::gpu_places() const {
  return gpu_decoder_ ? gpu_decoder_->gpu_places() : 0;
}

template <typename Dtype>
void BasePrefetchingDataLayer<Dtype>::launch_engine() {
  BatchEngine::Hooks hooks;
  if (upload_) {
    // Buffers these threads allocate belong on the layer's GPU, not the thread's default one.
    hooks.thread_start = [this] { prim::cuda_set_current_device(upload_->device_id()); };
    hooks.finish = [this](HostBatch* batch) { upload(batch); };
  }
  hooks.begin_batch = [this](HostBatch* batch) { begin_batch(batch); };
  hooks.read = [this](SourceRecord* record) { read_next(record); };
  hooks.end_read = [this](HostBatch* batch) { batch->records_after = next_record_; };
  hooks.process = [this](int worker, const SourceRecord& record, int slot, HostBatch* batch) {
    process(worker, record, slot, batch);
  };
  engine_ = std::make_unique<BatchEngine>(depth_, batch_size_, workers_, std::move(hooks));
}

template <typename Dtype>
bool BasePrefetchingDataLayer<Dtype>::reader_state(DataReaderState* state) const {
  const uint64_t count = uint64_t(replica_.count);
  state->set_records((consumed_records_ + count - 1) / count * count);
  state->set_transform_random(random_to_text(transformer_->random()));
  return true;
}

template <typename Dtype>
void BasePrefetchingDataLayer<Dtype>::restore_reader_state(const DataReaderState& state) {
  try {
    const std::mt19937_64 random = random_from_text(state.transform_random(), "transform_random");
    engine_.reset();
    seek_source(state.records());
    next_record_ = state.records();
    if (replica_.rank == 0) transformer_->set_random(random);
  } catch (const Error& e) {
    this->error("cannot resume reading: ", e.what());
  }
  consumed_records_ = next_record_;
  launch_engine();
}

template <typename Dtype>
void BasePrefetchingDataLayer<Dtype>::begin_batch(HostBatch* batch) {
  // The batch's buffers may still feed the copy of its previous use into the tops.
  if (upload_) batch->consumed.synchronize();
  const size_t example = size_t(out_shape_[0]) * out_shape_[1] * out_shape_[2];
  batch->data.resize(example * batch_size_);
  batch->label.resize(batch_size_);
  if (gpu_decoder_) gpu_decoder_->begin(batch);
}

template <typename Dtype>
void BasePrefetchingDataLayer<Dtype>::read_next(SourceRecord* record) {
  for (; next_record_ % uint64_t(replica_.count) != uint64_t(replica_.rank); ++next_record_)
    skip_example();
  record->number = next_record_;
  read_record(record);
  ++next_record_;
}

template <typename Dtype>
void BasePrefetchingDataLayer<Dtype>::process(int worker, const SourceRecord& record, int slot,
                                              HostBatch* batch) {
  WorkerScratch& s = scratch_[size_t(worker)];
  const auto check_shape = [&](int c, int h, int w) {
    if (c != channels_ || h != height_ || w != width_)
      fail(s.where, ": shape ", c, "x", h, "x", w, " differs from the first record's ", channels_,
           "x", height_, "x", width_, "; ", shape_mismatch_hint());
  };
  const size_t example = size_t(out_shape_[0]) * out_shape_[1] * out_shape_[2];
  float* out = batch->data.data() + example * size_t(slot);
  float label = 0;
  if (jpegs_ && jpeg_record(record, &s.jpeg, &label, &s.where)) {
    batch->label[size_t(slot)] = label;
    if (gpu_decoder_ && gpu_decoder_->take(&s.jpeg, s.where, record.number, slot, batch)) return;
    // A file libjpeg refuses is decode_record's, which may still read it (OpenCV) or gives the
    // layer's error.
    bool decoded = true;
    try {
      decode_jpeg_pixels(s.jpeg, s.where, jpeg_color_, &s.pixels);
    } catch (const Error&) {
      decoded = false;
    }
    if (decoded) {
      check_shape(s.pixels.channels, s.pixels.height, s.pixels.width);
      if (gpu_decoder_)
        gpu_decoder_->take_pixels(s.pixels, record.number, slot, batch);
      else
        transformer_->transform(s.pixels.data.data(), channels_, height_, width_, out,
                                record.number);
      return;
    }
  }
  batch->label[size_t(slot)] = decode_record(record, &s.image, &s.where);
  check_shape(s.image.channels, s.image.height, s.image.width);
  transformer_->transform(s.image.data.data(), channels_, height_, width_, out, record.number);
}

template <typename Dtype>
void BasePrefetchingDataLayer<Dtype>::upload(HostBatch* batch) {
  const auto send = [this](const auto& host, prim::DeviceBuffer* device) {
    const size_t bytes = host.size() * sizeof(float);
    if (device->bytes() < bytes) *device = prim::DeviceBuffer(Device::kCUDA, bytes);
    prim::memcpy_async(*upload_, device->get(), Device::kCUDA, host.data(), Device::kCPU, bytes);
  };
  if (gpu_decoder_)
    gpu_decoder_->finish(batch);
  else
    send(batch->data, &batch->device_data);
  send(batch->label, &batch->device_label);
  batch->uploaded.record(*upload_);
}

template <typename Dtype>
void BasePrefetchingDataLayer<Dtype>::forward(Handle& h, const Tensors&, const Tensors& top) {
  HostBatch* batch = nullptr;
  const auto asked = std::chrono::steady_clock::now();
  this->naming_layer([&] { batch = engine_->next(); });
  if (gpu_decoder_) gpu_decoder_->took_batch(asked, engine_->workers_idle(), engine_->workers());
  consumed_records_ = batch->records_after;
  if (upload_) {
    batch->uploaded.wait(h);
    prim::memcpy_async(h, top[0]->mutable_data(), Device::kCUDA, batch->device_data.get(),
                       Device::kCUDA, top[0]->bytes());
    if (top.size() > 1)
      prim::memcpy_async(h, top[1]->mutable_data(), Device::kCUDA, batch->device_label.get(),
                         Device::kCUDA, top[1]->bytes());
    batch->consumed.record(h);
    engine_->release(batch);
    return;
  }
  // Copies the host floats to a top on the layer's device, converting first when Dtype is not
  // float.
  auto copy = [this](const auto& src, Tensor<Dtype>* dst) {
    const void* host = src.data();
    if constexpr (!std::is_same_v<Dtype, float>) {
      staging_.assign(src.begin(), src.end());
      host = staging_.data();
    }
    prim::device_memcpy(dst->mutable_data(), dst->device(), host, Device::kCPU, dst->bytes());
  };
  copy(batch->data, top[0]);
  if (top.size() > 1) copy(batch->label, top[1]);
  engine_->release(batch);
}

template class BasePrefetchingDataLayer<float>;
template class BasePrefetchingDataLayer<double>;

}  // namespace crema
