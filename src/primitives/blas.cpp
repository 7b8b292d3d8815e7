// BLAS-style primitives: argument validation and the device dispatcher. The CPU bodies live in
// blas_cpu.cpp; the CUDA backend is not built yet.
#include "primitives/blas.h"

#include <string>

namespace crema::prim {

// Defined in blas_cpu.cpp. Declared here rather than in a header because only this dispatcher
// calls them; a signature mismatch is a link error.
namespace cpu {
void gemm(DataType t, Trans ta, Trans tb, int m, int n, int k, double alpha, const void* a,
          const void* b, double beta, void* c);
void gemv(DataType t, Trans ta, int m, int n, double alpha, const void* a, const void* x,
          double beta, void* y);
void axpby(DataType t, int64_t n, double alpha, const void* x, double beta, void* y);
void scal(DataType t, int64_t n, double alpha, void* x);
void fill(DataType t, int64_t n, double value, void* x);
double dot(DataType t, int64_t n, const void* x, const void* y);
double asum(DataType t, int64_t n, const void* x);
void bias_add(const TensorDesc& yd, void* y, const void* bias, double alpha);
void bias_bwd(const TensorDesc& dyd, const void* dy, void* db, Blend blend);
}  // namespace cpu

namespace {

void require(bool ok, const char* op, const std::string& why) {
  if (!ok) throw PrimError(std::string(op) + ": " + why);
}

void require_cpu(const Handle& h, const char* op) {
  if (h.device() != Device::kCPU) throw PrimError(std::string(op) + ": CUDA backend not built yet");
}

void check_length(int64_t n, const char* op) { require(n >= 0, op, "negative length"); }

void check_bias_desc(const TensorDesc& d, const char* op) {
  require(d.n >= 0 && d.c >= 0 && d.h >= 0 && d.w >= 0, op, "negative tensor size");
}

}  // namespace

void gemm(Handle& h, DataType t, Trans ta, Trans tb, int m, int n, int k, double alpha,
          const void* a, const void* b, double beta, void* c) {
  require(m >= 0 && n >= 0 && k >= 0, "gemm", "negative dimension");
  require_cpu(h, "gemm");
  cpu::gemm(t, ta, tb, m, n, k, alpha, a, b, beta, c);
}

void gemv(Handle& h, DataType t, Trans ta, int m, int n, double alpha, const void* a, const void* x,
          double beta, void* y) {
  require(m >= 0 && n >= 0, "gemv", "negative dimension");
  require_cpu(h, "gemv");
  cpu::gemv(t, ta, m, n, alpha, a, x, beta, y);
}

void axpy(Handle& h, DataType t, int64_t n, double alpha, const void* x, void* y) {
  check_length(n, "axpy");
  require_cpu(h, "axpy");
  cpu::axpby(t, n, alpha, x, 1.0, y);
}

void axpby(Handle& h, DataType t, int64_t n, double alpha, const void* x, double beta, void* y) {
  check_length(n, "axpby");
  require_cpu(h, "axpby");
  cpu::axpby(t, n, alpha, x, beta, y);
}

void scal(Handle& h, DataType t, int64_t n, double alpha, void* x) {
  check_length(n, "scal");
  require_cpu(h, "scal");
  cpu::scal(t, n, alpha, x);
}

void fill(Handle& h, DataType t, int64_t n, double value, void* x) {
  check_length(n, "fill");
  require_cpu(h, "fill");
  cpu::fill(t, n, value, x);
}

double dot(Handle& h, DataType t, int64_t n, const void* x, const void* y) {
  check_length(n, "dot");
  require_cpu(h, "dot");
  return cpu::dot(t, n, x, y);
}

double asum(Handle& h, DataType t, int64_t n, const void* x) {
  check_length(n, "asum");
  require_cpu(h, "asum");
  return cpu::asum(t, n, x);
}

void bias_add(Handle& h, const TensorDesc& yd, void* y, const void* bias, double alpha) {
  check_bias_desc(yd, "bias_add");
  require_cpu(h, "bias_add");
  cpu::bias_add(yd, y, bias, alpha);
}

void bias_bwd(Handle& h, const TensorDesc& dyd, const void* dy, void* db, Blend blend) {
  check_bias_desc(dyd, "bias_bwd");
  require_cpu(h, "bias_bwd");
  cpu::bias_bwd(dyd, dy, db, blend);
}

}  // namespace crema::prim
