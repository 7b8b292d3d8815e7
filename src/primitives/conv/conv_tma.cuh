// Internal: what the TMA-fed wgmma kernels share (the *_tma_sm90a.cu files, compiled for sm_90a
// only): the shared-memory barriers that pace a loading warp against a multiplying warpgroup,
// the tensor memory accelerator's copies, and the host side that encodes tensor maps through
// the driver's entry points (found through the runtime: nothing links libcuda).
//
// Each stage of a kernel's ring has a "full" barrier (one arrival of the loader, which also
// announces the bytes its copies bring; TMA counts them off) and an "empty" one (one arrival per
// multiplying warp once the wgmma that read the stage have completed).
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <string>

#include "primitives/conv/conv_igemm.cuh"

namespace crema::prim::cuda::igemm {

__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return uint32_t(__cvta_generic_to_shared(p));
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ void barrier_init(uint64_t* bar, int arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(bar)), "r"(arrivals));
}
// Makes the initialized barriers visible to the async proxy (TMA) and the other threads.
__device__ __forceinline__ void barrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// The producer's arrival on a full barrier, announcing the bytes its copies will bring.
__device__ __forceinline__ void barrier_expect(uint64_t* bar, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(bar)),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void barrier_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(shared_address(bar)) : "memory");
}
// Waits until the barrier's phase of this parity has completed.
__device__ __forceinline__ void barrier_wait(uint64_t* bar, int parity) {
  asm volatile(
      "{\n.reg .pred done;\nWAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n}\n" ::"r"(shared_address(bar)),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void prefetch_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}
// A box of pixels x 128 bytes of channels of an NHWC source (the map's im2col box): the pixel
// walk starts at base point (w, h) of image n, each pixel read at offset (ow, oh) from its base.
__device__ __forceinline__ void load_im2col(void* dst, const CUtensorMap* map, uint64_t* bar, int c,
                                            int w, int h, int n, uint16_t ow, uint16_t oh) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};" ::"r"(shared_address(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c), "r"(w), "r"(h), "r"(n),
      "r"(shared_address(bar)), "h"(ow), "h"(oh)
      : "memory");
}
// The map's 2-D box whose first element is (x, y): x along rows, y across them.
__device__ __forceinline__ void load_tile(void* dst, const CUtensorMap* map, uint64_t* bar, int x,
                                          int y) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(shared_address(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(shared_address(bar))
      : "memory");
}
#endif

template <typename F>
F driver_function(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  check_cuda(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found), name);
  if (!fn || found != cudaDriverEntryPointSuccess)
    throw PrimError(std::string(name) + ": not offered by this CUDA driver");
  return reinterpret_cast<F>(fn);
}

inline void check_encode(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS)
    throw PrimError(std::string(what) + ": CUDA driver error " + std::to_string(int(r)));
}

template <MathMode M>
constexpr CUtensorMapDataType kMapType = M == MathMode::kTF32   ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                         : M == MathMode::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                                : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;

// An NHWC source (c x w x h x n, 16-byte rows of channels) read in im2col mode, each copy a box
// of `pixels` x 128 bytes of channels into the 128-byte swizzle layout. Base points (y * sy + oy,
// x * sx + ox) over a rows_h x rows_w plane: the plane's corners, relative to the source's
// first and last points, bound the walk (tma_im2col_fits keeps them in im2col's range).
template <MathMode M>
CUtensorMap im2col_map(const void* src, int c, int w, int h, int n, int rows_h, int rows_w, int sy,
                       int sx, int oy, int ox, int pixels) {
  static const auto encode =
      driver_function<PFN_cuTensorMapEncodeIm2col_v12000>("cuTensorMapEncodeIm2col");
  constexpr cuuint64_t e = sizeof(Bits<M>);
  const cuuint64_t dims[4] = {cuuint64_t(c), cuuint64_t(w), cuuint64_t(h), cuuint64_t(n)};
  const cuuint64_t strides[3] = {dims[0] * e, dims[0] * dims[1] * e,
                                 dims[0] * dims[1] * dims[2] * e};
  const int lower[2] = {ox, oy};
  const int upper[2] = {(rows_w - 1) * sx + ox - (w - 1), (rows_h - 1) * sy + oy - (h - 1)};
  const cuuint32_t steps[4] = {1, cuuint32_t(sx), cuuint32_t(sy), 1};
  CUtensorMap map;
  check_encode(encode(&map, kMapType<M>, 4, const_cast<void*>(src), dims, strides, lower, upper,
                      cuuint32_t(128 / e), cuuint32_t(pixels), steps, CU_TENSOR_MAP_INTERLEAVE_NONE,
                      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
               "cuTensorMapEncodeIm2col (convolution activations)");
  return map;
}

// A row-major matrix of `rows` rows of `cols` values, each copy a box of `box_rows` rows x 128
// bytes into the 128-byte swizzle layout; past the matrix, zeros.
template <MathMode M>
CUtensorMap tiled_map(const void* src, int64_t cols, int64_t rows, int box_rows, const char* what) {
  static const auto encode =
      driver_function<PFN_cuTensorMapEncodeTiled_v12000>("cuTensorMapEncodeTiled");
  constexpr cuuint64_t e = sizeof(Bits<M>);
  const cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {dims[0] * e};
  const cuuint32_t box[2] = {cuuint32_t(128 / e), cuuint32_t(box_rows)}, steps[2] = {1, 1};
  CUtensorMap map;
  check_encode(encode(&map, kMapType<M>, 2, const_cast<void*>(src), dims, strides, box, steps,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
               what);
  return map;
}

}  // namespace crema::prim::cuda::igemm
