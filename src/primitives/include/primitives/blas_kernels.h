// Choice of the CPU BLAS kernels. OpenBLAS picks its kernels from the CPU model when the library
// loads; a model newer than the library (e.g. family 6 model 207 with OpenBLAS 0.3.21) falls back
// to its SSE3 "Prescott" kernels, about 5x slower than the AVX-512 ones the CPU has (42 vs 208
// GFLOP/s on a 1024^3 SGEMM, 2 cores). The choice can only be changed through the
// OPENBLAS_CORETYPE environment variable before the library initializes, so a program that
// finds a weaker core than its CPU supports re-executes itself with the variable set.
#pragma once

#include <string>

namespace crema::prim {

// Call first thing in main(). Re-executes the program with OPENBLAS_CORETYPE naming the best
// kernels for this CPU when OpenBLAS chose weaker ones; returns when nothing needs to change,
// when the user set OPENBLAS_CORETYPE, or when re-executing fails.
void ensure_best_blas_kernels(char** argv);

// "OpenBLAS 0.3.21 ... (SkylakeX kernels)": for logs and device_query.
std::string blas_description();

}  // namespace crema::prim
