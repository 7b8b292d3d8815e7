// BLAS-style primitives on CUDA: GEMM through cuBLAS, or cuBLASLt where an epilogue fuses, under
// the call's math mode (a small A B^T: a warp per output), GEMV through cuBLAS, the
// level-1 operations as grid-stride kernels, dot/asum as a deterministic two-pass reduction in
// double, and the per-channel bias add and gradient (channel_sums of cuda_reduce.cuh) of conv
// and inner-product layers.
#include <algorithm>

#include "primitives/blas.h"
#include "primitives/common/dtype_visit.h"
#include "primitives/common/fast_div.h"
#include "primitives/cuda/cuda_index.cuh"
#include "primitives/cuda/cuda_reduce.cuh"
#include "primitives/cuda/cuda_util.cuh"
#include "primitives/cuda/gemm_lt.cuh"
#include "primitives/cuda/tensor_list.cuh"

namespace crema::prim::cuda {
namespace {

// The row-major matrices of blas.h are the column-major transposes cuBLAS sees, so
// C = op(A) op(B) (row-major) is C^T = op(B)^T op(A)^T (column-major): swap the operands and
// m/n, keep the transpose flags.
cublasOperation_t to_cublas(Trans t) { return t == Trans::kYes ? CUBLAS_OP_T : CUBLAS_OP_N; }

// f32: one GEMM of cuda_util.cuh's gemm_batched, whose compute type carries the math mode;
// f64: strict DGEMM.
cublasStatus_t gemm_call(cublasHandle_t b, MathMode math, cublasOperation_t ta,
                         cublasOperation_t tb, int m, int n, int k, const float* alpha,
                         const float* a, int lda, const float* bb, int ldb, const float* beta,
                         float* c, int ldc) {
  return gemm_batched(b, math, ta, tb, m, n, k, alpha, a, lda, 0, bb, ldb, 0, beta, c, ldc, 0, 1);
}
cublasStatus_t gemm_call(cublasHandle_t b, MathMode, cublasOperation_t ta, cublasOperation_t tb,
                         int m, int n, int k, const double* alpha, const double* a, int lda,
                         const double* bb, int ldb, const double* beta, double* c, int ldc) {
  return cublasDgemm(b, ta, tb, m, n, k, alpha, a, lda, bb, ldb, beta, c, ldc);
}
cublasStatus_t gemv_call(cublasHandle_t b, cublasOperation_t t, int m, int n, const float* alpha,
                         const float* a, int lda, const float* x, const float* beta, float* y) {
  return cublasSgemv(b, t, m, n, alpha, a, lda, x, 1, beta, y, 1);
}
cublasStatus_t gemv_call(cublasHandle_t b, cublasOperation_t t, int m, int n, const double* alpha,
                         const double* a, int lda, const double* x, const double* beta, double* y) {
  return cublasDgemv(b, t, m, n, alpha, a, lda, x, 1, beta, y, 1);
}

// The scalars are host values; the math mode is each call's compute type, not the handle's.
void prepare(cublasHandle_t b) {
  check_cublas(cublasSetPointerMode(b, CUBLAS_POINTER_MODE_HOST), "cublasSetPointerMode");
  check_cublas(cublasSetMathMode(b, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
}

// x = beta * x; beta == 0 writes zeros without reading (NaN poison must not survive).
template <typename T>
__global__ void scale_kernel(int64_t n, T beta, T* x) {
  CREMA_CUDA_LOOP(i, n) x[i] = beta == T(0) ? T(0) : beta * x[i];
}

template <typename T>
void scale_or_zero(Handle& h, int64_t n, T beta, T* x) {
  if (n == 0 || beta == T(1)) return;
  scale_kernel<<<grid_for(n), kBlock, 0, stream_of(h)>>>(n, beta, x);
  check_launch("scale_kernel");
}

// C = alpha * A B^T + beta * C, then the epilogue, for a small C: a warp per element of C walks
// its row of A and of B, both contiguous, and the lanes' sums meet in a fixed shuffle tree.
// LeNet's ip2 (64 x 10, depth 500) took 9 us in cuBLAS's TF32 kernel (32 x 32 tiles: 2 blocks
// walking the whole depth) plus a bias kernel; 640 warps read its 150 KB once each.
constexpr int64_t kDotsMaxOutputs = 4096;
constexpr int64_t kDotsMaxMacs = int64_t(1) << 23;

template <typename T>
__device__ __forceinline__ T relu_of(T v) {
  return v > T(0) ? v : T(0);
}

template <typename T>
__global__ void gemm_dots_kernel(int m, int n, int k, T alpha, const T* __restrict__ a,
                                 const T* __restrict__ b, T beta, T* c, const T* __restrict__ bias,
                                 bool relu) {
  const int lane = int(threadIdx.x & 31u);
  CREMA_CUDA_WARP_LOOP(w, int64_t(m) * n) {
    const int64_t i = w / n, j = w % n;
    const T* ar = a + i * k;
    const T* br = b + j * k;
    T s = T(0);
#pragma unroll 4
    for (int l = lane; l < k; l += 32) s = fma(ar[l], br[l], s);
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) {
      T v = beta == T(0) ? alpha * s : alpha * s + beta * c[w];
      if (bias) v += bias[j];
      c[w] = relu ? relu_of(v) : v;
    }
  }
}

template <typename T>
__global__ void relu_kernel(int64_t n, T* x) {
  CREMA_CUDA_LOOP(i, n) x[i] = relu_of(x[i]);
}

template <typename T>
void bias_add_impl(Handle& h, const TensorDesc& yd, T* y, const T* bias, T alpha);

// The epilogue on its own, after a product that could not take it.
template <typename T>
void epilogue_apart(Handle& h, int m, int n, const T* bias, bool relu, T* c) {
  if (bias) bias_add_impl(h, TensorDesc::nchw(dtype_of<T>(), m, n, 1, 1), c, bias, T(1));
  if (!relu) return;
  relu_kernel<<<grid_for(int64_t(m) * n), kBlock, 0, stream_of(h)>>>(int64_t(m) * n, c);
  check_launch("relu_kernel");
}

// A small A B^T on the warp-per-output kernel; a GEMM with an epilogue on cuBLASLt, the epilogue
// fused; the rest on cuBLAS, and where cuBLASLt has no algorithm, the epilogue apart after it.
// Plain GEMMs stay on cuBLAS: on LeNet's backward (H200, strict fp32) cuBLASLt's heuristic picked
// slower kernels than cuBLAS's, and the replayed step took 0.193 ms instead of 0.165.
template <typename T>
void gemm_impl(Handle& h, Trans ta, Trans tb, int m, int n, int k, double alpha, const void* a,
               const void* b, double beta, void* c, MathMode math, GemmEpilogue ep) {
  T* cc = static_cast<T*>(c);
  const T* bias = static_cast<const T*>(ep.bias);
  if (m == 0 || n == 0) return;
  if (k == 0 || alpha == 0.0) {
    scale_or_zero<T>(h, int64_t(m) * n, T(beta), cc);
    epilogue_apart(h, m, n, bias, ep.relu, cc);
    return;
  }
  const T al = T(alpha), be = T(beta);
  const T* aa = static_cast<const T*>(a);
  const T* bb = static_cast<const T*>(b);
  const int64_t outputs = int64_t(m) * n;
  if (ta == Trans::kNo && tb == Trans::kYes && outputs <= kDotsMaxOutputs &&
      outputs * k <= kDotsMaxMacs) {
    gemm_dots_kernel<<<grid_for(outputs * 32), kBlock, 0, stream_of(h)>>>(m, n, k, al, aa, bb, be,
                                                                          cc, bias, ep.relu);
    check_launch("gemm_dots_kernel");
    return;
  }
  if ((bias || ep.relu) &&
      blas_context(h).lt->run(h, ta, tb, m, n, k, al, aa, bb, be, cc, math, bias, ep.relu))
    return;
  const int lda = ta == Trans::kNo ? k : m;
  const int ldb = tb == Trans::kNo ? n : k;
  cublasHandle_t bh = blas_of(h);
  prepare(bh);
  check_cublas(
      gemm_call(bh, math, to_cublas(tb), to_cublas(ta), n, m, k, &al, bb, ldb, aa, lda, &be, cc, n),
      "cublas gemm");
  epilogue_apart(h, m, n, bias, ep.relu, cc);
}

// Row-major A (m x n) is column-major A^T (n x m, ld n): A x is (A^T)^T x, A^T x is (A^T) x.
template <typename T>
void gemv_impl(Handle& h, Trans ta, int m, int n, double alpha, const void* a, const void* x,
               double beta, void* y) {
  const int ylen = ta == Trans::kNo ? m : n;
  const int xlen = ta == Trans::kNo ? n : m;
  T* yy = static_cast<T*>(y);
  if (ylen == 0) return;
  if (xlen == 0 || alpha == 0.0) {
    scale_or_zero<T>(h, ylen, T(beta), yy);
    return;
  }
  const T al = T(alpha), be = T(beta);
  cublasHandle_t bh = blas_of(h);
  prepare(bh);
  check_cublas(gemv_call(bh, ta == Trans::kNo ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, &al,
                         static_cast<const T*>(a), n, static_cast<const T*>(x), &be, yy),
               "cublas gemv");
}

template <typename T>
__global__ void axpby_kernel(int64_t n, T alpha, const T* x, T beta, T* y) {
  // The CPU computes a*x + b*y with two rounded products; no fused multiply-add, so the results
  // agree bit for bit.
  CREMA_CUDA_LOOP(i, n) {
    const T ax = mul_rn(alpha, x[i]);
    y[i] = beta == T(0) ? ax : beta == T(1) ? add_rn(y[i], ax) : add_rn(ax, mul_rn(beta, y[i]));
  }
}

template <typename T>
struct FillTable {
  ListTiles tiles;
  T value;
  T* x[kListMax];
};

template <typename T>
__global__ void fill_kernel(const __grid_constant__ FillTable<T> f) {
  for_each_listed(f.tiles, [&](int t, int64_t i) { f.x[t][i] = f.value; });
}

template <typename T>
void fill_list(Handle& h, T value, const FillTarget* targets, size_t count) {
  for (size_t start = 0; start < count; start += kListMax) {
    FillTable<T> f{};
    f.value = value;
    for (size_t i = start; i < std::min(count, start + kListMax); ++i) {
      f.x[f.tiles.size] = static_cast<T*>(targets[i].x);
      add_tiles(f.tiles, targets[i].n);
    }
    if (f.tiles.first[f.tiles.size] == 0) continue;  // nothing to fill
    fill_kernel<T><<<list_grid(f.tiles), kBlock, 0, stream_of(h)>>>(f);
    check_launch("fill_kernel");
  }
}

// Two-pass reduction in double with a fixed block count and tree order: the result depends only
// on n, never on timing. Pass one writes one partial per block, pass two sums them.
constexpr int kReduceBlocks = 1024;

template <int kThreads>
__device__ double block_sum(double v) {
  __shared__ double buf[kThreads];
  buf[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
    __syncthreads();
  }
  return buf[0];
}

// The blended total: alpha * sum + beta * prev, prev unread when beta is 0.
__device__ __forceinline__ void blend_total(double sum, double alpha, double beta, double* out) {
  *out = beta == 0 ? alpha * sum : alpha * sum + beta * *out;
}

// With one block (small n: a loss) the partial is the total and is written blended at once,
// one launch instead of two.
template <typename T, bool kDot>
__global__ void reduce_partials(int64_t n, const T* x, const T* y, double* partial, double alpha,
                                double beta, double* out) {
  double s = 0;
  CREMA_CUDA_LOOP(i, n) s += kDot ? double(x[i]) * double(y[i]) : fabs(double(x[i]));
  const double total = block_sum<kBlock>(s);
  if (threadIdx.x != 0) return;
  if (gridDim.x == 1)
    blend_total(total, alpha, beta, out);
  else
    partial[blockIdx.x] = total;
}

__global__ void reduce_final(int count, const double* partial, double alpha, double beta,
                             double* out) {
  double s = 0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) s += partial[i];
  const double total = block_sum<kBlock>(s);
  if (threadIdx.x == 0) blend_total(total, alpha, beta, out);
}

// out[0] = alpha * the reduction + beta * out[0]; partial: kReduceBlocks doubles of scratch.
template <typename T, bool kDot>
void reduce_into(Handle& h, int64_t n, const void* x, const void* y, double alpha, double beta,
                 double* out, double* partial) {
  const unsigned blocks = std::min<unsigned>(grid_for(n), kReduceBlocks);
  cudaStream_t st = stream_of(h);
  reduce_partials<T, kDot><<<blocks, kBlock, 0, st>>>(
      n, static_cast<const T*>(x), static_cast<const T*>(y), partial, alpha, beta, out);
  check_launch("reduce_partials");
  if (blocks == 1) return;
  reduce_final<<<1, kBlock, 0, st>>>(int(blocks), partial, alpha, beta, out);
  check_launch("reduce_final");
}

template <typename T, bool kDot>
double reduce(Handle& h, int64_t n, const void* x, const void* y) {
  if (n == 0) return 0.0;
  double* partial = static_cast<double*>(h.workspace(sizeof(double) * (kReduceBlocks + 1)));
  double* total = partial + kReduceBlocks;
  reduce_into<T, kDot>(h, n, x, y, 1.0, 0.0, total, partial);
  double result = 0;
  check_cuda(cudaMemcpyAsync(&result, total, sizeof(double), cudaMemcpyDeviceToHost, stream_of(h)),
             "dot/asum result copy");
  wait_for_stream(h, "dot/asum synchronize");
  return result;
}

template <typename T>
__global__ void bias_add_kernel(StridedIndex ix, T alpha, const T* bias, T* y) {
  CREMA_CUDA_LOOP(i, ix.count) {
    int c;
    const int64_t off = ix.offset(i, &c);
    y[off] += mul_rn(alpha, bias[c]);
  }
}

// Packed tensors below 2^31 elements: the channel of element i is (i / hw) % C by two
// multiply-high divisions. StridedIndex's three 32-bit divisions per element made the strided
// kernel instruction-bound (caffenet:conv1's output: 1.11x cudnnAddTensor's time, 63% of the
// copy rate).
template <typename T>
__global__ void bias_add_packed_kernel(uint32_t count, FastDiv hw, FastDiv C, T alpha,
                                       const T* bias, T* y) {
  CREMA_CUDA_LOOP(i, count) {
    const uint32_t plane = hw.div(uint32_t(i));
    y[i] += mul_rn(alpha, bias[plane - C.div(plane) * C.d]);
  }
}

// Bias gradient terms for channel_sums: the element at packed (n, c, h, w) offset j, read
// through dy's strides when dy is a strided view (packed tensors, every layer's, skip the
// divisions). Summed in double, then blended in double as on the CPU.
template <typename T>
struct BiasTerm {
  const T* dy;
  StridedIndex ix;
  bool packed;
  __device__ void operator()(int64_t j, int64_t c, double (&v)[1]) const {
    if (packed) {
      v[0] += double(dy[j]);
    } else {
      const int64_t hw = int64_t(ix.h) * ix.w, n = j / (ix.c * hw), i = j - (n * ix.c + c) * hw;
      v[0] += double(dy[ix.channel_offset(int(c), n * hw + i)]);
    }
  }
};

template <typename T>
struct BiasFin {
  T* db;
  double alpha, beta;
  __device__ void operator()(int64_t c, const double (&v)[1]) const {
    const double r = alpha * v[0];
    db[c] = beta == 0.0 ? T(r) : T(r + beta * double(db[c]));
  }
};

template <typename T>
void bias_bwd_impl(Handle& h, const TensorDesc& d, const T* dy, T* db, Blend b) {
  const int64_t hw = int64_t(d.h) * d.w;
  const bool packed = d.is_packed_nchw();
  const ChanPlan plan = plan_channels(d.n, d.c, hw);
  double* partial = static_cast<double*>(h.workspace(sizeof(double) * plan.scratch_doubles(1)));
  channel_sums<1>(h, plan, partial, BiasTerm<T>{dy, StridedIndex(d), packed},
                  BiasFin<T>{db, b.alpha, b.beta}, "bias_bwd");
}

template <typename T>
void bias_add_impl(Handle& h, const TensorDesc& yd, T* y, const T* bias, T alpha) {
  const StridedIndex ix(yd);
  if (ix.count == 0) return;
  const int64_t hw = int64_t(yd.h) * yd.w;
  if (yd.is_packed_nchw() && ix.count < (int64_t(1) << 31))
    bias_add_packed_kernel<<<grid_for(ix.count), kBlock, 0, stream_of(h)>>>(
        uint32_t(ix.count), FastDiv(uint32_t(hw)), FastDiv(uint32_t(yd.c)), alpha, bias, y);
  else
    bias_add_kernel<<<grid_for(ix.count), kBlock, 0, stream_of(h)>>>(ix, alpha, bias, y);
  check_launch("bias_add");
}

}  // namespace

void gemm(Handle& h, DataType t, Trans ta, Trans tb, int m, int n, int k, double alpha,
          const void* a, const void* b, double beta, void* c, MathMode math, GemmEpilogue ep) {
  visit_dtype(kFloatTypes, t, "gemm", Device::kCUDA, [&](auto tag) {
    gemm_impl<typename decltype(tag)::type>(h, ta, tb, m, n, k, alpha, a, b, beta, c, math, ep);
  });
}

void gemv(Handle& h, DataType t, Trans ta, int m, int n, double alpha, const void* a, const void* x,
          double beta, void* y) {
  visit_dtype(kFloatTypes, t, "gemv", Device::kCUDA, [&](auto tag) {
    gemv_impl<typename decltype(tag)::type>(h, ta, m, n, alpha, a, x, beta, y);
  });
}

void axpby(Handle& h, DataType t, int64_t n, double alpha, const void* x, double beta, void* y) {
  visit_dtype(kFloatTypes, t, "axpby", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (n == 0) return;
    axpby_kernel<<<grid_for(n), kBlock, 0, stream_of(h)>>>(n, T(alpha), static_cast<const T*>(x),
                                                           T(beta), static_cast<T*>(y));
    check_launch("axpby_kernel");
  });
}

void scal(Handle& h, DataType t, int64_t n, double alpha, void* x) {
  visit_dtype(kFloatTypes, t, "scal", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    scale_or_zero<T>(h, n, T(alpha), static_cast<T*>(x));
  });
}

void fill(Handle& h, DataType t, double value, const FillTarget* targets, size_t count) {
  visit_dtype(kFloatTypes, t, "fill", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_list<T>(h, T(value), targets, count);
  });
}

double dot(Handle& h, DataType t, int64_t n, const void* x, const void* y) {
  return visit_dtype(kFloatTypes, t, "dot", Device::kCUDA, [&](auto tag) {
    return reduce<typename decltype(tag)::type, true>(h, n, x, y);
  });
}

void dot_into(Handle& h, DataType t, int64_t n, const void* x, const void* y, double alpha,
              double beta, double* result) {
  visit_dtype(kFloatTypes, t, "dot_into", Device::kCUDA, [&](auto tag) {
    double* partial = static_cast<double*>(h.workspace(sizeof(double) * kReduceBlocks));
    reduce_into<typename decltype(tag)::type, true>(h, n, x, y, alpha, beta, result, partial);
  });
}

double asum(Handle& h, DataType t, int64_t n, const void* x) {
  return visit_dtype(kFloatTypes, t, "asum", Device::kCUDA, [&](auto tag) {
    return reduce<typename decltype(tag)::type, false>(h, n, x, x);
  });
}

void bias_add(Handle& h, const TensorDesc& yd, void* y, const void* bias, double alpha) {
  visit_dtype(kFloatTypes, yd.dtype, "bias_add", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    bias_add_impl(h, yd, static_cast<T*>(y), static_cast<const T*>(bias), T(alpha));
  });
}

void bias_bwd(Handle& h, const TensorDesc& dyd, const void* dy, void* db, Blend blend) {
  // An empty reduction still writes alpha * 0 + beta * db, as the CPU does.
  visit_dtype(kFloatTypes, dyd.dtype, "bias_bwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    bias_bwd_impl(h, dyd, static_cast<const T*>(dy), static_cast<T*>(db), blend);
  });
}

}  // namespace crema::prim::cuda
