// NvjpegDecoder: a batch of JPEG records decoded on the GPU by nvJPEG's hardware decoder, into
// 8-bit planar images that prim::crop_images then transforms there. nvJPEG is loaded at run time
// (libnvjpeg.so.13, else .so.12; CREMA_NVJPEG may name the file), so every build has the decoder
// and none links nvJPEG; available() says why a machine cannot use it.
//
// Each header is read and checked on the host exactly as the CPU decoder does (read_jpeg_header:
// the same errors for corrupt, truncated, CMYK or oversized files). What the hardware decodes --
// whole baseline files shown as stored (EXIF orientation 1) -- goes to one nvjpegDecodeBatched
// call on the handle's stream; the rest (progressive files, turned photos, files without their
// end-of-image marker, any batch the hardware refuses) is left to the caller's CPU decoder, so
// every record still decodes as it would on the CPU or fails with the CPU's error. The hardware's
// pixels are not libjpeg's: its IDCT and chroma upsampling differ, by a few levels at most where
// the colour changes fast.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/datum.h"
#include "primitives/crop_images.h"
#include "primitives/handle.h"

namespace crema {

class NvjpegDecoder {
 public:
  // Whether nvJPEG loads and has a hardware decoder for the current GPU; *why says why not.
  static bool available(std::string* why);

  // A decoder for h's GPU (h a CUDA handle, its device current on the calling thread). Throws
  // crema::Error when available() is false.
  explicit NvjpegDecoder(prim::Handle& h);
  ~NvjpegDecoder();
  NvjpegDecoder(const NvjpegDecoder&) = delete;
  NvjpegDecoder& operator=(const NvjpegDecoder&) = delete;

  // Decodes jpegs[0..n) (host bytes; where[i] names record i in errors) with `channels` channels
  // each (3: BGR, 1: gray; `color` as the CPU decoder's, so kNative refuses a file of other
  // channels). Queued on the handle's stream into memory the decoder owns until the next call;
  // crops[i] gets image i's pixels, pitch and size, and on_gpu[i] whether it was decoded here
  // (false: left to the CPU). Throws crema::Error for a record the CPU decoder would refuse too.
  void decode(int n, const std::string_view* jpegs, const std::string* where, int channels,
              ColorMode color, prim::ImageCrop* crops, std::vector<bool>* on_gpu);

  // Images decoded by the hardware and left to the CPU since construction.
  uint64_t decoded() const { return decoded_; }
  uint64_t left() const { return left_; }

  struct Library;  // nvJPEG's entry points, loaded once (nvjpeg_decoder.cpp)

 private:
  prim::Handle& h_;
  const Library& lib_;
  void* handle_ = nullptr;       // nvjpegHandle_t
  void* state_ = nullptr;        // nvjpegJpegState_t
  int batch_ = 0, format_ = -1;  // as last initialized
  prim::DeviceBuffer pixels_;
  uint64_t decoded_ = 0, left_ = 0;
};

}  // namespace crema
