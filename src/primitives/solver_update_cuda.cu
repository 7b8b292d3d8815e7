// Solver update on CUDA: one grid-stride kernel per rule (solver_update_ops.h). Memory-bound:
// it reads w, g and the histories once and writes them once (16 bytes per f32 element for SGD,
// 24 for Adam), against the 6-10 passes of a chain of BLAS calls.
#include "primitives/cuda_util.cuh"
#include "primitives/solver_update.h"
#include "primitives/solver_update_ops.h"

namespace crema::prim::cuda {
namespace {

template <UpdateRule R, typename T>
__global__ void update_kernel(update_ops::Coefficients<T> k, int64_t n, T* w, T* g, T* h, T* h2) {
  CREMA_CUDA_LOOP(i, n) update_ops::update_one<R>(k, i, w, g, h, h2);
}

template <typename T>
void update(Handle& h, const SolverUpdateDesc& d, T* w, T* g, T* hist, T* hist2) {
  const update_ops::Coefficients<T> k = update_ops::coefficients<T>(d);
  update_ops::visit_rule(d.rule, [&](auto rule) {
    constexpr UpdateRule R = decltype(rule)::value;
    update_kernel<R><<<grid_for(d.count), kBlock, 0, stream_of(h)>>>(k, d.count, w, g, hist, hist2);
  });
  check_launch("solver_update");
}

}  // namespace

void solver_update(Handle& h, const SolverUpdateDesc& d, void* w, void* g, void* hist,
                   void* hist2) {
  if (d.dtype == DataType::kFloat64)
    update(h, d, static_cast<double*>(w), static_cast<double*>(g), static_cast<double*>(hist),
           static_cast<double*>(hist2));
  else
    update(h, d, static_cast<float*>(w), static_cast<float*>(g), static_cast<float*>(hist),
           static_cast<float*>(hist2));
}

}  // namespace crema::prim::cuda
