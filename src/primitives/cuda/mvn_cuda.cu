// Mean-variance normalization on CUDA: one block per row (grid-strided over the rows), the row
// sums in double reduced deterministically in the block (cuda_reduce.cuh's block_sum), then the
// row written by the same threads that read it, so y may be x and dx may be dy. Rows are re-read
// from L2/DRAM per pass: forward 2-3 reads + 1 write per element, backward 2 + 2 reads + 1 write.
#include "primitives/common/dtype_visit.h"
#include "primitives/common/mvn_ops.h"
#include "primitives/cuda/cuda_reduce.cuh"
#include "primitives/cuda/cuda_util.cuh"
#include "primitives/mvn.h"

namespace crema::prim::cuda {
namespace {

// Row mean and 1 / (sigma + eps) (1 when the variance is not normalized), as the CPU's.
template <typename T>
__device__ void row_stats(bool normalize_variance, double eps, int64_t D, const T* x, double* mean,
                          double* inv) {
  double s[1] = {0.0};
  for (int64_t i = threadIdx.x; i < D; i += blockDim.x) s[0] += double(x[i]);
  block_sum<1>(s);
  *mean = s[0] / double(D);
  *inv = 1.0;
  if (!normalize_variance) return;
  double sq[1] = {0.0};
  for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
    const double v = double(x[i]) - *mean;
    sq[0] += v * v;
  }
  block_sum<1>(sq);
  *inv = 1.0 / (sqrt(sq[0] / double(D)) + eps);
}

template <typename T>
__global__ void fwd_kernel(bool nv, double eps, int64_t rows, int64_t D, const T* x, T* y, T alpha,
                           T beta) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * D;
    T* yr = y + row * D;
    double mean, inv;
    row_stats(nv, eps, D, xr, &mean, &inv);
    const T tm = T(mean), ti = T(inv);
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x)
      blend_store(yr + i, (xr[i] - tm) * ti, alpha, beta);
    __syncthreads();  // the row is done before the next row's sums reuse shared memory
  }
}

template <typename T>
__global__ void bwd_kernel(bool nv, double eps, int64_t rows, int64_t D, const T* x, const T* dy,
                           T* dx, T alpha, T beta) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * D;
    const T* g = dy + row * D;
    T* out = dx + row * D;
    double mean, inv;
    row_stats(nv, eps, D, xr, &mean, &inv);
    double s[2] = {0.0, 0.0};
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
      s[0] += double(g[i]);
      s[1] += double(g[i]) * (double(xr[i]) - mean);
    }
    block_sum<2>(s);  // every read of dy is done before dx (perhaps dy) is written
    const T tm = T(mean), ti = T(inv), mean_dy = T(s[0] / double(D));
    const T mean_dy_y = T(s[1] * inv / double(D));  // mean(dy * y), y = (x - mean) * inv
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
      T v;
      if (!nv) {
        v = g[i] - mean_dy;
      } else {
        const T yi = (xr[i] - tm) * ti;
        v = (g[i] - mean_dy - yi * mean_dy_y) * ti;
      }
      blend_store(out + i, v, alpha, beta);
    }
    __syncthreads();
  }
}

// Short rows get smaller blocks so fewer threads idle.
int block_for(int64_t D) { return D >= 1024 ? 256 : D >= 256 ? 128 : D >= 64 ? 64 : 32; }
unsigned grid_rows(int64_t rows) { return unsigned(rows > 1048576 ? 1048576 : rows); }

}  // namespace

void mvn_bwd(Handle& h, const MvnDesc& md, const TensorDesc& xd, const void* x, const void* dy,
             const TensorDesc&, void* dx, Blend b) {
  const MvnRows r(md, xd);
  if (r.dim == 0) return;
  visit_dtype(kFloatTypes, xd.dtype, "mvn_bwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    bwd_kernel<T><<<grid_rows(r.rows), block_for(r.dim), 0, stream_of(h)>>>(
        md.normalize_variance, md.eps, r.rows, r.dim, static_cast<const T*>(x),
        static_cast<const T*>(dy), static_cast<T*>(dx), T(b.alpha), T(b.beta));
  });
  check_launch("mvn_bwd");
}

void mvn_fwd(Handle& h, const MvnDesc& md, const TensorDesc& xd, const void* x, const TensorDesc&,
             void* y, Blend b) {
  const MvnRows r(md, xd);
  if (r.dim == 0) return;
  visit_dtype(kFloatTypes, xd.dtype, "mvn_fwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fwd_kernel<T><<<grid_rows(r.rows), block_for(r.dim), 0, stream_of(h)>>>(
        md.normalize_variance, md.eps, r.rows, r.dim, static_cast<const T*>(x), static_cast<T*>(y),
        T(b.alpha), T(b.beta));
  });
  check_launch("mvn_fwd");
}

}  // namespace crema::prim::cuda
