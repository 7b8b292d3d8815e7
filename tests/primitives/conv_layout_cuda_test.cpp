// Channels-last (NHWC) convolution on CUDA. Every pass on NHWC tensors must give, bit for bit, what
// the same algorithm gives on the same values stored as NCHW: the implicit GEMM's NHWC path reads
// its activation operand in the same NHWC order either way (in place from a channels-last tensor
// stored in the math's 16-bit type, else from its copy), runs the same kernel and rounds each
// output once; other rows stage channels-last tensors through packed NCHW copies. In place means
// no workspace for a copy, which the handle's workspace size shows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "primitives/conv.h"
#include "problems.h"

namespace crema::prim {
namespace {

using test::ConvProblem;

// NCHW <-> NHWC orders of one tensor's values.
std::vector<float> permuted(const std::vector<float>& v, const TensorDesc& d, bool to_nhwc) {
  std::vector<float> out(v.size());
  for (int n = 0; n < d.n; ++n)
    for (int c = 0; c < d.c; ++c)
      for (int i = 0; i < d.h * d.w; ++i) {
        const size_t nchw = (size_t(n) * d.c + c) * d.h * d.w + i;
        const size_t nhwc = (size_t(n) * d.h * d.w + i) * d.c + c;
        if (to_nhwc)
          out[nhwc] = v[nchw];
        else
          out[nchw] = v[nhwc];
      }
  return out;
}

// Values in [-2, 2) exact in t (the same on both layouts' runs).
std::vector<float> values(DataType t, int64_t n, uint64_t seed) {
  std::vector<float> v = test::random_vector<float>(size_t(n), seed);
  for (float& x : v) x *= 2;
  std::vector<uint16_t> bits(v.size());
  if (t != DataType::kFloat32) {
    convert_values(DataType::kFloat32, v.data(), t, bits.data(), n);
    convert_values(t, bits.data(), DataType::kFloat32, v.data(), n);
  }
  return v;
}

// values (NCHW order) stored on the GPU in type t and layout d.
DeviceBuffer upload(const std::vector<float>& v, const TensorDesc& d) {
  const std::vector<float> ordered = d.is_packed_nhwc() ? permuted(v, d, true) : v;
  if (d.dtype == DataType::kFloat32) return to_gpu(ordered);
  std::vector<uint16_t> bits(v.size());
  convert_values(DataType::kFloat32, ordered.data(), d.dtype, bits.data(), int64_t(v.size()));
  return to_gpu(bits);
}

// The tensor at b (type and layout d) as floats in NCHW order.
std::vector<float> download(Handle& h, const DeviceBuffer& b, const TensorDesc& d) {
  const size_t n = size_t(d.count());
  std::vector<float> v(n);
  if (d.dtype == DataType::kFloat32) {
    v = from_gpu<float>(h, b, n);
  } else {
    const std::vector<uint16_t> bits = from_gpu<uint16_t>(h, b, n);
    convert_values(d.dtype, bits.data(), DataType::kFloat32, v.data(), int64_t(n));
  }
  return d.is_packed_nhwc() ? permuted(v, d, false) : v;
}

struct Outputs {
  std::vector<float> y, y_plain, dx, dw;
};

// The three passes of pb in one layout (blended outputs; forward with bias and ReLU, and plain
// with ReLU only), on a fresh handle; workspace: the handle's workspace size after the first
// forward pass.
Outputs run_passes(const ConvProblem& pb, MathMode math, DataType t, bool nhwc, ConvAlgo algo,
                   size_t* workspace = nullptr) {
  Handle h(Device::kCUDA);
  test::Descs ds = test::descs_of(pb, t);
  ds.cd.math = math;
  if (nhwc) {
    ds.xd = TensorDesc::nhwc(t, ds.xd.n, ds.xd.c, ds.xd.h, ds.xd.w);
    ds.yd = TensorDesc::nhwc(t, ds.yd.n, ds.yd.c, ds.yd.h, ds.yd.w);
  }
  ds.wd.dtype = DataType::kFloat32;
  const DeviceBuffer x = upload(values(t, ds.xd.count(), 1), ds.xd);
  const DeviceBuffer dy = upload(values(t, ds.yd.count(), 2), ds.yd);
  const DeviceBuffer w = to_gpu(values(t, ds.wd.count(), 3));
  const DeviceBuffer bias = to_gpu(values(t, ds.wd.k, 4));
  DeviceBuffer y = upload(values(t, ds.yd.count(), 5), ds.yd);
  DeviceBuffer dx = upload(values(t, ds.xd.count(), 6), ds.xd);
  DeviceBuffer dw = to_gpu(values(DataType::kFloat32, ds.wd.count(), 7));
  ConvEpilogue ep;
  ep.bias = bias.get();
  ep.relu = true;
  conv_fwd(h, ds.cd, algo, ds.xd, x.get(), ds.wd, w.get(), ds.yd, y.get(), {1.0, 0.5}, ep);
  h.synchronize();
  if (workspace) *workspace = h.workspace_size();
  DeviceBuffer y_plain = upload(values(t, ds.yd.count(), 8), ds.yd);
  ConvEpilogue relu_only;
  relu_only.relu = true;
  conv_fwd(h, ds.cd, algo, ds.xd, x.get(), ds.wd, w.get(), ds.yd, y_plain.get(), {}, relu_only);
  conv_bwd_data(h, ds.cd, algo, ds.wd, w.get(), ds.yd, dy.get(), ds.xd, dx.get(), {1.0, 0.5});
  conv_bwd_filter(h, ds.cd, algo, ds.xd, x.get(), ds.yd, dy.get(), ds.wd, dw.get(), {1.0, 1.0});
  return {download(h, y, ds.yd), download(h, y_plain, ds.yd), download(h, dx, ds.xd),
          from_gpu<float>(h, dw, size_t(ds.wd.count()))};
}

// Equal, or within rel of the largest magnitude of want.
void expect_same(const std::vector<float>& got, const std::vector<float>& want,
                 const std::string& what, double rel = 0) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double most = 0;
  for (float v : want) most = std::max(most, double(std::fabs(v)));
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i)
    if (!(std::fabs(double(got[i]) - want[i]) <= rel * most)) {
      ADD_FAILURE() << what << " [" << i << "]: NHWC " << got[i] << ", NCHW " << want[i];
      ++bad;
    }
}

// 3x3 layers whose 64 channels fill the Hopper TMA kernel's 128-byte k-tiles in BF16/FP16; 16
// channels (the 16-byte pieces of the cp.async kernels); groups; a strided 1x1 (the NHWC path
// forward and backward filter, backward data in the 1x1 row, which gathers and spreads whole
// pixels on NHWC); a 1x1 over a wide plane; a strided first layer (space_to_depth's fold reads
// x and writes dx by their strides, in any storage type); a 3x3 layer big enough for the TMA
// kernel's 256-row tiles, whose NHWC output each warpgroup stages on its own.
const ConvProblem kProblems[] = {
    {"3x3 c64", 2, 64, 10, 10, 64, 3, 3, 1, 1, 1, 1},
    {"3x3 c16", 3, 16, 9, 7, 24, 3, 3, 1, 1, 1, 1},
    {"3x3 g2", 2, 32, 8, 9, 32, 3, 3, 1, 1, 1, 1, 1, 1, 2},
    {"1x1 s2", 2, 32, 9, 11, 48, 1, 1, 0, 0, 2, 2},
    {"1x1", 2, 64, 14, 14, 128, 1, 1, 0, 0, 1, 1},
    {"7x7 s2 c3", 2, 3, 23, 21, 16, 7, 7, 3, 3, 2, 2},
    {"3x3 c64 256-row tiles", 5, 64, 96, 96, 256, 3, 3, 1, 1, 1, 1},
};

TEST(ConvLayoutCuda, ChannelsLastMatchesNchwBitForBit) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle probe(Device::kCUDA);
  const std::pair<MathMode, DataType> kinds[] = {{MathMode::kBF16, DataType::kBFloat16},
                                                 {MathMode::kFP16, DataType::kFloat16},
                                                 {MathMode::kTF32, DataType::kFloat32},
                                                 {MathMode::kFP32, DataType::kFloat32}};
  for (const auto& [math, t] : kinds)
    for (const ConvProblem& pb : kProblems) {
      test::Descs ds = test::descs_of(pb, t);
      ds.cd.math = math;
      ds.wd.dtype = DataType::kFloat32;
      const TensorDesc xn = TensorDesc::nhwc(t, ds.xd.n, ds.xd.c, ds.xd.h, ds.xd.w);
      const TensorDesc yn = TensorDesc::nhwc(t, ds.yd.n, ds.yd.c, ds.yd.h, ds.yd.w);
      for (ConvAlgo algo : conv_algos(Device::kCUDA)) {
        // Every row runs what it runs on NCHW (Winograd and direct included: staged or by strides).
        if (!conv_supports(probe, algo, ds.cd, ds.xd, ds.wd, ds.yd)) continue;
        SCOPED_TRACE(std::string(math_name(math)) + " " + pb.name + " " + conv_algo_name(algo));
        ASSERT_TRUE(conv_supports(probe, algo, ds.cd, xn, ds.wd, yn));
        const Outputs nchw = run_passes(pb, math, t, false, algo);
        const Outputs nhwc = run_passes(pb, math, t, true, algo);
        // gemm_1x1 runs half data in its own math through cuBLAS as stored, per image on NCHW
        // and as one GEMM over all pixels on NHWC (both rounding in cuBLAS, or once after the
        // spread of a strided backward data), or through f32 copies (forward with a bias): one
        // unit of the half type apart.
        const double rel = algo == ConvAlgo::kGemm1x1 && t == DataType::kBFloat16  ? 1.0 / 128
                           : algo == ConvAlgo::kGemm1x1 && t == DataType::kFloat16 ? 1.0 / 1024
                                                                                   : 0.0;
        expect_same(nhwc.y, nchw.y, "forward", rel);
        expect_same(nhwc.y_plain, nchw.y_plain, "forward without bias", rel);
        expect_same(nhwc.dx, nchw.dx, "backward data", rel);
        expect_same(nhwc.dw, nchw.dw, "backward filter", rel);
      }
    }
}

// The bias gradient of a channels-last half dy: the NCHW one, within the f32 sums' rounding.
TEST(ConvLayoutCuda, BiasGradientOfChannelsLastHalf) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle h(Device::kCUDA);
  for (DataType t : {DataType::kBFloat16, DataType::kFloat16}) {
    const TensorDesc nchw = TensorDesc::nchw(t, 3, 24, 7, 9),
                     nhwc = TensorDesc::nhwc(t, 3, 24, 7, 9);
    const std::vector<float> v = values(t, nchw.count(), 9);
    const DeviceBuffer a = upload(v, nchw), b = upload(v, nhwc);
    DeviceBuffer da = to_gpu(std::vector<float>(24, 1.0f)),
                 db = to_gpu(std::vector<float>(24, 1.0f));
    conv_bwd_bias(h, nchw, a.get(), da.get(), {1.0, 0.5});
    conv_bwd_bias(h, nhwc, b.get(), db.get(), {1.0, 0.5});
    expect_same(from_gpu<float>(h, db, 24), from_gpu<float>(h, da, 24), dtype_name(t), 1e-6);
  }
}

// kAuto on channels-last tensors in the math's 16-bit type: a stride-1 1x1 is one GEMM over the
// pixels (gemm_1x1) in every pass, and so is a strided 1x1's backward data (over the subsampled
// pixels); its forward and a 3x3 take the NHWC path.
TEST(ConvLayoutCuda, AutoOnChannelsLast) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle h(Device::kCUDA);
  auto algo_for = [&](const ConvProblem& pb, ConvPass pass) {
    test::Descs ds = test::descs_of(pb, DataType::kBFloat16);
    ds.cd.math = MathMode::kBF16;
    ds.wd.dtype = DataType::kFloat32;
    const TensorDesc xn = TensorDesc::nhwc(ds.xd.dtype, ds.xd.n, ds.xd.c, ds.xd.h, ds.xd.w);
    const TensorDesc yn = TensorDesc::nhwc(ds.yd.dtype, ds.yd.n, ds.yd.c, ds.yd.h, ds.yd.w);
    return conv_heuristic(h, ds.cd, xn, ds.wd, yn, pass);
  };
  const ConvProblem one{"1x1", 4, 64, 14, 14, 128, 1, 1, 0, 0, 1, 1};
  for (ConvPass pass : {ConvPass::kFwd, ConvPass::kBwdData, ConvPass::kBwdFilter})
    EXPECT_EQ(algo_for(one, pass), ConvAlgo::kGemm1x1);
  ConvDesc bf16;
  bf16.math = MathMode::kBF16;
  const bool hopper = conv_supports(h, ConvAlgo::kImplicitGemmSm90, bf16,
                                    TensorDesc::nchw(DataType::kFloat32, 1, 64, 8, 8),
                                    FilterDesc{DataType::kFloat32, 64, 64, 3, 3},
                                    TensorDesc::nchw(DataType::kFloat32, 1, 64, 6, 6));
  const ConvAlgo implicit = hopper ? ConvAlgo::kImplicitGemmSm90 : ConvAlgo::kImplicitGemm;
  const ConvProblem strided{"1x1 s2", 4, 64, 14, 14, 128, 1, 1, 0, 0, 2, 2};
  EXPECT_EQ(algo_for(strided, ConvPass::kFwd), implicit);
  EXPECT_EQ(algo_for(strided, ConvPass::kBwdData), ConvAlgo::kGemm1x1);
  const ConvProblem strided_small{"1x1 s2 to 7x7", 4, 64, 14, 14, 128, 1, 1, 0, 0, 2, 2};
  EXPECT_EQ(algo_for(strided_small, ConvPass::kBwdData), ConvAlgo::kGemm1x1);
  EXPECT_EQ(algo_for({"3x3", 4, 64, 14, 14, 64, 3, 3, 1, 1, 1, 1}, ConvPass::kFwd), implicit);
}

// kAuto at run time chooses as conv_heuristic does on the stored tensors: a channels-last bf16
// strided 1x1 backward data with a 7x7 output runs in gemm_1x1 as stored (its workspace: the f32
// subsampled gradient and the rounded filter), where the rules for f32 NCHW tensors would stage
// dx and dy through f32 copies for im2col.
TEST(ConvLayoutCuda, AutoRunsWhatTheHeuristicChoseOnStoredTensors) {
  CREMA_SKIP_WITHOUT_GPU();
  const ConvProblem pb{"1x1 s2 to 7x7", 4, 64, 14, 14, 128, 1, 1, 0, 0, 2, 2};
  Handle h(Device::kCUDA);
  test::Descs ds = test::descs_of(pb, DataType::kBFloat16);
  ds.cd.math = MathMode::kBF16;
  ds.wd.dtype = DataType::kFloat32;
  const TensorDesc xn = TensorDesc::nhwc(ds.xd.dtype, ds.xd.n, ds.xd.c, ds.xd.h, ds.xd.w);
  const TensorDesc yn = TensorDesc::nhwc(ds.yd.dtype, ds.yd.n, ds.yd.c, ds.yd.h, ds.yd.w);
  ASSERT_EQ(conv_heuristic(h, ds.cd, xn, ds.wd, yn, ConvPass::kBwdData), ConvAlgo::kGemm1x1);
  const DeviceBuffer w = to_gpu(values(DataType::kBFloat16, ds.wd.count(), 3));
  const DeviceBuffer dy = upload(values(DataType::kBFloat16, yn.count(), 2), yn);
  DeviceBuffer dx(Device::kCUDA, size_t(xn.count()) * 2);
  conv_bwd_data(h, ds.cd, ConvAlgo::kAuto, ds.wd, w.get(), yn, dy.get(), xn, dx.get());
  h.synchronize();
  // Staged, dx and dy alone would take (x + y) * 4 bytes of it.
  const size_t sub = size_t(yn.n) * xn.c * yn.h * yn.w * 4, filter = size_t(ds.wd.count()) * 2;
  EXPECT_LT(h.workspace_size(), size_t(xn.count()) * 4);
  EXPECT_LE(h.workspace_size(), 2 * (sub + filter));
  EXPECT_LE(h.workspace_size(), conv_workspace_size(h, ConvAlgo::kAuto, ds.cd, xn, ds.wd, yn));
}

// In the math's 16-bit type the NHWC path reads a channels-last x in place: the forward pass asks
// for no workspace the size of x (only the filter rounded into rows, and the k-tiles' pieces).
TEST(ConvLayoutCuda, HalfChannelsLastIsReadInPlace) {
  CREMA_SKIP_WITHOUT_GPU();
  const ConvProblem pb{"big x", 8, 64, 32, 32, 64, 3, 3, 1, 1, 1, 1};
  const int64_t x_bytes = int64_t(pb.n) * pb.c * pb.h * pb.w * 2;
  for (ConvAlgo algo : {ConvAlgo::kImplicitGemm, ConvAlgo::kImplicitGemmSm90}) {
    Handle probe(Device::kCUDA);
    test::Descs ds = test::descs_of(pb, DataType::kBFloat16);
    ds.cd.math = MathMode::kBF16;
    ds.wd.dtype = DataType::kFloat32;
    if (!conv_supports(probe, algo, ds.cd, ds.xd, ds.wd, ds.yd)) continue;
    SCOPED_TRACE(conv_algo_name(algo));
    size_t nchw_ws = 0, nhwc_ws = 0;
    run_passes(pb, MathMode::kBF16, DataType::kBFloat16, false, algo, &nchw_ws);
    run_passes(pb, MathMode::kBF16, DataType::kBFloat16, true, algo, &nhwc_ws);
    EXPECT_GE(int64_t(nchw_ws), x_bytes);  // the copy
    EXPECT_LT(int64_t(nhwc_ws), x_bytes / 4);
  }
}

}  // namespace
}  // namespace crema::prim
