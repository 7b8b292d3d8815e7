// crop_images: validation of the descriptor and of every window, then the one device dispatcher.
#include "primitives/crop_images.h"

#include <cstdint>
#include <string>

#include "primitives/common/dispatch.h"

namespace crema::prim {

CREMA_BACKENDS(void crop_images(Handle& h, const CropImagesDesc& d, int n, const ImageCrop* crops,
                                float* out);)

namespace {

[[noreturn]] void fail(const std::string& why) { throw PrimError("crop_images: " + why); }

// Whether the window [y0, y0 + h) x [x0, x0 + w) lies inside a rows x cols plane.
bool inside(int y0, int x0, int h, int w, int rows, int cols) {
  return y0 >= 0 && x0 >= 0 && int64_t(y0) + h <= rows && int64_t(x0) + w <= cols;
}

void check(const CropImagesDesc& d, int n, const ImageCrop* crops, const float* out) {
  if (n < 0 || d.channels <= 0 || d.out_h <= 0 || d.out_w <= 0)
    fail("the batch, channels and output size must be positive");
  if (int64_t(d.channels) * d.out_h > INT32_MAX) fail("more than 2^31 - 1 output rows per image");
  if (n > 0 && (!crops || !out)) fail("null crops or output");
  if (d.mean_image && (d.mean_h < d.out_h || d.mean_w < d.out_w))
    fail("the mean image (" + std::to_string(d.mean_h) + "x" + std::to_string(d.mean_w) +
         ") is smaller than the output (" + std::to_string(d.out_h) + "x" +
         std::to_string(d.out_w) + ")");
  for (int i = 0; i < n; ++i) {
    const ImageCrop& c = crops[i];
    const std::string which = "image " + std::to_string(i);
    if (!c.pixels) fail(which + ": null pixels");
    if (c.height <= 0 || c.width <= 0 || c.pitch < c.width)
      fail(which + ": size " + std::to_string(c.height) + "x" + std::to_string(c.width) +
           " with row pitch " + std::to_string(c.pitch));
    if (!inside(c.y0, c.x0, d.out_h, d.out_w, c.height, c.width))
      fail(which + ": the " + std::to_string(d.out_h) + "x" + std::to_string(d.out_w) +
           " window at (" + std::to_string(c.y0) + ", " + std::to_string(c.x0) +
           ") is not inside its " + std::to_string(c.height) + "x" + std::to_string(c.width) +
           " pixels");
    if (d.mean_image && !inside(c.mean_y0, c.mean_x0, d.out_h, d.out_w, d.mean_h, d.mean_w))
      fail(which + ": the mean window at (" + std::to_string(c.mean_y0) + ", " +
           std::to_string(c.mean_x0) + ") is not inside the " + std::to_string(d.mean_h) + "x" +
           std::to_string(d.mean_w) + " mean image");
  }
}

}  // namespace

void crop_images(Handle& h, const CropImagesDesc& d, int n, const ImageCrop* crops, float* out) {
  check(d, n, crops, out);
  if (n == 0) return;
  CREMA_DISPATCH(h, crop_images, h, d, n, crops, out);
}

}  // namespace crema::prim
