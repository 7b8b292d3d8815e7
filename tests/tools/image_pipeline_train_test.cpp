// End to end: a synthetic image set (4 classes told apart by color and pattern) is converted
// with convert_imageset, its mean computed with compute_image_mean, and a small conv net fed by
// a Data layer with mean_file, crop_size and mirror is trained with the Solver for a few dozen
// iterations; it must classify the held-out images far above chance (25%).
#include <gtest/gtest.h>

#include <filesystem>

#include "backends/convert_imageset.h"
#include "backends/image_mean.h"
#include "backends/synthetic_images.h"
#include "core/proto_io.h"
#include "core/rng.h"
#include "data/data_test_util.h"
#include "data/image_test_util.h"
#include "solver/solver.h"

namespace crema {
namespace {

std::string data_layer(const std::string& phase, const std::string& source, const std::string& mean,
                       bool mirror) {
  return "layer { name: 'data' type: 'Data' top: 'data' top: 'label' include { phase: " + phase +
         " }\n  transform_param { crop_size: 16 mean_file: '" + mean + "' scale: 0.0078125" +
         (mirror ? " mirror: true" : "") + " }\n  data_param { source: '" + source +
         "' batch_size: 16 backend: LMDB } }\n";
}

TEST(ImagePipeline, ConvertMeanAndTrainBeatChance) {
  CREMA_SKIP_WITHOUT_OPENCV();
  test::TempDir dir;
  const SyntheticImageSet set =
      write_synthetic_image_set(dir.file("images"), {.classes = 4,
                                                     .train_per_class = 16,
                                                     .val_per_class = 4,
                                                     .min_size = 24,
                                                     .max_size = 40,
                                                     .seed = 5});
  ASSERT_EQ(set.images, 80);

  seed_thread_rng(1);
  ConvertImagesetOptions c;
  c.resize_height = 20;
  c.resize_width = 20;
  c.shuffle = true;
  ASSERT_EQ(convert_imageset(dir.file("images/"), set.train_list, dir.file("train_lmdb"), c), 64u);
  ASSERT_EQ(convert_imageset(dir.file("images/"), set.val_list, dir.file("val_lmdb"), c), 16u);
  const ImageMean mean = compute_image_mean(dir.file("train_lmdb"));
  ASSERT_EQ(mean.channel_means.size(), 3u);
  for (double m : mean.channel_means) EXPECT_GT(m, 10.0);  // colored images, not black
  write_binary_proto_atomic(mean.blob, dir.file("mean.binaryproto"));

  const std::string net =
      data_layer("TRAIN", dir.file("train_lmdb"), dir.file("mean.binaryproto"), true) +
      data_layer("TEST", dir.file("val_lmdb"), dir.file("mean.binaryproto"), false) + R"(
layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'conv1'
  convolution_param { num_output: 8 kernel_size: 3 weight_filler { type: 'xavier' } } }
layer { name: 'relu1' type: 'ReLU' bottom: 'conv1' top: 'conv1' }
layer { name: 'pool1' type: 'Pooling' bottom: 'conv1' top: 'pool1'
  pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: 'ip' type: 'InnerProduct' bottom: 'pool1' top: 'ip'
  inner_product_param { num_output: 4 weight_filler { type: 'xavier' } } }
layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss' }
layer { name: 'acc' type: 'Accuracy' bottom: 'ip' bottom: 'label' top: 'acc'
  include { phase: TEST } }
)";
  SolverParameter sp;
  read_text_proto_string("net_param { " + net + " }\n" + R"(
    base_lr: 0.01 momentum: 0.9 lr_policy: 'fixed' max_iter: 40 random_seed: 3
    test_iter: 1 test_interval: 1000 test_initialization: false display: 0
    snapshot_after_train: false)",
                         "image_pipeline_solver", &sp);
  Handle h;
  auto solver = create_solver<float>(sp, Device::kCPU, h, "image_pipeline_solver");
  solver->solve();
  const std::vector<std::vector<TestScore>> after = solver->test_all();
  ASSERT_EQ(after.size(), 1u);
  double accuracy = -1;
  for (const TestScore& s : after[0])
    if (s.name == "acc") accuracy = s.value;
  EXPECT_GE(accuracy, 0.75) << "loss after training " << solver->last_loss();
  EXPECT_LT(solver->last_loss(), 1.0);
}

// Class directories are named by the whole number, past class999 too (class1000/...).
TEST(ImagePipeline, SyntheticSetOfMoreThanAThousandClasses) {
  CREMA_SKIP_WITHOUT_OPENCV();
  test::TempDir dir;
  const SyntheticImageSet set = write_synthetic_image_set(
      dir.file("images"),
      {.classes = 1001, .train_per_class = 1, .val_per_class = 0, .min_size = 4, .max_size = 4});
  EXPECT_EQ(set.images, 1001);
  EXPECT_TRUE(std::filesystem::is_regular_file(dir.file("images/class999/img00000.jpg")));
  EXPECT_TRUE(std::filesystem::is_regular_file(dir.file("images/class1000/img00000.jpg")));
}

}  // namespace
}  // namespace crema
