// kAuto's choice of convolution row (conv_heuristic in primitives/conv.h): rules measured on the
// reference nets' layers first, then the table's order of preference.
#include <string>

#include "primitives/common/choice_log.h"
#include "primitives/conv/conv_impl.h"

namespace crema::prim {

ConvAlgo conv_choose(Handle& h, const ConvProblem& pr, ConvPass pass, ConvStored stored) {
  const ConvDesc& cd = pr.cd;
  const FilterDesc& wd = pr.wd;
  // On CUDA a convolution reading one input channel per output (depthwise) is memory-bound: the
  // direct kernel reads each input once per tap from cache, where im2col would write and read a
  // patch matrix R*S times the input and run GEMMs with an inner dimension of R*S.
  if (h.device() != Device::kCPU && cd.groups > 1 && wd.c == 1) return ConvAlgo::kDirect;
#ifdef CREMA_WITH_CUDA
  const TensorDesc &xd = pr.xd, &yd = pr.yd;
  // In tensor-core math, a filter wider than 1x1 whose channels fill 16-byte pieces goes to the
  // implicit GEMM's NHWC path, which reads each input once per channel tile where im2col writes and
  // reads R*S copies of it; unless the pass has fewer than 16 output channels per group, a sliver
  // of the path's 128-column tiles (LeNet's conv1 backward data: 1). A 1x1 without padding is a
  // GEMM on the input (strided: on the subsampled input) in the table's first row, whose GEMMs run
  // per image. In BF16/FP16 math the NHWC path's one GEMM over every image's rows takes a 1x1 where
  // those are narrow or need a gathered copy: a strided one (forward and backward filter), output
  // planes under 100 values, and backward filter on planes up to 14x14 (ResNet-50 BF16 on an H100:
  // res3a_branch2a, 56x56 to 28x28, 0.53 -> 0.23 ms forward; the 7x7 res5 layers 2.2-3.3x faster
  // forward and backward data; res4b_branch2a's backward filter 0.18 -> 0.13 ms; at 14x14 and above
  // the per-image GEMMs win forward and backward data). Other strided 1x1s with output planes under
  // 64 values on f32 tensors go to im2col, whose GEMMs over a chunk of images are wider
  // (ResNet-50's res5a_branch1 backward data in TF32); on tensors stored in the math's 16-bit type
  // the 1x1 row runs them as stored, where im2col would stage them through f32 copies. TF32
  // backward filter goes to the path only for grouped layers, where im2col runs a GEMM per group:
  // on ungrouped ones cuBLAS's TF32 GEMM over the patch matrix is faster (ResNet-50's 3x3 layers:
  // 1.3-2x). An ungrouped layer with fewer input channels than a piece (an image's colours), which
  // the path pads to one with zeros, goes there in BF16/FP16 math with at least 2^18 output points
  // (CaffeNet's conv1 forward 2.29 -> 1.49 ms, backward filter 2.62 -> 1.76; ResNet-50's 1.37 ->
  // 1.12 and 1.81 -> 1.06): LeNet's and CIFAR-10's conv1 and TF32's padding to 4 run faster on
  // im2col. A stride-1 1x1 on channels-last tensors in the math's 16-bit type is one GEMM over
  // every image's pixels in gemm_1x1, as cuBLAS reads them, and so is a strided one's backward data
  // (over the subsampled pixels, then spread; through im2col's f32 copies ResNet-50's res5a layers
  // took 1.9 ms a step); other channels-last 1x1s in tensor-core math take the NHWC path, which
  // reads them in place. On compute capability 9.0 the Hopper row (wgmma), where the rules above
  // were measured.
  //
  // The backward filter of a first layer (up to 4 input channels, at most 2^28 multiply-adds,
  // stride 1; f32/f64 NCHW tensors, fp32 or TF32 math) goes to the direct row's tiled kernel
  // (conv_filter_tiles_cuda.cu), where im2col's GEMM is only 25-75 deep. H200, fp32: LeNet's
  // conv1 30.8 -> 15.7 us, CIFAR-10 quick's 125 -> 79; LeNet's conv2 (20 channels) 25.7 -> 67.
  const bool plain_data = xd.dtype == yd.dtype && !stored.channels_last &&
                          (xd.dtype == DataType::kFloat32 || xd.dtype == DataType::kFloat64);
  const double macs = double(wd.count()) * yd.n * yd.h * yd.w;
  const bool fp32_math = cd.math == MathMode::kFP32 || cd.math == MathMode::kTF32;
  if (h.device() == Device::kCUDA && pass == ConvPass::kBwdFilter && plain_data && fp32_math &&
      wd.c <= 4 && macs <= double(1 << 28) && cuda::direct_filter_tiles(pr))
    return ConvAlgo::kDirect;
  // Its forward, up to 2^25 multiply-adds, goes to the direct row's staged kernel
  // (conv_fwd_tiles_cuda.cu): one kernel where im2col runs three. H200, TF32: LeNet's conv1
  // (18.4 M) 17.0 -> 10.1 us; CIFAR-10 quick's (246 M) would go 33.6 -> 58 us on CUDA cores.
  if (h.device() == Device::kCUDA && pass == ConvPass::kFwd && plain_data && fp32_math &&
      wd.c <= 4 && macs <= double(1 << 25) && cuda::direct_fwd_tiles(pr))
    return ConvAlgo::kDirect;
  // A stride-1 TF32 backward filter wider than 1x1 goes to the Hopper row's kernel over padded
  // planes (conv_wgrad_planes.cuh), which runs it on wgmma where the NHWC path's copies leave it
  // to mma.sync or im2col. H100, ms, against the rows kAuto took before (measured 2026-11-26):
  // CaffeNet's conv2 1.50 -> 1.31 (mma.sync), conv4 0.97 -> 0.52, conv5 0.61 -> 0.48; conv3 0.57
  // (im2col) -> 0.59.
  if (h.device() == Device::kCUDA && pass == ConvPass::kBwdFilter && cd.math == MathMode::kTF32 &&
      wd.r * wd.s > 1 && !cuda::wgrad_planes_unsupported(pr) &&
      !cuda::kConvImplicitGemmSm90.unsupported(pr))
    return ConvAlgo::kImplicitGemmSm90;
  const bool strided = cd.stride_h != 1 || cd.stride_w != 1;
  const int64_t plane = int64_t(yd.h) * yd.w;
  const bool half_math = cd.math == MathMode::kBF16 || cd.math == MathMode::kFP16;
  // A strided first layer (up to 4 input channels) in tensor-core math with at least 2^18 output
  // points folds its stride into channels (space_to_depth): a stride-1 layer of C*sh*sw channels
  // for the implicit GEMM, where padding its colours to a piece multiplies mostly zeros and im2col
  // rounds a patch matrix through memory. H200, BF16, ms: CaffeNet's conv1 (b256) forward 1.31 ->
  // 0.83, backward filter 1.39 -> 0.83, backward data (im2col) 5.24 -> 1.19; ResNet-50's (b128)
  // 0.81 -> 0.57, 0.68 -> 0.60, 2.66 -> 1.39. In TF32 only forward and backward data of folds of
  // at least 32 channels: CaffeNet's (48) 1.65 -> 1.37 and 4.93 -> 1.46 from im2col; ResNet-50's
  // 12 tie forward and lose 5% backward data, and TF32 backward filter, on mma.sync, loses
  // (CaffeNet's 1.96 -> 2.46).
  const int folded = wd.c * cd.stride_h * cd.stride_w;
  const bool fold_pass =
      half_math || (cd.math == MathMode::kTF32 && pass != ConvPass::kBwdFilter && folded >= 32);
  if (h.device() == Device::kCUDA && fold_pass && strided && wd.c <= 4 &&
      int64_t(yd.n) * plane >= (int64_t(1) << 18) && !cuda::kConvSpaceToDepth.unsupported(pr))
    return ConvAlgo::kSpaceToDepth;
  const bool pixel_gemm =
      stored.own_nhwc && wd.r * wd.s == 1 && (!strided || pass == ConvPass::kBwdData);
  if (h.device() == Device::kCUDA && pixel_gemm && !cuda::kConvGemm1x1.unsupported(pr))
    return ConvAlgo::kGemm1x1;
  const bool one_by_one_nhwc =
      (stored.channels_last && cd.math != MathMode::kFP32) ||
      (half_math && (strided || plane < 100 || (pass == ConvPass::kBwdFilter && plane <= 196)) &&
       !cuda::kConvImplicitGemmSm90.unsupported(pr));
  const int columns = pass == ConvPass::kBwdData ? wd.c : wd.k / cd.groups;
  const bool ungrouped_tf32_filter =
      pass == ConvPass::kBwdFilter && cd.math == MathMode::kTF32 && cd.groups == 1;
  const bool padded_inputs = cuda::nhwc_input_channels(wd.c, cd.groups, cd.math) != wd.c;
  const bool worth_padding = half_math && int64_t(yd.n) * plane >= (int64_t(1) << 18);
  // In TF32 on f32 NCHW tensors, a problem the path covers with fewer than 64 of its tiles (128
  // GEMM rows by 64 columns) leaves most of a large GPU idle, and its copies (the input to NHWC,
  // the filter's rows, the piece table) cost as much as its GEMM: im2col + cuBLAS's TF32 GEMM
  // takes it (H200: LeNet's conv2 at batch 64, 32 tiles, forward 25.0 -> 16.0 us).
  const int64_t gemm_rows =
      pass == ConvPass::kBwdData ? int64_t(xd.n) * xd.h * xd.w : int64_t(yd.n) * plane;
  const int64_t nhwc_tiles = (gemm_rows + 127) / 128 * ((columns + 63) / 64) * cd.groups;
  const bool few_tf32_tiles =
      cd.math == MathMode::kTF32 && !stored.channels_last && !stored.own_half && nhwc_tiles < 64;
  if (h.device() == Device::kCUDA && (wd.r * wd.s > 1 || one_by_one_nhwc) && columns >= 16 &&
      !ungrouped_tf32_filter && !few_tf32_tiles && (!padded_inputs || worth_padding) &&
      cuda::igemm_nhwc_applies(pr, pass) && !cuda::kConvImplicitGemm.unsupported(pr))
    return cuda::kConvImplicitGemmSm90.unsupported(pr) ? ConvAlgo::kImplicitGemm
                                                       : ConvAlgo::kImplicitGemmSm90;
  // In strict fp32 math a 3x3 stride-1 layer with at least 32 channels in and out per group goes
  // to Winograd F(4x4, 3x3): 36 multiplies per 4x4 tile where im2col + GEMM does 144, at about
  // 2^-18 of the summed magnitude in error (conv_winograd.h). On an H200 VGG-16's layers from
  // conv1_2 on ran 1.35-3.3x faster than on im2col in every pass (conv3_2 forward 5.56 -> 1.82
  // ms); its conv1_1, 3 input channels, ran 2.1-4x slower, its transforms feeding GEMMs 3 deep.
  const int per_group_out = wd.k / cd.groups;
  if (h.device() == Device::kCUDA && cd.math == MathMode::kFP32 && xd.dtype == DataType::kFloat32 &&
      wd.c >= 32 && per_group_out >= 32 && !cuda::kConvWinograd.unsupported(pr))
    return ConvAlgo::kWinograd;
  if (h.device() == Device::kCUDA && wd.r * wd.s == 1 && strided && plane < 64 &&
      !stored.own_half && !stored.channels_last && !cuda::kConvIm2colGemm.unsupported(pr))
    return ConvAlgo::kIm2colGemm;
#else
  (void)pass;
  (void)stored;
#endif
  for (ConvAlgo a : conv_algos(h.device())) {
    const ConvImpl* row = conv_row(h.device(), a);
    const char* why = row->unsupported(pr);
    if (!why) return row->algo;
    if (choice_log_on())
      log_choice_once(std::string("crema: conv ") + device_name(h.device()) + " skips " +
                      conv_algo_name(row->algo) + " (" + why + ") for " + conv_problem_key(pr));
  }
  throw PrimError("conv: no algorithm on " + std::string(device_name(h.device())) +
                  " supports this problem");
}

}  // namespace crema::prim
