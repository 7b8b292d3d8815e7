// bench_prim's convolution rows: crema's conv_fwd / conv_bwd_data / conv_bwd_filter against
// cudnnConvolutionForward / BackwardData / BackwardFilter on the same input buffers, for the
// named layers of problems.h plus more layers of the same nets, at training batch sizes.
// cuDNN runs its fastest algorithm by cudnnFind*AlgorithmEx with a large workspace, in strict
// fp32 (CUDNN_FMA_MATH: no TF32 tensor cores) as crema's ConvDesc::math kFP32; with --math=tf32
// in CUDNN_TENSOR_OP_MATH against crema's kTF32; with --math=bf16|fp16 both read and write the
// activations (x, y, dy, dx) in that 16-bit type, as crema's layers store them in training, with
// fp32 accumulation. crema's filter and filter gradient stay fp32 (its master weights); cuDNN's
// are 16-bit copies. With --layout=nhwc both store the activations channels last, and cuDNN's
// filter is KRSC (its NHWC filter format, as PyTorch's channels_last keeps weights).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_prim.h"
#include "primitives/conv.h"
#include "primitives/tensor_copy.h"
#include "problems.h"

namespace crema::bench {
namespace {

using prim::ConvAlgo;
using test::ConvProblem;
constexpr prim::DataType kF32 = prim::DataType::kFloat32;

// Layers of the benchmarked nets beyond the shared list (which stays short to keep the tests
// fast). Batch sizes here are placeholders: batch_for sets them.
const std::vector<ConvProblem>& extra_conv_problems() {
  static const std::vector<ConvProblem> list = {
      {"caffenet:conv4", 1, 384, 13, 13, 384, 3, 3, 1, 1, 1, 1, 1, 1, 2},
      {"caffenet:conv5", 1, 384, 13, 13, 256, 3, 3, 1, 1, 1, 1, 1, 1, 2},
      {"googlenet:conv1/7x7_s2", 1, 3, 224, 224, 64, 7, 7, 3, 3, 2, 2},
      {"googlenet:conv2/3x3_reduce", 1, 64, 56, 56, 64, 1, 1, 0, 0, 1, 1},
      {"googlenet:conv2/3x3", 1, 64, 56, 56, 192, 3, 3, 1, 1, 1, 1},
      {"googlenet:inception_3a/1x1", 1, 192, 28, 28, 64, 1, 1, 0, 0, 1, 1},
      {"googlenet:inception_3a/3x3", 1, 96, 28, 28, 128, 3, 3, 1, 1, 1, 1},
      {"googlenet:inception_4a/3x3", 1, 96, 14, 14, 208, 3, 3, 1, 1, 1, 1},
      {"resnet50:conv1", 1, 3, 224, 224, 64, 7, 7, 3, 3, 2, 2},
      {"resnet50:res2a_branch2b", 1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1},
      {"resnet50:res2a_branch2c", 1, 64, 56, 56, 256, 1, 1, 0, 0, 1, 1},
      {"resnet50:res3a_branch2a", 1, 256, 56, 56, 128, 1, 1, 0, 0, 2, 2},
      {"resnet50:res3b_branch2b", 1, 128, 28, 28, 128, 3, 3, 1, 1, 1, 1},
      {"resnet50:res4b_branch2b", 1, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1},
      {"resnet50:res5b_branch2b", 1, 512, 7, 7, 512, 3, 3, 1, 1, 1, 1},
      {"resnet50:res5a_branch2c", 1, 512, 7, 7, 2048, 1, 1, 0, 0, 1, 1},
      {"resnet50:res4a_branch1", 1, 512, 28, 28, 1024, 1, 1, 0, 0, 2, 2},
      {"resnet50:res4b_branch2a", 1, 1024, 14, 14, 256, 1, 1, 0, 0, 1, 1},
      {"resnet50:res4b_branch2c", 1, 256, 14, 14, 1024, 1, 1, 0, 0, 1, 1},
      {"resnet50:res5b_branch2a", 1, 2048, 7, 7, 512, 1, 1, 0, 0, 1, 1},
      {"vgg16:conv1_1", 1, 3, 224, 224, 64, 3, 3, 1, 1, 1, 1},
      {"vgg16:conv1_2", 1, 64, 224, 224, 64, 3, 3, 1, 1, 1, 1},
      {"vgg16:conv2_1", 1, 64, 112, 112, 128, 3, 3, 1, 1, 1, 1},
      {"vgg16:conv2_2", 1, 128, 112, 112, 128, 3, 3, 1, 1, 1, 1},
      {"vgg16:conv3_1", 1, 128, 56, 56, 256, 3, 3, 1, 1, 1, 1},
      {"vgg16:conv3_2", 1, 256, 56, 56, 256, 3, 3, 1, 1, 1, 1},  // and conv3_3
      {"vgg16:conv4_1", 1, 256, 28, 28, 512, 3, 3, 1, 1, 1, 1},
      {"vgg16:conv4_2", 1, 512, 28, 28, 512, 3, 3, 1, 1, 1, 1},  // and conv4_3
      {"vgg16:conv5_1", 1, 512, 14, 14, 512, 3, 3, 1, 1, 1, 1},  // and conv5_2, conv5_3
  };
  return list;
}

// cuDNN's algorithm enums by value (the same values in cuDNN 7 to 9).
const char* cudnn_algo_name(int pass, int algo) {
  static const char* const fwd[] = {
      "implicit_gemm", "implicit_precomp_gemm", "gemm", "direct", "fft", "fft_tiling",
      "winograd",      "winograd_nonfused"};
  static const char* const data[] = {"algo_0",     "algo_1",   "fft",
                                     "fft_tiling", "winograd", "winograd_nonfused"};
  static const char* const filter[] = {
      "algo_0", "algo_1", "fft", "algo_3", "winograd", "winograd_nonfused", "fft_tiling"};
  const char* const* names[] = {fwd, data, filter};
  const int counts[] = {8, 6, 7};
  return algo >= 0 && algo < counts[pass] ? names[pass][algo] : "unknown";
}

class ConvD : public CudnnObject<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                                 cudnnDestroyConvolutionDescriptor> {
 public:
  ConvD(const prim::ConvDesc& cd, bool tensor_ops) {
    BENCH_CUDNN(cudnnSetConvolution2dDescriptor(d_, cd.pad_h, cd.pad_w, cd.stride_h, cd.stride_w,
                                                cd.dilation_h, cd.dilation_w,
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    BENCH_CUDNN(cudnnSetConvolutionGroupCount(d_, cd.groups));
    // Strict fp32: plain FMAs only, TF32 tensor cores would win by precision, not by the
    // algorithm. Otherwise tensor cores allowed, as crema's kTF32 / kBF16 / kFP16.
    BENCH_CUDNN(
        cudnnSetConvolutionMathType(d_, tensor_ops ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
  }
};

// The successful results of a Find call in the compared math (strict fp32 excludes tensor-core
// results), fastest first (Find sorts them by time).
template <typename Perf>
std::vector<std::pair<int, size_t>> candidates(const Perf* perf, int returned, bool tensor_ops,
                                               const char* what) {
  std::vector<std::pair<int, size_t>> out;
  for (int i = 0; i < returned; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS &&
        (tensor_ops || (perf[i].mathType != CUDNN_TENSOR_OP_MATH &&
                        perf[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)))
      out.emplace_back(int(perf[i].algo), perf[i].memory);
  if (out.empty()) throw std::runtime_error(std::string(what) + ": no algorithm succeeded");
  return out;
}

std::string with_ws(const std::string& name, size_t bytes) {
  if (bytes == 0) return name;
  char buf[48];
  std::snprintf(buf, sizeof(buf), " (ws %.0f MiB)", double(bytes) / (1 << 20));
  return name + buf;
}

// One problem's shared state: descriptors of both libraries and the input buffers (crema's x
// and dy in its activation type, w fp32).
struct ConvCase {
  std::string layer;
  prim::ConvDesc cd;
  prim::TensorDesc xd, yd;
  prim::FilterDesc wd;
  const TensorD& xD;
  const TensorD& yD;
  const FilterD& wD;
  const ConvD& convD;
  const prim::DeviceBuffer& x;
  const prim::DeviceBuffer& w;
  const prim::DeviceBuffer& dy;
  // cuDNN's inputs: x, w, dy themselves, or their 16-bit copies under --math=bf16|fp16.
  const prim::DeviceBuffer& dnn_x;
  const prim::DeviceBuffer& dnn_w;
  const prim::DeviceBuffer& dnn_dy;
  prim::DataType dnn_type;  // cuDNN's tensors and crema's activations
  void* ws;                 // cuDNN workspace
  size_t ws_bytes;
  double flops;
};

enum Pass { kFwd = 0, kBwdData = 1, kBwdFilter = 2 };
const char* const kPassName[] = {"fwd", "bwd data", "bwd filter"};

// Runs crema's pass with a concrete (or kFind) algorithm on inputs a, b into out.
void crema_pass(Context& c, const ConvCase& k, Pass p, ConvAlgo algo, const void* a, const void* b,
                void* out) {
  switch (p) {
    case kFwd:
      prim::conv_fwd(c.h, k.cd, algo, k.xd, a, k.wd, b, k.yd, out);
      break;
    case kBwdData:
      prim::conv_bwd_data(c.h, k.cd, algo, k.wd, a, k.yd, b, k.xd, out);
      break;
    case kBwdFilter:
      prim::conv_bwd_filter(c.h, k.cd, algo, k.xd, a, k.yd, b, k.wd, out);
      break;
  }
}

void cudnn_pass(Context& c, const ConvCase& k, Pass p, int algo, const void* a, const void* b,
                void* out) {
  const float one = 1, zero = 0;
  switch (p) {
    case kFwd:
      BENCH_CUDNN(cudnnConvolutionForward(c.dnn, &one, k.xD.get(), a, k.wD.get(), b, k.convD.get(),
                                          cudnnConvolutionFwdAlgo_t(algo), k.ws, k.ws_bytes, &zero,
                                          k.yD.get(), out));
      break;
    case kBwdData:
      BENCH_CUDNN(cudnnConvolutionBackwardData(c.dnn, &one, k.wD.get(), a, k.yD.get(), b,
                                               k.convD.get(), cudnnConvolutionBwdDataAlgo_t(algo),
                                               k.ws, k.ws_bytes, &zero, k.xD.get(), out));
      break;
    case kBwdFilter:
      BENCH_CUDNN(cudnnConvolutionBackwardFilter(
          c.dnn, &one, k.xD.get(), a, k.yD.get(), b, k.convD.get(),
          cudnnConvolutionBwdFilterAlgo_t(algo), k.ws, k.ws_bytes, &zero, k.wD.get(), out));
      break;
  }
}

// cuDNN's fp32 algorithms for the pass, fastest first, with their workspace bytes (Find writes
// into out).
std::vector<std::pair<int, size_t>> cudnn_find(Context& c, const ConvCase& k, Pass p, const void* a,
                                               const void* b, void* out) {
  switch (p) {
    case kFwd: {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      int n = 0;
      BENCH_CUDNN(cudnnFindConvolutionForwardAlgorithmEx(
          c.dnn, k.xD.get(), a, k.wD.get(), b, k.convD.get(), k.yD.get(), out,
          CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf, k.ws, k.ws_bytes));
      return candidates(perf, n, c.opt.math != "fp32", "cudnnFindConvolutionForwardAlgorithmEx");
    }
    case kBwdData: {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      int n = 0;
      BENCH_CUDNN(cudnnFindConvolutionBackwardDataAlgorithmEx(
          c.dnn, k.wD.get(), a, k.yD.get(), b, k.convD.get(), k.xD.get(), out,
          CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf, k.ws, k.ws_bytes));
      return candidates(perf, n, c.opt.math != "fp32",
                        "cudnnFindConvolutionBackwardDataAlgorithmEx");
    }
    case kBwdFilter: {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      int n = 0;
      BENCH_CUDNN(cudnnFindConvolutionBackwardFilterAlgorithmEx(
          c.dnn, k.xD.get(), a, k.yD.get(), b, k.convD.get(), k.wD.get(), out,
          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf, k.ws, k.ws_bytes));
      return candidates(perf, n, c.opt.math != "fp32",
                        "cudnnFindConvolutionBackwardFilterAlgorithmEx");
    }
  }
  return {};
}

// crema's algorithm for the pass as --crema-algo asks: the heuristic the layers use (auto),
// the timed choice of find (read back from the Handle's cache, which holds only this pass's
// entry), or a named algorithm. find writes into out.
ConvAlgo crema_choice(Context& c, const ConvCase& k, Pass p, const void* a, const void* b,
                      void* out, std::string& label) {
  const ConvAlgo heur = prim::conv_heuristic(c.h, k.cd, k.xd, k.wd, k.yd, prim::ConvPass(p));
  ConvAlgo algo = heur;
  if (c.opt.crema_algo == "find") {
    c.h.algo_cache().clear();
    crema_pass(c, k, p, ConvAlgo::kFind, a, b, out);
    if (c.h.algo_cache().size() != 1)
      throw std::runtime_error("crema find left " + std::to_string(c.h.algo_cache().size()) +
                               " cache entries, expected 1");
    algo = static_cast<ConvAlgo>(c.h.algo_cache().begin()->second);
  } else if (c.opt.crema_algo != "auto") {
    bool known = false;
    for (ConvAlgo a2 : prim::conv_algos(c.h.device()))
      if (c.opt.crema_algo == prim::conv_algo_name(a2)) {
        known = true;
        algo = a2;
      }
    if (!known) throw std::runtime_error("unknown --crema-algo " + c.opt.crema_algo);
    if (!prim::conv_supports(c.h, algo, k.cd, k.xd, k.wd, k.yd))
      throw std::runtime_error(c.opt.crema_algo + " does not support this layer");
  }
  label = with_ws(prim::conv_algo_name(algo),
                  prim::conv_workspace_size(c.h, algo, k.cd, k.xd, k.wd, k.yd));
  if (algo != heur) label += std::string(", auto: ") + prim::conv_algo_name(heur);
  return algo;
}

// count elements of src (fp32) as type t, in a new buffer.
prim::DeviceBuffer convert(Context& c, const void* src, int64_t count, prim::DataType from,
                           prim::DataType to) {
  prim::DeviceBuffer out(prim::Device::kCUDA, size_t(count) * prim::dtype_size(to));
  prim::tensor_copy(c.h, prim::ViewDesc::packed(from, {count}), src,
                    prim::ViewDesc::packed(to, {count}), out.get());
  c.h.synchronize();
  return out;
}

// A KCRS filter of type `from` at src as a new KRSC filter of type `to` (to_krsc), or the other
// way: cuDNN's NHWC filter format.
prim::DeviceBuffer permute_filter(Context& c, const void* src, const prim::FilterDesc& wd,
                                  prim::DataType from, prim::DataType to, bool to_krsc) {
  const int64_t rs = int64_t(wd.r) * wd.s;
  prim::ViewDesc kcrs = prim::ViewDesc::packed(from, {wd.k, wd.c, wd.r, wd.s});
  prim::ViewDesc krsc = kcrs;  // the same (k, c, r, s) index, KRSC strides
  krsc.stride[0] = rs * wd.c, krsc.stride[1] = 1, krsc.stride[2] = int64_t(wd.s) * wd.c;
  krsc.stride[3] = wd.c;
  prim::ViewDesc in = to_krsc ? kcrs : krsc, out = to_krsc ? krsc : kcrs;
  in.dtype = from;
  out.dtype = to;
  prim::DeviceBuffer dst(prim::Device::kCUDA, size_t(wd.count()) * prim::dtype_size(to));
  prim::tensor_copy(c.h, in, src, out, dst.get());
  c.h.synchronize();
  return dst;
}

// The math's cuDNN data type: 16-bit tensors for BF16 / FP16, fp32 otherwise.
prim::DataType dnn_type(const std::string& math) {
  return math == "bf16"   ? prim::DataType::kBFloat16
         : math == "fp16" ? prim::DataType::kFloat16
                          : kF32;
}

cudnnDataType_t cudnn_type(prim::DataType t) {
  return t == prim::DataType::kBFloat16  ? CUDNN_DATA_BFLOAT16
         : t == prim::DataType::kFloat16 ? CUDNN_DATA_HALF
                                         : CUDNN_DATA_FLOAT;
}

// count values of type t at p, widened to fp32 on the host.
std::vector<float> host_f32(Context& c, const void* p, int64_t count, prim::DataType t) {
  if (t == kF32) return to_host(c.stream, p, count);
  const prim::DeviceBuffer wide = convert(c, p, count, t, kF32);
  return to_host(c.stream, wide.get(), count);
}

// An output buffer of count values of type t (fp32 ones start as NaN).
prim::DeviceBuffer out_buffer(int64_t count, prim::DataType t) {
  return t == kF32 ? nan_buffer(count)
                   : prim::DeviceBuffer(prim::Device::kCUDA, size_t(count) * prim::dtype_size(t));
}

void bench_pass(Context& c, const ConvCase& k, Pass p) {
  // Inputs (a, b) and output of each pass: fwd (x, w) -> y, bwd data (w, dy) -> dx,
  // bwd filter (x, dy) -> dw. crema's activations are cuDNN's; its filter and dw are fp32.
  const int64_t out_count = p == kFwd ? k.yd.count() : p == kBwdData ? k.xd.count() : k.wd.count();
  const prim::DeviceBuffer& dnn_a = p == kBwdData ? k.dnn_w : k.dnn_x;
  const prim::DeviceBuffer& dnn_b = p == kFwd ? k.dnn_w : k.dnn_dy;
  const prim::DeviceBuffer& in_a = p == kBwdData ? k.w : dnn_a;
  const prim::DeviceBuffer& in_b = p == kFwd ? k.w : dnn_b;
  const prim::DataType crema_out_type = p == kBwdFilter ? kF32 : k.dnn_type;
  prim::DeviceBuffer out_crema = out_buffer(out_count, crema_out_type);
  prim::DeviceBuffer out_dnn = out_buffer(out_count, k.dnn_type);
  const void* a = in_a.get();
  const void* b = in_b.get();
  auto dnn_result = [&] {
    if (p != kBwdFilter || !c.opt.nhwc) return host_f32(c, out_dnn.get(), out_count, k.dnn_type);
    const prim::DeviceBuffer kcrs =
        permute_filter(c, out_dnn.get(), k.wd, k.dnn_type, kF32, false);  // cuDNN's KRSC dw
    return to_host(c.stream, kcrs.get(), out_count);
  };

  Row row{"conv", k.layer, kPassName[p]};
  const ConvAlgo algo = crema_choice(c, k, p, a, b, out_crema.get(), row.crema_algo);
  crema_pass(c, k, p, algo, a, b, out_crema.get());
  const std::vector<float> crema_out = host_f32(c, out_crema.get(), out_count, crema_out_type);
  // The baseline is cuDNN's fastest algorithm whose result agrees with crema's (crema's own
  // tests hold it to the CPU implementation): cuDNN 9's winograd_nonfused, for one, is off by
  // 2-6% on CaffeNet's grouped 5x5 conv2 in fp32 and would otherwise win on a wrong answer.
  // In TF32 both sides round their inputs to 10 mantissa bits (relative 2^-11 each), so they
  // may differ by a few times that; BF16 / FP16 inputs round alike on both sides, but cuDNN's
  // output is rounded to 16 bits too (relative 2^-9 for BF16).
  const double max_err = c.opt.math == "fp32" ? 1e-3 : c.opt.math == "bf16" ? 2e-2 : 1e-2;
  int dnn_algo = -1;
  std::string rejected;
  for (const auto& [cand, cand_ws] : cudnn_find(c, k, p, dnn_a.get(), dnn_b.get(), out_dnn.get())) {
    cudnn_pass(c, k, p, cand, dnn_a.get(), dnn_b.get(), out_dnn.get());
    const double err = max_rel_err(crema_out, dnn_result());
    if (err <= max_err) {
      dnn_algo = cand;
      row.err = err;
      row.cudnn_algo = with_ws(cudnn_algo_name(p, cand), cand_ws);
      break;
    }
    char buf[96];
    std::snprintf(buf, sizeof(buf), "%s%s off by %.1e", rejected.empty() ? "" : ", ",
                  cudnn_algo_name(p, cand), err);
    rejected += buf;
  }
  if (dnn_algo < 0)
    throw std::runtime_error("outputs differ from every cuDNN algorithm: " + rejected);
  if (!rejected.empty()) row.cudnn_algo += " (faster but rejected: " + rejected + ")";

  Rotation rot({{in_a.get(), in_a.bytes()},
                {in_b.get(), in_b.bytes()},
                {out_crema.get(), out_crema.bytes()},
                {out_dnn.get(), out_dnn.bytes()},
                {dnn_a.get(), dnn_a.bytes()},
                {dnn_b.get(), dnn_b.bytes()}},
               c.l2_bytes);
  const std::vector<double> ms = median_ms(
      c.stream, c.opt.repeats,
      {[&](int i) { crema_pass(c, k, p, algo, rot.at(0, i), rot.at(1, i), rot.at(2, i)); },
       [&](int i) { cudnn_pass(c, k, p, dnn_algo, rot.at(4, i), rot.at(5, i), rot.at(3, i)); }});
  row.crema_ms = ms[0];
  row.cudnn_ms = ms[1];
  row.flops = k.flops;
  print_row(row);
}

// cuDNN's workspace: up to 4 GiB, leaving room for crema's workspace and the rotation copies.
size_t cudnn_workspace_bytes() {
  size_t free = 0, total = 0;
  BENCH_CUDA(cudaMemGetInfo(&free, &total));
  const size_t reserve = size_t(2) << 30;
  return std::min(size_t(4) << 30, free > 2 * reserve ? free - reserve : free / 4);
}

void bench_problem(Context& c, const ConvProblem& p0) {
  const std::string layer = p0.name;
  bool want[3], any = false;
  for (int p = 0; p < 3; ++p) any |= want[p] = selected(c.opt, "conv", layer, kPassName[p]);
  if (!any) return;

  const int n = batch_for(c.opt, layer);
  prim::ConvDesc cd;
  cd.pad_h = p0.pad_h;
  cd.pad_w = p0.pad_w;
  cd.stride_h = p0.stride_h;
  cd.stride_w = p0.stride_w;
  cd.dilation_h = p0.dilation_h;
  cd.dilation_w = p0.dilation_w;
  cd.groups = p0.groups;
  cd.math = c.opt.math == "tf32"   ? prim::MathMode::kTF32
            : c.opt.math == "bf16" ? prim::MathMode::kBF16
            : c.opt.math == "fp16" ? prim::MathMode::kFP16
                                   : prim::MathMode::kFP32;
  const prim::DataType dt = dnn_type(c.opt.math);
  const auto layout = c.opt.nhwc ? &prim::TensorDesc::nhwc : &prim::TensorDesc::nchw;
  const prim::TensorDesc xd = layout(dt, n, p0.c, p0.h, p0.w);
  const prim::FilterDesc wd{kF32, p0.k, p0.c / p0.groups, p0.r, p0.s};
  const int P = prim::conv_out_dim(p0.h, p0.r, p0.pad_h, p0.stride_h, p0.dilation_h);
  const int Q = prim::conv_out_dim(p0.w, p0.s, p0.pad_w, p0.stride_w, p0.dilation_w);
  const prim::TensorDesc yd = layout(dt, n, p0.k, P, Q);
  prim::conv_check(cd, xd, wd, yd);

  const TensorD xD(n, p0.c, p0.h, p0.w, cudnn_type(dt), c.opt.nhwc),
      yD(n, p0.k, P, Q, cudnn_type(dt), c.opt.nhwc);
  const FilterD wD(wd.k, wd.c, wd.r, wd.s, cudnn_type(dt), c.opt.nhwc);
  const ConvD convD(cd, c.opt.math != "fp32");
  int on = 0, oc = 0, oh = 0, ow = 0;
  BENCH_CUDNN(
      cudnnGetConvolution2dForwardOutputDim(convD.get(), xD.get(), wD.get(), &on, &oc, &oh, &ow));
  if (on != n || oc != p0.k || oh != P || ow != Q)
    throw std::runtime_error("cuDNN's output shape differs from crema's");

  const prim::DeviceBuffer x = random_buffer(xd.count(), 1);
  const prim::DeviceBuffer w = random_buffer(wd.count(), 2);
  const prim::DeviceBuffer dy = random_buffer(yd.count(), 3);
  auto for_dnn = [&](const prim::DeviceBuffer& b, int64_t count) {
    return dt == kF32 ? prim::DeviceBuffer() : convert(c, b.get(), count, kF32, dt);
  };
  const prim::DeviceBuffer x16 = for_dnn(x, xd.count()), dy16 = for_dnn(dy, yd.count());
  const prim::DeviceBuffer w16 =
      c.opt.nhwc ? permute_filter(c, w.get(), wd, kF32, dt, true) : for_dnn(w, wd.count());
  const bool wide = dt == kF32;
  const size_t ws_bytes = cudnn_workspace_bytes();
  const prim::DeviceBuffer ws(prim::Device::kCUDA, ws_bytes);
  const double flops = 2.0 * n * p0.k * double(wd.c) * p0.r * p0.s * double(P) * double(Q);
  const ConvCase k{layer,
                   cd,
                   xd,
                   yd,
                   wd,
                   xD,
                   yD,
                   wD,
                   convD,
                   x,
                   w,
                   dy,
                   wide ? x : x16,
                   wide && !c.opt.nhwc ? w : w16,
                   wide ? dy : dy16,
                   dt,
                   ws.get(),
                   ws_bytes,
                   flops};
  for (int p = 0; p < 3; ++p) {
    if (!want[p]) continue;
    try {
      bench_pass(c, k, Pass(p));
    } catch (const std::exception& e) {
      print_failed("conv", layer, kPassName[p], e.what());
    }
  }
}

}  // namespace

void run_conv(Context& c) {
  std::vector<ConvProblem> all = test::named_conv_problems();
  all.insert(all.end(), extra_conv_problems().begin(), extra_conv_problems().end());
  for (const ConvProblem& p : all) {
    try {
      bench_problem(c, p);
    } catch (const std::exception& e) {
      print_failed("conv", p.name, "setup", e.what());
    }
  }
}

}  // namespace crema::bench
