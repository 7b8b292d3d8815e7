// Reductions on CUDA, deterministic and accumulating in double as on the CPU. reduce_fwd maps
// the kept axes to outputs and the reduced axes to a walk per output: with 128 or more values
// per output a block reduces each output (threads stride over the reduced index, then a tree
// sum, cuda_reduce.cuh), otherwise one thread walks each output's values in order. reduce_bwd is
// one grid-stride pass over x's elements reading dy through strides zeroed on the reduced axes.
// Memory-bound: forward reads x once; backward 2-3 reads + 1 write per element.
#include "primitives/common/dtype_visit.h"
#include "primitives/common/reduce_ops.h"
#include "primitives/cuda/cuda_reduce.cuh"
#include "primitives/cuda/cuda_util.cuh"
#include "primitives/reduce.h"

namespace crema::prim::cuda {
namespace {

template <typename T>
__device__ __forceinline__ void store(T* y, double v, double beta) {
  *y = beta == 0.0 ? T(v) : T(v + beta * double(*y));
}

// One block per output element.
template <typename T>
__global__ void fwd_block_kernel(ReduceOp op, ReduceAxes kept, ReduceAxes reduced, int64_t outputs,
                                 int64_t per_output, const T* x, T* y, double scale, double beta) {
  for (int64_t out = blockIdx.x; out < outputs; out += gridDim.x) {
    int64_t o[2];
    kept.offsets<2>(out, o);
    double acc[1] = {0.0};
    for (int64_t r = threadIdx.x; r < per_output; r += blockDim.x) {
      int64_t rx[1];
      reduced.offsets<1>(r, rx);
      acc[0] += reduce_term(op, x[o[0] + rx[0]]);
    }
    block_sum<1>(acc);
    if (threadIdx.x == 0) store(y + o[1], scale * acc[0], beta);
  }
}

// One thread per output element, walking its values with an odometer.
template <typename T>
__global__ void fwd_thread_kernel(ReduceOp op, ReduceAxes kept, ReduceAxes reduced, int64_t outputs,
                                  int64_t per_output, const T* x, T* y, double scale, double beta) {
  CREMA_CUDA_LOOP(out, outputs) {
    int64_t o[2];
    kept.offsets<2>(out, o);
    int64_t idx[ViewDesc::kMaxDims] = {};
    int64_t rx = 0;
    double acc = 0.0;
    for (int64_t k = 0; k < per_output; ++k) {
      acc += reduce_term(op, x[o[0] + rx]);
      for (int d = reduced.rank - 1; d >= 0; --d) {
        rx += reduced.s[0][d];
        if (++idx[d] < reduced.size[d]) break;
        rx -= reduced.s[0][d] * reduced.size[d];
        idx[d] = 0;
      }
    }
    store(y + o[1], scale * acc, beta);
  }
}

template <typename T>
__global__ void bwd_kernel(ReduceOp op, ReduceAxes w, int64_t n, const T* x, const T* dy, T* dx,
                           T a, T b) {
  CREMA_CUDA_LOOP(i, n) {
    int64_t o[3];
    w.offsets<3>(i, o);
    T g = dy[o[1]];
    if (op == ReduceOp::kAsum) {
      const T v = x[o[0]];
      g *= T((T(0) < v) - (v < T(0)));
    } else if (op == ReduceOp::kSumSq) {
      g *= T(2) * x[o[0]];
    }
    blend_store(dx + o[2], g, a, b);
  }
}

template <typename T>
void fwd(Handle& h, const ReduceDesc& rd, const ViewDesc& xd, const void* xv, const ViewDesc& yd,
         void* yv, Blend blend) {
  ReduceAxes kept, reduced;
  split_reduce_axes(xd, yd, &kept, &reduced);
  const int64_t outputs = kept.count(), n = reduced.count();
  const double scale = blend.alpha * (rd.op == ReduceOp::kMean && n > 0 ? 1.0 / double(n) : 1.0);
  const T* x = static_cast<const T*>(xv);
  T* y = static_cast<T*>(yv);
  if (n >= 128) {
    const unsigned grid = unsigned(outputs > 1048576 ? 1048576 : outputs);
    fwd_block_kernel<T><<<grid, kBlock, 0, stream_of(h)>>>(rd.op, kept, reduced, outputs, n, x, y,
                                                           scale, blend.beta);
  } else {
    fwd_thread_kernel<T><<<grid_for(outputs), kBlock, 0, stream_of(h)>>>(
        rd.op, kept, reduced, outputs, n, x, y, scale, blend.beta);
  }
  check_launch("reduce_fwd");
}

template <typename T>
void bwd(Handle& h, const ReduceDesc& rd, const ViewDesc& xd, const void* x, const ViewDesc& dyd,
         const void* dy, const ViewDesc& dxd, void* dx, Blend blend) {
  const ReduceAxes w = reduce_bwd_axes(xd, dyd, dxd);
  const int64_t count = xd.count();
  const int64_t n = count / (dyd.count() > 0 ? dyd.count() : 1);
  const T a = T(blend.alpha * (rd.op == ReduceOp::kMean ? 1.0 / double(n) : 1.0));
  const T* xp = static_cast<const T*>(x);
  if (!xp) xp = static_cast<const T*>(dy);  // not read by kSum and kMean
  bwd_kernel<T><<<grid_for(count), kBlock, 0, stream_of(h)>>>(
      rd.op, w, count, xp, static_cast<const T*>(dy), static_cast<T*>(dx), a, T(blend.beta));
  check_launch("reduce_bwd");
}

}  // namespace

void reduce_fwd(Handle& h, const ReduceDesc& rd, const ViewDesc& xd, const void* x,
                const ViewDesc& yd, void* y, Blend blend) {
  visit_dtype(kFloatTypes, xd.dtype, "reduce_fwd", Device::kCUDA,
              [&](auto tag) { fwd<typename decltype(tag)::type>(h, rd, xd, x, yd, y, blend); });
}

void reduce_bwd(Handle& h, const ReduceDesc& rd, const ViewDesc& xd, const void* x,
                const ViewDesc& dyd, const void* dy, const ViewDesc& dxd, void* dx, Blend blend) {
  visit_dtype(kFloatTypes, xd.dtype, "reduce_bwd", Device::kCUDA, [&](auto tag) {
    bwd<typename decltype(tag)::type>(h, rd, xd, x, dyd, dy, dxd, dx, blend);
  });
}

}  // namespace crema::prim::cuda
