// Tensor descriptor helpers.
#include "primitives/types.h"

#include "primitives/common/dtype_visit.h"

namespace crema::prim {

size_t dtype_size(DataType t) {
  switch (t) {
    case DataType::kFloat32:
      return 4;
    case DataType::kFloat64:
      return 8;
    case DataType::kBFloat16:
    case DataType::kFloat16:
      return 2;
  }
  throw PrimError("invalid data type " + std::to_string(int(t)));
}

const char* dtype_name(DataType t) {
  switch (t) {
    case DataType::kFloat32:
      return "f32";
    case DataType::kFloat64:
      return "f64";
    case DataType::kBFloat16:
      return "bf16";
    case DataType::kFloat16:
      return "f16";
  }
  return "invalid";
}

void convert_values(DataType from, const void* x, DataType to, void* y, int64_t n) {
  visit_dtype(kAllTypes, from, "convert_values", Device::kCPU, [&](auto xt) {
    visit_dtype(kAllTypes, to, "convert_values", Device::kCPU, [&](auto yt) {
      using X = typename decltype(xt)::type;
      using Y = typename decltype(yt)::type;
      const X* in = static_cast<const X*>(x);
      Y* out = static_cast<Y*>(y);
      for (int64_t i = 0; i < n; ++i) out[i] = store_from_float<Y>(load_as_float(in[i]));
    });
  });
}

const char* device_name(Device d) { return d == Device::kCPU ? "cpu" : "cuda"; }

const char* math_name(MathMode m) {
  switch (m) {
    case MathMode::kFP32:
      return "fp32";
    case MathMode::kTF32:
      return "tf32";
    case MathMode::kBF16:
      return "bf16";
    case MathMode::kFP16:
      return "fp16";
  }
  return "invalid";
}

TensorDesc TensorDesc::nchw(DataType t, int n, int c, int h, int w) {
  TensorDesc d;
  d.dtype = t;
  d.n = n;
  d.c = c;
  d.h = h;
  d.w = w;
  d.stride_w = 1;
  d.stride_h = w;
  d.stride_c = int64_t(h) * w;
  d.stride_n = int64_t(c) * h * w;
  return d;
}

TensorDesc TensorDesc::nhwc(DataType t, int n, int c, int h, int w) {
  TensorDesc d = nchw(t, n, c, h, w);
  d.stride_c = 1;
  d.stride_w = c;
  d.stride_h = int64_t(w) * c;
  d.stride_n = int64_t(h) * w * c;
  return d;
}

bool TensorDesc::is_packed_nhwc() const {
  return stride_c == 1 && stride_w == c && stride_h == int64_t(w) * c &&
         stride_n == int64_t(h) * w * c;
}

bool TensorDesc::is_packed_nchw() const {
  return stride_w == 1 && stride_h == w && stride_c == int64_t(h) * w &&
         stride_n == int64_t(c) * h * w;
}

std::string dims(const TensorDesc& d) {
  return std::to_string(d.n) + "x" + std::to_string(d.c) + "x" + std::to_string(d.h) + "x" +
         std::to_string(d.w);
}

}  // namespace crema::prim
