// cuBLAS, loaded on first use. Merely linking libcublas costs every process about 200 MB of
// resident memory (its load-time relocations), CPU-only runs included, so crema_primitives does
// not link it: these definitions of the cuBLAS entry points crema calls resolve the real ones
// with dlopen/dlsym on first call (the first CUDA Handle creates a cuBLAS handle) and forward to
// them. A missing library is a PrimError naming it. Builds without CUDA compile nothing here.
#ifdef CREMA_WITH_CUDA
#include <cublas_v2.h>
#include <dlfcn.h>

#include <string>

#include "primitives/types.h"

namespace {

void* cublas_library() {
  static void* const lib = [] {
    const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
#ifdef CREMA_CUDA_LIBRARY_DIR
    // Not on the loader's path: the toolkit this build was configured with.
    if (!h) h = dlopen((std::string(CREMA_CUDA_LIBRARY_DIR) + "/" + name).c_str(), RTLD_NOW);
#endif
    if (!h) throw crema::prim::PrimError("cannot load " + name + ": " + dlerror());
    return h;
  }();
  return lib;
}

template <typename F>
F* resolve(const char* name) {
  void* f = dlsym(cublas_library(), name);
  if (!f) throw crema::prim::PrimError(std::string("cuBLAS has no ") + name);
  return reinterpret_cast<F*>(f);
}

}  // namespace

#define CREMA_CUBLAS_FORWARD(name, params, args)                        \
  extern "C" cublasStatus_t CUBLASWINAPI name params {                  \
    static decltype(name)* const real = resolve<decltype(name)>(#name); \
    return real args;                                                   \
  }

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
  static Fn* const real = resolve<Fn>("cublasGemmStridedBatchedEx");
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

#endif  // CREMA_WITH_CUDA
