// The one branch on device of every primitive: CREMA_DISPATCH(h, fn, args...) calls cpu::fn or
// cuda::fn with args by the handle's device. A build without CUDA cannot create a CUDA handle
// (Handle's constructor refuses), so there the call is always the CPU one.
#pragma once

#ifdef CREMA_WITH_CUDA
#define CREMA_DISPATCH(h, fn, ...) \
  ((h).device() == ::crema::prim::Device::kCPU ? cpu::fn(__VA_ARGS__) : cuda::fn(__VA_ARGS__))
#else
#define CREMA_DISPATCH(h, fn, ...) cpu::fn(__VA_ARGS__)
#endif
