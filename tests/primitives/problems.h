// Named problem lists taken from real networks' layers (benchdnn style), shared by the primitive
// tests and the benchmarks. Batch sizes of the large ImageNet layers are cut to 1-2 so the tests
// stay fast; benchmarks scale n themselves.
#pragma once

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

enum class PoolKind { kMax, kAverage };

struct PoolProblem {
  const char* name;
  PoolKind kind;
  int n, c, h, w;
  int kernel_h, kernel_w, pad_h, pad_w, stride_h, stride_w;
};

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
