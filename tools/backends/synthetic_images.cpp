// Synthetic class-dependent images for tests and demos.
#include "backends/synthetic_images.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "core/errors.h"
#include "data/image_io.h"
#include "data/jpeg_codec.h"

namespace crema {

namespace {

// Five BGR colors far apart from each other.
constexpr uint8_t kPalette[5][3] = {
    {40, 40, 220}, {40, 200, 40}, {220, 60, 40}, {30, 210, 230}, {200, 50, 200}};

// Draws one image of class k into chw (3 x h x w).
void draw(int k, int h, int w, double noise_std, std::mt19937_64& rng, std::vector<uint8_t>* chw) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::normal_distribution<double> noise(0.0, noise_std);
  const uint8_t* color = kPalette[k % 5];
  const int pattern = (k / 5) % 4;
  const double period = std::max(2.0, std::min(h, w) / 8.0 * (k / 20 + 1));
  const double phase = unit(rng) * period;
  const double brightness = 0.85 + 0.3 * unit(rng);
  chw->assign(size_t(3) * h * w, 0);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      bool on = false;
      switch (pattern) {
        case 0:
          on = std::fmod(y + phase, period) < period / 2;
          break;
        case 1:
          on = std::fmod(x + phase, period) < period / 2;
          break;
        case 2:
          on = (std::fmod(y + phase, period) < period / 2) !=
               (std::fmod(x + phase, period) < period / 2);
          break;
        default:
          on = std::fmod(std::hypot(y - h / 2.0, x - w / 2.0) + phase, period) < period / 2;
      }
      for (int c = 0; c < 3; ++c) {
        const double v = color[c] * (on ? 1.0 : 0.35) * brightness + noise(rng);
        (*chw)[(size_t(c) * h + y) * w + x] = uint8_t(std::clamp(v, 0.0, 255.0));
      }
    }
  }
}

}  // namespace

SyntheticImageSet write_synthetic_image_set(const std::string& dir,
                                            const SyntheticImageSetOptions& o) {
  if (o.classes <= 0 || o.classes > 10000) fail("classes must be in [1, 10000]; got ", o.classes);
  if (o.train_per_class < 0 || o.val_per_class < 0 || o.train_per_class + o.val_per_class <= 0 ||
      o.train_per_class + o.val_per_class > 100000)
    fail("images per class must be non-negative with a positive total of at most 100000");
  if (o.min_size < 4 || o.max_size < o.min_size || o.max_size > 4096)
    fail("image sizes must satisfy 4 <= min_size <= max_size <= 4096; got ", o.min_size, " and ",
         o.max_size);
  if (o.format != "jpg" && o.format != "png") fail("format must be jpg or png; got ", o.format);
  if (o.jpeg_quality < 1 || o.jpeg_quality > 100)
    fail("jpeg_quality must be in [1, 100]; got ", o.jpeg_quality);
  if (!(o.noise > 0 && o.noise <= 100)) fail("noise must be in (0, 100]; got ", o.noise);
  if (!image_io_available() && !(o.format == "jpg" && jpeg_codec_available()))
    fail(dir, ": cannot write ", o.format, " images: crema was built without OpenCV");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail(dir, ": cannot create the directory: ", ec.message());

  SyntheticImageSet set;
  set.train_list = dir + "/train.txt";
  set.val_list = dir + "/val.txt";
  std::ofstream train(set.train_list), val(set.val_list);
  if (!train || !val) fail(dir, ": cannot write the list files");
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<int> side(o.min_size, o.max_size);
  std::vector<uint8_t> chw;
  const int per_class = o.train_per_class + o.val_per_class;
  // Interleave the classes, so a list read in order is not sorted by class.
  for (int i = 0; i < per_class; ++i) {
    for (int k = 0; k < o.classes; ++k) {
      char name[64];
      std::snprintf(name, sizeof name, "class%03d/img%05d.%s", k, i, o.format.c_str());
      if (i == 0) {
        std::filesystem::create_directories(
            std::filesystem::path(dir) / std::filesystem::path(name).parent_path(), ec);
        if (ec) fail(dir, ": cannot create a class directory: ", ec.message());
      }
      const int h = side(rng), w = side(rng);
      draw(k, h, w, o.noise, rng, &chw);
      write_image_file(dir + "/" + name, chw.data(), 3, h, w, o.jpeg_quality);
      (i < o.train_per_class ? train : val) << name << " " << k << "\n";
      ++set.images;
    }
  }
  train.flush();
  val.flush();
  if (!train || !val) fail(dir, ": cannot write the list files");
  return set;
}

}  // namespace crema
