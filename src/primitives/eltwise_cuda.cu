// Eltwise on CUDA: one grid-stride kernel combines all K inputs per element in registers (so y
// may alias an input), with the same arithmetic as the CPU (sums in double). Up to kMaxByValue
// input pointers and coefficients travel in the kernel's arguments; beyond that they are copied
// to device memory in the workspace. Memory-bound: (K + 1) * sizeof(T) bytes per element
// forward (+4 for the argmax), 8-12 (+ (K - 1) * sizeof(T) for the stable product) backward.
#include <cstring>
#include <vector>

#include "primitives/cuda_util.cuh"
#include "primitives/dtype_visit.h"
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

template <typename T>
__device__ __forceinline__ void store(T* out, double v, double alpha, double beta) {
  *out = beta == 0.0 ? T(alpha * v) : T(alpha * v + beta * double(*out));
}

template <typename T>
__global__ void fwd_kernel(Inputs<T> in, int K, EltwiseOp op, int64_t n, T* y, int32_t* argmax,
                           double alpha, double beta) {
  CREMA_CUDA_LOOP(i, n) {
    double v = 0;
    if (op == EltwiseOp::kSum) {
      for (int k = 0; k < K; ++k) v += in.c(k) * double(in.x(k)[i]);
    } else if (op == EltwiseOp::kProd) {
      T p = in.x(0)[i];
      for (int k = 1; k < K; ++k) p *= in.x(k)[i];
      v = double(p);
    } else {
      T m = in.x(0)[i];
      int32_t at = 0;
      for (int k = 1; k < K; ++k) {
        const T xk = in.x(k)[i];
        if (xk > m) {  // strict: the first maximal input wins a tie
          m = xk;
          at = k;
        }
      }
      v = double(m);
      if (argmax) argmax[i] = at;
    }
    store(y + i, v, alpha, beta);
  }
}

template <typename T>
__global__ void bwd_sum_kernel(int64_t n, double c, const T* dy, T* dx, double alpha, double beta) {
  CREMA_CUDA_LOOP(i, n) store(dx + i, c * double(dy[i]), alpha, beta);
}

template <typename T>
__global__ void bwd_max_kernel(int64_t n, int input, const int32_t* argmax, const T* dy, T* dx,
                               double alpha, double beta) {
  CREMA_CUDA_LOOP(i, n) store(dx + i, argmax[i] == input ? double(dy[i]) : 0.0, alpha, beta);
}

template <typename T>
__global__ void bwd_prod_stable_kernel(Inputs<T> in, int K, int input, int64_t n, const T* dy,
                                       T* dx, double alpha, double beta) {
  CREMA_CUDA_LOOP(i, n) {
    T p = dy[i];
    for (int k = 0; k < K; ++k)
      if (k != input) p *= in.x(k)[i];
    store(dx + i, double(p), alpha, beta);
  }
}

template <typename T>
__global__ void bwd_prod_fast_kernel(int64_t n, const T* y, const T* x, const T* dy, T* dx,
                                     double alpha, double beta) {
  CREMA_CUDA_LOOP(i, n) store(dx + i, double(dy[i] * (y[i] / x[i])), alpha, beta);
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
  fwd_kernel<T><<<grid_for(ed.n), kBlock, 0, stream_of(h)>>>(
      in, ed.num_inputs, ed.op, ed.n, static_cast<T*>(y), argmax, b.alpha, b.beta);
  check_launch("eltwise_fwd");
}

template <typename T>
void bwd(Handle& h, const EltwiseDesc& ed, const void* const* x, const void* yv, const void* dyv,
         const int32_t* argmax, int input, void* dxv, Blend b) {
  const T* dy = static_cast<const T*>(dyv);
  T* dx = static_cast<T*>(dxv);
  const unsigned grid = grid_for(ed.n);
  cudaStream_t s = stream_of(h);
  switch (ed.op) {
    case EltwiseOp::kSum:
      bwd_sum_kernel<T><<<grid, kBlock, 0, s>>>(
          ed.n, ed.coeff.empty() ? 1.0 : ed.coeff[size_t(input)], dy, dx, b.alpha, b.beta);
      break;
    case EltwiseOp::kMax:
      bwd_max_kernel<T><<<grid, kBlock, 0, s>>>(ed.n, input, argmax, dy, dx, b.alpha, b.beta);
      break;
    case EltwiseOp::kProd:
      if (ed.stable_prod_grad)
        bwd_prod_stable_kernel<T><<<grid, kBlock, 0, s>>>(pack<T>(h, ed, x), ed.num_inputs, input,
                                                          ed.n, dy, dx, b.alpha, b.beta);
      else
        bwd_prod_fast_kernel<T><<<grid, kBlock, 0, s>>>(ed.n, static_cast<const T*>(yv),
                                                        static_cast<const T*>(x[input]), dy, dx,
                                                        b.alpha, b.beta);
      break;
  }
  check_launch("eltwise_bwd");
}

}  // namespace

void eltwise_fwd(Handle& h, const EltwiseDesc& ed, const void* const* x, void* y, int32_t* argmax,
                 Blend blend) {
  visit_dtype(kFloatTypes, ed.dtype, "eltwise_fwd", Device::kCUDA,
              [&](auto tag) { fwd<typename decltype(tag)::type>(h, ed, x, y, argmax, blend); });
}

void eltwise_bwd(Handle& h, const EltwiseDesc& ed, const void* const* x, const void* y,
                 const void* dy, const int32_t* argmax, int input, void* dx, Blend blend) {
  visit_dtype(kFloatTypes, ed.dtype, "eltwise_bwd", Device::kCUDA, [&](auto tag) {
    bwd<typename decltype(tag)::type>(h, ed, x, y, dy, argmax, input, dx, blend);
  });
}

}  // namespace crema::prim::cuda
