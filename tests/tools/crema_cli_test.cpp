// The crema tool on bad input: each mistake ends in one "crema: error:" line naming the
// problem and exit status 1 -- never an abort, a CHECK failure or a crash.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "primitives/handle.h"
#include "run_command.h"

namespace {

using Result = crema::test::CommandResult;

Result run(const std::string& args) {
  return crema::test::run_command(std::string(CREMA_BINARY_DIR) + "/crema " + args);
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Asserts a clean failure whose error line contains `expected`.
void expect_clean_error(const Result& r, const std::string& expected) {
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(r.last_line.rfind("crema: error: ", 0), 0u) << r.output;
  EXPECT_NE(r.last_line.find(expected), std::string::npos) << r.last_line;
  EXPECT_EQ(r.output.find("Check failed"), std::string::npos) << r.output;
}

const char* kInput = R"(
layer { name: "data" type: "Input" top: "data"
  input_param { shape { dim: 2 dim: 1 dim: 8 dim: 8 } } }
)";

TEST(CremaCli, SyntaxErrorNamesFileAndLine) {
  const std::string path = write_file("syntax.prototxt", std::string(kInput) + "layer { name: \n");
  expect_clean_error(run("time --model=" + path), path + ":5:");
}

TEST(CremaCli, UnknownLayerTypeListsTheKnownOnes) {
  const std::string path = write_file(
      "unknown.prototxt",
      std::string(kInput) + R"(layer { name: "x" type: "Convolutoin" bottom: "data" top: "x" })");
  const Result r = run("time --model=" + path);
  expect_clean_error(r, "Convolutoin");
  EXPECT_NE(r.last_line.find("Convolution"), std::string::npos);
}

TEST(CremaCli, BottomNobodyProduces) {
  const std::string path = write_file(
      "bottom.prototxt",
      std::string(kInput) + R"(layer { name: "r" type: "ReLU" bottom: "dta" top: "r" })");
  expect_clean_error(run("time --model=" + path), "\"dta\"");
}

TEST(CremaCli, ShapeMismatchBetweenLayers) {
  const std::string path = write_file("mismatch.prototxt", R"(
layer { name: "data" type: "Input" top: "data" top: "label"
  input_param { shape { dim: 2 dim: 10 } shape { dim: 3 } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "data" bottom: "label" top: "loss" })");
  expect_clean_error(run("time --model=" + path), "layer loss");
}

TEST(CremaCli, KernelLargerThanPaddedInput) {
  const std::string path = write_file("kernel.prototxt", std::string(kInput) + R"(
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
  convolution_param { num_output: 4 kernel_size: 11 pad: 1 } })");
  expect_clean_error(run("time --model=" + path), "layer conv");
}

TEST(CremaCli, TensorTooLargeToAllocate) {
  const std::string path = write_file("huge.prototxt", R"(
layer { name: "data" type: "Input" top: "data"
  input_param { shape { dim: 100000 dim: 100000 dim: 1000 } } })");
  expect_clean_error(run("time --model=" + path), "too large");
}

// An output too large is refused before the weights are allocated and filled (this
// Deconvolution's filter would hold 1.6 G values, 6.4 GB filled for nothing).
TEST(CremaCli, HugeDeconvolutionIsRefusedBeforeItsWeights) {
  const std::string path = write_file("huge_deconv.prototxt", std::string(kInput) + R"(
layer { name: "up" type: "Deconvolution" bottom: "data" top: "up"
  convolution_param { num_output: 100000000 kernel_size: 4 stride: 2
    weight_filler { type: "gaussian" std: 0.01 } } })");
  const Result r = run("time --model=" + path + " --iterations=1");
  expect_clean_error(r, "layer up");
  expect_clean_error(r, "(2 100000000 18 18) is too large");
}

TEST(CremaCli, TruncatedWeightsFile) {
  const std::string model = write_file("ok.prototxt", std::string(kInput) + R"(
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param { num_output: 3 } })");
  // A NetParameter whose layer field announces 100 bytes that are not there.
  const std::string weights =
      write_file("truncated.caffemodel", std::string("\x0a\x05LeNet\xa2\x06\x64\x0a", 11));
  expect_clean_error(run("test --model=" + model + " --weights=" + weights + " --iterations=1"),
                     "truncated.caffemodel");
}

// Weights that fill nothing are an error, not a run on filler weights: a 0-byte file (it parses
// as an empty net), /dev/null, and a file whose layers all have other names.
TEST(CremaCli, WeightsThatCopyNothing) {
  const std::string model = write_file("ip.prototxt", std::string(kInput) + R"(
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param { num_output: 3 } })");
  const std::string empty = write_file("empty.caffemodel", "");
  expect_clean_error(run("test --model=" + model + " --weights=" + empty + " --iterations=1"),
                     "empty.caffemodel: holds no layer with weights");
  expect_clean_error(run("test --model=" + model + " --weights=/dev/null --iterations=1"),
                     "/dev/null: holds no layer with weights");
}

// A second training run of the same solver would overwrite the first run's snapshots: it stops
// before training unless --overwrite_snapshots; --snapshot (resuming) continues the run.
TEST(CremaCli, SecondRunKeepsTheFirstRunsSnapshots) {
  const std::string dir = ::testing::TempDir() + "/cli_second_run";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string solver = dir + "/solver.prototxt";
  std::ofstream(solver) << R"(
net_param {
  layer { name: "data" type: "DummyData" top: "data" top: "label"
    dummy_data_param { shape { dim: 4 dim: 3 } shape { dim: 4 }
      data_filler { type: "uniform" min: -1 max: 1 } data_filler { type: "constant" value: 1 } } }
  layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
    inner_product_param { num_output: 2 weight_filler { type: "gaussian" std: 0.1 } } }
  layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" } }
base_lr: 0.1 lr_policy: "fixed" max_iter: 2 display: 0 solver_mode: CPU)";
  const Result first = run("train --solver=" + solver);
  ASSERT_EQ(first.status, 0) << first.output;
  EXPECT_TRUE(std::filesystem::exists(dir + "/solver_iter_2.caffemodel")) << first.output;
  expect_clean_error(run("train --solver=" + solver), "snapshots of an earlier run exist");
  const Result resumed =
      run("train --solver=" + solver + " --snapshot=" + dir + "/solver_iter_2.solverstate");
  EXPECT_EQ(resumed.status, 0) << resumed.output;
  const Result forced = run("train --solver=" + solver + " --overwrite_snapshots");
  EXPECT_EQ(forced.status, 0) << forced.output;
}

// A NUL and a newline in a layer name (text format escapes \000 and \n) are written as \xNN: the
// error stays one whole line instead of ending at the NUL or breaking in two.
TEST(CremaCli, ControlCharactersInNamesAreEscaped) {
  const std::string path = write_file("nul_name.prototxt", std::string(kInput) + R"(
layer { name: "bad\000name\n" type: "ReLU" bottom: "nothing" top: "x" })");
  const Result r = run("time --model=" + path);
  expect_clean_error(r, "bad\\x00name\\x0a");
  EXPECT_NE(r.last_line.find("nothing"), std::string::npos) << r.last_line;
}

TEST(CremaCli, GpuWithoutOneIsAClearError) {
  if (crema::prim::cuda_available()) GTEST_SKIP() << "a GPU is visible";
  const std::string path = write_file("gpu.prototxt", kInput);
  expect_clean_error(run("time --model=" + path + " --gpu=0"), "--gpu=0");
  expect_clean_error(run("time --model=" + path + " --gpu=x"), "--gpu");
  expect_clean_error(run("time --model=" + path + " --gpu=0,"), "device ids separated by commas");
  expect_clean_error(run("time --model=" + path + " --gpu=all"), "--gpu=all: no GPU found");
  expect_clean_error(run("train --solver=" + std::string(CREMA_SOURCE_DIR) +
                         "/models/lenet_fashion/lenet_solver.prototxt --gpu=0,1"),
                     "--gpu=0,1: no GPU 0 (0 found)");
}

TEST(CremaCli, MissingFilesAndFlags) {
  expect_clean_error(run("time --model=/nonexistent/net.prototxt"), "/nonexistent/net.prototxt");
  expect_clean_error(run("train"), "--solver");
  expect_clean_error(run("frobnicate"), "unknown command");
}

}  // namespace

namespace {

const char* kConvNet = R"(
layer { name: "data" type: "Input" top: "data"
  input_param { shape { dim: 2 dim: 3 dim: 8 dim: 8 } } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
  convolution_param { num_output: 4 kernel_size: 3 weight_filler { type: "gaussian" } } }
)";

TEST(CremaCli, BadPrecisionIsAClearError) {
  const std::string path = write_file("precision.prototxt", kConvNet);
  expect_clean_error(run("time --iterations=1 --precision=fp8 --model=" + path),
                     "--precision must be fp32, tf32, bf16 or fp16, got 'fp8'");
}

// --channels_last stores activations NHWC on a GPU, and the log counts them; the CPU keeps NCHW
// (a count of 0).
TEST(CremaCli, ChannelsLastCountsTheActivationsItStores) {
  const std::string path = write_file("channels_last.prototxt", kConvNet);
  const Result cpu = run("time --iterations=1 --channels_last --model=" + path);
  ASSERT_EQ(cpu.status, 0) << cpu.output;
  EXPECT_NE(cpu.output.find("Channels-last storage: 0 of 2 activations"), std::string::npos)
      << cpu.output;
  if (!crema::prim::cuda_available()) return;
  const Result gpu = run("time --iterations=1 --channels_last --gpu=0 --model=" + path);
  ASSERT_EQ(gpu.status, 0) << gpu.output;
  const std::string counted = "Channels-last storage: ";
  const size_t at = gpu.output.find(counted);
  ASSERT_NE(at, std::string::npos) << gpu.output;
  EXPECT_NE(gpu.output[at + counted.size()], '0') << gpu.output;
}

// --verbose logs the convolution's choice once per problem and pass, with the rows it skipped.
TEST(CremaCli, VerboseLogsTheConvolutionChoice) {
  const std::string path = write_file("verbose.prototxt", kConvNet);
  const Result r = run("time --iterations=2 --verbose --model=" + path);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("crema: conv cpu skips gemm_1x1 (the filter is not 1x1)"),
            std::string::npos)
      << r.output;
  const std::string choice = "crema: auto conv_fwd f32 fp32 x2x3x8x8";
  const size_t first = r.output.find(choice);
  ASSERT_NE(first, std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(choice, first + 1), std::string::npos) << "logged more than once";
  EXPECT_EQ(run("time --iterations=1 --model=" + path).output.find("crema: auto"),
            std::string::npos);
}

}  // namespace

namespace {

// --autotune times the convolution's algorithms, saves the winner for this device, and a second
// run starts from it; an unwritable cache costs a warning, not the run.
TEST(CremaCli, AutotuneKeepsItsChoicesForTheNextRun) {
  const std::string model = write_file("autotune.prototxt", kConvNet);
  const std::string cache = ::testing::TempDir() + "/autotune_cache/algos";
  std::filesystem::remove_all(::testing::TempDir() + "/autotune_cache");
  const Result first =
      run("time --iterations=1 --autotune --autotune_file=" + cache + " --model=" + model);
  ASSERT_EQ(first.status, 0) << first.output;
  EXPECT_NE(first.output.find("starting from 0 choices"), std::string::npos) << first.output;
  std::ifstream in(cache);
  std::string header, entry;
  ASSERT_TRUE(std::getline(in, header) && std::getline(in, entry)) << cache;
  EXPECT_EQ(header, "crema conv algorithms 1 | cpu");
  EXPECT_EQ(entry.rfind("conv_fwd ", 0), 0u) << entry;
  const Result second =
      run("time --iterations=1 --autotune --autotune_file=" + cache + " --model=" + model);
  EXPECT_NE(second.output.find("starting from 1 choices"), std::string::npos) << second.output;
  const Result unwritable =
      run("time --iterations=1 --autotune --autotune_file=/proc/crema/x "
          "--model=" +
          model);
  EXPECT_EQ(unwritable.status, 0) << unwritable.output;
  EXPECT_NE(unwritable.output.find("conv_algos_save: cannot write"), std::string::npos)
      << unwritable.output;
}

}  // namespace

namespace {

// --stage and --level choose layers by their include rules, as Caffe's tool: in test and time
// the net's state, in train the training net's.
const char* kStagedNet = R"(name: "staged"
layer { name: "data" type: "DummyData" top: "data" top: "label"
  dummy_data_param { shape { dim: 4 dim: 6 } shape { dim: 4 }
    data_filler { type: "gaussian" } data_filler { type: "constant" value: 1 } } }
layer { name: "ip_small" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param { num_output: 2 } include { stage: "small" } }
layer { name: "ip_big" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param { num_output: 8 } exclude { stage: "small" } }
layer { name: "relu_deep" type: "ReLU" bottom: "ip" top: "ip" include { min_level: 2 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)";

TEST(CremaCli, StageAndLevelChooseTheLayers) {
  const std::string model = write_file("staged.prototxt", kStagedNet);
  const auto has = [](const Result& r, const std::string& layer) {
    return r.output.find("Creating Layer " + layer + "\n") != std::string::npos;
  };
  Result r = run("time --iterations=1 --model=" + model);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r, "ip_big") && !has(r, "ip_small") && !has(r, "relu_deep")) << r.output;
  r = run("time --iterations=1 --stage=other,small --level=2 --model=" + model);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r, "ip_small") && !has(r, "ip_big") && has(r, "relu_deep")) << r.output;

  const std::string solver =
      write_file("staged_solver.prototxt", std::string("net: \"") + model +
                                               "\" base_lr: 0.01 lr_policy: \"fixed\" "
                                               "max_iter: 2 solver_mode: CPU "
                                               "snapshot_after_train: false");
  r = run("train --stage=small --solver=" + solver);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r, "ip_small") && !has(r, "ip_big")) << r.output;
}

}  // namespace
