// Solver update on CUDA: one kernel per rule (solver_update_ops.h) over a list of up to
// kListMax parameters (tensor_list.cuh). Memory-bound: it reads w, g and the histories once and
// writes them once (16 bytes per f32 element for SGD, 24 for Adam), against the 6-10 passes of a
// chain of BLAS calls. A launch per parameter cost LeNet's step 8 launches of about 3 us each.
#include <algorithm>

#include "primitives/common/dtype_visit.h"
#include "primitives/common/solver_update_ops.h"
#include "primitives/cuda/tensor_list.cuh"
#include "primitives/solver_update.h"

namespace crema::prim::cuda {
namespace {

template <typename T>
struct UpdateTable {
  ListTiles tiles;
  update_ops::Coefficients<T> k[kListMax];
  T* w[kListMax];
  T* g[kListMax];
  T* h[kListMax];
  T* h2[kListMax];
};

template <UpdateRule R, typename T>
__global__ void update_kernel(const __grid_constant__ UpdateTable<T> u) {
  for_each_listed(u.tiles, [&](int t, int64_t i) {
    update_ops::update_one<R>(u.k[t], i, u.w[t], u.g[t], u.h[t], u.h2[t]);
  });
}

template <typename T>
void update(Handle& h, const SolverUpdateParam* params, size_t count) {
  for (size_t start = 0; start < count; start += kListMax) {
    UpdateTable<T> u{};
    for (size_t i = start; i < std::min(count, start + kListMax); ++i) {
      const SolverUpdateParam& p = params[i];
      const int t = u.tiles.size;
      u.k[t] = update_ops::coefficients<T>(p.desc);
      u.w[t] = static_cast<T*>(p.w);
      u.g[t] = static_cast<T*>(p.g);
      u.h[t] = static_cast<T*>(p.hist);
      u.h2[t] = static_cast<T*>(p.hist2);
      add_tiles(u.tiles, p.desc.count);
    }
    if (u.tiles.first[u.tiles.size] == 0) continue;  // every count 0
    update_ops::visit_rule(params[0].desc.rule, [&](auto rule) {
      constexpr UpdateRule R = decltype(rule)::value;
      update_kernel<R, T><<<list_grid(u.tiles), kBlock, 0, stream_of(h)>>>(u);
    });
    check_launch("solver_update");
  }
}

}  // namespace

void solver_update(Handle& h, const SolverUpdateParam* params, size_t count) {
  visit_dtype(kFloatTypes, params[0].desc.dtype, "solver_update", Device::kCUDA,
              [&](auto tag) { update<typename decltype(tag)::type>(h, params, count); });
}

}  // namespace crema::prim::cuda
