// GEMM on cuBLASLt with its fused epilogues: blas.h's row-major C = alpha op(A) op(B) + beta C,
// then the bias of each column and the ReLU, in the GEMM's own kernel where cuBLAS would need
// one or two more passes over C. A handle's LtGemms holds the cuBLASLt handle, a fixed workspace
// (split-K partial sums; fixed, so recorded CUDA graphs stay valid) and one plan per problem:
// the descriptors and the algorithm cuBLASLt's heuristic chose, found once.
#pragma once

#include <cublasLt.h>

#include <map>
#include <tuple>

#include "primitives/blas.h"
#include "primitives/handle.h"

namespace crema::prim::cuda {

class LtGemms {
 public:
  LtGemms();
  ~LtGemms();
  LtGemms(const LtGemms&) = delete;
  LtGemms& operator=(const LtGemms&) = delete;

  // Queues the GEMM with the epilogue on h's stream and returns true; returns false, having
  // queued nothing, where cuBLASLt has no algorithm for the problem (the caller runs it apart).
  template <typename T>
  bool run(Handle& h, Trans ta, Trans tb, int m, int n, int k, T alpha, const T* a, const T* b,
           T beta, T* c, MathMode math, const T* bias, bool relu);

 private:
  // The problem: dtype, math, transposes, sizes, epilogue and the alignment of A, B and C.
  using Key = std::tuple<int, int, int, int, int, int, int, int, int, int, int>;
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool found = false;
  };
  Plan& plan(const Key& key);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  std::map<Key, Plan> plans_;
};

}  // namespace crema::prim::cuda
