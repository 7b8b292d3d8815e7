// Softmax and log-softmax on CUDA: three rows of softmax's table (softmax_impl.h). inner == 1
// (classifier rows) gives each row a warp ("warp_rows"), or a 256-thread block when rows are long
// or too few to fill the GPU with warps ("block_rows"), reducing with shuffles; "spatial" gives
// each (outer, inner) position a thread that walks the channels, coalesced over inner.
// Numerically stable (max subtracted). Forward reads a row once when it fits in registers (up to
// 1024 channels on a block, 128 on a warp), else three times (max, sum, write; re-reads hit cache),
// and writes it once; backward likewise reads y and dy once or twice and writes dx. Loss and
// accuracy: softmax_loss_cuda.cu.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "primitives/common/dtype_visit.h"
#include "primitives/common/softmax_impl.h"
#include "primitives/cuda/cuda_util.cuh"

namespace crema::prim::cuda {
namespace {

// ---- softmax --------------------------------------------------------------------------------

// Rows of more channels than this get a whole block instead of a warp.
constexpr int64_t kWarpRowMax = 1024;

template <typename T>
struct MaxOp {
  __device__ T operator()(T a, T b) const { return a > b ? a : b; }
};
template <typename T>
struct SumOp {
  __device__ T operator()(T a, T b) const { return a + b; }
};

// Combines v over the TPR threads of one row (TPR 32: a warp; else the whole block, which then
// must call this uniformly). Every thread gets the same result: the warps leave their partials in
// smem (one value per warp), and after the one barrier every warp reads all of them and combines
// them in the same butterfly order. A second barrier to guard smem's reuse would add a block-wide
// wait to every reduction, so callers alternate two buffers instead: a buffer is written again
// only after a barrier that every reader of its last value has passed.
template <int TPR, typename T, typename Op>
__device__ __forceinline__ T row_reduce(T v, Op op, T* smem) {
  static_assert(TPR == 32 || (TPR % 32 == 0 && TPR <= 1024 && (TPR & (TPR - 1)) == 0));
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  if constexpr (TPR > 32) {
    constexpr int kWarps = TPR / 32;
    const int lane = threadIdx.x & 31;
    if (lane == 0) smem[threadIdx.x / 32] = v;
    __syncthreads();
    v = smem[lane % kWarps];
    for (int o = kWarps / 2; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  }
  return v;
}

// A thread's channels of a row are c = t, t + TPR, ...; the passes below take them kChunk at a
// time, loading a chunk's elements into registers before using any, so that a chunk's loads are
// in flight together. A loop of one load per step waited on memory once per element: four round
// trips for a 1000-class row on a 256-thread block (caffenet:prob forward 4.1 us against 2.5 for
// a copy of its bytes). The first chunk stays in registers through all passes. Rows of at most
// TPR * kChunk channels (kResident: a 1000-class row on a block) are the first chunk alone: read
// once, with no loop code at all. A 128 x 1000 forward (googlenet:prob) is 128 blocks, one row
// each, so its time is one row's critical path: re-reading the chunk from L1 for each pass and a
// second barrier per reduction cost it 0.5 of 3.2 us, and even the untaken loops 0.1.
constexpr int kChunk = 4;

template <int TPR, typename T>
__device__ __forceinline__ void load_chunk(const T* p, int64_t c0, int64_t C, T pad,
                                           T (&v)[kChunk]) {
#pragma unroll
  for (int k = 0; k < kChunk; ++k) {
    const int64_t c = c0 + int64_t(k) * TPR;
    v[k] = c < C ? p[c] : pad;
  }
}

template <int TPR>
bool resident(int64_t C) {
  return C <= int64_t(TPR) * kChunk;
}

// y may alias x: every read of the row happens before the reductions complete, and the final
// pass reads and writes the same index in the same thread. Padding is -inf, so that exp gives 0
// for it under any finite maximum, without a test.
template <int TPR, bool kResident, typename T>
__global__ void fwd_rows_kernel(int64_t rows, int64_t C, bool log, const T* x, T* y, T alpha,
                                T beta) {
  __shared__ T smem[2][kBlock / 32];  // the max's and the sum's reductions (row_reduce)
  constexpr int kRowsPerBlock = kBlock / TPR;
  constexpr int64_t kStep = int64_t(TPR) * kChunk;
  const int t = threadIdx.x % TPR;
  const T pad = -std::numeric_limits<T>::infinity();
  for (int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / TPR; row < rows;
       row += int64_t(gridDim.x) * kRowsPerBlock) {
    const T* xs = x + row * C;
    T* ys = y + row * C;
    T first[kChunk], e[kChunk], v[kChunk];
    load_chunk<TPR>(xs, t, C, pad, first);
    T m = first[0];
#pragma unroll
    for (int k = 1; k < kChunk; ++k) m = first[k] > m ? first[k] : m;
    for (int64_t c0 = t + kStep; !kResident && c0 < C; c0 += kStep) {
      load_chunk<TPR>(xs, c0, C, pad, v);
#pragma unroll
      for (int k = 0; k < kChunk; ++k) m = v[k] > m ? v[k] : m;
    }
    m = row_reduce<TPR>(m, MaxOp<T>{}, smem[0]);
    T s = T(0);
#pragma unroll
    for (int k = 0; k < kChunk; ++k) s += e[k] = std::exp(first[k] - m);
    for (int64_t c0 = t + kStep; !kResident && c0 < C; c0 += kStep) {
      load_chunk<TPR>(xs, c0, C, pad, v);
#pragma unroll
      for (int k = 0; k < kChunk; ++k) s += std::exp(v[k] - m);
    }
    s = row_reduce<TPR>(s, SumOp<T>{}, smem[1]);
    const T ls = log ? std::log(s) : T(0), inv = T(1) / s;
#pragma unroll
    for (int k = 0; k < kChunk; ++k)
      if (t + int64_t(k) * TPR < C)
        blend_store(ys + t + k * TPR, log ? (first[k] - m) - ls : e[k] * inv, alpha, beta);
    for (int64_t c0 = t + kStep; !kResident && c0 < C; c0 += kStep) {
      load_chunk<TPR>(xs, c0, C, pad, v);
#pragma unroll
      for (int k = 0; k < kChunk; ++k) {
        const int64_t c = c0 + int64_t(k) * TPR;
        if (c < C)
          blend_store(ys + c, log ? (v[k] - m) - ls : std::exp(v[k] - m) * inv, alpha, beta);
      }
    }
  }
}

// One thread per (outer, inner) position, channels in order as on the CPU.
template <typename T>
__global__ void fwd_spatial_kernel(int64_t positions, int64_t C, int64_t I, bool log, const T* x,
                                   T* y, T alpha, T beta) {
  CREMA_CUDA_LOOP(pos, positions) {
    const int64_t o = pos / I, i = pos - o * I;
    const T* xs = x + o * C * I + i;
    T* ys = y + o * C * I + i;
    T m = xs[0];
    for (int64_t c = 1; c < C; ++c) m = xs[c * I] > m ? xs[c * I] : m;
    T s = T(0);
    for (int64_t c = 0; c < C; ++c) s += std::exp(xs[c * I] - m);
    if (log) {
      const T ls = std::log(s);
      for (int64_t c = 0; c < C; ++c) blend_store(ys + c * I, (xs[c * I] - m) - ls, alpha, beta);
    } else {
      const T inv = T(1) / s;
      for (int64_t c = 0; c < C; ++c)
        blend_store(ys + c * I, std::exp(xs[c * I] - m) * inv, alpha, beta);
    }
  }
}

// dx may alias dy, as in forward. The first chunk of y and dy stays in registers, as there;
// padding is zero in both, so padded terms add nothing.
template <int TPR, bool kResident, typename T>
__global__ void bwd_rows_kernel(int64_t rows, int64_t C, bool log, const T* y, const T* dy, T* dx,
                                T alpha, T beta) {
  __shared__ T smem[2][kBlock / 32];  // alternate rows' reductions (row_reduce)
  constexpr int kRowsPerBlock = kBlock / TPR;
  constexpr int64_t kStep = int64_t(TPR) * kChunk;
  const int t = threadIdx.x % TPR;
  int parity = 0;
  for (int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / TPR; row < rows;
       row += int64_t(gridDim.x) * kRowsPerBlock, parity ^= 1) {
    const T* ys = y + row * C;
    const T* gs = dy + row * C;
    T* out = dx + row * C;
    T y0[kChunk], g0[kChunk], yv[kChunk], gv[kChunk];
    load_chunk<TPR>(gs, t, C, T(0), g0);
    load_chunk<TPR>(ys, t, C, T(0), y0);
    T s = T(0);
#pragma unroll
    for (int k = 0; k < kChunk; ++k) s += log ? g0[k] : g0[k] * y0[k];
    for (int64_t c0 = t + kStep; !kResident && c0 < C; c0 += kStep) {
      load_chunk<TPR>(gs, c0, C, T(0), gv);
      if (!log) load_chunk<TPR>(ys, c0, C, T(0), yv);
#pragma unroll
      for (int k = 0; k < kChunk; ++k) s += log ? gv[k] : gv[k] * yv[k];
    }
    s = row_reduce<TPR>(s, SumOp<T>{}, smem[parity]);
    auto store = [&](int64_t c0, const T(&yw)[kChunk], const T(&gw)[kChunk]) {
#pragma unroll
      for (int k = 0; k < kChunk; ++k) {
        const int64_t c = c0 + int64_t(k) * TPR;
        if (c < C)
          blend_store(out + c, log ? gw[k] - std::exp(yw[k]) * s : yw[k] * (gw[k] - s), alpha,
                      beta);
      }
    };
    store(t, y0, g0);
    for (int64_t c0 = t + kStep; !kResident && c0 < C; c0 += kStep) {
      load_chunk<TPR>(gs, c0, C, T(0), gv);
      load_chunk<TPR>(ys, c0, C, T(0), yv);
      store(c0, yv, gv);
    }
  }
}

template <typename T>
__global__ void bwd_spatial_kernel(int64_t positions, int64_t C, int64_t I, bool log, const T* y,
                                   const T* dy, T* dx, T alpha, T beta) {
  CREMA_CUDA_LOOP(pos, positions) {
    const int64_t o = pos / I, i = pos - o * I;
    const int64_t base = o * C * I + i;
    T s = T(0);
    for (int64_t c = 0; c < C; ++c) {
      const int64_t j = base + c * I;
      s += log ? dy[j] : dy[j] * y[j];
    }
    for (int64_t c = 0; c < C; ++c) {
      const int64_t j = base + c * I;
      const T v = log ? dy[j] - std::exp(y[j]) * s : y[j] * (dy[j] - s);
      blend_store(dx + j, v, alpha, beta);
    }
  }
}

// ---- the rows -------------------------------------------------------------------------------

// Rows of 128 channels and more take a block each unless there are enough rows for a warp each
// to fill the GPU: a warp per row leaves most of it idle when rows are few (a classifier batch:
// 256 rows of 1000 fill 32 blocks).
const char* warp_rows_unsupported(const SoftmaxArgs& a) {
  if (const char* why = softmax_rows_only(a)) return why;
  return a.sd.channels > kWarpRowMax ? "rows of more than 1024 channels" : nullptr;
}

const char* warp_rows_slower(const SoftmaxArgs& a) {
  return a.sd.channels >= 128 && a.sd.outer < 2048 ? "rows of 128+ channels, under 2048 rows"
                                                   : nullptr;
}

// Runs f(T tag, alpha, beta) for a's data type, then checks the launch.
template <typename F>
void typed(const SoftmaxArgs& a, F&& f) {
  const char* op = a.forward ? "softmax_fwd" : "softmax_bwd";
  visit_dtype(kFloatTypes, a.sd.dtype, op, Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    f(tag, T(a.blend.alpha), T(a.blend.beta));
  });
  check_launch(op);
}

// A row kernel with TPR threads per row (32: a warp; kBlock: a block), resident where a row fits
// one chunk.
template <int TPR>
void run_rows(Handle& h, const SoftmaxArgs& a) {
  const SoftmaxDesc& sd = a.sd;
  const unsigned grid = grid_for(sd.outer, kBlock / TPR);
  cudaStream_t s = stream_of(h);
  typed(a, [&](auto tag, auto alpha, auto beta) {
    using T = typename decltype(tag)::type;
    const T* in = static_cast<const T*>(a.in);
    T* out = static_cast<T*>(a.out);
    auto launch = [&](auto res) {
      constexpr bool R = decltype(res)::value;
      if (a.forward)
        fwd_rows_kernel<TPR, R, T>
            <<<grid, kBlock, 0, s>>>(sd.outer, sd.channels, sd.log, in, out, alpha, beta);
      else
        bwd_rows_kernel<TPR, R, T><<<grid, kBlock, 0, s>>>(
            sd.outer, sd.channels, sd.log, in, static_cast<const T*>(a.dy), out, alpha, beta);
    };
    if (resident<TPR>(sd.channels))
      launch(std::true_type{});
    else
      launch(std::false_type{});
  });
}

void run_spatial(Handle& h, const SoftmaxArgs& a) {
  const SoftmaxDesc& sd = a.sd;
  const int64_t positions = sd.outer * sd.inner;
  cudaStream_t s = stream_of(h);
  typed(a, [&](auto tag, auto alpha, auto beta) {
    using T = typename decltype(tag)::type;
    const T* in = static_cast<const T*>(a.in);
    T* out = static_cast<T*>(a.out);
    if (a.forward)
      fwd_spatial_kernel<T><<<grid_for(positions), kBlock, 0, s>>>(positions, sd.channels, sd.inner,
                                                                   sd.log, in, out, alpha, beta);
    else
      bwd_spatial_kernel<T>
          <<<grid_for(positions), kBlock, 0, s>>>(positions, sd.channels, sd.inner, sd.log, in,
                                                  static_cast<const T*>(a.dy), out, alpha, beta);
  });
}

}  // namespace

const SoftmaxImpl kSoftmaxWarpRows{SoftmaxAlgo::kWarpRows, Device::kCUDA, warp_rows_unsupported,
                                   warp_rows_slower, run_rows<32>};
const SoftmaxImpl kSoftmaxBlockRows{SoftmaxAlgo::kBlockRows, Device::kCUDA, softmax_rows_only,
                                    nullptr, run_rows<kBlock>};
const SoftmaxImpl kSoftmaxSpatial{SoftmaxAlgo::kSpatial, Device::kCUDA, nullptr,
                                  softmax_spatial_slower, run_spatial};

}  // namespace crema::prim::cuda
