// Tensor descriptor helpers.
#include "primitives/types.h"

namespace crema::prim {

size_t dtype_size(DataType t) { return t == DataType::kFloat64 ? 8 : 4; }

const char* dtype_name(DataType t) { return t == DataType::kFloat64 ? "f64" : "f32"; }

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

bool TensorDesc::is_packed_nchw() const {
  return stride_w == 1 && stride_h == w && stride_c == int64_t(h) * w &&
         stride_n == int64_t(c) * h * w;
}

}  // namespace crema::prim
