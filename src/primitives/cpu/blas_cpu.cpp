// CPU implementation of the BLAS-style primitives: GEMM/GEMV through OpenBLAS's row-major cblas,
// level-1 loops written so the compiler vectorizes them, and the bias add/reduce of conv layers.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "primitives/blas.h"
#include "primitives/common/dtype_visit.h"
#include "primitives/cpu/gemm_skinny_cpu.h"
#include "primitives/cpu/parallel.h"
#include "primitives/types.h"

namespace crema::prim::cpu {
namespace {

CBLAS_TRANSPOSE to_cblas(Trans t) { return t == Trans::kYes ? CblasTrans : CblasNoTrans; }

void gemm_typed(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, double alpha,
                const float* a, int lda, const float* b, int ldb, double beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, float(alpha), a, lda, b, ldb, float(beta), c, ldc);
}
void gemm_typed(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, double alpha,
                const double* a, int lda, const double* b, int ldb, double beta, double* c,
                int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void gemv_typed(CBLAS_TRANSPOSE ta, int m, int n, double alpha, const float* a, const float* x,
                double beta, float* y) {
  cblas_sgemv(CblasRowMajor, ta, m, n, float(alpha), a, n, x, 1, float(beta), y, 1);
}
void gemv_typed(CBLAS_TRANSPOSE ta, int m, int n, double alpha, const double* a, const double* x,
                double beta, double* y) {
  cblas_dgemv(CblasRowMajor, ta, m, n, alpha, a, n, x, 1, beta, y, 1);
}

// With an empty product (k == 0) or alpha == 0 there is nothing to add: C = beta * C is done
// here, with beta == 0 writing zeros so that NaN poison in C never leaks through 0 * NaN.
template <typename T>
void scale_or_zero(int64_t n, T beta, T* c) {
  if (beta == T(0)) {
    for (int64_t i = 0; i < n; ++i) c[i] = T(0);
  } else {
    for (int64_t i = 0; i < n; ++i) c[i] *= beta;
  }
}

// BLAS runs single-threaded while a multi-threaded CPU handle exists (parallel.h says why), so a
// large GEMM called outside a parallel region (InnerProduct) is split here: each thread computes
// a band of C's rows or columns, whichever dimension is larger, with the full k loop, so every
// element sums in the same order as an unsplit call. A float A * B^T with few rows of A goes to
// the skinny kernel instead (gemm_skinny_cpu.h says why).
template <typename T>
void gemm_impl(Trans ta, Trans tb, int m, int n, int k, double alpha, const void* a, const void* b,
               double beta, void* c, int threads) {
  T* cc = static_cast<T*>(c);
  if (m == 0 || n == 0) return;
  if (k == 0 || alpha == 0.0) {
    scale_or_zero<T>(int64_t(m) * n, T(beta), cc);
    return;
  }
  const T* aa = static_cast<const T*>(a);
  const T* bb = static_cast<const T*>(b);
  const int lda = ta == Trans::kNo ? k : m;
  const int ldb = tb == Trans::kNo ? n : k;
  constexpr int64_t kMinSplitMacs = int64_t(1) << 21;  // ~0.03 ms of work: worth a thread start
  constexpr int kMinBand = 32;
  if constexpr (std::is_same_v<T, float>) {
    if (ta == Trans::kNo && tb == Trans::kYes && m <= kSkinnyMaxRows && n >= 2 * kMinBand &&
        int64_t(n) * k >= kMinSplitMacs) {
      // Each thread takes a band of B's rows (and of C's columns).
      const int parts = inside_parallel_for() ? 1 : std::max(1, std::min(threads, n / kMinBand));
      parallel_for(parts, [&](int t) {
        int lo, hi;
        split_range(n, parts, t, &lo, &hi);
        gemm_skinny_nt(m, lo, hi, k, float(alpha), aa, lda, bb, ldb, float(beta), cc, n);
      });
      return;
    }
  }
  const bool by_rows = m >= n;
  const int extent = by_rows ? m : n;
  const int parts = int64_t(m) * n * k < kMinSplitMacs || inside_parallel_for()
                        ? 1
                        : std::max(1, std::min(threads, extent / kMinBand));
  parallel_for(parts, [&](int t) {
    const int lo = int(int64_t(extent) * t / parts), hi = int(int64_t(extent) * (t + 1) / parts);
    if (by_rows) {  // rows [lo, hi) of op(A) and C
      const T* a_band = ta == Trans::kNo ? aa + int64_t(lo) * lda : aa + lo;
      gemm_typed(to_cblas(ta), to_cblas(tb), hi - lo, n, k, alpha, a_band, lda, bb, ldb, beta,
                 cc + int64_t(lo) * n, n);
    } else {  // columns [lo, hi) of op(B) and C
      const T* b_band = tb == Trans::kNo ? bb + lo : bb + int64_t(lo) * ldb;
      gemm_typed(to_cblas(ta), to_cblas(tb), m, hi - lo, k, alpha, aa, lda, b_band, ldb, beta,
                 cc + lo, n);
    }
  });
}

template <typename T>
void gemv_impl(Trans ta, int m, int n, double alpha, const void* a, const void* x, double beta,
               void* y) {
  const int ylen = ta == Trans::kNo ? m : n;
  const int xlen = ta == Trans::kNo ? n : m;
  T* yy = static_cast<T*>(y);
  if (ylen == 0) return;
  if (xlen == 0 || alpha == 0.0) {
    scale_or_zero<T>(ylen, T(beta), yy);
    return;
  }
  gemv_typed(to_cblas(ta), m, n, alpha, static_cast<const T*>(a), static_cast<const T*>(x), beta,
             yy);
}

template <typename T>
void axpby_impl(int64_t n, double alpha, const void* x, double beta, void* y) {
  const T* xx = static_cast<const T*>(x);
  T* yy = static_cast<T*>(y);
  const T a = T(alpha), b = T(beta);
  // Separate loops so the beta == 0 contract (y is never read) holds and each loop vectorizes.
  if (b == T(0)) {
    for (int64_t i = 0; i < n; ++i) yy[i] = a * xx[i];
  } else if (b == T(1)) {
    for (int64_t i = 0; i < n; ++i) yy[i] += a * xx[i];
  } else {
    for (int64_t i = 0; i < n; ++i) yy[i] = a * xx[i] + b * yy[i];
  }
}

template <typename T>
void scal_impl(int64_t n, double alpha, void* x) {
  // alpha == 0 writes zeros, like beta == 0 elsewhere: clearing a buffer must not keep NaNs.
  scale_or_zero<T>(n, T(alpha), static_cast<T*>(x));
}

template <typename T>
void fill_impl(int64_t n, double value, void* x) {
  T* xx = static_cast<T*>(x);
  const T v = T(value);
  for (int64_t i = 0; i < n; ++i) xx[i] = v;
}

// Reductions accumulate in double, in four independent partial sums so the loop is not one
// long dependency chain.
template <typename T>
double dot_impl(int64_t n, const void* x, const void* y) {
  const T* xx = static_cast<const T*>(x);
  const T* yy = static_cast<const T*>(y);
  double s[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int j = 0; j < 4; ++j) s[j] += double(xx[i + j]) * double(yy[i + j]);
  for (; i < n; ++i) s[0] += double(xx[i]) * double(yy[i]);
  return (s[0] + s[1]) + (s[2] + s[3]);
}

template <typename T>
double asum_impl(int64_t n, const void* x) {
  const T* xx = static_cast<const T*>(x);
  double s[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int j = 0; j < 4; ++j) s[j] += std::fabs(double(xx[i + j]));
  for (; i < n; ++i) s[0] += std::fabs(double(xx[i]));
  return (s[0] + s[1]) + (s[2] + s[3]);
}

template <typename T>
void bias_add_impl(const TensorDesc& d, void* y, const void* bias, double alpha) {
  T* yy = static_cast<T*>(y);
  const T* bb = static_cast<const T*>(bias);
  for (int n = 0; n < d.n; ++n) {
    for (int c = 0; c < d.c; ++c) {
      const T v = T(alpha) * bb[c];
      T* plane = yy + n * d.stride_n + c * d.stride_c;
      for (int h = 0; h < d.h; ++h) {
        T* row = plane + h * d.stride_h;
        if (d.stride_w == 1) {
          for (int w = 0; w < d.w; ++w) row[w] += v;
        } else {
          for (int w = 0; w < d.w; ++w) row[w * d.stride_w] += v;
        }
      }
    }
  }
}

// Sum of n elements at a stride. Unit-stride rows are summed in eight float lanes (vectorized)
// and the lanes in double; the planes of a conv output are a few hundred elements long, so the
// float partials lose nothing measurable against a double reference.
template <typename T>
double row_sum(const T* row, int64_t n, int64_t stride) {
  double sum = 0;
  if (stride != 1) {
    for (int64_t i = 0; i < n; ++i) sum += double(row[i * stride]);
    return sum;
  }
  T lanes[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) lanes[l] += row[i + l];
  for (int l = 0; l < 8; ++l) sum += double(lanes[l]);
  for (; i < n; ++i) sum += double(row[i]);
  return sum;
}

// db[c] = alpha * sum of channel c over n, h, w (+ beta * db[c]); the channels are split over
// the threads, each summed in a fixed order.
template <typename T>
void bias_bwd_impl(const TensorDesc& d, const void* dy, void* db, Blend blend, int threads) {
  const T* g = static_cast<const T*>(dy);
  T* out = static_cast<T*>(db);
  const bool packed_plane = d.stride_w == 1 && d.stride_h == d.w;
  const int tasks = d.count() >= (int64_t(1) << 16) ? std::max(1, std::min(threads, d.c)) : 1;
  parallel_for(tasks, [&](int t) {
    int c_begin, c_end;
    split_range(d.c, tasks, t, &c_begin, &c_end);
    for (int c = c_begin; c < c_end; ++c) {
      double sum = 0;
      for (int n = 0; n < d.n; ++n) {
        const T* plane = g + n * d.stride_n + c * d.stride_c;
        if (packed_plane) {
          sum += row_sum(plane, int64_t(d.h) * d.w, 1);
        } else {
          for (int h = 0; h < d.h; ++h) sum += row_sum(plane + h * d.stride_h, d.w, d.stride_w);
        }
      }
      const double v = blend.alpha * sum;
      out[c] = blend.beta == 0.0 ? T(v) : T(v + blend.beta * double(out[c]));
    }
  });
}

}  // namespace

// Full precision whatever the math mode (a permission the CPU does not use).
void gemm(Handle& h, DataType t, Trans ta, Trans tb, int m, int n, int k, double alpha,
          const void* a, const void* b, double beta, void* c, MathMode, GemmEpilogue ep) {
  visit_dtype(kFloatTypes, t, "gemm", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    gemm_impl<T>(ta, tb, m, n, k, alpha, a, b, beta, c, h.cpu_threads());
    if (ep.bias) bias_add_impl<T>(TensorDesc::nchw(t, m, n, 1, 1), c, ep.bias, 1.0);
    T* cc = static_cast<T*>(c);
    if (ep.relu)
      for (int64_t i = 0; i < int64_t(m) * n; ++i) cc[i] = cc[i] > T(0) ? cc[i] : T(0);
  });
}

void gemv(Handle&, DataType t, Trans ta, int m, int n, double alpha, const void* a, const void* x,
          double beta, void* y) {
  visit_dtype(kFloatTypes, t, "gemv", Device::kCPU, [&](auto tag) {
    gemv_impl<typename decltype(tag)::type>(ta, m, n, alpha, a, x, beta, y);
  });
}

void axpby(Handle&, DataType t, int64_t n, double alpha, const void* x, double beta, void* y) {
  visit_dtype(kFloatTypes, t, "axpby", Device::kCPU,
              [&](auto tag) { axpby_impl<typename decltype(tag)::type>(n, alpha, x, beta, y); });
}

void scal(Handle&, DataType t, int64_t n, double alpha, void* x) {
  visit_dtype(kFloatTypes, t, "scal", Device::kCPU,
              [&](auto tag) { scal_impl<typename decltype(tag)::type>(n, alpha, x); });
}

void fill(Handle&, DataType t, double value, const FillTarget* targets, size_t count) {
  visit_dtype(kFloatTypes, t, "fill", Device::kCPU, [&](auto tag) {
    for (size_t i = 0; i < count; ++i)
      fill_impl<typename decltype(tag)::type>(targets[i].n, value, targets[i].x);
  });
}

double dot(Handle&, DataType t, int64_t n, const void* x, const void* y) {
  return visit_dtype(kFloatTypes, t, "dot", Device::kCPU,
                     [&](auto tag) { return dot_impl<typename decltype(tag)::type>(n, x, y); });
}

double asum(Handle&, DataType t, int64_t n, const void* x) {
  return visit_dtype(kFloatTypes, t, "asum", Device::kCPU,
                     [&](auto tag) { return asum_impl<typename decltype(tag)::type>(n, x); });
}

void dot_into(Handle&, DataType t, int64_t n, const void* x, const void* y, double alpha,
              double beta, double* result) {
  const double sum = alpha * visit_dtype(kFloatTypes, t, "dot_into", Device::kCPU, [&](auto tag) {
                       return dot_impl<typename decltype(tag)::type>(n, x, y);
                     });
  *result = beta == 0 ? sum : sum + beta * *result;
}

void bias_add(Handle&, const TensorDesc& yd, void* y, const void* bias, double alpha) {
  visit_dtype(kFloatTypes, yd.dtype, "bias_add", Device::kCPU,
              [&](auto tag) { bias_add_impl<typename decltype(tag)::type>(yd, y, bias, alpha); });
}

void bias_bwd(Handle& h, const TensorDesc& dyd, const void* dy, void* db, Blend blend) {
  visit_dtype(kFloatTypes, dyd.dtype, "bias_bwd", Device::kCPU, [&](auto tag) {
    bias_bwd_impl<typename decltype(tag)::type>(dyd, dy, db, blend, h.cpu_threads());
  });
}

}  // namespace crema::prim::cpu
