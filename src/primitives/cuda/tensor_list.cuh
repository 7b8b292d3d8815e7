// One kernel launch over a list of tensors (the solver's parameters: a small net's step is
// otherwise one launch per weight and bias, each a few microseconds of mostly launch cost). The
// list is cut into tiles of kListTile elements, every tensor starting on a new tile; a block
// walks tiles and finds each one's tensor. The launch table travels as a kernel parameter.
// Only included by .cu files of the primitives library.
#pragma once

#include <algorithm>
#include <cstdint>

#include "primitives/cuda/cuda_util.cuh"

namespace crema::prim::cuda {

// Tensors per launch; longer lists take several launches.
constexpr int kListMax = 16;
// Elements per tile: four per thread of a block.
constexpr int kListTile = 4 * kBlock;

struct ListTiles {
  int size = 0;
  int64_t first[kListMax + 1] = {};  // first tile of each tensor; first[size]: all tiles
  int64_t count[kListMax] = {};
};

// Appends a tensor of n elements to l (which has room).
inline void add_tiles(ListTiles& l, int64_t n) {
  l.count[l.size] = n;
  l.first[l.size + 1] = l.first[l.size] + (n + kListTile - 1) / kListTile;
  ++l.size;
}

// Blocks for l: a tile each, at most as many as grid_for gives.
inline unsigned list_grid(const ListTiles& l) {
  return unsigned(std::clamp<int64_t>(l.first[l.size], 1, 65536));
}

// Calls fn(t, i) for every element i of every tensor t of l, each once, this block's share.
template <typename Fn>
__device__ __forceinline__ void for_each_listed(const ListTiles& l, Fn&& fn) {
  int t = 0;
  for (int64_t tile = blockIdx.x; tile < l.first[l.size]; tile += gridDim.x) {
    while (tile >= l.first[t + 1]) ++t;  // block-uniform; tiles only increase
    const int64_t base = (tile - l.first[t]) * kListTile;
    const int64_t end = min(base + kListTile, l.count[t]);
    for (int64_t i = base + threadIdx.x; i < end; i += blockDim.x) fn(t, i);
  }
}

}  // namespace crema::prim::cuda
