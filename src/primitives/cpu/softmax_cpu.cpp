// Softmax, log-softmax, softmax loss and accuracy on the CPU. Softmax has two rows (loop shapes):
// "rows" (inner == 1: classifier rows, contiguous channels) reduces along a row; "spatial" keeps
// one running value per inner position so every loop walks contiguous memory and vectorizes.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "primitives/common/dtype_visit.h"
#include "primitives/common/softmax_impl.h"
#include "primitives/common/softmax_ops.h"
#include "primitives/cpu/cpu_blend.h"

namespace crema::prim::cpu {
namespace {

// Every output is computed only after all reductions over its inputs, and from the same index
// of the input, so y may alias x (in-place softmax) and dx may alias dy.
template <typename T>
void fwd_rows(const SoftmaxDesc& sd, const T* x, T* y, T* e, Blend blend) {
  const int64_t C = sd.channels;
  for (int64_t o = 0; o < sd.outer; ++o) {
    const T* xs = x + o * C;
    T* ys = y + o * C;
    T m = xs[0];
    for (int64_t c = 1; c < C; ++c) m = std::max(m, xs[c]);
    T s = 0;
    if (sd.log) {
      for (int64_t c = 0; c < C; ++c) s += std::exp(xs[c] - m);
      // (x - max) is exact for nearby values; folding max into log-sum-exp first would round
      // it to the input's magnitude and lose the small result's digits.
      const T ls = std::log(s);
      blend_row(C, blend, ys, [=](int64_t c) { return (xs[c] - m) - ls; });
    } else {
      for (int64_t c = 0; c < C; ++c) {
        e[c] = std::exp(xs[c] - m);
        s += e[c];
      }
      const T inv = T(1) / s;
      blend_row(C, blend, ys, [=](int64_t c) { return e[c] * inv; });
    }
  }
}

template <typename T>
void fwd_spatial(const SoftmaxDesc& sd, const T* x, T* y, T* e, T* mx, T* sum, Blend blend) {
  const int64_t C = sd.channels, I = sd.inner;
  for (int64_t o = 0; o < sd.outer; ++o) {
    const T* xs = x + o * C * I;
    T* ys = y + o * C * I;
    std::copy(xs, xs + I, mx);
    for (int64_t c = 1; c < C; ++c)
      for (int64_t i = 0; i < I; ++i) mx[i] = std::max(mx[i], xs[c * I + i]);
    std::fill(sum, sum + I, T(0));
    if (sd.log) {
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < I; ++i) sum[i] += std::exp(xs[c * I + i] - mx[i]);
      for (int64_t i = 0; i < I; ++i) sum[i] = std::log(sum[i]);
      for (int64_t c = 0; c < C; ++c) {
        const T* xc = xs + c * I;
        blend_row(I, blend, ys + c * I, [=](int64_t i) { return (xc[i] - mx[i]) - sum[i]; });
      }
    } else {
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < I; ++i) {
          e[c * I + i] = std::exp(xs[c * I + i] - mx[i]);
          sum[i] += e[c * I + i];
        }
      for (int64_t i = 0; i < I; ++i) sum[i] = T(1) / sum[i];
      for (int64_t c = 0; c < C; ++c) {
        const T* ec = e + c * I;
        blend_row(I, blend, ys + c * I, [=](int64_t i) { return ec[i] * sum[i]; });
      }
    }
  }
}

template <typename T>
void bwd_rows(const SoftmaxDesc& sd, const T* y, const T* dy, T* dx, Blend blend) {
  const int64_t C = sd.channels;
  for (int64_t o = 0; o < sd.outer; ++o) {
    const T* ys = y + o * C;
    const T* gs = dy + o * C;
    T s = 0;
    if (sd.log) {
      for (int64_t c = 0; c < C; ++c) s += gs[c];
      blend_row(C, blend, dx + o * C, [=](int64_t c) { return gs[c] - std::exp(ys[c]) * s; });
    } else {
      for (int64_t c = 0; c < C; ++c) s += gs[c] * ys[c];
      blend_row(C, blend, dx + o * C, [=](int64_t c) { return ys[c] * (gs[c] - s); });
    }
  }
}

// d = sum_c dy_c * y_c (softmax) or sum_c dy_c (log-softmax), one per inner position.
template <typename T>
void bwd_spatial(const SoftmaxDesc& sd, const T* y, const T* dy, T* dx, T* d, Blend blend) {
  const int64_t C = sd.channels, I = sd.inner;
  for (int64_t o = 0; o < sd.outer; ++o) {
    const T* ys = y + o * C * I;
    const T* gs = dy + o * C * I;
    T* out = dx + o * C * I;
    std::fill(d, d + I, T(0));
    if (sd.log) {
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < I; ++i) d[i] += gs[c * I + i];
    } else {
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < I; ++i) d[i] += gs[c * I + i] * ys[c * I + i];
    }
    for (int64_t c = 0; c < C; ++c) {
      const T* yc = ys + c * I;
      const T* gc = gs + c * I;
      if (sd.log)
        blend_row(I, blend, out + c * I, [=](int64_t i) { return gc[i] - std::exp(yc[i]) * d[i]; });
      else
        blend_row(I, blend, out + c * I, [=](int64_t i) { return yc[i] * (gc[i] - d[i]); });
    }
  }
}

// Runs f(T tag) for a's data type.
template <typename F>
void typed(const SoftmaxArgs& a, F&& f) {
  visit_dtype(kFloatTypes, a.sd.dtype, a.forward ? "softmax_fwd" : "softmax_bwd", Device::kCPU,
              [&](auto tag) { f(tag); });
}

void run_rows(Handle& h, const SoftmaxArgs& a) {
  typed(a, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const SoftmaxDesc& sd = a.sd;
    if (a.forward) {
      // Scratch: the exponentials of one row.
      T* e = static_cast<T*>(h.workspace(sizeof(T) * size_t(sd.channels)));
      fwd_rows(sd, static_cast<const T*>(a.in), static_cast<T*>(a.out), e, a.blend);
    } else {
      bwd_rows(sd, static_cast<const T*>(a.in), static_cast<const T*>(a.dy), static_cast<T*>(a.out),
               a.blend);
    }
  });
}

void run_spatial(Handle& h, const SoftmaxArgs& a) {
  typed(a, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const SoftmaxDesc& sd = a.sd;
    const int64_t C = sd.channels, I = sd.inner;
    if (a.forward) {
      // Scratch: the exponentials of one (channels, inner) slice, then the running max and sum.
      T* e = static_cast<T*>(h.workspace(sizeof(T) * size_t(C * I + 2 * I)));
      fwd_spatial(sd, static_cast<const T*>(a.in), static_cast<T*>(a.out), e, e + C * I,
                  e + C * I + I, a.blend);
    } else {
      T* d = static_cast<T*>(h.workspace(sizeof(T) * size_t(I)));
      bwd_spatial(sd, static_cast<const T*>(a.in), static_cast<const T*>(a.dy),
                  static_cast<T*>(a.out), d, a.blend);
    }
  });
}

// The class of a stored label, or -1 for the ignore label; anything else is a user error that
// names the label and where it is.
template <typename T>
int64_t label_class(const char* op, T label, int64_t pos, int64_t inner, int64_t channels,
                    bool has_ignore, int ignore) {
  const int64_t k = softmax_ops::label_class(label, channels, has_ignore, ignore);
  if (k == softmax_ops::kInvalid)
    softmax_ops::throw_bad_label(op, double(label), pos, inner, channels, has_ignore, ignore);
  return k;
}

double normalizer(const SoftmaxLossDesc& ld, int64_t valid) {
  return softmax_ops::normalizer(ld.normalization, ld.outer, ld.inner, valid);
}

template <typename T>
void loss_fwd(const SoftmaxLossDesc& ld, const T* prob, const T* label, T* loss) {
  const int64_t C = ld.channels, I = ld.inner;
  double sum = 0;  // in double: a batch sums many terms of similar size
  int64_t valid = 0;
  for (int64_t p = 0; p < ld.outer * I; ++p) {
    const int64_t k =
        label_class("softmax_loss_fwd", label[p], p, I, C, ld.has_ignore_label, ld.ignore_label);
    if (k < 0) continue;
    const T pk = prob[(p / I) * C * I + k * I + p % I];
    sum += softmax_ops::loss_term(double(pk));
    ++valid;
  }
  loss[0] = T(sum / normalizer(ld, valid));
}

template <typename T>
void loss_bwd(const SoftmaxLossDesc& ld, const T* prob, const T* label, double loss_weight, T* dx) {
  const int64_t C = ld.channels, I = ld.inner;
  // Validate every label and count the valid ones before writing anything.
  int64_t valid = 0;
  for (int64_t p = 0; p < ld.outer * I; ++p)
    valid += label_class("softmax_loss_bwd", label[p], p, I, C, ld.has_ignore_label,
                         ld.ignore_label) >= 0;
  const T scale = T(loss_weight / normalizer(ld, valid));
  const int64_t n = ld.outer * C * I;
  for (int64_t j = 0; j < n; ++j) dx[j] = scale * prob[j];
  for (int64_t p = 0; p < ld.outer * I; ++p) {
    T* col = dx + (p / I) * C * I + p % I;
    const T l = label[p];
    if (ld.has_ignore_label && l == T(ld.ignore_label)) {
      for (int64_t c = 0; c < C; ++c) col[c * I] = 0;
    } else {
      col[int64_t(l) * I] -= scale;
    }
  }
}

template <typename T>
void accuracy(const AccuracyDesc& ad, const T* scores, const T* label, T* acc, T* per_class) {
  const int64_t C = ad.channels, I = ad.inner;
  std::vector<int64_t> seen(size_t(C), 0), hit(size_t(C), 0);
  int64_t valid = 0, correct = 0;
  for (int64_t p = 0; p < ad.outer * I; ++p) {
    const int64_t k =
        label_class("accuracy_fwd", label[p], p, I, C, ad.has_ignore_label, ad.ignore_label);
    if (k < 0) continue;
    const T* col = scores + (p / I) * C * I + p % I;
    const T ref = col[k * I];
    // Count the classes scoring at least the label's (itself included); stop once the label
    // cannot be in the top k.
    int64_t at_least = 0;
    for (int64_t c = 0; c < C && softmax_ops::in_top_k(at_least, ad.top_k); ++c)
      at_least += col[c * I] >= ref;
    ++valid;
    ++seen[size_t(k)];
    if (softmax_ops::label_correct(at_least, ad.top_k)) {
      ++correct;
      ++hit[size_t(k)];
    }
  }
  acc[0] = valid ? T(double(correct) / double(valid)) : T(0);
  if (per_class)
    for (int64_t c = 0; c < C; ++c)
      per_class[c] = seen[size_t(c)] ? T(double(hit[size_t(c)]) / double(seen[size_t(c)])) : T(0);
}

}  // namespace

const SoftmaxImpl kSoftmaxRows{SoftmaxAlgo::kRows, Device::kCPU, softmax_rows_only, nullptr,
                               run_rows};
const SoftmaxImpl kSoftmaxSpatial{SoftmaxAlgo::kSpatial, Device::kCPU, nullptr,
                                  softmax_spatial_slower, run_spatial};

void softmax_loss_fwd(Handle&, const SoftmaxLossDesc& ld, const void* prob, const void* label,
                      void* loss) {
  visit_dtype(kFloatTypes, ld.dtype, "softmax_loss_fwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    loss_fwd(ld, static_cast<const T*>(prob), static_cast<const T*>(label), static_cast<T*>(loss));
  });
}

void softmax_loss_bwd(Handle&, const SoftmaxLossDesc& ld, const void* prob, const void* label,
                      double loss_weight, void* dx) {
  visit_dtype(kFloatTypes, ld.dtype, "softmax_loss_bwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    loss_bwd(ld, static_cast<const T*>(prob), static_cast<const T*>(label), loss_weight,
             static_cast<T*>(dx));
  });
}

void accuracy_fwd(Handle&, const AccuracyDesc& ad, const void* scores, const void* label,
                  void* accuracy_out, void* per_class) {
  visit_dtype(kFloatTypes, ad.dtype, "accuracy_fwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    accuracy(ad, static_cast<const T*>(scores), static_cast<const T*>(label),
             static_cast<T*>(accuracy_out), static_cast<T*>(per_class));
  });
}

}  // namespace crema::prim::cpu
