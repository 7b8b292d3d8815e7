// Internal: the one place a DataType becomes a C++ type. The half-size storage types (bf16_t,
// f16_t: bit patterns with round-to-nearest-even conversions, the same on host and device) and
// the visitor every backend calls instead of branching on the dtype:
//
//   visit_dtype(kFloatTypes, xd.dtype, "act_fwd", Device::kCPU, [&](auto tag) {
//     using T = typename decltype(tag)::type;
//     ...
//   });
//
// calls the lambda with the tag of the storage type, or throws one line ("act_fwd: bf16 is not
// supported on cpu") when the op does not list that type for the device. Nothing falls through
// to float. Written for C++17 so CUDA sources use it too.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "primitives/common/host_device.h"
#include "primitives/types.h"

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace crema::prim {

// bfloat16: the upper half of an fp32 (8 exponent bits, 7 mantissa bits).
struct bf16_t {
  uint16_t bits;
};
// IEEE 754 binary16 (5 exponent bits, 10 mantissa bits, max 65504).
struct f16_t {
  uint16_t bits;
};

CREMA_HOST_DEVICE inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
CREMA_HOST_DEVICE inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

CREMA_HOST_DEVICE inline float to_float(bf16_t v) { return bits_float(uint32_t(v.bits) << 16); }

CREMA_HOST_DEVICE inline float to_float(f16_t v) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(v.bits));  // one conversion instruction, same value
#else
  const uint32_t sign = uint32_t(v.bits & 0x8000u) << 16;
  const uint32_t e = (v.bits >> 10) & 0x1fu, m = v.bits & 0x3ffu;
  if (e == 0) {  // zero or subnormal: m * 2^-24, exact in fp32
    const float f = float(m) * 5.9604644775390625e-08f;
    return sign ? -f : f;
  }
  if (e == 31) return bits_float(sign | 0x7f800000u | (m << 13));  // inf, NaN
  return bits_float(sign | ((e + 112) << 23) | (m << 13));
#endif
}

// In device code, the hardware's round-to-nearest-even conversions (the same bits, but for the
// payload of a NaN): a fraction of the software's instructions and registers in the epilogues.
CREMA_HOST_DEVICE inline bf16_t to_bf16(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return bf16_t{__bfloat16_as_ushort(__float2bfloat16_rn(f))};
#else
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16_t{uint16_t((u >> 16) | 0x40u)};  // quiet NaN
  return bf16_t{uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};                  // RNE
#endif
}

CREMA_HOST_DEVICE inline f16_t to_f16(float f) {
#if defined(__CUDA_ARCH__)
  return f16_t{__half_as_ushort(__float2half_rn(f))};
#else
  uint32_t x = float_bits(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return f16_t{uint16_t(sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u))};
  if (x >= 0x477ff000u) return f16_t{uint16_t(sign | 0x7c00u)};  // rounds to 65520 or more
  if (x < 0x38800000u) {                                         // below 2^-14: subnormal
    if (x <= 0x33000000u) return f16_t{sign};                    // at most 2^-25: rounds to 0
    const uint32_t e = x >> 23, m = (x & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - e;  // 14..24: the result counts units of 2^-24
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return f16_t{uint16_t(sign | r)};
  }
  x += 0x0fffu + ((x >> 13) & 1u);  // RNE on the 13 dropped bits; a carry bumps the exponent
  return f16_t{uint16_t(sign | ((x - (uint32_t(127 - 15) << 23)) >> 13))};
#endif
}

// fp64 -> fp32 rounded to odd (an inexact result gets its last bit set): a second rounding of
// it to bf16 or f16 then equals rounding the fp64 value directly, as fp32 keeps more than two
// bits beyond either format. Without it, f64 -> f16 would round twice (1 + 2^-11 + 2^-40 would
// become 1 instead of 1 + 2^-10).
CREMA_HOST_DEVICE inline float to_float_round_odd(double v) {
  const float f = float(v);
  if (v != v || double(f) == v) return f;
  uint32_t u = float_bits(f);
  const double af = f < 0 ? -double(f) : double(f), av = v < 0 ? -v : v;
  if (af > av) --u;  // float() rounded away from zero: step back toward it
  return bits_float(u | 1u);
}
CREMA_HOST_DEVICE inline float narrow_to_float(float v) { return v; }
CREMA_HOST_DEVICE inline float narrow_to_float(double v) { return to_float_round_odd(v); }

// Loads and stores through fp32 (fp64 stays fp64): how a kernel templated on its storage type
// reads bf16/f16 and computes in fp32. M is the compute type, float or double.
CREMA_HOST_DEVICE inline float load_as_float(bf16_t v) { return to_float(v); }
CREMA_HOST_DEVICE inline float load_as_float(f16_t v) { return to_float(v); }
CREMA_HOST_DEVICE inline float load_as_float(float v) { return v; }
CREMA_HOST_DEVICE inline double load_as_float(double v) { return v; }

// What a blend between storage types X and Y computes in: fp32, or fp64 when a side is f64.
template <typename X, typename Y>
using BlendMath = decltype(load_as_float(X{}) + load_as_float(Y{}));

template <typename T, typename M>
CREMA_HOST_DEVICE inline T store_from_float(M v) {
  if constexpr (std::is_same_v<T, bf16_t>)
    return to_bf16(narrow_to_float(v));
  else if constexpr (std::is_same_v<T, f16_t>)
    return to_f16(narrow_to_float(v));
  else
    return T(v);
}

// The type a kernel computes an element of storage type T in: fp32 for bf16, f16 and fp32, fp64
// for fp64. Per-channel vectors and parameters that travel with half-size tensors are of this
// type (fp32), never half.
template <typename T>
using MathOf = decltype(load_as_float(T{}));

template <typename T>
struct TypeTag {
  using type = T;
};

template <typename T>
constexpr DataType dtype_of();
template <>
constexpr DataType dtype_of<float>() {
  return DataType::kFloat32;
}
template <>
constexpr DataType dtype_of<double>() {
  return DataType::kFloat64;
}
template <>
constexpr DataType dtype_of<bf16_t>() {
  return DataType::kBFloat16;
}
template <>
constexpr DataType dtype_of<f16_t>() {
  return DataType::kFloat16;
}

// A list of storage types an op implements.
template <typename... Ts>
struct DTypes {};
inline constexpr DTypes<float, double> kFloatTypes{};  // fp32 and the fp64 of gradient checks
inline constexpr DTypes<float, double, bf16_t, f16_t> kAllTypes{};

[[noreturn]] inline void throw_unsupported_dtype(const char* op, DataType t, Device d) {
  throw PrimError(std::string(op) + ": " + dtype_name(t) + " is not supported on " +
                  device_name(d));
}

namespace detail {
template <typename T, typename... Rest, typename F>
decltype(auto) visit_dtype_in(DataType t, const char* op, Device d, F& f) {
  if constexpr (sizeof...(Rest) == 0) {
    if (t != dtype_of<T>()) throw_unsupported_dtype(op, t, d);
    return f(TypeTag<T>{});
  } else {
    if (t == dtype_of<T>()) return f(TypeTag<T>{});
    return visit_dtype_in<Rest...>(t, op, d, f);
  }
}
}  // namespace detail

// Calls f(TypeTag<T>{}) for the T among Ts whose dtype is t; throws the op's one-line error if
// t is not among them.
template <typename... Ts, typename F>
decltype(auto) visit_dtype(DTypes<Ts...>, DataType t, const char* op, Device d, F&& f) {
  return detail::visit_dtype_in<Ts...>(t, op, d, f);
}

}  // namespace crema::prim
