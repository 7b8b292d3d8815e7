// Packs: W consecutive values of a tensor moved by one load or store of W * sizeof(T) bytes (at
// most 16). A memory-bound kernel keeps the bytes in flight that the copy rate needs only
// through wide accesses: one 2-byte bf16 value per thread and load moves a quarter of what a
// 16-byte vector does, and a BatchNorm over bf16 tensors ran at half the byte rate of the fp32
// one (ResNet-50's res2 BatchNorms: the same 0.54 ms at half the bytes).
#pragma once

#include <cstdint>
#include <initializer_list>
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

// The widest pack of T (16 bytes down to one value) whose width divides n and to which every
// pointer of ptrs is aligned.
template <typename T>
inline int widest_pack_dividing(int64_t n, std::initializer_list<const void*> ptrs) {
  for (int v = kVecWidth<T>; v > 1; v /= 2) {
    bool fits = n % v == 0;
    for (const void* q : ptrs) fits = fits && aligned(q, size_t(v) * sizeof(T));
    if (fits) return v;
  }
  return 1;
}

// Calls f(std::integral_constant<int, w>) for w the widest power of two from kMost down to kLeast
// that is at most v (kLeast where none is): a kernel instantiated for each pack width it may take.
template <int kMost, int kLeast = 1, typename F>
void with_width(int v, F&& f) {
  if constexpr (kMost <= kLeast)
    f(std::integral_constant<int, kLeast>{});
  else if (v >= kMost)
    f(std::integral_constant<int, kMost>{});
  else
    with_width<kMost / 2, kLeast>(v, f);
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

// The channels of a pack's W elements, as chan_map (cuda_reduce.cuh) hands them to a functor:
// c[e] for element e. ChanSpread holds any W channels (planes of an NCHW tensor); ChanRun the run
// c0, c0 + 1, ..., c0 + W - 1 with c0 a multiple of W (a channels-last tensor whose channel
// count W divides), whose per-channel values gather() reads as packs too: element by element, the
// lanes of a warp read addresses W values apart, eight 128-byte lines per load where the whole
// warp needed one for each W loads, and a channels-last BatchNorm ran at a third of the NCHW
// one's byte rate. A null vector gathers as zeros, reading nothing.
template <int W>
struct ChanSpread {
  int64_t c[W];
  __device__ int64_t operator[](int e) const { return c[e]; }
  template <typename M>
  __device__ void gather(const M* p, M (&v)[W]) const {
#pragma unroll
    for (int e = 0; e < W; ++e) v[e] = p ? p[c[e]] : M(0);
  }
};

template <int W>
struct ChanRun {
  int64_t c0;
  __device__ int64_t operator[](int e) const { return c0 + e; }
  template <typename M>
  __device__ void gather(const M* p, M (&v)[W]) const {
    constexpr int kP = W * sizeof(M) <= 16 ? W : int(16 / sizeof(M));
    if (!p) {
#pragma unroll
      for (int e = 0; e < W; ++e) v[e] = M(0);
    } else if (aligned(p, kP * sizeof(M))) {  // the same for every thread: no divergence
#pragma unroll
      for (int e = 0; e < W; e += kP) {
        const Pack<kP, M> q = *reinterpret_cast<const Pack<kP, M>*>(p + c0 + e);
#pragma unroll
        for (int k = 0; k < kP; ++k) v[e + k] = q.v[k];
      }
    } else {
#pragma unroll
      for (int e = 0; e < W; ++e) v[e] = p[c0 + e];
    }
  }
};

// Whether a functor of chan_map or channel_sums (cuda_reduce.cuh) offers packs: it declares
// kPacks and a member template pack<W>.
template <typename F, typename = void>
struct OffersPacks : std::false_type {};
template <typename F>
struct OffersPacks<F, std::void_t<decltype(F::kPacks)>> : std::true_type {};

}  // namespace crema::prim::cuda
