// Handle: the execution context every primitive takes. It names the device, owns the CUDA stream
// and cuBLAS/cuBLASLt handles on GPU builds, a growable workspace, the algorithm cache of `find`,
// and a random generator state for stochastic primitives (dropout). One handle per thread/stream: a
// Handle is not shared between threads; different handles are independent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "primitives/types.h"

namespace crema::prim {

// An invalid label found by a kernel after the host has moved on (softmax loss on the GPU checks
// its labels without making the host wait): the primitive writes nothing and records the first
// such error in its handle, which throws it as a DeferredError where the host next waits for the
// stream (Handle::synchronize, or a primitive that returns a value to the host, such as dot).
// As with cuDNN's cudnnQueryRuntimeError, the error is reported late but never lost. The record
// lives in pinned host memory that kernels write directly.
struct DeferredErrorRecord {
  int op;          // 0: none; else a DeferredOp
  int has_ignore;  // the label rule the position broke
  int ignore;
  uint64_t tag;      // Handle::error_tag() when the primitive was queued
  int64_t position;  // of the first invalid label
  int64_t inner, channels;
  double value;  // the label found there
};

enum DeferredOp : int { kSoftmaxLossFwd = 1, kSoftmaxLossBwd = 2 };

class DeferredError : public PrimError {
 public:
  DeferredError(const std::string& what, uint64_t tag) : PrimError(what), tag_(tag) {}
  // The error tag the handle had when the failing primitive was queued (the Net sets it to the
  // layer's address), so the error can be traced to its layer.
  uint64_t tag() const { return tag_; }

 private:
  uint64_t tag_;
};

// How the GPU schedules a handle's work against other handles' work queued at the same time:
// kUrgent work's blocks start before any waiting kNormal block (CUDA's greatest stream
// priority). For short chains of small kernels that must not queue behind a training step's
// large ones: a data layer's decode and upload. Ignored on the CPU.
enum class StreamPriority { kNormal, kUrgent };

class Handle {
 public:
  // device_id is ignored for the CPU. Creating a CUDA handle in a build without CUDA, or on a
  // machine without a GPU, throws PrimError.
  explicit Handle(Device device = Device::kCPU, int device_id = 0,
                  StreamPriority priority = StreamPriority::kNormal);
  ~Handle();
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  Device device() const { return device_; }
  int device_id() const { return device_id_; }

  // Scratch memory on this handle's device, valid until the next workspace() call. Grows, never
  // shrinks.
  void* workspace(size_t bytes);
  size_t workspace_size() const { return workspace_bytes_; }
  // Counts the workspace's moves (each growth frees it and allocates anew), the side's included:
  // work recorded with a workspace at one address (StreamGraph) is stale once this changes.
  uint64_t workspace_generation() const {
    return workspace_generation_ + (side_ ? side_->workspace_generation_ : 0);
  }

  // A second stream of this handle's GPU, for work that may run beside the handle's own: a small
  // layer's weight gradient beside its data gradient, two kernels that each leave most of the
  // GPU idle. The side has its own cuBLAS handle and workspace, shares this handle's algorithm
  // cache, autotuning and workspace budget, and is created at the first call. fork() makes work
  // queued on the side from now on wait for everything queued here so far; join() makes work
  // queued here from now on wait for everything queued on the side so far. Recorded into a
  // StreamGraph, a fork and its join become the graph's branches; every fork must be joined
  // before the recording ends. A CPU handle runs everything in order: its side is itself and
  // fork and join do nothing.
  Handle& side();
  void fork();
  void join();

  // Threads the CPU primitives split their work over (CREMA_NUM_THREADS, else every core).
  // While a CPU handle with several threads exists, OpenBLAS runs single-threaded inside them.
  int cpu_threads() const { return cpu_threads_; }
  void set_cpu_threads(int n);

  // How much workspace algorithms that trade memory for speed may plan for (im2col chunks of
  // several images). Smaller saves memory, larger lets GEMMs grow. By default 32 MiB on the CPU
  // (chunks sized for the caches) and 512 MiB on a GPU, where a chunk's GEMM must span many
  // images to reach cuBLAS's peak (caffenet:conv2 unfolds 7.7 MB per image).
  size_t workspace_budget() const {
    return parent_ ? parent_->workspace_budget_ : workspace_budget_;
  }
  void set_workspace_budget(size_t bytes) { workspace_budget_ = bytes; }

  // Algorithm cache for find-style autotuning: key is an op + shape string, value an algo id.
  std::map<std::string, int>& algo_cache() { return parent_ ? parent_->algo_cache_ : algo_cache_; }
  // Autotuning: kAuto convolutions time every supported algorithm once per problem (as
  // ConvAlgo::kFind) and keep the fastest, instead of taking the heuristic's pick. The winners
  // live in algo_cache (conv_algos_save and conv_algos_load keep them across runs).
  bool conv_autotune() const { return parent_ ? parent_->conv_autotune_ : conv_autotune_; }
  void set_conv_autotune(bool on) { conv_autotune_ = on; }

  // Seed and counter for stochastic primitives; each call consumes a fresh counter range so
  // results are reproducible for a given seed and call sequence.
  void set_seed(uint64_t seed) {
    seed_ = seed;
    counter_ = 0;
  }
  uint64_t seed() const { return seed_; }
  // The next counter a stochastic primitive takes, for snapshots that resume its draws.
  uint64_t counter() const { return counter_; }
  void set_counter(uint64_t counter) { counter_ = counter; }
  uint64_t next_counter(uint64_t n) {
    uint64_t c = counter_;
    counter_ += n;
    return c;
  }

  // Opaque CUDA objects on GPU builds (the cudaStream_t; the stream's cuBLAS and cuBLASLt
  // handles); nullptr on the CPU.
  void* stream() const { return stream_; }
  void* blas() const { return blas_; }
  // Waits for the work queued on the stream, then raises a deferred error if one was recorded.
  void synchronize();

  // Deferred errors (see DeferredErrorRecord): the tag that errors of the primitives queued from
  // now on carry; the record kernels write (device-visible, allocated at first use); and the
  // check, which throws and clears a recorded error. The check is only complete after the
  // stream was synchronized; synchronize() and the primitives that wait for the stream call it.
  void set_error_tag(uint64_t tag) { error_tag_ = tag; }
  uint64_t error_tag() const { return error_tag_; }
  DeferredErrorRecord* deferred_error_record();
  void raise_deferred_error();

 private:
  Device device_;
  int device_id_;
  StreamPriority priority_;
  void* stream_ = nullptr;
  void* blas_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  uint64_t workspace_generation_ = 0;
  size_t workspace_budget_ = size_t(32) << 20;
  int cpu_threads_ = 1;
  std::map<std::string, int> algo_cache_;
  bool conv_autotune_ = false;
  uint64_t seed_ = 0x9E3779B97F4A7C15ull;
  uint64_t counter_ = 0;
  uint64_t error_tag_ = 0;
  DeferredErrorRecord* deferred_ = nullptr;  // pinned host memory, or nullptr until first use
  std::unique_ptr<Handle> side_;
  Handle* parent_ = nullptr;    // the handle whose side this one is
  void* fork_event_ = nullptr;  // cudaEvent_t of fork() and join(), created at first use
  void* join_event_ = nullptr;
};

// Memory on a device. CPU memory is 64-byte aligned. Copies go through memcpy() with both
// devices named: there are no implicit transfers. Where a GPU is involved, device_memcpy and
// device_memset_zero first wait for all work queued on the device (any handle's stream), so
// they are ordered after it; they are for I/O and setup, not the inner loop.
// An allocation the device cannot hold is a PrimError with the sizes, never a crash: CUDA's
// when cudaMalloc fails, the CPU's before it is made, when it exceeds the memory the machine
// has available (MemAvailable: Linux would grant more and kill the process on first touch) or
// would take the host bytes held through device_alloc past set_host_memory_limit.
void* device_alloc(Device device, size_t bytes);
void device_free(Device device, void* p);
// A cap on the host bytes held through device_alloc at once (0, the default: none), for a process
// that must stay within a budget (a fuzzer, a service next to others).
void set_host_memory_limit(size_t bytes);
void device_memcpy(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes);
void device_memset_zero(Device device, void* p, size_t bytes);

// Page-locked host memory where a GPU is visible (ordinary memory otherwise): what asynchronous
// copies between host and GPU need to overlap with kernels.
void* host_alloc_pinned(size_t bytes);
void host_free_pinned(void* p);

// std::vector<T, PinnedAllocator<T>>: a host array that can be the source of memcpy_async.
template <typename T>
struct PinnedAllocator {
  using value_type = T;
  PinnedAllocator() = default;
  template <typename U>
  PinnedAllocator(const PinnedAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(host_alloc_pinned(n * sizeof(T))); }
  void deallocate(T* p, size_t) { host_free_pinned(p); }
  friend bool operator==(const PinnedAllocator&, const PinnedAllocator&) { return true; }
};

// A copy queued on h's stream, ordered with the primitives queued there; on a CUDA handle it
// returns at once. Host memory involved must be pinned and left alone until the copy is done
// (an Event recorded after it says when). On a CPU handle it is a plain, finished copy.
void memcpy_async(Handle& h, void* dst, Device dst_device, const void* src, Device src_device,
                  size_t bytes);

// A point in a handle's stream. record(h) marks the work queued on h so far; wait(h) makes h's
// stream wait for the marked work without blocking the host (how a copy on one stream feeds
// kernels on another); synchronize() blocks the host until it is done. Unrecorded events are
// done. On the CPU every call has finished when it returns, so all three do nothing.
class Event {
 public:
  Event() = default;
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(Handle& h);
  void wait(Handle& h) const;
  void synchronize() const;

 private:
  void* event_ = nullptr;  // cudaEvent_t, created at the first record on a CUDA handle
};

// The time work queued on a handle takes: on the CPU the wall clock (its calls have finished
// when they return); on CUDA the GPU's time between two points of the handle's stream, with the
// stream held for a millisecond before the first (a spinning kernel), so that what the host
// queues in that time runs back to back, as from a replayed CUDA graph: the host's launch
// latency does not count. start() marks the point; stop_ms() waits for the work queued since and
// returns its milliseconds.
class Stopwatch {
 public:
  explicit Stopwatch(Handle& h);
  ~Stopwatch();
  Stopwatch(const Stopwatch&) = delete;
  Stopwatch& operator=(const Stopwatch&) = delete;
  void start();
  double stop_ms();

 private:
  Handle& h_;
  void* start_ = nullptr;  // cudaEvent_t with timing, on a CUDA handle
  void* stop_ = nullptr;
  double host_start_ms_ = 0;
};

// Work queued on a CUDA handle's stream, recorded once and replayed with one launch (a CUDA
// graph): a step of many small kernels then costs the host one launch instead of one per kernel.
// record(h, fn) runs fn with the stream capturing: the primitives fn calls are recorded, not run.
// A replay repeats them exactly (pointers, sizes, scalars), so fn must queue the same work with
// the same arguments every time, and the memory it names, the handle's workspace included
// (Handle::workspace_generation), must stay where it was. A primitive that waits for the device
// or allocates while recording fails; record then throws its error with the stream out of
// capture and nothing recorded. A CPU handle cannot record.
class StreamGraph {
 public:
  StreamGraph() = default;
  ~StreamGraph() { clear(); }
  StreamGraph(const StreamGraph&) = delete;
  StreamGraph& operator=(const StreamGraph&) = delete;

  void record(Handle& h, const std::function<void()>& fn);
  // Queues the recorded work on h's stream (the handle it was recorded on).
  void replay(Handle& h) const;
  bool recorded() const { return exec_ != nullptr; }
  // Operations recorded (kernels, copies, memsets).
  size_t nodes() const { return nodes_; }
  void clear();

 private:
  void* exec_ = nullptr;  // cudaGraphExec_t
  size_t nodes_ = 0;
};

// Most bytes of GPU memory held at once through device_alloc since the start (0 without CUDA):
// the peak-memory figure of benchmarks.
size_t cuda_peak_allocated_bytes();

// How many device-wide synchronizations device_memcpy and device_memset_zero have made since
// the start (0 without CUDA): the count that must not grow inside a training step.
uint64_t cuda_device_sync_count();

// True when this build has CUDA and a GPU is visible.
bool cuda_available();
int cuda_device_count();
// The calling thread's current GPU: the one its last CUDA Handle was created on (0 by default).
int cuda_current_device();
// Makes device_id the calling thread's current GPU: what a thread that only uses a Handle made on
// another thread (a prefetch thread allocating for its layer's GPU) must do first.
void cuda_set_current_device(int device_id);
// One line per property of a CUDA device (name, compute capability, memory, SMs, clocks).
std::string cuda_device_description(int device_id);
// A CUDA device's name and compute capability, e.g. "NVIDIA H200 9.0".
std::string cuda_device_identity(int device_id);

// Total memory of a device, the most one buffer on it can ever hold: the host's physical memory
// for the CPU, the calling thread's current GPU's memory for CUDA. 0 when unknown (no CUDA in
// this build, no GPU). Cached after the first query of each device.
size_t device_total_bytes(Device device);

}  // namespace crema::prim

namespace crema::prim {

// Owning RAII buffer on one device; the building block of Tensor memory and of test buffers.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Device device, size_t bytes)
      : device_(device), bytes_(bytes), ptr_(device_alloc(device, bytes)) {}
  // A buffer over memory that something else owns and frees (a slice of a larger buffer).
  static DeviceBuffer borrowed(Device device, void* p, size_t bytes) {
    DeviceBuffer b;
    b.device_ = device;
    b.bytes_ = bytes;
    b.ptr_ = p;
    b.owned_ = false;
    return b;
  }
  ~DeviceBuffer() {
    if (owned_) device_free(device_, ptr_);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    swap(o);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void swap(DeviceBuffer& o) noexcept {
    std::swap(device_, o.device_);
    std::swap(bytes_, o.bytes_);
    std::swap(ptr_, o.ptr_);
    std::swap(owned_, o.owned_);
  }
  Device device_ = Device::kCPU;
  size_t bytes_ = 0;
  void* ptr_ = nullptr;
  bool owned_ = true;
};

}  // namespace crema::prim
