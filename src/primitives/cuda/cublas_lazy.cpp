// cuBLAS and cuBLASLt, loaded on first use. Merely linking libcublas costs every process about
// 200 MB of resident memory (its load-time relocations), CPU-only runs included, so
// crema_primitives links neither: these definitions of the entry points crema calls resolve the
// real ones with dlopen/dlsym on first call (the first CUDA Handle creates both handles) and
// forward to them. A missing library is a PrimError naming it. Builds without CUDA compile
// nothing here.
#ifdef CREMA_WITH_CUDA
#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>

#include <string>

#include "primitives/types.h"

namespace {

void* open_library(const char* stem) {
  const std::string name = std::string(stem) + ".so." + std::to_string(CUBLAS_VER_MAJOR);
  void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
#ifdef CREMA_CUDA_LIBRARY_DIR
  // Not on the loader's path: the toolkit this build was configured with.
  if (!h) h = dlopen((std::string(CREMA_CUDA_LIBRARY_DIR) + "/" + name).c_str(), RTLD_NOW);
#endif
  if (!h) throw crema::prim::PrimError("cannot load " + name + ": " + dlerror());
  return h;
}

void* cublas_library() {
  static void* const lib = open_library("libcublas");
  return lib;
}

void* cublaslt_library() {
  static void* const lib = open_library("libcublasLt");
  return lib;
}

template <typename F>
F* resolve(void* lib, const char* name) {
  void* f = dlsym(lib, name);
  if (!f) throw crema::prim::PrimError(std::string("cuBLAS has no ") + name);
  return reinterpret_cast<F*>(f);
}

}  // namespace

#define CREMA_FORWARD(lib, name, params, args)                               \
  extern "C" cublasStatus_t CUBLASWINAPI name params {                       \
    static decltype(name)* const real = resolve<decltype(name)>(lib, #name); \
    return real args;                                                        \
  }
#define CREMA_CUBLAS_FORWARD(name, params, args) CREMA_FORWARD(cublas_library(), name, params, args)
#define CREMA_CUBLASLT_FORWARD(name, params, args) \
  CREMA_FORWARD(cublaslt_library(), name, params, args)

CREMA_CUBLAS_FORWARD(cublasCreate_v2, (cublasHandle_t * handle), (handle))
CREMA_CUBLAS_FORWARD(cublasDestroy_v2, (cublasHandle_t handle), (handle))
CREMA_CUBLAS_FORWARD(cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t stream),
                     (handle, stream))
CREMA_CUBLAS_FORWARD(cublasSetPointerMode_v2, (cublasHandle_t handle, cublasPointerMode_t mode),
                     (handle, mode))
CREMA_CUBLAS_FORWARD(cublasSetMathMode, (cublasHandle_t handle, cublasMath_t mode), (handle, mode))
CREMA_CUBLAS_FORWARD(cublasDgemm_v2,
                     (cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m,
                      int n, int k, const double* alpha, const double* a, int lda, const double* b,
                      int ldb, const double* beta, double* c, int ldc),
                     (handle, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
CREMA_CUBLAS_FORWARD(cublasSgemv_v2,
                     (cublasHandle_t handle, cublasOperation_t t, int m, int n, const float* alpha,
                      const float* a, int lda, const float* x, int incx, const float* beta,
                      float* y, int incy),
                     (handle, t, m, n, alpha, a, lda, x, incx, beta, y, incy))
CREMA_CUBLAS_FORWARD(cublasDgemv_v2,
                     (cublasHandle_t handle, cublasOperation_t t, int m, int n, const double* alpha,
                      const double* a, int lda, const double* x, int incx, const double* beta,
                      double* y, int incy),
                     (handle, t, m, n, alpha, a, lda, x, incx, beta, y, incy))
// cublas_api.h overloads this name for C++ (a legacy compute-type form), so the forwarder names
// the C entry point's type itself.
extern "C" cublasStatus_t CUBLASWINAPI cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
    const void* alpha, const void* a, cudaDataType a_type, int lda, long long int stride_a,
    const void* b, cudaDataType b_type, int ldb, long long int stride_b, const void* beta, void* c,
    cudaDataType c_type, int ldc, long long int stride_c, int batch, cublasComputeType_t compute,
    cublasGemmAlgo_t algo) {
  using Fn = cublasStatus_t(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const void*, const void*, cudaDataType, int, long long int, const void*,
                            cudaDataType, int, long long int, const void*, void*, cudaDataType, int,
                            long long int, int, cublasComputeType_t, cublasGemmAlgo_t);
  static Fn* const real = resolve<Fn>(cublas_library(), "cublasGemmStridedBatchedEx");
  return real(handle, ta, tb, m, n, k, alpha, a, a_type, lda, stride_a, b, b_type, ldb, stride_b,
              beta, c, c_type, ldc, stride_c, batch, compute, algo);
}
CREMA_CUBLAS_FORWARD(cublasDgemmStridedBatched,
                     (cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m,
                      int n, int k, const double* alpha, const double* a, int lda,
                      long long int stride_a, const double* b, int ldb, long long int stride_b,
                      const double* beta, double* c, int ldc, long long int stride_c, int batch),
                     (handle, ta, tb, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c,
                      ldc, stride_c, batch))

CREMA_CUBLASLT_FORWARD(cublasLtCreate, (cublasLtHandle_t * handle), (handle))
CREMA_CUBLASLT_FORWARD(cublasLtDestroy, (cublasLtHandle_t handle), (handle))
CREMA_CUBLASLT_FORWARD(cublasLtMatmulDescCreate,
                       (cublasLtMatmulDesc_t * desc, cublasComputeType_t compute,
                        cudaDataType_t scale),
                       (desc, compute, scale))
CREMA_CUBLASLT_FORWARD(cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc), (desc))
CREMA_CUBLASLT_FORWARD(cublasLtMatmulDescSetAttribute,
                       (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                        const void* buf, size_t bytes),
                       (desc, attr, buf, bytes))
CREMA_CUBLASLT_FORWARD(cublasLtMatrixLayoutCreate,
                       (cublasLtMatrixLayout_t * layout, cudaDataType type, uint64_t rows,
                        uint64_t cols, int64_t ld),
                       (layout, type, rows, cols, ld))
CREMA_CUBLASLT_FORWARD(cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout), (layout))
CREMA_CUBLASLT_FORWARD(cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * pref), (pref))
CREMA_CUBLASLT_FORWARD(cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t pref), (pref))
CREMA_CUBLASLT_FORWARD(cublasLtMatmulPreferenceSetAttribute,
                       (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
                        const void* buf, size_t bytes),
                       (pref, attr, buf, bytes))
CREMA_CUBLASLT_FORWARD(cublasLtMatmulAlgoGetHeuristic,
                       (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                        cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                        cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                        cublasLtMatmulPreference_t pref, int requested,
                        cublasLtMatmulHeuristicResult_t results[], int* returned),
                       (handle, desc, a, b, c, d, pref, requested, results, returned))
CREMA_CUBLASLT_FORWARD(cublasLtMatmul,
                       (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                        const void* a, cublasLtMatrixLayout_t ad, const void* b,
                        cublasLtMatrixLayout_t bd, const void* beta, const void* c,
                        cublasLtMatrixLayout_t cd, void* d, cublasLtMatrixLayout_t dd,
                        const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_bytes,
                        cudaStream_t stream),
                       (handle, desc, alpha, a, ad, b, bd, beta, c, cd, d, dd, algo, workspace,
                        workspace_bytes, stream))

#endif  // CREMA_WITH_CUDA
