// CREMA_HOST_DEVICE: marks a function of a common header that both backends call, compiled for
// the host and, under nvcc, for the device too.
#pragma once

#ifdef __CUDACC__
#define CREMA_HOST_DEVICE __host__ __device__
#else
#define CREMA_HOST_DEVICE
#endif
