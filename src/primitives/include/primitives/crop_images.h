// Caffe's data transform for a batch of decoded images: a crop window of each image, mirrored or
// not, less a mean, times a scale, into one float C x out_h x out_w example per image.
//   out[i][c][y][x] = (img_i[c][y0_i + y][x0_i + x'] - mean_i(c, y, x')) * scale
// with x' = out_w - 1 - x for a mirrored image and x otherwise, and
//   mean_i(c, y, x') = mean_image[c][mean_y0_i + y][mean_x0_i + x'] with a mean image,
//                      mean_values[c] with per-channel values, else 0.
// The images may differ in size (each crop names its own); their pixels are 8-bit (as decoded
// from JPEG or stored raw in a Datum) or float (a Datum's float_data). The CPU backend is the
// data layers' transform of each decoded record; the CUDA one transforms a batch decoded on the
// GPU. Both compute (pixel - mean) * scale in fp32, so they agree bit for bit.
#pragma once

#include <cstdint>

#include "primitives/handle.h"

namespace crema::prim {

enum class PixelType { kUInt8, kFloat32 };

// One image of the batch and its window. Pixel (c, y, x) is element (c * height + y) * pitch + x
// of `pixels` (planar channels, rows `pitch` elements apart), on the handle's device.
struct ImageCrop {
  const void* pixels = nullptr;
  int64_t pitch = 0;  // >= width
  int height = 0, width = 0;
  int y0 = 0, x0 = 0;            // the window's top-left pixel in the image
  int mean_y0 = 0, mean_x0 = 0;  // and in the mean image (with one)
  bool mirror = false;
};

struct CropImagesDesc {
  PixelType pixels = PixelType::kUInt8;
  int channels = 0;
  int out_h = 0, out_w = 0;
  // channels x mean_h x mean_w floats on the handle's device, or null.
  const float* mean_image = nullptr;
  int mean_h = 0, mean_w = 0;
  // channels floats on the handle's device, or null; ignored with a mean image.
  const float* mean_values = nullptr;
  float scale = 1;
};

// Writes n examples to out (n x channels x out_h x out_w floats on the handle's device). `crops`
// is a host array of n: every window must lie inside its image and, with a mean image, inside
// that too, else PrimError names the image and nothing is written. The CUDA backend copies the
// crops to the handle's workspace on its stream; from pinned memory (which must then stay as it
// is until the stream has passed the call) the host does not wait for that copy.
void crop_images(Handle& h, const CropImagesDesc& d, int n, const ImageCrop* crops, float* out);

}  // namespace crema::prim
