// Internal: the device pieces the implicit-GEMM kernels share (conv_igemm_cuda.cu stages fp32;
// conv_igemm_nhwc_cuda.cu and conv_igemm_wgrad_cuda.cu 16-byte pieces of NHWC copies in the
// math format): the padding test of a gathered element, the cp.async copies and group fences,
// ldmatrix, one tensor-core mma in each math format, the NHWC copy, and the opt-in to more than
// 48 KiB of shared memory.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <type_traits>

#include "primitives/cuda/cuda_pack.cuh"
#include "primitives/cuda/cuda_util.cuh"
#include "primitives/types.h"

namespace crema::prim::cuda::igemm {

// A coordinate that no tap brings into the plane (rows past the GEMM's edge, taps past its depth).
inline constexpr int kNoPoint = INT_MIN / 2;

// Whether a gathered point lies in the hmax x wmax plane (else the element is padding: zero).
__device__ __forceinline__ bool inside(int h, int w, int hmax, int wmax) {
  return unsigned(h) < unsigned(hmax) && unsigned(w) < unsigned(wmax);
}

// v rounded to TF32 (nearest, ties away), as the bits a TF32 mma operand register holds.
__device__ __forceinline__ uint32_t tf32(float v) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
  return r;
}

// The math format's storage (bits) and how many values a 16-byte piece holds.
template <MathMode M>
using Bits = std::conditional_t<M == MathMode::kTF32, uint32_t, uint16_t>;
template <MathMode M>
constexpr int kPiece = 16 / int(sizeof(Bits<M>));

template <MathMode M>
__device__ __forceinline__ Bits<M> to_bits(float v) {
  if constexpr (M == MathMode::kTF32) {
    return tf32(v);
  } else if constexpr (M == MathMode::kBF16) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(v));
  } else {
    return __half_as_ushort(__float2half_rn(v));
  }
}

// A 16-byte cp.async into shared memory; an invalid source fills zeros (src must still be a
// mapped address).
__device__ __forceinline__ void copy16(void* dst, const void* src, bool valid) {
  const unsigned d = unsigned(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(d), "l"(src),
               "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void copy_commit() { asm volatile("cp.async.commit_group;"); }
// Waits until at most N committed copy groups are still in flight.
template <int N>
__device__ __forceinline__ void copy_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

// The multistage main loop over k-tiles [kt0, kt1): kStages - 1 tiles in flight while one is
// multiplied. issue(kt, stage) starts the copies of tile kt into a stage, compute(stage)
// multiplies one. Each iteration waits for its tile, then (after the barrier, so no warp still
// reads the stage) refills the stage the previous iteration used.
// Its prologue, shared with the wgmma pipeline: the copies of the first kStages - 1 tiles, one
// commit group per stage (empty past kt1, so the group counts stay fixed).
template <int kStages, typename Issue>
__device__ __forceinline__ void pipeline_prologue(int kt0, int kt1, Issue& issue) {
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (kt0 + s < kt1) issue(kt0 + s, s);
    copy_commit();
  }
}
template <int kStages, typename Issue, typename Compute>
__device__ __forceinline__ void pipeline(int kt0, int kt1, Issue&& issue, Compute&& compute) {
  pipeline_prologue<kStages>(kt0, kt1, issue);
  for (int kt = kt0; kt < kt1; ++kt) {
    copy_wait<kStages - 2>();
    __syncthreads();
    const int next = kt + kStages - 1;
    if (next < kt1) issue(next, (next - kt0) % kStages);
    copy_commit();
    compute((kt - kt0) % kStages);
  }
  copy_wait<0>();
}

// Four 8 x 8 matrices of 16-bit values; lanes 8i..8i+7 give the row addresses of matrix i.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  const unsigned a = unsigned(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
// The same, each matrix transposed: the operand's depth runs across shared rows.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  const unsigned a = unsigned(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

// d += a b on one 16 x 8 tile: k16 for BF16/FP16 (two values per register, the lower k in the
// low half), k8 for TF32.
template <MathMode M>
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                    uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (M == MathMode::kTF32)
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else if constexpr (M == MathMode::kBF16)
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  __trap();  // the support rule keeps older GPUs away
#endif
}

// dst[n][h][w][c] = round(src[n][c][h][w]) for any source strides, the source stored as S (f32,
// bf16, f16), dst_c >= c channels a row (zeros past c): 64 x 64 tiles of (c, h*w) through shared
// memory, so both the reads (along h*w) and the writes (along c) coalesce, each thread with 16
// loads in flight (a 32 x 32 tile, 4 a thread, moved ResNet-50's res3 input at 0.9 TB/s). An
// image whose planes are packed reads at p itself, without the division of p by w that any other
// strides need.
constexpr int kNhwcTile = 64;
template <MathMode M, typename S>
__global__ void __launch_bounds__(256)
    to_nhwc_kernel(int c, int dst_c, int h, int w, int64_t sn, int64_t sc, int64_t sh, int64_t sw,
                   bool packed_planes, const S* __restrict__ src, Bits<M>* __restrict__ dst) {
  using T = Bits<M>;
  // Rows padded by 4 bytes: the writes' column reads (lane = channel) hit distinct banks.
  constexpr int kPad = int(4 / sizeof(T));
  __shared__ T tile[kNhwcTile][kNhwcTile + kPad];
  const int hw = h * w, n = blockIdx.z;
  const int c0 = blockIdx.y * kNhwcTile, p0 = blockIdx.x * kNhwcTile;
  const S* s = src + n * sn;
#pragma unroll
  for (int j = threadIdx.y; j < kNhwcTile; j += 8)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int cc = c0 + j, p = p0 + threadIdx.x + 32 * half;
      if (cc < dst_c && p < hw) {
        const int64_t at = packed_planes ? p : (p / w) * sh + (p % w) * sw;
        tile[j][threadIdx.x + 32 * half] =
            to_bits<M>(cc < c ? load_as_float(s[cc * sc + at]) : 0.f);
      }
    }
  __syncthreads();
  T* d = dst + int64_t(n) * hw * dst_c;
#pragma unroll
  for (int j = threadIdx.y; j < kNhwcTile; j += 8)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int p = p0 + j, cc = c0 + threadIdx.x + 32 * half;
      if (cc < dst_c && p < hw) d[int64_t(p) * dst_c + cc] = tile[threadIdx.x + 32 * half][j];
    }
}

// to_nhwc_kernel for an image whose planes are packed (any channel and image strides that keep
// V-pixel alignment): each thread reads V pixels of a channel in one access (up to 16 bytes, the
// widest pack that divides the plane) and writes 16 bytes of channels of a pixel; rows padded
// by one value, so that the writes' reads down a column of 8 (or 4) channels hit distinct banks.
// The 2-byte accesses of to_nhwc_kernel moved bf16 tensors at 1.5 TB/s (ResNet-50's res3b,
// 51 MB in 35 us).
template <MathMode M, typename S, int V>
__global__ void __launch_bounds__(256)
    to_nhwc_packed_kernel(int c, int dst_c, int hw, int64_t sn, int64_t sc,
                          const S* __restrict__ src, Bits<M>* __restrict__ dst) {
  using T = Bits<M>;
  constexpr int kW = 16 / int(sizeof(T));  // channels a store
  constexpr int kRowLoads = kNhwcTile / V, kRowStores = kNhwcTile / kW;
  __shared__ T tile[kNhwcTile][kNhwcTile + 1];
  const int n = blockIdx.z;
  const int c0 = blockIdx.y * kNhwcTile, p0 = blockIdx.x * kNhwcTile;
  const S* s = src + n * sn;
#pragma unroll
  for (int k = 0; k < kNhwcTile * kRowLoads / 256; ++k) {
    const int i = threadIdx.x + 256 * k, ch = i / kRowLoads, px = i % kRowLoads * V;
    const int cc = c0 + ch, p = p0 + px;
    if (cc < dst_c && p < hw) {  // V divides hw: whole packs
      float v[V];
      if (cc < c) {
        load_pack<V>(s + cc * sc + p, v);
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e) v[e] = 0.f;
      }
#pragma unroll
      for (int e = 0; e < V; ++e) tile[ch][px + e] = to_bits<M>(v[e]);
    }
  }
  __syncthreads();
  T* d = dst + int64_t(n) * hw * dst_c;
#pragma unroll
  for (int k = 0; k < kNhwcTile * kRowStores / 256; ++k) {
    const int i = threadIdx.x + 256 * k, px = i / kRowStores, ch = i % kRowStores * kW;
    const int cc = c0 + ch, p = p0 + px;
    if (cc < dst_c && p < hw) {  // kW divides dst_c: whole packs
      Pack<kW, T> q;
#pragma unroll
      for (int e = 0; e < kW; ++e) q.v[e] = tile[ch + e][px];
      *reinterpret_cast<Pack<kW, T>*>(d + int64_t(p) * dst_c + cc) = q;
    }
  }
}

// to_nhwc for rows of at most two 16-byte packs (a first layer's 3 colour channels padded to 8):
// a thread per pack of a pixel reads its channels down the planes (adjacent threads, adjacent
// pixels: coalesced) and stores the pack once. to_nhwc_packed_kernel's 64 x 64 tiles would leave
// all but dst_c of each block's 64 channel rows idle there (CaffeNet's 256 x 3 x 227 x 227 input
// in 0.77 ms, a fifth of the copy rate).
template <MathMode M, typename S>
__global__ void __launch_bounds__(256)
    to_nhwc_narrow_kernel(int c, int dst_c, int w, int hw, int64_t sn, int64_t sc, int64_t sh,
                          int64_t sw, bool packed_planes, const S* __restrict__ src,
                          Bits<M>* __restrict__ dst) {
  using T = Bits<M>;
  constexpr int kW = 16 / int(sizeof(T));
  const int two = dst_c > kW;  // packs a pixel: 1 or 2
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= int64_t(hw) << two) return;
  const int p = int(i >> two), c0 = int(i & two) * kW;
  const int64_t at = packed_planes ? p : (p / w) * sh + (p % w) * sw;
  const S* s = src + blockIdx.z * sn + at;
  Pack<kW, T> q;
#pragma unroll
  for (int e = 0; e < kW; ++e)
    q.v[e] = to_bits<M>(c0 + e < c ? load_as_float(s[(c0 + e) * sc]) : 0.f);
  *reinterpret_cast<Pack<kW, T>*>(dst + (int64_t(blockIdx.z) * hw + p) * dst_c + c0) = q;
}

// Rounds tensor d at src (of d's storage type: f32, bf16 or f16) into an NHWC copy at dst of
// dst_c >= d.c channels a row (d.n below 65536: one grid layer an image; dst 16-byte aligned).
template <MathMode M>
void to_nhwc(cudaStream_t st, const TensorDesc& d, const void* src, Bits<M>* dst, int dst_c) {
  const dim3 grid((d.h * d.w + kNhwcTile - 1) / kNhwcTile, (dst_c + kNhwcTile - 1) / kNhwcTile,
                  d.n);
  const bool packed_planes = d.stride_w == 1 && d.stride_h == d.w;
  const int hw = d.h * d.w;
  visit_dtype(DTypes<float, bf16_t, f16_t>{}, d.dtype, "to_nhwc", Device::kCUDA, [&](auto tag) {
    using S = typename decltype(tag)::type;
    // The widest pack of pixels that every channel row's start keeps aligned.
    const int64_t e = sizeof(S);
    int v = 16 / int(e);
    while (v > 1 && (hw % v || !aligned(src, size_t(v * e)) || d.stride_c * e % (v * e) ||
                     d.stride_n * e % (v * e)))
      v /= 2;
    auto packed = [&](auto width) {
      to_nhwc_packed_kernel<M, S, decltype(width)::value><<<grid, 256, 0, st>>>(
          d.c, dst_c, hw, d.stride_n, d.stride_c, static_cast<const S*>(src), dst);
    };
    constexpr int kW = 16 / int(sizeof(Bits<M>));
    if (dst_c % kW == 0 && dst_c <= 2 * kW)
      to_nhwc_narrow_kernel<M, S>
          <<<dim3((int64_t(hw) * (dst_c / kW) + 255) / 256, 1, d.n), 256, 0, st>>>(
              d.c, dst_c, d.w, hw, d.stride_n, d.stride_c, d.stride_h, d.stride_w, packed_planes,
              static_cast<const S*>(src), dst);
    else if (!packed_planes || dst_c % kW)
      to_nhwc_kernel<M, S><<<grid, dim3(32, 8), 0, st>>>(
          d.c, dst_c, d.h, d.w, d.stride_n, d.stride_c, d.stride_h, d.stride_w, packed_planes,
          static_cast<const S*>(src), dst);
    else if (v == 1)
      packed(std::integral_constant<int, 1>{});
    else if (v == 2)
      packed(std::integral_constant<int, 2>{});
    else if (v == 4)
      packed(std::integral_constant<int, 4>{});
    else
      packed(std::integral_constant<int, 16 / int(sizeof(S))>{});
  });
  check_launch("to_nhwc_kernel");
}

// Whether tensor d at src already is the NHWC copy to_nhwc would make of it (dst_c channels,
// packed channels last, in the math's 16-bit type, 16-byte aligned), so that the kernels read it
// in place. TF32 copies round f32 values to TF32, so f32 tensors are always copied. Without src:
// what the descriptor allows (to size a workspace).
inline bool nhwc_in_place(MathMode m, const TensorDesc& d, int dst_c, const void* src = nullptr) {
  const DataType own = m == MathMode::kBF16 ? DataType::kBFloat16 : DataType::kFloat16;
  return m != MathMode::kTF32 && d.dtype == own && d.c == dst_c && d.is_packed_nhwc() &&
         (!src || aligned(src, 16));
}

// What the support rules and the split plans need of the current device, read once per device
// (conv_igemm_cuda.cu): the rules run at every convolution call. Zeros when there is no device.
struct DeviceFacts {
  int major = 0, minor = 0, sms = 0;
};
DeviceFacts current_device();

// The TMA kernels' channels a tap: `channels` padded with zeros to whole 128-byte k-tiles of
// `per_tile` values, or 0 where that would waste more than a quarter of every k-tile's
// multiplies (below that the cp.async kernels' 16-byte pieces waste less).
inline int tma_padded_channels(int channels, int per_tile) {
  const int padded = (channels + per_tile - 1) / per_tile * per_tile;
  return channels * 4 >= padded * 3 ? padded : 0;
}

// Whether TMA's im2col mode can walk base points (y * sy + oy, x * sx + ox) of a rows_h x
// rows_w plane over an h x w source, each pixel read up to (reach_h, reach_w) past its base:
// traversal strides up to 8, the plane's corners relative to the source's first and last
// points within [-128, 127], tap offsets below 128.
inline bool tma_im2col_fits(int h, int w, int rows_h, int rows_w, int sy, int sx, int oy, int ox,
                            int reach_h, int reach_w) {
  auto corner = [](int v) { return v >= -128 && v <= 127; };
  return sy <= 8 && sx <= 8 && reach_h <= 127 && reach_w <= 127 && corner(oy) && corner(ox) &&
         corner((rows_h - 1) * sy + oy - (h - 1)) && corner((rows_w - 1) * sx + ox - (w - 1));
}

// Lets Kernel use `bytes` of dynamic shared memory (past the default 48 KiB), once per device.
template <auto Kernel>
void allow_shared_memory(int bytes, const char* name) {
  static std::atomic<uint64_t> done{0};
  int dev = 0;
  check_cuda(cudaGetDevice(&dev), "cudaGetDevice");
  const uint64_t bit = uint64_t(1) << (dev & 63);
  if (done.load() & bit) return;
  check_cuda(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes),
             name);
  done |= bit;
}

}  // namespace crema::prim::cuda::igemm
