// GpuBatchDecoder: the GPU half of a prefetching data layer whose records are JPEG files. A
// decode worker offers it each file (take), whose header it reads there: a file the hardware
// decodes as the CPU would (NvjpegDecoder::takes) and of the layer's shape waits in its place of
// the batch; the worker decodes the rest itself, and judges any header libjpeg refuses. The
// batch's finish (one batch at a time, on the layer's upload stream) decodes the waiting files
// with NvjpegDecoder, transforms them with prim::crop_images into the batch's device data with
// the crop, flip and mean the CPU's DataTransformer draws for the same example numbers, and
// uploads the places the workers decoded. A batch the hardware refuses is decoded there on the
// CPU instead, with the CPU's errors.
#pragma once

#include <string>

#include "data/batch_engine.h"
#include "data/datum.h"
#include "data/nvjpeg_decoder.h"
#include "data/transformer.h"

namespace crema {

class GpuBatchDecoder {
 public:
  // For examples of channels x height x width before the transform, on upload's GPU. Throws
  // crema::Error where NvjpegDecoder::available() is false.
  GpuBatchDecoder(prim::Handle& upload, const DataTransformer& transformer, ColorMode color,
                  int channels, int height, int width);

  // Reader thread: clears the batch's places for batch_size examples.
  void begin(HostBatch* batch, int batch_size) const;
  // Decode worker: keeps *jpeg (moved from) for place `slot` of the batch, example `number`,
  // when the GPU decodes it; false leaves it (and any error it holds) to the caller's decoder.
  // Several workers may call it at once, for different places.
  bool take(std::string* jpeg, const std::string& where, uint64_t number, int slot,
            HostBatch* batch) const;
  // The batch's finish: its data on the device, ready once the upload stream passes it.
  void finish(HostBatch* batch);

  const NvjpegDecoder& decoder() const { return decoder_; }

 private:
  prim::Handle& upload_;
  const DataTransformer& transformer_;
  const ColorMode color_;
  const int channels_, height_, width_;
  size_t example_ = 0;  // floats of one transformed example
  NvjpegDecoder decoder_;
  prim::DeviceBuffer mean_;  // the mean image or the per-channel values, on the GPU
  prim::CropImagesDesc desc_;
};

}  // namespace crema
