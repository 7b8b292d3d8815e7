// The converter tools as programs: --help prints the usage and exits 0, and bad input ends in
// one "<tool>: error:" line naming the problem with exit status 1; a short run of each tool on
// good input succeeds. A tool that is not built is skipped (build the tools before the tests).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "data/data_test_util.h"
#include "data/image_test_util.h"
#include "run_command.h"

namespace {

using Result = crema::test::CommandResult;

std::string tool_path(const std::string& tool) {
  return std::string(CREMA_BINARY_DIR) + "/" + tool;
}

Result run(const std::string& tool, const std::string& args) {
  return crema::test::run_command(tool_path(tool) + " " + args);
}

#define SKIP_UNLESS_BUILT(tool) \
  if (!std::filesystem::exists(tool_path(tool))) GTEST_SKIP() << tool << " is not built"

void expect_error(const Result& r, const std::string& tool, const std::string& expected) {
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(r.last_line.rfind(tool + ": error: ", 0), 0u) << r.output;
  EXPECT_NE(r.last_line.find(expected), std::string::npos) << r.last_line;
}

const char* kTools[] = {"convert_imageset",          "compute_image_mean",
                        "upgrade_net_proto_text",    "upgrade_net_proto_binary",
                        "upgrade_solver_proto_text", "extract_features",
                        "make_synthetic_images"};

TEST(ImageToolsCli, HelpAndArgumentCount) {
  for (const std::string tool : kTools) SKIP_UNLESS_BUILT(tool);
  for (const std::string tool : kTools) {
    Result r = run(tool, "--help");
    EXPECT_EQ(r.status, 0) << tool << ": " << r.output;
    EXPECT_NE(r.output.find("usage: " + tool), std::string::npos) << r.output;
    r = run(tool, "a b c d e f g h i");
    expect_error(r, tool, "expected ");
  }
}

TEST(ImageToolsCli, BadInputIsOneErrorLine) {
  SKIP_UNLESS_BUILT("convert_imageset");
  crema::test::TempDir dir;
  expect_error(
      run("convert_imageset", dir.file("") + " " + dir.file("none.txt") + " " + dir.file("db")),
      "convert_imageset", dir.file("none.txt") + ": cannot open image list");
  expect_error(run("convert_imageset", "--backend=rocksdb a b c"), "convert_imageset",
               "unknown database backend \"rocksdb\" (lmdb or leveldb)");
  expect_error(run("compute_image_mean", dir.file("none")), "compute_image_mean",
               "cannot open LMDB");
  expect_error(run("upgrade_net_proto_text", dir.file("none") + " " + dir.file("out")),
               "upgrade_net_proto_text", dir.file("none"));
  expect_error(run("extract_features", "w.caffemodel n.prototxt a,b x 1"), "extract_features",
               "2 blob names but 1 database names");
  expect_error(run("extract_features", "w.caffemodel n.prototxt a x many"), "extract_features",
               "NUM_MINI_BATCHES must be an integer; got 'many'");
  expect_error(run("make_synthetic_images", "--format=gif " + dir.file("s")),
               "make_synthetic_images", "format must be jpg or png");
}

TEST(ImageToolsCli, PipelineOfTools) {
  SKIP_UNLESS_BUILT("make_synthetic_images");
  CREMA_SKIP_WITHOUT_OPENCV();
  crema::test::TempDir dir;
  Result r = run("make_synthetic_images",
                 "--classes=2 --train_per_class=3 --val_per_class=1 "
                 "--min_size=8 --max_size=12 " +
                     dir.file("img"));
  ASSERT_EQ(r.status, 0) << r.output;
  r = run("convert_imageset", "--resize_height=8 --resize_width=8 --encoded " + dir.file("img/") +
                                  " " + dir.file("img/train.txt") + " " + dir.file("db"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("wrote 6 records"), std::string::npos) << r.output;
  r = run("compute_image_mean", dir.file("db") + " " + dir.file("mean.binaryproto"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("mean_value channel [2]: "), std::string::npos) << r.output;
  EXPECT_TRUE(std::filesystem::exists(dir.file("mean.binaryproto")));
  r = run("upgrade_net_proto_text", std::string(CREMA_SOURCE_DIR) +
                                        "/tests/data/v1_lenet.prototxt " + dir.file("n.prototxt"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("Wrote upgraded file"), std::string::npos) << r.output;
}

}  // namespace
