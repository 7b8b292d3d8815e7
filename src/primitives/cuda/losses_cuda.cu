// Loss primitives on CUDA. The scalar losses are deterministic sums in double (cuda_reduce.cuh:
// fixed pieces, block tree sums, partials added in order) whose last step writes loss[0] on the
// device; the normalizers that depend on the count of valid items are computed there too, so
// nothing waits for the host. The exception is label validation: the API throws on a bad label,
// so the losses with labels (hinge, infogain, multinomial logistic) run one check kernel and
// synchronize to read its verdict before anything is written. The per-item math is the CPU's
// (losses_ops.h). All passes are memory-bound: one or two reads of the inputs, one write.
#include <cmath>
#include <string>

#include "primitives/common/dtype_visit.h"
#include "primitives/common/losses_ops.h"
#include "primitives/cuda/bad_index.cuh"
#include "primitives/cuda/cuda_reduce.cuh"
#include "primitives/cuda/cuda_util.cuh"
#include "primitives/losses.h"

namespace crema::prim::cuda {
namespace {

using loss_ops::normalizer;

// ---- label validation --------------------------------------------------------------------------

// Throws PrimError naming the first label outside [0, classes) that is not the ignore label,
// with the CPU's message. flag: 8 bytes of device scratch.
template <typename T>
void check_labels(Handle& h, const char* op, const T* label, int64_t n, int64_t classes,
                  unsigned long long* flag, bool has_ignore = false, int ignore = 0) {
  const BadIndex<T> bad = first_bad_index(h, op, label, n, classes, flag, has_ignore, ignore);
  if (!bad.found) return;
  throw PrimError(std::string(op) + ": label " + std::to_string(double(bad.value)) +
                  " at position " + std::to_string(bad.position) + " is not an integer in [0, " +
                  std::to_string(classes) + ")" +
                  (has_ignore ? " nor the ignore label " + std::to_string(ignore) : ""));
}

// Workspace: sum partials for up to two sums over n items, a few doubles, the label flag.
struct Scratch {
  double* partial;
  double* aux;  // per-row values (contrastive) or the device-side gradient scale
  unsigned long long* flag;
};

Scratch scratch(Handle& h, int64_t n, size_t aux) {
  const size_t np = 2 * size_t(global_parts(n));
  Carver cv(h.workspace(Carver::bytes<double>(np) + Carver::bytes<double>(aux + 1) +
                        Carver::bytes<unsigned long long>(1)));
  Scratch s;
  s.partial = cv.take<double>(np);
  s.aux = cv.take<double>(aux + 1);
  s.flag = cv.take<unsigned long long>(1);
  return s;
}

// loss[0] = T(sum * scale) (one or two divisions, as the CPU's).
template <typename T>
struct WriteScaled {
  T* loss;
  double div1, div2;
  __device__ void operator()(const double (&v)[1]) const { loss[0] = T(v[0] / div1 / div2); }
};

// loss[0] = T(sum / normalizer(valid)) with the valid count in v[1].
template <typename T>
struct WriteNormalized {
  T* loss;
  LossNormalization mode;
  int64_t num, per_sample;
  __device__ void operator()(const double (&v)[2]) const {
    loss[0] = T(v[0] / normalizer(mode, num, per_sample, int64_t(v[1])));
  }
};

// *scale = loss_weight / normalizer(valid): the gradient factor, left on the device.
struct WriteGradScale {
  double* scale;
  double loss_weight;
  LossNormalization mode;
  int64_t num, per_sample;
  __device__ void operator()(const double (&v)[1]) const {
    *scale = loss_weight / normalizer(mode, num, per_sample, int64_t(v[0]));
  }
};

// ---- euclidean and contrastive ------------------------------------------------------------------

template <typename T>
struct SqDiff {
  const T *a, *b;
  __device__ void operator()(int64_t j, double (&v)[1]) const {
    const double e = double(a[j]) - double(b[j]);
    v[0] += e * e;
  }
};

template <typename T>
__global__ void euclidean_bwd_kernel(int64_t n, T alpha, const T* a, const T* b, T* da, T* db) {
  CREMA_CUDA_LOOP(i, n) {
    if (da) da[i] = alpha * (a[i] - b[i]);
    if (db) db[i] = -alpha * (a[i] - b[i]);
  }
}

// dsq[n] = |a_n - b_n|^2, one block per row.
template <typename T>
__global__ void row_dist_sq_kernel(int64_t num, int64_t dim, const T* a, const T* b, double* dsq) {
  for (int64_t n = blockIdx.x; n < num; n += gridDim.x) {
    double v[1] = {0.0};
    for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) {
      const double e = double(a[n * dim + j]) - double(b[n * dim + j]);
      v[0] += e * e;
    }
    block_sum<1>(v);
    if (threadIdx.x == 0) dsq[n] = v[0];
  }
}

template <typename T>
void row_dist_sq(Handle& h, const ContrastiveLossDesc& d, const T* a, const T* b, double* dsq,
                 const char* op) {
  const unsigned grid = unsigned(d.num > 1048576 ? 1048576 : d.num);
  const int block = d.dim >= 256 ? 256 : d.dim >= 64 ? 64 : 32;
  row_dist_sq_kernel<T><<<grid, block, 0, stream_of(h)>>>(d.num, d.dim, a, b, dsq);
  check_launch(op);
}

template <typename T>
struct ContrastiveTerm {
  const double* dsq;
  const T* sim;
  bool legacy;
  double margin;
  __device__ void operator()(int64_t n, double (&v)[1]) const {
    v[0] += loss_ops::contrastive_term(int(sim[n]) != 0, legacy, margin, dsq[n]);
  }
};

template <typename T>
__global__ void contrastive_bwd_kernel(int64_t num, int64_t dim, bool legacy, double margin,
                                       double alpha, const double* dsq, const T* sim, const T* a,
                                       const T* b, T* da, T* db) {
  CREMA_CUDA_LOOP(i, num * dim) {
    const int64_t n = i / dim;
    const double scale =
        loss_ops::contrastive_scale(int(sim[n]) != 0, legacy, margin, dsq[n], alpha);
    const double g = scale * (double(a[i]) - double(b[i]));
    if (da) da[i] = T(g);
    if (db) db[i] = T(-g);
  }
}

// ---- hinge
// ----------------------------------------------------------------------------------------

template <typename T>
struct HingeTerm {
  const T *x, *label;
  int64_t dim;
  bool l2;
  __device__ void operator()(int64_t i, double (&v)[1]) const {
    const int64_t n = i / dim, j = i - n * dim;
    v[0] += loss_ops::hinge_term(l2, loss_ops::hinge_margin(j == int64_t(label[n]), double(x[i])));
  }
};

template <typename T>
__global__ void hinge_bwd_kernel(int64_t total, int64_t dim, bool l2, double alpha, const T* x,
                                 const T* label, T* dx) {
  CREMA_CUDA_LOOP(i, total) {
    const int64_t n = i / dim, j = i - n * dim;
    const bool is_label = j == int64_t(label[n]);
    const double v = loss_ops::hinge_margin(is_label, double(x[i]));
    dx[i] = T(alpha * loss_ops::hinge_grad(l2, is_label, v));
  }
}

// ---- infogain
// -------------------------------------------------------------------------------------

template <typename T>
struct InfogainTerm {
  const T *prob, *label, *H;
  int64_t C, I;
  bool has_ignore;
  int ignore;
  __device__ void operator()(int64_t p, double (&v)[2]) const {
    const T l = label[p];
    if (ignored(l, has_ignore, ignore)) return;
    const int64_t k = int64_t(l);
    const T* pp = prob + (p / I) * C * I + p % I;
    for (int64_t c = 0; c < C; ++c)
      v[0] += double(H[k * C + c]) * loss_ops::neg_log_clamped(double(pp[c * I]), kLogThreshold);
    v[1] += 1.0;
  }
};

template <typename T>
struct ValidCount {
  const T* label;
  bool has_ignore;
  int ignore;
  __device__ void operator()(int64_t i, double (&v)[1]) const {
    v[0] += ignored(label[i], has_ignore, ignore) ? 0.0 : 1.0;
  }
};

template <typename T>
__global__ void infogain_bwd_kernel(int64_t positions, int64_t C, int64_t I, bool has_ignore,
                                    int ignore, const double* alpha_dev, const T* prob,
                                    const T* label, const T* H, T* dx) {
  const double alpha = *alpha_dev;
  CREMA_CUDA_LOOP(p, positions) {
    const int64_t base = (p / I) * C * I + p % I;
    const T l = label[p];
    if (ignored(l, has_ignore, ignore)) {
      for (int64_t c = 0; c < C; ++c) dx[base + c * I] = T(0);
      continue;
    }
    const T* row = H + int64_t(l) * C;
    double row_sum = 0;
    for (int64_t c = 0; c < C; ++c) row_sum += double(row[c]);
    for (int64_t c = 0; c < C; ++c)
      dx[base + c * I] = T(alpha * (double(prob[base + c * I]) * row_sum - double(row[c])));
  }
}

// ---- multinomial logistic ---------------------------------------------------------------------

template <typename T>
struct MlogisticTerm {
  const T *prob, *label;
  int64_t dim;
  __device__ void operator()(int64_t n, double (&v)[1]) const {
    v[0] += loss_ops::neg_log_clamped(double(prob[n * dim + int64_t(label[n])]), kLogThreshold);
  }
};

template <typename T>
__global__ void mlogistic_bwd_kernel(int64_t total, int64_t dim, double alpha, const T* prob,
                                     const T* label, T* dx) {
  CREMA_CUDA_LOOP(i, total) {
    const int64_t n = i / dim, j = i - n * dim;
    const double p = double(prob[i]);
    dx[i] = j == int64_t(label[n]) ? T(-alpha / (p > kLogThreshold ? p : kLogThreshold)) : T(0);
  }
}

// ---- sigmoid cross entropy --------------------------------------------------------------------

template <typename T>
struct SceTerm {
  const T *x, *t;
  bool has_ignore;
  int ignore;
  __device__ void operator()(int64_t i, double (&v)[2]) const {
    if (ignored(t[i], has_ignore, ignore)) return;
    v[0] += loss_ops::sce_term(double(x[i]), double(t[i]));
    v[1] += 1.0;
  }
};

template <typename T>
__global__ void sce_bwd_kernel(int64_t n, bool has_ignore, int ignore, const double* alpha_dev,
                               const T* x, const T* t, T* dx) {
  const double alpha = *alpha_dev;
  CREMA_CUDA_LOOP(i, n) {
    dx[i] = ignored(t[i], has_ignore, ignore)
                ? T(0)
                : T(alpha * (loss_ops::sce_sigmoid(double(x[i])) - double(t[i])));
  }
}

}  // namespace

#define CREMA_T(p) static_cast<const T*>(p)
#define CREMA_MT(p) static_cast<T*>(p)

void contrastive_loss_fwd(Handle& h, const ContrastiveLossDesc& d, const void* a, const void* b,
                          const void* similar, void* loss) {
  visit_dtype(kFloatTypes, d.dtype, "contrastive_loss_fwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Scratch s = scratch(h, d.num, size_t(d.num));
    row_dist_sq(h, d, CREMA_T(a), CREMA_T(b), s.aux, "contrastive_loss_fwd");
    global_sums<1>(h, d.num, s.partial,
                   ContrastiveTerm<T>{s.aux, CREMA_T(similar), d.legacy, d.margin},
                   WriteScaled<T>{CREMA_MT(loss), double(d.num), 2.0}, "contrastive_loss_fwd");
  });
}

void contrastive_loss_bwd(Handle& h, const ContrastiveLossDesc& d, const void* a, const void* b,
                          const void* similar, double loss_weight, void* da, void* db) {
  visit_dtype(kFloatTypes, d.dtype, "contrastive_loss_bwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Scratch s = scratch(h, d.num, size_t(d.num));
    row_dist_sq(h, d, CREMA_T(a), CREMA_T(b), s.aux, "contrastive_loss_bwd");
    contrastive_bwd_kernel<T><<<grid_for(d.num * d.dim), kBlock, 0, stream_of(h)>>>(
        d.num, d.dim, d.legacy, d.margin, loss_weight / double(d.num), s.aux, CREMA_T(similar),
        CREMA_T(a), CREMA_T(b), CREMA_MT(da), CREMA_MT(db));
    check_launch("contrastive_loss_bwd");
  });
}

void euclidean_loss_fwd(Handle& h, const EuclideanLossDesc& d, const void* a, const void* b,
                        void* loss) {
  visit_dtype(kFloatTypes, d.dtype, "euclidean_loss_fwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t n = d.num * d.dim;
    const Scratch s = scratch(h, n, 0);
    global_sums<1>(h, n, s.partial, SqDiff<T>{CREMA_T(a), CREMA_T(b)},
                   WriteScaled<T>{CREMA_MT(loss), double(d.num), 2.0}, "euclidean_loss_fwd");
  });
}

void euclidean_loss_bwd(Handle& h, const EuclideanLossDesc& d, const void* a, const void* b,
                        double loss_weight, void* da, void* db) {
  visit_dtype(kFloatTypes, d.dtype, "euclidean_loss_bwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t n = d.num * d.dim;
    euclidean_bwd_kernel<T><<<grid_for(n), kBlock, 0, stream_of(h)>>>(
        n, T(loss_weight / double(d.num)), CREMA_T(a), CREMA_T(b), CREMA_MT(da), CREMA_MT(db));
    check_launch("euclidean_loss_bwd");
  });
}

void hinge_loss_fwd(Handle& h, const HingeLossDesc& d, const void* x, const void* label,
                    void* loss) {
  visit_dtype(kFloatTypes, d.dtype, "hinge_loss_fwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t n = d.num * d.dim;
    const Scratch s = scratch(h, n, 0);
    check_labels(h, "hinge_loss_fwd", CREMA_T(label), d.num, d.dim, s.flag);
    global_sums<1>(h, n, s.partial,
                   HingeTerm<T>{CREMA_T(x), CREMA_T(label), d.dim, d.norm == HingeNorm::kL2},
                   WriteScaled<T>{CREMA_MT(loss), double(d.num), 1.0}, "hinge_loss_fwd");
  });
}

void hinge_loss_bwd(Handle& h, const HingeLossDesc& d, const void* x, const void* label,
                    double loss_weight, void* dx) {
  visit_dtype(kFloatTypes, d.dtype, "hinge_loss_bwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t n = d.num * d.dim;
    const Scratch s = scratch(h, n, 0);
    check_labels(h, "hinge_loss_bwd", CREMA_T(label), d.num, d.dim, s.flag);
    hinge_bwd_kernel<T><<<grid_for(n), kBlock, 0, stream_of(h)>>>(
        n, d.dim, d.norm == HingeNorm::kL2, loss_weight / double(d.num), CREMA_T(x), CREMA_T(label),
        CREMA_MT(dx));
    check_launch("hinge_loss_bwd");
  });
}

void infogain_loss_fwd(Handle& h, const InfogainLossDesc& d, const void* prob, const void* label,
                       const void* infogain, void* loss) {
  visit_dtype(kFloatTypes, d.dtype, "infogain_loss_fwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t positions = d.outer * d.inner;
    const Scratch s = scratch(h, positions, 0);
    check_labels(h, "infogain_loss_fwd", CREMA_T(label), positions, d.channels, s.flag,
                 d.has_ignore_label, d.ignore_label);
    global_sums<2>(h, positions, s.partial,
                   InfogainTerm<T>{CREMA_T(prob), CREMA_T(label), CREMA_T(infogain), d.channels,
                                   d.inner, d.has_ignore_label, d.ignore_label},
                   WriteNormalized<T>{CREMA_MT(loss), d.normalization, d.outer, d.inner},
                   "infogain_loss_fwd");
  });
}

void infogain_loss_bwd(Handle& h, const InfogainLossDesc& d, const void* prob, const void* label,
                       const void* infogain, double loss_weight, void* dx) {
  visit_dtype(kFloatTypes, d.dtype, "infogain_loss_bwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t positions = d.outer * d.inner;
    const Scratch s = scratch(h, positions, 0);
    check_labels(h, "infogain_loss_bwd", CREMA_T(label), positions, d.channels, s.flag,
                 d.has_ignore_label, d.ignore_label);
    global_sums<1>(
        h, positions, s.partial, ValidCount<T>{CREMA_T(label), d.has_ignore_label, d.ignore_label},
        WriteGradScale{s.aux, loss_weight, d.normalization, d.outer, d.inner}, "infogain_loss_bwd");
    infogain_bwd_kernel<T><<<grid_for(positions), kBlock, 0, stream_of(h)>>>(
        positions, d.channels, d.inner, d.has_ignore_label, d.ignore_label, s.aux, CREMA_T(prob),
        CREMA_T(label), CREMA_T(infogain), CREMA_MT(dx));
    check_launch("infogain_loss_bwd");
  });
}

void multinomial_logistic_loss_fwd(Handle& h, const MultinomialLogisticLossDesc& d,
                                   const void* prob, const void* label, void* loss) {
  visit_dtype(kFloatTypes, d.dtype, "multinomial_logistic_loss_fwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Scratch s = scratch(h, d.num, 0);
    check_labels(h, "multinomial_logistic_loss_fwd", CREMA_T(label), d.num, d.dim, s.flag);
    global_sums<1>(h, d.num, s.partial, MlogisticTerm<T>{CREMA_T(prob), CREMA_T(label), d.dim},
                   WriteScaled<T>{CREMA_MT(loss), double(d.num), 1.0},
                   "multinomial_logistic_loss_fwd");
  });
}

void multinomial_logistic_loss_bwd(Handle& h, const MultinomialLogisticLossDesc& d,
                                   const void* prob, const void* label, double loss_weight,
                                   void* dx) {
  visit_dtype(kFloatTypes, d.dtype, "multinomial_logistic_loss_bwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Scratch s = scratch(h, d.num, 0);
    check_labels(h, "multinomial_logistic_loss_bwd", CREMA_T(label), d.num, d.dim, s.flag);
    const int64_t n = d.num * d.dim;
    mlogistic_bwd_kernel<T><<<grid_for(n), kBlock, 0, stream_of(h)>>>(
        n, d.dim, loss_weight / double(d.num), CREMA_T(prob), CREMA_T(label), CREMA_MT(dx));
    check_launch("multinomial_logistic_loss_bwd");
  });
}

void sigmoid_cross_entropy_loss_fwd(Handle& h, const SigmoidCrossEntropyLossDesc& d, const void* x,
                                    const void* target, void* loss) {
  visit_dtype(kFloatTypes, d.dtype, "sigmoid_cross_entropy_loss_fwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t n = d.num * d.dim;
    const Scratch s = scratch(h, n, 0);
    global_sums<2>(h, n, s.partial,
                   SceTerm<T>{CREMA_T(x), CREMA_T(target), d.has_ignore_label, d.ignore_label},
                   WriteNormalized<T>{CREMA_MT(loss), d.normalization, d.num, d.dim},
                   "sigmoid_cross_entropy_loss_fwd");
  });
}

void sigmoid_cross_entropy_loss_bwd(Handle& h, const SigmoidCrossEntropyLossDesc& d, const void* x,
                                    const void* target, double loss_weight, void* dx) {
  visit_dtype(kFloatTypes, d.dtype, "sigmoid_cross_entropy_loss_bwd", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t n = d.num * d.dim;
    const Scratch s = scratch(h, n, 0);
    global_sums<1>(h, n, s.partial,
                   ValidCount<T>{CREMA_T(target), d.has_ignore_label, d.ignore_label},
                   WriteGradScale{s.aux, loss_weight, d.normalization, d.num, d.dim},
                   "sigmoid_cross_entropy_loss_bwd");
    sce_bwd_kernel<T><<<grid_for(n), kBlock, 0, stream_of(h)>>>(
        n, d.has_ignore_label, d.ignore_label, s.aux, CREMA_T(x), CREMA_T(target), CREMA_MT(dx));
    check_launch("sigmoid_cross_entropy_loss_bwd");
  });
}

#undef CREMA_T
#undef CREMA_MT

}  // namespace crema::prim::cuda
