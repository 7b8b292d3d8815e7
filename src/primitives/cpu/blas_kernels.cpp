// CPU BLAS kernel selection (see blas_kernels.h).
#include "primitives/blas_kernels.h"

#include <cblas.h>
#include <strings.h>
#include <unistd.h>

#include <cstdlib>

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

}  // namespace

void ensure_best_blas_kernels(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE")) return;  // the user's choice, or our re-executed self
  const char* best = best_kernels();
  const char* current = openblas_get_corename();
  if (!best || !current) return;
  const int have = kernel_rank(current);
  if (have < 0 || have >= kernel_rank(best)) return;
  setenv("OPENBLAS_CORETYPE", best, 1);
  execv("/proc/self/exe", argv);
  // execv returned: keep running with the kernels we have.
}

std::string blas_description() {
  const char* config = openblas_get_config();
  const char* core = openblas_get_corename();
  return std::string(config ? config : "OpenBLAS") + " (" + (core ? core : "?") + " kernels)";
}

}  // namespace crema::prim
