// CPU crop_images: image by image (split over the handle's threads), a row at a time. The data
// layers call it from their decode workers with one image and one thread.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "primitives/cpu/parallel.h"
#include "primitives/crop_images.h"

namespace crema::prim::cpu {
namespace {

// A mirrored row whose window was widened to floats in place: output x takes window value
// last - x, less the mean at last - x (mean_row, or `value` without one), times the scale. In
// pairs from both ends, so each value is read before it is overwritten.
void mirror_in_place(float* row, int width, const float* mean_row, float value, float scale) {
  const int last = width - 1;
  if (mean_row) {
    for (int x = 0; x < width / 2; ++x) {
      const float a = row[x], b = row[last - x];
      row[x] = (b - mean_row[last - x]) * scale;
      row[last - x] = (a - mean_row[x]) * scale;
    }
    if (width % 2) row[width / 2] = (row[width / 2] - mean_row[width / 2]) * scale;
  } else {
    for (int x = 0; x < width / 2; ++x) {
      const float a = row[x], b = row[last - x];
      row[x] = (b - value) * scale;
      row[last - x] = (a - value) * scale;
    }
    if (width % 2) row[width / 2] = (row[width / 2] - value) * scale;
  }
}

template <typename P>
void crop_one(const CropImagesDesc& d, const ImageCrop& c, float* out) {
  const P* pixels = static_cast<const P*>(c.pixels);
  const float scale = d.scale;
  for (int ch = 0; ch < d.channels; ++ch) {
    const float value = d.mean_values ? d.mean_values[ch] : 0.0f;
    for (int y = 0; y < d.out_h; ++y) {
      const P* src = pixels + (int64_t(ch) * c.height + c.y0 + y) * c.pitch + c.x0;
      const float* mean =
          d.mean_image
              ? d.mean_image + (int64_t(ch) * d.mean_h + c.mean_y0 + y) * d.mean_w + c.mean_x0
              : nullptr;
      float* dst = out + (int64_t(ch) * d.out_h + y) * d.out_w;
      // Mirrored, output column x reads window column out_w - 1 - x, for the pixel and the mean.
      if (c.mirror && std::is_same_v<P, uint8_t>) {
        // Bytes read backwards do not vectorize; floats read forwards and turned in place do.
        for (int x = 0; x < d.out_w; ++x) dst[x] = float(src[x]);
        mirror_in_place(dst, d.out_w, mean, value, scale);
      } else if (c.mirror) {
        const int last = d.out_w - 1;
        if (mean) {
          for (int x = 0; x < d.out_w; ++x)
            dst[x] = (float(src[last - x]) - mean[last - x]) * scale;
        } else {
          for (int x = 0; x < d.out_w; ++x) dst[x] = (float(src[last - x]) - value) * scale;
        }
      } else if (mean) {
        for (int x = 0; x < d.out_w; ++x) dst[x] = (float(src[x]) - mean[x]) * scale;
      } else {
        for (int x = 0; x < d.out_w; ++x) dst[x] = (float(src[x]) - value) * scale;
      }
    }
  }
}

}  // namespace

void crop_images(Handle& h, const CropImagesDesc& d, int n, const ImageCrop* crops, float* out) {
  const int64_t example = int64_t(d.channels) * d.out_h * d.out_w;
  const int parts = inside_parallel_for() ? 1 : std::max(1, std::min(h.cpu_threads(), n));
  parallel_for(parts, [&](int t) {
    int begin, end;
    split_range(n, parts, t, &begin, &end);
    for (int i = begin; i < end; ++i) {
      if (d.pixels == PixelType::kUInt8)
        crop_one<uint8_t>(d, crops[i], out + i * example);
      else
        crop_one<float>(d, crops[i], out + i * example);
    }
  });
}

}  // namespace crema::prim::cpu
