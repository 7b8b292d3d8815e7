// Convolution (cross-correlation, as Caffe and cuDNN): forward, backward data, backward filter,
// backward bias; 2-d, with pad, stride, dilation and groups.
//
//   y[n, k, p, q] = sum_{c in group(k), r, s} x[n, c, p*sh - ph + r*dh, q*sw - pw + s*dw]
//                                             * w[k, c - group_start(k), r, s]
//   output size P = (H + 2*ph - dh*(R-1) - 1) / sh + 1 (floor), likewise Q.
//   dx = sum over the same index map of dy * w;  dw = sum over n, p, q of dy * x;
//   db[k] = sum_{n,p,q} dy[n, k, p, q].
//
// Every entry point blends: out = alpha * op + beta * out. conv_fwd also has an epilogue:
//   y = act(alpha * conv(x, w) + beta * y + bias[k])   (act = identity or ReLU)
// so conv + bias + ReLU (and a residual add via beta) is one call.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::prim {

struct ConvDesc {
  int pad_h = 0, pad_w = 0;
  int stride_h = 1, stride_w = 1;
  int dilation_h = 1, dilation_w = 1;
  int groups = 1;
  // The least precision the multiplications may use (cudnnSetConvolutionMathType): kFP32 is
  // strict; kTF32, kBF16 and kFP16 let a row round x and w (dy and w, x and dy) to that format on
  // tensor cores, always accumulating in fp32. A permission: rows without tensor cores (the
  // CPU's, the direct kernels) compute in the storage type's full precision.
  MathMode math = MathMode::kFP32;
};

// Algorithms: each names one row per device of the implementation table. kAuto walks the
// device's rows in order of preference; kFind times the supported rows once per shape and
// caches the winner in the Handle.
enum class ConvAlgo {
  kAuto,
  kFind,
  kIm2colGemm,        // unfold the input patch matrix into the workspace, then one GEMM per group
  kGemm1x1,           // 1x1, stride 1, pad 0: the input already is the patch matrix, no workspace
  kDirect,            // plain loops; the fallback that supports everything
  kImplicitGemm,      // CUDA tensor cores (TF32/BF16/FP16 math): GEMM operands gathered on the fly
  kImplicitGemmSm90,  // the same on Hopper (compute capability 9.0): wgmma where it applies
  kWinograd,          // F(4x4, 3x3) for 3x3 stride-1 filters: 36 GEMMs on transformed tiles
  kSpaceToDepth,      // CUDA tensor cores: a strided layer's stride folded into its channels
};
const char* conv_algo_name(ConvAlgo a);

struct ConvEpilogue {
  const void* bias = nullptr;  // K values, or nullptr
  bool relu = false;
};

// Output spatial size for one dimension; throws PrimError when the dilated kernel is larger
// than the padded input.
int conv_out_dim(int in, int kernel, int pad, int stride, int dilation);

// Validates the four descriptors against each other (channels, groups, output sizes); throws
// PrimError with a one-line reason.
void conv_check(const ConvDesc& cd, const TensorDesc& xd, const FilterDesc& wd,
                const TensorDesc& yd);

// The algorithms a device implements in this build, in the order kAuto tries them.
std::vector<ConvAlgo> conv_algos(Device device);
enum class ConvPass { kFwd, kBwdData, kBwdFilter };

// Whether the handle's device runs a problem with an algorithm, and the one the heuristic (kAuto)
// picks for a pass (CREMA_VERBOSE=1 logs each row it skips, with the reason).
bool conv_supports(Handle& h, ConvAlgo a, const ConvDesc& cd, const TensorDesc& xd,
                   const FilterDesc& wd, const TensorDesc& yd);
ConvAlgo conv_heuristic(Handle& h, const ConvDesc& cd, const TensorDesc& xd, const FilterDesc& wd,
                        const TensorDesc& yd, ConvPass pass = ConvPass::kFwd);

// Workspace bytes an algorithm needs, the most of its three passes (kAuto: of the rows the
// passes pick; kFind: of every supported row).
size_t conv_workspace_size(Handle& h, ConvAlgo a, const ConvDesc& cd, const TensorDesc& xd,
                           const FilterDesc& wd, const TensorDesc& yd);

void conv_fwd(Handle& h, const ConvDesc& cd, ConvAlgo algo, const TensorDesc& xd, const void* x,
              const FilterDesc& wd, const void* w, const TensorDesc& yd, void* y, Blend blend = {},
              const ConvEpilogue& ep = {});
void conv_bwd_data(Handle& h, const ConvDesc& cd, ConvAlgo algo, const FilterDesc& wd,
                   const void* w, const TensorDesc& dyd, const void* dy, const TensorDesc& dxd,
                   void* dx, Blend blend = {});
void conv_bwd_filter(Handle& h, const ConvDesc& cd, ConvAlgo algo, const TensorDesc& xd,
                     const void* x, const TensorDesc& dyd, const void* dy, const FilterDesc& dwd,
                     void* dw, Blend blend = {});
// db[k] = alpha * sum_{n,p,q} dy + beta * db.
void conv_bwd_bias(Handle& h, const TensorDesc& dyd, const void* dy, void* db, Blend blend = {});

// The algorithms `find` (or autotuning, Handle::set_conv_autotune) picked on this handle, kept
// across runs: conv_algos_save writes them to a text file naming the device (atomically;
// throws PrimError when it cannot), conv_algos_load reads one back into the handle's cache and
// returns how many entries it took: none from a missing file or one made on another device,
// and a line it cannot read is skipped (the problem is timed again).
void conv_algos_save(Handle& h, const std::string& path);
size_t conv_algos_load(Handle& h, const std::string& path);

}  // namespace crema::prim
