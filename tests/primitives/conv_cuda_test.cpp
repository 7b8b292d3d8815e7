// Convolution on CUDA against the CPU implementation: every algorithm that supports a problem
// (plus auto and find), forward plain / blended with bias and ReLU / with bias, backward data
// and filter plain and blended, backward bias, f32 and f64, on hand-picked corner cases, random
// shapes and the named real layers; NHWC and channel-slice views; image chunking by workspace
// budget; the workspace query; find's cache (kAuto's choices: conv_heuristic_cuda_test.cpp).
// Integer data makes every sum exact in float, so results must match the CPU exactly whatever the
// summation order; one real-valued problem checks rounding within a tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "conv_cuda_harness.h"
#include "cuda_test_util.h"
#include "primitives/common/dtype_visit.h"
#include "primitives/conv.h"
#include "problems.h"
#include "winograd_tolerance.h"

namespace crema::prim {
namespace {

using test::ConvProblem;
using test::Descs;
using test::descs_of;
using test::random_problems;
using test::unit_problems;

using namespace conv_harness;

class ConvCudaProblem : public ::testing::TestWithParam<ConvProblem> {};

TEST_P(ConvCudaProblem, EveryAlgorithmMatchesCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  check_problem<float>(GetParam(), true, kExact);
  check_problem<double>(GetParam(), true, kExact);
}

INSTANTIATE_TEST_SUITE_P(Cases, ConvCudaProblem, ::testing::ValuesIn(test::conv_cases()),
                         test::ParamName());

// Tensor-core math: integers in [-3, 3] are exact in TF32, BF16 and FP16 and their sums exact in
// the fp32 accumulator, so every math mode must match the CPU exactly. Real-valued data: each
// input rounds to the format's unit roundoff u (TF32 and FP16 2^-11, BF16 2^-8), so a sum of K
// products of values in [-1, 1] drifts by about u * sqrt(K); allow 8 times that at the deepest
// sum of the problem (its backward filter, K = N*P*Q).
TEST(ConvCuda, TensorCoreMathMatchesCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  const ConvProblem grouped{"math_grouped", 3, 8, 11, 13, 6, 3, 3, 1, 1, 1, 2, 1, 1, 2};
  const ConvProblem one{"math_1x1", 4, 16, 9, 9, 24, 1, 1, 0, 0, 1, 1};
  for (MathMode math : {MathMode::kTF32, MathMode::kBF16, MathMode::kFP16}) {
    for (const ConvProblem& pb : unit_problems())
      check_problem<float>(pb, true, kExact, 0, kEveryAlgo, math);
    check_problem<float>(test::named_conv_problems()[0], true, kExact, 0, kEveryAlgo, math);
    const double u = math == MathMode::kBF16 ? 0x1p-8 : 0x1p-11;
    for (const ConvProblem& pb : {grouped, one}) {
      const Descs ds = descs_of(pb, DataType::kFloat32);
      const double depth = double(ds.yd.n) * ds.yd.h * ds.yd.w;
      check_problem<float>(pb, false, {8 * u * std::sqrt(depth), 0, true}, 0, kEveryAlgo, math);
    }
    // f64 data computes strictly whatever the math mode.
    check_problem<double>(grouped, false, {1e-12, 1e-10, true}, 0, kEveryAlgo, math);
  }
}

// Real-valued data: the GEMMs round differently from OpenBLAS, so compare within a tolerance.
TEST(ConvCuda, RealInputsWithinTolerance) {
  CREMA_SKIP_WITHOUT_GPU();
  const ConvProblem grouped{"real_grouped", 3, 8, 11, 13, 6, 3, 3, 1, 1, 1, 2, 1, 1, 2};
  check_problem<float>(grouped, false, {1e-5, 1e-5, true});
  check_problem<double>(grouped, false, {1e-12, 1e-10, true});
  // Sums of thousands of terms of magnitude up to tens: absolute rounding differences of float
  // sums in different orders reach about 1e-4.
  for (const ConvProblem& pb : test::named_conv_problems()) {
    const std::string name = pb.name;
    if (name.rfind("lenet", 0) == 0 || name.rfind("mobilenet", 0) == 0)
      check_problem<float>(pb, false, {1e-3, 1e-4, true});
  }
}

// Each block of `block` values of v, twice in a row.
template <typename T>
std::vector<T> each_block_twice(const std::vector<T>& v, size_t block) {
  std::vector<T> out;
  for (size_t at = 0; at < v.size(); at += block)
    for (int copy = 0; copy < 2; ++copy)
      out.insert(out.end(), v.begin() + long(at), v.begin() + long(at + block));
  return out;
}

// The direct row's forward stages small ungrouped layers in shared memory and runs others with a
// thread per output; both add the same taps in the same order with the same roundings. A layer
// (staged) and the grouped layer of two copies of it over its input twice (plain kernel) give the
// same bits, real data, blended, with bias and ReLU.
TEST(ConvCuda, DirectForwardStagedEqualsPlain) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle gpu(Device::kCUDA);
  const ConvProblem cases[] = {{"lenet:conv1", 3, 1, 28, 28, 20, 5, 5, 0, 0, 1, 1},
                               {"strided_dilated", 2, 3, 13, 11, 6, 3, 2, 2, 1, 2, 1, 2, 1},
                               {"many_pixels", 1, 2, 40, 37, 5, 3, 3, 1, 1, 1, 1}};
  for (const ConvProblem& one : cases) {
    SCOPED_TRACE(one.name);
    ConvProblem two = one;
    two.c *= 2, two.k *= 2, two.groups = 2;
    const Descs a = descs_of(one, DataType::kFloat32), b = descs_of(two, DataType::kFloat32);
    const Data<float> d = make_data<float>(a, 77, false);
    const size_t x_image = size_t(a.xd.c) * a.xd.h * a.xd.w,
                 y_image = size_t(a.yd.c) * a.yd.h * a.yd.w;
    auto run = [&](const Descs& ds, const std::vector<float>& x, const std::vector<float>& w,
                   const std::vector<float>& bias, const std::vector<float>& y0) {
      const DeviceBuffer gx = to_gpu(x), gw = to_gpu(w), gb = to_gpu(bias);
      DeviceBuffer gy = to_gpu(y0);
      conv_fwd(gpu, ds.cd, ConvAlgo::kDirect, ds.xd, gx.get(), ds.wd, gw.get(), ds.yd, gy.get(),
               Blend{2.0, 1.0}, ConvEpilogue{gb.get(), true});
      return from_gpu<float>(gpu, gy, y0.size());
    };
    const std::vector<float> staged = run(a, d.x, d.w, d.bias, d.y0);
    const std::vector<float> plain =
        run(b, each_block_twice(d.x, x_image), each_block_twice(d.w, d.w.size()),
            each_block_twice(d.bias, d.bias.size()), each_block_twice(d.y0, y_image));
    EXPECT_EQ(plain, each_block_twice(staged, y_image));
  }
}

// Workspace budgets that force chunks of several images, then one image at a time.
TEST(ConvCuda, ChunkedByWorkspaceBudget) {
  CREMA_SKIP_WITHOUT_GPU();
  const ConvProblem pb{"lenet:conv2", 64, 20, 12, 12, 50, 5, 5, 0, 0, 1, 1};
  const size_t per_image = (20 * 25 + 50) * 8 * 8 * sizeof(float);
  for (size_t budget : {5 * per_image, size_t(1)}) {
    SCOPED_TRACE(::testing::Message() << "budget " << budget);
    check_problem<float>(pb, true, kExact, budget);
  }
}

// Grouped layers over batches of several images, with budgets that give chunks of one, two,
// three and all images (and remainders): the per-image and the side-by-side GEMM layouts must
// place every group of every image. caffenet:conv2 at batch 8 once went wrong on the GPU here.
TEST(ConvCuda, GroupedBatchesInChunks) {
  CREMA_SKIP_WITHOUT_GPU();
  const ConvProblem conv2{"caffenet:conv2", 8, 96, 27, 27, 256, 5, 5, 2, 2, 1, 1, 1, 1, 2};
  const size_t conv2_image = (96 * 25 + 256) * 27 * 27 * sizeof(float);
  // The budget chunks only the im2col GEMMs: the direct kernel and the search (which runs every
  // algorithm) would repeat, once per budget, what the named-problem test checks once; with them
  // this test ran past compute-sanitizer's time limit per test.
  for (int n : {8, 3, 5}) {
    ConvProblem pb = conv2;
    pb.n = n;
    for (size_t budget : {size_t(0), 2 * conv2_image, 3 * conv2_image, size_t(1)}) {
      SCOPED_TRACE(::testing::Message() << "batch " << n << " budget " << budget);
      check_problem<float>(pb, true, kExact, budget, {ConvAlgo::kIm2colGemm});
    }
  }
}

// The same on other group counts, kernel shapes and f64. (A test of its own: together with the
// caffenet:conv2 cases it ran past the sanitizer sweep's time limit per test.)
TEST(ConvCuda, GroupShapesInChunks) {
  CREMA_SKIP_WITHOUT_GPU();
  const ConvProblem groups3{"groups3_wide", 7, 12, 33, 35, 9, 3, 3, 1, 1, 1, 1, 1, 1, 3};
  const ConvProblem groups4{"groups4_small", 9, 16, 9, 8, 8, 3, 3, 1, 1, 2, 1, 1, 1, 4};
  const ConvProblem groups2_1x1{"groups2_1x1", 6, 8, 34, 33, 12, 1, 1, 0, 0, 1, 1, 1, 1, 2};
  for (const ConvProblem& pb : {groups3, groups4, groups2_1x1}) {
    const size_t image = (size_t(pb.c) * pb.r * pb.s + pb.k) * pb.h * pb.w * sizeof(double);
    for (size_t budget : {size_t(0), 2 * image, 4 * image, size_t(1)}) {
      SCOPED_TRACE(::testing::Message() << pb.name << " budget " << budget);
      check_problem<float>(pb, true, kExact, budget);
      check_problem<double>(pb, true, kExact, budget);
    }
  }
}

TEST(ConvCuda, WorkspaceSizeCoversTheChunk) {
  CREMA_SKIP_WITHOUT_GPU();
  const ConvProblem pb{"lenet:conv2", 64, 20, 12, 12, 50, 5, 5, 0, 0, 1, 1};
  const Descs ds = descs_of(pb, DataType::kFloat32);
  Handle gpu(Device::kCUDA);
  const size_t per_image = (20 * 25 + 50) * 8 * 8 * sizeof(float);
  gpu.set_workspace_budget(5 * per_image);
  EXPECT_EQ(conv_workspace_size(gpu, ConvAlgo::kIm2colGemm, ds.cd, ds.xd, ds.wd, ds.yd),
            5 * per_image);
  gpu.set_workspace_budget(size_t(1) << 30);
  EXPECT_EQ(conv_workspace_size(gpu, ConvAlgo::kIm2colGemm, ds.cd, ds.xd, ds.wd, ds.yd),
            64 * per_image);
  // A grouped convolution's backward filter splits its depth: the partials come on top. Two
  // groups of 6 -> 8 channels, 3x3: one 128x128 output tile per group, so the most slices (16)
  // of 16*6*9 floats each.
  const Descs grouped =
      descs_of({"g2", 4, 12, 10, 10, 16, 3, 3, 1, 1, 1, 1, 1, 1, 2}, DataType::kFloat32);
  const size_t grouped_image = (12 * 9 + 16) * 10 * 10 * sizeof(float);
  EXPECT_EQ(conv_workspace_size(gpu, ConvAlgo::kIm2colGemm, grouped.cd, grouped.xd, grouped.wd,
                                grouped.yd),
            4 * grouped_image + 16 * 16 * 6 * 9 * sizeof(float));
  // The direct row's backward filter (stride 1, 5x5, 8x8 plane: its tiled kernel) leaves a
  // partial filter per chunk of images: one an image, or as many as the budget holds.
  EXPECT_EQ(conv_workspace_size(gpu, ConvAlgo::kDirect, ds.cd, ds.xd, ds.wd, ds.yd),
            64 * 50 * 20 * 25 * sizeof(float));
  gpu.set_workspace_budget(10 * 50 * 20 * 25 * sizeof(float));
  EXPECT_EQ(conv_workspace_size(gpu, ConvAlgo::kDirect, ds.cd, ds.xd, ds.wd, ds.yd),
            10 * 50 * 20 * 25 * sizeof(float));
  gpu.set_workspace_budget(size_t(1) << 30);
  const Descs strided = descs_of({"s2", 2, 8, 9, 9, 4, 3, 3, 1, 1, 2, 2}, DataType::kFloat32);
  EXPECT_EQ(
      conv_workspace_size(gpu, ConvAlgo::kDirect, strided.cd, strided.xd, strided.wd, strided.yd),
      0u);
  // 1x1: only the backward filter needs scratch, here X and dY of both images side by side.
  const Descs one = descs_of({"1x1", 2, 8, 5, 5, 4, 1, 1, 0, 0, 1, 1}, DataType::kFloat32);
  EXPECT_EQ(conv_workspace_size(gpu, ConvAlgo::kGemm1x1, one.cd, one.xd, one.wd, one.yd),
            2 * (8 + 4) * 25 * sizeof(float));
  // A first layer's NHWC copy padded from 3 colours to 8 channels (CaffeNet's conv1 in BF16: 201
  // MiB for the batch) is made for slices of 22 images, forward and backward filter (whose dy copy,
  // from f32 NCHW here, and partial filters come on top): the workspace they leave on a new handle.
  Descs conv1 =
      descs_of({"caffenet:conv1", 256, 3, 227, 227, 96, 11, 11, 0, 0, 4, 4}, DataType::kFloat32);
  conv1.cd.math = MathMode::kBF16;
  {
    Handle sliced(Device::kCUDA);
    const DeviceBuffer x(Device::kCUDA, size_t(conv1.xd.count()) * sizeof(float));
    const DeviceBuffer w(Device::kCUDA, size_t(conv1.wd.count()) * sizeof(float));
    const DeviceBuffer y(Device::kCUDA, size_t(conv1.yd.count()) * sizeof(float));
    conv_fwd(sliced, conv1.cd, ConvAlgo::kImplicitGemm, conv1.xd, x.get(), conv1.wd, w.get(),
             conv1.yd, y.get());
    conv_bwd_filter(sliced, conv1.cd, ConvAlgo::kImplicitGemm, conv1.xd, x.get(), conv1.yd, y.get(),
                    conv1.wd, w.get());
    const size_t batch_copy = size_t(256) * 8 * 227 * 227 * 2;
    EXPECT_GE(sliced.workspace_size(), batch_copy / 256 * 22);
    EXPECT_LT(sliced.workspace_size(), batch_copy / 3);
  }
  Handle fresh(Device::kCUDA);
  EXPECT_EQ(fresh.workspace_budget(), size_t(512) << 20);
  // Depthwise goes to the direct kernel on CUDA.
  const Descs dw = descs_of(test::named_conv_problems().back(), DataType::kFloat32);
  EXPECT_EQ(conv_heuristic(gpu, dw.cd, dw.xd, dw.wd, dw.yd), ConvAlgo::kDirect);
}

// NHWC views through `nhwc_algo` (kAuto sends them to the direct kernels), and a channel slice
// of a wider output through each of `slice_algos`, which leaves the other channels untouched.
void check_views(ConvAlgo nhwc_algo, const std::vector<ConvAlgo>& slice_algos, MathMode math,
                 const ConvProblem& pb = {"strided", 2, 4, 7, 6, 5, 3, 3, 1, 1, 1, 1}) {
  SCOPED_TRACE(::testing::Message() << math_name(math) << " " << pb.name);
  Descs ds = descs_of(pb, DataType::kFloat32);
  ds.cd.math = math;
  const Data<float> d = make_data<float>(ds, 99, true);
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  auto nhwc = [](TensorDesc t) {
    t.stride_c = 1;
    t.stride_w = t.c;
    t.stride_h = int64_t(t.w) * t.c;
    t.stride_n = int64_t(t.h) * t.w * t.c;
    return t;
  };
  const TensorDesc xn = nhwc(ds.xd), yn = nhwc(ds.yd);
  // The same buffers read as NHWC: only the index map changes, which both sides share.
  const size_t ny = size_t(ds.yd.count()), nx = size_t(ds.xd.count());
  DeviceBuffer gx = to_gpu(d.x), gw = to_gpu(d.w), gdy = to_gpu(d.dy);
  std::vector<float> y(ny);
  conv_fwd(cpu, ds.cd, ConvAlgo::kAuto, xn, d.x.data(), ds.wd, d.w.data(), yn, y.data());
  DeviceBuffer gy = to_gpu(test::poisoned<float>(ny));
  conv_fwd(gpu, ds.cd, nhwc_algo, xn, gx.get(), ds.wd, gw.get(), yn, gy.get());
  EXPECT_TRUE(all_close(from_gpu<float>(gpu, gy, ny), y, kExact)) << "nhwc forward";
  std::vector<float> dx = d.dx0;
  conv_bwd_data(cpu, ds.cd, ConvAlgo::kAuto, ds.wd, d.w.data(), yn, d.dy.data(), xn, dx.data(),
                {2.0, 3.0});
  DeviceBuffer gdx = to_gpu(d.dx0);
  conv_bwd_data(gpu, ds.cd, nhwc_algo, ds.wd, gw.get(), yn, gdy.get(), xn, gdx.get(), {2.0, 3.0});
  EXPECT_TRUE(all_close(from_gpu<float>(gpu, gdx, nx), dx, kExact)) << "nhwc backward data";
  std::vector<float> dw(size_t(ds.wd.count()));
  conv_bwd_filter(cpu, ds.cd, ConvAlgo::kAuto, xn, d.x.data(), yn, d.dy.data(), ds.wd, dw.data());
  DeviceBuffer gdw = to_gpu(test::poisoned<float>(dw.size()));
  conv_bwd_filter(gpu, ds.cd, nhwc_algo, xn, gx.get(), yn, gdy.get(), ds.wd, gdw.get());
  EXPECT_TRUE(all_close(from_gpu<float>(gpu, gdw, dw.size()), dw, kExact)) << "nhwc filter";
  std::vector<float> db(size_t(pb.k));
  conv_bwd_bias(cpu, yn, d.dy.data(), db.data());
  DeviceBuffer gdb = to_gpu(test::poisoned<float>(db.size()));
  conv_bwd_bias(gpu, yn, gdy.get(), gdb.get());
  EXPECT_TRUE(all_close(from_gpu<float>(gpu, gdb, db.size()), db, kExact)) << "nhwc bias";

  // Output channels [k, 2k) of a 2k-channel tensor, and the matching input-gradient slice.
  TensorDesc slice = ds.yd;
  slice.stride_n *= 2;
  TensorDesc xslice = ds.xd;
  xslice.stride_n *= 2;
  const int64_t plane = int64_t(pb.k) * ds.yd.h * ds.yd.w, xplane = int64_t(pb.c) * pb.h * pb.w;
  for (ConvAlgo algo : slice_algos) {
    SCOPED_TRACE(conv_algo_name(algo));
    std::vector<float> wide(2 * ny, 7.0f);
    conv_fwd(cpu, ds.cd, ConvAlgo::kAuto, ds.xd, d.x.data(), ds.wd, d.w.data(), slice,
             wide.data() + plane, {}, {d.bias.data(), true});
    DeviceBuffer gwide = to_gpu(std::vector<float>(2 * ny, 7.0f)), gb = to_gpu(d.bias);
    conv_fwd(gpu, ds.cd, algo, ds.xd, gx.get(), ds.wd, gw.get(), slice,
             static_cast<float*>(gwide.get()) + plane, {}, {gb.get(), true});
    EXPECT_TRUE(all_close(from_gpu<float>(gpu, gwide, wide.size()), wide, kExact))
        << "slice forward";
    std::vector<float> xwide(2 * nx, 7.0f);
    conv_bwd_data(cpu, ds.cd, ConvAlgo::kAuto, ds.wd, d.w.data(), ds.yd, d.dy.data(), xslice,
                  xwide.data() + xplane);
    DeviceBuffer gxwide = to_gpu(std::vector<float>(2 * nx, 7.0f));
    conv_bwd_data(gpu, ds.cd, algo, ds.wd, gw.get(), ds.yd, gdy.get(), xslice,
                  static_cast<float*>(gxwide.get()) + xplane);
    EXPECT_TRUE(all_close(from_gpu<float>(gpu, gxwide, xwide.size()), xwide, kExact))
        << "slice backward data";
  }
}

TEST(ConvCuda, NhwcAndChannelSliceViews) {
  CREMA_SKIP_WITHOUT_GPU();
  check_views(ConvAlgo::kAuto, {ConvAlgo::kIm2colGemm, ConvAlgo::kDirect}, MathMode::kFP32);
}

// The implicit GEMM reads any strides: NHWC and slices, exactly on integer data.
TEST(ConvCuda, ImplicitGemmViews) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle gpu(Device::kCUDA);
  Descs probe = descs_of({"probe", 1, 4, 7, 6, 5, 3, 3, 1, 1, 1, 1}, DataType::kFloat32);
  for (MathMode math : {MathMode::kTF32, MathMode::kBF16, MathMode::kFP16})
    for (ConvAlgo row : kImplicitRows) {
      probe.cd.math = math;
      if (conv_supports(gpu, row, probe.cd, probe.xd, probe.wd, probe.yd)) {
        check_views(row, {row}, math);
        // Channels in whole k-tiles (the Hopper row's TMA kernel), an odd output plane: slices
        // that start mid-pack, runs of rows that cross images.
        check_views(row, {row}, math, {"tma_views", 2, 64, 7, 5, 65, 3, 3, 1, 1, 1, 1});
      }
    }
}

// Random shapes (odd sizes, N = 1, groups, depthwise, stride, dilation, pad) through the
// implicit GEMM in each tensor-core math: integer data, so exact.
TEST(ConvCuda, ImplicitGemmRandomProblems) {
  CREMA_SKIP_WITHOUT_GPU();
  for (MathMode math : {MathMode::kTF32, MathMode::kBF16, MathMode::kFP16})
    for (const ConvProblem& pb : random_problems(40, 2026))
      check_problem<float>(pb, true, kExact, 0, kImplicitRows, math);
}

// Channels per group that fill 16-byte pieces (4 TF32 or 8 BF16/FP16 values): forward,
// stride-1 backward data and backward filter take the NHWC path, in tiles of 128 or (where a
// group has no more) 64 output channels. Several row and column tiles, more k-tiles than
// pipeline stages, a partial last k-tile, groups, stride and dilation, a backward-filter depth
// split over many blocks with a short last split; ungrouped layers with fewer input channels
// than a piece (1, 3, 5), whose copies are padded with zeros to one, forward and backward filter,
// and a batch of them whose copy passes 16 MiB, run in slices of images (the last one shorter);
// exact on integers, within the rounding bound on real values. On compute capability 9.0 the
// Hopper row's TMA kernel takes those with whole 128-byte k-tiles of inner channels (or an
// ungrouped layer's channels padded by at most a third): row tiles that start mid-row and cross
// images, zero padding at every edge and past the last image, grouped filter tiles that run into
// the next group, traversal strides, dilated taps, asymmetric and zero padding, backward data's
// flipped taps (dilated too); and backward filter's: a depth split with a short last split, a
// depth that ends mid-k-tile, fewer k-tiles than stages, a last column tile of one box, a
// group's channels padded with the next group's (columns computed and dropped). A problem big
// enough for the TMA kernel's 256-row tiles (360 blocks of them, two per SM up to 180 SMs),
// whose last tile's second warpgroup has no rows.
TEST(ConvCuda, ImplicitGemmNhwcPath) {
  CREMA_SKIP_WITHOUT_GPU();
  const std::vector<ConvProblem> problems = {
      {"i16_3x3", 2, 32, 15, 13, 48, 3, 3, 1, 1, 1, 1},
      {"i16_grouped_5x5", 2, 32, 9, 11, 32, 5, 5, 2, 2, 1, 1, 1, 1, 2},
      {"i16_strided_dilated", 3, 16, 17, 14, 24, 3, 3, 2, 1, 2, 2, 2, 1},
      {"i16_deep_wide", 1, 64, 8, 8, 136, 3, 3, 1, 1, 1, 1},
      {"i16_many_rows", 4, 8, 20, 20, 8, 3, 3, 1, 1, 1, 1},
      {"i16_long_depth", 4, 16, 30, 30, 136, 3, 3, 1, 1, 1, 1},
      {"i16_wide_input", 2, 80, 9, 9, 72, 3, 3, 1, 1, 1, 1},
      {"i16_1x1_stride2", 2, 64, 15, 13, 136, 1, 1, 0, 0, 2, 2},
      {"i16_rgb_11x11_stride4", 2, 3, 39, 35, 96, 11, 11, 2, 2, 4, 4},
      {"i16_rgb_7x7_stride2", 3, 3, 23, 20, 64, 7, 7, 3, 3, 2, 2},
      {"i16_gray_5x5", 2, 1, 16, 16, 24, 5, 5, 0, 0, 1, 1},
      {"i16_five_3x3", 2, 5, 12, 9, 16, 3, 3, 1, 1, 1, 1},
      {"i16_rgb_batch_in_slices", 25, 3, 227, 227, 16, 11, 11, 0, 0, 4, 4},
      {"tma_grouped_strided_dilated", 3, 128, 13, 11, 200, 3, 3, 2, 1, 2, 1, 2, 1, 2},
      {"tma_no_pad", 2, 64, 10, 9, 64, 3, 3, 0, 0, 1, 1},
      {"tma_5x5_padded_channels", 3, 96, 9, 12, 72, 5, 5, 1, 2, 1, 1},
      {"tma_deep", 2, 128, 7, 7, 192, 3, 3, 1, 1, 1, 1},
      {"tma_dilated", 2, 64, 11, 10, 64, 3, 3, 2, 2, 1, 1, 2, 2},
      {"tma_long_depth", 4, 64, 30, 30, 72, 3, 3, 1, 1, 1, 1},
      {"tma_grouped_padded", 2, 96, 9, 8, 64, 3, 3, 1, 1, 1, 1, 1, 1, 2},
      {"tma_256_row_tiles", 5, 64, 96, 96, 256, 3, 3, 1, 1, 1, 1},
  };
  for (MathMode math : {MathMode::kTF32, MathMode::kBF16, MathMode::kFP16}) {
    for (const ConvProblem& pb : problems)
      check_problem<float>(pb, true, kExact, 0,
                           {ConvAlgo::kImplicitGemm, ConvAlgo::kImplicitGemmSm90, ConvAlgo::kAuto},
                           math);
    const double u = math == MathMode::kBF16 ? 0x1p-8 : 0x1p-11;
    const ConvProblem& deep = problems[3];
    const double depth = 9.0 * deep.c;
    check_problem<float>(deep, false, {8 * u * std::sqrt(depth), 0, true}, 0, kImplicitRows, math);
  }
}

// TF32 backward filter over padded planes (the Hopper row's, stride 1, channels of a group a
// multiple of 8): row tiles that cross taps and a short last one (48 channels x 25 taps = 1200
// rows), two column tiles of 192 (384 output channels), a group's 48 columns in a 64-wide tile
// that runs into the next group's rows (and past the last one), dilation with asymmetric
// padding, no padding with N = 1 and an odd plane whose copies' depth ends mid-k-tile, 1x1, and a
// depth split over many blocks with a short last split; exact on integers, within the rounding
// bound on real values. Elsewhere (no Hopper GPU) the same problems check the other rows.
TEST(ConvCuda, WgradPlanes) {
  CREMA_SKIP_WITHOUT_GPU();
  const std::vector<ConvProblem> problems = {
      {"planes_5x5_grouped", 3, 96, 13, 13, 256, 5, 5, 2, 2, 1, 1, 1, 1, 2},
      {"planes_two_column_tiles", 2, 16, 9, 7, 384, 3, 3, 1, 1, 1, 1},
      {"planes_grouped_narrow", 2, 32, 11, 9, 96, 3, 3, 1, 1, 1, 1, 1, 1, 2},
      {"planes_dilated_asymmetric", 2, 24, 12, 10, 64, 3, 3, 2, 1, 1, 1, 2, 1},
      {"planes_no_pad_n1", 1, 8, 17, 15, 128, 5, 3, 0, 0, 1, 1},
      {"planes_1x1", 3, 40, 7, 9, 96, 1, 1, 0, 0, 1, 1},
      {"planes_long_depth", 16, 16, 40, 40, 64, 3, 3, 1, 1, 1, 1},
  };
  const std::vector<ConvAlgo> rows = {ConvAlgo::kImplicitGemmSm90, ConvAlgo::kAuto};
  for (const ConvProblem& pb : problems)
    check_problem<float>(pb, true, kExact, 0, rows, MathMode::kTF32);
  const ConvProblem& deep = problems[0];
  const Descs ds = descs_of(deep, DataType::kFloat32);
  const double depth = double(ds.yd.n) * ds.yd.h * ds.yd.w;
  check_problem<float>(deep, false, {8 * 0x1p-11 * std::sqrt(depth), 0, true}, 0, rows,
                       MathMode::kTF32);
}

TEST(ConvCuda, FindCachesOneEntryPerPassAndReusesIt) {
  CREMA_SKIP_WITHOUT_GPU();
  const ConvProblem pb{"find", 4, 8, 10, 10, 16, 3, 3, 1, 1, 1, 1};
  const Descs ds = descs_of(pb, DataType::kFloat32);
  const Data<float> d = make_data<float>(ds, 5, true);
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  const GpuData g{to_gpu(d.x), to_gpu(d.w), to_gpu(d.dy), to_gpu(d.bias)};
  const auto want = run_cpu(cpu, Op::kFwd, ds, d);
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(all_close(run_gpu(gpu, Op::kFwd, ConvAlgo::kFind, ds, d, g), want,
                          winograd_tolerance<float>(pb, Op::kFwd, kExact)));
    EXPECT_EQ(gpu.algo_cache().size(), 1u);
  }
  const ConvAlgo chosen = static_cast<ConvAlgo>(gpu.algo_cache().begin()->second);
  EXPECT_TRUE(conv_supports(gpu, chosen, ds.cd, ds.xd, ds.wd, ds.yd));
  EXPECT_NE(chosen, ConvAlgo::kAuto);
  EXPECT_NE(chosen, ConvAlgo::kFind);
  run_gpu(gpu, Op::kBwdFilter, ConvAlgo::kFind, ds, d, g);
  EXPECT_EQ(gpu.algo_cache().size(), 2u);
}

}  // namespace
}  // namespace crema::prim
