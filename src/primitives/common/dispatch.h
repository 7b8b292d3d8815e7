// The one branch on device of every primitive: CREMA_DISPATCH(h, fn, args...) calls cpu::fn or
// cuda::fn with args by the handle's device. A build without CUDA cannot create a CUDA handle
// (Handle's constructor refuses), so there the call is always the CPU one.
#pragma once

// Declares a primitive's two implementations (<op>_cpu.cpp, <op>_cuda.cu), which have its public
// signature: CREMA_BACKENDS(void f(Handle& h, int n);) declares cpu::f and cuda::f. Declared in
// the dispatcher's file rather than a header because only it calls them; a definition that does
// not match is a link error.
#define CREMA_BACKENDS(...) \
  namespace cpu {           \
  __VA_ARGS__               \
  }                         \
  namespace cuda {          \
  __VA_ARGS__               \
  }

#ifdef CREMA_WITH_CUDA
#define CREMA_DISPATCH(h, fn, ...) \
  ((h).device() == ::crema::prim::Device::kCPU ? cpu::fn(__VA_ARGS__) : cuda::fn(__VA_ARGS__))
#else
#define CREMA_DISPATCH(h, fn, ...) cpu::fn(__VA_ARGS__)
#endif
