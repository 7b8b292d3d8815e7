// Softmax, log-softmax, softmax loss and accuracy on CUDA; the label rules come from
// softmax_ops.h, shared with the CPU. Softmax has two kernel shapes, as on the CPU: inner == 1
// (classifier rows) gives each row a warp, or a 256-thread block when rows are long or too few to
// fill the GPU with warps (warp_rows), reducing with shuffles; inner > 1 gives each (outer, inner)
// position a thread that walks the channels, coalesced over inner. Numerically stable (max
// subtracted). Forward reads a row once when it fits in registers (up to 1024 channels on a block,
// 128 on a warp), else three times (max, sum, write; re-reads hit cache), and writes it once;
// backward likewise reads y and dy once or twice and writes dx. Loss and accuracy reduce per block,
// then in one block, in a fixed order: results do not depend on scheduling. Like the CPU they write
// nothing for an invalid label: the loss (every iteration) checks its labels on the GPU and reports
// a deferred error (handle.h), so the host never waits; accuracy, read by the host anyway, throws.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "primitives/cuda_util.cuh"
#include "primitives/dtype_visit.h"
#include "primitives/softmax.h"
#include "primitives/softmax_ops.h"

namespace crema::prim::cuda {
namespace {

// ---- softmax --------------------------------------------------------------------------------

// Rows of more channels than this get a whole block instead of a warp.
constexpr int64_t kWarpRowMax = 1024;

// Whether rows get a warp each (else a 256-thread block). A warp per row leaves most of the GPU
// idle when rows are few (a classifier batch: 256 rows of 1000 fill 32 blocks), so rows of 128
// channels and more take a block each unless there are enough rows for a warp each to fill it.
// Either way a row is read once (re-reads hit cache): 256 x 1000 f32 is 2 MB, under launch latency.
bool warp_rows(int64_t rows, int64_t channels) {
  return channels <= kWarpRowMax && (channels < 128 || rows >= 2048);
}

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

unsigned row_grid(int64_t rows, int rows_per_block) {
  const int64_t b = (rows + rows_per_block - 1) / rows_per_block;
  return unsigned(b < 1 ? 1 : b > 65536 ? 65536 : b);
}

// The row kernels' shape for sd (inner == 1): launch(TPR, resident, grid) with TPR 32 (a warp
// per row) or kBlock (warp_rows), and the resident form where a row fits one chunk.
template <typename Launch>
void by_rows(const SoftmaxDesc& sd, Launch launch) {
  auto with = [&](auto tpr) {
    constexpr int TPR = decltype(tpr)::value;
    const unsigned grid = row_grid(sd.outer, kBlock / TPR);
    if (resident<TPR>(sd.channels))
      launch(tpr, std::true_type{}, grid);
    else
      launch(tpr, std::false_type{}, grid);
  };
  if (warp_rows(sd.outer, sd.channels))
    with(std::integral_constant<int, 32>{});
  else
    with(std::integral_constant<int, kBlock>{});
}

template <typename T>
void fwd(Handle& h, const SoftmaxDesc& sd, const T* x, T* y, Blend b) {
  const T alpha = T(b.alpha), beta = T(b.beta);
  cudaStream_t s = stream_of(h);
  if (sd.inner == 1) {
    by_rows(sd, [&](auto tpr, auto res, unsigned grid) {
      fwd_rows_kernel<decltype(tpr)::value, decltype(res)::value, T>
          <<<grid, kBlock, 0, s>>>(sd.outer, sd.channels, sd.log, x, y, alpha, beta);
    });
  } else {
    const int64_t positions = sd.outer * sd.inner;
    fwd_spatial_kernel<T><<<grid_for(positions), kBlock, 0, s>>>(positions, sd.channels, sd.inner,
                                                                 sd.log, x, y, alpha, beta);
  }
  check_launch("softmax_fwd");
}

template <typename T>
void bwd(Handle& h, const SoftmaxDesc& sd, const T* y, const T* dy, T* dx, Blend b) {
  const T alpha = T(b.alpha), beta = T(b.beta);
  cudaStream_t s = stream_of(h);
  if (sd.inner == 1) {
    by_rows(sd, [&](auto tpr, auto res, unsigned grid) {
      bwd_rows_kernel<decltype(tpr)::value, decltype(res)::value, T>
          <<<grid, kBlock, 0, s>>>(sd.outer, sd.channels, sd.log, y, dy, dx, alpha, beta);
    });
  } else {
    const int64_t positions = sd.outer * sd.inner;
    bwd_spatial_kernel<T><<<grid_for(positions), kBlock, 0, s>>>(positions, sd.channels, sd.inner,
                                                                 sd.log, y, dy, dx, alpha, beta);
  }
  check_launch("softmax_bwd");
}

// ---- labels: loss and accuracy ------------------------------------------------------------

// Blocks of the label reductions: enough to fill the GPU; each block leaves one partial.
constexpr int kLabelBlocks = 512;

// What the loss's label pass leaves in the workspace for the kernels after it (the host never
// reads it): the first invalid label's position (or ~0) and the valid count.
struct LabelScan {
  unsigned long long bad;
  long long valid;
};

// Block-wide sum (kBlock threads) in a fixed order; every thread gets the result.
template <typename V>
__device__ V block_sum(V v, V* smem) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) smem[threadIdx.x / 32] = v;
  __syncthreads();
  V s = smem[0];
  for (int w = 1; w < kBlock / 32; ++w) s += smem[w];
  __syncthreads();
  return s;
}

// Per block: the sum of the loss terms (double, as the CPU) and the valid count; the smallest
// invalid position goes to scan->bad.
template <typename T>
__global__ void loss_partial_kernel(SoftmaxLossDesc ld, const T* prob, const T* label,
                                    double* part_sum, long long* part_valid, LabelScan* scan) {
  __shared__ double ssum[kBlock / 32];
  __shared__ long long svalid[kBlock / 32];
  const int64_t C = ld.channels, I = ld.inner, positions = ld.outer * ld.inner;
  double sum = 0;
  long long valid = 0;
  CREMA_CUDA_LOOP(p, positions) {
    const int64_t k = softmax_ops::label_class(label[p], C, ld.has_ignore_label, ld.ignore_label);
    if (k == softmax_ops::kInvalid) {
      atomicMin(&scan->bad, (unsigned long long)p);
    } else if (k >= 0) {
      sum += softmax_ops::loss_term(double(prob[(p / I) * C * I + k * I + p % I]));
      ++valid;
    }
  }
  sum = block_sum(sum, ssum);
  valid = block_sum(valid, svalid);
  if (threadIdx.x == 0) {
    part_sum[blockIdx.x] = sum;
    part_valid[blockIdx.x] = valid;
  }
}

// One block: adds the partials in block order. Valid labels: writes the valid count and, with
// loss, the normalized loss. An invalid one: records it in the handle's deferred error (unless
// an earlier error is still unreported) and writes nothing.
template <typename T>
__global__ void loss_final_kernel(SoftmaxLossDesc ld, int parts, const double* part_sum,
                                  const long long* part_valid, LabelScan* scan, const T* label,
                                  DeferredErrorRecord* report, DeferredOp op, uint64_t tag,
                                  T* loss) {
  __shared__ double ssum[kBlock / 32];
  __shared__ long long svalid[kBlock / 32];
  double sum = 0;
  long long valid = 0;
  for (int i = threadIdx.x; i < parts; i += blockDim.x) {
    sum += part_sum[i];
    valid += part_valid[i];
  }
  sum = block_sum(sum, ssum);
  valid = block_sum(valid, svalid);
  if (threadIdx.x != 0) return;
  const unsigned long long bad = scan->bad;
  if (bad != ~0ull) {
    if (report->op == 0) {
      report->has_ignore = ld.has_ignore_label;
      report->ignore = ld.ignore_label;
      report->tag = tag;
      report->position = int64_t(bad);
      report->inner = ld.inner;
      report->channels = ld.channels;
      report->value = double(label[bad]);
      __threadfence_system();  // the fields before the flag the host tests
      report->op = op;
    }
    return;
  }
  scan->valid = valid;
  if (loss) loss[0] = T(sum / softmax_ops::normalizer(ld.normalization, ld.outer, ld.inner, valid));
}

// The label pass of the loss: partials, then their total, leaving the scan (first invalid
// position, valid count) in the workspace for the kernels that follow. Workspace: kLabelBlocks
// partials and the scan.
template <typename T>
LabelScan* scan_loss_labels(Handle& h, const SoftmaxLossDesc& ld, const T* prob, const T* label,
                            DeferredOp op, T* loss) {
  const int64_t positions = ld.outer * ld.inner;
  const int blocks = int(std::min<int64_t>(grid_for(positions), kLabelBlocks));
  char* ws = static_cast<char*>(
      h.workspace(kLabelBlocks * (sizeof(double) + sizeof(long long)) + sizeof(LabelScan)));
  double* part_sum = reinterpret_cast<double*>(ws);
  long long* part_valid = reinterpret_cast<long long*>(ws + kLabelBlocks * sizeof(double));
  LabelScan* scan =
      reinterpret_cast<LabelScan*>(ws + kLabelBlocks * (sizeof(double) + sizeof(long long)));
  cudaStream_t s = stream_of(h);
  check_cuda(cudaMemsetAsync(scan, 0xff, sizeof(LabelScan), s), "softmax_loss memset");
  loss_partial_kernel<T><<<blocks, kBlock, 0, s>>>(ld, prob, label, part_sum, part_valid, scan);
  check_launch("softmax_loss partial");
  loss_final_kernel<T><<<1, kBlock, 0, s>>>(ld, blocks, part_sum, part_valid, scan, label,
                                            h.deferred_error_record(), op, h.error_tag(), loss);
  check_launch("softmax_loss final");
  return scan;
}

template <typename T>
void loss_fwd(Handle& h, const SoftmaxLossDesc& ld, const T* prob, const T* label, T* loss) {
  if (ld.outer * ld.inner == 0) {  // nothing to scan: loss 0 (all-zero bits), as the CPU
    check_cuda(cudaMemsetAsync(loss, 0, sizeof(T), stream_of(h)), "softmax_loss_fwd");
    return;
  }
  scan_loss_labels(h, ld, prob, label, kSoftmaxLossFwd, loss);
}

// a * b rounded once, never fused with a following add (the CPU multiplies, then subtracts).
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }

// dx from the scan: nothing when a label was invalid, else loss_weight / normalizer(valid) *
// (prob - onehot(label)); the scale is the host's formula, evaluated per thread.
template <typename T>
__global__ void loss_bwd_kernel(SoftmaxLossDesc ld, double loss_weight, const LabelScan* scan,
                                const T* prob, const T* label, T* dx) {
  if (scan->bad != ~0ull) return;
  const int64_t C = ld.channels, I = ld.inner, n = ld.outer * C * I;
  const T scale =
      T(loss_weight / softmax_ops::normalizer(ld.normalization, ld.outer, ld.inner, scan->valid));
  CREMA_CUDA_LOOP(j, n) {
    const int64_t o = j / (C * I), rem = j - o * C * I, c = rem / I;
    const T l = label[o * I + (rem - c * I)];
    T v = T(0);
    if (!(ld.has_ignore_label && l == T(ld.ignore_label))) {
      v = mul_rn(scale, prob[j]);
      if (c == int64_t(l)) v -= scale;
    }
    dx[j] = v;
  }
}

template <typename T>
void loss_bwd(Handle& h, const SoftmaxLossDesc& ld, const T* prob, const T* label,
              double loss_weight, T* dx) {
  const int64_t n = ld.outer * ld.channels * ld.inner;
  if (n == 0) return;
  const LabelScan* scan = scan_loss_labels<T>(h, ld, prob, label, kSoftmaxLossBwd, nullptr);
  loss_bwd_kernel<T>
      <<<grid_for(n), kBlock, 0, stream_of(h)>>>(ld, loss_weight, scan, prob, label, dx);
  check_launch("softmax_loss_bwd");
}

// Throws the CPU's error for the invalid label at position bad, reading its value back.
template <typename T>
[[noreturn]] void throw_label(Handle& h, const char* op, const T* label, unsigned long long bad,
                              int64_t inner, int64_t channels, bool has_ignore, int ignore) {
  T v;
  check_cuda(cudaMemcpyAsync(&v, label + bad, sizeof(T), cudaMemcpyDeviceToHost, stream_of(h)), op);
  wait_for_stream(h, op);
  softmax_ops::throw_bad_label(op, double(v), int64_t(bad), inner, channels, has_ignore, ignore);
}

// Accuracy counters in the workspace: integers, so atomic adds are exact and order-free.
struct AccCounts {
  unsigned long long bad, valid, correct;
};

// One warp per position (rows of contiguous channels, inner == 1) or one thread per position
// (inner > 1, coalesced over inner): counts the classes scoring at least the label's score.
template <bool kWarp, typename T>
__global__ void accuracy_kernel(AccuracyDesc ad, const T* scores, const T* label, AccCounts* cnt,
                                unsigned long long* seen, unsigned long long* hit) {
  __shared__ unsigned long long svalid[kBlock / 32], scorrect[kBlock / 32];
  const int64_t C = ad.channels, I = ad.inner, positions = ad.outer * ad.inner;
  const int lane = threadIdx.x & 31;
  const int per_block = kWarp ? kBlock / 32 : kBlock;
  unsigned long long valid = 0, correct = 0;
  // The loop bound is uniform per warp in the warp form, so its shuffles see all lanes.
  const int64_t first = int64_t(blockIdx.x) * per_block + (kWarp ? threadIdx.x / 32 : threadIdx.x);
  const int64_t step = int64_t(gridDim.x) * per_block;
  for (int64_t p = first; p < positions; p += step) {
    const int64_t k = softmax_ops::label_class(label[p], C, ad.has_ignore_label, ad.ignore_label);
    if (k == softmax_ops::kIgnored) continue;
    if (k == softmax_ops::kInvalid) {
      if (!kWarp || lane == 0) atomicMin(&cnt->bad, (unsigned long long)p);
      continue;
    }
    const T* col = scores + (p / I) * C * I + p % I;
    const T ref = col[k * I];
    int64_t at_least = 0;
    if (kWarp) {
      for (int64_t c = lane; c < C; c += 32) at_least += col[c] >= ref;
      for (int o = 16; o > 0; o >>= 1) at_least += __shfl_xor_sync(0xffffffffu, at_least, o);
    } else {
      for (int64_t c = 0; c < C && softmax_ops::in_top_k(at_least, ad.top_k); ++c)
        at_least += col[c * I] >= ref;
    }
    if (kWarp && lane != 0) continue;
    const bool ok = softmax_ops::label_correct(at_least, ad.top_k);
    ++valid;
    correct += ok;
    if (seen) {
      atomicAdd(seen + k, 1ull);
      if (ok) atomicAdd(hit + k, 1ull);
    }
  }
  valid = block_sum(valid, svalid);
  correct = block_sum(correct, scorrect);
  if (threadIdx.x == 0 && valid) {
    atomicAdd(&cnt->valid, valid);
    atomicAdd(&cnt->correct, correct);
  }
}

template <typename T>
__global__ void accuracy_final_kernel(int64_t C, const AccCounts* cnt,
                                      const unsigned long long* seen, const unsigned long long* hit,
                                      T* acc, T* per_class) {
  if (blockIdx.x == 0 && threadIdx.x == 0)
    acc[0] = cnt->valid ? T(double(cnt->correct) / double(cnt->valid)) : T(0);
  if (!per_class) return;
  CREMA_CUDA_LOOP(c, C)
  per_class[c] = seen[c] ? T(double(hit[c]) / double(seen[c])) : T(0);
}

template <typename T>
void accuracy(Handle& h, const AccuracyDesc& ad, const T* scores, const T* label, T* acc,
              T* per_class) {
  const int64_t C = ad.channels, positions = ad.outer * ad.inner;
  cudaStream_t s = stream_of(h);
  const size_t bytes = sizeof(AccCounts) + (per_class ? 2 * size_t(C) : 0) * sizeof(long long);
  char* ws = static_cast<char*>(h.workspace(bytes));
  AccCounts* cnt = reinterpret_cast<AccCounts*>(ws);
  unsigned long long* seen =
      per_class ? reinterpret_cast<unsigned long long*>(ws + sizeof(AccCounts)) : nullptr;
  unsigned long long* hit = per_class ? seen + C : nullptr;
  check_cuda(cudaMemsetAsync(ws, 0, bytes, s), "accuracy_fwd memset");
  check_cuda(cudaMemsetAsync(&cnt->bad, 0xff, sizeof(cnt->bad), s), "accuracy_fwd memset");
  if (positions > 0) {
    if (ad.inner == 1) {
      const unsigned blocks = unsigned(std::min<int64_t>(row_grid(positions, kBlock / 32), 4096));
      accuracy_kernel<true, T><<<blocks, kBlock, 0, s>>>(ad, scores, label, cnt, seen, hit);
    } else {
      const unsigned blocks = unsigned(std::min<int64_t>(grid_for(positions), 4096));
      accuracy_kernel<false, T><<<blocks, kBlock, 0, s>>>(ad, scores, label, cnt, seen, hit);
    }
    check_launch("accuracy_fwd");
    unsigned long long bad;
    check_cuda(cudaMemcpyAsync(&bad, &cnt->bad, sizeof(bad), cudaMemcpyDeviceToHost, s),
               "accuracy_fwd copy");
    wait_for_stream(h, "accuracy_fwd sync");
    if (bad != ~0ull)
      throw_label(h, "accuracy_fwd", label, bad, ad.inner, C, ad.has_ignore_label, ad.ignore_label);
  }
  accuracy_final_kernel<T>
      <<<per_class ? grid_for(C) : 1, kBlock, 0, s>>>(C, cnt, seen, hit, acc, per_class);
  check_launch("accuracy_fwd final");
}

}  // namespace

void softmax_fwd(Handle& h, const SoftmaxDesc& sd, const void* x, void* y, Blend blend) {
  visit_dtype(kFloatTypes, sd.dtype, "softmax_fwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fwd(h, sd, static_cast<const T*>(x), static_cast<T*>(y), blend);
  });
}

void softmax_bwd(Handle& h, const SoftmaxDesc& sd, const void* y, const void* dy, void* dx,
                 Blend blend) {
  visit_dtype(kFloatTypes, sd.dtype, "softmax_bwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    bwd(h, sd, static_cast<const T*>(y), static_cast<const T*>(dy), static_cast<T*>(dx), blend);
  });
}

void softmax_loss_fwd(Handle& h, const SoftmaxLossDesc& ld, const void* prob, const void* label,
                      void* loss) {
  visit_dtype(kFloatTypes, ld.dtype, "softmax_loss_fwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    loss_fwd(h, ld, static_cast<const T*>(prob), static_cast<const T*>(label),
             static_cast<T*>(loss));
  });
}

void softmax_loss_bwd(Handle& h, const SoftmaxLossDesc& ld, const void* prob, const void* label,
                      double loss_weight, void* dx) {
  visit_dtype(kFloatTypes, ld.dtype, "softmax_loss_bwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    loss_bwd(h, ld, static_cast<const T*>(prob), static_cast<const T*>(label), loss_weight,
             static_cast<T*>(dx));
  });
}

void accuracy_fwd(Handle& h, const AccuracyDesc& ad, const void* scores, const void* label,
                  void* accuracy_out, void* per_class) {
  visit_dtype(kFloatTypes, ad.dtype, "accuracy_fwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    accuracy(h, ad, static_cast<const T*>(scores), static_cast<const T*>(label),
             static_cast<T*>(accuracy_out), static_cast<T*>(per_class));
  });
}

}  // namespace crema::prim::cuda
