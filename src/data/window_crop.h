// Cutting one window out of an image as Caffe's WindowData layer does (R-CNN's warp):
//
// - crop_mode "warp" with context_pad 0: the window is resized to crop_size x crop_size.
// - context_pad p > 0: the window is grown about its centre by crop_size / (crop_size - 2p), so
//   that after the resize p pixels of context surround it; "square" first makes it square (the
//   longer side). The grown region is clipped to the image, the clipped part resized with the
//   grown region's scale and placed at the offset its clipped-off part would have had; the
//   rest of the crop_size x crop_size output stays 0.
// - mirror flips the resized region, and its offset with it.
//
// Pixels are then (value - mean) * scale, the mean being a mean image (read at the crop's place
// in its centre crop_size square) or one value per channel.
#pragma once

#include <string>
#include <vector>

#include "data/window_file.h"

namespace crema {

// Where the pixels of a window go: the image region x1..x2, y1..y2 (inclusive) is resized to
// width x height and written at (pad_h, pad_w) of the crop_size square.
struct WindowPlacement {
  int x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  int width = 0, height = 0;
  int pad_w = 0, pad_h = 0;
};

WindowPlacement place_window(const Window& w, int image_width, int image_height, int crop_size,
                             int context_pad, bool square, bool mirror);

struct WindowMean {
  // C x H x W mean image (empty: none), or per-channel values (empty: none).
  std::vector<float> image;
  int height = 0, width = 0;
  std::vector<float> values;
};

// Decodes the image file's bytes as 3-channel colour (BGR), places the window, and writes its 3
// x crop_size x crop_size values to out (set to 0 first). Throws crema::Error naming `where` for
// bytes that do not decode, an image smaller than the window, and in a build without OpenCV.
void crop_window(const std::string& image_bytes, const std::string& where, const Window& w,
                 int crop_size, int context_pad, bool square, bool mirror, float scale,
                 const WindowMean& mean, float* out);

}  // namespace crema
