// SPP layer tests: output sizes C * sum_l 4^l (and N x C x 1 x 1 for one level), hand-computed
// MAX and AVE pyramids with the c-major per-level layout, gradients, and the too-small input.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "gradient_checker.h"
#include "layers/spp_layer.h"
#include "test_util.h"

namespace crema::test {
namespace {

std::unique_ptr<SppLayer<double>> spp(const std::string& params) {
  return std::make_unique<SppLayer<double>>(layer_param("type: 'SPP' spp_param { " + params + " }"),
                                            Device::kCPU);
}

TEST(SppLayer, OutputSizeIsChannelsTimesSumOfFourToTheLevel) {
  for (int height = 1; height <= 4; ++height) {
    auto layer = spp("pyramid_height: " + std::to_string(height));
    TensorSet<double> bottom, top;
    bottom.add({2, 3, 16, 15});
    top.add();
    layer->setup(*bottom, *top);
    int64_t bins = 0;
    for (int l = 0; l < height; ++l) bins += int64_t(1) << (2 * l);
    if (height == 1)
      EXPECT_EQ(top[0]->shape(), (std::vector<int64_t>{2, 3, 1, 1}));
    else
      EXPECT_EQ(top[0]->shape(), (std::vector<int64_t>{2, 3 * bins}));
    Handle h;
    layer->forward(h, *bottom, *top);  // every level's pooling accepts its geometry
  }
}

TEST(SppLayer, HandComputedMaxAndAverage) {
  // Two channels of 4 x 4: c0 = 0..15, c1 = 100..115. Level 0 pools everything, level 1 the
  // four 2 x 2 quadrants; the top lists level 0 (c0, c1), then level 1 (c0's 4 bins, c1's).
  std::vector<double> x(32);
  for (int i = 0; i < 16; ++i) {
    x[i] = i;
    x[16 + i] = 100 + i;
  }
  const std::vector<double> want_max = {15, 115, 5, 7, 13, 15, 105, 107, 113, 115};
  const std::vector<double> want_ave = {7.5,  107.5, 2.5,   4.5,   10.5,
                                        12.5, 102.5, 104.5, 110.5, 112.5};
  for (const char* pool : {"MAX", "AVE"}) {
    auto layer = spp(std::string("pyramid_height: 2 pool: ") + pool);
    TensorSet<double> bottom, top;
    bottom.add({1, 2, 4, 4})->set_data(x);
    top.add();
    layer->setup(*bottom, *top);
    Handle h;
    layer->forward(h, *bottom, *top);
    EXPECT_EQ(top[0]->data_vector(), std::string(pool) == "MAX" ? want_max : want_ave) << pool;
  }
}

TEST(SppLayer, GradientMax) {
  auto layer = spp("pyramid_height: 3 pool: MAX");
  EXPECT_TRUE(check_gradient(*layer, Filled{{2, 2, 6, 7}, 3}, GradientCheckOptions().step(1e-4)));
}

TEST(SppLayer, GradientAverage) {
  auto layer = spp("pyramid_height: 3 pool: AVE");
  EXPECT_TRUE(check_gradient(*layer, Filled{{1, 3, 9, 6}, 4}));
}

TEST(SppLayer, Errors) {
  expect_setup_error(*spp("pyramid_height: 3"), {{1, 1, 2, 2}},
                     "layer test_SPP (SPP): input 2x2 is too small for pyramid_height 3: level 2 "
                     "needs 4x4 bins");
  expect_setup_error(*spp("pyramid_height: 0"), {{1, 1, 2, 2}},
                     "pyramid_height must be in [1, 16], got 0");
  expect_setup_error(*spp("pyramid_height: 2 pool: STOCHASTIC"), {{1, 1, 4, 4}},
                     "STOCHASTIC is not");
  expect_setup_error(*spp("pyramid_height: 2"), {{1, 4, 4}}, "must be N x C x H x W");
}

}  // namespace
}  // namespace crema::test
