// `crema classify` with LeNet trained on Fashion-MNIST: the README's net and labels file, trained
// briefly on the real training set with `crema train`, names the class of most of the first 20
// test images, written as PNG files. Needs the Debian package dataset-fashion-mnist (or
// FASHION_MNIST_DIR) and OpenCV.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "data/data_test_util.h"
#include "data/idx.h"
#include "data/image_io.h"
#include "data/image_test_util.h"
#include "run_command.h"

namespace crema {
namespace {

std::string fashion_mnist_dir() {
  const char* env = std::getenv("FASHION_MNIST_DIR");
  return env ? env : "/usr/share/datasets/fashion-mnist";
}

std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(ClassifyFashionMnist, TrainedLeNetNamesMostTestImages) {
  CREMA_SKIP_WITHOUT_OPENCV();
  const std::string src = fashion_mnist_dir();
  if (!std::filesystem::exists(src + "/t10k-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "no Fashion-MNIST in " << src;
  const std::string bin = CREMA_BINARY_DIR, root = CREMA_SOURCE_DIR;
  test::TempDir dir;
  // The net reads data/fashion_mnist/fashion_mnist_train_lmdb relative to where it runs.
  const std::string lmdb = dir.file("data/fashion_mnist/fashion_mnist_train_lmdb");
  std::filesystem::create_directories(dir.file("data/fashion_mnist"));
  test::CommandResult r =
      test::run_command(bin + "/convert_mnist " + src + "/train-images-idx3-ubyte.gz " + src +
                        "/train-labels-idx1-ubyte.gz " + lmdb);
  ASSERT_EQ(r.status, 0) << r.output;
  // The README's recipe for 600 iterations, no test net.
  std::ofstream(dir.file("solver.prototxt"))
      << "net: \"" << root << "/models/lenet_fashion/lenet_train_test.prototxt\"\n"
      << "base_lr: 0.01 momentum: 0.9 weight_decay: 0.0005 lr_policy: \"inv\" gamma: 0.0001\n"
      << "power: 0.75 display: 0 max_iter: 600 snapshot_prefix: \"lenet\" random_seed: 1\n"
      << "solver_mode: CPU\n";
  r = test::run_command("cd " + dir.file(".") + " && " + bin +
                        "/crema train --solver=solver.prototxt");
  ASSERT_EQ(r.status, 0) << r.output;

  const IdxArray images = read_idx_images(src + "/t10k-images-idx3-ubyte.gz");
  const IdxArray labels = read_idx_labels(src + "/t10k-labels-idx1-ubyte.gz");
  const int n = 20, pixels = int(images.dims[1] * images.dims[2]);
  std::string args;
  for (int i = 0; i < n; ++i) {
    const std::string png = dir.file("test" + std::to_string(i) + ".png");
    write_image_file(png, images.data.data() + i * pixels, 1, int(images.dims[1]),
                     int(images.dims[2]));
    args += " " + png;
  }
  r = test::run_command(bin + "/crema classify --model=" + root +
                        "/models/lenet_fashion/lenet_deploy.prototxt --weights=" +
                        dir.file("lenet_iter_600.caffemodel") + " --labels=" + root +
                        "/models/lenet_fashion/labels.txt --scale=0.00390625 --top=1" + args);
  ASSERT_EQ(r.status, 0) << r.output;

  // cpp_classification's format: a header per image, then `score - "label"` lines.
  const std::vector<std::string> names = lines_of(root + "/models/lenet_fashion/labels.txt");
  ASSERT_EQ(names.size(), 10u);
  const std::regex top1(R"re(^[0-9.]+ - "(.*)"$)re");
  std::istringstream out(r.output);
  std::vector<std::string> predicted;
  std::smatch m;
  for (std::string line; std::getline(out, line);)
    if (std::regex_match(line, m, top1)) predicted.push_back(m[1]);
  ASSERT_EQ(predicted.size(), size_t(n)) << r.output;
  int right = 0;
  for (int i = 0; i < n; ++i) right += predicted[i] == names[labels.data[i]];
  // LeNet reaches about 0.85 test accuracy after 600 iterations; 20 images at that rate give
  // 17 right, and fewer than 15 happen by chance less than 6% of the time.
  EXPECT_GE(right, 15) << right << " of " << n << " right:\n" << r.output;
}

}  // namespace
}  // namespace crema
