// The crop_images cases the CPU test checks against its oracle and the CUDA test against the
// CPU: 8-bit and float pixels, images of different sizes in one batch with row pitches wider
// than the rows, windows at every edge, mirrored and not, a mean image larger than the output
// (windows at other offsets than the pixels'), per-channel mean values, none, and a scale.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "primitives/crop_images.h"
#include "test_util.h"

namespace crema::test {

struct CropCase {
  std::string name;
  prim::CropImagesDesc desc;           // mean pointers unset: see mean_image, mean_values
  std::vector<float> pixels;           // every image, float or 8-bit values
  std::vector<int64_t> offsets;        // of each image's first pixel in `pixels`
  std::vector<prim::ImageCrop> crops;  // pixels unset: see at()
  std::vector<float> mean_image, mean_values;

  size_t out_count() const {
    return crops.size() * size_t(desc.channels) * size_t(desc.out_h) * size_t(desc.out_w);
  }
  // The pixels as the descriptor's type, bytes to upload or to point at.
  std::vector<unsigned char> pixel_bytes() const {
    if (desc.pixels == prim::PixelType::kFloat32) {
      std::vector<unsigned char> b(pixels.size() * sizeof(float));
      std::memcpy(b.data(), pixels.data(), b.size());
      return b;
    }
    return std::vector<unsigned char>(pixels.begin(), pixels.end());
  }
  // The crops with their pixels in `base` (pixel_bytes() on some device).
  std::vector<prim::ImageCrop> at(const void* base) const {
    const size_t size = desc.pixels == prim::PixelType::kFloat32 ? sizeof(float) : 1;
    std::vector<prim::ImageCrop> c = crops;
    for (size_t i = 0; i < c.size(); ++i)
      c[i].pixels = static_cast<const unsigned char*>(base) + size_t(offsets[i]) * size;
    return c;
  }
};

inline std::vector<CropCase> crop_cases() {
  struct Image {
    int h, w, pitch, y0, x0;
    bool mirror;
  };
  const std::vector<Image> batch = {{9, 11, 11, 0, 0, false},   {9, 11, 16, 2, 6, true},
                                    {12, 7, 9, 5, 2, false},    {7, 7, 7, 0, 2, true},
                                    {20, 30, 33, 13, 25, true}, {7, 5, 5, 0, 0, false}};
  std::vector<CropCase> cases;
  uint64_t seed = 1;
  // Each case small, and grown by 34 rows and 40 columns everywhere (images, windows, mean):
  // outputs of more rows and columns than a CUDA block's band and warp take at once. Widths odd
  // and even: a mirrored row has a middle column, or none.
  for (int grow = 0; grow < 2; ++grow)
    for (prim::PixelType type : {prim::PixelType::kUInt8, prim::PixelType::kFloat32})
      for (int mean = 0; mean < 3; ++mean)
        for (int channels : {1, 3})
          for (int out_w : {5 + 40 * grow, 4 + 40 * grow}) {
            const int dh = 34 * grow, dw = 40 * grow;
            CropCase c;
            c.name = std::string(type == prim::PixelType::kUInt8 ? "u8" : "f32") +
                     (mean == 0   ? " no mean"
                      : mean == 1 ? " mean image"
                                  : " mean values") +
                     " " + std::to_string(channels) + "ch, " + std::to_string(7 + dh) + "x" +
                     std::to_string(out_w);
            c.desc.pixels = type;
            c.desc.channels = channels;
            c.desc.out_h = 7 + dh;
            c.desc.out_w = out_w;
            c.desc.scale = mean == 2 ? 0.00390625f : 1.0f / 3;
            for (const Image& im : batch) {
              c.offsets.push_back(int64_t(c.pixels.size()));
              const size_t n = size_t(channels) * (im.h + dh) * (im.pitch + dw);
              for (float v : random_vector<float>(n, seed++, 0, 256))
                c.pixels.push_back(type == prim::PixelType::kUInt8 ? float(int(v)) : v);
              prim::ImageCrop crop;
              crop.pitch = im.pitch + dw;
              crop.height = im.h + dh;
              crop.width = im.w + dw;
              crop.y0 = im.y0;
              crop.x0 = im.x0;
              crop.mirror = im.mirror;
              crop.mean_y0 = (im.y0 * 3) % 4;  // a mean image of 3 rows and 4 columns more than
                                               // the output: rows 0..3, columns 0..4
              crop.mean_x0 = im.x0 % 5;
              c.crops.push_back(crop);
            }
            if (mean == 1) {
              c.desc.mean_h = 10 + dh;
              c.desc.mean_w = 9 + dw;
              c.mean_image = random_vector<float>(
                  size_t(channels) * size_t(c.desc.mean_h) * size_t(c.desc.mean_w), seed++, 0, 256);
            } else if (mean == 2) {
              c.mean_values = random_vector<float>(size_t(channels), seed++, 50, 150);
            }
            cases.push_back(std::move(c));
          }
  return cases;
}

}  // namespace crema::test
