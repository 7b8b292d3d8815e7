// MVN layer tests: each row normalized to mean 0 (and standard deviation 1), gradients of all
// four modes, any rank, and the in-place error.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "gradient_checker.h"
#include "layers/mvn_layer.h"
#include "test_util.h"

namespace crema::test {
namespace {

std::unique_ptr<Layer<double>> make_mvn(const std::string& params) {
  return std::make_unique<MvnLayer<double>>(layer_param("type: 'MVN' " + params), Device::kCPU);
}

const char* kModes[] = {
    "",
    "mvn_param { across_channels: true }",
    "mvn_param { normalize_variance: false }",
    "mvn_param { normalize_variance: false across_channels: true }",
};

TEST(MvnLayer, RowsHaveZeroMeanAndUnitDeviation) {
  for (const char* params : kModes) {
    SCOPED_TRACE(params);
    const std::string p = params;
    const bool across = p.find("across") != std::string::npos;
    const bool var = p.find("normalize_variance: false") == std::string::npos;
    TensorSet<double> bottom;
    bottom.add({2, 3, 2, 4}, 1, -1, 4);
    const auto x = bottom[0]->data_vector(), y = forward_keeping_shape(*make_mvn(p), bottom);
    const size_t D = across ? 24 : 8;
    for (size_t r = 0; r < y.size() / D; ++r) {
      double mean = 0, sq = 0, xmean = 0;
      for (size_t i = 0; i < D; ++i) {
        mean += y[r * D + i] / double(D);
        sq += y[r * D + i] * y[r * D + i] / double(D);
        xmean += x[r * D + i] / double(D);
      }
      EXPECT_NEAR(mean, 0, 1e-12) << "row " << r;
      if (var) {
        EXPECT_NEAR(sq, 1, 1e-7) << "row " << r;
      } else {
        EXPECT_NEAR(y[r * D], x[r * D] - xmean, 1e-12) << "row " << r;
      }
    }
  }
}

TEST(MvnLayer, Gradients) {
  for (const char* params : kModes) {
    for (const std::vector<int64_t>& shape :
         std::vector<std::vector<int64_t>>{{2, 3, 2, 2}, {3, 2, 5}, {2, 2, 3, 1, 2}}) {
      SCOPED_TRACE(::testing::Message() << params << " rank " << shape.size());
      auto layer = make_mvn(params);
      EXPECT_TRUE(check_gradient(*layer, Filled{shape, 2, -1, 2},
                                 GradientCheckOptions().step(1e-4).threshold(1e-5)));
    }
  }
}

TEST(MvnLayer, InPlaceIsAnError) {
  TensorSet<double> io;
  io.add({2, 3, 2});
  expect_error([&] { make_mvn("")->setup(*io, *io); }, "cannot run in place");
}

}  // namespace
}  // namespace crema::test
