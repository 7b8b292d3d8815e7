// Internal: how the CUDA im2col convolution splits a batch into chunks of images whose scratch
// matrices fit the Handle's workspace budget. Shared by its row's workspace query and its
// passes (conv_cuda.cu), so both size the same buffer.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace crema::prim {

// im2col: a chunk's patch matrices (C*R*S x P*Q per image) plus a K x P*Q block per image, which
// holds the GEMM result before it is scattered into y (forward), the gathered output gradient
// (backward data and filter), or nothing (per-image GEMMs writing y directly). The plan reserves
// both for every pass.
struct ConvCudaPlan {
  int chunk = 1;
  int split = 1;           // backward filter: slices of the reduction depth, each a partial
  size_t chunk_elems = 0;  // the chunk's matrices, at the start of the workspace
  size_t elems = 0;        // workspace elements: the chunk's matrices, then split partials
};

// The im2col backward filter is one GEMM per group, Kg x Cg*R*S, reducing over a chunk's B*P*Q
// columns. Its output is small (CaffeNet conv2: 128 x 1200, about ten 128x128 tiles per group)
// while its depth is huge (48k). With one group cuBLAS handles such a depth well itself; with
// several, the groups go to one strided-batched call, which (measured) it does not split: it then
// occupies about a tenth of an H100's 132 SMs. So for grouped convolutions the depth is cut into
// `split` slices computed side by side by one batched GEMM into partial filters, then summed in a
// fixed order: enough slices for ~kSplitTargetTiles output tiles, at most kMaxSplit, each at least
// kMinSliceDepth deep, and the partials at most a quarter of the workspace budget. Measured on an
// H100 at batch 128-256: caffenet:conv2 (2 groups) 10.7 -> 6.1 ms; with one group our slices
// lose to cuBLAS's own split (resnet50:conv1 3.5 ms unsplit, 5.4 ms in 16 slices, 14.3 in 4).
inline constexpr int kSplitTargetTiles = 256;
inline constexpr int kMaxSplit = 16;
inline constexpr int64_t kMinSliceDepth = 1024;

inline ConvCudaPlan plan_conv_cuda(int64_t crs_total, int k, int64_t pq, int batch, int groups,
                                   size_t elem_size, size_t budget) {
  ConvCudaPlan plan;
  const int64_t kg = k / groups, crs = crs_total / groups, filter = kg * crs * groups;
  const int64_t tiles = int64_t(groups) * ((kg + 127) / 128) * ((crs + 127) / 128);
  // Grouped only; bounded by the tile target, kMaxSplit and the partials' quarter of the budget.
  const int64_t cap = int64_t(
      std::min<size_t>(kMaxSplit, budget / 4 / elem_size / size_t(std::max<int64_t>(filter, 1))));
  if (groups > 1 && cap >= 2)
    plan.split = int(std::clamp<int64_t>(kSplitTargetTiles / std::max<int64_t>(tiles, 1), 1, cap));
  const size_t partials = plan.split > 1 ? size_t(plan.split) * size_t(filter) : 0;
  const size_t per_image = size_t(crs_total + k) * size_t(pq);
  const size_t left = budget - partials * elem_size;
  const size_t fit = per_image ? left / (per_image * elem_size) : size_t(batch);
  plan.chunk = int(std::clamp<size_t>(fit, 1, size_t(std::max(batch, 1))));
  plan.chunk_elems = per_image * size_t(plan.chunk);
  plan.elems = plan.chunk_elems + partials;
  return plan;
}

// Slices for a chunk of depth ld: the plan's split, fewer where slices would be too shallow.
inline int split_for_depth(const ConvCudaPlan& plan, int64_t ld) {
  return int(std::clamp<int64_t>(ld / kMinSliceDepth, 1, plan.split));
}

}  // namespace crema::prim
