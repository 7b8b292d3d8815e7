// CPU crop_images: image by image (split over the handle's threads), a row at a time. The data
// layers call it from their decode workers with one image and one thread.
#include <algorithm>
#include <cstdint>

#include "primitives/cpu/parallel.h"
#include "primitives/crop_images.h"

namespace crema::prim::cpu {
namespace {

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
      if (c.mirror) {
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
