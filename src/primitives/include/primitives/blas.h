// Dense linear algebra and vector primitives: GEMM/GEMV through OpenBLAS on the CPU and cuBLASLt
// and cuBLAS on CUDA, plus the level-1 operations the layers and solvers need. All matrices are
// packed row-major (Caffe's convention: C[m x n] = op(A)[m x k] * op(B)[k x n]).
#pragma once

#include <cstdint>

#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::prim {

enum class Trans { kNo, kYes };

// What a GEMM applies to C after the product: bias[j] added to column j of every row where
// bias is not null (an inner product's bias), then max(0, .) with relu.
struct GemmEpilogue {
  const void* bias = nullptr;  // n values, or nullptr
  bool relu = false;
};

// C = alpha * op(A) * op(B) + beta * C, then the epilogue, fused into the GEMM's kernel where the
// device allows (cuBLASLt's bias and ReLU epilogues on CUDA). math is the least precision the
// products may use (see ConvDesc::math): on CUDA, f32 data under TF32/BF16/FP16 runs on tensor
// cores with fp32 accumulation; the CPU and f64 data compute in full precision.
void gemm(Handle& h, DataType t, Trans ta, Trans tb, int m, int n, int k, double alpha,
          const void* a, const void* b, double beta, void* c, MathMode math = MathMode::kFP32,
          GemmEpilogue ep = {});
// y = alpha * op(A) * x + beta * y, A is m x n.
void gemv(Handle& h, DataType t, Trans ta, int m, int n, double alpha, const void* a, const void* x,
          double beta, void* y);

// y = alpha * x + y
void axpy(Handle& h, DataType t, int64_t n, double alpha, const void* x, void* y);
// y = alpha * x + beta * y (beta == 0 never reads y)
void axpby(Handle& h, DataType t, int64_t n, double alpha, const void* x, double beta, void* y);
// x = alpha * x
void scal(Handle& h, DataType t, int64_t n, double alpha, void* x);
// x[i] = value
void fill(Handle& h, DataType t, int64_t n, double value, void* x);
// One tensor of a list fill.
struct FillTarget {
  int64_t n = 0;
  void* x = nullptr;
};
// x[i] = value for every target: one CUDA launch per 16 targets (the solver clears its
// parameters' gradients with it).
void fill(Handle& h, DataType t, double value, const FillTarget* targets, size_t count);
// sum x[i] * y[i], sum |x[i]|
double dot(Handle& h, DataType t, int64_t n, const void* x, const void* y);
double asum(Handle& h, DataType t, int64_t n, const void* x);
// result[0] = alpha * sum x[i] * y[i] + beta * result[0] (beta == 0 never reads it), summed in
// double as dot() and left in memory of the handle's device: nothing waits for it, so a CUDA
// graph can hold it (the Net sums its losses on the GPU this way).
void dot_into(Handle& h, DataType t, int64_t n, const void* x, const void* y, double alpha,
              double beta, double* result);

// y[n, c, h, w] = alpha * bias[c] + y[n, c, h, w] (cudnnAddTensor with a 1xCx1x1 bias).
void bias_add(Handle& h, const TensorDesc& yd, void* y, const void* bias, double alpha = 1.0);
// db[c] = alpha * sum_{n,h,w} dy[n, c, h, w] + beta * db[c].
void bias_bwd(Handle& h, const TensorDesc& dyd, const void* dy, void* db, Blend blend = {});

}  // namespace crema::prim
