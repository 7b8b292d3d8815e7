// NvjpegDecoder: nvJPEG loaded with dlopen, its hardware backend fed one batch per call.
#include "data/nvjpeg_decoder.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "data/jpeg_codec.h"

namespace crema {

namespace nvjpeg_abi {

// nvJPEG's C interface as nvjpeg.h declares it: opaque handles, enums passed as int, status 0 for
// success, and the output descriptor of one image.
constexpr int kSuccess = 0;
constexpr int kBackendHardware = 3;       // NVJPEG_BACKEND_HARDWARE
constexpr unsigned kBitstreamStrict = 4;  // NVJPEG_FLAGS_BITSTREAM_STRICT: report, never guess
constexpr unsigned kInterpolate = 32;     // NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION: chroma
                                          // upsampled as libjpeg's default ("fancy") does
constexpr int kCss444 = 0;                // NVJPEG_CSS_444: reserve for any subsampling
constexpr int kOutputY = 2;               // NVJPEG_OUTPUT_Y
constexpr int kOutputBgr = 4;             // NVJPEG_OUTPUT_BGR: planar
struct Image {                            // nvjpegImage_t
  unsigned char* channel[4];
  size_t pitch[4];
};

const char* status_name(int s) {
  static const char* const names[] = {"success",
                                      "not initialized",
                                      "invalid parameter",
                                      "bad JPEG",
                                      "JPEG not supported",
                                      "allocator failure",
                                      "execution failed",
                                      "architecture mismatch",
                                      "internal error",
                                      "implementation not supported",
                                      "incomplete bitstream"};
  return s >= 0 && s < int(sizeof(names) / sizeof(names[0])) ? names[s] : "unknown status";
}

}  // namespace nvjpeg_abi

struct NvjpegDecoder::Library {
  std::string error;  // why nvJPEG cannot be used; empty when it loaded
  int (*create_ex)(int backend, void* device_allocator, void* pinned_allocator, unsigned flags,
                   void** handle) = nullptr;
  int (*destroy)(void* handle) = nullptr;
  int (*state_create)(void* handle, void** state) = nullptr;
  int (*state_destroy)(void* state) = nullptr;
  int (*batched_initialize)(void* handle, void* state, int batch, int cpu_threads,
                            int format) = nullptr;
  int (*batched)(void* handle, void* state, const unsigned char* const* data, const size_t* lengths,
                 nvjpeg_abi::Image* out, void* stream) = nullptr;
  // Optional (hardware backend only): reserves the decoder's memory for a batch size and image
  // size. Null where the library lacks it.
  int (*preallocate)(void* handle, void* state, int batch, int width, int height, int subsampling,
                     int format) = nullptr;
};

namespace {

const NvjpegDecoder::Library& library() {
  static NvjpegDecoder::Library lib;
  static std::once_flag once;
  std::call_once(once, [] {
    const char* named = std::getenv("CREMA_NVJPEG");
    void* so = nullptr;
    std::string tried;
    std::vector<std::string> names = {"libnvjpeg.so.13", "libnvjpeg.so.12"};
#ifdef CREMA_CUDA_LIBRARY_DIR
    // Not on the loader's path: the toolkit this build was configured with.
    names.push_back(std::string(CREMA_CUDA_LIBRARY_DIR) + "/libnvjpeg.so.13");
#endif
    if (named) names = {named};
    for (const std::string& name : names) {
      so = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (so) break;
      tried += (tried.empty() ? "" : "; ") + std::string(dlerror());
    }
    if (!so) {
      lib.error = "cannot load nvJPEG (" + tried + ")";
      return;
    }
    bool missing = false;
    auto resolve = [&](auto* fn, const char* symbol) {
      *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(dlsym(so, symbol));
      if (!*fn && !missing) {
        lib.error = std::string("nvJPEG has no ") + symbol;
        missing = true;
      }
    };
    resolve(&lib.create_ex, "nvjpegCreateEx");
    resolve(&lib.destroy, "nvjpegDestroy");
    resolve(&lib.state_create, "nvjpegJpegStateCreate");
    resolve(&lib.state_destroy, "nvjpegJpegStateDestroy");
    resolve(&lib.batched_initialize, "nvjpegDecodeBatchedInitialize");
    resolve(&lib.batched, "nvjpegDecodeBatched");
    lib.preallocate =
        reinterpret_cast<decltype(lib.preallocate)>(dlsym(so, "nvjpegDecodeBatchedPreAllocate"));
  });
  return lib;
}

// A hardware-backend handle for the current GPU, or the reason there is none.
void* hardware_handle(const NvjpegDecoder::Library& lib, std::string* why) {
  void* handle = nullptr;
  // The flags this library knows, the most first.
  int s = 0;
  for (unsigned flags : {nvjpeg_abi::kBitstreamStrict | nvjpeg_abi::kInterpolate,
                         nvjpeg_abi::kBitstreamStrict, 0u}) {
    s = lib.create_ex(nvjpeg_abi::kBackendHardware, nullptr, nullptr, flags, &handle);
    if (s == nvjpeg_abi::kSuccess) return handle;
  }
  *why = std::string("nvJPEG has no hardware decoder on this GPU (") + nvjpeg_abi::status_name(s) +
         ")";
  return nullptr;
}

// Whether a file ends with the end-of-image marker. One that does not is truncated (or trails
// bytes), which libjpeg reports and a hardware decoder may not: the CPU decoder takes it.
bool ends_with_eoi(std::string_view jpeg) {
  return jpeg.size() >= 2 && uint8_t(jpeg[jpeg.size() - 2]) == 0xFF &&
         uint8_t(jpeg[jpeg.size() - 1]) == 0xD9;
}

// Rows of a decoded plane start 256 bytes apart at least: whole sectors for the crop's reads.
int64_t pitch_of(int width) { return (int64_t(width) + 255) / 256 * 256; }

}  // namespace

bool NvjpegDecoder::available(std::string* why) {
  if (!prim::cuda_available()) {
    *why = "no CUDA GPU";
    return false;
  }
  const Library& lib = library();
  if (!lib.error.empty()) {
    *why = lib.error;
    return false;
  }
  void* handle = hardware_handle(lib, why);
  if (!handle) return false;
  lib.destroy(handle);
  return true;
}

NvjpegDecoder::NvjpegDecoder(prim::Handle& h) : h_(h), lib_(library()) {
  if (h.device() != prim::Device::kCUDA) fail("NvjpegDecoder needs a CUDA handle");
  if (!lib_.error.empty()) fail(lib_.error);
  std::string why;
  handle_ = hardware_handle(lib_, &why);
  if (!handle_) fail(why);
}

NvjpegDecoder::~NvjpegDecoder() {
  // Work queued on the stream may still use the states' buffers.
  try {
    h_.synchronize();
  } catch (const std::exception&) {  // a failed batch's error was raised where it was used
  }
  for (Setup& s : setups_) lib_.state_destroy(s.state);
  lib_.destroy(handle_);
}

NvjpegDecoder::Setup& NvjpegDecoder::setup_for(int n, int format) {
  Setup* best = nullptr;
  for (Setup& s : setups_)
    if (s.format == format && s.batch >= n && s.batch <= n + std::max(1, n / 8) &&
        (!best || s.batch < best->batch))
      best = &s;
  if (best) return *best;
  if (setups_.size() == size_t(kSetups))
    drop(*std::min_element(setups_.begin(), setups_.end(),
                           [](const Setup& a, const Setup& b) { return a.last_use < b.last_use; }));
  Setup s;
  int status = lib_.state_create(handle_, &s.state);
  if (status != nvjpeg_abi::kSuccess)
    fail("nvjpegJpegStateCreate: ", nvjpeg_abi::status_name(status));
  status = lib_.batched_initialize(handle_, s.state, n, 1, format);
  if (status != nvjpeg_abi::kSuccess) {
    lib_.state_destroy(s.state);
    fail("nvjpegDecodeBatchedInitialize(", n, "): ", nvjpeg_abi::status_name(status));
  }
  s.batch = n;
  s.format = format;
  ++set_up_;
  setups_.push_back(s);
  return setups_.back();
}

void NvjpegDecoder::drop(Setup& setup) {
  h_.synchronize();
  lib_.state_destroy(setup.state);
  setups_.erase(setups_.begin() + (&setup - setups_.data()));
}

bool NvjpegDecoder::takes(std::string_view jpeg, const JpegHeader& header, int channels) {
  return header.baseline && header.orientation == 1 && header.channels == channels &&
         ends_with_eoi(jpeg);
}

void NvjpegDecoder::decode(int n, const std::string_view* jpegs, const JpegHeader* headers,
                           int channels, prim::DeviceBuffer* pixels, prim::ImageCrop* crops,
                           bool* on_gpu) {
  *on_gpu = false;
  if (n == 0) return;
  const int format = channels == 3 ? nvjpeg_abi::kOutputBgr : nvjpeg_abi::kOutputY;
  Setup& setup = setup_for(n, format);
  setup.last_use = calls_++;
  // Places past n repeat the last file, each into pixels of its own after the batch's.
  const int padded = setup.batch;
  const auto file = [n](int i) { return std::min(i, n - 1); };
  const size_t count = static_cast<size_t>(padded);
  std::vector<int64_t> offset(count), pitch(count);
  int64_t bytes = 0;
  int width = 0, height = 0;
  for (int i = 0; i < padded; ++i) {
    const JpegHeader& h = headers[file(i)];
    pitch[size_t(i)] = pitch_of(h.width);
    offset[size_t(i)] = bytes;
    bytes += int64_t(channels) * h.height * pitch[size_t(i)];
    width = std::max(width, h.width);
    height = std::max(height, h.height);
  }
  if (pixels->bytes() < size_t(bytes))
    *pixels = prim::DeviceBuffer(prim::Device::kCUDA, size_t(bytes) + size_t(bytes) / 4);

  std::vector<const unsigned char*> data(count);
  std::vector<size_t> lengths(count);
  std::vector<nvjpeg_abi::Image> out(count);
  for (int i = 0; i < padded; ++i) {
    const std::string_view jpeg = jpegs[file(i)];
    const int rows = headers[file(i)].height;
    data[size_t(i)] = reinterpret_cast<const unsigned char*>(jpeg.data());
    lengths[size_t(i)] = jpeg.size();
    unsigned char* base = static_cast<unsigned char*>(pixels->get()) + offset[size_t(i)];
    for (int ch = 0; ch < channels; ++ch) {
      out[size_t(i)].channel[ch] = base + int64_t(ch) * rows * pitch[size_t(i)];
      out[size_t(i)].pitch[ch] = size_t(pitch[size_t(i)]);
    }
    if (i < n) {
      crops[i].pixels = base;
      crops[i].height = rows;
      crops[i].width = headers[i].width;
      crops[i].pitch = pitch[size_t(i)];
    }
  }
  // Without its memory reserved for the largest image, the hardware decoder frees and allocates
  // device memory as sizes change, and every cudaFree waits for the whole GPU.
  if (lib_.preallocate && (width > setup.reserved_width || height > setup.reserved_height)) {
    setup.reserved_width = std::max(width, setup.reserved_width);
    setup.reserved_height = std::max(height, setup.reserved_height);
    lib_.preallocate(handle_, setup.state, padded, setup.reserved_width, setup.reserved_height,
                     nvjpeg_abi::kCss444, format);
  }
  const int s =
      lib_.batched(handle_, setup.state, data.data(), lengths.data(), out.data(), h_.stream());
  if (s != nvjpeg_abi::kSuccess) {
    // Some file of the batch is one the hardware refuses: the CPU decodes them all, and gives a
    // corrupt one its own error. The state is set up afresh for the next batch.
    drop(setup);
    left_ += uint64_t(n);
    return;
  }
  // The hardware path submits its work when called, not in the stream's order. Returning
  // before the stream has passed it, training from JPEGs with AUTO's changing shares could stop
  // for good on an H200: the training stream never reached the event after a batch's copy, with
  // nvJPEG's own threads idle. Waiting here for each batch's decode costs the GPU decoder about a
  // tenth of its rate alone.
  h_.synchronize();
  *on_gpu = true;
  decoded_ += uint64_t(n);
}

}  // namespace crema
