// WindowData layer: the placement of a window (context padding, square mode, clipping,
// mirroring), the pixels of a crop of a synthetic image, Caffe's background/foreground split of
// every batch, seeded repetition and resume, and the errors of malformed window files.
#include "layers/window_data_layer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "core/proto_io.h"
#include "core/rng.h"
#include "data/image_io.h"
#include "data_test_util.h"

namespace crema::test {
namespace {

Window window(int x1, int y1, int x2, int y2) {
  return Window{.x1 = x1, .y1 = y1, .x2 = x2, .y2 = y2};
}

void expect_placement(const WindowPlacement& p, std::vector<int> expected) {
  EXPECT_EQ((std::vector<int>{p.x1, p.y1, p.x2, p.y2, p.width, p.height, p.pad_w, p.pad_h}),
            expected);
}

TEST(WindowPlacement, WarpContextPadSquareAndClipping) {
  // warp without context: the window itself, resized to the whole square.
  expect_placement(place_window(window(3, 4, 20, 9), 100, 100, 24, 0, false, false),
                   {3, 4, 20, 9, 24, 24, 0, 0});
  // context_pad 2 of 24 grows a 20x20 window by 24/20 about its centre (20, 20).
  expect_placement(place_window(window(10, 10, 29, 29), 100, 100, 24, 2, false, false),
                   {8, 8, 32, 32, 24, 24, 0, 0});
  // At the image's corner the grown region is clipped; what was cut off becomes padding, on the
  // other side when mirrored.
  expect_placement(place_window(window(0, 0, 19, 19), 100, 100, 24, 2, false, false),
                   {0, 0, 22, 22, 22, 22, 2, 2});
  expect_placement(place_window(window(0, 0, 19, 19), 100, 100, 24, 2, false, true),
                   {0, 0, 22, 22, 22, 22, 0, 2});
  // square: a 20x40 window becomes 40x40 (41 pixels from corner to corner) about its centre.
  expect_placement(place_window(window(10, 10, 29, 49), 100, 100, 24, 0, true, false),
                   {0, 10, 40, 50, 24, 24, 0, 0});
}

// A 40 x 30 PNG whose blue channel is 4x, green 4y and red 200: every pixel says where it is.
std::string write_gradient_image(const TempDir& dir) {
  const int w = 40, h = 30;
  std::vector<unsigned char> chw(size_t(3 * w * h));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      chw[size_t(0 * h + y) * w + x] = static_cast<unsigned char>(4 * x);
      chw[size_t(1 * h + y) * w + x] = static_cast<unsigned char>(4 * y);
      chw[size_t(2 * h + y) * w + x] = 200;
    }
  write_image_file(dir.file("img.png"), chw.data(), 3, h, w);
  return "img.png";
}

LayerParameter window_param(const TempDir& dir, const std::string& extra) {
  LayerParameter p;
  read_text_proto_string("name: 'win' type: 'WindowData' top: 'data' top: 'label' " + extra, "win",
                         &p);
  p.mutable_window_data_param()->set_source(dir.file("windows.txt"));
  p.mutable_window_data_param()->set_root_folder(dir.file(""));
  return p;
}

struct Batches {
  Batches(const LayerParameter& p, uint64_t seed = 5) : layer(p, Device::kCPU) {
    seed_thread_rng(int64_t(seed));
    layer.setup({}, {&data, &label});
  }
  void next() { layer.forward(h, {}, {&data, &label}); }
  WindowDataLayer<float> layer;
  Tensor<float> data, label;
  Handle h;
};

TEST(WindowDataLayer, CropsTheWindowsPixelsMinusTheMeanTimesScale) {
  if (!image_io_available()) GTEST_SKIP() << "built without OpenCV";
  TempDir dir;
  const std::string img = write_gradient_image(dir);
  // One foreground window, 8x8 at (4, 2): crop_size 8 copies it pixel for pixel.
  std::ofstream(dir.file("windows.txt")) << "# 0\n" << img << "\n3 30 40\n1\n3 0.9 4 2 11 9\n";
  for (bool mirror : {false, true}) {
    SCOPED_TRACE(mirror);
    Batches b(window_param(dir,
                           "window_data_param { batch_size: 2 fg_fraction: 1 } "
                           "transform_param { crop_size: 8 scale: 0.5 mean_value: 1 "
                           "mean_value: 2 mean_value: 3 mirror: " +
                               std::string(mirror ? "true" : "false") + " }"));
    EXPECT_EQ(b.data.shape(), (std::vector<int64_t>{2, 3, 8, 8}));
    std::set<bool> flips;
    for (int batch = 0; batch < 8; ++batch) {
      b.next();
      EXPECT_EQ(b.label.data_vector(), (std::vector<float>{3, 3}));
      const std::vector<float> d = b.data.data_vector();
      for (int i = 0; i < 2; ++i) {
        const float* x = d.data() + i * 192;
        const bool flipped = x[0] != (4 * 4 - 1) * 0.5f;
        flips.insert(flipped);
        for (int y = 0; y < 8; ++y)
          for (int c = 0; c < 8; ++c) {
            const int col = flipped ? 7 - c : c;
            ASSERT_EQ(x[0 * 64 + y * 8 + c], (4 * (4 + col) - 1) * 0.5f) << y << "," << c;
            ASSERT_EQ(x[1 * 64 + y * 8 + c], (4 * (2 + y) - 2) * 0.5f);
            ASSERT_EQ(x[2 * 64 + y * 8 + c], (200 - 3) * 0.5f);
          }
      }
    }
    EXPECT_EQ(flips.size(), mirror ? 2u : 1u) << "mirror flips about half the crops";
  }
}

TEST(WindowDataLayer, ContextPaddingOutsideTheImageStaysZero) {
  if (!image_io_available()) GTEST_SKIP() << "built without OpenCV";
  TempDir dir;
  const std::string img = write_gradient_image(dir);
  std::ofstream(dir.file("windows.txt")) << "# 0\n" << img << "\n3 30 40\n1\n1 1 0 0 19 19\n";
  Batches b(window_param(dir,
                         "window_data_param { batch_size: 1 fg_fraction: 1 crop_size: 24 "
                         "context_pad: 2 } transform_param { mean_value: 50 }"));
  b.next();
  const std::vector<float> d = b.data.data_vector();
  // Placement (0, 0)-(22, 22) at pad (2, 2): rows and columns 0 and 1 are padding.
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 24; ++i) {
      EXPECT_EQ(d[size_t(c * 576 + 0 * 24 + i)], 0.0f);
      EXPECT_EQ(d[size_t(c * 576 + i * 24 + 1)], 0.0f);
    }
  EXPECT_EQ(d[2 * 576 + 2 * 24 + 2], 200.0f - 50.0f);  // the image starts after the padding
}

// Each batch: batch_size - floor(batch_size * fg_fraction) background windows (label 0) first,
// then foreground ones, each drawn from its whole set.
TEST(WindowDataLayer, BatchesSplitBackgroundAndForegroundAsCaffe) {
  if (!image_io_available()) GTEST_SKIP() << "built without OpenCV";
  TempDir dir;
  const std::string img = write_gradient_image(dir);
  std::ofstream(dir.file("windows.txt"))
      << "# 0\n"
      << img << "\n3 30 40\n6\n"
      << "1 0.8 0 0 9 9\n2 0.5 10 0 19 9\n5 0.7 0 10 9 19\n"  // foreground (>= 0.5)
      << "4 0.3 20 0 29 9\n"                                  // between the thresholds: dropped
      << "7 0.1 0 20 9 29\n3 0.0 30 20 39 29\n";              // background (< 0.2), label 0
  Batches b(window_param(dir,
                         "window_data_param { batch_size: 8 fg_fraction: 0.3 crop_size: 4 "
                         "bg_threshold: 0.2 }"));
  EXPECT_EQ(b.layer.windows().foreground.size(), 3u);
  EXPECT_EQ(b.layer.windows().background.size(), 2u);
  std::set<float> foreground_labels;
  std::vector<float> all;
  for (int batch = 0; batch < 30; ++batch) {
    b.next();
    const std::vector<float> labels = b.label.data_vector();
    for (int i = 0; i < 8; ++i) {
      if (i < 6) {
        EXPECT_EQ(labels[size_t(i)], 0.0f) << "background first: 8 - floor(8 * 0.3) = 6";
      } else {
        foreground_labels.insert(labels[size_t(i)]);
      }
    }
    const std::vector<float> d = b.data.data_vector();
    all.insert(all.end(), d.begin(), d.end());
  }
  EXPECT_EQ(foreground_labels, (std::set<float>{1, 2, 5}));
  // The same seed repeats the batches; a restored reader continues them.
  Batches again(window_param(dir,
                             "window_data_param { batch_size: 8 fg_fraction: 0.3 "
                             "crop_size: 4 bg_threshold: 0.2 }"));
  std::vector<float> repeat;
  for (int batch = 0; batch < 30; ++batch) {
    again.next();
    if (batch == 9) {
      DataReaderState state;
      ASSERT_TRUE(again.layer.reader_state(&state));
      Batches resumed(window_param(dir,
                                   "window_data_param { batch_size: 8 fg_fraction: 0.3 "
                                   "crop_size: 4 bg_threshold: 0.2 }"));
      resumed.layer.restore_reader_state(state);
      resumed.next();
      const std::vector<float> d = resumed.data.data_vector();
      EXPECT_EQ(std::vector<float>(all.begin() + 10 * 384, all.begin() + 11 * 384), d);
    }
    const std::vector<float> d = again.data.data_vector();
    repeat.insert(repeat.end(), d.begin(), d.end());
  }
  EXPECT_EQ(repeat, all);
}

TEST(WindowDataLayer, MalformedWindowFilesNameTheFileAndLine) {
  if (!image_io_available()) GTEST_SKIP() << "built without OpenCV";
  TempDir dir;
  const std::string img = write_gradient_image(dir);
  const std::string file = dir.file("windows.txt");
  const auto error_for = [&](const std::string& text) {
    std::ofstream(file) << text;
    return error_of([&] {
      Batches b(window_param(dir,
                             "window_data_param { batch_size: 2 "
                             "crop_size: 4 fg_fraction: 0.5 }"));
    });
  };
  const std::string head = "# 0\n" + img + "\n3 30 40\n";
  const std::string prefix = "layer win (WindowData): " + file + ":";
  EXPECT_EQ(error_for(head + "1\n1 0.9 0 0 50 5\n"),
            prefix + "5: x2 must be an integer in [0, 39]; got \"50\"");
  EXPECT_EQ(error_for("0\n" + img + "\n"),
            prefix + "1: expected \"# <image index>\" to start an image");
  EXPECT_EQ(error_for(head + "2\n1 0.9 0 0 5 5\n"),
            prefix + "5: the file ends where the window's class was expected");
  EXPECT_EQ(error_for(head + "1\n0 0.9 0 0 5 5\n"),
            prefix +
                "5: a foreground window (overlap 0.9 >= fg_threshold) needs a class above 0; "
                "got 0");
  EXPECT_EQ(error_for(head + "1\n1 0.9 0 0 5 5\n# 3\n" + img + "\n3 30 40\n0\n"),
            prefix + "6: image index 3 out of order; expected 1");
  EXPECT_EQ(error_for(head + "1\n1 high 0 0 5 5\n"),
            prefix + "5: the window's overlap must be a number; got \"high\"");
  EXPECT_EQ(error_for(head + "1\n1 0.9 0 0 5 5\n"),
            "layer win (WindowData): " + file +
                ": no background window (overlap < bg_threshold 0.5), but fg_fraction asks for "
                "1 per batch");
  // An image that is not there fails at the forward that needs it, naming it.
  std::ofstream(file) << "# 0\nnone.png\n3 30 40\n2\n1 0.9 0 0 5 5\n0 0.1 0 0 5 5\n";
  const std::string what = error_of([&] {
    Batches b(
        window_param(dir, "window_data_param { batch_size: 2 crop_size: 4 fg_fraction: 0.5 }"));
    b.next();
  });
  EXPECT_NE(what.find(file + ":"), std::string::npos) << what;
  EXPECT_NE(what.find(dir.file("none.png") + ": cannot open"), std::string::npos) << what;
}

}  // namespace
}  // namespace crema::test
