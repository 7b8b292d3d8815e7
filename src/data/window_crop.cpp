// One window of an image, warped as R-CNN (Caffe's WindowData) warps it.
#include "data/window_crop.h"

#include <algorithm>
#include <cmath>

#include "core/errors.h"

#ifdef CREMA_WITH_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace crema {

WindowPlacement place_window(const Window& w, int image_width, int image_height, int crop_size,
                             int context_pad, bool square, bool mirror) {
  WindowPlacement p{w.x1, w.y1, w.x2, w.y2, crop_size, crop_size, 0, 0};
  if (context_pad == 0 && !square) return p;
  // Grown so that, resized to crop_size, context_pad pixels surround the window on each side.
  const float context_scale = float(crop_size) / float(crop_size - 2 * context_pad);
  float half_height = float(w.y2 - w.y1 + 1) / 2.0f;
  float half_width = float(w.x2 - w.x1 + 1) / 2.0f;
  const float center_x = float(w.x1) + half_width;
  const float center_y = float(w.y1) + half_height;
  if (square) half_width = half_height = std::max(half_width, half_height);
  int x1 = int(std::round(center_x - half_width * context_scale));
  int x2 = int(std::round(center_x + half_width * context_scale));
  int y1 = int(std::round(center_y - half_height * context_scale));
  int y2 = int(std::round(center_y + half_height * context_scale));
  // The grown region may leave the image: clip it, and keep what was cut off as padding.
  const int unclipped_height = y2 - y1 + 1, unclipped_width = x2 - x1 + 1;
  int pad_x1 = std::max(0, -x1), pad_y1 = std::max(0, -y1);
  int pad_x2 = std::max(0, x2 - image_width + 1), pad_y2 = std::max(0, y2 - image_height + 1);
  p.x1 = x1 + pad_x1;
  p.x2 = x2 - pad_x2;
  p.y1 = y1 + pad_y1;
  p.y2 = y2 - pad_y2;
  // The scale that would warp the whole grown region, applied to its clipped part.
  const float scale_x = float(crop_size) / float(unclipped_width);
  const float scale_y = float(crop_size) / float(unclipped_height);
  p.width = int(std::round(float(p.x2 - p.x1 + 1) * scale_x));
  p.height = int(std::round(float(p.y2 - p.y1 + 1) * scale_y));
  pad_x1 = int(std::round(float(pad_x1) * scale_x));
  pad_x2 = int(std::round(float(pad_x2) * scale_x));
  pad_y1 = int(std::round(float(pad_y1) * scale_y));
  p.pad_h = pad_y1;
  p.pad_w = mirror ? pad_x2 : pad_x1;  // a mirrored crop has its padding on the other side
  // Rounding may push the region past the square.
  p.height = std::max(1, std::min(p.height, crop_size - p.pad_h));
  p.width = std::max(1, std::min(p.width, crop_size - p.pad_w));
  return p;
}

#ifdef CREMA_WITH_OPENCV

void crop_window(const std::string& image_bytes, const std::string& where, const Window& w,
                 int crop_size, int context_pad, bool square, bool mirror, float scale,
                 const WindowMean& mean, float* out) {
  constexpr int kChannels = 3;
  std::fill(out, out + size_t(kChannels) * crop_size * crop_size, 0.0f);
  cv::Mat image;
  try {
    const cv::Mat raw(1, int(image_bytes.size()), CV_8UC1, const_cast<char*>(image_bytes.data()));
    image = cv::imdecode(raw, cv::IMREAD_COLOR);
  } catch (const cv::Exception& e) {
    fail(where, ": cannot decode the image: ", e.what());
  }
  if (image.empty() || image.depth() != CV_8U) fail(where, ": cannot decode the image");
  if (w.x2 >= image.cols || w.y2 >= image.rows)
    fail(where, ": the window (", w.x1, ",", w.y1, ")-(", w.x2, ",", w.y2, ") of window file line ",
         w.line, " lies outside the ", image.cols, "x", image.rows, " image");
  const WindowPlacement p =
      place_window(w, image.cols, image.rows, crop_size, context_pad, square, mirror);
  cv::Mat warped;
  try {
    cv::resize(image(cv::Rect(p.x1, p.y1, p.x2 - p.x1 + 1, p.y2 - p.y1 + 1)), warped,
               cv::Size(p.width, p.height), 0, 0, cv::INTER_LINEAR);
    if (mirror) cv::flip(warped, warped, 1);
  } catch (const cv::Exception& e) {
    fail(where, ": cannot warp the window of window file line ", w.line, ": ", e.what());
  }
  const int mean_offset = (mean.width - crop_size) / 2;
  for (int h = 0; h < warped.rows; ++h) {
    const unsigned char* row = warped.ptr<unsigned char>(h);
    for (int x = 0; x < warped.cols; ++x)
      for (int c = 0; c < kChannels; ++c) {
        const int y = h + p.pad_h, col = x + p.pad_w;
        float value = float(row[x * kChannels + c]);
        if (!mean.image.empty())
          value -= mean.image[(size_t(c) * mean.height + size_t(y + mean_offset)) * mean.width +
                              size_t(col + mean_offset)];
        else if (!mean.values.empty())
          value -= mean.values[size_t(c)];
        out[(size_t(c) * crop_size + size_t(y)) * crop_size + size_t(col)] = value * scale;
      }
  }
}

#else

void crop_window(const std::string&, const std::string& where, const Window&, int, int, bool, bool,
                 float, const WindowMean&, float*) {
  fail(where, ": cannot read images: crema was built without OpenCV");
}

#endif

}  // namespace crema
