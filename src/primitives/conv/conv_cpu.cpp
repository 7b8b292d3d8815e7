// CPU convolution, three rows of the implementation table (conv_impl.h): im2col + GEMM (one GEMM
// per group over a chunk of images side by side, the batch split over the Handle's threads), the
// 1x1 GEMM that reads the input in place, and direct loops that handle any strides. The
// dispatcher in conv.cpp has validated the descriptors and checked the row's support rule.
// Every row computes in the storage type's own precision: a looser math mode is a permission
// the CPU does not use.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "primitives/blas.h"
#include "primitives/common/dtype_visit.h"
#include "primitives/conv/conv_impl.h"
#include "primitives/cpu/im2col_cpu.h"
#include "primitives/cpu/parallel.h"

namespace crema::prim::cpu {
namespace {

ConvGeom geom_of(const ConvProblem& p) {
  const ConvDesc& cd = p.cd;
  return ConvGeom{p.xd.c,        p.xd.h,   p.xd.w,      p.wd.r,      p.wd.s,
                  cd.pad_h,      cd.pad_w, cd.stride_h, cd.stride_w, cd.dilation_h,
                  cd.dilation_w, p.yd.h,   p.yd.w};
}

// out = alpha * acc + beta * out over a plane with arbitrary strides; beta == 0 never reads out.
template <typename T>
void store_plane(T* out, int64_t sh, int64_t sw, int rows, int cols, const T* acc, int64_t lda,
                 T alpha, T beta) {
  for (int i = 0; i < rows; ++i) {
    T* o = out + i * sh;
    const T* a = acc + int64_t(i) * lda;
    if (beta == T(0)) {
      for (int j = 0; j < cols; ++j) o[j * sw] = alpha * a[j];
    } else {
      for (int j = 0; j < cols; ++j) o[j * sw] = alpha * a[j] + beta * o[j * sw];
    }
  }
}

// y = act(y + bias[k]) over the rows of a plane with strides; the conv and blend are done.
template <typename T>
void apply_epilogue(T* y, int64_t sh, int64_t sw, int rows, int cols, T bias, bool relu) {
  for (int i = 0; i < rows; ++i) {
    T* o = y + i * sh;
    if (relu) {
      for (int j = 0; j < cols; ++j) {
        const T v = o[j * sw] + bias;
        o[j * sw] = v > T(0) ? v : T(0);
      }
    } else {
      for (int j = 0; j < cols; ++j) o[j * sw] += bias;
    }
  }
}

// Prepares an output that is accumulated into: beta == 0 clears it (without reading), beta != 1
// scales it, so that adding alpha * op afterwards yields the blend.
template <typename T>
void pre_scale(T* out, int64_t n, T beta) {
  if (beta == T(0)) {
    std::memset(out, 0, sizeof(T) * n);
  } else if (beta != T(1)) {
    for (int64_t i = 0; i < n; ++i) out[i] *= beta;
  }
}

template <typename T>
class ConvCpu {
 public:
  ConvCpu(Handle& h, const ConvProblem& p)
      : h_(h), cd_(p.cd), xd_(p.xd), wd_(p.wd), yd_(p.yd), g_(geom_of(p)), taps_(kernel_taps(g_)) {
    groups_ = cd_.groups;
    kg_ = wd_.k / groups_;
    cg_ = wd_.c;
    crs_ = int64_t(cg_) * wd_.r * wd_.s;
    pq_ = int64_t(yd_.h) * yd_.w;
    hw_ = int64_t(xd_.h) * xd_.w;
  }

  void fwd(ConvAlgo algo, const T* x, const T* w, T* y, Blend blend, const ConvEpilogue& ep) {
    if (algo == ConvAlgo::kDirect) {
      fwd_direct(x, w, y, blend, ep);
      return;
    }
    T* ws = workspace(algo);
    for_each_claimed_chunk([&](int t, int n_begin, int n_end) {
      if (algo == ConvAlgo::kGemm1x1) {
        // The input image already is the (C x H*W) patch matrix.
        for (int n = n_begin; n < n_end; ++n) {
          const T* xn = x + n * xd_.stride_n;
          T* yn = y + n * yd_.stride_n;
          for (int gi = 0; gi < groups_; ++gi)
            gemm(h_, xd_.dtype, Trans::kNo, Trans::kNo, kg_, int(pq_), cg_, blend.alpha,
                 w + gi * kg_ * crs_, xn + gi * cg_ * hw_, blend.beta, yn + gi * kg_ * pq_);
          epilogue(yn, ep);
        }
        return;
      }
      // im2col of a chunk of images side by side, one GEMM per group for the whole chunk into a
      // K x B*P*Q matrix, then each image's planes are blended into y.
      T* col = ws + t * plan_.per_thread;
      for (int n0 = n_begin; n0 < n_end; n0 += plan_.chunk) {
        const int b = std::min(plan_.chunk, n_end - n0);
        const int64_t ld = int64_t(b) * pq_;
        T* out = col + crs_ * groups_ * ld;
        for (int i = 0; i < b; ++i) im2col(g_, x + (n0 + i) * xd_.stride_n, col + i * pq_, ld);
        for (int gi = 0; gi < groups_; ++gi)
          gemm(h_, xd_.dtype, Trans::kNo, Trans::kNo, kg_, int(ld), int(crs_), 1.0,
               w + gi * kg_ * crs_, col + gi * crs_ * ld, 0.0, out + gi * kg_ * ld);
        for (int i = 0; i < b; ++i) {
          T* yn = y + (n0 + i) * yd_.stride_n;
          store_plane(yn, pq_, 1, wd_.k, int(pq_), out + i * pq_, ld, T(blend.alpha),
                      T(blend.beta));
          epilogue(yn, ep);
        }
      }
    });
  }

  void bwd_data(ConvAlgo algo, const T* w, const T* dy, T* dx, Blend blend) {
    if (algo == ConvAlgo::kDirect) {
      bwd_data_direct(w, dy, dx, blend);
      return;
    }
    T* ws = workspace(algo);
    const int64_t image = int64_t(xd_.c) * hw_;
    for_each_claimed_chunk([&](int t, int n_begin, int n_end) {
      if (algo == ConvAlgo::kGemm1x1) {
        for (int n = n_begin; n < n_end; ++n) {
          const T* dyn = dy + n * yd_.stride_n;
          T* dxn = dx + n * xd_.stride_n;
          for (int gi = 0; gi < groups_; ++gi)
            gemm(h_, xd_.dtype, Trans::kYes, Trans::kNo, cg_, int(hw_), kg_, blend.alpha,
                 w + gi * kg_ * crs_, dyn + gi * kg_ * pq_, blend.beta, dxn + gi * cg_ * hw_);
        }
        return;
      }
      T* col = ws + t * plan_.per_thread;
      for (int n0 = n_begin; n0 < n_end; n0 += plan_.chunk) {
        const int b = std::min(plan_.chunk, n_end - n0);
        const int64_t ld = int64_t(b) * pq_;
        T* grad = col + crs_ * groups_ * ld;
        gather_planes(dy + n0 * yd_.stride_n, b, grad, ld);
        for (int gi = 0; gi < groups_; ++gi)
          gemm(h_, xd_.dtype, Trans::kYes, Trans::kNo, int(crs_), int(ld), kg_, blend.alpha,
               w + gi * kg_ * crs_, grad + gi * kg_ * ld, 0.0, col + gi * crs_ * ld);
        for (int i = 0; i < b; ++i) {
          T* dxn = dx + (n0 + i) * xd_.stride_n;
          pre_scale(dxn, image, T(blend.beta));
          col2im_add(g_, col + i * pq_, dxn, ld);
        }
      }
    });
  }

  // Each thread sums its images into its own partial gradient; the partials are then blended
  // into dw in thread order (one thread writes dw directly).
  void bwd_filter(ConvAlgo algo, const T* x, const T* dy, T* dw, Blend blend) {
    if (algo == ConvAlgo::kDirect) {
      bwd_filter_direct(x, dy, dw, blend);
      return;
    }
    T* ws = workspace(algo);
    const int64_t wcount = wd_.count();
    T* partials = ws + plan_.threads * plan_.per_thread;
    const bool direct_out = plan_.threads == 1;
    for_each_share([&](int t, int n_begin, int n_end) {
      T* acc = direct_out ? dw : partials + t * wcount;
      const double alpha = direct_out ? blend.alpha : 1.0;
      double beta = direct_out ? blend.beta : 0.0;  // applies once, to the first GEMM
      if (algo == ConvAlgo::kGemm1x1) {
        for (int n = n_begin; n < n_end; ++n, beta = 1.0) {
          const T* xn = x + n * xd_.stride_n;
          const T* dyn = dy + n * yd_.stride_n;
          for (int gi = 0; gi < groups_; ++gi)
            gemm(h_, xd_.dtype, Trans::kNo, Trans::kYes, kg_, cg_, int(pq_), alpha,
                 dyn + gi * kg_ * pq_, xn + gi * cg_ * hw_, beta, acc + gi * kg_ * crs_);
        }
        return;
      }
      T* col = ws + t * plan_.per_thread;
      for (int n0 = n_begin; n0 < n_end; n0 += plan_.chunk, beta = 1.0) {
        const int b = std::min(plan_.chunk, n_end - n0);
        const int64_t ld = int64_t(b) * pq_;
        T* grad = col + crs_ * groups_ * ld;
        for (int i = 0; i < b; ++i) im2col(g_, x + (n0 + i) * xd_.stride_n, col + i * pq_, ld);
        gather_planes(dy + n0 * yd_.stride_n, b, grad, ld);
        for (int gi = 0; gi < groups_; ++gi)
          gemm(h_, xd_.dtype, Trans::kNo, Trans::kYes, kg_, int(crs_), int(ld), alpha,
               grad + gi * kg_ * ld, col + gi * crs_ * ld, beta, acc + gi * kg_ * crs_);
      }
    });
    if (direct_out) return;
    const T alpha = T(blend.alpha), beta = T(blend.beta);
    for (int64_t i = 0; i < wcount; ++i) {
      T sum = partials[i];
      for (int t = 1; t < plan_.threads; ++t) sum += partials[t * wcount + i];
      dw[i] = beta == T(0) ? alpha * sum : alpha * sum + beta * dw[i];
    }
  }

 private:
  T* workspace(ConvAlgo algo) {
    plan_ = plan_conv_cpu(g_, xd_.n, wd_.k, wd_.count(), sizeof(T), h_.workspace_budget(),
                          h_.cpu_threads(), algo == ConvAlgo::kIm2colGemm);
    return static_cast<T*>(h_.workspace(sizeof(T) * plan_.total_elems()));
  }

  // Runs fn(thread, first image, end image) over chunks of the batch that the threads claim from
  // a shared counter, so a thread on a busy core does not hold the others up. Each image's result
  // is computed the same way whichever thread takes it: results do not depend on timing.
  template <typename Fn>
  void for_each_claimed_chunk(const Fn& fn) {
    std::atomic<int> next{0};
    parallel_for(plan_.threads, [&](int t) {
      for (int n0 = next.fetch_add(plan_.chunk); n0 < xd_.n; n0 = next.fetch_add(plan_.chunk))
        fn(t, n0, std::min(n0 + plan_.chunk, xd_.n));
    });
  }

  // Runs fn(thread, first image, end image) over the plan's contiguous shares of the batch (the
  // backward filter pass, whose per-thread partial sums must cover fixed images).
  template <typename Fn>
  void for_each_share(const Fn& fn) {
    parallel_for(plan_.threads, [&](int t) {
      int begin, end;
      split_range(xd_.n, plan_.threads, t, &begin, &end);
      fn(t, begin, end);
    });
  }

  // out[k][i*P*Q + j] = dy[i][k][j] for the b images of a chunk: the K x B*P*Q layout of the
  // chunk GEMMs.
  void gather_planes(const T* dy, int b, T* out, int64_t ld) const {
    for (int i = 0; i < b; ++i)
      for (int k = 0; k < wd_.k; ++k)
        std::memcpy(out + k * ld + i * pq_, dy + i * yd_.stride_n + k * pq_, sizeof(T) * pq_);
  }

  void epilogue(T* yn, const ConvEpilogue& ep) const {
    if (!ep.bias && !ep.relu) return;
    const T* bias = static_cast<const T*>(ep.bias);
    for (int k = 0; k < wd_.k; ++k)
      apply_epilogue(yn + k * pq_, pq_, 1, 1, int(pq_), bias ? bias[k] : T(0), ep.relu);
  }

  // Accumulates one output plane per (n, k) tap by tap: the inner loop runs over a contiguous
  // output row, so it vectorizes for unit strides.
  void fwd_direct(const T* x, const T* w, T* y, Blend blend, const ConvEpilogue& ep) {
    const int P = yd_.h, Q = yd_.w, R = wd_.r, S = wd_.s;
    const int64_t xsh = xd_.stride_h, xsw = xd_.stride_w;
    const T* bias = static_cast<const T*>(ep.bias);
    std::vector<T> acc(pq_);
    for (int n = 0; n < xd_.n; ++n) {
      for (int k = 0; k < wd_.k; ++k) {
        std::fill(acc.begin(), acc.end(), T(0));
        const int gi = k / kg_;
        for (int c = 0; c < cg_; ++c) {
          const T* xp = x + n * xd_.stride_n + int64_t(gi * cg_ + c) * xd_.stride_c;
          const T* wk = w + (int64_t(k) * cg_ + c) * R * S;
          for (size_t tap = 0; tap < taps_.size(); ++tap) {
            const KernelTap& t = taps_[tap];
            const T wv = wk[tap];
            const int64_t step = cd_.stride_w * xsw;
            for (int p = t.p_lo; p < t.p_hi; ++p) {
              const T* xr =
                  xp + (p * cd_.stride_h + t.h_off) * xsh + (t.q_lo * cd_.stride_w + t.w_off) * xsw;
              T* a = acc.data() + int64_t(p) * Q + t.q_lo;
              for (int i = 0; i < t.q_hi - t.q_lo; ++i) a[i] += wv * xr[i * step];
            }
          }
        }
        T* yp = y + n * yd_.stride_n + k * yd_.stride_c;
        store_plane(yp, yd_.stride_h, yd_.stride_w, P, Q, acc.data(), Q, T(blend.alpha),
                    T(blend.beta));
        if (bias || ep.relu)
          apply_epilogue(yp, yd_.stride_h, yd_.stride_w, P, Q, bias ? bias[k] : T(0), ep.relu);
      }
    }
  }

  // Gathers each input-gradient plane (n, c) from the output planes of its group, scattering
  // within the owned plane only, so every dx element is written exactly once with the blend.
  void bwd_data_direct(const T* w, const T* dy, T* dx, Blend blend) {
    const int R = wd_.r, S = wd_.s, W = xd_.w;
    const int64_t dsh = yd_.stride_h, dsw = yd_.stride_w;
    std::vector<T> acc(hw_);
    for (int n = 0; n < xd_.n; ++n) {
      for (int c = 0; c < xd_.c; ++c) {
        std::fill(acc.begin(), acc.end(), T(0));
        const int gi = c / cg_, cl = c % cg_;
        for (int k = gi * kg_; k < (gi + 1) * kg_; ++k) {
          const T* dyp = dy + n * yd_.stride_n + k * yd_.stride_c;
          const T* wk = w + (int64_t(k) * cg_ + cl) * R * S;
          for (size_t tap = 0; tap < taps_.size(); ++tap) {
            const KernelTap& t = taps_[tap];
            const T wv = wk[tap];
            const int sw = cd_.stride_w;
            for (int p = t.p_lo; p < t.p_hi; ++p) {
              T* a = acc.data() + int64_t(p * cd_.stride_h + t.h_off) * W + t.q_lo * sw + t.w_off;
              const T* g = dyp + p * dsh + t.q_lo * dsw;
              for (int i = 0; i < t.q_hi - t.q_lo; ++i) a[i * sw] += wv * g[i * dsw];
            }
          }
        }
        store_plane(dx + n * xd_.stride_n + c * xd_.stride_c, xd_.stride_h, xd_.stride_w, xd_.h, W,
                    acc.data(), W, T(blend.alpha), T(blend.beta));
      }
    }
  }

  void bwd_filter_direct(const T* x, const T* dy, T* dw, Blend blend) {
    const int R = wd_.r, S = wd_.s;
    const T alpha = T(blend.alpha), beta = T(blend.beta);
    for (int k = 0; k < wd_.k; ++k) {
      const int gi = k / kg_;
      for (int c = 0; c < cg_; ++c) {
        for (size_t tap = 0; tap < taps_.size(); ++tap) {
          const KernelTap& t = taps_[tap];
          const int64_t step = cd_.stride_w * xd_.stride_w;
          T sum = 0;
          for (int n = 0; n < xd_.n; ++n) {
            const T* xp = x + n * xd_.stride_n + int64_t(gi * cg_ + c) * xd_.stride_c;
            const T* dyp = dy + n * yd_.stride_n + k * yd_.stride_c;
            for (int p = t.p_lo; p < t.p_hi; ++p) {
              const T* xr = xp + (p * cd_.stride_h + t.h_off) * xd_.stride_h +
                            (t.q_lo * cd_.stride_w + t.w_off) * xd_.stride_w;
              const T* g = dyp + p * yd_.stride_h + t.q_lo * yd_.stride_w;
              for (int i = 0; i < t.q_hi - t.q_lo; ++i) sum += g[i * yd_.stride_w] * xr[i * step];
            }
          }
          T& out = dw[(int64_t(k) * cg_ + c) * R * S + int64_t(tap)];
          out = beta == T(0) ? alpha * sum : alpha * sum + beta * out;
        }
      }
    }
  }

  Handle& h_;
  const ConvDesc& cd_;
  const TensorDesc& xd_;
  const FilterDesc& wd_;
  const TensorDesc& yd_;
  ConvGeom g_;
  std::vector<KernelTap> taps_;  // kernel position r * S + s
  int groups_, kg_, cg_;
  ConvCpuPlan plan_;
  int64_t crs_, pq_, hw_;
};

// Per-thread chunk matrices (im2col only) and partial filter gradients (several threads).
template <ConvAlgo A>
size_t workspace(Handle& h, const ConvProblem& p) {
  const size_t elem = dtype_size(p.xd.dtype);
  const ConvCpuPlan plan =
      plan_conv_cpu(geom_of(p), p.xd.n, p.wd.k, p.wd.count(), elem, h.workspace_budget(),
                    h.cpu_threads(), A == ConvAlgo::kIm2colGemm);
  return plan.total_elems() * elem;
}

size_t no_workspace(Handle&, const ConvProblem&) { return 0; }
const char* runs_everything(const ConvProblem&) { return nullptr; }

}  // namespace

const ConvImpl kConvIm2colGemm = float_conv_row<ConvCpu, Device::kCPU, ConvAlgo::kIm2colGemm>(
    conv_unsupported_gemm, workspace<ConvAlgo::kIm2colGemm>);
const ConvImpl kConvGemm1x1 = float_conv_row<ConvCpu, Device::kCPU, ConvAlgo::kGemm1x1>(
    conv_unsupported_gemm1x1, workspace<ConvAlgo::kGemm1x1>);
const ConvImpl kConvDirect = float_conv_row<ConvCpu, Device::kCPU, ConvAlgo::kDirect>(
    runs_everything, no_workspace, conv_takes_any_strides);

}  // namespace crema::prim::cpu
