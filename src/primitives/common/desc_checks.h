// Descriptor checks that several primitives' entry points share; each throws PrimError naming
// the op.
#pragma once

#include <cmath>
#include <string>

#include "primitives/types.h"

namespace crema::prim {

// "NxCxHxW", for messages (types.cpp).
std::string dims(const TensorDesc& d);

// Both tensors packed NCHW, of one shape and type, with no negative size: the kernels walk
// packed planes or contiguous runs, where a strided view would silently read the wrong elements.
inline void check_packed_pair(const std::string& op, const TensorDesc& a, const TensorDesc& b) {
  if (a.n < 0 || a.c < 0 || a.h < 0 || a.w < 0) throw PrimError(op + ": negative size " + dims(a));
  if (a.dtype != b.dtype)
    throw PrimError(op + ": tensors are " + dtype_name(a.dtype) + " and " + dtype_name(b.dtype));
  if (a.n != b.n || a.c != b.c || a.h != b.h || a.w != b.w)
    throw PrimError(op + ": shapes differ: " + dims(a) + " and " + dims(b));
  if (!a.is_packed_nchw() || !b.is_packed_nchw())
    throw PrimError(op + ": tensors must be packed NCHW");
}

// The normalizations' eps (batch norm, MVN): finite and >= 0.
inline void check_eps(const std::string& op, double eps) {
  if (!std::isfinite(eps) || eps < 0)
    throw PrimError(op + ": eps must be finite and >= 0, got " + std::to_string(eps));
}

}  // namespace crema::prim
