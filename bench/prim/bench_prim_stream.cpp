// bench_prim's streaming rows: the per-channel bias add and bias gradient (against
// cudnnAddTensor and cudnnConvolutionBackwardBias), dropout (against cudnnDropoutForward and
// Backward: the two draw different masks, so each output is checked against its own mask rather
// than against the other's) and the fused solver update, which cuDNN has no counterpart for: its
// rows are checked against a host computation and rated against the copy ceiling alone.
// Rates are GB/s of the bytes each op must move, as in bench_prim_ops.cpp.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_prim.h"
#include "primitives/blas.h"
#include "primitives/conv.h"
#include "primitives/dropout.h"
#include "primitives/solver_update.h"

namespace crema::bench {
namespace {

constexpr prim::DataType kF32 = prim::DataType::kFloat32;
const float kOne = 1, kZero = 0;

uint8_t* bytes_ptr(float* p) { return reinterpret_cast<uint8_t*>(p); }

// ---- bias -------------------------------------------------------------------------------------

void bench_bias(Context& c, const Shape& s) {
  const bool want_fwd = selected(c.opt, "bias", s.name, "fwd");
  const bool want_bwd = selected(c.opt, "bias", s.name, "bwd");
  if (!want_fwd && !want_bwd) return;
  guarded("bias", s.name, want_fwd, want_bwd, [&] {
    const int n = batch_for(c.opt, s.name);
    const prim::TensorDesc yd = prim::TensorDesc::nchw(kF32, n, s.c, s.h, s.w);
    const TensorD yD(n, s.c, s.h, s.w), bD(1, s.c, 1, 1);
    const prim::DeviceBuffer bias = random_buffer(s.c, 31), y = random_buffer(yd.count(), 32);
    if (want_fwd) {
      // y += bias[c], in place: both start from copies of the same y.
      Row row{"bias", s.name, "fwd", "bias_add", "AddTensor"};
      row.bytes = bytes_of({yd.count(), yd.count(), s.c});
      RowCheck check;
      check.init = &y;
      bench_row(
          c, row, true, {&bias}, yd.count(),
          [&](float* const* in, float* out) { prim::bias_add(c.h, yd, out, in[0]); },
          [&](float* const* in, float* out) {
            BENCH_CUDNN(cudnnAddTensor(c.dnn, &kOne, bD.get(), in[0], &kOne, yD.get(), out));
          },
          check);
    }
    if (want_bwd) {
      Row row{"bias", s.name, "bwd", "conv_bwd_bias", "ConvolutionBackwardBias"};
      row.bytes = bytes_of({yd.count(), s.c});
      // crema sums each channel in double; cuDNN's float sums of up to 774k terms carry
      // rounding of order 1e-4 of the typical value.
      RowCheck check;
      check.tol = 1e-3;
      bench_row(
          c, row, true, {&y}, s.c,
          [&](float* const* in, float* out) { prim::conv_bwd_bias(c.h, yd, in[0], out); },
          [&](float* const* in, float* out) {
            BENCH_CUDNN(
                cudnnConvolutionBackwardBias(c.dnn, &kOne, yD.get(), in[0], &kZero, bD.get(), out));
          },
          check);
    }
  });
}

// ---- dropout ----------------------------------------------------------------------------------

class DropoutD : public CudnnObject<cudnnDropoutDescriptor_t, cudnnCreateDropoutDescriptor,
                                    cudnnDestroyDropoutDescriptor> {
 public:
  DropoutD(cudnnHandle_t dnn, float ratio, uint64_t seed) {
    size_t bytes = 0;
    BENCH_CUDNN(cudnnDropoutGetStatesSize(dnn, &bytes));
    states_ = prim::DeviceBuffer(prim::Device::kCUDA, bytes);
    BENCH_CUDNN(cudnnSetDropoutDescriptor(d_, dnn, ratio, states_.get(), bytes, seed));
  }

 private:
  prim::DeviceBuffer states_;
};

// Checks out = in * keep * scale for every element, where keep is the mask (crema) or, without
// one (cuDNN), whether out is nonzero (the inputs are never 0); and that the kept fraction is
// 1 - ratio within 1%. Returns the largest relative error of the kept elements.
double check_dropout(const std::vector<float>& in, const std::vector<float>& out,
                     const std::vector<uint8_t>* mask, double ratio, const char* who) {
  const double scale = 1.0 / (1.0 - ratio);
  int64_t kept = 0;
  double worst = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const bool keep = mask ? (*mask)[i] != 0 : out[i] != 0.0f;
    if (mask && (*mask)[i] > 1) throw std::runtime_error(std::string(who) + ": mask not 0/1");
    kept += keep;
    const double want = keep ? double(in[i]) * scale : 0.0;
    const double err = std::fabs(double(out[i]) - want) / std::max(std::fabs(want), 1e-30);
    if (!(err <= 1e-6) && !(want == 0.0 && out[i] == 0.0f))
      throw std::runtime_error(std::string(who) + ": output is not input * mask * scale");
    if (keep) worst = std::max(worst, err);
  }
  const double frac = double(kept) / double(in.size());
  if (std::fabs(frac - (1.0 - ratio)) > 0.01)
    throw std::runtime_error(std::string(who) + ": kept fraction " + std::to_string(frac));
  return worst;
}

std::vector<uint8_t> mask_to_host(cudaStream_t s, const prim::DeviceBuffer& m) {
  BENCH_CUDA(cudaStreamSynchronize(s));
  std::vector<uint8_t> v(m.bytes());
  if (!v.empty()) BENCH_CUDA(cudaMemcpy(v.data(), m.get(), v.size(), cudaMemcpyDeviceToHost));
  return v;
}

void bench_dropout(Context& c, const Shape& s) {
  const bool want_fwd = selected(c.opt, "dropout", s.name, "fwd");
  const bool want_bwd = selected(c.opt, "dropout", s.name, "bwd");
  if (!want_fwd && !want_bwd) return;
  guarded("dropout", s.name, want_fwd, want_bwd, [&] {
    const int n = batch_for(c.opt, s.name);
    const int64_t count = int64_t(n) * s.c * s.h * s.w;
    prim::DropoutDesc dd;
    dd.count = count;
    dd.ratio = 0.5;
    const TensorD D(n, s.c, s.h, s.w);
    const DropoutD dD(c.dnn, float(dd.ratio), 1234);
    size_t reserve_bytes = 0;
    BENCH_CUDNN(cudnnDropoutGetReserveSpaceSize(D.get(), &reserve_bytes));
    const prim::DeviceBuffer x = random_buffer(count, 41), dy = random_buffer(count, 42);
    const prim::DeviceBuffer mask(prim::Device::kCUDA, size_t(count));
    const prim::DeviceBuffer reserve(prim::Device::kCUDA, reserve_bytes);
    char dnn_note[64];
    std::snprintf(dnn_note, sizeof(dnn_note), " (reserve %.2f B/element)",
                  double(reserve_bytes) / double(count));

    // Inputs of every call: the data, crema's mask, cuDNN's reserve space.
    const Impl crema_fwd = [&](float* const* in, float* out) {
      prim::dropout_fwd(c.h, dd, in[0], out, bytes_ptr(in[1]));
    };
    const Impl cudnn_fwd = [&](float* const* in, float* out) {
      BENCH_CUDNN(
          cudnnDropoutForward(c.dnn, dD.get(), D.get(), in[0], D.get(), out, in[2], reserve_bytes));
    };
    const Impl crema_bwd = [&](float* const* in, float* out) {
      prim::dropout_bwd(c.h, dd, in[0], bytes_ptr(in[1]), out);
    };
    const Impl cudnn_bwd = [&](float* const* in, float* out) {
      BENCH_CUDNN(cudnnDropoutBackward(c.dnn, dD.get(), D.get(), in[0], D.get(), out, in[2],
                                       reserve_bytes));
    };

    // Each library's forward, then its backward on its own mask, checked once untimed.
    const std::vector<float> xh = to_host(c.stream, x.get(), count);
    const std::vector<float> dyh = to_host(c.stream, dy.get(), count);
    prim::DeviceBuffer y_crema = nan_buffer(count), y_dnn = nan_buffer(count);
    prim::DeviceBuffer dx_crema = nan_buffer(count), dx_dnn = nan_buffer(count);
    float* fin[3] = {f32(x), f32(mask), f32(reserve)};
    float* bin[3] = {f32(dy), f32(mask), f32(reserve)};
    crema_fwd(fin, f32(y_crema));
    cudnn_fwd(fin, f32(y_dnn));
    crema_bwd(bin, f32(dx_crema));
    cudnn_bwd(bin, f32(dx_dnn));
    const std::vector<uint8_t> mh = mask_to_host(c.stream, mask);
    const double fwd_err =
        check_dropout(xh, to_host(c.stream, y_crema.get(), count), &mh, dd.ratio, "crema forward");
    const std::vector<float> yd = to_host(c.stream, y_dnn.get(), count);
    check_dropout(xh, yd, nullptr, dd.ratio, "cuDNN forward");
    const double bwd_err = check_dropout(dyh, to_host(c.stream, dx_crema.get(), count), &mh,
                                         dd.ratio, "crema backward");
    std::vector<uint8_t> dnn_mask(yd.size());
    for (size_t i = 0; i < yd.size(); ++i) dnn_mask[i] = yd[i] != 0.0f;
    check_dropout(dyh, to_host(c.stream, dx_dnn.get(), count), &dnn_mask, dd.ratio,
                  "cuDNN backward");

    // crema moves the data in and out and one mask byte per element, each way.
    const double moved = bytes_of({count, count}) + double(count);
    if (want_fwd) {
      Row row{"dropout", s.name, "fwd", "dropout_fwd", std::string("DropoutForward") + dnn_note};
      row.bytes = moved;
      row.err = fwd_err;
      time_row(c, row, {&x, &mask, &reserve}, y_crema, y_dnn, crema_fwd, cudnn_fwd);
    }
    if (want_bwd) {
      Row row{"dropout", s.name, "bwd", "dropout_bwd", std::string("DropoutBackward") + dnn_note};
      row.bytes = moved;
      row.err = bwd_err;
      time_row(c, row, {&dy, &mask, &reserve}, dx_crema, dx_dnn, crema_bwd, cudnn_bwd);
    }
  });
}

// ---- solver update ----------------------------------------------------------------------------

struct Param {
  const char* name;
  int64_t count;
};

// The rule of d on host doubles, for element i of w, g, h, h2 (the formulas of solver_update.h
// for the two rules benchmarked).
double expected_w(const prim::SolverUpdateDesc& d, double w, double g, double h, double h2) {
  g = g * d.grad_scale + d.decay * w;
  if (d.rule == prim::UpdateRule::kSgd) return w - (d.rate * g + d.momentum * h);
  const double m = (1 - d.momentum) * g + d.momentum * h;
  const double v = (1 - d.momentum2) * g * g + d.momentum2 * h2;
  return w - d.rate * (m / (std::sqrt(v) + d.delta));
}

void bench_update(Context& c, const Param& p, const prim::SolverUpdateDesc& rule_desc,
                  const char* rule) {
  const std::string op = std::string("update ") + rule;
  if (!selected(c.opt, op, p.name, "step")) return;
  guarded(op, p.name, true, false, [&] {
    prim::SolverUpdateDesc d = rule_desc;
    d.count = p.count;
    const int hist = prim::solver_update_history(d.rule);
    const prim::DeviceBuffer w = random_buffer(p.count, 51), g = random_buffer(p.count, 52);
    const prim::DeviceBuffer h = random_buffer(p.count, 53);
    // Adam's second moment is a running mean of squares: never negative.
    prim::DeviceBuffer h2;
    if (hist > 1) {
      std::vector<float> v = to_host(c.stream, random_buffer(p.count, 54).get(), p.count);
      for (float& e : v) e = std::fabs(e);
      h2 = prim::DeviceBuffer(prim::Device::kCUDA, v.size() * sizeof(float));
      BENCH_CUDA(cudaMemcpy(h2.get(), v.data(), h2.bytes(), cudaMemcpyHostToDevice));
    }
    std::vector<const prim::DeviceBuffer*> in{&g, &h};
    if (hist > 1) in.push_back(&h2);
    const Impl crema = [&](float* const* q, float* out) {
      prim::solver_update(c.h, d, out, q[0], q[1], hist > 1 ? q[2] : nullptr);
    };

    // One update on copies, against the host.
    const prim::DeviceBuffer w1 = copy_of(w), g1 = copy_of(g), h1 = copy_of(h);
    prim::DeviceBuffer h21;
    if (hist > 1) h21 = copy_of(h2);
    float* q1[3] = {f32(g1), f32(h1), hist > 1 ? f32(h21) : nullptr};
    crema(q1, f32(w1));
    const std::vector<float> got = to_host(c.stream, w1.get(), p.count);
    const std::vector<float> wh = to_host(c.stream, w.get(), p.count);
    const std::vector<float> gh = to_host(c.stream, g.get(), p.count);
    const std::vector<float> hh = to_host(c.stream, h.get(), p.count);
    const std::vector<float> h2h =
        hist > 1 ? to_host(c.stream, h2.get(), p.count) : std::vector<float>(p.count, 0.0f);
    std::vector<float> want(size_t(p.count));
    for (size_t i = 0; i < want.size(); ++i)
      want[i] = float(expected_w(d, wh[i], gh[i], hh[i], h2h[i]));
    Row row{op, p.name, "step", "solver_update", ""};
    row.err = max_rel_err(got, want);
    require_close(row.err, 1e-5, "weights");
    // Every tensor read once and written once (the gradient is left holding the step).
    row.bytes = 2.0 * double(2 + hist) * double(p.count) * sizeof(float);
    time_row(c, row, in, w, prim::DeviceBuffer(), crema, Impl());
  });
}

}  // namespace

void run_bias(Context& c) {
  static const Shape shapes[] = {{"caffenet:conv1", 96, 55, 55},
                                 {"resnet50:conv1", 64, 112, 112},
                                 {"googlenet:inception_3a/1x1", 64, 28, 28},
                                 {"caffenet:fc6", 4096, 1, 1}};
  for (const Shape& s : shapes) bench_bias(c, s);
}

void run_dropout(Context& c) {
  // CaffeNet's dropout layers (drop7 has drop6's shape), and one the size of CaffeNet's conv1
  // output, large enough that the rate is not bounded by launch and tail effects.
  static const Shape shapes[] = {{"caffenet:drop6", 4096, 1, 1},
                                 {"caffenet:conv1-sized", 96, 55, 55}};
  for (const Shape& s : shapes) bench_dropout(c, s);
}

void run_solver_update(Context& c) {
  // CaffeNet's solver: SGD, momentum 0.9, L2 weight decay 5e-4. The rate keeps repeated updates
  // from drifting towards denormals or overflow over the timed calls.
  prim::SolverUpdateDesc sgd;
  sgd.rule = prim::UpdateRule::kSgd;
  sgd.regularization = prim::Regularization::kL2;
  sgd.decay = 5e-4;
  sgd.rate = 0.1;
  sgd.momentum = 0.9;
  prim::SolverUpdateDesc adam = sgd;
  adam.rule = prim::UpdateRule::kAdam;
  adam.rate = 1e-3;
  adam.momentum2 = 0.999;
  adam.delta = 1e-8;
  static const Param params[] = {{"caffenet:fc6 weights", int64_t(4096) * 9216},
                                 {"caffenet:conv2 weights", int64_t(256) * 48 * 5 * 5},
                                 {"resnet50:res4a_branch2b weights", int64_t(256) * 256 * 3 * 3}};
  for (const Param& p : params) bench_update(c, p, sgd, "sgd");
  bench_update(c, params[0], adam, "adam");
}

}  // namespace crema::bench
