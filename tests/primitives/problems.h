// Named problem lists taken from real networks' layers (benchdnn style), shared by the primitive
// tests and the benchmarks. Batch sizes of the large ImageNet layers are cut to 1-2 so the tests
// stay fast; benchmarks scale n themselves.
#pragma once

#include <cctype>
#include <cstdint>
#include <deque>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "primitives/conv.h"

namespace crema::test {

struct ConvProblem {
  const char* name;
  int n, c, h, w;  // input
  int k, r, s;     // output channels, kernel
  int pad_h, pad_w, stride_h, stride_w;
  int dilation_h = 1, dilation_w = 1;
  int groups = 1;
};

// The primitive's descriptors of a problem: packed NCHW tensors of data type t.
struct Descs {
  prim::ConvDesc cd;
  prim::TensorDesc xd, yd;
  prim::FilterDesc wd;
};

inline Descs descs_of(const ConvProblem& pb, prim::DataType t) {
  Descs d;
  d.cd = prim::ConvDesc{pb.pad_h,      pb.pad_w,      pb.stride_h, pb.stride_w,
                        pb.dilation_h, pb.dilation_w, pb.groups};
  const int p = prim::conv_out_dim(pb.h, pb.r, pb.pad_h, pb.stride_h, pb.dilation_h);
  const int q = prim::conv_out_dim(pb.w, pb.s, pb.pad_w, pb.stride_w, pb.dilation_w);
  d.xd = prim::TensorDesc::nchw(t, pb.n, pb.c, pb.h, pb.w);
  d.yd = prim::TensorDesc::nchw(t, pb.n, pb.k, p, q);
  d.wd = prim::FilterDesc{t, pb.k, pb.c / pb.groups, pb.r, pb.s};
  return d;
}

// The unit cases every backend's convolution tests run: odd sizes, N = 1, 1x1 (strided, padded,
// grouped), dilation, depthwise, groups, asymmetric kernels, a kernel as large as the input.
inline std::vector<ConvProblem> unit_problems() {
  return {
      {"unit_1x1", 2, 6, 5, 7, 4, 1, 1, 0, 0, 1, 1},
      {"unit_1x1_stride2", 2, 6, 5, 7, 4, 1, 1, 0, 0, 2, 2},
      {"unit_1x1_stride2x3_groups", 2, 8, 9, 10, 6, 1, 1, 0, 0, 2, 3, 1, 1, 2},
      {"unit_1x1_stride2_partials", 2, 8, 34, 33, 16, 1, 1, 0, 0, 2, 2},  // 17 x 17 >= 256
      {"unit_1x1_pad", 1, 3, 4, 4, 5, 1, 1, 1, 1, 1, 1},
      {"unit_1x1_groups", 3, 6, 5, 5, 4, 1, 1, 0, 0, 1, 1, 1, 1, 2},
      {"unit_n1_odd", 1, 3, 7, 9, 5, 3, 3, 1, 1, 2, 2},
      {"unit_dilation", 2, 4, 11, 10, 3, 3, 3, 2, 2, 1, 1, 2, 2},
      {"unit_depthwise", 2, 6, 9, 8, 6, 3, 3, 1, 1, 1, 1, 1, 1, 6},
      {"unit_depthwise_x2", 1, 4, 7, 7, 8, 3, 3, 1, 1, 2, 2, 1, 1, 4},
      {"unit_groups3", 2, 6, 8, 8, 9, 3, 3, 1, 1, 1, 1, 1, 1, 3},
      {"unit_asymmetric", 2, 3, 9, 12, 4, 2, 5, 1, 0, 2, 1, 1, 2},
      {"unit_kernel_is_input", 3, 2, 5, 5, 4, 5, 5, 0, 0, 1, 1},
      {"unit_pad_exceeds_kernel", 1, 2, 3, 4, 3, 2, 2, 3, 2, 1, 1},
      {"unit_stride_gt_kernel", 2, 3, 10, 11, 2, 2, 2, 0, 1, 3, 3},
      {"unit_1x1_input", 4, 5, 1, 1, 3, 1, 1, 0, 0, 1, 1},
      {"unit_wide_batch", 37, 3, 6, 5, 4, 3, 3, 1, 1, 1, 1},
      {"unit_tall_wide_plane", 2, 3, 21, 40, 5, 7, 3, 3, 1, 1, 1},  // 40 columns > 32 lanes
  };
}

// Random valid problems (groups, depthwise, stride, dilation, pad), named random_<i>.
inline std::vector<ConvProblem> random_problems(int count, uint64_t seed) {
  std::mt19937_64 gen(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
  static std::deque<std::string>
      names;  // ConvProblem holds a const char*; a deque keeps each valid
  std::vector<ConvProblem> out;
  while (int(out.size()) < count) {
    ConvProblem pb{};
    pb.groups = pick(0, 3) == 0 ? pick(2, 4) : 1;
    const bool depthwise = pick(0, 5) == 0;
    pb.c = depthwise ? pick(2, 6) : pb.groups * pick(1, 4);
    if (depthwise) pb.groups = pb.c;
    pb.k = pb.groups * pick(1, 3);
    pb.n = pick(1, 3);
    pb.h = pick(1, 13);
    pb.w = pick(1, 13);
    pb.r = pick(1, 4);
    pb.s = pick(1, 4);
    pb.pad_h = pick(0, 2);
    pb.pad_w = pick(0, 2);
    pb.stride_h = pick(1, 3);
    pb.stride_w = pick(1, 3);
    pb.dilation_h = pick(0, 3) == 0 ? 2 : 1;
    pb.dilation_w = pick(0, 3) == 0 ? 2 : 1;
    if (pb.dilation_h * (pb.r - 1) + 1 > pb.h + 2 * pb.pad_h ||
        pb.dilation_w * (pb.s - 1) + 1 > pb.w + 2 * pb.pad_w)
      continue;
    names.push_back("random_" + std::to_string(out.size()));
    pb.name = names.back().c_str();
    out.push_back(pb);
  }
  return out;
}

// A problem's name as a gtest parameter name (letters, digits and '_'): the name generator of
// INSTANTIATE_TEST_SUITE_P.
struct ParamName {
  template <typename Info>
  std::string operator()(const Info& info) const {
    std::string s = info.param.name;
    for (char& ch : s)
      if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return s;
  }
};

inline const std::vector<ConvProblem>& named_conv_problems() {
  static const std::vector<ConvProblem> list = {
      {"lenet:conv1", 64, 1, 28, 28, 20, 5, 5, 0, 0, 1, 1},
      {"lenet:conv2", 64, 20, 12, 12, 50, 5, 5, 0, 0, 1, 1},
      {"cifar10_quick:conv1", 2, 3, 32, 32, 32, 5, 5, 2, 2, 1, 1},
      {"caffenet:conv1", 1, 3, 227, 227, 96, 11, 11, 0, 0, 4, 4},
      {"caffenet:conv2", 1, 96, 27, 27, 256, 5, 5, 2, 2, 1, 1, 1, 1, 2},
      {"caffenet:conv3", 1, 256, 13, 13, 384, 3, 3, 1, 1, 1, 1},
      {"resnet50:res2a_branch2a", 1, 64, 56, 56, 64, 1, 1, 0, 0, 1, 1},
      {"resnet50:res3a_branch1", 1, 256, 56, 56, 512, 1, 1, 0, 0, 2, 2},
      {"googlenet:inception_3a/5x5", 2, 16, 28, 28, 32, 5, 5, 2, 2, 1, 1},
      {"mobilenet:conv2_1/dw", 1, 32, 112, 112, 32, 3, 3, 1, 1, 1, 1, 1, 1, 32},
  };
  return list;
}

// The convolution case list of every backend's harness (conv_test.cpp, conv_cuda_test.cpp): the
// unit cases, 40 random problems from a fixed seed, and the reference nets' named layers.
inline std::vector<ConvProblem> conv_cases() {
  std::vector<ConvProblem> cases = unit_problems();
  for (const ConvProblem& pb : random_problems(40, 7)) cases.push_back(pb);
  for (const ConvProblem& pb : named_conv_problems()) cases.push_back(pb);
  return cases;
}

// A packed NCHW shape.
struct Nchw {
  int n, c, h, w;
  int64_t count() const { return int64_t(n) * c * h * w; }
  // The packed NCHW tensor of this shape and data type t.
  prim::TensorDesc desc(prim::DataType t) const { return prim::TensorDesc::nchw(t, n, c, h, w); }
  // NxCxHxW, for traces.
  friend std::ostream& operator<<(std::ostream& os, const Nchw& s) {
    return os << s.n << "x" << s.c << "x" << s.h << "x" << s.w;
  }
};

// The LRN shapes every backend's test runs with every window size: one element, odd planes,
// single rows and columns, fewer channels than the window.
inline const std::vector<Nchw>& unit_lrn_shapes() {
  static const std::vector<Nchw> list = {{1, 1, 1, 1}, {1, 3, 5, 7},  {2, 7, 3, 1},
                                         {1, 6, 4, 4}, {3, 2, 9, 11}, {2, 9, 1, 5}};
  return list;
}

enum class PoolKind { kMax, kAverage };

struct PoolProblem {
  const char* name;
  PoolKind kind;
  int n, c, h, w;
  int kernel_h, kernel_w, pad_h, pad_w, stride_h, stride_w;
};

// The pooling unit shapes every backend's test runs, in each mode and rounding (the kind field
// is unused here): even and odd planes, clipped CEIL windows, padding, asymmetric windows, global
// windows, 1x1, strides above the kernel, a single row.
inline const std::vector<PoolProblem>& unit_pool_problems() {
  const PoolKind k = PoolKind::kMax;
  static const std::vector<PoolProblem> list = {
      {"k2s2_even", k, 2, 3, 8, 8, 2, 2, 0, 0, 2, 2},
      {"k2s2_odd", k, 2, 3, 7, 9, 2, 2, 0, 0, 2, 2},
      {"k3s2_odd", k, 2, 3, 9, 10, 3, 3, 0, 0, 2, 2},
      {"k3s2_ceil_partial", k, 1, 2, 8, 7, 3, 3, 0, 0, 2, 2},
      {"pad1_s2_clip", k, 2, 2, 5, 6, 2, 2, 1, 1, 2, 2},
      {"pad1_k3s1", k, 1, 3, 7, 5, 3, 3, 1, 1, 1, 1},
      {"pad2_k3s3", k, 2, 2, 10, 9, 3, 3, 2, 2, 3, 3},
      {"asymmetric", k, 1, 2, 7, 9, 3, 2, 1, 0, 2, 1},
      {"global", k, 2, 4, 5, 7, 5, 7, 0, 0, 1, 1},
      {"global_s2", k, 1, 3, 6, 6, 6, 6, 0, 0, 2, 2},
      {"n1_1x1", k, 1, 2, 3, 5, 1, 1, 0, 0, 1, 1},
      {"stride_gt_kernel", k, 2, 2, 11, 11, 2, 2, 0, 0, 3, 3},
      {"single_row", k, 3, 2, 1, 9, 1, 3, 0, 1, 1, 2},
  };
  return list;
}

inline const std::vector<PoolProblem>& named_pool_problems() {
  static const std::vector<PoolProblem> list = {
      {"lenet:pool1", PoolKind::kMax, 64, 20, 24, 24, 2, 2, 0, 0, 2, 2},
      {"lenet:pool2", PoolKind::kMax, 64, 50, 8, 8, 2, 2, 0, 0, 2, 2},
      {"cifar10_quick:pool1", PoolKind::kMax, 4, 32, 32, 32, 3, 3, 0, 0, 2, 2},
      {"cifar10_quick:pool2", PoolKind::kAverage, 4, 32, 16, 16, 3, 3, 0, 0, 2, 2},
      {"caffenet:pool1", PoolKind::kMax, 2, 96, 55, 55, 3, 3, 0, 0, 2, 2},
      {"caffenet:pool5", PoolKind::kMax, 2, 256, 13, 13, 3, 3, 0, 0, 2, 2},
      {"googlenet:pool1/3x3_s2", PoolKind::kMax, 1, 64, 112, 112, 3, 3, 0, 0, 2, 2},
      {"googlenet:inception_3a/pool", PoolKind::kMax, 1, 192, 28, 28, 3, 3, 1, 1, 1, 1},
      {"googlenet:pool5/7x7_s1", PoolKind::kAverage, 2, 1024, 7, 7, 7, 7, 0, 0, 1, 1},
      {"resnet50:pool1", PoolKind::kMax, 1, 64, 112, 112, 3, 3, 0, 0, 2, 2},
  };
  return list;
}

}  // namespace crema::test
