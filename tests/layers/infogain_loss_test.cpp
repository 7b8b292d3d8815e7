// InfogainLoss layer tests: a hand-computed loss with the matrix as a bottom and from a
// .binaryproto file, the identity matrix reducing to SoftmaxWithLoss, gradients over a spatial
// axis with an ignore label, the probability top, and matrix/label shape errors.
#include <cmath>

#include "core/proto_io.h"
#include "layers/infogain_loss_layer.h"
#include "loss_layer_test_util.h"
#include "test_util.h"

namespace crema::test {
namespace {

// Writes an infogain matrix file of the given shape and values; returns its path.
std::string write_matrix(const std::string& name, std::vector<int64_t> shape,
                         const std::vector<float>& values) {
  BlobProto b;
  for (int64_t d : shape) b.mutable_shape()->add_dim(d);
  for (float v : values) b.add_data(v);
  const std::string path = ::testing::TempDir() + "/" + name;
  write_binary_proto_atomic(b, path);
  return path;
}

// Scores (0, 0) give p = (1/2, 1/2); with label 1 and H = [[1, 0.5], [0, 2]] the loss is
// -(0 * ln 1/2 + 2 * ln 1/2) = 2 ln 2.
TEST(InfogainLossLayer, HandComputedWithMatrixBottomAndFile) {
  const double want = 2 * std::log(2.0);
  {
    auto layer = make_direct<InfogainLossLayer>("type: 'InfogainLoss'");
    TensorSet<double> bottom, top;
    bottom.add({1, 2})->set_data({0, 0});
    bottom.add({1})->set_data({1});
    bottom.add({1, 1, 2, 2})->set_data({1, 0.5, 0, 2});
    top.add();
    EXPECT_NEAR(forward_loss(*layer, bottom, top), want, 1e-12);
  }
  const std::string path = write_matrix("infogain_ok.binaryproto", {1, 1, 2, 2}, {1, 0.5, 0, 2});
  auto layer = make_direct<InfogainLossLayer>(
      "type: 'InfogainLoss' infogain_loss_param { "
      "source: '" +
      path + "' }");
  TensorSet<double> bottom, top;
  bottom.add({1, 2})->set_data({0, 0});
  bottom.add({1})->set_data({1});
  top.add();
  top.add();
  EXPECT_NEAR(forward_loss(*layer, bottom, top), want, 1e-12);
  EXPECT_EQ(top[1]->data_vector(), (std::vector<double>{0.5, 0.5}));
}

TEST(InfogainLossLayer, IdentityMatrixIsSoftmaxLoss) {
  auto layer = make_direct<InfogainLossLayer>("type: 'InfogainLoss'");
  TensorSet<double> bottom, top;
  Tensor<double>* x = bottom.add({2, 3}, 1, -2, 2);
  bottom.add({2})->set_data({2, 0});
  bottom.add({3, 3})->set_data({1, 0, 0, 0, 1, 0, 0, 0, 1});
  top.add();
  const std::vector<double> v = x->data_vector();
  double want = 0;
  for (int n = 0; n < 2; ++n) {
    const int l = n == 0 ? 2 : 0;
    const double z = std::exp(v[n * 3]) + std::exp(v[n * 3 + 1]) + std::exp(v[n * 3 + 2]);
    want -= std::log(std::exp(v[n * 3 + l]) / z);
  }
  EXPECT_NEAR(forward_loss(*layer, bottom, top), want / 2, 1e-12);  // VALID: 2 labels
}

TEST(InfogainLossLayer, GradientSpatialAxisWithIgnore) {
  for (const char* norm : {"", "normalization: FULL"}) {
    SCOPED_TRACE(norm);
    auto layer = make_direct<InfogainLossLayer>(
        std::string("type: 'InfogainLoss' loss_param { ignore_label: 3 ") + norm + " }");
    TensorSet<double> bottom, top;
    bottom.add({2, 3, 2, 2}, 4, -2, 2);
    bottom.add({2, 1, 2, 2})->set_data({0, 1, 2, 3, 2, 3, 1, 0});
    bottom.add({3, 3}, 5, 0, 2);
    top.add();
    top.add();
    EXPECT_TRUE(check_gradient(*layer, *bottom, *top,
                               GradientCheckOptions().bottoms({0}).objective_tops({0})));
  }
}

TEST(InfogainLossLayer, Errors) {
  const std::string bad =
      write_matrix("infogain_bad.binaryproto", {1, 1, 2, 3}, {1, 0, 0, 0, 1, 0});
  auto layer = make_direct<InfogainLossLayer>(
      "type: 'InfogainLoss' infogain_loss_param { "
      "source: '" +
      bad + "' }");
  TensorSet<double> bottom, top;
  bottom.add({2, 3});
  bottom.add({2})->set_data({0, 1});
  top.add();
  expect_error([&] { layer->setup(*bottom, *top); },
               "layer test_InfogainLoss (InfogainLoss): infogain matrix in " + bad +
                   " holds 6 values for a shape of 6 elements, but the 3 classes need 3 x 3");

  auto no_source = make_direct<InfogainLossLayer>("type: 'InfogainLoss'");
  expect_error([&] { no_source->setup(*bottom, *top); }, "infogain_loss_param.source is required");

  auto missing = make_direct<InfogainLossLayer>(
      "type: 'InfogainLoss' infogain_loss_param { source: '/nonexistent/h.binaryproto' }");
  expect_error([&] { missing->setup(*bottom, *top); }, "/nonexistent/h.binaryproto");

  auto with_bottom = make_direct<InfogainLossLayer>("type: 'InfogainLoss'");
  TensorSet<double> b3;
  b3.add({2, 3});
  b3.add({2})->set_data({0, 1});
  b3.add({2, 2});
  expect_error([&] { with_bottom->setup(*b3, *top); },
               "the infogain matrix (bottom 2) is (2 2 (4)) but the 3 classes need 3 x 3");

  auto labels = make_direct<InfogainLossLayer>("type: 'InfogainLoss'");
  TensorSet<double> b4;
  b4.add({2, 3});
  b4.add({3});
  b4.add({3, 3});
  expect_error([&] { labels->setup(*b4, *top); },
               "so 2 labels are needed, but the labels are (3 (3))");
}

}  // namespace
}  // namespace crema::test
