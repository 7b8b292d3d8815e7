// Internal: the convolution's implementation table. Each algorithm of each device is one row:
// its name, a support rule that says why it cannot run a problem (nullptr when it can), its
// workspace, and its three passes. conv.cpp walks the rows in order for kAuto, times the
// supported ones for kFind, and runs the named one when a caller forces it. A backend file
// defines its rows; adding an algorithm is one file plus one row in conv.cpp's table.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "primitives/common/batch_slices.h"
#include "primitives/common/dtype_visit.h"
#include "primitives/conv.h"

namespace crema::prim {

// One convolution as every row sees it: x / dx, w / dw, y / dy descriptors, already validated
// against each other (conv_check).
struct ConvProblem {
  const ConvDesc& cd;
  const TensorDesc& xd;
  const FilterDesc& wd;
  const TensorDesc& yd;
};

struct ConvImpl {
  ConvAlgo algo;
  Device device;
  const char* (*unsupported)(const ConvProblem& p);      // nullptr when the row runs p
  size_t (*workspace)(Handle& h, const ConvProblem& p);  // bytes, the most of the three passes
  void (*fwd)(Handle& h, const ConvProblem& p, const void* x, const void* w, void* y, Blend blend,
              const ConvEpilogue& ep);
  void (*bwd_data)(Handle& h, const ConvProblem& p, const void* w, const void* dy, void* dx,
                   Blend blend);
  void (*bwd_filter)(Handle& h, const ConvProblem& p, const void* x, const void* dy, void* dw,
                     Blend blend);
  // Whether the row reads and writes x and y (dx, dy) as stored in a pass (with this epilogue,
  // forward) where the problem has a side stored in bf16 / f16 or not as packed NCHW images
  // (channels last); nullptr: never. conv.cpp stages such sides through packed NCHW f32 copies
  // for the others.
  bool (*takes_stored)(const ConvProblem& p, ConvPass pass, const ConvEpilogue& ep) = nullptr;
};

// A row of a backend class Engine<T> (f32 and f64 data) whose constructor takes (h, p) and
// whose fwd, bwd_data and bwd_filter take the algorithm A first: its three passes take the
// storage type from the descriptors (conv_check made them agree).
template <template <typename> class Engine, Device D, ConvAlgo A>
struct FloatConvPasses {
  static void fwd(Handle& h, const ConvProblem& p, const void* x, const void* w, void* y,
                  Blend blend, const ConvEpilogue& ep) {
    visit_dtype(kFloatTypes, p.xd.dtype, "conv_fwd", D, [&](auto tag) {
      using T = typename decltype(tag)::type;
      Engine<T>(h, p).fwd(A, static_cast<const T*>(x), static_cast<const T*>(w), static_cast<T*>(y),
                          blend, ep);
    });
  }
  static void bwd_data(Handle& h, const ConvProblem& p, const void* w, const void* dy, void* dx,
                       Blend blend) {
    visit_dtype(kFloatTypes, p.xd.dtype, "conv_bwd_data", D, [&](auto tag) {
      using T = typename decltype(tag)::type;
      Engine<T>(h, p).bwd_data(A, static_cast<const T*>(w), static_cast<const T*>(dy),
                               static_cast<T*>(dx), blend);
    });
  }
  static void bwd_filter(Handle& h, const ConvProblem& p, const void* x, const void* dy, void* dw,
                         Blend blend) {
    visit_dtype(kFloatTypes, p.xd.dtype, "conv_bwd_filter", D, [&](auto tag) {
      using T = typename decltype(tag)::type;
      Engine<T>(h, p).bwd_filter(A, static_cast<const T*>(x), static_cast<const T*>(dy),
                                 static_cast<T*>(dw), blend);
    });
  }
};
template <template <typename> class Engine, Device D, ConvAlgo A>
constexpr ConvImpl float_conv_row(const char* (*unsupported)(const ConvProblem&),
                                  size_t (*workspace)(Handle&, const ConvProblem&),
                                  bool (*takes_stored)(const ConvProblem&, ConvPass,
                                                       const ConvEpilogue&) = nullptr) {
  using P = FloatConvPasses<Engine, D, A>;
  return {A, D, unsupported, workspace, P::fwd, P::bwd_data, P::bwd_filter, takes_stored};
}

// kAuto (conv_heuristic.cpp): the row for a pass of pr, packed NCHW descriptors of how the
// caller's x and y are stored (those of the f32 copies a staged side runs on).
struct ConvStored {
  bool own_half = false;       // both in the math's 16-bit type
  bool channels_last = false;  // either not as NCHW images
  bool own_nhwc = false;       // both in the math's 16-bit type and packed channels last
};
ConvAlgo conv_choose(Handle& h, const ConvProblem& pr, ConvPass pass, ConvStored stored);
// The row of an algorithm on a device (nullptr: none), and a problem as a string (data type,
// math, x and y sizes and strides, filter and geometry) for logs and find's cache: conv.cpp.
const ConvImpl* conv_row(Device d, ConvAlgo a);
std::string conv_problem_key(const ConvProblem& pr);

// Support rules shared by rows of both devices.
// Each image is a packed C x H x W block; the batch stride is free (batch slices and
// channel-concatenated outputs qualify). What the GEMM algorithms need of x and y.
inline bool conv_image_packed(const TensorDesc& d) {
  return d.stride_w == 1 && d.stride_h == d.w && d.stride_c == int64_t(d.h) * d.w &&
         d.stride_n >= int64_t(d.c) * d.h * d.w;
}
// Elements a strided tensor spans (to size a copy of it, or bound its offsets).
inline int64_t tensor_span(const TensorDesc& d) {
  return int64_t(d.n - 1) * d.stride_n + int64_t(d.c - 1) * d.stride_c +
         int64_t(d.h - 1) * d.stride_h + int64_t(d.w - 1) * d.stride_w + 1;
}
// Workspace pieces start on 256-byte boundaries.
inline size_t round256(size_t bytes) { return (bytes + 255) / 256 * 256; }
// The 16-bit storage type a math mode rounds to (bf16 for BF16, f16 for FP16), else f32: the
// half data a row can hand its tensor cores as stored.
inline DataType math_storage_type(MathMode m) {
  return m == MathMode::kBF16   ? DataType::kBFloat16
         : m == MathMode::kFP16 ? DataType::kFloat16
                                : DataType::kFloat32;
}
// takes_stored of rows that index every tensor through its strides (the direct kernels): any
// layout, f32 and f64 data.
inline bool conv_takes_any_strides(const ConvProblem& p, ConvPass, const ConvEpilogue&) {
  return !half_size(p.xd.dtype) && !half_size(p.yd.dtype);
}
const char* conv_unsupported_gemm(const ConvProblem& p);     // im2col + GEMM
const char* conv_unsupported_gemm1x1(const ConvProblem& p);  // 1x1 GEMM on the input in place

// The rows each backend defines, in that backend's order of preference.
namespace cpu {
extern const ConvImpl kConvIm2colGemm, kConvGemm1x1, kConvDirect, kConvWinograd;
}
namespace cuda {
extern const ConvImpl kConvIm2colGemm, kConvGemm1x1, kConvDirect, kConvImplicitGemm,
    kConvImplicitGemmSm90, kConvWinograd, kConvSpaceToDepth;
// The direct row's backward filter for small layers (conv_filter_tiles_cuda.cu): whether it runs
// p (stride 1, no dilation, filters 3, 5 or 7 tall and up to 7 wide, output planes up to
// 64 x 64), its workspace (partial filters) and the pass, for f32 and f64 data.
bool direct_filter_tiles(const ConvProblem& p);
size_t direct_filter_tiles_workspace(Handle& h, const ConvProblem& p);
template <typename T>
void direct_filter_tiles_run(Handle& h, const ConvProblem& p, const T* x, const T* dy, T* dw,
                             Blend blend);
// The direct row's forward for small ungrouped layers (conv_fwd_tiles_cuda.cu): whether it runs
// p (an image's input window and four filters fit in 48 KiB of shared memory) and the pass, for
// f32 and f64 data; bit for bit the plain direct kernel's result.
bool direct_fwd_tiles(const ConvProblem& p);
template <typename T>
void direct_fwd_tiles_run(Handle& h, const ConvProblem& p, const T* x, const T* w, T* y,
                          Blend blend, const T* bias, bool relu);
// Values in one 16-byte piece of the NHWC path's copies under a math mode (4 TF32, 8 BF16/FP16),
// 0 where the path does not run (strict fp32).
inline int nhwc_piece_values(MathMode m) {
  return m == MathMode::kTF32 ? 4 : m == MathMode::kBF16 || m == MathMode::kFP16 ? 8 : 0;
}
// The input channels a group of the NHWC path's copies holds: the layer's, or one piece of them
// where an ungrouped layer has fewer (an image's three colours), the rest zeros. The GEMM then
// runs 8/3 (BF16) of the multiplies it needs, on tensor cores, where im2col + GEMM rounds a patch
// matrix through memory.
inline int nhwc_input_channels(int cg, int groups, MathMode m) {
  const int piece = nhwc_piece_values(m);
  return groups == 1 && cg < piece ? piece : cg;
}
// Such a padded copy is the largest workspace of a net whose other layers are read in place
// (CaffeNet's 256 x 3 x 227 x 227 input: 201 MiB of 8-channel BF16 rows), so the passes that make
// one (forward, backward filter) run over slices of the batch: the images of a slice. The whole
// batch where x's copy pads nothing or fits in kSliceBytes, else as few images as keep a slice's
// copy within it, but no fewer than give the GEMM kSliceRows rows (512 row tiles, several waves
// of blocks).
inline constexpr int64_t kSliceRows = int64_t(1) << 16;
inline int padded_copy_slice(const ConvProblem& p) {
  const int cp = nhwc_input_channels(p.wd.c, p.cd.groups, p.cd.math);
  const int64_t image = int64_t(dtype_size(math_storage_type(p.cd.math))) * cp * p.xd.h * p.xd.w;
  if (cp == p.wd.c || image * p.xd.n <= kSliceBytes) return p.xd.n;
  const int64_t rows = int64_t(p.yd.h) * p.yd.w;
  return even_slice(p.xd.n, std::max(kSliceBytes / image, (kSliceRows + rows - 1) / rows));
}
// A problem's images [n0, n0 + count): its own descriptors, pointers moved by image_at.
struct ImageSlice {
  TensorDesc xd, yd;
  ImageSlice(const ConvProblem& p, int count) : xd(p.xd), yd(p.yd) { xd.n = yd.n = count; }
  ConvProblem of(const ConvProblem& p) const { return {p.cd, xd, p.wd, yd}; }
};
template <typename T>  // void or const void
T* image_at(T* base, const TensorDesc& d, int n) {
  using Byte = std::conditional_t<std::is_const_v<T>, const char, char>;
  return static_cast<Byte*>(base) + int64_t(n) * d.stride_n * int64_t(dtype_size(d.dtype));
}
// A backward filter over slices of `per` images: run(slice, x, dy, blend) for each, the first
// with `blend`, each after it adding to the filter (its gradient sums over images).
template <typename Run>
void filter_over_slices(const ConvProblem& p, int per, const void* x, const void* dy, Blend blend,
                        Run&& run) {
  for (int n0 = 0; n0 < p.xd.n; n0 += per)
    run(ImageSlice(p, std::min(per, p.xd.n - n0)).of(p), image_at(x, p.xd, n0),
        image_at(dy, p.yd, n0), n0 == 0 ? blend : Blend{blend.alpha, 1.0});
}
// Whether the implicit GEMM runs a pass through its NHWC path: TF32/BF16/FP16 math, the channels
// per group the pass reads along memory filling 16-byte pieces (inner channels for forward and
// stride-1 backward data, both channel counts for backward filter; input channels of an
// ungrouped layer may also be fewer than a piece, padded to one in the copies).
bool igemm_nhwc_applies(const ConvProblem& p, ConvPass pass);
// Why the Hopper row's TF32 backward filter over padded planes (conv_wgrad_planes.cuh) does not
// run a problem, nullptr when it does: TF32 math on f32 tensors, stride 1, channels of a group a
// multiple of 8, a build with sm_90a code.
const char* wgrad_planes_unsupported(const ConvProblem& p);
}  // namespace cuda

}  // namespace crema::prim
