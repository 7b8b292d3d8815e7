// CUDA runtime, cuBLAS and cuBLASLt plumbing behind the Handle and the memory functions. Every call
// is checked; a failure names the call.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "primitives/cuda/cuda_backend.h"
#include "primitives/cuda/cuda_util.cuh"
#include "primitives/cuda/gemm_lt.cuh"
#include "primitives/types.h"

namespace crema::prim::cuda {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw PrimError(std::string(what) + ": " + cudaGetErrorString(e));
}

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw PrimError(std::string(what) + ": cuBLAS status " + std::to_string(int(s)));
}

}  // namespace

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

int current_device() {
  int d = 0;
  check(cudaGetDevice(&d), "cudaGetDevice");
  return d;
}

void set_current_device(int device_id) { check(cudaSetDevice(device_id), "cudaSetDevice"); }

std::string device_identity(int device_id) {
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, device_id), "cudaGetDeviceProperties");
  return std::string(p.name) + " " + std::to_string(p.major) + "." + std::to_string(p.minor);
}

std::string device_description(int device_id) {
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, device_id), "cudaGetDeviceProperties");
  int clock_khz = 0, mem_clock_khz = 0, bus_width = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device_id);
  cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, device_id);
  cudaDeviceGetAttribute(&bus_width, cudaDevAttrGlobalMemoryBusWidth, device_id);
  std::string s;
  s += "Device id:                     " + std::to_string(device_id) + "\n";
  s += "Name:                          " + std::string(p.name) + "\n";
  s += "Compute capability:            " + std::to_string(p.major) + "." + std::to_string(p.minor) +
       "\n";
  s += "Total global memory (MiB):     " + std::to_string(p.totalGlobalMem >> 20) + "\n";
  s += "Multiprocessors:               " + std::to_string(p.multiProcessorCount) + "\n";
  s += "Shared memory per block (KiB): " + std::to_string(p.sharedMemPerBlock >> 10) + "\n";
  s += "L2 cache (KiB):                " + std::to_string(p.l2CacheSize >> 10) + "\n";
  s += "Clock rate (MHz):              " + std::to_string(clock_khz / 1000) + "\n";
  s += "Memory clock (MHz):            " + std::to_string(mem_clock_khz / 1000) + "\n";
  s += "Memory bus width (bits):       " + std::to_string(bus_width) + "\n";
  return s;
}

namespace {

__global__ void probe_kernel() {}

// Whether this build holds code the device can run (machine code for its architecture, or PTX
// it can compile), asked once per device: a GPU the build lacks fails here, with what to do,
// rather than at the first kernel deep inside a step.
void require_code_for(int device_id) {
  static std::mutex mutex;
  static std::unordered_map<int, bool> checked;
  std::lock_guard<std::mutex> lock(mutex);
  if (checked[device_id]) return;
  cudaFuncAttributes attributes{};
  const cudaError_t e = cudaFuncGetAttributes(&attributes, probe_kernel);
  if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction ||
      e == cudaErrorUnsupportedPtxVersion) {
    cudaGetLastError();
    cudaDeviceProp p{};
    cudaGetDeviceProperties(&p, device_id);
    throw PrimError("GPU " + std::to_string(device_id) + " (" + p.name + ", compute capability " +
                    std::to_string(p.major) + "." + std::to_string(p.minor) +
                    ") cannot run this build of crema, which holds code for CUDA architectures " +
                    CREMA_CUDA_ARCHITECTURES + "; rebuild with -DCMAKE_CUDA_ARCHITECTURES=" +
                    std::to_string(p.major) + std::to_string(p.minor));
  }
  check(e, "cudaFuncGetAttributes");
  checked[device_id] = true;
}

}  // namespace

void* create_stream(int device_id, bool urgent) {
  check(cudaSetDevice(device_id), "cudaSetDevice");
  require_code_for(device_id);
  int least = 0, greatest = 0;  // numerically, greatest <= least
  check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, urgent ? greatest : least),
        "cudaStreamCreate");
  return s;
}

void destroy_stream(void* stream) { cudaStreamDestroy(static_cast<cudaStream_t>(stream)); }

void* create_blas(void* stream) {
  auto ctx = std::make_unique<BlasContext>();
  check(cublasCreate(&ctx->blas), "cublasCreate");
  try {
    check(cublasSetStream(ctx->blas, static_cast<cudaStream_t>(stream)), "cublasSetStream");
    ctx->lt = new LtGemms();
  } catch (...) {
    cublasDestroy(ctx->blas);
    throw;
  }
  return ctx.release();
}

void destroy_blas(void* blas) {
  auto* ctx = static_cast<BlasContext*>(blas);
  delete ctx->lt;
  cublasDestroy(ctx->blas);
  delete ctx;
}

void synchronize(void* stream) {
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "cudaStreamSynchronize");
}

namespace {
// Bytes held through alloc(), for the peak-memory figure of benchmarks. Allocation happens at
// setup and on growth, never per iteration, so a mutex is cheap enough.
std::mutex alloc_mutex;
std::unordered_map<void*, size_t> alloc_sizes;
size_t allocated_now = 0, allocated_peak = 0;
}  // namespace

void* alloc(size_t bytes) {
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();  // an out-of-memory is not sticky; clear it
    size_t free_bytes = 0, total = 0;
    cudaMemGetInfo(&free_bytes, &total);
    throw PrimError("cudaMalloc of " + std::to_string(bytes >> 20) + " MiB failed (" +
                    cudaGetErrorString(e) + "; " + std::to_string(free_bytes >> 20) + " of " +
                    std::to_string(total >> 20) + " MiB free)");
  }
  std::lock_guard<std::mutex> lock(alloc_mutex);
  alloc_sizes[p] = bytes;
  allocated_now += bytes;
  allocated_peak = std::max(allocated_peak, allocated_now);
  return p;
}

void free(void* p) {
  cudaFree(p);
  std::lock_guard<std::mutex> lock(alloc_mutex);
  const auto it = alloc_sizes.find(p);
  if (it == alloc_sizes.end()) return;
  allocated_now -= it->second;
  alloc_sizes.erase(it);
}

size_t total_memory() {
  // Reshapes ask on every call; device properties take far longer than a lookup.
  static std::mutex mutex;
  static std::unordered_map<int, size_t> totals;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  std::lock_guard<std::mutex> lock(mutex);
  const auto it = totals.find(device);
  if (it != totals.end()) return it->second;
  cudaDeviceProp p{};
  size_t total = 0;
  if (cudaGetDeviceProperties(&p, device) == cudaSuccess)
    total = p.totalGlobalMem;
  else
    cudaGetLastError();
  totals[device] = total;
  return total;
}

size_t peak_allocated_bytes() {
  std::lock_guard<std::mutex> lock(alloc_mutex);
  return allocated_peak;
}

// The handle streams are non-blocking, so plain cudaMemcpy/cudaMemset would not be ordered with
// their kernels; and a cudaMemcpy from pageable host memory may return before its DMA has
// landed. So these wait for the whole device before and after: every device_memcpy and
// device_memset_zero is complete, and ordered after all work queued before it. They are the
// host I/O path, not the inner loop.
std::atomic<uint64_t> device_syncs{0};

uint64_t device_sync_count() { return device_syncs.load(); }

void memcpy(void* dst, const void* src, size_t bytes, int kind) {
  ++device_syncs;
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const cudaMemcpyKind k = kind == 0   ? cudaMemcpyHostToDevice
                           : kind == 1 ? cudaMemcpyDeviceToHost
                                       : cudaMemcpyDeviceToDevice;
  check(cudaMemcpy(dst, src, bytes, k), "cudaMemcpy");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

void memset_zero(void* p, size_t bytes) {
  ++device_syncs;
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  check(cudaMemset(p, 0, bytes), "cudaMemset");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

void* host_alloc(size_t bytes) {
  void* p = nullptr;
  check(cudaHostAlloc(&p, bytes, cudaHostAllocDefault), "cudaHostAlloc");
  return p;
}

void host_free(void* p) { cudaFreeHost(p); }

void memcpy_async(void* dst, const void* src, size_t bytes, int kind, void* stream) {
  const cudaMemcpyKind k = kind == 0   ? cudaMemcpyHostToDevice
                           : kind == 1 ? cudaMemcpyDeviceToHost
                                       : cudaMemcpyDeviceToDevice;
  check(cudaMemcpyAsync(dst, src, bytes, k, static_cast<cudaStream_t>(stream)), "cudaMemcpyAsync");
}

void* event_create(bool timed) {
  cudaEvent_t e = nullptr;
  check(cudaEventCreateWithFlags(&e, timed ? cudaEventDefault : cudaEventDisableTiming),
        "cudaEventCreate");
  return e;
}

namespace {
__global__ void hold_kernel(uint64_t ns) {
  uint64_t t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}
}  // namespace

void hold_stream(void* stream, double us) {
  hold_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(uint64_t(us * 1000));
  check(cudaGetLastError(), "hold_kernel");
}

double event_elapsed_ms(void* start, void* end) {
  check(cudaEventSynchronize(static_cast<cudaEvent_t>(end)), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start), static_cast<cudaEvent_t>(end)),
        "cudaEventElapsedTime");
  return double(ms);
}

void event_destroy(void* event) { cudaEventDestroy(static_cast<cudaEvent_t>(event)); }

void event_record(void* event, void* stream) {
  check(cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)),
        "cudaEventRecord");
}

void event_wait(void* event, void* stream) {
  check(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event), 0),
        "cudaStreamWaitEvent");
}

void event_synchronize(void* event) {
  check(cudaEventSynchronize(static_cast<cudaEvent_t>(event)), "cudaEventSynchronize");
}

// Thread-local mode: a call of this thread that could wait for the device or allocate during the
// capture is refused (and so reported), while other threads (a data prefetcher) go on freely.
void capture_begin(void* stream) {
  check(cudaStreamBeginCapture(static_cast<cudaStream_t>(stream), cudaStreamCaptureModeThreadLocal),
        "cudaStreamBeginCapture");
}

void* capture_end(void* stream, size_t* nodes) {
  cudaGraph_t graph = nullptr;
  check(cudaStreamEndCapture(static_cast<cudaStream_t>(stream), &graph), "cudaStreamEndCapture");
  cudaGraphExec_t exec = nullptr;
  const cudaError_t got = cudaGraphGetNodes(graph, nullptr, nodes);
  const cudaError_t made = got == cudaSuccess ? cudaGraphInstantiate(&exec, graph, 0) : got;
  cudaGraphDestroy(graph);
  check(made, "cudaGraphInstantiate");
  return exec;
}

void capture_abandon(void* stream) {
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(static_cast<cudaStream_t>(stream), &graph);
  if (graph) cudaGraphDestroy(graph);
  cudaGetLastError();  // the failed call's error is the caller's to report, not a sticky one
}

void graph_launch(void* exec, void* stream) {
  check(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec), static_cast<cudaStream_t>(stream)),
        "cudaGraphLaunch");
}

void graph_destroy(void* exec) { cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec)); }

}  // namespace crema::prim::cuda
