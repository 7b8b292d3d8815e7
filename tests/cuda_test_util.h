// Helpers for the CUDA tests (*_cuda_test.cpp, ctest label gpu): each runs a primitive on a CUDA
// handle and on a CPU handle with the same inputs and compares, the CPU implementation being the
// reference (it is itself tested against the double-precision oracles). Tests skip where no GPU
// is visible, so the gpu binaries also run, as skips, in CI.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "primitives/handle.h"
#include "test_util.h"

namespace crema::test {

#define CREMA_SKIP_WITHOUT_GPU()                                                 \
  do {                                                                           \
    if (!::crema::prim::cuda_available()) GTEST_SKIP() << "no CUDA GPU visible"; \
  } while (0)

// A host vector's copy on the GPU.
template <typename T>
prim::DeviceBuffer to_gpu(const std::vector<T>& v) {
  prim::DeviceBuffer b(prim::Device::kCUDA, v.size() * sizeof(T));
  if (!v.empty())
    prim::device_memcpy(b.get(), prim::Device::kCUDA, v.data(), prim::Device::kCPU,
                        v.size() * sizeof(T));
  return b;
}

// The first n elements of a GPU buffer, after the handle's stream has finished.
template <typename T>
std::vector<T> from_gpu(prim::Handle& h, const prim::DeviceBuffer& b, size_t n) {
  h.synchronize();
  std::vector<T> v(n);
  if (n)
    prim::device_memcpy(v.data(), prim::Device::kCPU, b.get(), prim::Device::kCUDA, n * sizeof(T));
  return v;
}

}  // namespace crema::test

namespace crema {
using test::from_gpu;
using test::to_gpu;
}  // namespace crema
