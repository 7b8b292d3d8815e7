// R-CNN window files: parsed with a line number on every token.
#include "data/window_file.h"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/errors.h"

namespace crema {
namespace {

constexpr int kMaxImageSide = 1 << 16;

// The file's whitespace-separated tokens, each with its line.
class Tokens {
 public:
  explicit Tokens(const std::string& path) : path_(path) {
    std::ifstream in(path);
    if (!in) fail("cannot open window file ", path);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      std::istringstream words(line);
      for (std::string w; words >> w;) tokens_.push_back({w, n});
    }
  }
  bool done() const { return next_ >= tokens_.size(); }
  int line() const {
    if (tokens_.empty()) return 1;
    return done() ? tokens_.back().line : tokens_[next_].line;
  }
  const std::string& text(const char* what) {
    if (done()) fail(path_, ":", line(), ": the file ends where ", what, " was expected");
    return tokens_[next_++].text;
  }
  long integer(const char* what, long lo, long hi) {
    const int at = line();
    const std::string& t = text(what);
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(t.c_str(), &end, 10);
    if (t.empty() || *end != '\0' || errno != 0 || v < lo || v > hi)
      fail(path_, ":", at, ": ", what, " must be an integer in [", lo, ", ", hi, "]; got \"", t,
           "\"");
    return v;
  }
  float real(const char* what) {
    const int at = line();
    const std::string& t = text(what);
    char* end = nullptr;
    const float v = std::strtof(t.c_str(), &end);
    if (t.empty() || *end != '\0' || !std::isfinite(v))
      fail(path_, ":", at, ": ", what, " must be a number; got \"", t, "\"");
    return v;
  }

 private:
  struct Token {
    std::string text;
    int line;
  };
  std::string path_;
  std::vector<Token> tokens_;
  size_t next_ = 0;
};

}  // namespace

WindowFile read_window_file(const std::string& path, const std::string& root_folder,
                            float fg_threshold, float bg_threshold) {
  Tokens in(path);
  if (in.done()) fail(path, ": the window file is empty");
  WindowFile file;
  while (!in.done()) {
    const int at = in.line();
    if (in.text("\"#\"") != "#")
      fail(path, ":", at, ": expected \"# <image index>\" to start an image");
    const long index = in.integer("the image index", 0, INT32_MAX);
    if (index != long(file.images.size()))
      fail(path, ":", at, ": image index ", index, " out of order; expected ", file.images.size());
    WindowImage image;
    image.path = root_folder + in.text("the image path");
    image.channels = int(in.integer("the channel count", 1, 4));
    image.height = int(in.integer("the image height", 1, kMaxImageSide));
    image.width = int(in.integer("the image width", 1, kMaxImageSide));
    const long windows = in.integer("the number of windows", 0, INT32_MAX);
    for (long i = 0; i < windows; ++i) {
      Window w;
      w.line = in.line();
      w.image = int(index);
      w.label = int(in.integer("the window's class", 0, INT32_MAX));
      w.overlap = in.real("the window's overlap");
      w.x1 = int(in.integer("x1", 0, image.width - 1));
      w.y1 = int(in.integer("y1", 0, image.height - 1));
      w.x2 = int(in.integer("x2", w.x1, image.width - 1));
      w.y2 = int(in.integer("y2", w.y1, image.height - 1));
      if (w.overlap >= fg_threshold) {
        if (w.label <= 0)
          fail(path, ":", w.line, ": a foreground window (overlap ", w.overlap,
               " >= fg_threshold) needs a class above 0; got ", w.label);
        file.foreground.push_back(w);
      } else if (w.overlap < bg_threshold) {
        w.label = 0;
        w.overlap = 0;
        file.background.push_back(w);
      }
    }
    file.images.push_back(image);
  }
  return file;
}

}  // namespace crema
