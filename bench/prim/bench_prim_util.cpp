// bench_prim's shared machinery: see bench_prim.h.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <thread>
#include <utility>

#include "bench_prim.h"

namespace crema::bench {

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    const std::string call(what);
    throw std::runtime_error(call.substr(0, call.find('(')) + ": " + cudaGetErrorString(e));
  }
}

void check_cudnn(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) {
    const std::string call(what);
    throw std::runtime_error(call.substr(0, call.find('(')) + ": " + cudnnGetErrorString(s));
  }
}

TensorD::TensorD(int n, int c, int h, int w, cudnnDataType_t t, bool nhwc) {
  BENCH_CUDNN(
      cudnnSetTensor4dDescriptor(d_, nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, t, n, c, h, w));
}

FilterD::FilterD(int k, int c, int r, int s, cudnnDataType_t t, bool nhwc) {
  BENCH_CUDNN(
      cudnnSetFilter4dDescriptor(d_, t, nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, k, c, r, s));
}

namespace {

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Threads parallel_for splits n items over: at least `grain` items each.
int64_t workers(int64_t n, int64_t grain = 1 << 16) {
  return std::clamp<int64_t>(std::thread::hardware_concurrency(), 1,
                             std::max<int64_t>(1, n / grain));
}

// Runs body(t, begin, end) for t < workers(n) over contiguous parts of [0, n): filling and
// comparing hundreds of millions of floats on one core would dominate the run.
template <typename F>
void parallel_for(int64_t n, F body, int64_t grain = 1 << 16) {
  const int64_t threads = workers(n, grain);
  if (threads <= 1) {
    body(int64_t(0), int64_t(0), n);
    return;
  }
  std::vector<std::thread> pool;
  const int64_t chunk = (n + threads - 1) / threads;
  for (int64_t t = 0; t < threads; ++t) {
    const int64_t b = std::min(n, t * chunk), e = std::min(n, b + chunk);
    pool.emplace_back([=] { body(t, b, e); });
  }
  for (auto& th : pool) th.join();
}

// Makes the values of each run of `plane` floats distinct, moving duplicates up by an ulp or
// two, so a max-pooling window never holds a tied maximum (whose gradient the two libraries may
// route differently).
void make_distinct(std::vector<float>& v, int64_t plane) {
  const int64_t planes = int64_t(v.size()) / plane;
  parallel_for(
      planes,
      [&](int64_t, int64_t b, int64_t e) {
        std::vector<std::pair<float, int64_t>> sorted(static_cast<size_t>(plane));
        for (int64_t p = b; p < e; ++p) {
          float* x = v.data() + p * plane;
          for (int64_t i = 0; i < plane; ++i) sorted[size_t(i)] = {x[i], i};
          std::sort(sorted.begin(), sorted.end());
          for (size_t i = 1; i < sorted.size(); ++i) {
            const float lo = std::nextafter(sorted[i - 1].first, 2.0f);
            if (sorted[i].first < lo) sorted[i].first = lo;
            x[sorted[i].second] = sorted[i].first;
          }
        }
      },
      std::max<int64_t>(1, (1 << 16) / plane));
}

}  // namespace

prim::DeviceBuffer random_buffer(int64_t count, uint64_t seed, int64_t distinct_plane) {
  std::vector<float> host(size_t(std::max<int64_t>(count, 0)));
  const uint64_t key = mix64(seed + 0x9E3779B97F4A7C15ull);
  parallel_for(count, [&](int64_t, int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      // 23 random bits plus one half: odd multiples of 2^-23 in (-1, 1), never exactly zero.
      const uint64_t r = mix64(key ^ (uint64_t(i) * 0xD1B54A32D192ED03ull)) >> 41;
      host[size_t(i)] = (float(int64_t(r) - (int64_t(1) << 22)) + 0.5f) * (1.0f / (1 << 22));
    }
  });
  if (distinct_plane > 1 && count % distinct_plane == 0) make_distinct(host, distinct_plane);
  prim::DeviceBuffer d(prim::Device::kCUDA, host.size() * sizeof(float));
  if (count > 0)
    prim::device_memcpy(d.get(), prim::Device::kCUDA, host.data(), prim::Device::kCPU,
                        host.size() * sizeof(float));
  return d;
}

prim::DeviceBuffer copy_of(const prim::DeviceBuffer& b) {
  prim::DeviceBuffer d(prim::Device::kCUDA, b.bytes());
  if (b.bytes()) BENCH_CUDA(cudaMemcpy(d.get(), b.get(), b.bytes(), cudaMemcpyDeviceToDevice));
  return d;
}

prim::DeviceBuffer nan_buffer(int64_t count) {
  prim::DeviceBuffer d(prim::Device::kCUDA, size_t(count) * sizeof(float));
  if (count > 0) BENCH_CUDA(cudaMemset(d.get(), 0xFF, size_t(count) * sizeof(float)));
  return d;
}

std::vector<float> to_host(cudaStream_t s, const void* p, int64_t count) {
  BENCH_CUDA(cudaStreamSynchronize(s));
  std::vector<float> v(static_cast<size_t>(count));
  if (count > 0)
    BENCH_CUDA(cudaMemcpy(v.data(), p, size_t(count) * sizeof(float), cudaMemcpyDeviceToHost));
  return v;
}

double max_rel_err(const std::vector<float>& a, const std::vector<float>& ref) {
  if (a.size() != ref.size()) return std::numeric_limits<double>::infinity();
  const int64_t n = int64_t(ref.size());
  if (n == 0) return 0;
  std::vector<double> sum(size_t(workers(n)), 0), worst(size_t(workers(n)), 0);
  parallel_for(n, [&](int64_t t, int64_t b, int64_t e) {
    double s = 0;
    for (int64_t i = b; i < e; ++i) s += std::fabs(double(ref[size_t(i)]));
    sum[size_t(t)] = s;
  });
  double total = 0;
  for (double s : sum) total += s;
  const double floor = std::max(total / double(n), 1e-30);
  const double inf = std::numeric_limits<double>::infinity();
  parallel_for(n, [&](int64_t t, int64_t b, int64_t e) {
    double w = 0;
    for (int64_t i = b; i < e; ++i) {
      const double x = a[size_t(i)], r = ref[size_t(i)];
      if (!std::isfinite(x) || !std::isfinite(r)) {
        w = inf;
        break;
      }
      w = std::max(w, std::fabs(x - r) / std::max(std::fabs(r), floor));
    }
    worst[size_t(t)] = w;
  });
  return *std::max_element(worst.begin(), worst.end());
}

Rotation::Rotation(const std::vector<std::pair<void*, size_t>>& bufs, size_t l2_bytes) {
  size_t total = 0;
  for (const auto& b : bufs) {
    base_.push_back(b.first);
    total += b.second;
  }
  // Three times L2 between two uses of the same bytes evicts them under any replacement policy
  // worth the name; 64 copies bound the memory spent on tiny problems.
  const size_t target = 3 * l2_bytes;
  if (total > 0 && total < target)
    copies_ = int(std::min<size_t>(64, (target + total - 1) / total));
  for (int j = 1; j < copies_; ++j)
    for (const auto& b : bufs) {
      extra_.emplace_back(prim::Device::kCUDA, b.second);
      if (b.second)
        BENCH_CUDA(cudaMemcpy(extra_.back().get(), b.first, b.second, cudaMemcpyDeviceToDevice));
    }
}

float* Rotation::at(int b, int i) const {
  const int j = i % copies_;
  if (j == 0) return static_cast<float*>(base_[size_t(b)]);
  return static_cast<float*>(extra_[size_t(j - 1) * base_.size() + size_t(b)].get());
}

namespace {

struct Events {
  cudaEvent_t a = nullptr, b = nullptr;
  Events() {
    BENCH_CUDA(cudaEventCreate(&a));
    BENCH_CUDA(cudaEventCreate(&b));
  }
  ~Events() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  float elapsed() {
    BENCH_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    BENCH_CUDA(cudaEventElapsedTime(&ms, a, b));
    return ms;
  }
};

// Calls f(first), ..., f(first + n - 1) recorded once into a CUDA graph and replayed for each
// sample: one host launch per sample instead of one per call. The GPU machine's host takes 5-6
// us to launch a kernel or a copy, longer than the GPU takes for LeNet's and CIFAR-10's pooling,
// so such rows timed call by call measured the host's launch rate, the same for crema, cuDNN and
// the copy. Inside a graph the calls follow each other at the GPU's own pace.
class Group {
 public:
  Group() = default;
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
  ~Group() {
    if (exec_) cudaGraphExecDestroy(exec_);
  }
  // False, with the stream and the error state as before, where the calls cannot be recorded.
  bool capture(cudaStream_t s, const std::function<void(int)>& f, int first, int n) {
    if (cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    bool recorded = true;
    try {
      for (int j = 0; j < n; ++j) f(first + j);
    } catch (const std::exception&) {
      recorded = false;
    }
    cudaGraph_t graph = nullptr;
    recorded = cudaStreamEndCapture(s, &graph) == cudaSuccess && recorded &&
               cudaGraphInstantiate(&exec_, graph, 0) == cudaSuccess;
    if (graph) cudaGraphDestroy(graph);
    if (!recorded) {
      if (exec_) cudaGraphExecDestroy(exec_);
      exec_ = nullptr;
      cudaGetLastError();
    }
    return recorded;
  }
  void launch(cudaStream_t s) const { BENCH_CUDA(cudaGraphLaunch(exec_, s)); }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace

std::vector<double> median_ms(cudaStream_t s, int repeats,
                              const std::vector<std::function<void(int)>>& fs) {
  Events ev;
  const size_t n = fs.size();
  std::vector<int> calls(n, 0), inner(n, 1);
  std::vector<Group> groups(n);
  std::vector<bool> graphed(n, false);
  for (size_t k = 0; k < n; ++k) {
    for (int w = 0; w < 3; ++w) fs[k](calls[k]++);
    BENCH_CUDA(cudaEventRecord(ev.a, s));
    fs[k](calls[k]++);
    BENCH_CUDA(cudaEventRecord(ev.b, s));
    const float once = ev.elapsed();
    // Calls shorter than a millisecond are timed in groups: one event pair per call would add
    // the event's own resolution (about half a microsecond) to every sample.
    inner[k] = once >= 1.0f ? 1 : std::min(64, int(std::ceil(1.0f / std::max(once, 1e-3f))));
    if (inner[k] > 1) {
      graphed[k] = groups[k].capture(s, fs[k], calls[k], inner[k]);
      if (graphed[k])
        groups[k].launch(s);  // the graph's own first launch, untimed
      else
        std::fprintf(stderr,
                     "bench_prim: call %zu of the next row could not be recorded into a "
                     "CUDA graph; timed launch by launch\n",
                     k);
    }
  }
  // Round-robin: sample r of every function is taken before sample r + 1 of any, so a drift of
  // the clocks during the row falls on all of them alike.
  std::vector<std::vector<double>> ms(n);
  for (int r = 0; r < std::max(repeats, 1); ++r) {
    for (size_t k = 0; k < n; ++k) {
      BENCH_CUDA(cudaEventRecord(ev.a, s));
      if (graphed[k])
        groups[k].launch(s);
      else
        for (int j = 0; j < inner[k]; ++j) fs[k](calls[k]++);
      BENCH_CUDA(cudaEventRecord(ev.b, s));
      ms[k].push_back(double(ev.elapsed()) / inner[k]);
    }
  }
  BENCH_CUDA(cudaGetLastError());
  std::vector<double> medians;
  for (std::vector<double>& m : ms) {
    std::sort(m.begin(), m.end());
    medians.push_back(m[m.size() / 2]);
  }
  return medians;
}

double median_ms(cudaStream_t s, int repeats, const std::function<void(int)>& f) {
  return median_ms(s, repeats, std::vector<std::function<void(int)>>{f})[0];
}

bool selected(const Options& o, const std::string& op, const std::string& layer,
              const std::string& pass) {
  if (o.filter.empty()) return true;
  return (op + " " + layer + " " + pass).find(o.filter) != std::string::npos;
}

void print_header() {
  std::printf(
      "| op | layer | pass | crema algo | cuDNN algo | crema ms | cuDNN ms | crema/cuDNN | "
      "crema rate | cuDNN rate | max rel err | copy ms | crema %% of copy |\n");
  std::printf("|---|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|\n");
  std::fflush(stdout);
}

namespace {

std::string rate(const Row& r, double ms) {
  char buf[64];
  if (r.flops > 0)
    std::snprintf(buf, sizeof(buf), "%.2f TFLOP/s", r.flops / (ms * 1e-3) / 1e12);
  else
    std::snprintf(buf, sizeof(buf), "%.0f GB/s", r.bytes / (ms * 1e-3) / 1e9);
  return buf;
}

}  // namespace

void print_row(const Row& r) {
  const bool peer = r.cudnn_ms > 0;
  char dnn_ms[32] = "-", ratio[32] = "-", copy_ms[32] = "-", of_copy[32] = "-";
  if (peer) {
    std::snprintf(dnn_ms, sizeof(dnn_ms), "%.4f", r.cudnn_ms);
    std::snprintf(ratio, sizeof(ratio), "%.2f", r.crema_ms / r.cudnn_ms);
  }
  if (r.copy_ms > 0) {
    std::snprintf(copy_ms, sizeof(copy_ms), "%.4f", r.copy_ms);
    std::snprintf(of_copy, sizeof(of_copy), "%.0f%%", 100 * r.copy_ms / r.crema_ms);
  }
  std::printf("| %s | %s | %s | %s | %s | %.4f | %s | %s | %s | %s | %.1e | %s | %s |\n",
              r.op.c_str(), r.layer.c_str(), r.pass.c_str(), r.crema_algo.c_str(),
              peer ? r.cudnn_algo.c_str() : "-", r.crema_ms, dnn_ms, ratio,
              rate(r, r.crema_ms).c_str(), peer ? rate(r, r.cudnn_ms).c_str() : "-", r.err, copy_ms,
              of_copy);
  std::fflush(stdout);
}

void print_failed(const std::string& op, const std::string& layer, const std::string& pass,
                  const std::string& why) {
  std::printf("| %s | %s | %s | FAILED: %s | | | | | | | | | |\n", op.c_str(), layer.c_str(),
              pass.c_str(), why.c_str());
  std::fflush(stdout);
  std::fprintf(stderr, "bench_prim: %s %s %s: %s\n", op.c_str(), layer.c_str(), pass.c_str(),
               why.c_str());
}

int batch_for(const Options& o, const std::string& name) {
  if (o.batch > 0) return o.batch;
  static const std::pair<const char*, int> nets[] = {
      {"lenet:", 64},          {"caffenet:", 256}, {"googlenet:", 128}, {"resnet50:", 128},
      {"cifar10_quick:", 100}, {"mobilenet:", 64}, {"vgg16:", 64},
  };
  for (const auto& [prefix, n] : nets)
    if (name.rfind(prefix, 0) == 0) return n;
  return 64;
}

void require_close(double err, double tol, const char* what) {
  if (!(err <= tol)) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "%s differ from cuDNN: max rel err %.2e > %.0e", what, err,
                  tol);
    throw std::runtime_error(buf);
  }
}

prim::DeviceBuffer bench_row(Context& c, Row row, bool timed,
                             const std::vector<const prim::DeviceBuffer*>& in, int64_t out_count,
                             const Impl& crema, const Impl& cudnn, const RowCheck& check) {
  if (in.size() > size_t(kMaxInputs)) throw std::runtime_error("bench_row: too many inputs");
  auto start = [&] { return check.init ? copy_of(*check.init) : nan_buffer(out_count); };
  prim::DeviceBuffer out_crema = start(), out_dnn = start();
  std::vector<float*> p;
  for (const prim::DeviceBuffer* b : in) p.push_back(f32(*b));
  crema(p.data(), f32(out_crema));
  cudnn(p.data(), f32(out_dnn));
  row.err = max_rel_err(to_host(c.stream, out_crema.get(), out_count),
                        to_host(c.stream, out_dnn.get(), out_count));
  require_close(row.err, check.tol, "outputs");
  if (!timed) return out_crema;
  time_row(c, row, in, out_crema, out_dnn, crema, cudnn);
  return out_crema;
}

void time_row(Context& c, Row row, const std::vector<const prim::DeviceBuffer*>& in,
              const prim::DeviceBuffer& out_crema, const prim::DeviceBuffer& out_dnn,
              const Impl& crema, const Impl& cudnn) {
  if (in.size() > size_t(kMaxInputs)) throw std::runtime_error("time_row: too many inputs");
  std::vector<std::pair<void*, size_t>> bufs;
  for (const prim::DeviceBuffer* b : in) bufs.push_back({b->get(), b->bytes()});
  bufs.push_back({out_crema.get(), out_crema.bytes()});
  if (cudnn) bufs.push_back({out_dnn.get(), out_dnn.bytes()});
  const Rotation rot(bufs, c.l2_bytes);
  const int n_in = int(in.size());
  auto call = [&rot, n_in](const Impl* f, int out_slot) {
    return [&rot, n_in, f, out_slot](int i) {
      float* q[kMaxInputs];
      for (int j = 0; j < n_in; ++j) q[j] = rot.at(j, i);
      (*f)(q, rot.at(out_slot, i));
    };
  };
  std::vector<std::function<void(int)>> fs{call(&crema, n_in)};
  if (cudnn) fs.push_back(call(&cudnn, n_in + 1));
  // Memory-bound rows: a device-to-device copy that moves the row's bytes (half read, half
  // written), the ceiling at the row's own size, with the launch, ramp and tail that a small
  // tensor cannot hide and that the 1 GiB copy under the table amortizes.
  const size_t half = size_t(row.bytes / 2) & ~size_t(15);
  const bool copy = row.flops == 0 && half > 0;
  std::optional<prim::DeviceBuffer> src, dst;
  std::optional<Rotation> copy_rot;
  if (copy) {
    src.emplace(prim::Device::kCUDA, half);
    dst.emplace(prim::Device::kCUDA, half);
    BENCH_CUDA(cudaMemset(src->get(), 0x3C, half));
    copy_rot.emplace(std::vector<std::pair<void*, size_t>>{{src->get(), half}, {dst->get(), half}},
                     c.l2_bytes);
    fs.push_back([&](int i) {
      BENCH_CUDA(cudaMemcpyAsync(copy_rot->at(1, i), copy_rot->at(0, i), half,
                                 cudaMemcpyDeviceToDevice, c.stream));
    });
  }
  const std::vector<double> ms = median_ms(c.stream, c.opt.repeats, fs);
  row.crema_ms = ms[0];
  if (cudnn) row.cudnn_ms = ms[1];
  if (copy) row.copy_ms = ms.back();
  print_row(row);
}

double bytes_of(std::initializer_list<int64_t> counts) {
  double s = 0;
  for (int64_t n : counts) s += double(n) * sizeof(float);
  return s;
}

void guarded(const std::string& op, const std::string& layer, bool want_fwd, bool want_bwd,
             const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    if (want_fwd) print_failed(op, layer, "fwd", e.what());
    if (want_bwd) print_failed(op, layer, "bwd", e.what());
  }
}

}  // namespace crema::bench
