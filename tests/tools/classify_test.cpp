// `crema classify`: a deploy net with known weights ranks the classes of PNG images as its
// scores say, with the labels file's names, through the backend and through the tool (Caffe's
// cpp_classification output); a labels file that does not fit the net is one clear error.
#include "backends/classify.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/net.h"
#include "core/proto_io.h"
#include "data/data_test_util.h"
#include "data/image_io.h"
#include "data/image_test_util.h"
#include "run_command.h"

namespace crema {
namespace {

// Input 1 x 1 x 2 x 2 -> InnerProduct (3, no bias) -> Softmax: class c scores 10 x pixel p(c),
// p = (0, 1, 3).
class Classify : public ::testing::Test {
 protected:
  void SetUp() override {
    CREMA_SKIP_WITHOUT_OPENCV();
    std::ofstream(model_) << R"(name: "tiny"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 1 dim: 2 dim: 2 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param { num_output: 3 bias_term: false } }
layer { name: "prob" type: "Softmax" bottom: "ip" top: "prob" }
)";
    NetParameter param;
    read_text_proto(model_, &param);
    Net<float> net(param, TEST, Device::kCPU);
    std::vector<float> w(12, 0.0f);
    w[0 * 4 + 0] = 10;
    w[1 * 4 + 1] = 10;
    w[2 * 4 + 3] = 10;
    net.layer_by_name("ip")->blobs()[0]->set_data(w);
    NetParameter trained;
    net.to_proto(&trained);
    write_binary_proto_atomic(trained, weights_);
    std::ofstream(labels_) << "zero\none\ntwo\n";
    const unsigned char bright1[4] = {10, 200, 30, 40}, bright0[4] = {250, 10, 5, 5};
    write_image_file(image1_, bright1, 1, 2, 2);
    write_image_file(image0_, bright0, 1, 2, 2);
  }
  ClassifyRequest request() const {
    ClassifyRequest r;
    r.model = model_;
    r.weights = weights_;
    r.labels = labels_;
    r.transform.set_scale(1.0f / 255);
    r.top = 2;
    r.images = {image1_, image0_};
    return r;
  }
  test::TempDir dir_;
  const std::string model_ = dir_.file("deploy.prototxt"), weights_ = dir_.file("tiny.caffemodel"),
                    labels_ = dir_.file("labels.txt"), image1_ = dir_.file("one.png"),
                    image0_ = dir_.file("zero.png");
};

TEST_F(Classify, RanksClassesAsTheNetScoresThem) {
  const auto results = classify(request());
  ASSERT_EQ(results.size(), 2u);
  ASSERT_EQ(results[0].size(), 2u);
  EXPECT_EQ(results[0][0].second, "one");
  EXPECT_EQ(results[0][1].second, "two");
  EXPECT_GT(results[0][0].first, 0.99f);
  EXPECT_EQ(results[1][0].second, "zero");
  // Without labels, the class numbers.
  ClassifyRequest r = request();
  r.labels.clear();
  EXPECT_EQ(classify(r)[1][0].second, "0");
}

TEST_F(Classify, TheToolPrintsCaffesFormat) {
  const test::CommandResult r = test::run_command(
      std::string(CREMA_BINARY_DIR) + "/crema classify --model=" + model_ +
      " --weights=" + weights_ + " --labels=" + labels_ + " --scale=0.00392156863 --top=2 " +
      image1_ + " " + image0_ + " 2>/dev/null");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("---------- Prediction for " + image1_ + " ----------\n0.99"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(" - \"one\"\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("---------- Prediction for " + image0_ + " ----------\n0.9"),
            std::string::npos)
      << r.output;
}

TEST_F(Classify, ALabelsFileOfAnotherNetIsAnError) {
  std::ofstream(labels_) << "a\nb\n";
  EXPECT_EQ(test::error_of([&] { classify(request()); }),
            labels_ + ": 2 labels for a net of 3 classes");
}

}  // namespace
}  // namespace crema
