// lrn_fwd/lrn_bwd on CUDA (kAuto and every row of the table that runs the case) against the CPU
// implementation: both modes, the CPU tests' shapes and
// local sizes, CaffeNet's and GoogLeNet's LRN layer shapes, both blends, f32 and f64, and the
// in-place gradient (dx == dy).
#include <gtest/gtest.h>

#include <iterator>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "primitives/lrn.h"
#include "problems.h"

namespace crema::prim {
namespace {

using Shape = test::Nchw;

template <typename T>
void check_case(const LrnDesc& ld, const Shape& s, Blend blend, bool in_place, bool channels_last) {
  SCOPED_TRACE(::testing::Message()
               << (ld.mode == LrnMode::kAcrossChannels ? "across" : "within") << " n"
               << ld.local_size << " beta " << ld.beta << " " << s.n << "x" << s.c << "x" << s.h
               << "x" << s.w << (blend.beta != 0 ? " blend" : "") << (in_place ? " in place" : "")
               << (sizeof(T) == 8 ? " f64" : " f32") << (channels_last ? " nhwc" : ""));
  constexpr DataType t = sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32;
  const TensorDesc d = channels_last ? TensorDesc::nhwc(t, s.n, s.c, s.h, s.w)
                                     : TensorDesc::nchw(t, s.n, s.c, s.h, s.w);
  const size_t n = size_t(d.count());
  const auto x = random_vector<T>(n, 21, -2, 2);
  const auto dy = random_vector<T>(n, 22);
  const test::Tolerance tol =
      sizeof(T) == 8 ? test::Tolerance{1e-12, 1e-10} : test::Tolerance{2e-6, 2e-5};
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);

  const auto y0 = blend.beta != 0 ? random_vector<T>(n, 23) : test::poisoned<T>(n);
  std::vector<T> y_ref = y0;
  lrn_fwd(cpu, ld, d, x.data(), d, y_ref.data(), blend);
  std::vector<T> y(n);
  lrn_fwd(cpu, ld, d, x.data(), d, y.data());
  // In place, dx starts as dy; otherwise as the prior gradient (or poison for beta 0).
  const auto dx0 = in_place ? dy : blend.beta != 0 ? random_vector<T>(n, 24) : test::poisoned<T>(n);
  std::vector<T> dx_ref = dx0;
  lrn_bwd(cpu, ld, d, y.data(), in_place ? dx_ref.data() : dy.data(), d, x.data(), dx_ref.data(),
          blend);

  // kAuto, then every row of the CUDA table that runs the case.
  for (LrnAlgo a : auto_then(lrn_algos(Device::kCUDA))) {
    SCOPED_TRACE(lrn_algo_name(a));
    LrnDesc forced = ld;
    forced.algo = a;
    DeviceBuffer gx = to_gpu(x), gy = to_gpu(y0);
    if (lrn_fwd_unsupported(gpu, forced, d, gx.get(), d, gy.get(), blend)) continue;
    lrn_fwd(gpu, forced, d, gx.get(), d, gy.get(), blend);
    EXPECT_TRUE(all_close(from_gpu<T>(gpu, gy, n), y_ref, tol)) << "forward";
    DeviceBuffer g_y = to_gpu(y), g_dy = to_gpu(dy), g_dx = to_gpu(dx0);
    const void* g_grad = in_place ? g_dx.get() : g_dy.get();
    // A row may run the forward but not this backward (across_lanes refuses dx == dy).
    if (lrn_bwd_unsupported(gpu, forced, d, g_y.get(), g_grad, d, gx.get(), g_dx.get(), blend))
      continue;
    lrn_bwd(gpu, forced, d, g_y.get(), g_grad, d, gx.get(), g_dx.get(), blend);
    EXPECT_TRUE(all_close(from_gpu<T>(gpu, g_dx, n), dx_ref, tol)) << "backward";
  }
}

template <typename T>
void check_all_blends(const LrnDesc& ld, const Shape& s, bool channels_last = false) {
  for (Blend blend : {Blend{}, Blend{0.5, -1.5}})
    for (bool in_place : {false, true}) check_case<T>(ld, s, blend, in_place, channels_last);
}

// The CPU test's shapes.
const std::vector<Shape>& kShapes = test::unit_lrn_shapes();

// Every shape with every window size, and every window size with every beta (0.75, 0.5 and 1
// have their own power paths, 0.6 the general one): shape i and window j take beta (3i + j) mod 4,
// which gives each window all four across the six shapes. (The full product, four times the
// calls, ran past compute-sanitizer's time limit per test under racecheck.)
TEST(LrnCuda, UnitShapesMatchCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  const double betas[] = {0.75, 0.5, 1.0, 0.6};
  const int windows[] = {1, 3, 5};
  for (LrnMode mode : {LrnMode::kAcrossChannels, LrnMode::kWithinChannel})
    for (int i = 0; i < int(std::size(kShapes)); ++i)
      for (int j = 0; j < int(std::size(windows)); ++j) {
        const LrnDesc ld{mode, windows[j], 1.5, betas[(3 * i + j) % 4], 2.0};
        check_all_blends<float>(ld, kShapes[i]);
        check_all_blends<double>(ld, kShapes[i]);
      }
  // A window wider than the channels and the image; local_size 9 runs on the "across" row only.
  for (LrnMode mode : {LrnMode::kAcrossChannels, LrnMode::kWithinChannel}) {
    check_all_blends<float>({mode, 7, 2.0, 0.75, 1.0}, {2, 3, 2, 4});
    check_all_blends<double>({mode, 7, 2.0, 0.75, 1.0}, {2, 3, 2, 4});
    check_all_blends<float>({mode, 9, 2.0, 0.75, 1.0}, {2, 13, 3, 5});
    check_all_blends<double>({mode, 9, 2.0, 0.6, 1.0}, {2, 13, 3, 5});
  }
  // Enough channels that the across kernels split columns into chunks (not in place).
  for (int local_size : {1, 3, 5, 7}) {
    check_all_blends<float>({LrnMode::kAcrossChannels, local_size, 1.5, 0.75, 2.0}, {2, 67, 3, 5});
    check_all_blends<double>({LrnMode::kAcrossChannels, local_size, 1.5, 0.6, 2.0}, {2, 67, 3, 5});
  }
}

// CaffeNet's norm1/norm2 (after pool1/pool2), GoogLeNet's pool1/norm1 and norm2, and
// cifar10_full's within-channel norm1.
TEST(LrnCuda, LayerShapesMatchCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  const LrnDesc caffenet{LrnMode::kAcrossChannels, 5, 1e-4, 0.75, 1.0};
  const LrnDesc cifar{LrnMode::kWithinChannel, 3, 5e-5, 0.75, 1.0};
  for (const Shape& s :
       {Shape{2, 96, 27, 27}, Shape{2, 256, 13, 13}, Shape{1, 64, 56, 56}, Shape{1, 192, 56, 56}}) {
    check_all_blends<float>(caffenet, s);
    check_all_blends<double>(caffenet, s);
  }
  check_all_blends<float>(cifar, {4, 32, 16, 16});
  check_all_blends<double>(cifar, {4, 32, 16, 16});
}

// Full-size layers at batch 8: CaffeNet's norm1 and norm2, GoogLeNet's norm1 (f32, as trained).
TEST(LrnCuda, RealSizeLayersMatchCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  const LrnDesc caffenet{LrnMode::kAcrossChannels, 5, 1e-4, 0.75, 1.0};
  for (const Shape& s : {Shape{8, 96, 55, 55}, Shape{8, 256, 27, 27}, Shape{8, 64, 56, 56}})
    check_all_blends<float>(caffenet, s);
}

// Channels last across channels (the kernels walk N*H*W images of 1 x 1 pixels), against the
// CPU on the same layout (LrnTest.ChannelsLastAcrossIsNchwPermuted checks that against NCHW):
// CaffeNet's norm1 and norm2 at batch 2 (across_lanes in 16-byte packs), 6 channels (packs of
// two), and a window wider than the channels (one channel a thread).
TEST(LrnCuda, ChannelsLastMatchesCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  const LrnDesc caffenet{LrnMode::kAcrossChannels, 5, 1e-4, 0.75, 1.0};
  for (const Shape& s : {Shape{2, 96, 27, 27}, Shape{2, 256, 13, 13}}) {
    check_all_blends<float>(caffenet, s, true);
    check_all_blends<double>(caffenet, s, true);
  }
  check_all_blends<float>({LrnMode::kAcrossChannels, 5, 1.5, 0.5, 2.0}, {2, 6, 3, 4}, true);
  check_all_blends<float>({LrnMode::kAcrossChannels, 7, 2.0, 0.6, 1.0}, {3, 5, 4, 3}, true);
}

}  // namespace
}  // namespace crema::prim
