// cuBLASLt GEMMs with fused bias and ReLU (gemm_lt.cuh).
#include <cstdint>
#include <type_traits>

#include "primitives/cuda/cuda_backend.h"
#include "primitives/cuda/cuda_util.cuh"
#include "primitives/cuda/gemm_lt.cuh"

namespace crema::prim::cuda {
namespace {

// Room for a split-K GEMM's partial sums (splits x m x n values: LeNet's ip1 has 32,000 outputs,
// 128 KB a split), small beside any net's activations.
constexpr size_t kWorkspaceBytes = size_t(4) << 20;

// The largest power of two, at most 256, that divides the address: cuBLASLt's heuristic may
// pick kernels that assume 256-byte alignment unless told otherwise.
int alignment_of(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  int a = 1;
  while (a < 256 && v % (2 * a) == 0) a *= 2;
  return a;
}

cublasOperation_t op_of(int t) { return t ? CUBLAS_OP_T : CUBLAS_OP_N; }

template <typename V>
void set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const V& v) {
  check_cublas(cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof(v)),
               "cublasLtMatmulDescSetAttribute");
}

template <typename V>
void set_pref(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t attr, const V& v) {
  check_cublas(cublasLtMatmulPreferenceSetAttribute(p, attr, &v, sizeof(v)),
               "cublasLtMatmulPreferenceSetAttribute");
}

cublasLtEpilogue_t epilogue_of(bool bias, bool relu) {
  if (bias) return relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  return relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT;
}

}  // namespace

LtGemms::LtGemms() {
  check_cublas(cublasLtCreate(&handle_), "cublasLtCreate");
  workspace_ = alloc(kWorkspaceBytes);
}

LtGemms::~LtGemms() {
  for (auto& [key, p] : plans_) {
    cublasLtMatrixLayoutDestroy(p.a);
    cublasLtMatrixLayoutDestroy(p.b);
    cublasLtMatrixLayoutDestroy(p.c);
    cublasLtMatmulDescDestroy(p.desc);
  }
  free(workspace_);
  cublasLtDestroy(handle_);
}

// The row-major matrices of blas.h are the column-major transposes cuBLASLt sees: C^T (n x m) =
// op(B)^T op(A)^T, so B is cuBLASLt's first operand and A its second, transposes kept; the bias
// of C's columns is the bias of C^T's rows, which is cuBLASLt's.
LtGemms::Plan& LtGemms::plan(const Key& key) {
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  const auto [f64, math, ta, tb, m, n, k, epilogue, align_a, align_b, align_c] = key;
  Plan p;
  const cudaDataType type = f64 ? CUDA_R_64F : CUDA_R_32F;
  check_cublas(cublasLtMatmulDescCreate(
                   &p.desc, f64 ? CUBLAS_COMPUTE_64F : fp32_compute_type(MathMode(math)), type),
               "cublasLtMatmulDescCreate");
  set_desc(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, op_of(tb));
  set_desc(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, op_of(ta));
  set_desc(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, cublasLtEpilogue_t(epilogue));
  auto layout = [&](cublasLtMatrixLayout_t* l, int rows, int cols) {
    check_cublas(cublasLtMatrixLayoutCreate(l, type, uint64_t(rows), uint64_t(cols), rows),
                 "cublasLtMatrixLayoutCreate");
  };
  layout(&p.a, tb ? k : n, tb ? n : k);
  layout(&p.b, ta ? m : k, ta ? k : m);
  layout(&p.c, n, m);
  cublasLtMatmulPreference_t pref = nullptr;
  check_cublas(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  set_pref(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t(kWorkspaceBytes));
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, uint32_t(align_b));
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, uint32_t(align_a));
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, uint32_t(align_c));
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, uint32_t(align_c));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t s =
      cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (s != CUBLAS_STATUS_NOT_SUPPORTED) check_cublas(s, "cublasLtMatmulAlgoGetHeuristic");
  p.found = s == CUBLAS_STATUS_SUCCESS && found > 0;
  p.algo = result.algo;
  return plans_.emplace(key, p).first->second;
}

template <typename T>
bool LtGemms::run(Handle& h, Trans ta, Trans tb, int m, int n, int k, T alpha, const T* a,
                  const T* b, T beta, T* c, MathMode math, const T* bias, bool relu) {
  // cuBLASLt reads the bias in vectors.
  if (bias && alignment_of(bias) < 16) return false;
  constexpr bool f64 = std::is_same_v<T, double>;
  const Key key{f64,
                f64 ? 0 : int(math),
                ta == Trans::kYes,
                tb == Trans::kYes,
                m,
                n,
                k,
                int(epilogue_of(bias != nullptr, relu)),
                alignment_of(a),
                alignment_of(b),
                alignment_of(c)};
  Plan& p = plan(key);
  if (!p.found) return false;
  if (bias) set_desc(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(bias));
  check_cublas(cublasLtMatmul(handle_, p.desc, &alpha, b, p.a, a, p.b, &beta, c, p.c, c, p.c,
                              &p.algo, workspace_, kWorkspaceBytes, stream_of(h)),
               "cublasLtMatmul");
  return true;
}

template bool LtGemms::run<float>(Handle&, Trans, Trans, int, int, int, float, const float*,
                                  const float*, float, float*, MathMode, const float*, bool);
template bool LtGemms::run<double>(Handle&, Trans, Trans, int, int, int, double, const double*,
                                   const double*, double, double*, MathMode, const double*, bool);

}  // namespace crema::prim::cuda
