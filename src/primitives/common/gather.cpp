// Row gather / scatter-add: descriptor validation and the one device dispatcher. The index
// checks read the indices, so they live in the implementations.
#include "primitives/gather.h"

#include <string>

#include "primitives/common/dispatch.h"

namespace crema::prim {

// The implementations (gather_cpu.cpp, gather_cuda.cu), with the public signatures.
CREMA_BACKENDS(void gather_rows(Handle& h, const RowsDesc& rd, const void* table,
                                const void* indices, void* out, Blend blend);
               void scatter_add_rows(Handle& h, const RowsDesc& rd, const void* src,
                                     const void* indices, void* table, Blend blend);
               int64_t nonzero_indices(Handle & h, DataType t, int64_t n, const void* mask,
                                       void* indices);)

namespace {

[[noreturn]] void fail(const char* op, const std::string& why) {
  throw PrimError(std::string(op) + ": " + why);
}

void check(const char* op, const RowsDesc& rd) {
  if (rd.num_indices < 0 || rd.row_size < 0 || rd.num_rows < 0) fail(op, "negative size");
}

}  // namespace

void gather_rows(Handle& h, const RowsDesc& rd, const void* table, const void* indices, void* out,
                 Blend blend) {
  check("gather_rows", rd);
  if (rd.num_indices == 0) return;
  if (!indices || !out || (rd.row_size > 0 && !table)) fail("gather_rows", "null data pointer");
  CREMA_DISPATCH(h, gather_rows, h, rd, table, indices, out, blend);
}

void scatter_add_rows(Handle& h, const RowsDesc& rd, const void* src, const void* indices,
                      void* table, Blend blend) {
  check("scatter_add_rows", rd);
  if (rd.num_rows * rd.row_size == 0 && rd.num_indices == 0) return;
  if (!table || (rd.num_indices > 0 && (!src || !indices)))
    fail("scatter_add_rows", "null data pointer");
  CREMA_DISPATCH(h, scatter_add_rows, h, rd, src, indices, table, blend);
}

int64_t nonzero_indices(Handle& h, DataType t, int64_t n, const void* mask, void* indices) {
  check("nonzero_indices", RowsDesc{t, n, 0, 0});
  if (n == 0) return 0;
  if (!mask || !indices) fail("nonzero_indices", "null data pointer");
  return CREMA_DISPATCH(h, nonzero_indices, h, t, n, mask, indices);
}

}  // namespace crema::prim
