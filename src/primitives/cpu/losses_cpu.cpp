// Loss primitives on the CPU, templated on float/double. Sums run in double: a batch adds many
// terms of similar size. Labels are validated before anything is written.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "primitives/common/dtype_visit.h"
#include "primitives/common/losses_ops.h"
#include "primitives/losses.h"

namespace crema::prim::cpu {
namespace {

// The class of a label stored in the data type, or -1 for the ignore label; anything else is a
// user error naming the label and where it is.
template <typename T>
int64_t label_class(const char* op, T label, int64_t pos, int64_t classes, bool has_ignore,
                    int ignore) {
  if (has_ignore && label == T(ignore)) return -1;
  if (!(label >= T(0) && label < T(classes) && std::floor(label) == label))
    throw PrimError(std::string(op) + ": label " + std::to_string(double(label)) + " at position " +
                    std::to_string(pos) + " is not an integer in [0, " + std::to_string(classes) +
                    ")" + (has_ignore ? " nor the ignore label " + std::to_string(ignore) : ""));
  return int64_t(label);
}

template <typename T>
std::vector<int64_t> label_classes(const char* op, const T* label, int64_t n, int64_t classes,
                                   bool has_ignore = false, int ignore = 0) {
  std::vector<int64_t> k(n);
  for (int64_t i = 0; i < n; ++i) k[i] = label_class(op, label[i], i, classes, has_ignore, ignore);
  return k;
}

using loss_ops::normalizer;

// ---- contrastive ------------------------------------------------------------------------------

template <typename T>
double row_dist_sq(const T* a, const T* b, int64_t dim) {
  double s = 0;
  for (int64_t j = 0; j < dim; ++j) {
    const double e = double(a[j]) - double(b[j]);
    s += e * e;
  }
  return s;
}

template <typename T>
void contrastive_fwd(const ContrastiveLossDesc& d, const T* a, const T* b, const T* sim, T* loss) {
  double sum = 0;
  for (int64_t n = 0; n < d.num; ++n) {
    const double dsq = row_dist_sq(a + n * d.dim, b + n * d.dim, d.dim);
    sum += loss_ops::contrastive_term(int(sim[n]) != 0, d.legacy, d.margin, dsq);
  }
  loss[0] = T(sum / double(d.num) / 2);
}

template <typename T>
void contrastive_bwd(const ContrastiveLossDesc& d, const T* a, const T* b, const T* sim,
                     double loss_weight, T* da, T* db) {
  const double alpha = loss_weight / double(d.num);
  for (int64_t n = 0; n < d.num; ++n) {
    const T* an = a + n * d.dim;
    const T* bn = b + n * d.dim;
    const double dsq = row_dist_sq(an, bn, d.dim);
    // The gradient w.r.t. a_n is scale * (a_n - b_n).
    const double scale =
        loss_ops::contrastive_scale(int(sim[n]) != 0, d.legacy, d.margin, dsq, alpha);
    for (int64_t j = 0; j < d.dim; ++j) {
      const double g = scale * (double(an[j]) - double(bn[j]));
      if (da) da[n * d.dim + j] = T(g);
      if (db) db[n * d.dim + j] = T(-g);
    }
  }
}

// ---- euclidean --------------------------------------------------------------------------------

template <typename T>
void euclidean_fwd(const EuclideanLossDesc& d, const T* a, const T* b, T* loss) {
  loss[0] = T(row_dist_sq(a, b, d.num * d.dim) / double(d.num) / 2);
}

template <typename T>
void euclidean_bwd(const EuclideanLossDesc& d, const T* a, const T* b, double loss_weight, T* da,
                   T* db) {
  const T alpha = T(loss_weight / double(d.num));
  const int64_t n = d.num * d.dim;
  if (da)
    for (int64_t i = 0; i < n; ++i) da[i] = alpha * (a[i] - b[i]);
  if (db)
    for (int64_t i = 0; i < n; ++i) db[i] = -alpha * (a[i] - b[i]);
}

// ---- hinge ------------------------------------------------------------------------------------

template <typename T>
void hinge_fwd(const HingeLossDesc& d, const T* x, const T* label, T* loss) {
  const std::vector<int64_t> k = label_classes("hinge_loss_fwd", label, d.num, d.dim);
  double sum = 0;
  for (int64_t n = 0; n < d.num; ++n)
    for (int64_t j = 0; j < d.dim; ++j)
      sum += loss_ops::hinge_term(d.norm == HingeNorm::kL2,
                                  loss_ops::hinge_margin(j == k[n], double(x[n * d.dim + j])));
  loss[0] = T(sum / double(d.num));
}

template <typename T>
void hinge_bwd(const HingeLossDesc& d, const T* x, const T* label, double loss_weight, T* dx) {
  const std::vector<int64_t> k = label_classes("hinge_loss_bwd", label, d.num, d.dim);
  const double alpha = loss_weight / double(d.num);
  for (int64_t n = 0; n < d.num; ++n)
    for (int64_t j = 0; j < d.dim; ++j) {
      const double v = loss_ops::hinge_margin(j == k[n], double(x[n * d.dim + j]));
      dx[n * d.dim + j] = T(alpha * loss_ops::hinge_grad(d.norm == HingeNorm::kL2, j == k[n], v));
    }
}

// ---- infogain ---------------------------------------------------------------------------------

template <typename T>
void infogain_fwd(const InfogainLossDesc& d, const T* prob, const T* label, const T* H, T* loss) {
  const int64_t C = d.channels, I = d.inner;
  const std::vector<int64_t> k =
      label_classes("infogain_loss_fwd", label, d.outer * I, C, d.has_ignore_label, d.ignore_label);
  double sum = 0;
  int64_t valid = 0;
  for (int64_t p = 0; p < d.outer * I; ++p) {
    if (k[p] < 0) continue;
    const T* pp = prob + (p / I) * C * I + p % I;
    const T* row = H + k[p] * C;
    for (int64_t c = 0; c < C; ++c)
      sum += double(row[c]) * loss_ops::neg_log_clamped(double(pp[c * I]), kLogThreshold);
    ++valid;
  }
  loss[0] = T(sum / normalizer(d.normalization, d.outer, I, valid));
}

template <typename T>
void infogain_bwd(const InfogainLossDesc& d, const T* prob, const T* label, const T* H,
                  double loss_weight, T* dx) {
  const int64_t C = d.channels, I = d.inner;
  const std::vector<int64_t> k =
      label_classes("infogain_loss_bwd", label, d.outer * I, C, d.has_ignore_label, d.ignore_label);
  const int64_t valid = std::count_if(k.begin(), k.end(), [](int64_t v) { return v >= 0; });
  const double alpha = loss_weight / normalizer(d.normalization, d.outer, I, valid);
  for (int64_t p = 0; p < d.outer * I; ++p) {
    const int64_t base = (p / I) * C * I + p % I;
    if (k[p] < 0) {
      for (int64_t c = 0; c < C; ++c) dx[base + c * I] = T(0);
      continue;
    }
    const T* row = H + k[p] * C;
    double row_sum = 0;
    for (int64_t c = 0; c < C; ++c) row_sum += double(row[c]);
    for (int64_t c = 0; c < C; ++c)
      dx[base + c * I] = T(alpha * (double(prob[base + c * I]) * row_sum - double(row[c])));
  }
}

// ---- multinomial logistic ---------------------------------------------------------------------

template <typename T>
void mlogistic_fwd(const MultinomialLogisticLossDesc& d, const T* prob, const T* label, T* loss) {
  const std::vector<int64_t> k =
      label_classes("multinomial_logistic_loss_fwd", label, d.num, d.dim);
  double sum = 0;
  for (int64_t n = 0; n < d.num; ++n)
    sum += loss_ops::neg_log_clamped(double(prob[n * d.dim + k[n]]), kLogThreshold);
  loss[0] = T(sum / double(d.num));
}

template <typename T>
void mlogistic_bwd(const MultinomialLogisticLossDesc& d, const T* prob, const T* label,
                   double loss_weight, T* dx) {
  const std::vector<int64_t> k =
      label_classes("multinomial_logistic_loss_bwd", label, d.num, d.dim);
  const double alpha = loss_weight / double(d.num);
  std::fill(dx, dx + d.num * d.dim, T(0));
  for (int64_t n = 0; n < d.num; ++n) {
    const int64_t i = n * d.dim + k[n];
    dx[i] = T(-alpha / std::max(double(prob[i]), kLogThreshold));
  }
}

// ---- sigmoid cross entropy --------------------------------------------------------------------

template <typename T>
bool sce_ignored(const SigmoidCrossEntropyLossDesc& d, T t) {
  return d.has_ignore_label && t == T(d.ignore_label);
}

template <typename T>
void sce_fwd(const SigmoidCrossEntropyLossDesc& d, const T* x, const T* t, T* loss) {
  double sum = 0;
  int64_t valid = 0;
  for (int64_t i = 0; i < d.num * d.dim; ++i) {
    if (sce_ignored(d, t[i])) continue;
    sum += loss_ops::sce_term(double(x[i]), double(t[i]));
    ++valid;
  }
  loss[0] = T(sum / normalizer(d.normalization, d.num, d.dim, valid));
}

template <typename T>
void sce_bwd(const SigmoidCrossEntropyLossDesc& d, const T* x, const T* t, double loss_weight,
             T* dx) {
  const int64_t n = d.num * d.dim;
  int64_t valid = 0;
  for (int64_t i = 0; i < n; ++i) valid += !sce_ignored(d, t[i]);
  const double alpha = loss_weight / normalizer(d.normalization, d.num, d.dim, valid);
  for (int64_t i = 0; i < n; ++i) {
    if (sce_ignored(d, t[i])) {
      dx[i] = T(0);
      continue;
    }
    dx[i] = T(alpha * (loss_ops::sce_sigmoid(double(x[i])) - double(t[i])));
  }
}

}  // namespace

// Each entry point casts to the element type and runs the body above.
#define CREMA_T(p) static_cast<const T*>(p)
#define CREMA_MT(p) static_cast<T*>(p)

void contrastive_loss_fwd(Handle&, const ContrastiveLossDesc& d, const void* a, const void* b,
                          const void* similar, void* loss) {
  visit_dtype(kFloatTypes, d.dtype, "contrastive_loss_fwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    contrastive_fwd(d, CREMA_T(a), CREMA_T(b), CREMA_T(similar), CREMA_MT(loss));
  });
}

void contrastive_loss_bwd(Handle&, const ContrastiveLossDesc& d, const void* a, const void* b,
                          const void* similar, double loss_weight, void* da, void* db) {
  visit_dtype(kFloatTypes, d.dtype, "contrastive_loss_bwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    contrastive_bwd(d, CREMA_T(a), CREMA_T(b), CREMA_T(similar), loss_weight, CREMA_MT(da),
                    CREMA_MT(db));
  });
}

void euclidean_loss_fwd(Handle&, const EuclideanLossDesc& d, const void* a, const void* b,
                        void* loss) {
  visit_dtype(kFloatTypes, d.dtype, "euclidean_loss_fwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    euclidean_fwd(d, CREMA_T(a), CREMA_T(b), CREMA_MT(loss));
  });
}

void euclidean_loss_bwd(Handle&, const EuclideanLossDesc& d, const void* a, const void* b,
                        double loss_weight, void* da, void* db) {
  visit_dtype(kFloatTypes, d.dtype, "euclidean_loss_bwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    euclidean_bwd(d, CREMA_T(a), CREMA_T(b), loss_weight, CREMA_MT(da), CREMA_MT(db));
  });
}

void hinge_loss_fwd(Handle&, const HingeLossDesc& d, const void* x, const void* label, void* loss) {
  visit_dtype(kFloatTypes, d.dtype, "hinge_loss_fwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    hinge_fwd(d, CREMA_T(x), CREMA_T(label), CREMA_MT(loss));
  });
}

void hinge_loss_bwd(Handle&, const HingeLossDesc& d, const void* x, const void* label,
                    double loss_weight, void* dx) {
  visit_dtype(kFloatTypes, d.dtype, "hinge_loss_bwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    hinge_bwd(d, CREMA_T(x), CREMA_T(label), loss_weight, CREMA_MT(dx));
  });
}

void infogain_loss_fwd(Handle&, const InfogainLossDesc& d, const void* prob, const void* label,
                       const void* infogain, void* loss) {
  visit_dtype(kFloatTypes, d.dtype, "infogain_loss_fwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    infogain_fwd(d, CREMA_T(prob), CREMA_T(label), CREMA_T(infogain), CREMA_MT(loss));
  });
}

void infogain_loss_bwd(Handle&, const InfogainLossDesc& d, const void* prob, const void* label,
                       const void* infogain, double loss_weight, void* dx) {
  visit_dtype(kFloatTypes, d.dtype, "infogain_loss_bwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    infogain_bwd(d, CREMA_T(prob), CREMA_T(label), CREMA_T(infogain), loss_weight, CREMA_MT(dx));
  });
}

void multinomial_logistic_loss_fwd(Handle&, const MultinomialLogisticLossDesc& d, const void* prob,
                                   const void* label, void* loss) {
  visit_dtype(kFloatTypes, d.dtype, "multinomial_logistic_loss_fwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    mlogistic_fwd(d, CREMA_T(prob), CREMA_T(label), CREMA_MT(loss));
  });
}

void multinomial_logistic_loss_bwd(Handle&, const MultinomialLogisticLossDesc& d, const void* prob,
                                   const void* label, double loss_weight, void* dx) {
  visit_dtype(kFloatTypes, d.dtype, "multinomial_logistic_loss_bwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    mlogistic_bwd(d, CREMA_T(prob), CREMA_T(label), loss_weight, CREMA_MT(dx));
  });
}

void sigmoid_cross_entropy_loss_fwd(Handle&, const SigmoidCrossEntropyLossDesc& d, const void* x,
                                    const void* target, void* loss) {
  visit_dtype(kFloatTypes, d.dtype, "sigmoid_cross_entropy_loss_fwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    sce_fwd(d, CREMA_T(x), CREMA_T(target), CREMA_MT(loss));
  });
}

void sigmoid_cross_entropy_loss_bwd(Handle&, const SigmoidCrossEntropyLossDesc& d, const void* x,
                                    const void* target, double loss_weight, void* dx) {
  visit_dtype(kFloatTypes, d.dtype, "sigmoid_cross_entropy_loss_bwd", Device::kCPU, [&](auto tag) {
    using T = typename decltype(tag)::type;
    sce_bwd(d, CREMA_T(x), CREMA_T(target), loss_weight, CREMA_MT(dx));
  });
}

#undef CREMA_T
#undef CREMA_MT

}  // namespace crema::prim::cpu
