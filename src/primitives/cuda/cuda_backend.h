// Internal: the CUDA runtime pieces the Handle and memory functions need, implemented in
// cuda_runtime.cu. Only included by primitives sources; declared only in CUDA builds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#ifdef CREMA_WITH_CUDA
namespace crema::prim::cuda {
int device_count();
int current_device();
void set_current_device(int device_id);
std::string device_description(int device_id);
std::string device_identity(int device_id);
// A non-blocking stream on device_id, at CUDA's greatest priority when `urgent`.
void* create_stream(int device_id, bool urgent);
void destroy_stream(void* stream);
void* create_blas(void* stream);
void destroy_blas(void* blas);
void synchronize(void* stream);
void* alloc(size_t bytes);
void free(void* p);
size_t peak_allocated_bytes();
// Total memory of the current device, 0 without one; cached per device.
size_t total_memory();
uint64_t device_sync_count();
// kind: 0 host->device, 1 device->host, 2 device->device.
void memcpy(void* dst, const void* src, size_t bytes, int kind);
void memset_zero(void* p, size_t bytes);
void* host_alloc(size_t bytes);
void host_free(void* p);
void memcpy_async(void* dst, const void* src, size_t bytes, int kind, void* stream);
void* event_create(bool timed = false);
// Milliseconds of GPU time between two timed events, waiting for the second.
double event_elapsed_ms(void* start, void* end);
// Holds the stream for `us` microseconds of GPU time (one thread spinning on the global timer).
void hold_stream(void* stream, double us);
void event_destroy(void* event);
void event_record(void* event, void* stream);
void event_wait(void* event, void* stream);
void event_synchronize(void* event);
// CUDA graphs (StreamGraph): capture on a stream, instantiate, launch.
void capture_begin(void* stream);
// Ends the capture and instantiates what it recorded; sets *nodes to its node count.
void* capture_end(void* stream, size_t* nodes);
// Ends a capture that failed part-way, dropping what it recorded.
void capture_abandon(void* stream);
void graph_launch(void* exec, void* stream);
void graph_destroy(void* exec);
}  // namespace crema::prim::cuda
#endif
