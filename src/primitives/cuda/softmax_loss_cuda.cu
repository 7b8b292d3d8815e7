// Softmax loss and accuracy on CUDA; the label rules come from softmax_ops.h, shared with the
// CPU. Both reduce in a fixed order (the loss in one block when small, else per block and then
// in one block): results do not depend on scheduling. Like the CPU they write nothing for an
// invalid label: the loss (every iteration) checks its labels on the GPU and reports a deferred
// error (handle.h), so the host never waits; accuracy, read by the host anyway, throws.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "primitives/common/dtype_visit.h"
#include "primitives/common/softmax_ops.h"
#include "primitives/cuda/cuda_util.cuh"
#include "primitives/softmax.h"

namespace crema::prim::cuda {
namespace {

// ---- labels: loss and accuracy ------------------------------------------------------------

// Blocks of the label reductions: enough to fill the GPU; each block leaves one partial.
constexpr int kLabelBlocks = 512;

// What the loss's label pass leaves in the workspace for the kernels after it (the host never
// reads it): the first invalid label's position (or ~0) and the valid count.
struct LabelScan {
  unsigned long long bad;
  long long valid;
};

// Block-wide reduction (kBlock threads) in a fixed order; every thread gets the result.
template <typename V, typename Op>
__device__ V block_reduce(V v, V* smem, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  if ((threadIdx.x & 31) == 0) smem[threadIdx.x / 32] = v;
  __syncthreads();
  V s = smem[0];
  for (int w = 1; w < kBlock / 32; ++w) s = op(s, smem[w]);
  __syncthreads();
  return s;
}
struct Add {
  template <typename V>
  __device__ V operator()(V a, V b) const {
    return a + b;
  }
};
struct Min {
  template <typename V>
  __device__ V operator()(V a, V b) const {
    return b < a ? b : a;
  }
};

// What a thread's share of the label positions holds: the sum of their loss terms (double, as
// the CPU), how many are valid, and the first invalid one (~0 when none).
struct LabelTotals {
  double sum = 0;
  long long valid = 0;
  unsigned long long bad = ~0ull;
};

template <typename T>
__device__ LabelTotals scan_labels(const SoftmaxLossDesc& ld, const T* prob, const T* label,
                                   int64_t first, int64_t step) {
  const int64_t C = ld.channels, I = ld.inner, positions = ld.outer * ld.inner;
  LabelTotals t;
  for (int64_t p = first; p < positions; p += step) {
    const int64_t k = softmax_ops::label_class(label[p], C, ld.has_ignore_label, ld.ignore_label);
    if (k == softmax_ops::kInvalid) {
      t.bad = min(t.bad, (unsigned long long)p);
    } else if (k >= 0) {
      t.sum += softmax_ops::loss_term(double(prob[(p / I) * C * I + k * I + p % I]));
      ++t.valid;
    }
  }
  return t;
}

// The totals of the whole scan, block-reduced: with an invalid label, records it in the
// handle's deferred error (unless an earlier error is still unreported) and returns false;
// else writes the normalized loss (when loss is not null) and returns true. One thread calls it.
template <typename T>
__device__ bool settle(const SoftmaxLossDesc& ld, const LabelTotals& t, const T* label,
                       DeferredErrorRecord* report, DeferredOp op, uint64_t tag, T* loss) {
  if (t.bad != ~0ull) {
    if (report->op == 0) {
      report->has_ignore = ld.has_ignore_label;
      report->ignore = ld.ignore_label;
      report->tag = tag;
      report->position = int64_t(t.bad);
      report->inner = ld.inner;
      report->channels = ld.channels;
      report->value = double(label[t.bad]);
      __threadfence_system();  // the fields before the flag the host tests
      report->op = op;
    }
    return false;
  }
  if (loss)
    loss[0] = T(t.sum / softmax_ops::normalizer(ld.normalization, ld.outer, ld.inner, t.valid));
  return true;
}

// a * b rounded once, never fused with a following add (the CPU multiplies, then subtracts).
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }

// dx = loss_weight / normalizer(valid) * (prob - onehot(label)) at j = first, first + step, ...;
// the scale is the host's formula, evaluated per thread.
template <typename T>
__device__ void write_dx(const SoftmaxLossDesc& ld, double loss_weight, long long valid,
                         const T* prob, const T* label, T* dx, int64_t first, int64_t step) {
  const int64_t C = ld.channels, I = ld.inner, n = ld.outer * C * I;
  const T scale =
      T(loss_weight / softmax_ops::normalizer(ld.normalization, ld.outer, ld.inner, valid));
  for (int64_t j = first; j < n; j += step) {
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

// Small problems (a classifier's batch of labels): the whole scan, the loss or dx, in one block.
// The most work one block takes: forward, positions; backward, values of dx.
constexpr int64_t kOneBlockLoss = 4096, kOneBlockLossBwd = 16384;

template <typename T>
__global__ void loss_one_block_kernel(SoftmaxLossDesc ld, const T* prob, const T* label,
                                      DeferredErrorRecord* report, DeferredOp op, uint64_t tag,
                                      T* loss, double loss_weight, T* dx) {
  __shared__ double ssum[kBlock / 32];
  __shared__ long long svalid[kBlock / 32];
  __shared__ unsigned long long sbad[kBlock / 32];
  __shared__ bool ok;
  LabelTotals t = scan_labels(ld, prob, label, threadIdx.x, blockDim.x);
  t.sum = block_reduce(t.sum, ssum, Add{});
  t.valid = block_reduce(t.valid, svalid, Add{});
  t.bad = block_reduce(t.bad, sbad, Min{});
  if (threadIdx.x == 0) ok = settle(ld, t, label, report, op, tag, loss);
  __syncthreads();
  if (ok && dx) write_dx(ld, loss_weight, t.valid, prob, label, dx, threadIdx.x, blockDim.x);
}

// Larger ones: per block, the sum of the loss terms and the valid count; the smallest invalid
// position goes to scan->bad.
template <typename T>
__global__ void loss_partial_kernel(SoftmaxLossDesc ld, const T* prob, const T* label,
                                    double* part_sum, long long* part_valid, LabelScan* scan) {
  __shared__ double ssum[kBlock / 32];
  __shared__ long long svalid[kBlock / 32];
  const LabelTotals t = scan_labels(ld, prob, label, int64_t(blockIdx.x) * blockDim.x + threadIdx.x,
                                    int64_t(gridDim.x) * blockDim.x);
  if (t.bad != ~0ull) atomicMin(&scan->bad, t.bad);
  const double sum = block_reduce(t.sum, ssum, Add{});
  const long long valid = block_reduce(t.valid, svalid, Add{});
  if (threadIdx.x == 0) {
    part_sum[blockIdx.x] = sum;
    part_valid[blockIdx.x] = valid;
  }
}

// One block: adds the partials in block order, then settles (the valid count goes to the scan
// for loss_bwd_kernel).
template <typename T>
__global__ void loss_final_kernel(SoftmaxLossDesc ld, int parts, const double* part_sum,
                                  const long long* part_valid, LabelScan* scan, const T* label,
                                  DeferredErrorRecord* report, DeferredOp op, uint64_t tag,
                                  T* loss) {
  __shared__ double ssum[kBlock / 32];
  __shared__ long long svalid[kBlock / 32];
  LabelTotals t;
  for (int i = threadIdx.x; i < parts; i += blockDim.x) {
    t.sum += part_sum[i];
    t.valid += part_valid[i];
  }
  t.sum = block_reduce(t.sum, ssum, Add{});
  t.valid = block_reduce(t.valid, svalid, Add{});
  if (threadIdx.x != 0) return;
  t.bad = scan->bad;
  if (settle(ld, t, label, report, op, tag, loss)) scan->valid = t.valid;
}

// dx from the scan: nothing when a label was invalid.
template <typename T>
__global__ void loss_bwd_kernel(SoftmaxLossDesc ld, double loss_weight, const LabelScan* scan,
                                const T* prob, const T* label, T* dx) {
  if (scan->bad != ~0ull) return;
  write_dx(ld, loss_weight, scan->valid, prob, label, dx,
           int64_t(blockIdx.x) * blockDim.x + threadIdx.x, int64_t(gridDim.x) * blockDim.x);
}

// Queues the loss (loss not null) or dx: one block for small problems, else the label pass of
// partials and their total, which leaves the scan (first invalid position, valid count) in the
// workspace for loss_bwd_kernel. Workspace: kLabelBlocks partials and the scan.
template <typename T>
void queue_loss(Handle& h, const SoftmaxLossDesc& ld, const T* prob, const T* label, T* loss,
                double loss_weight, T* dx) {
  const int64_t positions = ld.outer * ld.inner;
  const DeferredOp op = dx ? kSoftmaxLossBwd : kSoftmaxLossFwd;
  cudaStream_t s = stream_of(h);
  if (dx ? positions * ld.channels <= kOneBlockLossBwd : positions <= kOneBlockLoss) {
    loss_one_block_kernel<T><<<1, kBlock, 0, s>>>(ld, prob, label, h.deferred_error_record(), op,
                                                  h.error_tag(), loss, loss_weight, dx);
    check_launch("softmax_loss one block");
    return;
  }
  const int blocks = int(std::min<int64_t>(grid_for(positions), kLabelBlocks));
  char* ws = static_cast<char*>(
      h.workspace(kLabelBlocks * (sizeof(double) + sizeof(long long)) + sizeof(LabelScan)));
  double* part_sum = reinterpret_cast<double*>(ws);
  long long* part_valid = reinterpret_cast<long long*>(ws + kLabelBlocks * sizeof(double));
  LabelScan* scan =
      reinterpret_cast<LabelScan*>(ws + kLabelBlocks * (sizeof(double) + sizeof(long long)));
  check_cuda(cudaMemsetAsync(scan, 0xff, sizeof(LabelScan), s), "softmax_loss memset");
  loss_partial_kernel<T><<<blocks, kBlock, 0, s>>>(ld, prob, label, part_sum, part_valid, scan);
  check_launch("softmax_loss partial");
  loss_final_kernel<T><<<1, kBlock, 0, s>>>(ld, blocks, part_sum, part_valid, scan, label,
                                            h.deferred_error_record(), op, h.error_tag(), loss);
  check_launch("softmax_loss final");
  if (!dx) return;
  loss_bwd_kernel<T>
      <<<grid_for(positions * ld.channels), kBlock, 0, s>>>(ld, loss_weight, scan, prob, label, dx);
  check_launch("softmax_loss_bwd");
}

template <typename T>
void loss_fwd(Handle& h, const SoftmaxLossDesc& ld, const T* prob, const T* label, T* loss) {
  if (ld.outer * ld.inner == 0) {  // nothing to scan: loss 0 (all-zero bits), as the CPU
    check_cuda(cudaMemsetAsync(loss, 0, sizeof(T), stream_of(h)), "softmax_loss_fwd");
    return;
  }
  queue_loss<T>(h, ld, prob, label, loss, 0.0, nullptr);
}

template <typename T>
void loss_bwd(Handle& h, const SoftmaxLossDesc& ld, const T* prob, const T* label,
              double loss_weight, T* dx) {
  if (ld.outer * ld.channels * ld.inner == 0) return;
  queue_loss<T>(h, ld, prob, label, nullptr, loss_weight, dx);
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
  valid = block_reduce(valid, svalid, Add{});
  correct = block_reduce(correct, scorrect, Add{});
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
      const unsigned blocks = unsigned(std::min<int64_t>(grid_for(positions, kBlock / 32), 4096));
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
