// The CPU BLAS as a process needs it.
// - Kernels: OpenBLAS picks its kernels from the CPU model when the library loads; a model newer
//   than the library (e.g. family 6 model 207 with OpenBLAS 0.3.21) falls back to its SSE3
//   "Prescott" kernels, about 5x slower than the AVX-512 ones the CPU has (42 vs 208 GFLOP/s on
//   a 1024^3 SGEMM, 2 cores). The choice can only be changed through the OPENBLAS_CORETYPE
//   environment variable before the library initializes.
// - Memory: each thread that runs an OpenBLAS GEMM maps a buffer of about 128 MiB the first
//   time, and OpenBLAS retries a mapping that fails forever. Under an address-space limit
//   (ulimit -v) a GEMM, or the exit that joins OpenBLAS's own threads (which map theirs when the
//   library loads), would hang instead of failing.
// So a program re-executes itself once with the environment it needs, and a CPU Handle under an
// address-space limit maps its threads' buffers up front (prepare_blas_buffers).
#pragma once

#include <string>

namespace crema::prim {

// Call first thing in main(). Re-executes the program once with OPENBLAS_CORETYPE naming the
// best kernels for this CPU where OpenBLAS chose weaker ones (unless the user set it), and with
// OPENBLAS_NUM_THREADS=1 under an address-space limit (unless set: crema's primitives run
// their own threads around single-threaded BLAS calls). Returns when nothing needs to change,
// or when re-executing fails.
void prepare_blas_process(char** argv);

// Under an address-space limit, maps OpenBLAS's buffers for `threads` threads calling it at
// once (one GEMM on each, at the same time), after checking that the limit leaves room for them;
// throws PrimError naming the limit and the need where it does not. Without a limit, or once
// done for as many threads, it returns at once.
void prepare_blas_buffers(int threads);

// "OpenBLAS 0.3.21 ... (SkylakeX kernels)": for logs and device_query.
std::string blas_description();

}  // namespace crema::prim
