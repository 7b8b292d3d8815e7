// Element-wise vector primitives on CUDA: one grid-stride kernel per operation, templated on the
// element type. Memory-bound: 8 bytes per f32 element for the unary operations, 12 for mul/div.
#include "primitives/cuda_util.cuh"
#include "primitives/elementwise.h"

namespace crema::prim::cuda {
namespace {

template <typename T>
struct Sign {
  // (0 < x) - (x < 0): 0 stays 0, as on the CPU.
  __device__ T operator()(T x) const { return T((T(0) < x) - (x < T(0))); }
};
template <typename T>
struct Sqrt {
  __device__ T operator()(T x) const { return sqrt(x); }
};
template <typename T>
struct AddScalar {
  T a;
  __device__ T operator()(T x) const { return x + a; }
};
template <typename T>
struct Mul {
  __device__ T operator()(T a, T b) const { return a * b; }
};
template <typename T>
struct Div {
  __device__ T operator()(T a, T b) const { return a / b; }
};

template <typename T, typename Op>
__global__ void unary_kernel(Op op, int64_t n, const T* x, T* y) {
  CREMA_CUDA_LOOP(i, n) y[i] = op(x[i]);
}

template <typename T, typename Op>
__global__ void binary_kernel(Op op, int64_t n, const T* a, const T* b, T* y) {
  CREMA_CUDA_LOOP(i, n) y[i] = op(a[i], b[i]);
}

// Calls f with a zero of the C++ type that t names.
template <typename F>
void by_dtype(DataType t, F&& f) {
  if (t == DataType::kFloat64)
    f(double{});
  else
    f(float{});
}

template <typename T, typename Op>
void unary(Handle& h, Op op, int64_t n, const void* x, void* y, const char* name) {
  unary_kernel<<<grid_for(n), kBlock, 0, stream_of(h)>>>(op, n, static_cast<const T*>(x),
                                                         static_cast<T*>(y));
  check_launch(name);
}

template <typename T, typename Op>
void binary(Handle& h, Op op, int64_t n, const void* a, const void* b, void* y, const char* name) {
  binary_kernel<<<grid_for(n), kBlock, 0, stream_of(h)>>>(
      op, n, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(y));
  check_launch(name);
}

}  // namespace

void elt_sign(Handle& h, DataType t, int64_t n, const void* x, void* y) {
  by_dtype(t, [&](auto z) { unary<decltype(z)>(h, Sign<decltype(z)>{}, n, x, y, "elt_sign"); });
}

void elt_mul(Handle& h, DataType t, int64_t n, const void* a, const void* b, void* y) {
  by_dtype(t, [&](auto z) { binary<decltype(z)>(h, Mul<decltype(z)>{}, n, a, b, y, "elt_mul"); });
}

void elt_div(Handle& h, DataType t, int64_t n, const void* a, const void* b, void* y) {
  by_dtype(t, [&](auto z) { binary<decltype(z)>(h, Div<decltype(z)>{}, n, a, b, y, "elt_div"); });
}

void elt_sqrt(Handle& h, DataType t, int64_t n, const void* x, void* y) {
  by_dtype(t, [&](auto z) { unary<decltype(z)>(h, Sqrt<decltype(z)>{}, n, x, y, "elt_sqrt"); });
}

void elt_add_scalar(Handle& h, DataType t, int64_t n, double alpha, void* y) {
  by_dtype(t, [&](auto z) {
    using T = decltype(z);
    unary<T>(h, AddScalar<T>{T(alpha)}, n, y, y, "elt_add_scalar");
  });
}

}  // namespace crema::prim::cuda
