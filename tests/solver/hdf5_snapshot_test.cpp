// HDF5 snapshots: the files have Caffe's layout (read back with the HDF5 C library), Caffe's
// weights files with shared parameters load, and Caffe's examples/hdf5_classification trains
// from HDF5Data, snapshots in HDF5 and resumes from it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "core/hdf5_io.h"
#include "core/hdf5_weights.h"
#include "core/net.h"
#include "core/proto_io.h"
#include "core/upgrade_proto.h"
#include "hdf5_test_util.h"
#include "resume_util.h"

namespace crema::test {
namespace {

TEST(Hdf5Snapshot, FilesHaveCaffesLayout) {
  CREMA_SKIP_WITHOUT_HDF5();
  TempDir dir;
  write_records(dir.file("records"));
  SolverParameter p = resume_solver(dir.file("records"), dir.file("run"));
  p.set_max_iter(10);
  p.set_snapshot_format(SolverParameter::HDF5);
  Handle h;
  auto solver = create_solver<float>(p, Device::kCPU, h, "layout");
  solver->solve();
  const std::string model = dir.file("run_iter_10.caffemodel.h5");
  const std::string state = dir.file("run_iter_10.solverstate.h5");
  ASSERT_TRUE(std::filesystem::exists(model));
  ASSERT_TRUE(std::filesystem::exists(state));
  EXPECT_FALSE(std::filesystem::exists(dir.file("run_iter_10.caffemodel")));

  EXPECT_EQ(read_h5(state, "iter"), std::vector<double>{10});
  EXPECT_EQ(read_h5(state, "current_step"), std::vector<double>{0});
  EXPECT_EQ(read_h5_string(state, "learned_net"), model);
  const auto& params = solver->net().learnable_params();
  for (size_t i = 0; i < params.size(); ++i) {
    std::vector<uint64_t> dims;
    read_h5(state, "history/" + std::to_string(i), &dims);
    EXPECT_EQ(std::vector<int64_t>(dims.begin(), dims.end()), params[i]->shape()) << i;
  }
  int layers_with_blobs = 0;
  for (const auto& layer : solver->net().layers()) {
    for (size_t k = 0; k < layer->blobs().size(); ++k) {
      std::vector<uint64_t> dims;
      const std::vector<double> stored =
          read_h5(model, "data/" + layer->name() + "/" + std::to_string(k), &dims);
      const std::vector<float> values = layer->blobs()[k]->data_vector();
      EXPECT_EQ(std::vector<int64_t>(dims.begin(), dims.end()), layer->blobs()[k]->shape());
      ASSERT_EQ(stored.size(), values.size());
      for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(float(stored[i]), values[i]);
    }
    layers_with_blobs += !layer->blobs().empty();
  }
  EXPECT_GE(layers_with_blobs, 2);
  // The weights file reads back as a .caffemodel does.
  const NetParameter loaded = load_net_param_binary(model);
  Net<float> net(p.net_param(), TRAIN, Device::kCPU);
  const WeightsCopy copy = net.copy_trained_layers_from(loaded);
  EXPECT_EQ(int(copy.copied.size()), layers_with_blobs);
  EXPECT_EQ(net.learnable_params()[0]->data_vector(), params[0]->data_vector());
}

// Caffe writes a shared parameter once, under the layer that owns it.
TEST(Hdf5Snapshot, CaffeWeightsWithSharedParametersLoad) {
  CREMA_SKIP_WITHOUT_HDF5();
  TempDir dir;
  const std::string file = dir.file("shared.caffemodel.h5");
  write_h5(file, {{"data/ip1/0", {2, 3}, {1, 2, 3, 4, 5, 6}},
                  {"data/ip1/1", {2}, {7, 8}},
                  {"data/ip2/1", {2}, {9, 10}},
                  {"data/conv1/7x7/0", {2}, {11, 12}}});
  NetParameter np;
  read_text_proto_string(R"(
    layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 1 dim: 3 } } }
    layer { name: "ip1" type: "InnerProduct" bottom: "x" top: "a" param { name: "w" }
      inner_product_param { num_output: 2 } }
    layer { name: "ip2" type: "InnerProduct" bottom: "x" top: "b" param { name: "w" }
      inner_product_param { num_output: 2 } }
    layer { name: "conv1/7x7" type: "Bias" bottom: "b" top: "c" bias_param { axis: 1 } })",
                         "shared", &np);
  Net<float> net(np, TRAIN, Device::kCPU);
  const WeightsCopy copy = net.copy_trained_layers_from(load_net_param_binary(file));
  EXPECT_EQ(copy.copied, (std::vector<std::string>{"conv1/7x7", "ip1", "ip2"}));
  EXPECT_EQ(net.layer_by_name("ip2")->blobs()[0]->data_vector(),
            (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(net.layer_by_name("ip2")->blobs()[1]->data_vector(), (std::vector<float>{9, 10}));
  EXPECT_EQ(net.layer_by_name("conv1/7x7")->blobs()[0]->data_vector(),
            (std::vector<float>{11, 12}));
  // A blob missing where nothing is shared is an error naming it.
  write_h5(file, {{"data/ip1/1", {2}, {7, 8}}});
  const std::string what =
      error_of([&] { net.copy_trained_layers_from(load_net_param_binary(file)); });
  EXPECT_NE(what.find("layer ip1: the weights lack blob 0"), std::string::npos) << what;
  // A truncated weights file is an error naming it.
  write_h5(file, {{"data/ip1/0", {2, 3}, {1, 2, 3, 4, 5, 6}}});
  std::filesystem::resize_file(file, std::filesystem::file_size(file) / 2);
  EXPECT_EQ(error_of([&] { load_net_param_binary(file); }).rfind(file + ": ", 0), 0u);
}

// A file on which libhdf5 itself crashes (fuzz_hdf5 found it: H5Lexists reads address 0 in its
// symbol table) is one error naming it, read as weights or as a solver state: crema first
// reads it in a checking process (hdf5::check_in_child), whose death is the error. Files read
// before and after it, by the checking process that died and by the one started after it, load.
TEST(Hdf5Snapshot, FileThatCrashesLibhdf5IsOneError) {
  CREMA_SKIP_WITHOUT_HDF5();
  TempDir dir;
  const auto good_file = [&](int i) {
    const std::string file = dir.file("good" + std::to_string(i) + ".caffemodel.h5");
    write_h5(file, {{"data/ip1/0", {2}, {float(i), 2}}});
    return file;
  };
  const auto loads = [&](int i) {
    const NetParameter np = load_net_param_binary(good_file(i));
    return np.layer_size() == 1 && np.layer(0).blobs(0).data(0) == float(i);
  };
  EXPECT_TRUE(loads(0));
  const std::string file = std::string(CREMA_SOURCE_DIR) +
                           "/tests/fuzz/corpus/fuzz_hdf5/symbol_table_read_at_address_0.h5";
  for (int pass = 0; pass < 2; ++pass) {  // a damaged file is checked again each time
    const std::string what = error_of([&] { load_net_param_binary(file); });
    // (under AddressSanitizer the checking process may end by the sanitizer's exit instead)
    EXPECT_EQ(what.rfind(file + ": damaged HDF5 file: ", 0), 0u) << what;
    EXPECT_TRUE(loads(pass + 1));
  }
  const std::string what = error_of([&] { read_solver_state_hdf5(file); });
  EXPECT_EQ(what.rfind(file + ": damaged HDF5 file: ", 0), 0u) << what;
  EXPECT_TRUE(loads(3));
}

// A 5.6 KB solver state (found by fuzz_hdf5) on which libhdf5 allocates past the checking
// process's 1 GiB reading its "learned_net" dataset: one error naming the file.
TEST(Hdf5Snapshot, SolverStateNeedingGigabytesIsOneError) {
  CREMA_SKIP_WITHOUT_HDF5();
  const std::string file =
      std::string(CREMA_SOURCE_DIR) + "/tests/solver/solver_state_allocating_past_1gib.h5";
  const std::string what = error_of([&] { read_solver_state_hdf5(file); });
  EXPECT_EQ(what.rfind(file + ": ", 0), 0u) << what;
}

// Two Gaussian clouds of 4 features, one per class, as the notebook's make_classification.
void write_classification_set(const std::string& path, int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 1);
  H5Dataset data{"data", {uint64_t(n), 4}, {}};
  H5Dataset label{"label", {uint64_t(n)}, {}};
  data.gzip_chunk_rows = label.gzip_chunk_rows = 64;  // as the notebook writes test.h5
  for (int i = 0; i < n; ++i) {
    const int c = i % 2;
    for (int k = 0; k < 4; ++k) data.values.push_back(noise(rng) + (c ? 1.5 : -1.5) * (k < 2));
    label.values.push_back(c);
  }
  write_h5(path, {data, label});
}

TEST(Hdf5Snapshot, CaffesHdf5ClassificationExampleTrainsAndResumes) {
  CREMA_SKIP_WITHOUT_HDF5();
  TempDir dir;
  namespace fs = std::filesystem;
  // The example's paths are relative to Caffe's root: run from a folder laid out as it.
  struct WorkingFolder {
    explicit WorkingFolder(const fs::path& to) : before(fs::current_path()) {
      fs::current_path(to);
    }
    ~WorkingFolder() { fs::current_path(before); }
    fs::path before;
  } in_root(dir.file(""));
  const std::string example = "examples/hdf5_classification/";
  fs::create_directories(example + "data");
  for (const char* name : {"nonlinear_train_val.prototxt", "nonlinear_solver.prototxt"})
    fs::copy_file(std::string(CREMA_SOURCE_DIR) + "/tests/solver/hdf5_classification/" + name,
                  example + name);
  write_classification_set(example + "data/train.h5", 1000, 1);
  write_classification_set(example + "data/test.h5", 250, 2);
  // As the notebook writes them: the training file listed twice.
  std::ofstream(example + "data/train.txt") << example << "data/train.h5\n"
                                            << example << "data/train.h5\n";
  std::ofstream(example + "data/test.txt") << example << "data/test.h5\n";

  const SolverParameter p = load_solver_param(example + "nonlinear_solver.prototxt");
  const auto train = [&](const std::string& resume) {
    Handle h;
    auto solver = create_solver<float>(p, Device::kCPU, h, example + "nonlinear_solver.prototxt");
    solver->set_overwrite_snapshots(true);
    solver->solve(resume);
    std::vector<std::vector<float>> weights;
    for (const Tensor<float>* w : solver->net().learnable_params())
      weights.push_back(w->data_vector());
    return std::make_pair(weights, solver->test_scores()[0]);
  };
  const auto straight = train("");
  const auto resumed = train(example + "data/train_iter_200.solverstate.h5");
  double accuracy = -1;
  for (const TestScore& s : straight.second)
    if (s.name == "accuracy") accuracy = s.value;
  EXPECT_GT(accuracy, 0.85) << "the net did not learn the two clouds";
  EXPECT_EQ(resumed.first, straight.first) << "resuming from HDF5 is not bit-exact";
}

}  // namespace
}  // namespace crema::test
