// The space-to-depth row (conv_s2d_cuda.cu) against the CPU on integer data, exact in every
// tensor-core math: strided first layers (CaffeNet's and ResNet-50's conv1 on small planes, one
// colour, asymmetric strides and padding, a stride past the kernel, one output pixel), every pass
// plain and blended, forward with bias and ReLU; a batch that runs over slices; the problems it
// refuses; and kAuto's choice of it. Half-size and channels-last tensors:
// conv_layout_cuda_test.cpp.
#include <gtest/gtest.h>

#include "conv_cuda_harness.h"

namespace crema::prim {
namespace {

using namespace conv_harness;

constexpr MathMode kTensorCoreMaths[] = {MathMode::kTF32, MathMode::kBF16, MathMode::kFP16};

Descs descs_in(const ConvProblem& pb, MathMode math) {
  Descs ds = descs_of(pb, DataType::kFloat32);
  ds.cd.math = math;
  return ds;
}

bool runs(Handle& gpu, const ConvProblem& pb, MathMode math) {
  const Descs ds = descs_in(pb, math);
  return conv_supports(gpu, ConvAlgo::kSpaceToDepth, ds.cd, ds.xd, ds.wd, ds.yd);
}

TEST(ConvSpaceToDepthCuda, FirstLayersMatchCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  // name, n, c, h, w, k, r, s, pad h, w, stride h, w
  const ConvProblem cases[] = {
      {"caffenet_conv1_small", 2, 3, 39, 43, 16, 11, 11, 0, 0, 4, 4},
      {"resnet50_conv1_small", 2, 3, 30, 29, 16, 7, 7, 3, 3, 2, 2},
      {"one_colour", 3, 1, 17, 16, 8, 3, 3, 1, 1, 2, 2},
      {"asymmetric", 1, 2, 19, 23, 8, 5, 4, 2, 1, 2, 3},
      {"stride_past_kernel", 2, 4, 14, 15, 24, 2, 2, 1, 0, 3, 3},
      {"one_output_pixel", 1, 3, 11, 11, 8, 11, 11, 0, 0, 4, 4},
  };
  Handle gpu(Device::kCUDA);
  for (MathMode math : kTensorCoreMaths)
    for (const ConvProblem& pb : cases) {
      ASSERT_TRUE(runs(gpu, pb, math)) << pb.name << " " << math_name(math);
      check_problem<float>(pb, true, kExact, 0, {ConvAlgo::kSpaceToDepth}, math);
    }
}

// 700 images of 15 x 15 outputs: x' (and backward data's f32 dx') pass 16 MiB, so every pass runs
// over two or three slices of the batch, backward filter summing them.
TEST(ConvSpaceToDepthCuda, SlicedBatchMatchesCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  const ConvProblem pb{"sliced", 700, 3, 67, 67, 8, 11, 11, 0, 0, 4, 4};
  Handle gpu(Device::kCUDA);
  for (MathMode math : {MathMode::kTF32, MathMode::kBF16}) {
    ASSERT_TRUE(runs(gpu, pb, math)) << math_name(math);
    check_problem<float>(pb, true, kExact, 0, {ConvAlgo::kSpaceToDepth}, math);
  }
}

TEST(ConvSpaceToDepthCuda, RefusesWhatItCannotFold) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle gpu(Device::kCUDA);
  const ConvProblem strided{"strided", 2, 3, 39, 43, 16, 11, 11, 0, 0, 4, 4};
  ASSERT_TRUE(runs(gpu, strided, MathMode::kBF16));
  EXPECT_FALSE(runs(gpu, strided, MathMode::kFP32)) << "strict fp32";
  const ConvProblem refused[] = {
      {"stride_1", 2, 3, 20, 20, 16, 5, 5, 2, 2, 1, 1},
      {"dilated", 2, 3, 39, 43, 16, 3, 3, 0, 0, 2, 2, 2, 2},
      {"grouped", 2, 4, 39, 43, 16, 3, 3, 0, 0, 2, 2, 1, 1, 2},
      {"outputs_not_a_piece", 2, 3, 39, 43, 12, 11, 11, 0, 0, 4, 4},
  };
  for (const ConvProblem& pb : refused) EXPECT_FALSE(runs(gpu, pb, MathMode::kBF16)) << pb.name;
  Descs f64 = descs_of(strided, DataType::kFloat64);
  f64.cd.math = MathMode::kBF16;
  EXPECT_FALSE(conv_supports(gpu, ConvAlgo::kSpaceToDepth, f64.cd, f64.xd, f64.wd, f64.yd));
}

// kAuto folds strided first layers (at most 4 input channels, at least 2^18 output points): in
// BF16 and FP16 every pass; in TF32 forward and backward data of folds of at least 32 channels
// (CaffeNet's 48, not ResNet-50's 12); never in strict fp32, at stride 1 or a wider layer.
TEST(ConvSpaceToDepthCuda, AutoFoldsStridedFirstLayers) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle gpu(Device::kCUDA);
  auto folds = [&](const ConvProblem& pb, MathMode math, ConvPass pass) {
    const Descs ds = descs_in(pb, math);
    return conv_heuristic(gpu, ds.cd, ds.xd, ds.wd, ds.yd, pass) == ConvAlgo::kSpaceToDepth;
  };
  const ConvProblem caffenet{"caffenet:conv1", 256, 3, 227, 227, 96, 11, 11, 0, 0, 4, 4};
  const ConvProblem resnet{"resnet50:conv1", 128, 3, 224, 224, 64, 7, 7, 3, 3, 2, 2};
  for (MathMode math : kTensorCoreMaths)
    for (ConvPass pass : {ConvPass::kFwd, ConvPass::kBwdData, ConvPass::kBwdFilter}) {
      const bool tf32 = math == MathMode::kTF32;
      EXPECT_EQ(folds(caffenet, math, pass), !tf32 || pass != ConvPass::kBwdFilter)
          << math_name(math) << " pass " << int(pass);
      EXPECT_EQ(folds(resnet, math, pass), !tf32) << math_name(math) << " pass " << int(pass);
    }
  EXPECT_FALSE(folds(caffenet, MathMode::kFP32, ConvPass::kFwd));
  const ConvProblem small{"caffenet:conv1", 8, 3, 227, 227, 96, 11, 11, 0, 0, 4, 4};
  EXPECT_FALSE(folds(small, MathMode::kBF16, ConvPass::kFwd)) << "24,200 output points";
  const ConvProblem stride1{"cifar10_quick:conv1", 100, 3, 32, 32, 32, 5, 5, 2, 2, 1, 1};
  EXPECT_FALSE(folds(stride1, MathMode::kBF16, ConvPass::kFwd));
  const ConvProblem wide{"resnet50:res3a_branch1", 64, 256, 56, 56, 512, 1, 1, 0, 0, 2, 2};
  EXPECT_FALSE(folds(wide, MathMode::kBF16, ConvPass::kFwd));
}

}  // namespace
}  // namespace crema::prim
