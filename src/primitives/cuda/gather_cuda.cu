// Row gather / scatter-add on CUDA. The indices are validated first (bad_index.cuh). gather_rows is
// one grid-stride copy (2-3 * sizeof(T) bytes per element). scatter_add_rows is deterministic
// without float atomics: the (row, position) pairs are radix-sorted (stable, so each row's sources
// stay in index order), each row's run in the sorted list is marked, and one thread per table
// element adds its row's sources in that order, as the CPU does. nonzero_indices flags the nonzero
// positions and compacts them with cub::DeviceSelect::Flagged (order kept), then reads the count
// back (the API returns it to the host).
#include <climits>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>
#include <sstream>

#include "primitives/common/dtype_visit.h"
#include "primitives/cuda/bad_index.cuh"
#include "primitives/cuda/cuda_reduce.cuh"
#include "primitives/cuda/cuda_util.cuh"
#include "primitives/gather.h"

namespace crema::prim::cuda {
namespace {

// Throws PrimError naming the first index outside [0, num_rows), with the CPU's message.
template <typename T>
void check_indices(Handle& h, const char* op, const RowsDesc& rd, const T* idx,
                   unsigned long long* flag) {
  const BadIndex<T> bad = first_bad_index(h, op, idx, rd.num_indices, rd.num_rows, flag);
  if (!bad.found) return;
  std::ostringstream os;
  os << op << ": index " << bad.value << " at position " << bad.position
     << " is not a row of the table [0, " << rd.num_rows << ")";
  throw PrimError(os.str());
}

template <typename T>
__global__ void gather_kernel(int64_t total, int64_t d, const T* table, const T* idx, T* out,
                              T alpha, T beta) {
  CREMA_CUDA_LOOP(e, total) {
    const int64_t i = e / d, j = e - i * d;
    blend_store(out + e, table[int64_t(idx[i]) * d + j], alpha, beta);
  }
}

template <typename T>
__global__ void make_pairs_kernel(int64_t n, const T* idx, int* keys, int* vals) {
  CREMA_CUDA_LOOP(i, n) {
    keys[i] = int(idx[i]);
    vals[i] = int(i);
  }
}

// Marks each row's run [start, end) in the sorted keys; rows with no run keep 0, 0.
__global__ void mark_runs_kernel(int64_t n, const int* keys, int* start, int* end) {
  CREMA_CUDA_LOOP(s, n) {
    const int r = keys[s];
    if (s == 0 || keys[s - 1] != r) start[r] = int(s);
    if (s == n - 1 || keys[s + 1] != r) end[r] = int(s + 1);
  }
}

// Rounded products that the compiler may not fuse into the following add, so the sums round as
// the CPU's do.
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }

template <typename T>
__global__ void scatter_kernel(int64_t total, int64_t d, const int* start, const int* end,
                               const int* order, const T* src, T* table, T alpha, T beta) {
  CREMA_CUDA_LOOP(e, total) {
    const int64_t r = e / d, j = e - r * d;
    T t = beta == T(0) ? T(0) : beta == T(1) ? table[e] : mul_rn(table[e], beta);
    for (int s = start[r]; s < end[r]; ++s) t += mul_rn(alpha, src[int64_t(order[s]) * d + j]);
    table[e] = t;
  }
}

template <typename T>
__global__ void flag_kernel(int64_t n, const T* mask, T* pos, char* flags) {
  CREMA_CUDA_LOOP(i, n) {
    pos[i] = T(i);
    flags[i] = mask[i] != T(0);
  }
}

template <typename T>
void gather(Handle& h, const RowsDesc& rd, const void* table, const void* iv, void* out, Blend b) {
  const T* idx = static_cast<const T*>(iv);
  check_indices(h, "gather_rows", rd, idx,
                static_cast<unsigned long long*>(h.workspace(sizeof(unsigned long long))));
  const int64_t total = rd.num_indices * rd.row_size;
  if (total == 0) return;
  gather_kernel<T><<<grid_for(total), kBlock, 0, stream_of(h)>>>(
      total, rd.row_size, static_cast<const T*>(table), idx, static_cast<T*>(out), T(b.alpha),
      T(b.beta));
  check_launch("gather_rows");
}

template <typename T>
void scatter(Handle& h, const RowsDesc& rd, const void* sv, const void* iv, void* tv, Blend b) {
  const char* op = "scatter_add_rows";
  if (rd.num_indices > INT_MAX || rd.num_rows > INT_MAX)
    throw PrimError(std::string(op) + ": more than 2^31 indices or rows");
  const int n = int(rd.num_indices), rows = int(rd.num_rows);
  const T* idx = static_cast<const T*>(iv);
  cudaStream_t s = stream_of(h);
  int end_bit = 1;
  while (end_bit < 31 && (1ll << end_bit) < rows) ++end_bit;
  size_t sort_bytes = 0;
  check_cuda(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, static_cast<int*>(nullptr),
                                             static_cast<int*>(nullptr), static_cast<int*>(nullptr),
                                             static_cast<int*>(nullptr), n, 0, end_bit, s),
             op);
  const size_t ni = size_t(n), nr = size_t(rows);
  Carver cv(h.workspace(Carver::bytes<unsigned long long>(1) + 4 * Carver::bytes<int>(ni) +
                        2 * Carver::bytes<int>(nr) + Carver::bytes<char>(sort_bytes)));
  auto* flag = cv.take<unsigned long long>(1);
  int* keys_in = cv.take<int>(ni);
  int* keys = cv.take<int>(ni);
  int* vals_in = cv.take<int>(ni);
  int* order = cv.take<int>(ni);
  int* start = cv.take<int>(nr);
  int* end = cv.take<int>(nr);
  void* sort_tmp = cv.take<char>(sort_bytes);
  if (n > 0) check_indices(h, op, rd, idx, flag);
  const int64_t total = rd.num_rows * rd.row_size;
  if (total == 0) return;
  check_cuda(cudaMemsetAsync(start, 0, nr * sizeof(int), s), op);
  check_cuda(cudaMemsetAsync(end, 0, nr * sizeof(int), s), op);
  if (n > 0) {
    make_pairs_kernel<T><<<grid_for(n), kBlock, 0, s>>>(n, idx, keys_in, vals_in);
    check_launch(op);
    check_cuda(cub::DeviceRadixSort::SortPairs(sort_tmp, sort_bytes, keys_in, keys, vals_in, order,
                                               n, 0, end_bit, s),
               op);
    mark_runs_kernel<<<grid_for(n), kBlock, 0, s>>>(n, keys, start, end);
    check_launch(op);
  }
  scatter_kernel<T><<<grid_for(total), kBlock, 0, s>>>(total, rd.row_size, start, end, order,
                                                       static_cast<const T*>(sv),
                                                       static_cast<T*>(tv), T(b.alpha), T(b.beta));
  check_launch(op);
}

template <typename T>
int64_t nonzero(Handle& h, int64_t n, const void* mask, void* indices) {
  const char* op = "nonzero_indices";
  cudaStream_t s = stream_of(h);
  size_t sel_bytes = 0;
  check_cuda(cub::DeviceSelect::Flagged(nullptr, sel_bytes, static_cast<const T*>(nullptr),
                                        static_cast<const char*>(nullptr), static_cast<T*>(nullptr),
                                        static_cast<int64_t*>(nullptr), n, s),
             op);
  const size_t nn = size_t(n);
  Carver cv(h.workspace(Carver::bytes<T>(nn) + Carver::bytes<char>(nn) + Carver::bytes<int64_t>(1) +
                        Carver::bytes<char>(sel_bytes)));
  T* pos = cv.take<T>(nn);
  char* flags = cv.take<char>(nn);
  int64_t* count = cv.take<int64_t>(1);
  void* sel_tmp = cv.take<char>(sel_bytes);
  flag_kernel<T><<<grid_for(n), kBlock, 0, s>>>(n, static_cast<const T*>(mask), pos, flags);
  check_launch(op);
  check_cuda(cub::DeviceSelect::Flagged(sel_tmp, sel_bytes, pos, flags, static_cast<T*>(indices),
                                        count, n, s),
             op);
  int64_t host = 0;
  check_cuda(cudaMemcpyAsync(&host, count, sizeof(host), cudaMemcpyDeviceToHost, s), op);
  wait_for_stream(h, op);
  return host;
}

}  // namespace

void gather_rows(Handle& h, const RowsDesc& rd, const void* table, const void* indices, void* out,
                 Blend blend) {
  visit_dtype(kFloatTypes, rd.dtype, "gather_rows", Device::kCUDA, [&](auto tag) {
    gather<typename decltype(tag)::type>(h, rd, table, indices, out, blend);
  });
}

void scatter_add_rows(Handle& h, const RowsDesc& rd, const void* src, const void* indices,
                      void* table, Blend blend) {
  visit_dtype(kFloatTypes, rd.dtype, "scatter_add_rows", Device::kCUDA, [&](auto tag) {
    scatter<typename decltype(tag)::type>(h, rd, src, indices, table, blend);
  });
}

int64_t nonzero_indices(Handle& h, DataType t, int64_t n, const void* mask, void* indices) {
  return visit_dtype(kFloatTypes, t, "nonzero_indices", Device::kCUDA, [&](auto tag) {
    return nonzero<typename decltype(tag)::type>(h, n, mask, indices);
  });
}

}  // namespace crema::prim::cuda
