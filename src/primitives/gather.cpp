// Row gather / scatter-add: descriptor validation and the device dispatcher. The CPU bodies
// (with the index checks, which read the indices) live in gather_cpu.cpp; the CUDA backend is
// not built yet.
#include "primitives/gather.h"

#include <string>

namespace crema::prim {

// Defined in gather_cpu.cpp; only this dispatcher calls them.
namespace cpu {
void gather_rows(const RowsDesc& rd, const void* table, const void* indices, void* out,
                 Blend blend);
void scatter_add_rows(const RowsDesc& rd, const void* src, const void* indices, void* table,
                      Blend blend);
int64_t nonzero_indices(DataType t, int64_t n, const void* mask, void* indices);
}  // namespace cpu

namespace {

[[noreturn]] void fail(const char* op, const std::string& why) {
  throw PrimError(std::string(op) + ": " + why);
}

void check(const char* op, const Handle& h, const RowsDesc& rd) {
  if (rd.num_indices < 0 || rd.row_size < 0 || rd.num_rows < 0) fail(op, "negative size");
  if (h.device() != Device::kCPU) fail(op, "CUDA backend not built yet");
}

}  // namespace

void gather_rows(Handle& h, const RowsDesc& rd, const void* table, const void* indices, void* out,
                 Blend blend) {
  check("gather_rows", h, rd);
  if (rd.num_indices == 0) return;
  if (!indices || !out || (rd.row_size > 0 && !table)) fail("gather_rows", "null data pointer");
  cpu::gather_rows(rd, table, indices, out, blend);
}

void scatter_add_rows(Handle& h, const RowsDesc& rd, const void* src, const void* indices,
                      void* table, Blend blend) {
  check("scatter_add_rows", h, rd);
  if (rd.num_rows * rd.row_size == 0 && rd.num_indices == 0) return;
  if (!table || (rd.num_indices > 0 && (!src || !indices)))
    fail("scatter_add_rows", "null data pointer");
  cpu::scatter_add_rows(rd, src, indices, table, blend);
}

int64_t nonzero_indices(Handle& h, DataType t, int64_t n, const void* mask, void* indices) {
  check("nonzero_indices", h, RowsDesc{t, n, 0, 0});
  if (n == 0) return 0;
  if (!mask || !indices) fail("nonzero_indices", "null data pointer");
  return cpu::nonzero_indices(t, n, mask, indices);
}

}  // namespace crema::prim
