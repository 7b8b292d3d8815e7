// R-CNN window files, as Caffe's WindowData layer reads them: for each image, in order,
//
//   # <image index, counting from 0>
//   <image path>            (root_folder is prefixed as written)
//   <channels> <height> <width>
//   <number of windows>
//   <class> <overlap> <x1> <y1> <x2> <y2>     (one line per window; corners inclusive)
//
// Windows whose overlap is at least fg_threshold are foreground (their class must be positive);
// those below bg_threshold are background, with class and overlap forced to 0; the rest are
// dropped. Tokens are read as Caffe reads them (whitespace-separated), and every error names the
// file and line.
#pragma once

#include <string>
#include <vector>

namespace crema {

struct WindowImage {
  std::string path;  // with root_folder
  int channels = 0, height = 0, width = 0;
};

struct Window {
  int image = 0;  // index into WindowFile::images
  int label = 0;
  float overlap = 0;
  int x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  int line = 0;  // of the window file, for errors
};

struct WindowFile {
  std::vector<WindowImage> images;
  std::vector<Window> foreground, background;
};

// Throws crema::Error "<path>:<line>: <problem>" for a malformed file, and for an unreadable or
// empty one.
WindowFile read_window_file(const std::string& path, const std::string& root_folder,
                            float fg_threshold, float bg_threshold);

}  // namespace crema
