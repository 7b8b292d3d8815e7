// Tile layer tests: values by hand on several axes, gradient (the sum over the tiles), errors.
#include <gtest/gtest.h>

#include "gradient_checker.h"
#include "layers/tile_layer.h"
#include "test_util.h"

namespace crema::test {
namespace {

template <typename Dtype>
std::unique_ptr<Layer<Dtype>> tile(const std::string& params) {
  return std::make_unique<TileLayer<Dtype>>(layer_param("type: 'Tile' " + params), Device::kCPU);
}

TEST(TileLayer, Values) {
  struct Case {
    std::string params;
    std::vector<int64_t> shape;
    std::vector<float> y;
  };
  for (const Case& c :
       {Case{"tile_param { tiles: 2 }", {2, 4}, {1, 2, 1, 2, 3, 4, 3, 4}},
        Case{"tile_param { axis: 0 tiles: 2 }", {4, 2}, {1, 2, 3, 4, 1, 2, 3, 4}},
        Case{"tile_param { axis: -1 tiles: 3 }", {2, 6}, {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}}}) {
    SCOPED_TRACE(c.params);
    TensorSet<float> bottom, top;
    bottom.add({2, 2})->set_data({1, 2, 3, 4});
    top.add();
    auto layer = tile<float>(c.params);
    layer->setup(*bottom, *top);
    EXPECT_EQ(top[0]->shape(), c.shape);
    Handle h;
    layer->forward(h, *bottom, *top);
    EXPECT_EQ(top[0]->data_vector(), c.y);
  }
}

TEST(TileLayer, Gradient) {
  for (const char* params : {"tile_param { tiles: 3 }", "tile_param { axis: 2 tiles: 2 }"}) {
    SCOPED_TRACE(params);
    TensorSet<double> bottom, top;
    bottom.add({2, 3, 2}, 1);
    top.add();
    EXPECT_TRUE(check_gradient(*tile<double>(params), *bottom, *top,
                               GradientCheckOptions().threshold(1e-8)));
  }
}

TEST(TileLayer, Errors) {
  TensorSet<float> bottom, top;
  bottom.add({2, 2});
  top.add();
  try {
    tile<float>("name: 't' tile_param { tiles: 0 }")->setup(*bottom, *top);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "layer t (Tile): tiles must be positive, got 0");
  }
  EXPECT_THROW(tile<float>("")->setup(*bottom, *top), Error);  // tiles missing
  EXPECT_THROW(tile<float>("tile_param { axis: 2 tiles: 2 }")->setup(*bottom, *top), Error);
}

}  // namespace
}  // namespace crema::test
