// NvjpegDecoder: a batch of JPEG files decoded on the GPU by nvJPEG's hardware decoder, into
// 8-bit planar images that prim::crop_images then transforms there. nvJPEG is loaded at run time
// (libnvjpeg.so.13, else .so.12; CREMA_NVJPEG may name the file), so every build has the decoder
// and none links nvJPEG; available() says why a machine cannot use it.
//
// The caller reads and checks each header on the host as the CPU decoder does (read_jpeg_header:
// the same errors for corrupt, truncated, CMYK or oversized files) and gives the decoder what
// takes() accepts -- whole baseline files shown as stored (EXIF orientation 1) -- in one
// nvjpegDecodeBatched call on the handle's stream; the rest (progressive files, turned photos,
// files without their end-of-image marker, a batch the hardware refuses) stays with the CPU
// decoder, so every record still decodes as on the CPU or fails with the CPU's error. The
// hardware's pixels need not be libjpeg's: its IDCT and chroma upsampling are its own.
#pragma once

#include <string>
#include <string_view>

#include "data/datum.h"
#include "data/jpeg_codec.h"
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

  // Whether the hardware decodes `jpeg`, whose header read_jpeg_header checked, as the CPU
  // decoder would for a layer of `channels` channels: a whole baseline file of those channels,
  // shown as stored.
  static bool takes(std::string_view jpeg, const JpegHeader& header, int channels);

  // Decodes jpegs[0..n) (host bytes, each one takes() accepted, kept until the handle's stream
  // has passed this work) with `channels` channels each (3: BGR, 1: gray), queued on the
  // handle's stream into *pixels (a device buffer, grown as needed; the caller keeps it, unused
  // by anything else, until the work reading the images has finished). crops[i] gets image i's
  // pixels, pitch and size; *on_gpu is true when the batch was decoded, false when the hardware
  // refused it, which leaves every image to the CPU. nvJPEG's hardware path may write *pixels
  // as soon as it is called, before work queued earlier on the stream has run: no queued work
  // may still read *pixels (GpuBatchDecoder gives each batch its own, refilled only after the
  // batch was consumed).
  void decode(int n, const std::string_view* jpegs, const JpegHeader* headers, int channels,
              prim::DeviceBuffer* pixels, prim::ImageCrop* crops, bool* on_gpu);

  // Images the hardware decoded, and refused, since construction.
  uint64_t decoded() const { return decoded_; }
  uint64_t left() const { return left_; }

  struct Library;  // nvJPEG's entry points, loaded once (nvjpeg_decoder.cpp)

 private:
  prim::Handle& h_;
  const Library& lib_;
  void* handle_ = nullptr;                        // nvjpegHandle_t
  void* state_ = nullptr;                         // nvjpegJpegState_t
  int batch_ = 0, format_ = -1;                   // as last initialized
  int reserved_width_ = 0, reserved_height_ = 0;  // what nvjpegDecodeBatchedPreAllocate reserved
  uint64_t decoded_ = 0, left_ = 0;
};

}  // namespace crema
