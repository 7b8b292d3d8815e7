// DataTransformer: Caffe's preprocessing of one example, from TransformationParameter.
//
//   out[c][y][x] = (in[c][y0 + y][x0 + x'] - mean(c, y0 + y, x0 + x')) * scale
//
// where the crop window (y0, x0) of crop_size x crop_size is random in TRAIN and centered in
// TEST (no crop: the whole image, y0 = x0 = 0), x' = W' - 1 - x when the example is mirrored
// (a coin flip per example in either phase, as in Caffe, when `mirror` is set) and x otherwise,
// and mean is the
// mean_file image, a mean_value per channel (one value serves all channels), or 0.
//
// A mean image as large as the input is indexed at the same pixel as the input, as in Caffe. A
// mean image of another size is accepted when a crop is set and it is at least crop_size in both
// dimensions: then its centered crop_size window is subtracted.
//
// Randomness is drawn per example: the crop and the flip of example number `record` come from a
// small generator keyed by the transformer's seed and that number, never from a generator shared
// in the order threads happen to run. So a run with a fixed seed draws the same crops and flips
// whatever the number of decode workers, and a resumed run needs only the record count. After
// construction transform() is const: any number of threads may call it at once.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "crema.pb.h"
#include "primitives/crop_images.h"

namespace crema {

class DataTransformer {
 public:
  // Loads the mean file, if any. Throws crema::Error when both mean_file and mean_value are
  // given and when the mean file cannot be read or does not hold one C x H x W image.
  DataTransformer(const TransformationParameter& param, Phase phase, uint64_t seed);

  // Output shape {channels, height, width} for inputs of the given shape; also validates that
  // shape against the crop, the mean values and the mean image, throwing crema::Error naming the
  // mean file and both shapes on a mismatch.
  std::vector<int> output_shape(int channels, int height, int width) const;

  // Transforms one C-H-W image `in` (values, or 8-bit pixels), example number `record` of its
  // layer, into `out`, which holds the output_shape's count of values, by prim::crop_images on
  // the CPU. Call output_shape() once for the shape first: transform() trusts it.
  void transform(const float* in, int channels, int height, int width, float* out,
                 uint64_t record) const;
  void transform(const uint8_t* in, int channels, int height, int width, float* out,
                 uint64_t record) const;

  // What transform() does, for a caller that transforms elsewhere (a batch decoded on the GPU):
  // the window and flip of example `record` of a height x width image (its pixels left unset,
  // rows `width` apart), and the descriptor of `channels` such images, whose mean image is the
  // host copy mean_image(); per-channel values, mean_values(channels), are the caller's to
  // point it at.
  prim::ImageCrop crop(int height, int width, uint64_t record) const;
  prim::CropImagesDesc crop_desc(int channels, int height, int width) const;
  const std::vector<float>& mean_image() const { return mean_; }
  // One value per channel (a single mean_value serves them all), or empty without mean_value.
  std::vector<float> mean_values(int channels) const;

  Phase phase() const { return phase_; }
  // The generator the per-example streams are keyed from (it never advances), for snapshots: a
  // transformer given it back draws the same crops and flips for the same example numbers.
  const std::mt19937_64& random() const { return rng_; }
  void set_random(const std::mt19937_64& rng);
  const TransformationParameter& param() const { return param_; }

 private:
  void transform(const void* in, prim::PixelType type, int channels, int height, int width,
                 float* out, uint64_t record) const;

  TransformationParameter param_;
  Phase phase_;
  std::mt19937_64 rng_;
  uint64_t stream_key_ = 0;  // rng_'s first draw, which keys the per-example streams
  std::vector<float> mean_;  // the mean image, empty without mean_file
  int mean_c_ = 0, mean_h_ = 0, mean_w_ = 0;
};

}  // namespace crema
