// Tests of the precision fields (NVIDIA Caffe's names): how a layer's math follows the net's
// defaults, what math mode each value means on each device, the --precision flag, and that the
// new fields leave Caffe's binary layout alone.
#include "core/precision.h"

#include <gtest/gtest.h>

#include <string>

#include "core/errors.h"
#include "core/net.h"
#include "core/proto_io.h"
#include "crema.pb.h"
#include "proto_test_util.h"

namespace crema {
namespace {

using prim::MathMode;

NetParameter parse_net(const std::string& text) { return test::parse_text<NetParameter>(text); }

LayerParameter resolved(const NetParameter& net, int i) {
  LayerParameter l = net.layer(i);
  resolve_layer_precision(net, &l);
  return l;
}

TEST(Precision, UnsetMathIsTf32OnTheGpuAndStrictOnTheCpu) {
  const NetParameter net = parse_net("layer { name: 'c' type: 'Convolution' }");
  const LayerParameter l = resolved(net, 0);
  EXPECT_EQ(layer_forward_math(l, Device::kCUDA), MathMode::kTF32);
  EXPECT_EQ(layer_backward_math(l, Device::kCUDA), MathMode::kTF32);
  EXPECT_EQ(layer_forward_math(l, Device::kCPU), MathMode::kFP32);
  EXPECT_FALSE(layer_wants_half_storage(l));
}

TEST(Precision, LayerFieldsOverrideNetDefaultsAndMathFollowsTypeWhenUnset) {
  const NetParameter net = parse_net(R"(
    default_forward_type: FLOAT16 default_backward_type: BFLOAT16
    layer { name: 'a' type: 'Convolution' }
    layer { name: 'b' type: 'Convolution' forward_math: FLOAT backward_type: FLOAT }
  )");
  const LayerParameter a = resolved(net, 0), b = resolved(net, 1);
  EXPECT_EQ(layer_forward_math(a, Device::kCUDA), MathMode::kFP16);
  EXPECT_EQ(layer_backward_math(a, Device::kCUDA), MathMode::kBF16);
  EXPECT_TRUE(layer_wants_half_storage(a));
  EXPECT_EQ(layer_forward_math(b, Device::kCUDA), MathMode::kFP32);
  // b's own backward type does not change its math: the net default math (from its type) wins.
  EXPECT_EQ(layer_backward_math(b, Device::kCUDA), MathMode::kBF16);

  const NetParameter math = parse_net(R"(
    default_forward_type: FLOAT16 default_forward_math: FLOAT
    layer { name: 'a' type: 'InnerProduct' }
  )");
  EXPECT_EQ(layer_forward_math(resolved(math, 0), Device::kCUDA), MathMode::kFP32);
  EXPECT_EQ(layer_backward_math(resolved(math, 0), Device::kCUDA), MathMode::kTF32);
}

TEST(Precision, IntegerMathIsAnErrorNamingTheLayer) {
  const NetParameter net =
      parse_net("layer { name: 'conv1' type: 'Convolution' forward_math: INT }");
  LayerParameter l = net.layer(0);
  try {
    resolve_layer_precision(net, &l);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "layer conv1: forward_math INT is not a float type (DOUBLE, FLOAT, FLOAT16 or "
              "BFLOAT16)");
  }
}

TEST(Precision, FlagOverridesTheFile) {
  const std::string text = R"(
    default_forward_math: FLOAT16
    layer { name: 'a' type: 'Convolution' backward_math: BFLOAT16 forward_type: FLOAT }
  )";
  NetParameter fp32 = parse_net(text);
  apply_precision_flag("fp32", &fp32);
  EXPECT_EQ(layer_forward_math(resolved(fp32, 0), Device::kCUDA), MathMode::kFP32);
  EXPECT_EQ(layer_backward_math(resolved(fp32, 0), Device::kCUDA), MathMode::kFP32);

  NetParameter tf32 = parse_net(text);
  apply_precision_flag("tf32", &tf32);
  EXPECT_EQ(layer_forward_math(resolved(tf32, 0), Device::kCUDA), MathMode::kTF32);
  EXPECT_EQ(layer_backward_math(resolved(tf32, 0), Device::kCUDA), MathMode::kTF32);
  EXPECT_FALSE(tf32.layer(0).has_forward_type());

  NetParameter bf16 = parse_net(text);
  apply_precision_flag("bf16", &bf16);
  EXPECT_EQ(layer_forward_math(resolved(bf16, 0), Device::kCUDA), MathMode::kBF16);
  EXPECT_EQ(layer_backward_math(resolved(bf16, 0), Device::kCUDA), MathMode::kBF16);
  // Half-size storage: the net's types, and no layer keeps its own.
  EXPECT_EQ(bf16.default_forward_type(), BFLOAT16);
  EXPECT_EQ(bf16.default_backward_type(), BFLOAT16);
  EXPECT_FALSE(bf16.layer(0).has_forward_type());

  NetParameter fp16 = parse_net(text);
  apply_precision_flag("fp16", &fp16);
  EXPECT_EQ(layer_backward_math(resolved(fp16, 0), Device::kCUDA), MathMode::kFP16);
  EXPECT_TRUE(fp16.global_grad_scale_adaptive());
  EXPECT_FALSE(bf16.global_grad_scale_adaptive());
  NetParameter own_scale = parse_net("global_grad_scale: 128\n" + text);
  apply_precision_flag("fp16", &own_scale);
  EXPECT_FALSE(own_scale.global_grad_scale_adaptive());

  NetParameter bad = parse_net(text);
  EXPECT_THROW(apply_precision_flag("fp8", &bad), Error);
}

TEST(Precision, FlagInlinesEverySolverNet) {
  SolverParameter solver;
  *solver.mutable_net_param() = parse_net("layer { name: 'a' type: 'Convolution' }");
  *solver.add_test_net_param() = parse_net("layer { name: 't' type: 'Convolution' }");
  apply_precision_flag("bf16", &solver);
  EXPECT_EQ(solver.net_param().default_forward_math(), BFLOAT16);
  EXPECT_EQ(solver.test_net_param(0).default_backward_math(), BFLOAT16);

  SolverParameter missing;
  missing.set_net("/nonexistent/net.prototxt");
  EXPECT_THROW(apply_precision_flag("fp32", &missing), Error);
}

// NVIDIA Caffe put forward_type .. backward_math at LayerParameter 145-148, where Caffe has
// parameter_param, recurrent_param, swish_param and clip_param: a Caffe model with a Clip layer
// must keep its clip_param through a binary round trip next to the precision fields.
TEST(Precision, FieldsLeaveCaffeBinaryNumbersAlone) {
  LayerParameter l;
  l.set_name("clip");
  l.mutable_clip_param()->set_min(-1);
  l.mutable_clip_param()->set_max(2);
  l.set_forward_math(FLOAT16);
  std::string bytes;
  ASSERT_TRUE(l.SerializeToString(&bytes));
  LayerParameter back;
  ASSERT_TRUE(back.ParseFromString(bytes));
  EXPECT_FLOAT_EQ(back.clip_param().max(), 2);
  EXPECT_EQ(back.forward_math(), FLOAT16);
  EXPECT_FALSE(back.has_parameter_param());
  const auto* desc = LayerParameter::descriptor();
  for (int number = 145; number <= 148; ++number)
    EXPECT_NE(desc->FindFieldByNumber(number)->name().find("_param"), std::string::npos) << number;
}

// An NVIDIA Caffe FP16 net (its precision header on a small conv net) builds and runs forward;
// on the CPU the math is fp32 and storage stays fp32, so the output matches the FLOAT net's.
TEST(Precision, NvidiaCaffeFp16NetRunsForward) {
  const std::string body = R"(
    layer { name: 'data' type: 'Input' top: 'data'
            input_param { shape { dim: 2 dim: 3 dim: 9 dim: 9 } } }
    layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'conv'
            convolution_param { num_output: 4 kernel_size: 3
                                weight_filler { type: 'gaussian' std: 0.1 } } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'conv' top: 'ip'
            forward_type: FLOAT backward_type: FLOAT
            inner_product_param { num_output: 5 weight_filler { type: 'xavier' } } }
  )";
  const std::string header = R"(
    default_forward_type: FLOAT16 default_backward_type: FLOAT16
    default_forward_math: FLOAT16 default_backward_math: FLOAT16
    global_grad_scale: 32
  )";
  prim::Handle h;
  Net<float> half(parse_net(header + body), TEST, Device::kCPU);
  Net<float> full(parse_net(body), TEST, Device::kCPU);
  NetParameter weights;
  half.to_proto(&weights);
  full.copy_trained_layers_from(weights);
  half.fill_inputs_uniform(7);
  full.fill_inputs_uniform(7);
  half.forward(h);
  full.forward(h);
  const auto a = half.output_blobs()[0]->data_vector(), b = full.output_blobs()[0]->data_vector();
  ASSERT_EQ(a.size(), 10u);
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace crema
