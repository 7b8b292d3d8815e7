// BLAS-style primitives: argument validation and the one device dispatcher. The bodies live in
// blas_cpu.cpp (OpenBLAS and loops) and blas_cuda.cu (cuBLAS and kernels).
#include "primitives/blas.h"

#include <string>

#include "primitives/common/dispatch.h"

namespace crema::prim {

// The implementations (blas_cpu.cpp, blas_cuda.cu), with the public signatures.
CREMA_BACKENDS(
    void gemm(Handle& h, DataType t, Trans ta, Trans tb, int m, int n, int k, double alpha,
              const void* a, const void* b, double beta, void* c, MathMode math, GemmEpilogue ep);
    void gemv(Handle& h, DataType t, Trans ta, int m, int n, double alpha, const void* a,
              const void* x, double beta, void* y);
    void axpby(Handle& h, DataType t, int64_t n, double alpha, const void* x, double beta, void* y);
    void scal(Handle& h, DataType t, int64_t n, double alpha, void* x);
    void fill(Handle& h, DataType t, double value, const FillTarget* targets, size_t count);
    double dot(Handle& h, DataType t, int64_t n, const void* x, const void* y);
    double asum(Handle& h, DataType t, int64_t n, const void* x);
    void dot_into(Handle& h, DataType t, int64_t n, const void* x, const void* y, double alpha,
                  double beta, double* result);
    void bias_add(Handle& h, const TensorDesc& yd, void* y, const void* bias, double alpha);
    void bias_bwd(Handle& h, const TensorDesc& dyd, const void* dy, void* db, Blend blend);)

namespace {

void require(bool ok, const char* op, const std::string& why) {
  if (!ok) throw PrimError(std::string(op) + ": " + why);
}

void check_length(int64_t n, const char* op) { require(n >= 0, op, "negative length"); }

void check_bias_desc(const TensorDesc& d, const char* op) {
  require(d.n >= 0 && d.c >= 0 && d.h >= 0 && d.w >= 0, op, "negative tensor size");
}

}  // namespace

void gemm(Handle& h, DataType t, Trans ta, Trans tb, int m, int n, int k, double alpha,
          const void* a, const void* b, double beta, void* c, MathMode math, GemmEpilogue ep) {
  require(m >= 0 && n >= 0 && k >= 0, "gemm", "negative dimension");
  CREMA_DISPATCH(h, gemm, h, t, ta, tb, m, n, k, alpha, a, b, beta, c, math, ep);
}

void gemv(Handle& h, DataType t, Trans ta, int m, int n, double alpha, const void* a, const void* x,
          double beta, void* y) {
  require(m >= 0 && n >= 0, "gemv", "negative dimension");
  CREMA_DISPATCH(h, gemv, h, t, ta, m, n, alpha, a, x, beta, y);
}

void axpy(Handle& h, DataType t, int64_t n, double alpha, const void* x, void* y) {
  check_length(n, "axpy");
  CREMA_DISPATCH(h, axpby, h, t, n, alpha, x, 1.0, y);
}

void axpby(Handle& h, DataType t, int64_t n, double alpha, const void* x, double beta, void* y) {
  check_length(n, "axpby");
  CREMA_DISPATCH(h, axpby, h, t, n, alpha, x, beta, y);
}

void scal(Handle& h, DataType t, int64_t n, double alpha, void* x) {
  check_length(n, "scal");
  CREMA_DISPATCH(h, scal, h, t, n, alpha, x);
}

void fill(Handle& h, DataType t, int64_t n, double value, void* x) {
  const FillTarget target{n, x};
  fill(h, t, value, &target, 1);
}

void fill(Handle& h, DataType t, double value, const FillTarget* targets, size_t count) {
  for (size_t i = 0; i < count; ++i) check_length(targets[i].n, "fill");
  CREMA_DISPATCH(h, fill, h, t, value, targets, count);
}

double dot(Handle& h, DataType t, int64_t n, const void* x, const void* y) {
  check_length(n, "dot");
  return CREMA_DISPATCH(h, dot, h, t, n, x, y);
}

double asum(Handle& h, DataType t, int64_t n, const void* x) {
  check_length(n, "asum");
  return CREMA_DISPATCH(h, asum, h, t, n, x);
}

void dot_into(Handle& h, DataType t, int64_t n, const void* x, const void* y, double alpha,
              double beta, double* result) {
  check_length(n, "dot_into");
  CREMA_DISPATCH(h, dot_into, h, t, n, x, y, alpha, beta, result);
}

void bias_add(Handle& h, const TensorDesc& yd, void* y, const void* bias, double alpha) {
  check_bias_desc(yd, "bias_add");
  CREMA_DISPATCH(h, bias_add, h, yd, y, bias, alpha);
}

void bias_bwd(Handle& h, const TensorDesc& dyd, const void* dy, void* db, Blend blend) {
  check_bias_desc(dyd, "bias_bwd");
  CREMA_DISPATCH(h, bias_bwd, h, dyd, dy, db, blend);
}

}  // namespace crema::prim
