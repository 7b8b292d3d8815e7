// CPU BLAS kernel selection (see blas_kernels.h).
#include "primitives/blas_kernels.h"

#include <cblas.h>
#include <sched.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <system_error>
#include <vector>

#include "primitives/cpu/parallel.h"
#include "primitives/types.h"

namespace crema::prim {
namespace {

// How capable a kernel set is; unknown names rank -1 and are left alone.
int kernel_rank(const char* core) {
  static const struct {
    const char* name;
    int rank;
  } kRanks[] = {{"Prescott", 0}, {"Core2", 0},    {"Penryn", 0},      {"Dunnington", 0},
                {"Nehalem", 0},  {"Atom", 0},     {"Sandybridge", 1}, {"Haswell", 2},
                {"Zen", 2},      {"SkylakeX", 3}, {"Cooperlake", 3},  {"SapphireRapids", 3}};
  for (const auto& r : kRanks)
    if (strcasecmp(core, r.name) == 0) return r.rank;
  return -1;
}

// The best kernel set this CPU can run, or nullptr when none beats the baseline.
const char* best_kernels() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512cd"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return nullptr;
}

// The address-space limit in bytes, 0 when there is none.
size_t address_space_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;
  return size_t(limit.rlim_cur);
}

// What one thread's OpenBLAS buffer takes of the address space: OpenBLAS 0.3's BUFFER_SIZE on
// x86-64 (128 MiB) and its alignment, with room to spare.
constexpr size_t kBlasBufferBytes = size_t(130) << 20;

}  // namespace

void prepare_blas_process(char** argv) {
  bool changed = false;
  // The user's choice, or our re-executed self, stays.
  if (!std::getenv("OPENBLAS_CORETYPE")) {
    const char* best = best_kernels();
    const char* current = openblas_get_corename();
    const int have = current ? kernel_rank(current) : -1;
    if (best && have >= 0 && have < kernel_rank(best)) {
      setenv("OPENBLAS_CORETYPE", best, 1);
      changed = true;
    }
  }
  if (address_space_limit() && !std::getenv("OPENBLAS_NUM_THREADS")) {
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    changed = true;
  }
  if (changed) execv("/proc/self/exe", argv);
  // execv returned (or nothing changed): run on as loaded.
}

void prepare_blas_buffers(int threads) {
  const size_t limit = address_space_limit();
  // Inside a parallel_for the tasks below would run one after another and never meet.
  if (!limit || inside_parallel_for()) return;
  static std::mutex mutex;
  static int prepared = 0;
  std::lock_guard<std::mutex> lock(mutex);
  if (threads <= prepared) return;
  // The pool's threads first (their stacks and malloc arenas take address space too), then the
  // room for a buffer each, with some to spare for what the GEMM itself allocates.
  try {
    parallel_for(threads, [](int) { std::vector<float> touch(1024, 0.0f); });
  } catch (const std::system_error& e) {
    throw PrimError("cannot start " + std::to_string(threads) + " CPU threads under the " +
                    "address-space limit (ulimit -v) of " + std::to_string(limit >> 20) +
                    " MiB: " + e.what());
  }
  const size_t need = size_t(threads) * kBlasBufferBytes + (size_t(64) << 20);
  void* room = mmap(nullptr, need, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (room == MAP_FAILED)
    throw PrimError("the address-space limit (ulimit -v) of " + std::to_string(limit >> 20) +
                    " MiB leaves too little for the CPU GEMM: OpenBLAS maps about 128 MiB for "
                    "each of the " +
                    std::to_string(threads) +
                    " threads (set CREMA_NUM_THREADS lower or raise the limit)");
  munmap(room, need);
  // Every thread waits for the others before its GEMM, so that all run at once and each maps a
  // buffer of its own; later GEMMs reuse them. 256^3 is past OpenBLAS's small-matrix path, which
  // maps no buffer.
  std::atomic<int> arrived{0};
  parallel_for(threads, [&](int) {
    constexpr int n = 256;
    std::vector<float> a(n * n, 1.0f), c(n * n);
    arrived.fetch_add(1);
    while (arrived.load() < threads) sched_yield();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, a.data(), n,
                0.0f, c.data(), n);
  });
  prepared = threads;
}

std::string blas_description() {
  const char* config = openblas_get_config();
  const char* core = openblas_get_corename();
  return std::string(config ? config : "OpenBLAS") + " (" + (core ? core : "?") + " kernels)";
}

}  // namespace crema::prim
