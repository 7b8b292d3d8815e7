// Convolution: descriptor validation, the implementation table (conv_impl.h) and the choice of
// its row (the heuristic's walk, timed find with the Handle's cache, or a forced row), workspace
// queries. The rows live in conv_cpu.cpp and conv_cuda.cu.
#include "primitives/conv.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "primitives/blas.h"
#include "primitives/common/choice_log.h"
#include "primitives/common/desc_checks.h"
#include "primitives/common/impl_table.h"
#include "primitives/conv/conv_impl.h"
#include "primitives/scale_bias.h"
#include "primitives/tensor_copy.h"
#include "primitives/view.h"

namespace crema::prim {

// The implementation table: each device's rows in order of preference (the kAuto walk).
namespace {

const ConvImpl* const kTable[] = {
#ifdef CREMA_WITH_CUDA
    &cuda::kConvGemm1x1,          &cuda::kConvIm2colGemm, &cuda::kConvImplicitGemm,
    &cuda::kConvImplicitGemmSm90, &cuda::kConvDirect,     &cuda::kConvWinograd,
    &cuda::kConvSpaceToDepth,
#endif
    &cpu::kConvGemm1x1,           &cpu::kConvIm2colGemm,  &cpu::kConvDirect,
    &cpu::kConvWinograd,
};

constexpr std::pair<ConvAlgo, const char*> kNames[] = {
    {ConvAlgo::kAuto, "auto"},
    {ConvAlgo::kFind, "find"},
    {ConvAlgo::kIm2colGemm, "im2col_gemm"},
    {ConvAlgo::kGemm1x1, "gemm_1x1"},
    {ConvAlgo::kDirect, "direct"},
    {ConvAlgo::kImplicitGemm, "implicit_gemm"},
    {ConvAlgo::kImplicitGemmSm90, "implicit_gemm_sm90"},
    {ConvAlgo::kWinograd, "winograd"},
    {ConvAlgo::kSpaceToDepth, "space_to_depth"},
};

const ConvImpl* find_row(Device d, ConvAlgo a) { return table_row(kTable, d, a); }

}  // namespace

const char* conv_unsupported_gemm(const ConvProblem& p) {
  if (!conv_image_packed(p.xd) || !conv_image_packed(p.yd))
    return "x and y images must be packed C x H x W";
  // A plane is a GEMM's row or column (and CUDA's im2col indexes within one in 32 bits), and
  // cuBLAS and OpenBLAS take 32-bit sizes: such planes go to the direct rows.
  constexpr int64_t kPlaneLimit = int64_t(1) << 31;
  if (int64_t(p.xd.h) * p.xd.w >= kPlaneLimit || int64_t(p.yd.h) * p.yd.w >= kPlaneLimit)
    return "an input or output plane of 2^31 elements or more";
  return nullptr;
}

const char* conv_unsupported_gemm1x1(const ConvProblem& p) {
  if (p.wd.r != 1 || p.wd.s != 1) return "the filter is not 1x1";
  if (p.cd.stride_h != 1 || p.cd.stride_w != 1) return "the stride is not 1";
  if (p.cd.pad_h != 0 || p.cd.pad_w != 0) return "the input is padded";
  return conv_unsupported_gemm(p);
}

namespace {

using Pass = ConvPass;

const char* pass_name(Pass p) {
  switch (p) {
    case Pass::kFwd:
      return "conv_fwd";
    case Pass::kBwdData:
      return "conv_bwd_data";
    case Pass::kBwdFilter:
      return "conv_bwd_filter";
  }
  return "conv";
}

[[noreturn]] void fail(const std::string& why) { throw PrimError(why); }

}  // namespace

std::string conv_problem_key(const ConvProblem& pr) {
  const ConvDesc& cd = pr.cd;
  const FilterDesc& wd = pr.wd;
  auto strides = [](const TensorDesc& d) {
    return std::to_string(d.stride_n) + "," + std::to_string(d.stride_c) + "," +
           std::to_string(d.stride_h) + "," + std::to_string(d.stride_w);
  };
  char conv[128];
  std::snprintf(conv, sizeof(conv), "k%dx%dx%dx%d pad%d,%d str%d,%d dil%d,%d g%d", wd.k, wd.c, wd.r,
                wd.s, cd.pad_h, cd.pad_w, cd.stride_h, cd.stride_w, cd.dilation_h, cd.dilation_w,
                cd.groups);
  return std::string(dtype_name(pr.xd.dtype)) + " " + math_name(cd.math) + " x" + dims(pr.xd) +
         "/" + strides(pr.xd) + " y" + dims(pr.yd) + "/" + strides(pr.yd) + " " + conv;
}

const ConvImpl* conv_row(Device d, ConvAlgo a) { return find_row(d, a); }

namespace {

// find's cache key: the pass and the problem.
std::string cache_key(Pass p, const ConvProblem& pr) {
  return std::string(pass_name(p)) + " " + conv_problem_key(pr);
}

// Runs one pass of a row. `out` is y, dx or dw.
void run(Handle& h, Pass p, const ConvImpl& row, const ConvProblem& pr, const void* x,
         const void* w, const void* dy, void* out, Blend blend, const ConvEpilogue& ep) {
  switch (p) {
    case Pass::kFwd:
      row.fwd(h, pr, x, w, out, blend, ep);
      break;
    case Pass::kBwdData:
      row.bwd_data(h, pr, w, dy, out, blend);
      break;
    case Pass::kBwdFilter:
      row.bwd_filter(h, pr, x, dy, out, blend);
      break;
  }
}

// The reason a row cannot run a problem, or nullptr.
const char* unsupported(const ConvImpl* row, const ConvProblem& pr) {
  return row ? row->unsupported(pr) : "no such algorithm on this device";
}

// Times every supported row of the handle's device, writing into a scratch output so the
// caller's output (which may be blended into) is untouched, and caches the fastest. On CUDA: an
// untimed first run (cuBLAS's lazy initialisation, kernel loading), then the mean of five runs
// queued back to back, in GPU time (Stopwatch): a host clock counted each kernel's launch
// latency, which a replayed CUDA graph does not pay, and favoured rows of fewer, slower kernels
// (LeNet's autotuned step was slower than the heuristic's). On the CPU one run, wall clock.
const ConvImpl& timed_row(Handle& h, Pass p, const ConvProblem& pr, const void* x, const void* w,
                          const void* dy) {
  const std::string key = cache_key(p, pr);
  auto& cache = h.algo_cache();
  if (auto it = cache.find(key); it != cache.end()) {
    // A cached entry must name a supported row; anything else is re-timed.
    const ConvImpl* row = find_row(h.device(), static_cast<ConvAlgo>(it->second));
    if (row && !row->unsupported(pr)) return *row;
  }
  const TensorDesc& out_desc = p == Pass::kBwdData ? pr.xd : pr.yd;
  const int64_t out_count = p == Pass::kBwdFilter ? pr.wd.count() : tensor_span(out_desc);
  DeviceBuffer scratch(h.device(), size_t(out_count) * dtype_size(pr.xd.dtype));

  const ConvImpl* best = nullptr;
  double best_ms = -1;
  std::string log;
  Stopwatch watch(h);
  const bool gpu = h.device() != Device::kCPU;
  for (const ConvImpl* row : kTable) {
    if (row->device != h.device() || row->unsupported(pr)) continue;
    if (gpu) run(h, p, *row, pr, x, w, dy, scratch.get(), Blend{}, ConvEpilogue{});
    h.synchronize();  // earlier queued work must not count; raises a deferred error
    const int runs = gpu ? 5 : 1;
    watch.start();
    for (int i = 0; i < runs; ++i)
      run(h, p, *row, pr, x, w, dy, scratch.get(), Blend{}, ConvEpilogue{});
    const double ms = watch.stop_ms() / runs;
    h.synchronize();
    char buf[64];
    std::snprintf(buf, sizeof(buf), " %s %.3f ms", conv_algo_name(row->algo), ms);
    log += buf;
    if (best_ms < 0 || ms < best_ms) {
      best_ms = ms;
      best = row;
    }
  }
  if (!best) fail(std::string(pass_name(p)) + ": no algorithm supports " + key);
  cache[key] = static_cast<int>(best->algo);
  if (choice_log_on())
    std::fprintf(stderr, "crema: find %s -> %s (%s )\n", key.c_str(), conv_algo_name(best->algo),
                 log.c_str());
  return *best;
}

// The heuristic's row (conv_heuristic logs the rows it skips), logged once per problem under
// CREMA_VERBOSE=1.
const ConvImpl& auto_row(Handle& h, Pass p, const ConvProblem& pr) {
  const ConvAlgo a = conv_heuristic(h, pr.cd, pr.xd, pr.wd, pr.yd, p);
  if (choice_log_on())
    log_choice_once("crema: auto " + cache_key(p, pr) + " -> " + conv_algo_name(a));
  return *find_row(h.device(), a);
}

const ConvImpl& resolve(Handle& h, Pass p, ConvAlgo algo, const ConvProblem& pr, const void* x,
                        const void* w, const void* dy) {
  if (algo == ConvAlgo::kFind || (algo == ConvAlgo::kAuto && h.conv_autotune()))
    return timed_row(h, p, pr, x, w, dy);
  if (algo == ConvAlgo::kAuto) return auto_row(h, p, pr);
  const ConvImpl* row = find_row(h.device(), algo);
  if (const char* why = unsupported(row, pr))
    fail(std::string(pass_name(p)) + ": algorithm " + conv_algo_name(algo) + " on " +
         device_name(h.device()) + " does not support this problem: " + why + " (" +
         cache_key(p, pr) + ")");
  return *row;
}

void require_pointers(Pass p, std::initializer_list<const void*> ptrs) {
  for (const void* q : ptrs)
    if (!q) fail(std::string(pass_name(p)) + ": null data pointer");
}

// Stored tensors. A pass whose x or y (dx, dy) is stored in bf16 or f16, or not as packed NCHW
// images (channels last), runs the row the problem on packed NCHW f32 tensors would get; a row
// that takes the tensors as stored for the pass (ConvImpl::takes_stored: the implicit GEMM's
// NHWC path, gemm_1x1 on half data in its own math) runs on them directly. Any other row, and
// every row under timed choice, runs on packed NCHW f32 copies at the tail of the workspace,
// after the most the row may take: staged inputs converted in, the row run on the copies, a
// staged output converted back (its old values converted in first where the blend reads them).
// Cost of the copies: a read of 2 (half) or 4 bytes and a write of 4 per staged input element,
// and the same the other way for the output.
bool staged(const TensorDesc& d) { return half_size(d.dtype) || !conv_image_packed(d); }
bool any_staged(const ConvProblem& pr) { return staged(pr.xd) || staged(pr.yd); }

TensorDesc packed_f32(const TensorDesc& d) {
  return TensorDesc::nchw(DataType::kFloat32, d.n, d.c, d.h, d.w);
}

ViewDesc view_of(const TensorDesc& d) {
  ViewDesc v;
  v.dtype = d.dtype;
  v.rank = 4;
  const int64_t sizes[4] = {d.n, d.c, d.h, d.w};
  const int64_t strides[4] = {d.stride_n, d.stride_c, d.stride_h, d.stride_w};
  for (int i = 0; i < 4; ++i) {
    v.size[i] = sizes[i];
    v.stride[i] = strides[i];
  }
  return v;
}

size_t staged_bytes(const TensorDesc& d) {
  return staged(d) ? round256(size_t(d.count()) * sizeof(float)) : 0;
}

// Calls f(pr32) with the problem on packed NCHW f32 x and y where pr has a staged side, else
// f(pr).
template <typename F>
decltype(auto) as_staged(const ConvProblem& pr, F&& f) {
  if (!any_staged(pr)) return f(pr);
  const TensorDesc xd = staged(pr.xd) ? packed_f32(pr.xd) : pr.xd;
  const TensorDesc yd = staged(pr.yd) ? packed_f32(pr.yd) : pr.yd;
  return f(ConvProblem{pr.cd, xd, pr.wd, yd});
}

size_t workspace_of(Handle& h, ConvAlgo a, const ConvProblem& pr);

// One pass: `x` and `dy` as the pass reads them (null where it does not), `out` the y, dx or dw
// it writes.
void run_pass(Handle& h, Pass p, ConvAlgo algo, const ConvProblem& pr, const void* x, const void* w,
              const void* dy, void* out, Blend blend, const ConvEpilogue& ep) {
  if (!any_staged(pr)) {
    run(h, p, resolve(h, p, algo, pr, x, w, dy), pr, x, w, dy, out, blend, ep);
    return;
  }
  if (h.device() == Device::kCPU && (half_size(pr.xd.dtype) || half_size(pr.yd.dtype)))
    fail(std::string(pass_name(p)) + ": " +
         dtype_name(half_size(pr.xd.dtype) ? pr.xd.dtype : pr.yd.dtype) +
         " is not supported on cpu");
  as_staged(pr, [&](const ConvProblem& pr32) {
    // The row, unless timed: kAuto's choice knows how the tensors are stored (conv_heuristic on
    // pr; on pr32 it took the rules for f32 NCHW tensors), a forced row is checked on the staged
    // problem; either runs pr32.
    const bool timed = algo == ConvAlgo::kFind || (algo == ConvAlgo::kAuto && h.conv_autotune());
    const ConvImpl* row = timed                     ? nullptr
                          : algo == ConvAlgo::kAuto ? &auto_row(h, p, pr)
                                                    : &resolve(h, p, algo, pr32, nullptr, nullptr,
                                                               nullptr);  // reads no data
    if (row && row->takes_stored && row->takes_stored(pr, p, ep))
      return run(h, p, *row, pr, x, w, dy, out, blend, ep);
    const size_t row_bytes = round256(row ? row->workspace(h, pr32) : workspace_of(h, algo, pr32));
    char* base =
        static_cast<char*>(h.workspace(row_bytes + staged_bytes(pr.xd) + staged_bytes(pr.yd)));
    void* x32 = staged(pr.xd) ? base + row_bytes : nullptr;
    void* y32 = staged(pr.yd) ? base + row_bytes + staged_bytes(pr.xd) : nullptr;
    auto to_f32 = [&](const TensorDesc& d, const void* src, void* dst) {
      tensor_copy(h, view_of(d), src, view_of(packed_f32(d)), dst);
    };
    // The sides the pass reads and the one it writes, each the caller's or its f32 copy.
    const TensorDesc& out_d = p == Pass::kFwd ? pr.yd : pr.xd;  // bwd filter: dw, never half
    void* out32 = p == Pass::kBwdFilter ? nullptr : p == Pass::kFwd ? y32 : x32;
    if (x32 && p != Pass::kBwdData) to_f32(pr.xd, x, x32);
    if (y32 && p != Pass::kFwd) to_f32(pr.yd, dy, y32);
    if (out32 && blend.beta != 0) to_f32(out_d, out, out32);
    const void* xr = x32 && p != Pass::kBwdData ? x32 : x;
    const void* dyr = y32 && p != Pass::kFwd ? y32 : dy;
    void* outr = out32 ? out32 : out;
    run(h, p, row ? *row : resolve(h, p, algo, pr32, xr, w, dyr), pr32, xr, w, dyr, outr, blend,
        ep);
    if (out32) tensor_copy(h, view_of(packed_f32(out_d)), out32, view_of(out_d), out);
  });
}

}  // namespace

const char* conv_algo_name(ConvAlgo a) { return name_in(kNames, a); }

int conv_out_dim(int in, int kernel, int pad, int stride, int dilation) {
  if (in < 1 || kernel < 1 || pad < 0 || stride < 1 || dilation < 1)
    fail("conv: invalid size (input " + std::to_string(in) + ", kernel " + std::to_string(kernel) +
         ", pad " + std::to_string(pad) + ", stride " + std::to_string(stride) + ", dilation " +
         std::to_string(dilation) + ")");
  const int64_t extent = int64_t(dilation) * (kernel - 1) + 1;
  const int64_t padded = int64_t(in) + 2 * int64_t(pad);
  if (extent > padded)
    fail("conv: kernel extent " + std::to_string(extent) + " is larger than the padded input " +
         std::to_string(padded));
  return int((padded - extent) / stride + 1);
}

void conv_check(const ConvDesc& cd, const TensorDesc& xd, const FilterDesc& wd,
                const TensorDesc& yd) {
  // x and y are each of the filter's type, or half-size (bf16, f16) beside an f32 filter.
  auto fits = [&](DataType t) {
    return t == wd.dtype || (half_size(t) && wd.dtype == DataType::kFloat32);
  };
  if (!fits(xd.dtype) || !fits(yd.dtype))
    fail("conv: data types differ (x " + std::string(dtype_name(xd.dtype)) + ", w " +
         dtype_name(wd.dtype) + ", y " + dtype_name(yd.dtype) + ")");
  if (xd.n < 1 || xd.c < 1 || yd.n < 1 || yd.c < 1 || wd.k < 1 || wd.c < 1)
    fail("conv: empty tensor (x " + dims(xd) + ", y " + dims(yd) + ")");
  if (cd.groups < 1) fail("conv: groups must be >= 1, got " + std::to_string(cd.groups));
  if (wd.k % cd.groups != 0)
    fail("conv: groups " + std::to_string(cd.groups) + " do not divide the " +
         std::to_string(wd.k) + " output channels");
  if (int64_t(wd.c) * cd.groups != xd.c)
    fail("conv: channels mismatch: input has " + std::to_string(xd.c) + ", filter expects " +
         std::to_string(wd.c) + " x " + std::to_string(cd.groups) + " groups");
  if (yd.c != wd.k)
    fail("conv: output has " + std::to_string(yd.c) + " channels, filter has " +
         std::to_string(wd.k));
  if (yd.n != xd.n)
    fail("conv: batch mismatch: input " + std::to_string(xd.n) + ", output " +
         std::to_string(yd.n));
  const int p = conv_out_dim(xd.h, wd.r, cd.pad_h, cd.stride_h, cd.dilation_h);
  const int q = conv_out_dim(xd.w, wd.s, cd.pad_w, cd.stride_w, cd.dilation_w);
  if (yd.h != p || yd.w != q)
    fail("conv: output size mismatch: expected " + std::to_string(p) + "x" + std::to_string(q) +
         ", got " + std::to_string(yd.h) + "x" + std::to_string(yd.w));
}

std::vector<ConvAlgo> conv_algos(Device device) { return table_algos(kTable, device); }

bool conv_supports(Handle& h, ConvAlgo a, const ConvDesc& cd, const TensorDesc& xd,
                   const FilterDesc& wd, const TensorDesc& yd) {
  if (a == ConvAlgo::kAuto || a == ConvAlgo::kFind) return true;
  return as_staged(ConvProblem{cd, xd, wd, yd}, [&](const ConvProblem& pr) {
    return !unsupported(find_row(h.device(), a), pr);
  });
}

ConvAlgo conv_heuristic(Handle& h, const ConvDesc& cd, const TensorDesc& xd, const FilterDesc& wd,
                        const TensorDesc& yd, ConvPass pass) {
  if (!any_staged(ConvProblem{cd, xd, wd, yd})) return conv_choose(h, {cd, xd, wd, yd}, pass, {});
  const DataType own = math_storage_type(cd.math);
  ConvStored stored;
  stored.own_half = half_size(own) && xd.dtype == own && yd.dtype == own;
  stored.channels_last = !conv_image_packed(xd) || !conv_image_packed(yd);
  stored.own_nhwc = stored.own_half && xd.is_packed_nhwc() && yd.is_packed_nhwc();
  return as_staged(ConvProblem{cd, xd, wd, yd},
                   [&](const ConvProblem& pr) { return conv_choose(h, pr, pass, stored); });
}

size_t conv_workspace_size(Handle& h, ConvAlgo a, const ConvDesc& cd, const TensorDesc& xd,
                           const FilterDesc& wd, const TensorDesc& yd) {
  const ConvProblem pr{cd, xd, wd, yd};
  if (!any_staged(pr)) return workspace_of(h, a, pr);
  return as_staged(pr,
                   [&](const ConvProblem& pr32) {
                     if (a != ConvAlgo::kAuto || h.conv_autotune())
                       return round256(workspace_of(h, a, pr32));
                     size_t most = 0;  // the rows run_pass runs: chosen on the stored tensors
                     for (Pass p : {Pass::kFwd, Pass::kBwdData, Pass::kBwdFilter})
                       most = std::max(
                           most, round256(find_row(h.device(), conv_heuristic(h, cd, xd, wd, yd, p))
                                              ->workspace(h, pr32)));
                     return most;
                   }) +
         staged_bytes(xd) + staged_bytes(yd);
}

namespace {

size_t workspace_of(Handle& h, ConvAlgo a, const ConvProblem& pr) {
  const ConvDesc& cd = pr.cd;
  const TensorDesc &xd = pr.xd, &yd = pr.yd;
  const FilterDesc& wd = pr.wd;
  size_t bytes = 0;
  if (a == ConvAlgo::kAuto && !h.conv_autotune()) {
    for (Pass p : {Pass::kFwd, Pass::kBwdData, Pass::kBwdFilter})
      bytes = std::max(
          bytes, conv_workspace_size(h, conv_heuristic(h, cd, xd, wd, yd, p), cd, xd, wd, yd));
    return bytes;
  }
  // find (and autotuning) may try every supported row: the largest
  const bool any = a == ConvAlgo::kFind || a == ConvAlgo::kAuto;
  for (const ConvImpl* row : kTable)
    if (row->device == h.device() && (any || row->algo == a) && !row->unsupported(pr))
      bytes = std::max(bytes, row->workspace(h, pr));
  return bytes;
}

}  // namespace

void conv_fwd(Handle& h, const ConvDesc& cd, ConvAlgo algo, const TensorDesc& xd, const void* x,
              const FilterDesc& wd, const void* w, const TensorDesc& yd, void* y, Blend blend,
              const ConvEpilogue& ep) {
  conv_check(cd, xd, wd, yd);
  require_pointers(Pass::kFwd, {x, w, y});
  run_pass(h, Pass::kFwd, algo, ConvProblem{cd, xd, wd, yd}, x, w, nullptr, y, blend, ep);
}

void conv_bwd_data(Handle& h, const ConvDesc& cd, ConvAlgo algo, const FilterDesc& wd,
                   const void* w, const TensorDesc& dyd, const void* dy, const TensorDesc& dxd,
                   void* dx, Blend blend) {
  conv_check(cd, dxd, wd, dyd);
  require_pointers(Pass::kBwdData, {w, dy, dx});
  run_pass(h, Pass::kBwdData, algo, ConvProblem{cd, dxd, wd, dyd}, nullptr, w, dy, dx, blend,
           ConvEpilogue{});
}

void conv_bwd_filter(Handle& h, const ConvDesc& cd, ConvAlgo algo, const TensorDesc& xd,
                     const void* x, const TensorDesc& dyd, const void* dy, const FilterDesc& dwd,
                     void* dw, Blend blend) {
  conv_check(cd, xd, dwd, dyd);
  require_pointers(Pass::kBwdFilter, {x, dy, dw});
  run_pass(h, Pass::kBwdFilter, algo, ConvProblem{cd, xd, dwd, dyd}, x, nullptr, dy, dw, blend,
           ConvEpilogue{});
}

void conv_bwd_bias(Handle& h, const TensorDesc& dyd, const void* dy, void* db, Blend blend) {
  if (dyd.n < 1 || dyd.c < 1 || dyd.h < 1 || dyd.w < 1)
    fail("conv_bwd_bias: empty tensor " + dims(dyd));
  if (!dy || !db) fail("conv_bwd_bias: null data pointer");
  // Half dy into f32 biases, as scale_bias sums (packed NCHW or channels last: channel_view).
  if (half_size(dyd.dtype) && (dyd.is_packed_nchw() || dyd.is_packed_nhwc())) {
    const ChannelView v = channel_view(dyd);
    const ScaleBiasDesc sd{dyd.dtype, v.outer, v.channels, v.inner};
    return scale_bias_bwd_bias(h, sd, dy, db, blend);
  }
  bias_bwd(h, dyd, dy, db, blend);
}

namespace {

constexpr const char* kAlgosHeader = "crema conv algorithms 1 | ";

// The device a file of timed choices belongs to: "cpu", or the GPU's name and compute capability.
std::string device_identity(Handle& h) {
  return h.device() == Device::kCPU ? "cpu" : "cuda " + cuda_device_identity(h.device_id());
}

}  // namespace

void conv_algos_save(Handle& h, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << kAlgosHeader << device_identity(h) << "\n";
    for (const auto& [key, algo] : h.algo_cache())
      out << key << "\t" << conv_algo_name(static_cast<ConvAlgo>(algo)) << "\n";
    out.flush();
    if (!out) fail("conv_algos_save: cannot write " + tmp);
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    fail("conv_algos_save: cannot write " + path);
  }
}

size_t conv_algos_load(Handle& h, const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line) || line != kAlgosHeader + device_identity(h)) return 0;
  size_t taken = 0;
  const std::vector<ConvAlgo> rows = conv_algos(h.device());
  while (std::getline(in, line)) {
    const size_t tab = line.rfind('\t');
    if (tab == std::string::npos || tab == 0) continue;
    const std::string name = line.substr(tab + 1);
    for (ConvAlgo a : rows)
      if (name == conv_algo_name(a)) {
        h.algo_cache()[line.substr(0, tab)] = static_cast<int>(a);
        ++taken;
      }
  }
  return taken;
}

}  // namespace crema::prim
