// Eltwise on CUDA: one grid-stride kernel combines all K inputs per element in registers (so y
// may alias an input), with the same arithmetic as the CPU (sums in double). Up to kMaxByValue
// input pointers and coefficients travel in the kernel's arguments; beyond that they are copied
// to device memory in the workspace. Memory-bound: (K + 1) * sizeof(T) bytes per element
// forward (+4 for the argmax), 8-12 (+ (K - 1) * sizeof(T) for the stable product) backward per
// input; a kSum backward writes all its inputs from one read of dy (and of y, with the fused
// ReLU): (K + 1 or 2) * sizeof(T). A kSum of up to 4 inputs whose pointers are 16-byte aligned,
// n a multiple of the vector, moves 16 bytes per load and store (sum_*_vec_kernel: ResNet's
// shortcut sums and the Split gradients of every branching net), with the same arithmetic.
// bf16 and f16 data are read into fp32 (products and maxima) or double (sums) and rounded once.
#include <cstring>
#include <type_traits>
#include <vector>

#include "primitives/common/activation_ops.h"
#include "primitives/common/dtype_visit.h"
#include "primitives/cuda/cuda_pack.cuh"
#include "primitives/cuda/cuda_util.cuh"
#include "primitives/eltwise.h"

namespace crema::prim::cuda {
namespace {

constexpr int kMaxByValue = 16;

// The inputs and coefficients, either held in the struct or read from device memory.
template <typename T>
struct Inputs {
  const T* ptr[kMaxByValue];
  double coeff[kMaxByValue];
  const T* const* dev_ptr;  // non-null: K pointers in device memory
  const double* dev_coeff;  // likewise K coefficients
  __device__ const T* x(int k) const { return dev_ptr ? dev_ptr[k] : ptr[k]; }
  __device__ double c(int k) const { return dev_ptr ? dev_coeff[k] : coeff[k]; }
};

// An element as computed: fp32 for bf16 and f16 storage.
template <typename T>
__device__ __forceinline__ MathOf<T> ld(T v) {
  return load_as_float(v);
}

template <typename T>
__device__ __forceinline__ T blended(double v, T old, double alpha, double beta) {
  return store_from_float<T>(beta == 0.0 ? alpha * v : alpha * v + beta * double(ld(old)));
}

template <typename T>
__device__ __forceinline__ void store(T* out, double v, double alpha, double beta) {
  *out = blended(v, beta == 0.0 ? T{} : *out, alpha, beta);
}

// The fused ReLU (act_ops, as the CPU applies it), and its gradient at the sum from y's.
__device__ __forceinline__ double fused_relu(double v, bool relu, double slope) {
  return relu ? act_ops::Relu<double>{slope}.fwd(v) : v;
}
template <typename T>
__device__ __forceinline__ double relu_grad(T y, T dy, bool relu, double slope) {
  return relu ? act_ops::Relu<double>{slope}.bwd(double(ld(y)), 0.0, double(ld(dy)))
              : double(ld(dy));
}

template <typename T>
__global__ void fwd_kernel(Inputs<T> in, int K, EltwiseOp op, int64_t n, T* y, int32_t* argmax,
                           bool relu, double slope, double alpha, double beta) {
  CREMA_CUDA_LOOP(i, n) {
    double v = 0;
    if (op == EltwiseOp::kSum) {
      for (int k = 0; k < K; ++k) v += in.c(k) * double(ld(in.x(k)[i]));
    } else if (op == EltwiseOp::kProd) {
      MathOf<T> p = ld(in.x(0)[i]);
      for (int k = 1; k < K; ++k) p *= ld(in.x(k)[i]);
      v = double(p);
    } else {
      MathOf<T> m = ld(in.x(0)[i]);
      int32_t at = 0;
      for (int k = 1; k < K; ++k) {
        const MathOf<T> xk = ld(in.x(k)[i]);
        if (xk > m) {  // strict: the first maximal input wins a tie
          m = xk;
          at = k;
        }
      }
      v = double(m);
      if (argmax) argmax[i] = at;
    }
    store(y + i, fused_relu(v, relu, slope), alpha, beta);
  }
}

template <typename T>
__global__ void bwd_sum_kernel(int64_t n, double c, const T* y, const T* dy, bool relu,
                               double slope, T* dx, double alpha, double beta) {
  CREMA_CUDA_LOOP(i, n)
  store(dx + i, c * relu_grad(relu ? y[i] : T{}, dy[i], relu, slope), alpha, beta);
}

template <typename T, int K>
__global__ void sum_fwd_vec_kernel(Inputs<T> in, int64_t nv, T* y, bool relu, double slope,
                                   double alpha, double beta) {
  constexpr int W = kVecWidth<T>;
  CREMA_CUDA_LOOP(j, nv) {
    double acc[W];
#pragma unroll
    for (int e = 0; e < W; ++e) acc[e] = 0;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const Vec<T> x = reinterpret_cast<const Vec<T>*>(in.ptr[k])[j];
#pragma unroll
      for (int e = 0; e < W; ++e) acc[e] += in.coeff[k] * double(ld(x.v[e]));
    }
    Vec<T> out{};
    if (beta != 0.0) out = reinterpret_cast<const Vec<T>*>(y)[j];
#pragma unroll
    for (int e = 0; e < W; ++e)
      out.v[e] = blended(fused_relu(acc[e], relu, slope), out.v[e], alpha, beta);
    reinterpret_cast<Vec<T>*>(y)[j] = out;
  }
}

// The gradients of up to kMaxByValue inputs (null: not wanted) with their coefficients.
template <typename T>
struct Outputs {
  T* ptr[kMaxByValue];
  double coeff[kMaxByValue];
};

template <typename T, int K>
__global__ void sum_bwd_vec_kernel(Outputs<T> out, int64_t nv, const T* y, const T* dy, bool relu,
                                   double slope, double alpha, double beta) {
  constexpr int W = kVecWidth<T>;
  CREMA_CUDA_LOOP(j, nv) {
    const Vec<T> g = reinterpret_cast<const Vec<T>*>(dy)[j];
    Vec<T> yv{};
    if (relu) yv = reinterpret_cast<const Vec<T>*>(y)[j];
    double dz[W];
#pragma unroll
    for (int e = 0; e < W; ++e) dz[e] = relu_grad(yv.v[e], g.v[e], relu, slope);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (!out.ptr[k]) continue;
      Vec<T> o{};
      if (beta != 0.0) o = reinterpret_cast<const Vec<T>*>(out.ptr[k])[j];
#pragma unroll
      for (int e = 0; e < W; ++e) o.v[e] = blended(out.coeff[k] * dz[e], o.v[e], alpha, beta);
      reinterpret_cast<Vec<T>*>(out.ptr[k])[j] = o;
    }
  }
}

// Calls f with std::integral_constant<int, k> for k in 1..4.
template <typename F>
void with_k(int k, F&& f) {
  switch (k) {
    case 1:
      return f(std::integral_constant<int, 1>{});
    case 2:
      return f(std::integral_constant<int, 2>{});
    case 3:
      return f(std::integral_constant<int, 3>{});
    default:
      return f(std::integral_constant<int, 4>{});
  }
}

template <typename T>
__global__ void bwd_max_kernel(int64_t n, int input, const int32_t* argmax, const T* dy, T* dx,
                               double alpha, double beta) {
  CREMA_CUDA_LOOP(i, n) store(dx + i, argmax[i] == input ? double(ld(dy[i])) : 0.0, alpha, beta);
}

template <typename T>
__global__ void bwd_prod_stable_kernel(Inputs<T> in, int K, int input, int64_t n, const T* dy,
                                       T* dx, double alpha, double beta) {
  CREMA_CUDA_LOOP(i, n) {
    MathOf<T> p = ld(dy[i]);
    for (int k = 0; k < K; ++k)
      if (k != input) p *= ld(in.x(k)[i]);
    store(dx + i, double(p), alpha, beta);
  }
}

template <typename T>
__global__ void bwd_prod_fast_kernel(int64_t n, const T* y, const T* x, const T* dy, T* dx,
                                     double alpha, double beta) {
  CREMA_CUDA_LOOP(i, n) store(dx + i, double(ld(dy[i]) * (ld(y[i]) / ld(x[i]))), alpha, beta);
}

// Packs the host pointer array (and coefficients) for a kernel.
template <typename T>
Inputs<T> pack(Handle& h, const EltwiseDesc& ed, const void* const* x) {
  Inputs<T> in{};
  const int K = ed.num_inputs;
  auto coeff = [&](int k) { return ed.coeff.empty() ? 1.0 : ed.coeff[size_t(k)]; };
  if (K <= kMaxByValue) {
    for (int k = 0; k < K; ++k) {
      in.ptr[k] = static_cast<const T*>(x[k]);
      in.coeff[k] = coeff(k);
    }
    return in;
  }
  // One block: K pointers, then K doubles (pointer-sized, so the doubles stay aligned).
  std::vector<char> host(size_t(K) * (sizeof(void*) + sizeof(double)));
  for (int k = 0; k < K; ++k) {
    const void* p = x[k];
    const double c = coeff(k);
    std::memcpy(host.data() + size_t(k) * sizeof(void*), &p, sizeof(void*));
    std::memcpy(host.data() + size_t(K) * sizeof(void*) + size_t(k) * sizeof(double), &c,
                sizeof(double));
  }
  char* dev = static_cast<char*>(h.workspace(host.size()));
  // From pageable memory the copy is staged before the call returns, so `host` may go.
  check_cuda(cudaMemcpyAsync(dev, host.data(), host.size(), cudaMemcpyHostToDevice, stream_of(h)),
             "eltwise: input pointer upload");
  in.dev_ptr = reinterpret_cast<const T* const*>(dev);
  in.dev_coeff = reinterpret_cast<const double*>(dev + size_t(K) * sizeof(void*));
  return in;
}

template <typename T>
void fwd(Handle& h, const EltwiseDesc& ed, const void* const* x, void* y, int32_t* argmax,
         Blend b) {
  const Inputs<T> in = pack<T>(h, ed, x);
  constexpr int W = kVecWidth<T>;
  bool vec = ed.op == EltwiseOp::kSum && ed.num_inputs <= 4 && ed.n % W == 0 && vec_aligned<T>(y);
  for (int k = 0; k < ed.num_inputs && vec; ++k) vec = vec_aligned<T>(x[k]);
  if (vec) {
    const int64_t nv = ed.n / W;
    with_k(ed.num_inputs, [&](auto K) {
      sum_fwd_vec_kernel<T, K.value><<<grid_for(nv), kBlock, 0, stream_of(h)>>>(
          in, nv, static_cast<T*>(y), ed.relu, ed.negative_slope, b.alpha, b.beta);
    });
  } else {
    fwd_kernel<T><<<grid_for(ed.n), kBlock, 0, stream_of(h)>>>(in, ed.num_inputs, ed.op, ed.n,
                                                               static_cast<T*>(y), argmax, ed.relu,
                                                               ed.negative_slope, b.alpha, b.beta);
  }
  check_launch("eltwise_fwd");
}

// kSum: every wanted input from one pass where the vector kernel applies.
template <typename T>
bool sum_bwd_vec(Handle& h, const EltwiseDesc& ed, const void* y, const void* dy, void* const* dx,
                 Blend b) {
  constexpr int W = kVecWidth<T>;
  if (ed.num_inputs > 4 || ed.n % W != 0 || !vec_aligned<T>(dy) || (ed.relu && !vec_aligned<T>(y)))
    return false;
  Outputs<T> out{};
  for (int k = 0; k < ed.num_inputs; ++k) {
    if (dx[k] && !vec_aligned<T>(dx[k])) return false;
    out.ptr[k] = static_cast<T*>(dx[k]);
    out.coeff[k] = ed.coeff.empty() ? 1.0 : ed.coeff[size_t(k)];
  }
  const int64_t nv = ed.n / W;
  with_k(ed.num_inputs, [&](auto K) {
    sum_bwd_vec_kernel<T, K.value><<<grid_for(nv), kBlock, 0, stream_of(h)>>>(
        out, nv, static_cast<const T*>(y), static_cast<const T*>(dy), ed.relu, ed.negative_slope,
        b.alpha, b.beta);
  });
  check_launch("eltwise_bwd");
  return true;
}

template <typename T>
void bwd(Handle& h, const EltwiseDesc& ed, const void* const* x, const void* yv, const void* dyv,
         const int32_t* argmax, void* const* dxv, Blend b) {
  if (ed.op == EltwiseOp::kSum && sum_bwd_vec<T>(h, ed, yv, dyv, dxv, b)) return;
  const T* dy = static_cast<const T*>(dyv);
  const T* y = static_cast<const T*>(yv);
  const unsigned grid = grid_for(ed.n);
  cudaStream_t s = stream_of(h);
  // Last to first: where dy is dx[0] (in place), it is overwritten after every other read.
  for (int input = ed.num_inputs - 1; input >= 0; --input) {
    T* dx = static_cast<T*>(dxv[input]);
    if (!dx) continue;
    switch (ed.op) {
      case EltwiseOp::kSum:
        bwd_sum_kernel<T>
            <<<grid, kBlock, 0, s>>>(ed.n, ed.coeff.empty() ? 1.0 : ed.coeff[size_t(input)], y, dy,
                                     ed.relu, ed.negative_slope, dx, b.alpha, b.beta);
        break;
      case EltwiseOp::kMax:
        bwd_max_kernel<T><<<grid, kBlock, 0, s>>>(ed.n, input, argmax, dy, dx, b.alpha, b.beta);
        break;
      case EltwiseOp::kProd:
        if (ed.stable_prod_grad)
          bwd_prod_stable_kernel<T><<<grid, kBlock, 0, s>>>(pack<T>(h, ed, x), ed.num_inputs, input,
                                                            ed.n, dy, dx, b.alpha, b.beta);
        else
          bwd_prod_fast_kernel<T><<<grid, kBlock, 0, s>>>(ed.n, y, static_cast<const T*>(x[input]),
                                                          dy, dx, b.alpha, b.beta);
        break;
    }
    check_launch("eltwise_bwd");
  }
}

}  // namespace

void eltwise_fwd(Handle& h, const EltwiseDesc& ed, const void* const* x, void* y, int32_t* argmax,
                 Blend blend) {
  visit_dtype(kAllTypes, ed.dtype, "eltwise_fwd", Device::kCUDA,
              [&](auto tag) { fwd<typename decltype(tag)::type>(h, ed, x, y, argmax, blend); });
}

void eltwise_bwd(Handle& h, const EltwiseDesc& ed, const void* const* x, const void* y,
                 const void* dy, const int32_t* argmax, void* const* dx, Blend blend) {
  visit_dtype(kAllTypes, ed.dtype, "eltwise_bwd", Device::kCUDA, [&](auto tag) {
    bwd<typename decltype(tag)::type>(h, ed, x, y, dy, argmax, dx, blend);
  });
}

}  // namespace crema::prim::cuda
