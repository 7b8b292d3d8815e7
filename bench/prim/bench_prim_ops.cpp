// bench_prim's memory-bound rows: pooling, LRN, softmax and ReLU, forward and backward, crema
// against cudnnPoolingForward/Backward, cudnnLRNCrossChannelForward/Backward,
// cudnnSoftmaxForward/Backward and cudnnActivationForward/Backward on the same input buffers.
// Their rate is GB/s of the bytes the operation must move: its inputs read and output written
// once.
#include <memory>
#include <string>
#include <vector>

#include "bench_prim.h"
#include "primitives/activation.h"
#include "primitives/lrn.h"
#include "primitives/pool.h"
#include "primitives/softmax.h"
#include "problems.h"

namespace crema::bench {
namespace {

constexpr prim::DataType kF32 = prim::DataType::kFloat32;
const float kOne = 1, kZero = 0;

// The rows an --<op>-algo value asks for: "all" is kAuto then every CUDA row (callers skip
// those that do not run a layer), any other value the one row it names.
template <typename Algo>
std::vector<Algo> rows_to_time(const std::string& opt, std::vector<Algo> rows,
                               Algo (*of)(const std::string&)) {
  if (opt != "all") return {of(opt)};
  rows.insert(rows.begin(), Algo::kAuto);
  return rows;
}

// "[name]": the table row a crema column ran.
template <typename Algo>
std::string row_tag(Algo a, const char* (*row_name)(Algo)) {
  return std::string("[") + row_name(a) + "]";
}

// ---- pooling ------------------------------------------------------------------------------

// deterministic picks CUDNN_POOLING_MAX_DETERMINISTIC for max pooling: crema's backward never
// uses atomics, cuDNN's plain MAX mode may.
class PoolD : public CudnnObject<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor,
                                 cudnnDestroyPoolingDescriptor> {
 public:
  explicit PoolD(const prim::PoolDesc& pd, bool deterministic = false) {
    const cudnnPoolingMode_t mode = pd.mode != prim::PoolMode::kMax
                                        ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                    : deterministic ? CUDNN_POOLING_MAX_DETERMINISTIC
                                                    : CUDNN_POOLING_MAX;
    BENCH_CUDNN(cudnnSetPooling2dDescriptor(d_, mode, CUDNN_NOT_PROPAGATE_NAN, pd.kernel_h,
                                            pd.kernel_w, pd.pad_h, pd.pad_w, pd.stride_h,
                                            pd.stride_w));
  }
};

// Pooling layers of the benchmarked nets beyond the shared list.
const std::vector<test::PoolProblem>& extra_pool_problems() {
  using test::PoolKind;
  static const std::vector<test::PoolProblem> list = {
      {"caffenet:pool2", PoolKind::kMax, 1, 256, 27, 27, 3, 3, 0, 0, 2, 2},
      {"googlenet:pool2/3x3_s2", PoolKind::kMax, 1, 192, 56, 56, 3, 3, 0, 0, 2, 2},
      {"googlenet:pool3/3x3_s2", PoolKind::kMax, 1, 480, 28, 28, 3, 3, 0, 0, 2, 2},
      {"googlenet:inception_4a/pool", PoolKind::kMax, 1, 480, 14, 14, 3, 3, 1, 1, 1, 1},
      {"googlenet:pool4/3x3_s2", PoolKind::kMax, 1, 832, 14, 14, 3, 3, 0, 0, 2, 2},
  };
  return list;
}

void bench_pool(Context& c, const test::PoolProblem& pp) {
  const std::string layer = pp.name;
  const char* op = pp.kind == test::PoolKind::kMax ? "pool max" : "pool avg";
  const bool want_fwd = selected(c.opt, op, layer, "fwd");
  const bool want_bwd = selected(c.opt, op, layer, "bwd");
  if (!want_fwd && !want_bwd) return;
  guarded(op, layer, want_fwd, want_bwd, [&] {
    prim::PoolDesc pd;
    pd.mode = pp.kind == test::PoolKind::kMax ? prim::PoolMode::kMax : prim::PoolMode::kAverage;
    pd.kernel_h = pp.kernel_h;
    pd.kernel_w = pp.kernel_w;
    pd.pad_h = pp.pad_h;
    pd.pad_w = pp.pad_w;
    pd.stride_h = pp.stride_h;
    pd.stride_w = pp.stride_w;
    const int n = batch_for(c.opt, layer);
    const prim::TensorDesc xd = prim::TensorDesc::nchw(kF32, n, pp.c, pp.h, pp.w);
    // Distinct values in each plane: no tied maximum whose gradient the two could route apart.
    const prim::DeviceBuffer x = random_buffer(xd.count(), 11, int64_t(pp.h) * pp.w);
    const TensorD xD(n, pp.c, pp.h, pp.w);
    const PoolD pD(pd);

    // Caffe rounds the output size up; cuDNN documents floor. Try Caffe's shape first; where
    // cuDNN rejects it or computes something else, both run the floor shape, and the layer
    // name says so.
    auto out_dim = [](int in, int k, int pad, int s, bool ceil_mode) {
      return prim::pool_out_dim(in, k, pad, s, ceil_mode);
    };
    const int pc = out_dim(pp.h, pp.kernel_h, pp.pad_h, pp.stride_h, true);
    const int qc = out_dim(pp.w, pp.kernel_w, pp.pad_w, pp.stride_w, true);
    const int pf = out_dim(pp.h, pp.kernel_h, pp.pad_h, pp.stride_h, false);
    const int qf = out_dim(pp.w, pp.kernel_w, pp.pad_w, pp.stride_w, false);
    const bool differs = pc != pf || qc != qf;

    // The rows to time: the first decides the output shape (and gives the backward's y).
    const std::vector<prim::PoolAlgo> algos =
        rows_to_time(c.opt.pool_algo, prim::pool_algos(prim::Device::kCUDA), prim::pool_algo_of);
    auto with_algo = [&](prim::PoolAlgo a) {
      prim::PoolDesc forced = pd;
      forced.algo = a;
      return forced;
    };
    auto algo_label = [](const char* pass, prim::PoolAlgo a) {
      return pass + row_tag(a, prim::pool_algo_name);
    };

    int P = pc, Q = qc;
    std::string label = layer, note;
    std::unique_ptr<TensorD> yD;
    prim::TensorDesc yd;
    prim::DeviceBuffer y;
    auto time_fwd = [&](prim::PoolAlgo a) {
      const prim::PoolDesc fpd = with_algo(a);
      Row row{op, label, "fwd", algo_label("pool_fwd", a), "PoolingForward" + note};
      row.bytes = bytes_of({xd.count(), yd.count()});
      return bench_row(
          c, row, want_fwd, {&x}, yd.count(),
          [&](float* const* in, float* out) { prim::pool_fwd(c.h, fpd, xd, in[0], yd, out); },
          [&](float* const* in, float* out) {
            BENCH_CUDNN(cudnnPoolingForward(c.dnn, pD.get(), &kOne, xD.get(), in[0], &kZero,
                                            yD->get(), out));
          });
    };
    for (int attempt = 0; attempt < (differs ? 2 : 1); ++attempt) {
      if (attempt == 1) {
        P = pf;
        Q = qf;
        label = layer + " (floor)";
      }
      yd = prim::TensorDesc::nchw(kF32, n, pp.c, P, Q);
      yD = std::make_unique<TensorD>(n, pp.c, P, Q);
      try {
        y = time_fwd(algos.front());
        break;
      } catch (const std::exception& e) {
        if (!differs || attempt == 1) throw;
        note = std::string(" (on the ceil shape: ") + e.what() + ")";
      }
    }
    // Device buffers are 256-byte aligned: any of them stands for the pointers' alignment.
    for (size_t i = 1; i < algos.size() && want_fwd; ++i)
      if (!prim::pool_fwd_unsupported(c.h, with_algo(algos[i]), xd, x.get(), yd, y.get()))
        time_fwd(algos[i]);
    if (!want_bwd) return;
    // The same y (crema's, equal to cuDNN's) enters both backward passes.
    const prim::DeviceBuffer dy = random_buffer(yd.count(), 12);
    const bool is_max = pd.mode == prim::PoolMode::kMax;
    for (size_t i = 0; i < algos.size(); ++i) {
      const prim::PoolDesc bpd = with_algo(algos[i]);
      if (i > 0 &&
          prim::pool_bwd_unsupported(c.h, bpd, yd, y.get(), dy.get(), xd, x.get(), x.get()))
        continue;
      // Max pooling also against cuDNN's deterministic mode, the like-for-like baseline (the
      // only one for the rows after the first).
      for (bool deterministic : {false, true}) {
        if ((deterministic && !is_max) || (!deterministic && i > 0 && is_max)) continue;
        const PoolD bD(pd, deterministic);
        Row row{
            op, label, "bwd", algo_label("pool_bwd", algos[i]),
            std::string(deterministic ? "PoolingBackward MAX_DETERMINISTIC" : "PoolingBackward") +
                note};
        row.bytes = is_max ? bytes_of({xd.count(), yd.count(), yd.count(), xd.count()})
                           : bytes_of({yd.count(), xd.count()});
        bench_row(
            c, row, true, {&x, &y, &dy}, xd.count(),
            [&](float* const* in, float* out) {
              prim::pool_bwd(c.h, bpd, yd, in[1], in[2], xd, in[0], out);
            },
            [&](float* const* in, float* out) {
              BENCH_CUDNN(cudnnPoolingBackward(c.dnn, bD.get(), &kOne, yD->get(), in[1], yD->get(),
                                               in[2], xD.get(), in[0], &kZero, xD.get(), out));
            });
      }
    }
  });
}

// ---- LRN, softmax, ReLU ---------------------------------------------------------------------

class LrnD : public CudnnObject<cudnnLRNDescriptor_t, cudnnCreateLRNDescriptor,
                                cudnnDestroyLRNDescriptor> {
 public:
  explicit LrnD(const prim::LrnDesc& ld) {
    BENCH_CUDNN(cudnnSetLRNDescriptor(d_, unsigned(ld.local_size), ld.alpha, ld.beta, ld.k));
  }
};

class ActD : public CudnnObject<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor,
                                cudnnDestroyActivationDescriptor> {
 public:
  ActD() {
    BENCH_CUDNN(
        cudnnSetActivationDescriptor(d_, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
  }
};

// A forward row and its backward row on one shape: fwd(x) -> y, bwd(x, y, dy) -> dx, with
// crema's y feeding both backward passes. bwd_tensors: tensors of the shape the backward must
// move (the forward moves two: x and y).
struct FwdBwd {
  std::string op, crema_name, cudnn_name;
  int bwd_tensors;
  Impl crema_fwd, cudnn_fwd, crema_bwd, cudnn_bwd;  // bwd inputs: x, y, dy
  std::string row = "";                             // "[name]": the table row crema runs
};

void bench_fwd_bwd(Context& c, const std::string& layer, int64_t count, const FwdBwd& f) {
  const bool want_fwd = selected(c.opt, f.op, layer, "fwd");
  const bool want_bwd = selected(c.opt, f.op, layer, "bwd");
  if (!want_fwd && !want_bwd) return;
  guarded(f.op, layer, want_fwd, want_bwd, [&] {
    const prim::DeviceBuffer x = random_buffer(count, 21);
    Row fwd{f.op, layer, "fwd", f.crema_name + "_fwd" + f.row, f.cudnn_name + "Forward"};
    fwd.bytes = 2.0 * double(count) * sizeof(float);
    const prim::DeviceBuffer y = bench_row(c, fwd, want_fwd, {&x}, count, f.crema_fwd, f.cudnn_fwd);
    if (!want_bwd) return;
    const prim::DeviceBuffer dy = random_buffer(count, 22);
    Row bwd{f.op, layer, "bwd", f.crema_name + "_bwd" + f.row, f.cudnn_name + "Backward"};
    bwd.bytes = double(f.bwd_tensors) * double(count) * sizeof(float);
    bench_row(c, bwd, true, {&x, &y, &dy}, count, f.crema_bwd, f.cudnn_bwd);
  });
}

}  // namespace

void run_pool(Context& c) {
  std::vector<test::PoolProblem> all = test::named_pool_problems();
  all.insert(all.end(), extra_pool_problems().begin(), extra_pool_problems().end());
  for (const test::PoolProblem& p : all) bench_pool(c, p);
}

void run_lrn(Context& c) {
  // Caffe's LRN defaults in these nets: local_size 5, alpha 1e-4, beta 0.75, k 1. cuDNN divides
  // alpha by the window size as Caffe does.
  static const Shape shapes[] = {
      {"caffenet:norm1", 96, 55, 55},
      {"caffenet:norm2", 256, 27, 27},
      {"googlenet:pool1/norm1", 64, 56, 56},
      {"googlenet:conv2/norm2", 192, 56, 56},
  };
  prim::LrnDesc ld;
  ld.mode = prim::LrnMode::kAcrossChannels;
  ld.local_size = 5;
  ld.alpha = 1e-4;
  ld.beta = 0.75;
  ld.k = 1.0;
  const std::vector<prim::LrnAlgo> algos =
      rows_to_time(c.opt.lrn_algo, prim::lrn_algos(prim::Device::kCUDA), prim::lrn_algo_of);
  for (const Shape& s : shapes) {
    const int n = batch_for(c.opt, s.name);
    const prim::TensorDesc d = prim::TensorDesc::nchw(kF32, n, s.c, s.h, s.w);
    std::unique_ptr<TensorD> D;
    std::unique_ptr<LrnD> L;
    try {
      D = std::make_unique<TensorD>(n, s.c, s.h, s.w);
      L = std::make_unique<LrnD>(ld);
    } catch (const std::exception& e) {
      print_failed("lrn", s.name, "setup", e.what());
      continue;
    }
    const auto mode = CUDNN_LRN_CROSS_CHANNEL_DIM1;
    for (prim::LrnAlgo a : algos) {
      prim::LrnDesc row = ld;
      row.algo = a;
      if (prim::lrn_fwd_unsupported(c.h, row, d, nullptr, d, nullptr)) continue;
      FwdBwd f{"lrn",
               "lrn",
               "LRNCrossChannel",
               4,
               [&](float* const* in, float* out) { prim::lrn_fwd(c.h, row, d, in[0], d, out); },
               [&](float* const* in, float* out) {
                 BENCH_CUDNN(cudnnLRNCrossChannelForward(c.dnn, L->get(), mode, &kOne, D->get(),
                                                         in[0], &kZero, D->get(), out));
               },
               [&](float* const* in, float* out) {
                 prim::lrn_bwd(c.h, row, d, in[1], in[2], d, in[0], out);
               },
               [&](float* const* in, float* out) {
                 BENCH_CUDNN(cudnnLRNCrossChannelBackward(c.dnn, L->get(), mode, &kOne, D->get(),
                                                          in[1], D->get(), in[2], D->get(), in[0],
                                                          &kZero, D->get(), out));
               },
               row_tag(a, prim::lrn_algo_name)};
      bench_fwd_bwd(c, s.name, d.count(), f);
    }
  }
}

void run_softmax(Context& c) {
  static const Shape shapes[] = {{"caffenet:prob", 1000, 1, 1}, {"googlenet:prob", 1000, 1, 1}};
  for (const Shape& s : shapes) {
    const int n = batch_for(c.opt, s.name);
    prim::SoftmaxDesc sd;
    sd.dtype = kF32;
    sd.outer = n;
    sd.channels = s.c;
    sd.inner = int64_t(s.h) * s.w;
    std::unique_ptr<TensorD> D;
    try {
      D = std::make_unique<TensorD>(n, s.c, s.h, s.w);
    } catch (const std::exception& e) {
      print_failed("softmax", s.name, "setup", e.what());
      continue;
    }
    const auto algo = CUDNN_SOFTMAX_ACCURATE;
    const auto mode = CUDNN_SOFTMAX_MODE_CHANNEL;
    for (prim::SoftmaxAlgo a : rows_to_time(
             c.opt.softmax_algo, prim::softmax_algos(prim::Device::kCUDA), prim::softmax_algo_of)) {
      prim::SoftmaxDesc row = sd;
      row.algo = a;
      if (prim::softmax_fwd_unsupported(c.h, row, nullptr, nullptr)) continue;
      FwdBwd f{
          "softmax",
          "softmax",
          "Softmax",
          3,
          [&](float* const* in, float* out) { prim::softmax_fwd(c.h, row, in[0], out); },
          [&](float* const* in, float* out) {
            BENCH_CUDNN(cudnnSoftmaxForward(c.dnn, algo, mode, &kOne, D->get(), in[0], &kZero,
                                            D->get(), out));
          },
          [&](float* const* in, float* out) { prim::softmax_bwd(c.h, row, in[1], in[2], out); },
          [&](float* const* in, float* out) {
            BENCH_CUDNN(cudnnSoftmaxBackward(c.dnn, algo, mode, &kOne, D->get(), in[1], D->get(),
                                             in[2], &kZero, D->get(), out));
          },
          row_tag(a, prim::softmax_algo_name)};
      bench_fwd_bwd(c, s.name, int64_t(n) * s.c * s.h * s.w, f);
    }
  }
}

void run_relu(Context& c) {
  // ReLU on the first convolution's output; the backward reads one of x or y, and dy.
  static const Shape shapes[] = {{"caffenet:relu1", 96, 55, 55},
                                 {"resnet50:conv1_relu", 64, 112, 112}};
  const prim::ActDesc ad;  // ReLU, slope 0
  for (const Shape& s : shapes) {
    const int n = batch_for(c.opt, s.name);
    const prim::TensorDesc d = prim::TensorDesc::nchw(kF32, n, s.c, s.h, s.w);
    std::unique_ptr<TensorD> D;
    std::unique_ptr<ActD> A;
    try {
      D = std::make_unique<TensorD>(n, s.c, s.h, s.w);
      A = std::make_unique<ActD>();
    } catch (const std::exception& e) {
      print_failed("relu", s.name, "setup", e.what());
      continue;
    }
    FwdBwd f{
        "relu",
        "act",
        "Activation",
        3,
        [&](float* const* in, float* out) { prim::act_fwd(c.h, ad, d, in[0], d, out); },
        [&](float* const* in, float* out) {
          BENCH_CUDNN(cudnnActivationForward(c.dnn, A->get(), &kOne, D->get(), in[0], &kZero,
                                             D->get(), out));
        },
        [&](float* const* in, float* out) {
          prim::act_bwd(c.h, ad, d, in[1], in[2], d, in[0], out);
        },
        [&](float* const* in, float* out) {
          BENCH_CUDNN(cudnnActivationBackward(c.dnn, A->get(), &kOne, D->get(), in[1], D->get(),
                                              in[2], D->get(), in[0], &kZero, D->get(), out));
        }};
    bench_fwd_bwd(c, s.name, d.count(), f);
  }
}

}  // namespace crema::bench
