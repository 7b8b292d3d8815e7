// ImageData layer: batches of images from a list file in order with wrap-around, gray and
// resized images, seeded shuffling, rand_skip, and the errors of bad lists and bad images.
#include "layers/image_data_layer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>

#include "core/errors.h"
#include "core/rng.h"
#include "data/data_test_util.h"
#include "data/image_test_util.h"

namespace crema {
namespace {

using test::error_of;

using test::TempDir;

LayerParameter image_param(const TempDir& dir, const std::string& list, int batch,
                           Phase phase = TEST) {
  LayerParameter p;
  p.set_name("img");
  p.set_type("ImageData");
  p.set_phase(phase);
  p.mutable_image_data_param()->set_source(list);
  p.mutable_image_data_param()->set_root_folder(dir.file(""));
  p.mutable_image_data_param()->set_batch_size(batch);
  return p;
}

// n PNG images img<i>.png of h x w with label 10 + i, listed in order in list.txt.
std::string write_image_set(const TempDir& dir, int n, int h, int w, int channels = 3) {
  std::string list;
  for (int i = 0; i < n; ++i) {
    const std::string name = "img" + std::to_string(i) + ".png";
    test::write_test_image(dir.file(name), i, h, w, channels);
    list += name + " " + std::to_string(10 + i) + "\n";
  }
  test::write_text(dir.file("list.txt"), list);
  return dir.file("list.txt");
}

// Labels of `batches` forwards of a fresh layer, after seeding the thread generator.
std::vector<float> labels_of(const LayerParameter& p, int batches, int64_t seed) {
  seed_thread_rng(seed);
  ImageDataLayer<float> layer(p, Device::kCPU);
  Tensor<float> data, label;
  layer.setup({}, {&data, &label});
  Handle h;
  std::vector<float> out;
  for (int b = 0; b < batches; ++b) {
    layer.forward(h, {}, {&data, &label});
    for (float l : label.data_vector()) out.push_back(l);
  }
  return out;
}

TEST(ImageDataLayer, BatchesInListOrderWithWrapAround) {
  CREMA_SKIP_WITHOUT_OPENCV();
  TempDir dir;
  const std::string list = write_image_set(dir, 3, 4, 5);
  ImageDataLayer<float> layer(image_param(dir, list, 2), Device::kCPU);
  Tensor<float> data, label;
  layer.setup({}, {&data, &label});
  ASSERT_EQ(data.shape(), (std::vector<int64_t>{2, 3, 4, 5}));
  ASSERT_EQ(label.shape(), (std::vector<int64_t>{2}));
  Handle h;
  int next = 0;
  for (int iter = 0; iter < 3; ++iter) {  // 6 images: two passes over the 3
    layer.forward(h, {}, {&data, &label});
    const std::vector<float> d = data.data_vector(), l = label.data_vector();
    for (int n = 0; n < 2; ++n, next = (next + 1) % 3) {
      ASSERT_EQ(l[n], float(10 + next)) << "iteration " << iter;
      for (int k = 0; k < 3; ++k)
        for (int y = 0; y < 4; ++y)
          for (int x = 0; x < 5; ++x)
            ASSERT_EQ(d[((n * 3 + k) * 4 + y) * 5 + x], float(test::image_pixel(next, k, y, x)))
                << "image " << next << " channel " << k << " at " << y << "," << x;
    }
  }
}

TEST(ImageDataLayer, GrayResizeAndTransform) {
  CREMA_SKIP_WITHOUT_OPENCV();
  TempDir dir;
  test::write_test_image(dir.file("a.png"), 0, 7, 9, 1);
  test::write_test_image(dir.file("b.png"), 1, 12, 5, 3);
  test::write_text(dir.file("list.txt"), "a.png 0\n\n  b.png   1  \r\n");
  LayerParameter p = image_param(dir, dir.file("list.txt"), 2);
  p.mutable_image_data_param()->set_is_color(false);
  p.mutable_image_data_param()->set_new_height(6);
  p.mutable_image_data_param()->set_new_width(8);
  p.mutable_transform_param()->set_crop_size(4);
  p.mutable_transform_param()->set_scale(0.5f);
  ImageDataLayer<double> layer(p, Device::kCPU);
  Tensor<double> data, label;
  layer.setup({}, {&data, &label});
  ASSERT_EQ(data.shape(), (std::vector<int64_t>{2, 1, 4, 4}));
  Handle h;
  layer.forward(h, {}, {&data, &label});
  EXPECT_EQ(label.data_vector(), (std::vector<double>{0, 1}));
  const std::vector<double> d = data.data_vector();
  for (double v : d) EXPECT_TRUE(v >= 0 && v <= 127.5) << v;
  EXPECT_GT(*std::max_element(d.begin(), d.end()), 0.0);
}

TEST(ImageDataLayer, ImagesOfDifferentSizesNeedAResize) {
  CREMA_SKIP_WITHOUT_OPENCV();
  TempDir dir;
  test::write_test_image(dir.file("a.png"), 0, 4, 4);
  test::write_test_image(dir.file("b.png"), 1, 5, 4);
  test::write_text(dir.file("list.txt"), "a.png 0\nb.png 1\n");
  ImageDataLayer<float> layer(image_param(dir, dir.file("list.txt"), 2), Device::kCPU);
  Tensor<float> data;
  layer.setup({}, {&data});
  Handle h;
  const std::string msg = error_of([&] { layer.forward(h, {}, {&data}); });
  EXPECT_NE(msg.find("layer img (ImageData): "), std::string::npos) << msg;
  EXPECT_NE(msg.find("list.txt:2: image " + dir.file("b.png") + ": shape 3x5x4 differs"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("new_height and new_width"), std::string::npos) << msg;
}

TEST(ImageDataLayer, ShuffleIsReproducibleUnderASeed) {
  CREMA_SKIP_WITHOUT_OPENCV();
  TempDir dir;
  const std::string list = write_image_set(dir, 8, 2, 2);
  LayerParameter p = image_param(dir, list, 4, TRAIN);
  p.mutable_image_data_param()->set_shuffle(true);
  const std::vector<float> a = labels_of(p, 4, 42), b = labels_of(p, 4, 42);
  const std::vector<float> c = labels_of(p, 4, 43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // Each epoch (8 labels) is a permutation of the list, reshuffled at the wrap.
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::set<float> seen(a.begin() + 8 * epoch, a.begin() + 8 * (epoch + 1));
    EXPECT_EQ(seen.size(), 8u) << "epoch " << epoch;
  }
  EXPECT_FALSE(std::equal(a.begin(), a.begin() + 8, a.begin() + 8));
  std::vector<float> in_order(8);
  for (int i = 0; i < 8; ++i) in_order[i] = float(10 + i);
  EXPECT_NE(std::vector<float>(a.begin(), a.begin() + 8), in_order);
}

TEST(ImageDataLayer, RandSkipStartsWithinTheSkipRange) {
  CREMA_SKIP_WITHOUT_OPENCV();
  TempDir dir;
  const std::string list = write_image_set(dir, 8, 2, 2);
  LayerParameter p = image_param(dir, list, 1, TRAIN);
  p.mutable_image_data_param()->set_rand_skip(5);
  std::set<float> firsts;
  for (int seed = 0; seed < 12; ++seed) {
    const std::vector<float> l = labels_of(p, 2, seed);
    ASSERT_GE(l[0], 10.f);
    ASSERT_LT(l[0], 15.f);
    EXPECT_EQ(l[1], float(10 + (int(l[0]) - 10 + 1) % 8));  // then in list order
    firsts.insert(l[0]);
  }
  EXPECT_GT(firsts.size(), 1u);
}

TEST(ImageDataLayer, BadListsAndImagesNameTheFileAndLine) {
  CREMA_SKIP_WITHOUT_OPENCV();
  TempDir dir;
  test::write_test_image(dir.file("a.png"), 0, 3, 3);
  test::write_text(dir.file("bad.png"), "this is not an image");
  Tensor<float> data, label;
  auto setup_error = [&](const std::string& list_text) {
    test::write_text(dir.file("list.txt"), list_text);
    return error_of([&] {
      ImageDataLayer<float>(image_param(dir, dir.file("list.txt"), 1), Device::kCPU)
          .setup({}, {&data, &label});
    });
  };
  const std::string list = dir.file("list.txt");
  std::string msg = setup_error("a.png 0\nmissing.png 1\n");
  EXPECT_EQ(msg, "(no error)");  // the missing image is met by a later forward
  msg = setup_error("missing.png 1\n");
  EXPECT_NE(msg.find("layer img (ImageData): " + list + ":1: " + dir.file("missing.png") +
                     ": cannot open: No such file or directory"),
            std::string::npos)
      << msg;
  msg = setup_error("bad.png 1\n");
  EXPECT_NE(msg.find(list + ":1: " + dir.file("bad.png") + ": cannot decode the image"),
            std::string::npos)
      << msg;
  msg = setup_error("");
  EXPECT_NE(msg.find(list + ": lists no images"), std::string::npos) << msg;
  msg = setup_error("a.png 0\n\na.png\n");
  EXPECT_NE(msg.find(list + ":3: expected '<path> <label>', got 'a.png' (no label)"),
            std::string::npos)
      << msg;
  msg = setup_error("a.png zero\n");
  EXPECT_NE(msg.find(list + ":1: expected '<path> <label>'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the label 'zero' is not an integer"), std::string::npos) << msg;
  msg = error_of([&] {
    ImageDataLayer<float>(image_param(dir, dir.file("nolist.txt"), 1), Device::kCPU)
        .setup({}, {&data});
  });
  EXPECT_NE(msg.find(dir.file("nolist.txt") + ": cannot open image list"), std::string::npos)
      << msg;

  // A missing image later in the list: thrown by the forward that needs it, naming the line.
  test::write_text(list, "a.png 0\nmissing.png 1\n");
  ImageDataLayer<float> layer(image_param(dir, list, 2), Device::kCPU);
  layer.setup({}, {&data, &label});
  Handle h;
  msg = error_of([&] { layer.forward(h, {}, {&data, &label}); });
  EXPECT_NE(msg.find(list + ":2: " + dir.file("missing.png") + ": cannot open"), std::string::npos)
      << msg;
}

TEST(ImageDataLayer, ParameterErrors) {
  TempDir dir;
  Tensor<float> data;
  LayerParameter p = image_param(dir, "", 1);
  EXPECT_EQ(error_of([&] { ImageDataLayer<float>(p, Device::kCPU).setup({}, {&data}); }),
            "layer img (ImageData): image_data_param.source is not set");
  p = image_param(dir, dir.file("list.txt"), 0);
  EXPECT_EQ(error_of([&] { ImageDataLayer<float>(p, Device::kCPU).setup({}, {&data}); }),
            "layer img (ImageData): image_data_param.batch_size must be positive");
  p = image_param(dir, dir.file("list.txt"), 1);
  p.mutable_image_data_param()->set_new_height(4);
  EXPECT_NE(error_of([&] {
              ImageDataLayer<float>(p, Device::kCPU).setup({}, {&data});
            }).find("set both new_height and new_width, or neither; got 4 and 0"),
            std::string::npos);
#ifndef CREMA_WITH_OPENCV
  // Without OpenCV only JPEG files decode (libjpeg): a PNG names what is missing.
  test::write_text(dir.file("list.txt"), "a.png 0\n");
  test::write_text(dir.file("a.png"), "\x89PNG\r\n\x1a\n");
  p = image_param(dir, dir.file("list.txt"), 1);
  EXPECT_NE(error_of([&] {
              ImageDataLayer<float>(p, Device::kCPU).setup({}, {&data});
            }).find("built without OpenCV"),
            std::string::npos);
#endif
}

}  // namespace
}  // namespace crema
