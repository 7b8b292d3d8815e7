// CPU implementation of the row gather / scatter-add: the indices are validated in one pass
// before anything is written, then each row is a contiguous copy or accumulation.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>

#include "primitives/common/dtype_visit.h"
#include "primitives/gather.h"

namespace crema::prim::cpu {
namespace {

// Checks every index and returns nothing; throws naming the first bad one.
template <typename T>
void check_indices(const char* op, const RowsDesc& rd, const T* idx) {
  for (int64_t i = 0; i < rd.num_indices; ++i) {
    const T v = idx[i];
    if (!(v >= T(0) && v < T(rd.num_rows) && std::floor(v) == v)) {
      std::ostringstream os;
      os << op << ": index " << v << " at position " << i << " is not a row of the table [0, "
         << rd.num_rows << ")";
      throw PrimError(os.str());
    }
  }
}

template <typename T>
void gather_impl(const RowsDesc& rd, const void* tv, const void* iv, void* ov, Blend blend) {
  const T* table = static_cast<const T*>(tv);
  const T* idx = static_cast<const T*>(iv);
  T* out = static_cast<T*>(ov);
  check_indices("gather_rows", rd, idx);
  const int64_t d = rd.row_size;
  const T a = T(blend.alpha), b = T(blend.beta);
  for (int64_t i = 0; i < rd.num_indices; ++i) {
    const T* src = table + int64_t(idx[i]) * d;
    T* dst = out + i * d;
    if (b == T(0) && a == T(1)) {
      if (d > 0) std::memcpy(dst, src, size_t(d) * sizeof(T));
    } else if (b == T(0)) {
      for (int64_t j = 0; j < d; ++j) dst[j] = a * src[j];
    } else {
      for (int64_t j = 0; j < d; ++j) dst[j] = a * src[j] + b * dst[j];
    }
  }
}

template <typename T>
void scatter_impl(const RowsDesc& rd, const void* sv, const void* iv, void* tv, Blend blend) {
  const T* src = static_cast<const T*>(sv);
  const T* idx = static_cast<const T*>(iv);
  T* table = static_cast<T*>(tv);
  check_indices("scatter_add_rows", rd, idx);
  const int64_t d = rd.row_size, total = rd.num_rows * d;
  const T a = T(blend.alpha), b = T(blend.beta);
  if (b == T(0)) {
    for (int64_t j = 0; j < total; ++j) table[j] = T(0);
  } else if (b != T(1)) {
    for (int64_t j = 0; j < total; ++j) table[j] *= b;
  }
  for (int64_t i = 0; i < rd.num_indices; ++i) {
    T* dst = table + int64_t(idx[i]) * d;
    const T* s = src + i * d;
    for (int64_t j = 0; j < d; ++j) dst[j] += a * s[j];
  }
}

template <typename T>
int64_t nonzero_impl(int64_t n, const void* mv, void* iv) {
  const T* mask = static_cast<const T*>(mv);
  T* idx = static_cast<T*>(iv);
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i)
    if (mask[i] != T(0)) idx[count++] = T(i);
  return count;
}

}  // namespace

void gather_rows(Handle&, const RowsDesc& rd, const void* table, const void* indices, void* out,
                 Blend blend) {
  visit_dtype(kFloatTypes, rd.dtype, "gather_rows", Device::kCPU, [&](auto tag) {
    gather_impl<typename decltype(tag)::type>(rd, table, indices, out, blend);
  });
}

void scatter_add_rows(Handle&, const RowsDesc& rd, const void* src, const void* indices,
                      void* table, Blend blend) {
  visit_dtype(kFloatTypes, rd.dtype, "scatter_add_rows", Device::kCPU, [&](auto tag) {
    scatter_impl<typename decltype(tag)::type>(rd, src, indices, table, blend);
  });
}

int64_t nonzero_indices(Handle&, DataType t, int64_t n, const void* mask, void* indices) {
  return visit_dtype(kFloatTypes, t, "nonzero_indices", Device::kCPU, [&](auto tag) {
    return nonzero_impl<typename decltype(tag)::type>(n, mask, indices);
  });
}

}  // namespace crema::prim::cpu
