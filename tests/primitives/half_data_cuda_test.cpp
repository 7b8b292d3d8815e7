// bf16 and f16 data on CUDA. Each primitive that stores half-size tensors computes in fp32, so run
// on half data it must give its f32 result on the same values, rounded once to the half type:
// every test runs the op on f32 buffers holding values exact in the half type and on half buffers
// holding the same values, and compares within one unit of the half type's last place (exactly,
// where the op is a selection such as max). The f32 paths are tested against the CPU elsewhere.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "primitives/activation.h"
#include "primitives/batchnorm.h"
#include "primitives/conv.h"
#include "primitives/eltwise.h"
#include "primitives/lrn.h"
#include "primitives/pool.h"
#include "primitives/scale_bias.h"

namespace crema::prim {
namespace {

using test::from_gpu;
using test::to_gpu;

constexpr DataType kHalves[] = {DataType::kBFloat16, DataType::kFloat16};

std::vector<float> round_to(DataType t, const std::vector<float>& v) {
  std::vector<uint16_t> bits(v.size());
  std::vector<float> out(v.size());
  convert_values(DataType::kFloat32, v.data(), t, bits.data(), int64_t(v.size()));
  convert_values(t, bits.data(), DataType::kFloat32, out.data(), int64_t(v.size()));
  return out;
}

// Values in [-2, 2), exact in t.
std::vector<float> values(DataType t, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return round_to(t, v);
}

// One tensor on the GPU twice: as f32 and in the half type t.
struct Twin {
  DataType t;
  size_t n;
  DeviceBuffer f32, half;
  Twin(DataType type, const std::vector<float>& v)
      : t(type), n(v.size()), f32(to_gpu(v)), half(Device::kCUDA, v.size() * 2) {
    std::vector<uint16_t> bits(n);
    convert_values(DataType::kFloat32, v.data(), t, bits.data(), int64_t(n));
    device_memcpy(half.get(), Device::kCUDA, bits.data(), Device::kCPU, n * 2);
  }
  // The half result and the f32 result rounded to t, as floats.
  std::pair<std::vector<float>, std::vector<float>> results(Handle& h) const {
    const std::vector<uint16_t> bits = from_gpu<uint16_t>(h, half, n);
    std::vector<float> got(n);
    convert_values(t, bits.data(), DataType::kFloat32, got.data(), int64_t(n));
    return {got, round_to(t, from_gpu<float>(h, f32, n))};
  }
};

// Within one unit in the last place of t (of the larger magnitude), or exactly.
void expect_rounded(Handle& h, const Twin& out, const std::string& what, bool exact = false) {
  const auto [got, want] = out.results(h);
  const float ulp = out.t == DataType::kBFloat16 ? 1.0f / 128 : 1.0f / 1024;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    const float tol = exact ? 0.0f : ulp * std::max(std::fabs(want[i]), 6.2e-5f);
    if (!(std::fabs(got[i] - want[i]) <= tol)) {
      ADD_FAILURE() << what << " (" << dtype_name(out.t) << ") [" << i << "]: " << got[i] << " vs "
                    << want[i];
      ++bad;
    }
  }
}

TensorDesc desc(DataType t, int n, int c, int hh, int w) {
  return TensorDesc::nchw(t, n, c, hh, w);
}

TEST(HalfDataCuda, Activations) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle h(Device::kCUDA);
  for (DataType t : kHalves)
    for (ActMode mode : {ActMode::kRelu, ActMode::kSigmoid, ActMode::kElu}) {
      ActDesc ad;
      ad.mode = mode;
      ad.relu_negative_slope = 0.25;
      const int n = 1001;
      Twin x(t, values(t, n, 1)), dy(t, values(t, n, 2)), y(t, values(t, n, 3)),
          dx(t, values(t, n, 4));
      const TensorDesc d32 = desc(DataType::kFloat32, 1, 1, 1, n), dh = desc(t, 1, 1, 1, n);
      const Blend blend{0.5, 2.0};  // reads the old output
      act_fwd(h, ad, d32, x.f32.get(), d32, y.f32.get(), blend);
      act_fwd(h, ad, dh, x.half.get(), dh, y.half.get(), blend);
      expect_rounded(h, y, "act_fwd");
      // Backward from an output exact in t (the forward's f32 one is not).
      const Twin yb(t, y.results(h).first);
      act_bwd(h, ad, d32, yb.f32.get(), dy.f32.get(), d32, x.f32.get(), dx.f32.get());
      act_bwd(h, ad, dh, yb.half.get(), dy.half.get(), dh, x.half.get(), dx.half.get());
      expect_rounded(h, dx, "act_bwd");
    }
}

// LRN on each of its CUDA rows: the window's register ring (local_size 5), the generic slide
// (local_size 9), within a channel, and across the channels of images of one pixel (a
// channels-last tensor's view: 16 channels, so 16-byte packs). The half run widens the same
// values into the same fp32 sums, so it rounds the f32 result.
TEST(HalfDataCuda, Lrn) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle h(Device::kCUDA);
  struct Case {
    LrnMode mode;
    int local_size;
    LrnAlgo algo;
    int N, C, H, W;
  };
  for (DataType t : kHalves)
    for (const Case& c : {Case{LrnMode::kAcrossChannels, 5, LrnAlgo::kAcrossRing, 2, 11, 5, 6},
                          Case{LrnMode::kAcrossChannels, 9, LrnAlgo::kAcross, 2, 11, 5, 6},
                          Case{LrnMode::kWithinChannel, 3, LrnAlgo::kWithin, 2, 11, 5, 6},
                          Case{LrnMode::kAcrossChannels, 5, LrnAlgo::kAcrossLanes, 60, 16, 1, 1}}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " " + lrn_algo_name(c.algo));
      LrnDesc ld;
      ld.mode = c.mode;
      ld.local_size = c.local_size;
      ld.alpha = 0.5;
      ld.algo = c.algo;
      const int n = c.N * c.C * c.H * c.W;
      Twin x(t, values(t, n, 50)), y(t, values(t, n, 51)), dy(t, values(t, n, 52)),
          dx(t, values(t, n, 53));
      const TensorDesc d32 = desc(DataType::kFloat32, c.N, c.C, c.H, c.W),
                       dh = desc(t, c.N, c.C, c.H, c.W);
      const Blend blend{0.5, 2.0};  // reads the old output
      lrn_fwd(h, ld, d32, x.f32.get(), d32, y.f32.get(), blend);
      lrn_fwd(h, ld, dh, x.half.get(), dh, y.half.get(), blend);
      expect_rounded(h, y, "lrn_fwd");
      // Backward from the forward's output (blend {1, 0}) rounded to t, on both sides.
      lrn_fwd(h, ld, d32, x.f32.get(), d32, y.f32.get());
      const Twin yb(t, y.results(h).second);
      lrn_bwd(h, ld, d32, yb.f32.get(), dy.f32.get(), d32, x.f32.get(), dx.f32.get());
      lrn_bwd(h, ld, dh, yb.half.get(), dy.half.get(), dh, x.half.get(), dx.half.get());
      expect_rounded(h, dx, "lrn_bwd");
    }
}

TEST(HalfDataCuda, ScaleBiasWithF32Parameters) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle h(Device::kCUDA);
  for (DataType t : kHalves) {
    const int outer = 3, C = 5, inner = 37, n = outer * C * inner;
    Twin x(t, values(t, n, 5)), y(t, values(t, n, 6)), dy(t, values(t, n, 7));
    const DeviceBuffer scale = to_gpu(values(t, C, 8)), bias = to_gpu(values(t, C, 9));
    ScaleBiasDesc s32{DataType::kFloat32, outer, C, inner}, sh{t, outer, C, inner};
    scale_bias_fwd(h, s32, x.f32.get(), scale.get(), bias.get(), y.f32.get());
    scale_bias_fwd(h, sh, x.half.get(), scale.get(), bias.get(), y.half.get());
    expect_rounded(h, y, "scale_bias_fwd");
    // Parameter gradients are f32 sums of the same values in the same order: equal.
    DeviceBuffer ds32 = to_gpu(std::vector<float>(C, 1.0f)),
                 dsh = to_gpu(std::vector<float>(C, 1.0f));
    scale_bias_bwd_scale(h, s32, dy.f32.get(), x.f32.get(), ds32.get(), Blend{1, 1});
    scale_bias_bwd_scale(h, sh, dy.half.get(), x.half.get(), dsh.get(), Blend{1, 1});
    EXPECT_EQ(from_gpu<float>(h, ds32, C), from_gpu<float>(h, dsh, C)) << dtype_name(t);
  }
}

TEST(HalfDataCuda, EltwiseSumMaxAndFusedRelu) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle h(Device::kCUDA);
  for (DataType t : kHalves)
    for (int n : {1024, 1001}) {  // the 16-byte vector kernels, and the scalar ones
      Twin a(t, values(t, n, 10)), b(t, values(t, n, 11)), c(t, values(t, n, 12)),
          y(t, values(t, n, 13)), dy(t, values(t, n, 14)), da(t, values(t, n, 15)),
          db(t, values(t, n, 16));
      EltwiseDesc ed;
      ed.op = EltwiseOp::kSum;
      ed.n = n;
      ed.num_inputs = 3;
      ed.coeff = {1.0, -0.5, 2.0};
      ed.relu = true;
      auto run = [&](bool half) {
        ed.dtype = half ? t : DataType::kFloat32;
        auto p = [&](const Twin& w) { return half ? w.half.get() : w.f32.get(); };
        const void* x[] = {p(a), p(b), p(c)};
        eltwise_fwd(h, ed, x, const_cast<void*>(p(y)), nullptr);
        void* dx[] = {const_cast<void*>(p(da)), nullptr, const_cast<void*>(p(db))};
        eltwise_bwd(h, ed, x, p(y), p(dy), nullptr, dx);
      };
      run(false);
      run(true);
      expect_rounded(h, y, "eltwise_fwd sum relu");
      expect_rounded(h, da, "eltwise_bwd input 0");
      expect_rounded(h, db, "eltwise_bwd input 2");
      ed.op = EltwiseOp::kMax;
      ed.coeff.clear();
      ed.relu = false;
      ed.dtype = DataType::kFloat32;
      const void* x32[] = {a.f32.get(), b.f32.get(), c.f32.get()};
      eltwise_fwd(h, ed, x32, y.f32.get(), nullptr);
      ed.dtype = t;
      const void* xh[] = {a.half.get(), b.half.get(), c.half.get()};
      eltwise_fwd(h, ed, xh, y.half.get(), nullptr);
      expect_rounded(h, y, "eltwise_fwd max", true);
    }
}

// Half data takes the sweep row (square 2/2, 3/2, 3/1 windows) or the window row; every CUDA row
// gives the CPU's f32 result bit for bit. Channels last (16 channels) the window row moves packs
// of 8 (half) and 4 (f32) channels.
TEST(HalfDataCuda, Pooling) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle h(Device::kCUDA);
  struct Case {
    PoolMode mode;
    int k, s, p;
  };
  for (DataType t : kHalves)
    for (bool nhwc : {false, true})
      for (const Case& c : {Case{PoolMode::kMax, 3, 2, 1}, Case{PoolMode::kAverage, 2, 2, 0},
                            Case{PoolMode::kAverage, 7, 1, 0}}) {
        SCOPED_TRACE(std::string(dtype_name(t)) + (nhwc ? " nhwc" : "") + " k" +
                     std::to_string(c.k));
        PoolDesc pd;
        pd.mode = c.mode;
        pd.kernel_h = pd.kernel_w = c.k;
        pd.stride_h = pd.stride_w = c.s;
        pd.pad_h = pd.pad_w = c.p;
        const int N = 2, C = nhwc ? 16 : 3, H = 14, W = 14;
        const int P = pool_out_dim(H, c.k, c.p, c.s, true),
                  Q = pool_out_dim(W, c.k, c.p, c.s, true);
        Twin x(t, values(t, N * C * H * W, 20)), y(t, values(t, N * C * P * Q, 21)),
            dy(t, values(t, N * C * P * Q, 22)), dx(t, values(t, N * C * H * W, 23));
        auto layout = [&](DataType type, int hh, int w) {
          return nhwc ? TensorDesc::nhwc(type, N, C, hh, w) : desc(type, N, C, hh, w);
        };
        const TensorDesc x32 = layout(DataType::kFloat32, H, W), xh = layout(t, H, W);
        const TensorDesc y32 = layout(DataType::kFloat32, P, Q), yh = layout(t, P, Q);
        pool_fwd(h, pd, x32, x.f32.get(), y32, y.f32.get());
        pool_fwd(h, pd, xh, x.half.get(), yh, y.half.get());
        expect_rounded(h, y, "pool_fwd", c.mode == PoolMode::kMax);
        pool_bwd(h, pd, y32, y.f32.get(), dy.f32.get(), x32, x.f32.get(), dx.f32.get());
        pool_bwd(h, pd, yh, y.half.get(), dy.half.get(), xh, x.half.get(), dx.half.get());
        expect_rounded(h, dx, "pool_bwd");
      }
}

// Convolution on half data: rows that stage it through f32 copies, and the implicit GEMM's NHWC
// path, which reads and writes it itself with the f32 path's arithmetic, give the f32 result
// rounded, bit for bit, in every pass and with either side half. The 1x1 GEMMs on bf16 data in
// BF16 math (f16 in FP16) run cuBLAS on the stored types in the backward passes (the forward
// here has a bias, which that path leaves to the staged one), whose sums may round differently:
// one unit of the half type there, and 1e-4 for the f32 filter gradient.
TEST(HalfDataCuda, ConvolutionPassesMatchF32OnTheSameValues) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle h(Device::kCUDA);
  for (DataType t : kHalves)
    for (MathMode math : {MathMode::kFP32, MathMode::kBF16})
      for (int ksize : {1, 3}) {
        SCOPED_TRACE(std::string(dtype_name(t)) + " " + math_name(math) + " k" +
                     std::to_string(ksize));
        ConvDesc cd;
        cd.pad_h = cd.pad_w = ksize / 2;
        cd.math = math;
        const int N = 2, C = 16, H = 9, W = 9, K = 24;
        FilterDesc wd;
        wd.k = K;
        wd.c = C;
        wd.r = wd.s = ksize;
        const DeviceBuffer w = to_gpu(values(t, size_t(wd.count()), 30)),
                           bias = to_gpu(values(t, K, 31));
        Twin x(t, values(t, N * C * H * W, 32)), y(t, values(t, N * K * H * W, 33)),
            dy(t, values(t, N * K * H * W, 34)), dx(t, values(t, N * C * H * W, 35));
        const TensorDesc x32 = desc(DataType::kFloat32, N, C, H, W), xh = desc(t, N, C, H, W);
        const TensorDesc y32 = desc(DataType::kFloat32, N, K, H, W), yh = desc(t, N, K, H, W);
        ConvEpilogue ep;
        ep.bias = bias.get();
        ep.relu = true;
        const Blend blend{1, 0.5};
        const bool own_math = (t == DataType::kBFloat16 && math == MathMode::kBF16);
        const bool exact = !(ksize == 1 && own_math);  // backward passes
        conv_fwd(h, cd, ConvAlgo::kAuto, x32, x.f32.get(), wd, w.get(), y32, y.f32.get(), blend,
                 ep);
        conv_fwd(h, cd, ConvAlgo::kAuto, xh, x.half.get(), wd, w.get(), yh, y.half.get(), blend,
                 ep);
        expect_rounded(h, y, "conv_fwd", true);
        conv_bwd_data(h, cd, ConvAlgo::kAuto, wd, w.get(), y32, dy.f32.get(), x32, dx.f32.get());
        conv_bwd_data(h, cd, ConvAlgo::kAuto, wd, w.get(), yh, dy.half.get(), xh, dx.half.get());
        expect_rounded(h, dx, "conv_bwd_data", exact);
        DeviceBuffer dw32 = to_gpu(std::vector<float>(size_t(wd.count()), 0.5f)),
                     dwh = to_gpu(std::vector<float>(size_t(wd.count()), 0.5f));
        conv_bwd_filter(h, cd, ConvAlgo::kAuto, x32, x.f32.get(), y32, dy.f32.get(), wd, dw32.get(),
                        Blend{1, 1});
        conv_bwd_filter(h, cd, ConvAlgo::kAuto, xh, x.half.get(), yh, dy.half.get(), wd, dwh.get(),
                        Blend{1, 1});
        if (exact)
          EXPECT_EQ(from_gpu<float>(h, dw32, size_t(wd.count())),
                    from_gpu<float>(h, dwh, size_t(wd.count())));
        else
          EXPECT_TRUE(test::all_close(from_gpu<float>(h, dwh, size_t(wd.count())),
                                      from_gpu<float>(h, dw32, size_t(wd.count())),
                                      {1e-4, 1e-4, true}));
        // An f32 input into a half output (the first convolution of a half-size region).
        conv_fwd(h, cd, ConvAlgo::kAuto, x32, x.f32.get(), wd, w.get(), y32, y.f32.get());
        conv_fwd(h, cd, ConvAlgo::kAuto, x32, x.f32.get(), wd, w.get(), yh, y.half.get());
        expect_rounded(h, y, "conv_fwd f32 -> half", true);  // staged, or the NHWC path
        // The bias gradient of half dy, into f32.
        DeviceBuffer db32 = to_gpu(std::vector<float>(K, 0.0f)),
                     dbh = to_gpu(std::vector<float>(K, 0.0f));
        conv_bwd_bias(h, y32, dy.f32.get(), db32.get());
        conv_bwd_bias(h, yh, dy.half.get(), dbh.get());
        EXPECT_TRUE(test::all_close(from_gpu<float>(h, dbh, K), from_gpu<float>(h, db32, K),
                                    {1e-6, 1e-5, true}));
      }
}

// The 1x1 GEMM row with a stride on half data in its own math (ResNet-50's res3a-5a branch1 and
// branch2a): forward and backward filter on the subsampled input gathered in the half type,
// backward data spread from its f32 gradient with zeros where the stride skips, blended into the
// old dx and rounded once (a half gradient rounded again after the blend would lose the low bits
// of a sum that cancels). Against the same row on f32 data: within one unit of the half type
// (cuBLAS may sum in another order), 1e-4 for the f32 filter gradient; the skipped positions
// exactly beta * dx.
TEST(HalfDataCuda, StridedOneByOneInOwnMath) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle h(Device::kCUDA);
  for (DataType t : kHalves)
    for (const auto& [sh, sw] : {std::pair{2, 2}, std::pair{2, 3}}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " stride " + std::to_string(sh) + "x" +
                   std::to_string(sw));
      ConvDesc cd;
      cd.stride_h = sh;
      cd.stride_w = sw;
      cd.math = t == DataType::kBFloat16 ? MathMode::kBF16 : MathMode::kFP16;
      const int N = 3, C = 16, H = 9, W = 11, K = 24;
      const int P = conv_out_dim(H, 1, 0, sh, 1), Q = conv_out_dim(W, 1, 0, sw, 1);
      FilterDesc wd;
      wd.k = K;
      wd.c = C;
      wd.r = wd.s = 1;
      const DeviceBuffer w = to_gpu(values(t, size_t(wd.count()), 50));
      Twin x(t, values(t, N * C * H * W, 51)), y(t, values(t, N * K * P * Q, 52)),
          dy(t, values(t, N * K * P * Q, 53)), dx(t, values(t, N * C * H * W, 54));
      const TensorDesc x32 = desc(DataType::kFloat32, N, C, H, W), xh = desc(t, N, C, H, W);
      const TensorDesc y32 = desc(DataType::kFloat32, N, K, P, Q), yh = desc(t, N, K, P, Q);
      ASSERT_TRUE(conv_supports(h, ConvAlgo::kGemm1x1, cd, xh, wd, yh));
      ConvEpilogue ep;
      ep.relu = true;
      const Blend blend{1, 0.5};
      const ConvAlgo a = ConvAlgo::kGemm1x1;
      conv_fwd(h, cd, a, x32, x.f32.get(), wd, w.get(), y32, y.f32.get(), blend, ep);
      conv_fwd(h, cd, a, xh, x.half.get(), wd, w.get(), yh, y.half.get(), blend, ep);
      expect_rounded(h, y, "conv_fwd");
      const std::vector<float> dx_before = dx.results(h).first;
      conv_bwd_data(h, cd, a, wd, w.get(), y32, dy.f32.get(), x32, dx.f32.get(), blend);
      conv_bwd_data(h, cd, a, wd, w.get(), yh, dy.half.get(), xh, dx.half.get(), blend);
      expect_rounded(h, dx, "conv_bwd_data");
      const std::vector<float> dx_after = dx.results(h).first;
      for (int i = 0; i < N * C * H * W; ++i) {
        const int row = i / W % H, col = i % W;
        if (row % sh != 0 || col % sw != 0) {
          ASSERT_EQ(dx_after[size_t(i)], round_to(t, {0.5f * dx_before[size_t(i)]})[0]) << i;
        }
      }
      DeviceBuffer dw32 = to_gpu(std::vector<float>(size_t(wd.count()), 0.5f)),
                   dwh = to_gpu(std::vector<float>(size_t(wd.count()), 0.5f));
      conv_bwd_filter(h, cd, a, x32, x.f32.get(), y32, dy.f32.get(), wd, dw32.get(), Blend{1, 1});
      conv_bwd_filter(h, cd, a, xh, x.half.get(), yh, dy.half.get(), wd, dwh.get(), Blend{1, 1});
      EXPECT_TRUE(test::all_close(from_gpu<float>(h, dwh, size_t(wd.count())),
                                  from_gpu<float>(h, dw32, size_t(wd.count())),
                                  {1e-4, 1e-4, true}));
    }
}

// BatchNorm in training, fused with a scale, shift and ReLU: statistics in double from the same
// values; the stored x_hat is rounded before the epilogue, so results follow f32 to within a few
// units of the half type. The planes cover each pack width the kernels pick (16-byte packs where
// the plane is a multiple of 8 values, 8-byte ones at 196, single values at 35), and an offset of
// one value makes every pointer unaligned. Channels last, the element-wise passes read runs of 8
// adjacent channels where 8 divides C (24, 64, 256; 6 does not) and the sums of 1024 rows or
// more read packs of 2 (64 channels) and 8 (256) adjacent channels, 24 one at a time.
TEST(HalfDataCuda, BatchNormFusedTraining) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle h(Device::kCUDA);
  struct Shape {
    int N, C, H, W, offset;
    bool nhwc;
  };
  for (DataType t : kHalves)
    for (const Shape& s :
         {Shape{4, 6, 5, 7, 0, false}, Shape{3, 5, 8, 8, 0, false}, Shape{2, 4, 14, 14, 0, false},
          Shape{3, 5, 8, 8, 1, false}, Shape{2, 6, 8, 8, 0, true}, Shape{1, 24, 40, 40, 0, true},
          Shape{2, 64, 32, 32, 0, true}, Shape{4, 256, 16, 16, 0, true},
          Shape{2, 64, 32, 32, 1, true}}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " " + std::to_string(s.C) + " channels, plane " +
                   std::to_string(s.H) + "x" + std::to_string(s.W) + " offset " +
                   std::to_string(s.offset) + (s.nhwc ? " nhwc" : ""));
      const int C = s.C, n = s.N * C * s.H * s.W + s.offset, o = s.offset;
      Twin x(t, values(t, n, 40)), y(t, values(t, n, 41)), xhat(t, values(t, n, 42)),
          dy(t, values(t, n, 43)), dx(t, values(t, n, 44));
      // The tensors from value `offset` on, in each storage.
      auto f32 = [o](const Twin& b) { return static_cast<float*>(b.f32.get()) + o; };
      auto half = [o](const Twin& b) { return static_cast<uint16_t*>(b.half.get()) + o; };
      const DeviceBuffer gamma = to_gpu(values(t, C, 45)), beta = to_gpu(values(t, C, 46));
      DeviceBuffer mean32(Device::kCUDA, C * 4), meanh(Device::kCUDA, C * 4),
          var32(Device::kCUDA, C * 4), varh(Device::kCUDA, C * 4), is32(Device::kCUDA, C * 4),
          ish(Device::kCUDA, C * 4);
      BatchNormEpilogue ep{gamma.get(), beta.get(), true, 0.0};
      auto desc_of = [&](DataType type) {
        return s.nhwc ? TensorDesc::nhwc(type, s.N, C, s.H, s.W) : desc(type, s.N, C, s.H, s.W);
      };
      const TensorDesc d32 = desc_of(DataType::kFloat32), dh = desc_of(t);
      BatchNormDesc bd;
      batchnorm_fwd_training_fused(h, bd, ep, d32, f32(x), d32, f32(y), f32(xhat), mean32.get(),
                                   var32.get(), is32.get());
      batchnorm_fwd_training_fused(h, bd, ep, dh, half(x), dh, half(y), half(xhat), meanh.get(),
                                   varh.get(), ish.get());
      EXPECT_EQ(from_gpu<float>(h, mean32, C), from_gpu<float>(h, meanh, C));
      EXPECT_EQ(from_gpu<float>(h, var32, C), from_gpu<float>(h, varh, C));
      expect_rounded(h, xhat, "x_hat");
      const auto [yh, y32] = y.results(h);
      EXPECT_TRUE(test::all_close(yh, y32, {2e-2, 2e-2, true}));
      // Both backward passes read the half x_hat: where z = gamma x_hat + beta is within a
      // rounding of 0 the f32 x_hat flips the ReLU's mask (16 of 131072 values at 64 channels).
      const std::vector<float> xhat_half = xhat.results(h).first;
      device_memcpy(xhat.f32.get(), Device::kCUDA, xhat_half.data(), Device::kCPU,
                    xhat_half.size() * sizeof(float));
      DeviceBuffer dg32 = to_gpu(std::vector<float>(C, 0.0f)),
                   dgh = to_gpu(std::vector<float>(C, 0.0f));
      batchnorm_bwd_training_fused(h, bd, ep, d32, f32(xhat), f32(dy), is32.get(), dg32.get(),
                                   nullptr, d32, f32(dx));
      batchnorm_bwd_training_fused(h, bd, ep, dh, half(xhat), half(dy), ish.get(), dgh.get(),
                                   nullptr, dh, half(dx));
      const auto [dxh, dx32] = dx.results(h);
      EXPECT_TRUE(test::all_close(dxh, dx32, {5e-2, 5e-2, true}));
      EXPECT_TRUE(test::all_close(from_gpu<float>(h, dgh, C), from_gpu<float>(h, dg32, C),
                                  {5e-2, 5e-2, true}));
    }
}

}  // namespace
}  // namespace crema::prim
