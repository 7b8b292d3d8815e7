// Packs: W consecutive values of a tensor moved by one load or store of W * sizeof(T) bytes (at
// most 16). A memory-bound kernel keeps the bytes in flight that the copy rate needs only
// through wide accesses: one 2-byte bf16 value per thread and load moves a quarter of what a
// 16-byte vector does, and a BatchNorm over bf16 tensors ran at half the byte rate of the fp32
// one (ResNet-50's res2 BatchNorms: the same 0.54 ms at half the bytes).
#pragma once

#include <type_traits>

#include "primitives/common/dtype_visit.h"
#include "primitives/cuda/cuda_util.cuh"

namespace crema::prim::cuda {

template <int W, typename T>
struct alignas(W * sizeof(T)) Pack {
  static_assert(W * sizeof(T) <= 16 && (W & (W - 1)) == 0, "1 to 16 bytes, a power of two");
  T v[W];
};

// Values in one 16-byte access.
template <typename T>
constexpr int kVecWidth = int(16 / sizeof(T));
template <typename T>
using Vec = Pack<kVecWidth<T>, T>;
// Whether p may be read or written as Vec<T>.
template <typename T>
inline bool vec_aligned(const void* p) {
  return aligned(p, sizeof(Vec<T>));
}

// p[0..W) as the math type M; p aligned to the pack.
template <int W, typename T, typename M>
__device__ __forceinline__ void load_pack(const T* p, M (&v)[W]) {
  const Pack<W, T> q = *reinterpret_cast<const Pack<W, T>*>(p);
#pragma unroll
  for (int e = 0; e < W; ++e) v[e] = M(load_as_float(q.v[e]));
}

template <int W, typename T, typename M>
__device__ __forceinline__ void store_pack(T* p, const M (&v)[W]) {
  Pack<W, T> q;
#pragma unroll
  for (int e = 0; e < W; ++e) q.v[e] = store_from_float<T>(v[e]);
  *reinterpret_cast<Pack<W, T>*>(p) = q;
}

// out = alpha * v + beta * out, a pack at a time; beta == 0 never reads out.
template <int W, typename T, typename M>
__device__ __forceinline__ void blend_store_pack(T* out, M (&v)[W], M alpha, M beta) {
  if (beta != M(0)) {
    M o[W];
    load_pack<W>(out, o);
#pragma unroll
    for (int e = 0; e < W; ++e) v[e] = alpha * v[e] + beta * o[e];
  } else {
#pragma unroll
    for (int e = 0; e < W; ++e) v[e] = alpha * v[e];
  }
  store_pack<W>(out, v);
}

// v rounded to the storage type T and back: what a later load of it returns.
template <typename T, typename M>
__device__ __forceinline__ M round_to(M v) {
  return M(load_as_float(store_from_float<T>(v)));
}

// Whether a functor of chan_map or channel_sums (cuda_reduce.cuh) offers packs: it declares
// kPacks and a member template pack<W>.
template <typename F, typename = void>
struct OffersPacks : std::false_type {};
template <typename F>
struct OffersPacks<F, std::void_t<decltype(F::kPacks)>> : std::true_type {};

}  // namespace crema::prim::cuda
