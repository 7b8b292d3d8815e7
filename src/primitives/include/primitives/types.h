// Common vocabulary of the primitives library: data types, devices, tensor descriptors and the
// primitive error type. Nothing here depends on the framework (no layers, no Tensor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace crema::prim {

// Storage types. f64 exists for gradient checks; bf16 and f16 are the half-size storage of
// mixed-precision training. Each primitive states which it implements on which device and
// rejects the others with one line (dtype_visit.h); none silently reads one as another.
enum class DataType { kFloat32, kFloat64, kBFloat16, kFloat16 };
enum class Device { kCPU, kCUDA };

size_t dtype_size(DataType t);
// bf16 and f16: what mixed-precision training stores activations and their gradients in.
inline bool half_size(DataType t) { return t == DataType::kBFloat16 || t == DataType::kFloat16; }
// Converts n values on the host, rounding to nearest even (fp64 -> half without double rounding).
void convert_values(DataType from, const void* x, DataType to, void* y, int64_t n);
const char* dtype_name(DataType t);  // "f32", "f64", "bf16", "f16"
const char* device_name(Device d);   // "cpu", "cuda"

// How the multiplications of a GEMM-based primitive (convolution, GEMM) round their inputs; the
// products are always accumulated in fp32 (fp64 for f64 data). kFP32 is strict IEEE fp32;
// kTF32 rounds the inputs to 10 mantissa bits (tensor cores); kBF16 and kFP16 to bfloat16 and
// float16. A mode a device cannot honour is an error, never a silent fallback.
enum class MathMode { kFP32, kTF32, kBF16, kFP16 };
const char* math_name(MathMode m);  // "fp32", "tf32", "bf16", "fp16"

// Thrown when a descriptor is invalid or a backend cannot run a request. The framework turns it
// into its own error with layer context.
class PrimError : public std::runtime_error {
 public:
  explicit PrimError(const std::string& what) : std::runtime_error(what) {}
};

// A 4-d tensor view: sizes N, C, H, W and strides in elements. Packed NCHW is the default; NHWC
// and sub-views are the same struct with other strides. Lower-rank data uses trailing 1s.
struct TensorDesc {
  DataType dtype = DataType::kFloat32;
  int n = 1, c = 1, h = 1, w = 1;
  int64_t stride_n = 1, stride_c = 1, stride_h = 1, stride_w = 1;

  static TensorDesc nchw(DataType t, int n, int c, int h, int w);
  // Channels last: the C values of a pixel side by side, then pixels along rows, rows, images.
  static TensorDesc nhwc(DataType t, int n, int c, int h, int w);
  int64_t count() const { return int64_t(n) * c * h * w; }
  bool is_packed_nchw() const;
  bool is_packed_nhwc() const;
};

// Filter of a convolution, always packed K x (C/groups) x R x S.
struct FilterDesc {
  DataType dtype = DataType::kFloat32;
  int k = 1;  // output channels
  int c = 1;  // input channels per group
  int r = 1;  // kernel height
  int s = 1;  // kernel width
  int64_t count() const { return int64_t(k) * c * r * s; }
};

// Alpha/beta blending, as cuDNN: y = alpha * op(x) + beta * y. beta == 0 never reads y, so y may
// hold garbage (NaN poison) on entry.
struct Blend {
  double alpha = 1.0;
  double beta = 0.0;
};

}  // namespace crema::prim
