// Element-wise primitives: argument validation and the device dispatcher. The CPU bodies live in
// elementwise_cpu.cpp; the CUDA backend is not built yet.
#include "primitives/elementwise.h"

#include <string>

namespace crema::prim {

// Defined in elementwise_cpu.cpp; only this dispatcher calls them.
namespace cpu {
void elt_sign(DataType t, int64_t n, const void* x, void* y);
void elt_mul(DataType t, int64_t n, const void* a, const void* b, void* y);
void elt_div(DataType t, int64_t n, const void* a, const void* b, void* y);
void elt_sqrt(DataType t, int64_t n, const void* x, void* y);
void elt_add_scalar(DataType t, int64_t n, double alpha, void* y);
}  // namespace cpu

namespace {

void check(const Handle& h, int64_t n, const char* op) {
  if (n < 0) throw PrimError(std::string(op) + ": negative length");
  if (h.device() != Device::kCPU) throw PrimError(std::string(op) + ": CUDA backend not built yet");
}

}  // namespace

void elt_sign(Handle& h, DataType t, int64_t n, const void* x, void* y) {
  check(h, n, "elt_sign");
  cpu::elt_sign(t, n, x, y);
}

void elt_mul(Handle& h, DataType t, int64_t n, const void* a, const void* b, void* y) {
  check(h, n, "elt_mul");
  cpu::elt_mul(t, n, a, b, y);
}

void elt_div(Handle& h, DataType t, int64_t n, const void* a, const void* b, void* y) {
  check(h, n, "elt_div");
  cpu::elt_div(t, n, a, b, y);
}

void elt_sqrt(Handle& h, DataType t, int64_t n, const void* x, void* y) {
  check(h, n, "elt_sqrt");
  cpu::elt_sqrt(t, n, x, y);
}

void elt_add_scalar(Handle& h, DataType t, int64_t n, double alpha, void* y) {
  check(h, n, "elt_add_scalar");
  cpu::elt_add_scalar(t, n, alpha, y);
}

}  // namespace crema::prim
