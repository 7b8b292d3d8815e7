// A synthetic ImageNet-style image set: a folder of JPEG (or PNG) images of varied sizes in
// class subfolders, with "<path> <label>" list files for training and validation, whose content
// depends on the class so that a small net can learn it. Class k has
//   a color:   palette[k % 5] (five well-separated BGR colors),
//   a pattern: (k / 5) % 4 -> horizontal stripes, vertical stripes, checkerboard, rings,
//              with a period of (k / 20 + 1) / 8 of the image's smaller side,
// drawn over a dark version of the color at a random phase, with random brightness jitter and
// per-pixel noise. All of it is mirror-symmetric in distribution, so random mirroring keeps the
// classes apart. A fixed seed gives the same files byte for byte, so re-running is idempotent.
#pragma once

#include <cstdint>
#include <string>

namespace crema {

struct SyntheticImageSetOptions {
  int classes = 20;
  int train_per_class = 20;
  int val_per_class = 5;
  int min_size = 64;  // sides are drawn uniformly from [min_size, max_size], independently
  int max_size = 160;
  std::string format = "jpg";  // file extension: jpg or png
  int jpeg_quality = 95;       // 1..100 (OpenCV's default)
  double noise = 12;           // standard deviation of the per-pixel noise, in 0..100
  uint64_t seed = 1;
};

struct SyntheticImageSet {
  std::string train_list;  // <dir>/train.txt
  std::string val_list;    // <dir>/val.txt
  int images = 0;
};

// Writes the images under <dir>/<class name>/ and the two lists (paths relative to <dir>, so
// root_folder is "<dir>/"). Creates dir when missing. Throws crema::Error for invalid options,
// unwritable files, and for PNG in a build without OpenCV (JPEG is written with libjpeg there).
SyntheticImageSet write_synthetic_image_set(const std::string& dir,
                                            const SyntheticImageSetOptions& options);

}  // namespace crema
