// Fusion on the GPU: a convolution with its ReLU, then a residual block (conv, BatchNorm, Scale,
// ReLU in place, conv, the shortcut sum and its ReLU) run as a fused BatchNorm and a fused sum
// gives the losses, gradients and running statistics of the layers apart, to float re-association;
// so does a forward-only net with the stored statistics, where the convolution folds the
// BatchNorm and Scale into its weights.
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/net.h"
#include "cuda_test_util.h"
#include "test_util.h"

namespace crema {
namespace {

NetParameter chain_net() {
  NetParameter p;
  // Strict fp32 math: TF32 convolutions (the GPU default) would amplify the float re-association.
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(R"(
    default_forward_math: FLOAT default_backward_math: FLOAT
    layer { name: "data" type: "DummyData" top: "data" top: "label"
      dummy_data_param { shape { dim: 8 dim: 16 dim: 14 dim: 14 } shape { dim: 8 }
        data_filler { type: "gaussian" std: 1 } data_filler { type: "constant" value: 1 } } }
    layer { name: "conv0" type: "Convolution" bottom: "data" top: "conv0"
      convolution_param { num_output: 16 kernel_size: 3 pad: 1
        weight_filler { type: "gaussian" std: 0.1 } bias_filler { type: "gaussian" std: 0.1 } } }
    layer { name: "relu0" type: "ReLU" bottom: "conv0" top: "conv0" }
    layer { name: "conv" type: "Convolution" bottom: "conv0" top: "conv"
      convolution_param { num_output: 32 kernel_size: 3 pad: 1 bias_term: false
        weight_filler { type: "gaussian" std: 0.1 } } }
    layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "conv" }
    layer { name: "scale" type: "Scale" bottom: "conv" top: "conv"
      scale_param { bias_term: true filler { type: "gaussian" std: 1 }
        bias_filler { type: "gaussian" std: 1 } } }
    layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
    layer { name: "conv2" type: "Convolution" bottom: "conv" top: "conv2"
      convolution_param { num_output: 32 kernel_size: 3 pad: 1 bias_term: false
        weight_filler { type: "gaussian" std: 0.1 } } }
    layer { name: "sum" type: "Eltwise" bottom: "conv" bottom: "conv2" top: "sum" }
    layer { name: "relu_sum" type: "ReLU" bottom: "sum" top: "sum" }
    layer { name: "ip" type: "InnerProduct" bottom: "sum" top: "ip"
      inner_product_param { num_output: 5 weight_filler { type: "gaussian" std: 0.01 } } }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" })",
                                                            &p));
  return p;
}

// Activations of order 1: the two nets add in different orders, and a value near zero keeps the
// absolute error of its terms (on an H200, one of the 50,176 sums once differed by 1.6e-5).
void expect_close(const Tensor<float>& a, const Tensor<float>& b, const std::string& what) {
  EXPECT_TRUE(test::all_close(a.data_vector(), b.data_vector(), {3e-5, 1e-4, true})) << what;
}

TEST(NetFusionCuda, ResidualBlockFusedMatchesApart) {
  CREMA_SKIP_WITHOUT_GPU();
  for (Phase phase : {TRAIN, TEST}) {
    SCOPED_TRACE(phase == TRAIN ? "TRAIN" : "TEST");
    Net<float> fused(chain_net(), phase, Device::kCUDA), apart(chain_net(), phase, Device::kCUDA);
    apart.unfuse();
    NetParameter trained;
    fused.to_proto(&trained);
    apart.copy_trained_layers_from(trained);
    if (phase == TEST) {
      for (auto* net : {&fused, &apart}) {
        auto& blobs = net->layer_by_name("bn")->blobs();
        blobs[0]->fill_data(0.5f);
        blobs[1]->fill_data(3.0f);
        blobs[2]->fill_data(2.0f);
      }
      fused.share_inference_memory();
    }
    const auto& names = fused.layer_names();
    const auto at = [&](const char* name) {
      return int(std::find(names.begin(), names.end(), name) - names.begin());
    };
    ASSERT_EQ(fused.absorbed_by(at("relu0")), at("conv0"));
    // Forward-only, the convolution folds the BatchNorm and Scale and takes the ReLU.
    const int head = phase == TEST ? at("conv") : at("bn");
    ASSERT_EQ(fused.absorbed_by(at("scale")), head);
    ASSERT_EQ(fused.absorbed_by(at("relu")), head);
    ASSERT_EQ(fused.absorbed_by(at("relu_sum")), at("sum"));
    prim::Handle h(Device::kCUDA);
    for (int pass = 0; pass < 2; ++pass) {
      const float loss = fused.forward(h);
      apart.blob_by_name("data")->copy_from(*fused.blob_by_name("data"));
      const float loss_apart = apart.forward_range(h, 1, apart.num_layers() - 1);
      EXPECT_NEAR(loss, loss_apart, 1e-5 * std::fabs(loss_apart));
      // The forward-only memory plan reuses the activations: only the outputs keep values.
      if (phase == TEST) continue;
      expect_close(*fused.blob_by_name("conv"), *apart.blob_by_name("conv"), "conv");
      expect_close(*fused.blob_by_name("sum"), *apart.blob_by_name("sum"), "sum");
      fused.backward(h);
      apart.backward(h);
      for (size_t k = 0; k < fused.params().size(); ++k) {
        expect_close(*fused.params()[k], *apart.params()[k], "parameter " + std::to_string(k));
        EXPECT_TRUE(test::all_close(fused.params()[k]->diff_vector(),
                                    apart.params()[k]->diff_vector(), {1e-5, 1e-3, true}))
            << "gradient of parameter " << k;
      }
    }
  }
}

}  // namespace
}  // namespace crema
