// Registry tests: unknown types list the known ones, and a walk over every registered type that
// sets it up, runs forward and (where it has one) backward from a minimal valid definition.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "data/lmdb_db.h"
#include "gradient_checker.h"
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

const std::map<std::string, Usage>& usages() {
  static const std::map<std::string, Usage> table = {
      {"Data",
       {"data_param { source: '" + tiny_lmdb() + "' batch_size: 2 backend: LMDB }",
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
    auto layer = make_layer<float>("type: '" + type + "' " + u.params);
    TensorSet<float> bottom, top;
    for (size_t i = 0; i < u.bottoms.size(); ++i) bottom.add(u.bottoms[i], 100 + i);
    if (u.label) {
      const int64_t n = u.bottoms[0][0], c = u.bottoms[0][1];
      std::vector<float> labels(n);
      for (int64_t i = 0; i < n; ++i) labels[i] = float(i % c);
      bottom.add({n})->set_data(labels);
    }
    for (int i = 0; i < u.tops; ++i) top.add();
    layer->setup(*bottom, *top);
    if (u.tops > 0) {
      EXPECT_EQ(top[0]->shape(), u.top_shape);
    }
    Handle handle;
    layer->forward(handle, *bottom, *top);
    for (size_t i = 0; i < top.size(); ++i) {
      const auto y = top[i]->data_vector();
      ASSERT_GT(y.size(), 0u) << "top " << i;
      for (float v : y) ASSERT_TRUE(std::isfinite(v)) << "top " << i;
      // Input's tops hold whatever the caller writes: zeros until then.
      if (type != "Input") {
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
      if (type == "Silence") {
        EXPECT_EQ(abs_sum(dx), 0.0);
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
