// Each layer type the exporter converts, alone or in a small net, with random weights and
// inputs: the exported graph run by the reference evaluator must give crema's outputs.
#include "export_test_util.h"

namespace crema::test {
namespace {

struct LayerCase {
  const char* name;
  const char* net;  // prototxt layers after the input
  const char* input = "dim: 2 dim: 6 dim: 9 dim: 11";
  const char* input2 = nullptr;  // a second input "data2", when given
};

std::string with_inputs(const LayerCase& c) {
  std::string text =
      std::string("layer { name: 'data' type: 'Input' top: 'data' input_param { shape { ") +
      c.input + " } } }\n";
  if (c.input2)
    text += std::string("layer { name: 'data2' type: 'Input' top: 'data2' input_param { shape { ") +
            c.input2 + " } } }\n";
  return text + c.net;
}

class OnnxLayerTest : public ::testing::TestWithParam<LayerCase> {};

TEST_P(OnnxLayerTest, MatchesCremaForward) {
  const NetParameter param = parse_net(with_inputs(GetParam()));
  EXPECT_EQ(export_and_compare(param, {}, 1e-5), "");
}

TEST_P(OnnxLayerTest, MatchesCremaForwardWithSymbolicBatch) {
  const NetParameter param = parse_net(with_inputs(GetParam()));
  OnnxExportOptions options;
  options.dynamic_batch = true;
  onnx::ModelProto model;
  EXPECT_EQ(export_and_compare(param, options, 1e-5, &model), "");
  ASSERT_GT(model.graph().input_size(), 0);
  EXPECT_EQ(model.graph().input(0).type().tensor_type().shape().dim(0).dim_param(), "N");
}

#define CONV(extra)                                                                             \
  "layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'y' convolution_param { " extra \
  " } }"
#define POOL(extra) \
  "layer { name: 'pool' type: 'Pooling' bottom: 'data' top: 'y' pooling_param { " extra " } }"
#define ACT(type, extra) "layer { name: 'act' type: '" type "' bottom: 'data' top: 'y' " extra " }"

const LayerCase kCases[] = {
    {"conv", CONV("num_output: 4 kernel_size: 3")},
    {"conv_pad_stride", CONV("num_output: 5 kernel_h: 3 kernel_w: 2 pad_h: 1 pad_w: 2 stride: 2")},
    {"conv_groups_dilation", CONV("num_output: 6 kernel_size: 3 pad: 2 dilation: 2 group: 3")},
    {"conv_depthwise_no_bias", CONV("num_output: 6 kernel_size: 3 group: 6 bias_term: false")},
    {"deconv",
     "layer { name: 'up' type: 'Deconvolution' bottom: 'data' top: 'y' convolution_param { "
     "num_output: 4 kernel_size: 4 stride: 2 pad: 1 } }"},
    {"deconv_groups",
     "layer { name: 'up' type: 'Deconvolution' bottom: 'data' top: 'y' convolution_param { "
     "num_output: 6 kernel_size: 3 stride: 3 group: 2 dilation: 2 bias_term: false } }"},
    {"max_pool_ceil", POOL("pool: MAX kernel_size: 3 stride: 2")},
    {"max_pool_ceil_pad", POOL("pool: MAX kernel_size: 3 stride: 2 pad: 1")},
    {"max_pool_floor", POOL("pool: MAX kernel_size: 3 stride: 2 round_mode: FLOOR")},
    {"ave_pool_ceil", POOL("pool: AVE kernel_size: 3 stride: 2")},
    {"ave_pool_ceil_pad", POOL("pool: AVE kernel_size: 3 stride: 2 pad: 1")},
    {"ave_pool_pad_exact", POOL("pool: AVE kernel_size: 3 stride: 1 pad: 1")},
    {"ave_pool_rect",
     POOL("pool: AVE kernel_h: 2 kernel_w: 4 stride_h: 3 stride_w: 2 pad_h: 1 pad_w: 0")},
    {"global_max_pool", POOL("pool: MAX global_pooling: true")},
    {"global_ave_pool", POOL("pool: AVE global_pooling: true")},
    {"lrn_across",
     "layer { name: 'norm' type: 'LRN' bottom: 'data' top: 'y' lrn_param { "
     "local_size: 5 alpha: 0.5 beta: 0.75 k: 2 } }"},
    {"lrn_within",
     "layer { name: 'norm' type: 'LRN' bottom: 'data' top: 'y' lrn_param { "
     "local_size: 3 alpha: 0.5 beta: 0.75 norm_region: WITHIN_CHANNEL } }"},
    {"inner_product",
     "layer { name: 'fc' type: 'InnerProduct' bottom: 'data' top: 'y' "
     "inner_product_param { num_output: 7 } }"},
    {"inner_product_transpose",
     "layer { name: 'fc' type: 'InnerProduct' bottom: 'data' top: 'y' "
     "inner_product_param { num_output: 7 transpose: true } }"},
    {"inner_product_axis2",
     "layer { name: 'fc' type: 'InnerProduct' bottom: 'data' top: 'y' "
     "inner_product_param { num_output: 5 axis: 2 bias_term: false } }"},
    {"relu", ACT("ReLU", "")},
    {"leaky_relu", ACT("ReLU", "relu_param { negative_slope: 0.1 }")},
    {"prelu", ACT("PReLU", "")},
    {"prelu_shared", ACT("PReLU", "prelu_param { channel_shared: true }")},
    {"elu", ACT("ELU", "elu_param { alpha: 0.7 }")},
    {"sigmoid", ACT("Sigmoid", "")},
    {"tanh", ACT("TanH", "")},
    {"absval", ACT("AbsVal", "")},
    {"bnll", ACT("BNLL", "")},
    {"power", ACT("Power", "power_param { power: 2 scale: 0.5 shift: 3 }")},
    {"exp", ACT("Exp", "exp_param { base: 2 scale: 0.5 shift: 0.25 }")},
    {"log",
     "layer { name: 'abs' type: 'AbsVal' bottom: 'data' top: 'a' }"
     "layer { name: 'log' type: 'Log' bottom: 'a' top: 'y' log_param { base: 10 shift: 1 } }"},
    {"clip", ACT("Clip", "clip_param { min: -0.3 max: 0.5 }")},
    {"swish", ACT("Swish", "swish_param { beta: 1.5 }")},
    {"in_place_chain", CONV("num_output: 4 kernel_size: 1") " layer { name: 'relu' type: 'ReLU' "
                                                            "bottom: 'y' top: 'y' } layer { name: "
                                                            "'drop' type: 'Dropout' bottom: 'y' "
                                                            "top: 'y' }"},
    {"batch_norm_scale",
     CONV("num_output: 4 kernel_size: 1") "layer { name: 'bn' type: 'BatchNorm' bottom: 'y' top: "
                                          "'y' batch_norm_param { eps: 0.001 } }"
                                          "layer { name: 'sc' type: 'Scale' bottom: 'y' top: 'y' "
                                          "scale_param { bias_term: true } }"
                                          "layer { name: 'relu' type: 'ReLU' bottom: 'y' top: 'y' "
                                          "}"},
    {"batch_norm_scale_apart",
     "layer { name: 'bn' type: 'BatchNorm' bottom: 'data' top: 'bn' }"
     "layer { name: 'sc' type: 'Scale' bottom: 'bn' top: 'y' }"},
    {"batch_norm_alone", "layer { name: 'bn' type: 'BatchNorm' bottom: 'data' top: 'y' }"},
    {"scale_no_bias", "layer { name: 'sc' type: 'Scale' bottom: 'data' top: 'y' }"},
    {"scale_axes",
     "layer { name: 'sc' type: 'Scale' bottom: 'data' top: 'y' scale_param { axis: 1 "
     "num_axes: 2 bias_term: true } }"},
    {"scale_by_input",
     "layer { name: 'sc' type: 'Scale' bottom: 'data' bottom: 'data2' top: 'y' "
     "scale_param { axis: 0 } }",
     "dim: 2 dim: 6 dim: 9 dim: 11", "dim: 2 dim: 6"},
    {"bias", "layer { name: 'b' type: 'Bias' bottom: 'data' top: 'y' }"},
    {"bias_by_input", "layer { name: 'b' type: 'Bias' bottom: 'data' bottom: 'data2' top: 'y' }",
     "dim: 2 dim: 6 dim: 9 dim: 11", "dim: 6 dim: 9"},
    {"eltwise_sum_coeffs",
     "layer { name: 'e' type: 'Eltwise' bottom: 'data' bottom: 'data2' top: 'y' "
     "eltwise_param { operation: SUM coeff: 1 coeff: -0.5 } }",
     "dim: 2 dim: 6 dim: 9 dim: 11", "dim: 2 dim: 6 dim: 9 dim: 11"},
    {"eltwise_prod",
     "layer { name: 'e' type: 'Eltwise' bottom: 'data' bottom: 'data2' bottom: 'data' "
     "top: 'y' eltwise_param { operation: PROD } }",
     "dim: 2 dim: 6 dim: 9 dim: 11", "dim: 2 dim: 6 dim: 9 dim: 11"},
    {"eltwise_max",
     "layer { name: 'e' type: 'Eltwise' bottom: 'data' bottom: 'data2' top: 'y' "
     "eltwise_param { operation: MAX } }",
     "dim: 2 dim: 6 dim: 9 dim: 11", "dim: 2 dim: 6 dim: 9 dim: 11"},
    {"concat", "layer { name: 'c' type: 'Concat' bottom: 'data' bottom: 'data2' top: 'y' }",
     "dim: 2 dim: 6 dim: 9 dim: 11", "dim: 2 dim: 3 dim: 9 dim: 11"},
    {"concat_axis3",
     "layer { name: 'c' type: 'Concat' bottom: 'data' bottom: 'data2' top: 'y' "
     "concat_param { axis: -1 } }",
     "dim: 2 dim: 6 dim: 9 dim: 11", "dim: 2 dim: 6 dim: 9 dim: 2"},
    {"slice",
     "layer { name: 's' type: 'Slice' bottom: 'data' top: 'a' top: 'b' top: 'c' "
     "slice_param { axis: 1 slice_point: 1 slice_point: 4 } }"},
    {"slice_even_axis2",
     "layer { name: 's' type: 'Slice' bottom: 'data' top: 'a' top: 'b' top: 'c' "
     "slice_param { axis: 2 } }"},
    {"split_used_twice",
     CONV("num_output: 4 kernel_size: 1") " layer { name: 'r' type: 'ReLU' bottom: 'y' top: 'r' } "
                                          "layer { name: 's' type: 'Sigmoid' "
                                          "bottom: 'y' top: 's' }"},
    {"split_layer", "layer { name: 'sp' type: 'Split' bottom: 'data' top: 'a' top: 'b' }"},
    {"flatten", "layer { name: 'f' type: 'Flatten' bottom: 'data' top: 'y' }"},
    {"flatten_axis2",
     "layer { name: 'f' type: 'Flatten' bottom: 'data' top: 'y' flatten_param { axis: 2 } }"},
    {"reshape",
     "layer { name: 'r' type: 'Reshape' bottom: 'data' top: 'y' reshape_param { shape { "
     "dim: 0 dim: -1 dim: 3 } } }"},
    {"softmax", "layer { name: 'p' type: 'Softmax' bottom: 'data' top: 'y' }"},
    {"softmax_axis2",
     "layer { name: 'p' type: 'Softmax' bottom: 'data' top: 'y' softmax_param { axis: 2 } }"},
    {"crop",
     "layer { name: 'c' type: 'Crop' bottom: 'data' bottom: 'data2' top: 'y' crop_param { "
     "axis: 2 offset: 1 offset: 3 } }",
     "dim: 2 dim: 6 dim: 9 dim: 11", "dim: 2 dim: 6 dim: 5 dim: 7"},
    {"tile",
     "layer { name: 't' type: 'Tile' bottom: 'data' top: 'y' tile_param { axis: 2 tiles: 3 } }"},
    {"reduction_sum",
     "layer { name: 'r' type: 'Reduction' bottom: 'data' top: 'y' reduction_param { "
     "operation: SUM axis: 2 coeff: 0.5 } }"},
    {"reduction_asum",
     "layer { name: 'r' type: 'Reduction' bottom: 'data' top: 'y' reduction_param { "
     "operation: ASUM axis: 1 } }"},
    {"reduction_sumsq",
     "layer { name: 'r' type: 'Reduction' bottom: 'data' top: 'y' reduction_param { "
     "operation: SUMSQ axis: -1 } }"},
    {"reduction_mean_all",
     "layer { name: 'r' type: 'Reduction' bottom: 'data' top: 'y' "
     "reduction_param { operation: MEAN } }"},
    {"mvn", "layer { name: 'n' type: 'MVN' bottom: 'data' top: 'y' }"},
    {"mvn_across_channels",
     "layer { name: 'n' type: 'MVN' bottom: 'data' top: 'y' mvn_param { "
     "across_channels: true eps: 0.001 } }"},
    {"mvn_mean_only",
     "layer { name: 'n' type: 'MVN' bottom: 'data' top: 'y' mvn_param { "
     "normalize_variance: false } }"},
    {"parameter",
     "layer { name: 'w' type: 'Parameter' top: 'w' parameter_param { shape { dim: 6 } } } "
     "layer { name: 'e' type: 'Bias' bottom: 'data' bottom: 'w' top: 'y' }"},
    {"threshold", ACT("Threshold", "threshold_param { threshold: 0.2 }")},
    {"argmax",
     "layer { name: 'a' type: 'ArgMax' bottom: 'data' top: 'y' argmax_param { axis: 1 } }"},
};

INSTANTIATE_TEST_SUITE_P(Layers, OnnxLayerTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace crema::test
