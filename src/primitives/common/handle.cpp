// Handle and device memory: the one place that branches between CPU and CUDA runtimes.
#include "primitives/handle.h"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>

#include "primitives/blas_kernels.h"
#include "primitives/common/softmax_ops.h"
#include "primitives/cuda/cuda_backend.h"

namespace crema::prim {
namespace {

[[noreturn, maybe_unused]] void no_cuda() {
  throw PrimError("this build of crema has no CUDA support");
}

}  // namespace

bool cuda_available() { return cuda_device_count() > 0; }

int cuda_device_count() {
#ifdef CREMA_WITH_CUDA
  return cuda::device_count();
#else
  return 0;
#endif
}

int cuda_current_device() {
#ifdef CREMA_WITH_CUDA
  return cuda::current_device();
#else
  no_cuda();
#endif
}

void cuda_set_current_device(int device_id) {
#ifdef CREMA_WITH_CUDA
  cuda::set_current_device(device_id);
#else
  (void)device_id;
  no_cuda();
#endif
}

std::string cuda_device_description(int device_id) {
#ifdef CREMA_WITH_CUDA
  if (device_id < 0 || device_id >= cuda::device_count())
    throw PrimError("no CUDA device " + std::to_string(device_id));
  return cuda::device_description(device_id);
#else
  (void)device_id;
  no_cuda();
#endif
}

std::string cuda_device_identity(int device_id) {
#ifdef CREMA_WITH_CUDA
  if (device_id < 0 || device_id >= cuda::device_count())
    throw PrimError("no CUDA device " + std::to_string(device_id));
  return cuda::device_identity(device_id);
#else
  (void)device_id;
  no_cuda();
#endif
}

size_t cuda_peak_allocated_bytes() {
#ifdef CREMA_WITH_CUDA
  return cuda::peak_allocated_bytes();
#else
  return 0;
#endif
}

size_t device_total_bytes(Device device) {
  if (device == Device::kCPU) {
    static const size_t host = [] {
      const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
      return pages > 0 && page > 0 ? size_t(pages) * size_t(page) : size_t(0);
    }();
    return host;
  }
#ifdef CREMA_WITH_CUDA
  return cuda::total_memory();
#else
  return 0;
#endif
}

uint64_t cuda_device_sync_count() {
#ifdef CREMA_WITH_CUDA
  return cuda::device_sync_count();
#else
  return 0;
#endif
}

namespace {

// Host bytes held through device_alloc, by pointer: allocation happens at setup and on growth,
// never per iteration, so a mutex is cheap enough.
std::mutex host_mutex;
std::unordered_map<void*, size_t> host_sizes;
size_t host_held = 0, host_limit = 0;

// MemAvailable of /proc/meminfo in bytes, or SIZE_MAX where it cannot be read.
size_t host_available() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return SIZE_MAX;
  char line[256];
  size_t kib = 0;
  bool found = false;
  while (!found && std::fgets(line, sizeof(line), f))
    found = std::sscanf(line, "MemAvailable: %zu kB", &kib) == 1;
  std::fclose(f);
  return found ? kib * 1024 : SIZE_MAX;
}

std::string mib(size_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

void* cpu_alloc(size_t bytes) {
  // Small blocks are not worth reading /proc for: a tensor or workspace big enough to matter is.
  constexpr size_t kChecked = size_t(16) << 20;
  std::lock_guard<std::mutex> lock(host_mutex);
  if (host_limit > 0 && bytes > host_limit - std::min(host_limit, host_held))
    throw PrimError("cannot allocate " + mib(bytes) + " on the cpu: " + mib(host_held) +
                    " of the " + mib(host_limit) + " limit already held");
  if (bytes >= kChecked) {
    const size_t available = host_available();
    if (bytes > available)
      throw PrimError("cannot allocate " + mib(bytes) + " on the cpu: " + mib(available) +
                      " available");
  }
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) throw PrimError("cannot allocate " + mib(bytes) + " on the cpu");
  host_sizes[p] = bytes;
  host_held += bytes;
  return p;
}

void cpu_free(void* p) {
  std::free(p);
  std::lock_guard<std::mutex> lock(host_mutex);
  const auto it = host_sizes.find(p);
  if (it == host_sizes.end()) return;
  host_held -= it->second;
  host_sizes.erase(it);
}

}  // namespace

void set_host_memory_limit(size_t bytes) {
  std::lock_guard<std::mutex> lock(host_mutex);
  host_limit = bytes;
}

void* device_alloc(Device device, size_t bytes) {
  if (bytes == 0) return nullptr;
  if (device == Device::kCPU) return cpu_alloc(bytes);
#ifdef CREMA_WITH_CUDA
  return cuda::alloc(bytes);
#else
  no_cuda();
#endif
}

void device_free(Device device, void* p) {
  if (!p) return;
  if (device == Device::kCPU) {
    cpu_free(p);
    return;
  }
#ifdef CREMA_WITH_CUDA
  cuda::free(p);
#endif
}

void device_memcpy(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) {
  if (bytes == 0) return;
  if (dst_device == Device::kCPU && src_device == Device::kCPU) {
    std::memcpy(dst, src, bytes);
    return;
  }
#ifdef CREMA_WITH_CUDA
  const int kind = src_device == Device::kCPU ? 0 : dst_device == Device::kCPU ? 1 : 2;
  cuda::memcpy(dst, src, bytes, kind);
#else
  no_cuda();
#endif
}

void device_memset_zero(Device device, void* p, size_t bytes) {
  if (bytes == 0) return;
  if (device == Device::kCPU) {
    std::memset(p, 0, bytes);
    return;
  }
#ifdef CREMA_WITH_CUDA
  cuda::memset_zero(p, bytes);
#else
  no_cuda();
#endif
}

Handle::Handle(Device device, int device_id, StreamPriority priority)
    : device_(device), device_id_(device_id), priority_(priority) {
  if (device_ == Device::kCPU) {
    const char* env = std::getenv("CREMA_NUM_THREADS");
    const int from_env = env ? std::atoi(env) : 0;
    set_cpu_threads(from_env > 0 ? from_env : int(std::thread::hardware_concurrency()));
    return;
  }
#ifdef CREMA_WITH_CUDA
  if (device_id < 0 || device_id >= cuda::device_count())
    throw PrimError("no CUDA device " + std::to_string(device_id));
  workspace_budget_ = size_t(512) << 20;
  stream_ = cuda::create_stream(device_id, priority == StreamPriority::kUrgent);
  blas_ = cuda::create_blas(stream_);
#else
  no_cuda();
#endif
}

Handle::~Handle() {
  device_free(device_, workspace_);
#ifdef CREMA_WITH_CUDA
  if (fork_event_) cuda::event_destroy(fork_event_);
  if (join_event_) cuda::event_destroy(join_event_);
  if (deferred_) cuda::host_free(deferred_);
  if (blas_) cuda::destroy_blas(blas_);
  if (stream_) cuda::destroy_stream(stream_);
#endif
}

void Handle::set_cpu_threads(int n) {
  cpu_threads_ = n > 0 ? n : 1;
  // The primitives parallelize around BLAS calls; BLAS's own threads would only compete.
  if (cpu_threads_ > 1) openblas_set_num_threads(1);
  prepare_blas_buffers(cpu_threads_);
}

void* Handle::workspace(size_t bytes) {
  if (bytes > workspace_bytes_) {
    device_free(device_, workspace_);
    workspace_ = nullptr;
    workspace_bytes_ = 0;
    workspace_ = device_alloc(device_, bytes);
    workspace_bytes_ = bytes;
    ++workspace_generation_;
  }
  return workspace_;
}

Handle& Handle::side() {
  if (device_ == Device::kCPU) return *this;
  if (!side_) {
    side_ = std::make_unique<Handle>(device_, device_id_, priority_);
    side_->parent_ = this;
  }
  return *side_;
}

void Handle::fork() {
  if (device_ == Device::kCPU) return;
#ifdef CREMA_WITH_CUDA
  Handle& s = side();
  if (!fork_event_) fork_event_ = cuda::event_create();
  cuda::event_record(fork_event_, stream_);
  cuda::event_wait(fork_event_, s.stream_);
#endif
}

void Handle::join() {
  if (!side_) return;
#ifdef CREMA_WITH_CUDA
  if (!join_event_) join_event_ = cuda::event_create();
  cuda::event_record(join_event_, side_->stream_);
  cuda::event_wait(join_event_, stream_);
#endif
}

namespace {
// Pinning is decided once: host_free_pinned must free with the allocator that allocated.
bool pin_host_memory() {
  static const bool pin = cuda_available();
  return pin;
}
}  // namespace

void* host_alloc_pinned(size_t bytes) {
  if (bytes == 0) return nullptr;
#ifdef CREMA_WITH_CUDA
  if (pin_host_memory()) return cuda::host_alloc(bytes);
#endif
  return device_alloc(Device::kCPU, bytes);
}

void host_free_pinned(void* p) {
  if (!p) return;
#ifdef CREMA_WITH_CUDA
  if (pin_host_memory()) return cuda::host_free(p);
#endif
  device_free(Device::kCPU, p);
}

void memcpy_async(Handle& h, void* dst, Device dst_device, const void* src, Device src_device,
                  size_t bytes) {
  if (bytes == 0) return;
  if (h.device() == Device::kCPU) {
    if (dst_device != Device::kCPU || src_device != Device::kCPU)
      throw PrimError("memcpy_async: a CPU handle cannot copy to or from a GPU");
    std::memcpy(dst, src, bytes);
    return;
  }
#ifdef CREMA_WITH_CUDA
  const int kind = src_device == Device::kCPU ? 0 : dst_device == Device::kCPU ? 1 : 2;
  cuda::memcpy_async(dst, src, bytes, kind, h.stream());
#endif
}

Event::~Event() {
#ifdef CREMA_WITH_CUDA
  if (event_) cuda::event_destroy(event_);
#endif
}

void Event::record(Handle& h) {
  if (h.device() == Device::kCPU) return;
#ifdef CREMA_WITH_CUDA
  if (!event_) event_ = cuda::event_create();
  cuda::event_record(event_, h.stream());
#endif
}

void Event::wait(Handle& h) const {
#ifdef CREMA_WITH_CUDA
  if (event_ && h.device() == Device::kCUDA) cuda::event_wait(event_, h.stream());
#else
  (void)h;
#endif
}

void Event::synchronize() const {
#ifdef CREMA_WITH_CUDA
  if (event_) cuda::event_synchronize(event_);
#endif
}

namespace {
double host_now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

Stopwatch::Stopwatch(Handle& h) : h_(h) {
#ifdef CREMA_WITH_CUDA
  if (h.device() == Device::kCUDA) {
    start_ = cuda::event_create(true);
    stop_ = cuda::event_create(true);
  }
#endif
}

Stopwatch::~Stopwatch() {
#ifdef CREMA_WITH_CUDA
  if (start_) cuda::event_destroy(start_);
  if (stop_) cuda::event_destroy(stop_);
#endif
}

void Stopwatch::start() {
#ifdef CREMA_WITH_CUDA
  if (start_) {
    cuda::hold_stream(h_.stream(), 1000);
    return cuda::event_record(start_, h_.stream());
  }
#endif
  host_start_ms_ = host_now_ms();
}

double Stopwatch::stop_ms() {
#ifdef CREMA_WITH_CUDA
  if (stop_) {
    cuda::event_record(stop_, h_.stream());
    return cuda::event_elapsed_ms(start_, stop_);
  }
#endif
  return host_now_ms() - host_start_ms_;
}

void StreamGraph::record(Handle& h, const std::function<void()>& fn) {
  clear();
  if (h.device() != Device::kCUDA) throw PrimError("StreamGraph: only a CUDA handle can record");
#ifdef CREMA_WITH_CUDA
  cuda::capture_begin(h.stream());
  try {
    fn();
  } catch (...) {
    cuda::capture_abandon(h.stream());
    throw;
  }
  exec_ = cuda::capture_end(h.stream(), &nodes_);
#else
  (void)fn;
#endif
}

void StreamGraph::replay(Handle& h) const {
  if (!exec_) throw PrimError("StreamGraph: nothing recorded to replay");
#ifdef CREMA_WITH_CUDA
  cuda::graph_launch(exec_, h.stream());
#else
  (void)h;
#endif
}

void StreamGraph::clear() {
#ifdef CREMA_WITH_CUDA
  if (exec_) cuda::graph_destroy(exec_);
#endif
  exec_ = nullptr;
  nodes_ = 0;
}

void Handle::synchronize() {
#ifdef CREMA_WITH_CUDA
  if (stream_) cuda::synchronize(stream_);
#endif
  raise_deferred_error();
}

DeferredErrorRecord* Handle::deferred_error_record() {
  if (!deferred_) {
    // Only CUDA primitives record deferred errors. Pinned memory is mapped into the GPU's
    // address space at the same address (unified addressing), so kernels write the record where
    // the host reads it, without a copy.
#ifdef CREMA_WITH_CUDA
    deferred_ = static_cast<DeferredErrorRecord*>(cuda::host_alloc(sizeof(DeferredErrorRecord)));
#else
    no_cuda();
#endif
    std::memset(deferred_, 0, sizeof(*deferred_));
  }
  return deferred_;
}

void Handle::raise_deferred_error() {
  if (!deferred_ || deferred_->op == 0) return;
  const DeferredErrorRecord r = *deferred_;
  std::memset(deferred_, 0, sizeof(*deferred_));
  const char* op = r.op == kSoftmaxLossFwd   ? "softmax_loss_fwd"
                   : r.op == kSoftmaxLossBwd ? "softmax_loss_bwd"
                                             : "unknown primitive";
  throw DeferredError(softmax_ops::bad_label_message(op, r.value, r.position, r.inner, r.channels,
                                                     r.has_ignore != 0, r.ignore),
                      r.tag);
}

}  // namespace crema::prim
