// Convolution: descriptor validation, algorithm support and choice (heuristic and timed find
// with the Handle's cache), workspace queries, and the one device dispatcher per pass. The
// bodies live in conv_cpu.cpp and conv_cuda.cu.
#include "primitives/conv.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "primitives/blas.h"
#include "primitives/conv_ops.h"
#include "primitives/dispatch.h"
#include "primitives/im2col_cpu.h"

namespace crema::prim {

// The implementations (conv_cpu.cpp, conv_cuda.cu), with the public signatures.
CREMA_BACKENDS(void conv_fwd(Handle& h, const ConvDesc& cd, ConvAlgo algo, const TensorDesc& xd,
                             const void* x, const FilterDesc& wd, const void* w,
                             const TensorDesc& yd, void* y, Blend blend, const ConvEpilogue& ep);
               void conv_bwd_data(Handle& h, const ConvDesc& cd, ConvAlgo algo,
                                  const FilterDesc& wd, const void* w, const TensorDesc& dyd,
                                  const void* dy, const TensorDesc& dxd, void* dx, Blend blend);
               void conv_bwd_filter(Handle& h, const ConvDesc& cd, ConvAlgo algo,
                                    const TensorDesc& xd, const void* x, const TensorDesc& dyd,
                                    const void* dy, const FilterDesc& dwd, void* dw, Blend blend);)

namespace {

enum class Pass { kFwd, kBwdData, kBwdFilter };

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

std::string dims(const TensorDesc& d) {
  return std::to_string(d.n) + "x" + std::to_string(d.c) + "x" + std::to_string(d.h) + "x" +
         std::to_string(d.w);
}

// Each image is a packed C x H x W block; the batch stride is free (batch slices and
// channel-concatenated outputs qualify). This is what the GEMM algorithms need.
bool image_packed(const TensorDesc& d) {
  return d.stride_w == 1 && d.stride_h == d.w && d.stride_c == int64_t(d.h) * d.w &&
         d.stride_n >= int64_t(d.c) * d.h * d.w;
}

// Elements spanned by a strided tensor, to size a scratch copy of it.
int64_t span(const TensorDesc& d) {
  return int64_t(d.n - 1) * d.stride_n + int64_t(d.c - 1) * d.stride_c +
         int64_t(d.h - 1) * d.stride_h + int64_t(d.w - 1) * d.stride_w + 1;
}

bool verbose() {
  const char* v = std::getenv("CREMA_VERBOSE");
  return v && std::strcmp(v, "1") == 0;
}

std::string cache_key(Pass p, const ConvDesc& cd, const TensorDesc& xd, const FilterDesc& wd,
                      const TensorDesc& yd) {
  auto strides = [](const TensorDesc& d) {
    return std::to_string(d.stride_n) + "," + std::to_string(d.stride_c) + "," +
           std::to_string(d.stride_h) + "," + std::to_string(d.stride_w);
  };
  char conv[128];
  std::snprintf(conv, sizeof(conv), "k%dx%dx%dx%d pad%d,%d str%d,%d dil%d,%d g%d", wd.k, wd.c, wd.r,
                wd.s, cd.pad_h, cd.pad_w, cd.stride_h, cd.stride_w, cd.dilation_h, cd.dilation_w,
                cd.groups);
  return std::string(pass_name(p)) + " " + dtype_name(xd.dtype) + " x" + dims(xd) + "/" +
         strides(xd) + " y" + dims(yd) + "/" + strides(yd) + " " + conv;
}

// Runs one pass with a concrete algorithm on the handle's device. `out` is y, dx or dw.
void dispatch(Handle& h, Pass p, const ConvDesc& cd, ConvAlgo algo, const TensorDesc& xd,
              const void* x, const FilterDesc& wd, const void* w, const TensorDesc& yd,
              const void* dy, void* out, Blend blend, const ConvEpilogue& ep) {
  switch (p) {
    case Pass::kFwd:
      CREMA_DISPATCH(h, conv_fwd, h, cd, algo, xd, x, wd, w, yd, out, blend, ep);
      break;
    case Pass::kBwdData:
      CREMA_DISPATCH(h, conv_bwd_data, h, cd, algo, wd, w, yd, dy, xd, out, blend);
      break;
    case Pass::kBwdFilter:
      CREMA_DISPATCH(h, conv_bwd_filter, h, cd, algo, xd, x, yd, dy, wd, out, blend);
      break;
  }
}

// Times every supported concrete algorithm once (on CUDA after an untimed first run, which pays
// for cuBLAS's lazy initialisation and kernel loading), writing into a scratch output so the
// caller's output (which may be blended into) is untouched, and caches the fastest.
ConvAlgo find_algo(Handle& h, Pass p, const ConvDesc& cd, const TensorDesc& xd, const void* x,
                   const FilterDesc& wd, const void* w, const TensorDesc& yd, const void* dy) {
  const std::string key = cache_key(p, cd, xd, wd, yd);
  auto& cache = h.algo_cache();
  if (auto it = cache.find(key); it != cache.end()) {
    const ConvAlgo cached = static_cast<ConvAlgo>(it->second);
    // A cached entry must name a concrete supported algorithm; anything else is re-timed.
    if (cached != ConvAlgo::kAuto && cached != ConvAlgo::kFind &&
        conv_supports(cached, cd, xd, wd, yd))
      return cached;
  }
  const TensorDesc& out_desc = p == Pass::kBwdData ? xd : yd;
  const int64_t out_count = p == Pass::kBwdFilter ? wd.count() : span(out_desc);
  DeviceBuffer scratch(h.device(), size_t(out_count) * dtype_size(xd.dtype));
  h.workspace(conv_workspace_size(h, ConvAlgo::kFind, cd, xd, wd, yd));

  ConvAlgo best = ConvAlgo::kDirect;
  double best_ms = -1;
  std::string log;
  for (ConvAlgo a : {ConvAlgo::kGemm1x1, ConvAlgo::kIm2colGemm, ConvAlgo::kDirect}) {
    if (!conv_supports(a, cd, xd, wd, yd)) continue;
    if (h.device() != Device::kCPU)
      dispatch(h, p, cd, a, xd, x, wd, w, yd, dy, scratch.get(), Blend{}, ConvEpilogue{});
    h.synchronize();  // earlier queued work must not count
    const auto t0 = std::chrono::steady_clock::now();
    dispatch(h, p, cd, a, xd, x, wd, w, yd, dy, scratch.get(), Blend{}, ConvEpilogue{});
    h.synchronize();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    char buf[64];
    std::snprintf(buf, sizeof(buf), " %s %.3f ms", conv_algo_name(a), ms);
    log += buf;
    if (best_ms < 0 || ms < best_ms) {
      best_ms = ms;
      best = a;
    }
  }
  cache[key] = static_cast<int>(best);
  if (verbose())
    std::fprintf(stderr, "crema: find %s -> %s (%s )\n", key.c_str(), conv_algo_name(best),
                 log.c_str());
  return best;
}

ConvAlgo resolve(Handle& h, Pass p, ConvAlgo algo, const ConvDesc& cd, const TensorDesc& xd,
                 const void* x, const FilterDesc& wd, const void* w, const TensorDesc& yd,
                 const void* dy) {
  if (algo == ConvAlgo::kAuto) return conv_heuristic(h, cd, xd, wd, yd);
  if (algo == ConvAlgo::kFind) return find_algo(h, p, cd, xd, x, wd, w, yd, dy);
  if (!conv_supports(algo, cd, xd, wd, yd))
    fail(std::string(pass_name(p)) + ": algorithm " + conv_algo_name(algo) +
         " does not support this problem (" + cache_key(p, cd, xd, wd, yd) + ")");
  return algo;
}

void require_pointers(Pass p, std::initializer_list<const void*> ptrs) {
  for (const void* q : ptrs)
    if (!q) fail(std::string(pass_name(p)) + ": null data pointer");
}

}  // namespace

const char* conv_algo_name(ConvAlgo a) {
  switch (a) {
    case ConvAlgo::kAuto:
      return "auto";
    case ConvAlgo::kFind:
      return "find";
    case ConvAlgo::kIm2colGemm:
      return "im2col_gemm";
    case ConvAlgo::kGemm1x1:
      return "gemm_1x1";
    case ConvAlgo::kDirect:
      return "direct";
  }
  return "unknown";
}

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
  if (xd.dtype != wd.dtype || xd.dtype != yd.dtype)
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

bool conv_supports(ConvAlgo a, const ConvDesc& cd, const TensorDesc& xd, const FilterDesc& wd,
                   const TensorDesc& yd) {
  switch (a) {
    case ConvAlgo::kAuto:
    case ConvAlgo::kFind:
    case ConvAlgo::kDirect:
      return true;
    case ConvAlgo::kIm2colGemm:
      return image_packed(xd) && image_packed(yd);
    case ConvAlgo::kGemm1x1:
      return wd.r == 1 && wd.s == 1 && cd.stride_h == 1 && cd.stride_w == 1 && cd.pad_h == 0 &&
             cd.pad_w == 0 && image_packed(xd) && image_packed(yd);
  }
  return false;
}

ConvAlgo conv_heuristic(Handle& h, const ConvDesc& cd, const TensorDesc& xd, const FilterDesc& wd,
                        const TensorDesc& yd) {
  // On CUDA a convolution reading one input channel per output (depthwise) is memory-bound: the
  // direct kernel reads each input once per tap from cache, where im2col would write and read a
  // patch matrix R*S times the input and run GEMMs with an inner dimension of R*S.
  if (h.device() != Device::kCPU && cd.groups > 1 && wd.c == 1) return ConvAlgo::kDirect;
  if (conv_supports(ConvAlgo::kGemm1x1, cd, xd, wd, yd)) return ConvAlgo::kGemm1x1;
  if (conv_supports(ConvAlgo::kIm2colGemm, cd, xd, wd, yd)) return ConvAlgo::kIm2colGemm;
  return ConvAlgo::kDirect;
}

size_t conv_workspace_size(Handle& h, ConvAlgo a, const ConvDesc& cd, const TensorDesc& xd,
                           const FilterDesc& wd, const TensorDesc& yd) {
  if (a == ConvAlgo::kAuto) a = conv_heuristic(h, cd, xd, wd, yd);
  // find may try every algorithm: plan for the largest.
  if (a == ConvAlgo::kFind)
    a = conv_supports(ConvAlgo::kIm2colGemm, cd, xd, wd, yd) ? ConvAlgo::kIm2colGemm
                                                             : ConvAlgo::kGemm1x1;
  if (a != ConvAlgo::kIm2colGemm && a != ConvAlgo::kGemm1x1) return 0;
  if (h.device() != Device::kCPU) {
    // CUDA (conv_ops.h): 1x1 reads the input in place except for its backward filter; im2col
    // plans chunks of images.
    if (a == ConvAlgo::kGemm1x1)
      return plan_conv1x1_filter_cuda(xd.c, wd.k, wd.c, int64_t(xd.h) * xd.w, xd.n,
                                      dtype_size(xd.dtype), h.workspace_budget())
                 .elems *
             dtype_size(xd.dtype);
    return plan_conv_cuda(int64_t(xd.c) * wd.r * wd.s, wd.k, int64_t(yd.h) * yd.w, xd.n, cd.groups,
                          dtype_size(xd.dtype), h.workspace_budget())
               .elems *
           dtype_size(xd.dtype);
  }
  const cpu::ConvGeom g{xd.c,          xd.h,     xd.w,        wd.r,        wd.s,
                        cd.pad_h,      cd.pad_w, cd.stride_h, cd.stride_w, cd.dilation_h,
                        cd.dilation_w, yd.h,     yd.w};
  const cpu::ConvCpuPlan plan =
      cpu::plan_conv_cpu(g, xd.n, wd.k, wd.count(), dtype_size(xd.dtype), h.workspace_budget(),
                         h.cpu_threads(), a == ConvAlgo::kIm2colGemm);
  return plan.total_elems() * dtype_size(xd.dtype);
}

void conv_fwd(Handle& h, const ConvDesc& cd, ConvAlgo algo, const TensorDesc& xd, const void* x,
              const FilterDesc& wd, const void* w, const TensorDesc& yd, void* y, Blend blend,
              const ConvEpilogue& ep) {
  conv_check(cd, xd, wd, yd);
  require_pointers(Pass::kFwd, {x, w, y});
  const ConvAlgo a = resolve(h, Pass::kFwd, algo, cd, xd, x, wd, w, yd, nullptr);
  dispatch(h, Pass::kFwd, cd, a, xd, x, wd, w, yd, nullptr, y, blend, ep);
}

void conv_bwd_data(Handle& h, const ConvDesc& cd, ConvAlgo algo, const FilterDesc& wd,
                   const void* w, const TensorDesc& dyd, const void* dy, const TensorDesc& dxd,
                   void* dx, Blend blend) {
  conv_check(cd, dxd, wd, dyd);
  require_pointers(Pass::kBwdData, {w, dy, dx});
  const ConvAlgo a = resolve(h, Pass::kBwdData, algo, cd, dxd, nullptr, wd, w, dyd, dy);
  dispatch(h, Pass::kBwdData, cd, a, dxd, nullptr, wd, w, dyd, dy, dx, blend, {});
}

void conv_bwd_filter(Handle& h, const ConvDesc& cd, ConvAlgo algo, const TensorDesc& xd,
                     const void* x, const TensorDesc& dyd, const void* dy, const FilterDesc& dwd,
                     void* dw, Blend blend) {
  conv_check(cd, xd, dwd, dyd);
  require_pointers(Pass::kBwdFilter, {x, dy, dw});
  const ConvAlgo a = resolve(h, Pass::kBwdFilter, algo, cd, xd, x, dwd, nullptr, dyd, dy);
  dispatch(h, Pass::kBwdFilter, cd, a, xd, x, dwd, nullptr, dyd, dy, dw, blend, {});
}

void conv_bwd_bias(Handle& h, const TensorDesc& dyd, const void* dy, void* db, Blend blend) {
  if (dyd.n < 1 || dyd.c < 1 || dyd.h < 1 || dyd.w < 1)
    fail("conv_bwd_bias: empty tensor " + dims(dyd));
  if (!dy || !db) fail("conv_bwd_bias: null data pointer");
  bias_bwd(h, dyd, dy, db, blend);
}

}  // namespace crema::prim
