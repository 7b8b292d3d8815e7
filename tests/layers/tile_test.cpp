// Tile layer tests: values by hand on several axes, gradient (the sum over the tiles), errors.
#include <gtest/gtest.h>

#include "gradient_checker.h"
#include "test_util.h"

namespace crema::test {
namespace {

TEST(TileLayer, Values) {
  for (const ForwardCase& c :
       {ForwardCase{"tile_param { tiles: 2 }", {2, 4}, {1, 2, 1, 2, 3, 4, 3, 4}},
        ForwardCase{"tile_param { axis: 0 tiles: 2 }", {4, 2}, {1, 2, 3, 4, 1, 2, 3, 4}},
        ForwardCase{
            "tile_param { axis: -1 tiles: 3 }", {2, 6}, {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}}}) {
    SCOPED_TRACE(c.params);
    TensorSet<float> bottom;
    bottom.add({2, 2})->set_data({1, 2, 3, 4});
    expect_forward(*make_layer<float>("type: 'Tile' " + c.params), bottom, c);
  }
}

TEST(TileLayer, Gradient) {
  for (const char* params : {"tile_param { tiles: 3 }", "tile_param { axis: 2 tiles: 2 }"}) {
    SCOPED_TRACE(params);
    TensorSet<double> bottom, top;
    bottom.add({2, 3, 2}, 1);
    top.add();
    EXPECT_TRUE(check_gradient(*make_layer<double>("type: 'Tile' " + std::string(params)), *bottom,
                               *top, GradientCheckOptions().threshold(1e-8)));
  }
}

TEST(TileLayer, Errors) {
  TensorSet<float> bottom, top;
  bottom.add({2, 2});
  top.add();
  EXPECT_EQ(
      error_of([&] {
        make_layer<float>("type: 'Tile' name: 't' tile_param { tiles: 0 }")->setup(*bottom, *top);
      }),
      "layer t (Tile): tiles must be positive, got 0");
  EXPECT_THROW(make_layer<float>("type: 'Tile'")->setup(*bottom, *top), Error);  // tiles missing
  EXPECT_THROW(
      make_layer<float>("type: 'Tile' tile_param { axis: 2 tiles: 2 }")->setup(*bottom, *top),
      Error);
}

}  // namespace
}  // namespace crema::test
