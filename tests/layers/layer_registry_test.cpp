// Registry tests: unknown types list the known ones, and a walk over every registered type that
// sets it up, runs forward and (where it has one) backward from a minimal valid definition.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include "core/hdf5_io.h"
#include "core/proto_io.h"
#include "data/image_io.h"
#include "data/lmdb_db.h"
#include "gradient_checker.h"
#include "hdf5_test_util.h"
#include "layers/memory_data_layer.h"
#include "test_util.h"

namespace crema::test {
namespace {

TEST(LayerRegistry, UnknownTypeListsKnownTypes) {
  LayerParameter p = layer_param("name: 'x' type: 'Convolutoin'");
  try {
    create_layer<float>(p, Device::kCPU);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("unknown layer type \"Convolutoin\" (known: "), std::string::npos) << what;
    for (const std::string& t : layer_types()) EXPECT_NE(what.find(t), std::string::npos) << t;
  }
}

TEST(LayerRegistry, UnknownTypeNamesTheFileAndLine) {
  LayerParameter p = layer_param("name: 'py' type: 'Python'");
  p.set_source_location("net.prototxt:7");
  try {
    create_layer<float>(p, Device::kCPU);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(
        std::string(e.what()).rfind("net.prototxt:7: layer py: unknown layer type \"Python\"", 0),
        0u)
        << e.what();
  }
}

// The guide's table of layer types (docs/guide/nets.md, "## Layer types": a row
// "| `Type` | ..." per type) lists exactly the registered types, in their order.
TEST(LayerRegistry, TheGuideListsEveryType) {
  std::ifstream doc(std::string(CREMA_SOURCE_DIR) + "/docs/guide/nets.md");
  ASSERT_TRUE(doc) << "docs/guide/nets.md";
  const std::regex row(R"(^\| `([A-Za-z0-9]+)` \|)");
  std::vector<std::string> listed;
  bool inside = false;
  std::smatch m;
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind("## ", 0) == 0) inside = line == "## Layer types";
    if (inside && std::regex_search(line, m, row)) listed.push_back(m[1]);
  }
  EXPECT_EQ(listed, layer_types());
}

TEST(LayerRegistry, TypesAreSortedAndCreateTheirType) {
  const auto types = layer_types();
  ASSERT_GE(types.size(), 15u);
  EXPECT_TRUE(std::is_sorted(types.begin(), types.end()));
  for (const std::string& t : types) {
    EXPECT_STREQ(create_layer<float>(layer_param("type: '" + t + "'"), Device::kCPU)->type(),
                 t.c_str());
    EXPECT_STREQ(create_layer<double>(layer_param("type: '" + t + "'"), Device::kCPU)->type(),
                 t.c_str());
  }
}

// A minimal valid use of one layer type.
struct Usage {
  std::string params;                         // prototxt after the type
  std::vector<std::vector<int64_t>> bottoms;  // data bottoms, random in [-1, 1)
  bool label = false;                         // one more bottom: labels 0..C-1 for N x C scores
  int tops = 1;
  bool backward = true;
  std::vector<int64_t> top_shape = {};  // expected shape of top 0
  int index_range = 0;  // > 0: bottom 0 holds integer indices in [0, index_range) (no gradient)
};

// A 4-record LMDB of 1x2x2 Datum images with non-zero pixels, made once per test run.
std::string tiny_lmdb() {
  static const std::string path = [] {
    const std::string p = ::testing::TempDir() + "/registry_walk_lmdb";
    std::filesystem::remove_all(p);
    LmdbWriter writer(p);
    for (int i = 0; i < 4; ++i) {
      Datum d;
      d.set_channels(1);
      d.set_height(2);
      d.set_width(2);
      d.set_data(std::string{char(1 + i), char(2 + i), char(3 + i), char(4 + i)});
      d.set_label(i % 2);
      writer.put("0000000" + std::to_string(i), d.SerializeAsString());
    }
    writer.commit();
    return p;
  }();
  return path;
}

// A list file naming one 2x2 colour image twice (ImageData) and a window file of it
// (WindowData), written once per test run.
std::string tiny_image_dir() {
  static const std::string dir = [] {
    const std::string d = ::testing::TempDir() + "/registry_walk_images";
    std::filesystem::create_directories(d);
    if (image_io_available()) {
      const unsigned char pixels[12] = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120};
      write_image_file(d + "/img.png", pixels, 3, 2, 2);
      std::ofstream(d + "/list.txt") << "img.png 1\nimg.png 2\n";
      // One foreground and one background window over the whole image (WindowData).
      std::ofstream(d + "/windows.txt") << "# 0\nimg.png\n3 2 2\n2\n1 0.9 0 0 1 1\n0 0.1 0 0 1 1\n";
    }
    return d;
  }();
  return dir;
}

// A list naming one HDF5 file of four 1x2x2 rows and their labels (HDF5Data), written once per
// test run.
std::string tiny_hdf5_list() {
  static const std::string list = [] {
    // One folder per process: HDF5 locks its files, so test runs side by side must not share them.
    const std::string d =
        ::testing::TempDir() + "/registry_walk_hdf5_" + std::to_string(::getpid());
    std::filesystem::create_directories(d);
    std::vector<double> data(16);
    for (size_t i = 0; i < data.size(); ++i) data[i] = 1.0 + double(i);
    write_h5(d + "/tiny.h5", {{"data", {4, 1, 2, 2}, data}, {"label", {4}, {0, 1, 0, 1}}});
    std::ofstream(d + "/list.txt") << d << "/tiny.h5\n";
    return d + "/list.txt";
  }();
  return list;
}

// A 3x3 identity infogain matrix (InfogainLoss), written once per test run.
std::string infogain_identity_file() {
  static const std::string path = [] {
    const std::string p = ::testing::TempDir() + "/registry_walk_infogain.binaryproto";
    BlobProto blob;
    for (int d : {1, 1, 3, 3}) blob.mutable_shape()->add_dim(d);
    for (int i = 0; i < 9; ++i) blob.add_data(i % 4 == 0 ? 1.0f : 0.0f);
    write_binary_proto_atomic(blob, p);
    return p;
  }();
  return path;
}

const std::map<std::string, Usage>& usages() {
  static const std::map<std::string, Usage> table = {
      {"Data",
       {"data_param { source: '" + tiny_lmdb() + "' batch_size: 2 backend: LMDB }",
        {},
        false,
        2,
        false,
        {2, 1, 2, 2}}},
      {"ArgMax", {"argmax_param { top_k: 2 }", {{2, 5}}, false, 1, false, {2, 1, 2}}},
      {"BatchReindex", {"", {{4, 3}}, true, 1, true, {4, 3}}},
      {"Concat", {"", {{2, 3}, {2, 2}}, false, 1, true, {2, 5}}},
      // The reference bottom of Crop never gets a gradient; crop_test checks the backward.
      {"Crop",
       {"crop_param { axis: 1 offset: 1 }", {{2, 3, 4}, {2, 2, 2}}, false, 1, false, {2, 2, 2}}},
      {"Eltwise", {"", {{2, 3}, {2, 3}}, false, 1, true, {2, 3}}},
      {"Embed",
       {"embed_param { num_output: 3 input_dim: 4 weight_filler { type: 'gaussian' } }",
        {{5}},
        false,
        1,
        true,
        {5, 3},
        4}},
      {"Filter", {"", {{4, 3}}, true, 1, true, {4, 3}}},
      {"Parameter", {"parameter_param { shape { dim: 2 dim: 3 } }", {}, false, 1, true, {2, 3}}},
      {"Reduction", {"", {{2, 3}}, false, 1, true, {}}},
      {"Reshape", {"reshape_param { shape { dim: -1 } }", {{2, 3}}, false, 1, true, {6}}},
      {"Slice", {"", {{2, 4}}, false, 2, true, {2, 2}}},
      {"Tile", {"tile_param { tiles: 2 }", {{2, 3}}, false, 1, true, {2, 6}}},
      {"AbsVal", {"", {{10}}, false, 1, true, {10}}},
      {"BNLL", {"", {{10}}, false, 1, true, {10}}},
      // BatchNorm's statistics never get a gradient, which the walk's non-zero check would flag;
      // its backward is checked in batchnorm_test.cpp.
      {"BatchNorm", {"", {{2, 3, 2, 2}}, false, 1, false, {2, 3, 2, 2}}},
      {"Bias", {"", {{2, 3, 4}}, false, 1, true, {2, 3, 4}}},
      {"Clip", {"clip_param { min: -0.5 max: 0.5 }", {{10}}, false, 1, true, {10}}},
      {"ELU", {"", {{10}}, false, 1, true, {10}}},
      {"Exp", {"", {{10}}, false, 1, true, {10}}},
      {"Log", {"log_param { shift: 2 }", {{10}}, false, 1, true, {10}}},
      {"MVN", {"", {{2, 3, 2, 2}}, false, 1, true, {2, 3, 2, 2}}},
      {"PReLU", {"", {{2, 3, 2, 2}}, false, 1, true, {2, 3, 2, 2}}},
      {"Power", {"power_param { power: 2 shift: 2 }", {{10}}, false, 1, true, {10}}},
      {"Scale", {"scale_param { bias_term: true }", {{2, 3, 4}}, false, 1, true, {2, 3, 4}}},
      {"Swish", {"", {{10}}, false, 1, true, {10}}},
      {"Threshold", {"", {{10}}, false, 1, false, {10}}},
      {"ContrastiveLoss", {"", {{4, 3}, {4, 3}}, true, 1, true, {}}},
      {"Deconvolution",
       {"convolution_param { num_output: 2 kernel_size: 3 stride: 2 weight_filler { type: 'xavier' "
        "} }",
        {{1, 2, 3, 3}},
        false,
        1,
        true,
        {1, 2, 7, 7}}},
      {"EuclideanLoss", {"", {{4, 3}, {4, 3}}, false, 1, true, {}}},
      {"HingeLoss", {"", {{4, 3}}, true, 1, true, {}}},
      {"Im2col",
       {"convolution_param { kernel_size: 2 }", {{1, 2, 3, 3}}, false, 1, true, {1, 8, 2, 2}}},
      {"InfogainLoss",
       {"infogain_loss_param { source: '" + infogain_identity_file() + "' }",
        {{4, 3}},
        true,
        1,
        true,
        {}}},
      {"MultinomialLogisticLoss", {"", {{4, 3}}, true, 1, true, {}}},
      {"SPP", {"spp_param { pyramid_height: 2 }", {{1, 2, 4, 4}}, false, 1, true, {1, 10}}},
      {"SigmoidCrossEntropyLoss", {"", {{4, 1}}, true, 1, true, {}}},
      {"HDF5Data",
       {"top: 'data' top: 'label' hdf5_data_param { source: '" + tiny_hdf5_list() +
            "' batch_size: 2 }",
        {},
        false,
        2,
        false,
        {2, 1, 2, 2}}},
      {"HDF5Output",
       {"hdf5_output_param { file_name: '" + tiny_hdf5_list() + ".out.h5' }",
        {{4, 3}},
        true,
        0,
        false,
        {}}},
      {"ImageData",
       {"image_data_param { source: '" + tiny_image_dir() + "/list.txt' root_folder: '" +
            tiny_image_dir() + "/' batch_size: 2 }",
        {},
        false,
        2,
        false,
        {2, 3, 2, 2}}},
      {"WindowData",
       {"window_data_param { source: '" + tiny_image_dir() + "/windows.txt' root_folder: '" +
            tiny_image_dir() + "/' batch_size: 2 crop_size: 2 fg_fraction: 0.5 }",
        {},
        false,
        2,
        false,
        {2, 3, 2, 2}}},
      {"MemoryData",
       {"memory_data_param { batch_size: 2 channels: 1 height: 2 width: 2 }",
        {},
        false,
        2,
        false,
        {2, 1, 2, 2}}},
      {"LRN", {"lrn_param { local_size: 3 }", {{2, 4, 3, 3}}, false, 1, true, {2, 4, 3, 3}}},
      {"Accuracy", {"", {{4, 3}}, true, 1, false, {}}},
      {"Convolution",
       {"convolution_param { num_output: 2 kernel_size: 3 weight_filler { type: 'xavier' } }",
        {{1, 2, 5, 5}},
        false,
        1,
        true,
        {1, 2, 3, 3}}},
      {"Dropout", {"", {{2, 8}}, false, 1, true, {2, 8}}},
      {"DummyData",
       {"dummy_data_param { shape { dim: 2 dim: 3 } data_filler { value: 1 } }",
        {},
        false,
        1,
        false,
        {2, 3}}},
      {"Flatten", {"", {{2, 3, 2}}, false, 1, true, {2, 6}}},
      {"InnerProduct",
       {"inner_product_param { num_output: 3 weight_filler { type: 'gaussian' } }",
        {{2, 4}},
        false,
        1,
        true,
        {2, 3}}},
      {"Input", {"input_param { shape { dim: 3 } }", {}, false, 1, false, {3}}},
      {"Pooling",
       {"pooling_param { pool: MAX kernel_size: 2 stride: 2 }",
        {{1, 2, 4, 4}},
        false,
        1,
        true,
        {1, 2, 2, 2}}},
      {"ReLU", {"", {{10}}, false, 1, true, {10}}},
      {"Sigmoid", {"", {{10}}, false, 1, true, {10}}},
      {"Silence", {"", {{5}}, false, 0, true, {}}},
      {"Softmax", {"", {{2, 5}}, false, 1, true, {2, 5}}},
      {"SoftmaxWithLoss", {"", {{4, 3}}, true, 1, true, {}}},
      {"Split", {"", {{6}}, false, 2, true, {6}}},
      {"TanH", {"", {{10}}, false, 1, true, {10}}},
  };
  return table;
}

double abs_sum(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += std::fabs(x);
  return s;
}

TEST(LayerRegistry, EveryTypeRuns) {
  for (const std::string& type : layer_types()) {
    SCOPED_TRACE(type);
    const auto it = usages().find(type);
    ASSERT_NE(it, usages().end()) << "registered type " << type
                                  << " has no entry in this test's usage table";
    const Usage& u = it->second;
    // Types this build cannot run: images without OpenCV, HDF5 without libhdf5.
    if ((type == "ImageData" || type == "WindowData") && !image_io_available()) continue;
    if (type.rfind("HDF5", 0) == 0 && !hdf5::hdf5_available()) continue;
    auto layer = make_layer<float>("type: '" + type + "' " + u.params);
    TensorSet<float> bottom, top;
    for (size_t i = 0; i < u.bottoms.size(); ++i) bottom.add(u.bottoms[i], 100 + i);
    if (u.index_range > 0) {
      std::vector<float> idx(bottom[0]->count());
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = float(i % u.index_range);
      bottom[0]->set_data(idx);
    }
    if (u.label) {
      const int64_t n = u.bottoms[0][0], c = u.bottoms[0][1];
      std::vector<float> labels(n);
      for (int64_t i = 0; i < n; ++i) labels[i] = float(i % c);
      bottom.add({n})->set_data(labels);
    }
    for (int i = 0; i < u.tops; ++i) top.add();
    layer->setup(*bottom, *top);
    // MemoryData serves what the caller hands it.
    if (auto* m = dynamic_cast<MemoryDataLayer<float>*>(layer.get())) {
      std::vector<float> x(8, 1.0f), y{1.0f, 2.0f};
      m->set_input(x.data(), y.data(), 2);
    }
    if (u.tops > 0) {
      EXPECT_EQ(top[0]->shape(), u.top_shape);
    }
    Handle handle;
    layer->forward(handle, *bottom, *top);
    for (size_t i = 0; i < top.size(); ++i) {
      const auto y = top[i]->data_vector();
      ASSERT_GT(y.size(), 0u) << "top " << i;
      for (float v : y) ASSERT_TRUE(std::isfinite(v)) << "top " << i;
      // Input's tops hold whatever the caller writes and Parameter's blob starts at zero (Caffe
      // has no filler for it): zeros until then.
      if (type != "Input" && type != "Parameter") {
        EXPECT_GT(abs_sum(y), 0.0) << "top " << i << " is all zeros";
      }
    }
    if (!u.backward) continue;
    // Poison first: a top may share its bottom's diff (Flatten).
    std::vector<bool> down(bottom.size(), false);
    for (size_t i = 0; i < u.bottoms.size(); ++i) {
      down[i] = true;
      bottom[i]->fill_diff(std::numeric_limits<float>::quiet_NaN());
    }
    for (size_t i = 0; i < top.size(); ++i)
      top[i]->set_diff(random_vector<float>(top[i]->count(), 7 + i, 0.5, 1.5));
    layer->backward(handle, *top, down, *bottom);
    for (size_t i = 0; i < u.bottoms.size(); ++i) {
      const auto dx = bottom[i]->diff_vector();
      for (float v : dx) ASSERT_TRUE(std::isfinite(v)) << "bottom " << i;
      if (type == "Silence" || (i == 0 && u.index_range > 0)) {
        EXPECT_EQ(abs_sum(dx), 0.0) << "no gradient reaches bottom " << i;
      } else {
        EXPECT_GT(abs_sum(dx), 0.0) << "bottom " << i << " diff is all zeros";
      }
    }
    for (size_t i = 0; i < layer->blobs().size(); ++i)
      EXPECT_GT(abs_sum(layer->blobs()[i]->diff_vector()), 0.0) << "param " << i;
  }
}

}  // namespace
}  // namespace crema::test
