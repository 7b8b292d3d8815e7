// kAuto's choice of convolution row on CUDA (conv_heuristic), per math mode, pass and shape: the
// rules docs/primitives.md states, which the benchmarks behind them measured. That every row
// computes the same convolution is conv_cuda_test.cpp's part.
#include <gtest/gtest.h>

#include <string>

#include "cuda_test_util.h"
#include "primitives/conv.h"
#include "problems.h"

namespace crema::prim {
namespace {

using test::Descs;
using test::descs_of;

// conv_test.cpp's ConvTable.HugePlanesGoToTheDirectRow on CUDA: a 46341 x 46341 plane (2^31
// elements and more) is refused by every GEMM row, in strict fp32 and TF32 math.
TEST(ConvCuda, HugePlanesGoToTheDirectRow) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle gpu(Device::kCUDA);
  for (const int r : {1, 3})
    for (const MathMode math : {MathMode::kFP32, MathMode::kTF32}) {
      Descs ds =
          descs_of({"huge_plane", 1, 1, 46341, 46341, 2, r, r, 0, 0, 1, 1}, DataType::kFloat32);
      ds.cd.math = math;
      for (const ConvPass pass : {ConvPass::kFwd, ConvPass::kBwdData, ConvPass::kBwdFilter})
        EXPECT_EQ(conv_heuristic(gpu, ds.cd, ds.xd, ds.wd, ds.yd, pass), ConvAlgo::kDirect)
            << r << " " << math_name(math);
    }
}

// The backward filter of a layer of at most 2^28 multiply-adds with up to 4 input channels,
// stride 1, 3 to 7 tall, f32 or f64 tensors, in strict fp32 or TF32 math, goes to the direct
// row's tiled kernel: LeNet's and CIFAR-10 quick's first layers at their training batches. Not
// LeNet's second (20 channels), backward data, BF16 math, bf16 tensors, a larger batch, a strided
// layer or an output plane over 64 x 64.
TEST(ConvCuda, SmallLayersBackwardFilterGoesToTheDirectRow) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle gpu(Device::kCUDA);
  auto pick = [&](const test::ConvProblem& pb, ConvPass pass, MathMode math, DataType t) {
    Descs ds = descs_of(pb, t);
    if (t == DataType::kBFloat16) ds.wd.dtype = DataType::kFloat32;  // bf16 data, f32 filters
    ds.cd.math = math;
    return conv_heuristic(gpu, ds.cd, ds.xd, ds.wd, ds.yd, pass);
  };
  const test::ConvProblem small[] = {{"lenet:conv1", 64, 1, 28, 28, 20, 5, 5, 0, 0, 1, 1},
                                     {"cifar10_quick:conv1", 100, 3, 32, 32, 32, 5, 5, 2, 2, 1, 1}};
  for (const test::ConvProblem& pb : small) {
    for (const MathMode math : {MathMode::kFP32, MathMode::kTF32}) {
      EXPECT_EQ(pick(pb, ConvPass::kBwdFilter, math, DataType::kFloat32), ConvAlgo::kDirect)
          << pb.name << " " << math_name(math);
      EXPECT_NE(pick(pb, ConvPass::kBwdData, math, DataType::kFloat32), ConvAlgo::kDirect)
          << pb.name;
    }
    EXPECT_EQ(pick(pb, ConvPass::kBwdFilter, MathMode::kFP32, DataType::kFloat64),
              ConvAlgo::kDirect)
        << pb.name;
    EXPECT_NE(pick(pb, ConvPass::kBwdFilter, MathMode::kBF16, DataType::kFloat32),
              ConvAlgo::kDirect)
        << pb.name;
    EXPECT_NE(pick(pb, ConvPass::kBwdFilter, MathMode::kBF16, DataType::kBFloat16),
              ConvAlgo::kDirect)
        << pb.name;
  }
  // The forward of a first layer of at most 2^25 multiply-adds (LeNet's conv1, 18.4 M; not
  // CIFAR-10 quick's, 246 M) goes to the direct row's staged kernel.
  for (const MathMode math : {MathMode::kFP32, MathMode::kTF32}) {
    EXPECT_EQ(pick(small[0], ConvPass::kFwd, math, DataType::kFloat32), ConvAlgo::kDirect);
    EXPECT_NE(pick(small[1], ConvPass::kFwd, math, DataType::kFloat32), ConvAlgo::kDirect);
  }
  EXPECT_EQ(pick(small[0], ConvPass::kFwd, MathMode::kFP32, DataType::kFloat64), ConvAlgo::kDirect);
  EXPECT_NE(pick(small[0], ConvPass::kFwd, MathMode::kBF16, DataType::kFloat32), ConvAlgo::kDirect);
  const test::ConvProblem other[] = {{"lenet:conv2", 64, 20, 12, 12, 50, 5, 5, 0, 0, 1, 1},
                                     {"big_batch", 1024, 3, 32, 32, 32, 5, 5, 2, 2, 1, 1},
                                     {"strided", 64, 1, 28, 28, 20, 5, 5, 0, 0, 2, 2},
                                     {"large_plane", 2, 1, 100, 100, 2, 3, 3, 1, 1, 1, 1}};
  for (const test::ConvProblem& pb : other)
    EXPECT_NE(pick(pb, ConvPass::kBwdFilter, MathMode::kFP32, DataType::kFloat32),
              ConvAlgo::kDirect)
        << pb.name;
}

// kAuto in tensor-core math sends such layers to the implicit GEMM (its Hopper row where it
// runs), but for TF32 backward filter of ungrouped layers that the Hopper row's kernel over
// padded planes does not take; strict fp32 stays on im2col or Winograd.
TEST(ConvCuda, HeuristicPicksTheImplicitGemmForTensorCoreMath) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle gpu(Device::kCUDA);
  Descs ds = descs_of({"h", 1024, 16, 9, 9, 32, 3, 3, 1, 1, 1, 1}, DataType::kFloat32);
  auto pick = [&](ConvPass pass) { return conv_heuristic(gpu, ds.cd, ds.xd, ds.wd, ds.yd, pass); };
  for (MathMode math : {MathMode::kTF32, MathMode::kBF16, MathMode::kFP16}) {
    ds.cd.math = math;
    // On compute capability 9.0 (a build with sm_90a code) the Hopper row.
    const ConvAlgo tensor_cores =
        conv_supports(gpu, ConvAlgo::kImplicitGemmSm90, ds.cd, ds.xd, ds.wd, ds.yd)
            ? ConvAlgo::kImplicitGemmSm90
            : ConvAlgo::kImplicitGemm;
    EXPECT_EQ(pick(ConvPass::kFwd), tensor_cores);
    EXPECT_EQ(pick(ConvPass::kBwdData), tensor_cores);
    EXPECT_EQ(pick(ConvPass::kBwdFilter),
              math == MathMode::kTF32 ? ConvAlgo::kIm2colGemm : tensor_cores);
  }
  // In TF32 a problem of fewer than 64 of the path's tiles goes to im2col (LeNet's conv2: 32);
  // one of 64 stays.
  ds = descs_of({"lenet:conv2", 64, 20, 12, 12, 50, 5, 5, 0, 0, 1, 1}, DataType::kFloat32);
  ds.cd.math = MathMode::kTF32;
  EXPECT_EQ(pick(ConvPass::kFwd), ConvAlgo::kIm2colGemm);
  ds = descs_of({"128_of_8x8", 128, 20, 12, 12, 50, 5, 5, 0, 0, 1, 1}, DataType::kFloat32);
  ds.cd.math = MathMode::kTF32;
  EXPECT_NE(pick(ConvPass::kFwd), ConvAlgo::kIm2colGemm);
  ds = descs_of({"h_grouped", 1024, 32, 9, 9, 64, 3, 3, 1, 1, 1, 1, 1, 1, 2}, DataType::kFloat32);
  ds.cd.math = MathMode::kTF32;
  EXPECT_TRUE(pick(ConvPass::kBwdFilter) == ConvAlgo::kImplicitGemm ||
              pick(ConvPass::kBwdFilter) == ConvAlgo::kImplicitGemmSm90);
  // A stride-1 TF32 backward filter wider than 1x1 whose channels fill 8-row boxes goes to the
  // Hopper row's kernel over padded planes, ungrouped too; without it, to im2col.
  ds = descs_of({"h_planes", 64, 64, 13, 13, 128, 3, 3, 1, 1, 1, 1}, DataType::kFloat32);
  ds.cd.math = MathMode::kTF32;
  EXPECT_EQ(pick(ConvPass::kBwdFilter),
            conv_supports(gpu, ConvAlgo::kImplicitGemmSm90, ds.cd, ds.xd, ds.wd, ds.yd)
                ? ConvAlgo::kImplicitGemmSm90
                : ConvAlgo::kIm2colGemm);
  ds = descs_of({"h_grouped", 1024, 32, 9, 9, 64, 3, 3, 1, 1, 1, 1, 1, 1, 2}, DataType::kFloat32);
  ds.cd.math = MathMode::kFP32;
  EXPECT_EQ(pick(ConvPass::kFwd), ConvAlgo::kIm2colGemm);  // 16 input channels a group
  // Strict fp32, 3x3 stride 1, at least 32 channels in and out a group: Winograd, every pass;
  // not on f64 tensors, nor strided.
  ds = descs_of({"h_winograd", 1024, 64, 9, 9, 64, 3, 3, 1, 1, 1, 1, 1, 1, 2}, DataType::kFloat32);
  for (ConvPass pass : {ConvPass::kFwd, ConvPass::kBwdData, ConvPass::kBwdFilter})
    EXPECT_EQ(pick(pass), ConvAlgo::kWinograd);
  ds = descs_of({"h_winograd", 1024, 64, 9, 9, 64, 3, 3, 1, 1, 1, 1, 1, 1, 2}, DataType::kFloat64);
  EXPECT_EQ(pick(ConvPass::kFwd), ConvAlgo::kIm2colGemm);
  ds = descs_of({"h_winograd_s2", 1024, 64, 9, 9, 64, 3, 3, 1, 1, 2, 2}, DataType::kFloat32);
  EXPECT_EQ(pick(ConvPass::kFwd), ConvAlgo::kIm2colGemm);
  // 1x1 without padding: the 1x1 GEMM row on planes of 100 values and more. In BF16 on the
  // Hopper row, strided ones go to it forward and backward filter, as do planes under 100
  // values and backward filter up to 14x14; strided backward data onto planes of fewer than 64
  // values goes to im2col on f32 tensors, to the 1x1 row on bf16 ones (which it runs as stored).
  ds = descs_of({"h_1x1", 2, 32, 20, 20, 64, 1, 1, 0, 0, 1, 1}, DataType::kFloat32);
  ds.cd.math = MathMode::kBF16;
  for (ConvPass pass : {ConvPass::kFwd, ConvPass::kBwdData, ConvPass::kBwdFilter})
    EXPECT_EQ(pick(pass), ConvAlgo::kGemm1x1);
  const bool hopper = conv_supports(gpu, ConvAlgo::kImplicitGemmSm90, ds.cd, ds.xd, ds.wd, ds.yd);
  const ConvAlgo nhwc_1x1 = hopper ? ConvAlgo::kImplicitGemmSm90 : ConvAlgo::kGemm1x1;
  ds = descs_of({"h_1x1_s2", 2, 32, 20, 20, 64, 1, 1, 0, 0, 2, 2}, DataType::kFloat32);
  ds.cd.math = MathMode::kBF16;
  EXPECT_EQ(pick(ConvPass::kFwd), nhwc_1x1);
  EXPECT_EQ(pick(ConvPass::kBwdData), ConvAlgo::kGemm1x1);
  EXPECT_EQ(pick(ConvPass::kBwdFilter), nhwc_1x1);
  ds = descs_of({"h_1x1_small", 2, 32, 14, 14, 64, 1, 1, 0, 0, 2, 2}, DataType::kFloat32);
  ds.cd.math = MathMode::kBF16;
  EXPECT_EQ(pick(ConvPass::kFwd), hopper ? nhwc_1x1 : ConvAlgo::kIm2colGemm);
  EXPECT_EQ(pick(ConvPass::kBwdData), ConvAlgo::kIm2colGemm);
  ds = descs_of({"h_1x1_small", 2, 32, 14, 14, 64, 1, 1, 0, 0, 2, 2}, DataType::kBFloat16);
  ds.wd.dtype = DataType::kFloat32;
  ds.cd.math = MathMode::kBF16;
  EXPECT_EQ(pick(ConvPass::kBwdData), ConvAlgo::kGemm1x1);
  ds = descs_of({"h_1x1_7x7", 2, 64, 7, 7, 32, 1, 1, 0, 0, 1, 1}, DataType::kFloat32);
  ds.cd.math = MathMode::kBF16;
  for (ConvPass pass : {ConvPass::kFwd, ConvPass::kBwdData, ConvPass::kBwdFilter})
    EXPECT_EQ(pick(pass), nhwc_1x1);
  ds = descs_of({"h_1x1_14x14", 2, 64, 14, 14, 32, 1, 1, 0, 0, 1, 1}, DataType::kFloat32);
  ds.cd.math = MathMode::kBF16;
  EXPECT_EQ(pick(ConvPass::kFwd), ConvAlgo::kGemm1x1);
  EXPECT_EQ(pick(ConvPass::kBwdFilter), nhwc_1x1);
  ds.cd.math = MathMode::kTF32;
  EXPECT_EQ(pick(ConvPass::kBwdFilter), ConvAlgo::kGemm1x1);
  // 3 input channels, which the NHWC path pads to a piece: there in BF16 with 2^18 output
  // points or more, forward and backward filter; else, and for backward data (3 output
  // columns), im2col.
  for (int n : {2, 8}) {
    ds = descs_of({"c3", n, 3, 226, 226, 32, 3, 3, 1, 1, 1, 1}, DataType::kFloat32);
    for (MathMode math : {MathMode::kTF32, MathMode::kBF16}) {
      ds.cd.math = math;
      const bool padded = math == MathMode::kBF16 && n == 8;
      const ConvAlgo tensor_cores =
          conv_supports(gpu, ConvAlgo::kImplicitGemmSm90, ds.cd, ds.xd, ds.wd, ds.yd)
              ? ConvAlgo::kImplicitGemmSm90
              : ConvAlgo::kImplicitGemm;
      EXPECT_EQ(pick(ConvPass::kFwd), padded ? tensor_cores : ConvAlgo::kIm2colGemm) << n;
      EXPECT_EQ(pick(ConvPass::kBwdData), ConvAlgo::kIm2colGemm) << n;
      EXPECT_EQ(pick(ConvPass::kBwdFilter), padded ? tensor_cores : ConvAlgo::kIm2colGemm) << n;
    }
  }
}

}  // namespace
}  // namespace crema::prim
