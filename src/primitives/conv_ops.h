// Internal: how the CUDA convolution's im2col algorithm splits a batch into chunks of images
// whose patch matrices fit the Handle's workspace budget. Shared by the workspace query in
// conv.cpp and the CUDA implementation in conv_cuda.cu, so both size the same buffer.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace crema::prim {

// Forward and backward data unfold `chunk` images' patch matrices (C*R*S x P*Q each) and run one
// strided-batched GEMM per group over them; backward filter also gathers the chunk's output
// gradient (K x P*Q per image) beside it. The plan reserves both for every pass.
struct ConvCudaPlan {
  int chunk = 1;
  size_t elems = 0;  // workspace elements
};

inline ConvCudaPlan plan_conv_cuda(int64_t crs_total, int k, int64_t pq, int batch,
                                   size_t elem_size, size_t budget) {
  ConvCudaPlan plan;
  const size_t per_image = size_t(crs_total + k) * size_t(pq);
  const size_t fit = per_image ? budget / (per_image * elem_size) : size_t(batch);
  plan.chunk = int(std::clamp<size_t>(fit, 1, size_t(std::max(batch, 1))));
  plan.elems = per_image * size_t(plan.chunk);
  return plan;
}

}  // namespace crema::prim
