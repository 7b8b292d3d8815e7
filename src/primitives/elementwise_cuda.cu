// Element-wise vector primitives on CUDA: one grid-stride kernel per operation, templated on the
// element type. Memory-bound: 8 bytes per f32 element for the unary operations, 12 for mul/div.
#include "primitives/cuda_util.cuh"
#include "primitives/dtype_visit.h"
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

// Runs Op<T>{T(args)...} over n elements for the storage type T that t names.
template <template <typename> class Op, typename... Args>
void unary(Handle& h, DataType t, const char* name, int64_t n, const void* x, void* y,
           Args... args) {
  visit_dtype(kFloatTypes, t, name, Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    unary_kernel<<<grid_for(n), kBlock, 0, stream_of(h)>>>(
        Op<T>{T(args)...}, n, static_cast<const T*>(x), static_cast<T*>(y));
    check_launch(name);
  });
}

template <template <typename> class Op>
void binary(Handle& h, DataType t, const char* name, int64_t n, const void* a, const void* b,
            void* y) {
  visit_dtype(kFloatTypes, t, name, Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    binary_kernel<<<grid_for(n), kBlock, 0, stream_of(h)>>>(
        Op<T>{}, n, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(y));
    check_launch(name);
  });
}

}  // namespace

void elt_sign(Handle& h, DataType t, int64_t n, const void* x, void* y) {
  unary<Sign>(h, t, "elt_sign", n, x, y);
}

void elt_mul(Handle& h, DataType t, int64_t n, const void* a, const void* b, void* y) {
  binary<Mul>(h, t, "elt_mul", n, a, b, y);
}

void elt_div(Handle& h, DataType t, int64_t n, const void* a, const void* b, void* y) {
  binary<Div>(h, t, "elt_div", n, a, b, y);
}

void elt_sqrt(Handle& h, DataType t, int64_t n, const void* x, void* y) {
  unary<Sqrt>(h, t, "elt_sqrt", n, x, y);
}

void elt_add_scalar(Handle& h, DataType t, int64_t n, double alpha, void* y) {
  unary<AddScalar>(h, t, "elt_add_scalar", n, y, y, alpha);
}

}  // namespace crema::prim::cuda
