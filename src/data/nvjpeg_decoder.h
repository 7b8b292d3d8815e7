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
#include <vector>

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

  // Decodes jpegs[0..n) (host bytes, each one takes() accepted) with `channels` channels each
  // (3: BGR, 1: gray) into *pixels (a device buffer, grown as needed; the caller keeps it, unused
  // by anything else, until the work reading the images has finished), and returns once the
  // handle's stream has passed the decode (so it waits for work queued before it too). A batch
  // may be decoded beside copies of its last file, to fit a kept setup. crops[i] gets image i's
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
  // The batch sizes the decoder keeps set up (at most kSetups), and the setups made since
  // construction (each waits for the whole GPU).
  int setups() const { return int(setups_.size()); }
  uint64_t set_up() const { return set_up_; }

  struct Library;  // nvJPEG's entry points, loaded once (nvjpeg_decoder.cpp)
  static constexpr int kSetups = 3;

 private:
  // nvjpegDecodeBatched decodes exactly the number of files its state was set up for, and
  // setting a state up (with its first batch) waits for the work queued on the whole GPU,
  // 90-130 ms behind ResNet-50's training steps on an H200. AUTO's share of a batch changes its
  // size, and files the hardware does not take make it smaller, so a state is kept for each of
  // the last kSetups sizes, and a batch a few files short of a kept size is padded to it.
  struct Setup {
    void* state = nullptr;  // nvjpegJpegState_t
    int batch = 0, format = -1;
    int reserved_width = 0, reserved_height = 0;  // what nvjpegDecodeBatchedPreAllocate reserved
    uint64_t last_use = 0;                        // decode() calls before its last use
  };

  // The setup a batch of n files of `format` uses: the smallest kept one of n files or a few
  // more, else a new one of n (in place of the least recently used).
  Setup& setup_for(int n, int format);
  // Destroys a setup's state once the work queued on the stream has finished with it.
  void drop(Setup& setup);

  prim::Handle& h_;
  const Library& lib_;
  void* handle_ = nullptr;  // nvjpegHandle_t
  std::vector<Setup> setups_;
  uint64_t calls_ = 0, set_up_ = 0;
  uint64_t decoded_ = 0, left_ = 0;
};

}  // namespace crema
