// Row gather and scatter-add over a table of num_rows rows of row_size elements, driven by
// num_indices row indices stored as values of the data type (as Caffe stores labels and
// indices). Users: Embed (rows of the weight), BatchReindex and Filter (items of a batch).
//   gather_rows:      out[i, :] = alpha * table[idx[i], :] + beta * out[i, :]
//   scatter_add_rows: table[r, :] = beta * table[r, :] + alpha * sum_{i: idx[i] = r} src[i, :]
// scatter_add_rows is the gradient of gather_rows (d table = scatter of d out); with beta = 0 it
// overwrites the whole table, rows no index names become 0. Every index must be an integer in
// [0, num_rows): otherwise PrimError names the index and its position, and nothing is written.
//   nonzero_indices:  writes the positions i (as values of the data type) with mask[i] != 0 in
//                     increasing order into indices (room for n) and returns their count.
#pragma once

#include <cstdint>

#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::prim {

struct RowsDesc {
  DataType dtype = DataType::kFloat32;
  int64_t num_indices = 0;
  int64_t row_size = 0;
  int64_t num_rows = 0;  // rows of the table
};

void gather_rows(Handle& h, const RowsDesc& rd, const void* table, const void* indices, void* out,
                 Blend blend = {});
void scatter_add_rows(Handle& h, const RowsDesc& rd, const void* src, const void* indices,
                      void* table, Blend blend = {});
int64_t nonzero_indices(Handle& h, DataType t, int64_t n, const void* mask, void* indices);

}  // namespace crema::prim
