// The runtime API functions, written once for CUDA and HIP: the front header
// (`cuda_runtime.h`, `hip/hip_runtime.h`) defines its error and copy-kind
// enums and the stream and event types, then
//   SDFG_EMU_API(Name)  the prefixed name (`cuda##Name`, `hip##Name`),
//   SDFG_EMU_ERROR      its error type,
//   SDFG_EMU_KIND       its copy-kind type,
//   SDFG_EMU_STREAM     its stream type,
//   SDFG_EMU_EVENT      its event type,
// and includes this file.
#pragma once

#define SDFG_EMU_NAME(Name) #Name
#define SDFG_EMU_STRINGIFY(x) SDFG_EMU_NAME(x)
// Counts the call, returns the sticky error if there is one, else the result.
#define SDFG_EMU_CALL(Name, ...)                                                         \
  (sdfg_emu::api(SDFG_EMU_STRINGIFY(SDFG_EMU_API(Name))),                                \
   sdfg_emu::sticky != sdfg_emu::success ? (SDFG_EMU_ERROR)sdfg_emu::sticky : (SDFG_EMU_ERROR)(__VA_ARGS__))

inline const char* SDFG_EMU_API(GetErrorString)(SDFG_EMU_ERROR e) { return sdfg_emu::error_string(e); }
inline SDFG_EMU_ERROR SDFG_EMU_API(GetLastError)() {
  sdfg_emu::api(SDFG_EMU_STRINGIFY(SDFG_EMU_API(GetLastError)));
  int e = sdfg_emu::sticky != sdfg_emu::success ? sdfg_emu::sticky : sdfg_emu::last_error;
  sdfg_emu::last_error = sdfg_emu::success;
  return (SDFG_EMU_ERROR)e;
}
inline SDFG_EMU_ERROR SDFG_EMU_API(PeekAtLastError)() {
  return (SDFG_EMU_ERROR)(sdfg_emu::sticky != sdfg_emu::success ? sdfg_emu::sticky : sdfg_emu::last_error);
}
inline SDFG_EMU_ERROR SDFG_EMU_API(Malloc)(void** p, size_t bytes) { return SDFG_EMU_CALL(Malloc, sdfg_emu::device_malloc(p, bytes)); }
inline SDFG_EMU_ERROR SDFG_EMU_API(Free)(void* p) { return SDFG_EMU_CALL(Free, sdfg_emu::device_free(p)); }
inline SDFG_EMU_ERROR SDFG_EMU_API(MallocHost)(void** p, size_t bytes) { return SDFG_EMU_CALL(MallocHost, sdfg_emu::host_malloc(p, bytes)); }
inline SDFG_EMU_ERROR SDFG_EMU_API(FreeHost)(void* p) { return SDFG_EMU_CALL(FreeHost, sdfg_emu::host_free(p)); }
inline SDFG_EMU_ERROR SDFG_EMU_API(StreamCreate)(SDFG_EMU_STREAM* s) { return SDFG_EMU_CALL(StreamCreate, sdfg_emu::stream_create(s)); }
inline SDFG_EMU_ERROR SDFG_EMU_API(StreamDestroy)(SDFG_EMU_STREAM s) { return SDFG_EMU_CALL(StreamDestroy, sdfg_emu::stream_destroy(s)); }
inline SDFG_EMU_ERROR SDFG_EMU_API(StreamSynchronize)(SDFG_EMU_STREAM s) {
  return SDFG_EMU_CALL(StreamSynchronize, sdfg_emu::stream_synchronize(s));
}
inline SDFG_EMU_ERROR SDFG_EMU_API(DeviceSynchronize)() { return SDFG_EMU_CALL(DeviceSynchronize, sdfg_emu::fail(sdfg_emu::drain_all())); }
inline SDFG_EMU_ERROR SDFG_EMU_API(EventCreate)(SDFG_EMU_EVENT* e) { return SDFG_EMU_CALL(EventCreate, sdfg_emu::event_create(e)); }
inline SDFG_EMU_ERROR SDFG_EMU_API(EventCreateWithFlags)(SDFG_EMU_EVENT* e, unsigned int flags) {
  (void)flags;
  return SDFG_EMU_CALL(EventCreateWithFlags, sdfg_emu::event_create(e));
}
inline SDFG_EMU_ERROR SDFG_EMU_API(EventDestroy)(SDFG_EMU_EVENT e) { return SDFG_EMU_CALL(EventDestroy, sdfg_emu::event_destroy(e)); }
inline SDFG_EMU_ERROR SDFG_EMU_API(EventRecord)(SDFG_EMU_EVENT e, SDFG_EMU_STREAM s = 0) {
  return SDFG_EMU_CALL(EventRecord, sdfg_emu::event_record(e, s));
}
inline SDFG_EMU_ERROR SDFG_EMU_API(EventSynchronize)(SDFG_EMU_EVENT e) {
  return SDFG_EMU_CALL(EventSynchronize, sdfg_emu::event_synchronize(e));
}
inline SDFG_EMU_ERROR SDFG_EMU_API(MemcpyAsync)(void* dst, const void* src, size_t bytes, SDFG_EMU_KIND kind, SDFG_EMU_STREAM s = 0) {
  return SDFG_EMU_CALL(MemcpyAsync,
                       sdfg_emu::copy_2d(SDFG_EMU_STRINGIFY(SDFG_EMU_API(MemcpyAsync)), dst, bytes, src, bytes, bytes, 1, kind, s));
}
inline SDFG_EMU_ERROR SDFG_EMU_API(Memcpy2DAsync)(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                                                  SDFG_EMU_KIND kind, SDFG_EMU_STREAM s = 0) {
  return SDFG_EMU_CALL(Memcpy2DAsync, sdfg_emu::copy_2d(SDFG_EMU_STRINGIFY(SDFG_EMU_API(Memcpy2DAsync)), dst, dpitch, src, spitch,
                                                        width, height, kind, s));
}
// A synchronous copy: queued, then the device is synchronized.
inline SDFG_EMU_ERROR SDFG_EMU_API(Memcpy)(void* dst, const void* src, size_t bytes, SDFG_EMU_KIND kind) {
  sdfg_emu::api(SDFG_EMU_STRINGIFY(SDFG_EMU_API(Memcpy)));
  int e = sdfg_emu::copy_2d(SDFG_EMU_STRINGIFY(SDFG_EMU_API(Memcpy)), dst, bytes, src, bytes, bytes, 1, kind, nullptr);
  return (SDFG_EMU_ERROR)(e != 0 ? e : sdfg_emu::fail(sdfg_emu::drain_all()));
}
inline SDFG_EMU_ERROR SDFG_EMU_API(MemsetAsync)(void* p, int value, size_t bytes, SDFG_EMU_STREAM s = 0) {
  return SDFG_EMU_CALL(MemsetAsync, sdfg_emu::memset_async(p, value, bytes, s));
}
// Untyped launches cannot be run by a CPU: the emitter launches through
// SDFG_LAUNCH, which passes the arguments typed.
inline SDFG_EMU_ERROR SDFG_EMU_API(LaunchKernel)(const void* f, dim3 grid, dim3 block, void** args, size_t shared, SDFG_EMU_STREAM s) {
  (void)f, (void)grid, (void)block, (void)args, (void)shared, (void)s;
  sdfg_emu::diagnose("%s with untyped arguments is not emulated: launch through SDFG_LAUNCH",
                     SDFG_EMU_STRINGIFY(SDFG_EMU_API(LaunchKernel)));
  return (SDFG_EMU_ERROR)sdfg_emu::fail(sdfg_emu::not_supported);
}

// The device, and what sizes a persistent kernel's grid: the number of
// multiprocessors and how many blocks of a kernel each holds at once.
inline SDFG_EMU_ERROR SDFG_EMU_API(GetDevice)(int* device) {
  sdfg_emu::api(SDFG_EMU_STRINGIFY(SDFG_EMU_API(GetDevice)));
  if (device == nullptr) return (SDFG_EMU_ERROR)sdfg_emu::fail(sdfg_emu::invalid_value);
  *device = 0;
  return (SDFG_EMU_ERROR)sdfg_emu::success;
}
inline SDFG_EMU_ERROR SDFG_EMU_API(DeviceGetAttribute)(int* value, SDFG_EMU_ATTRIBUTE attribute, int device) {
  sdfg_emu::api(SDFG_EMU_STRINGIFY(SDFG_EMU_API(DeviceGetAttribute)));
  if (value == nullptr || device != 0) return (SDFG_EMU_ERROR)sdfg_emu::fail(sdfg_emu::invalid_value);
  if (attribute != SDFG_EMU_MULTIPROCESSORS) {
    sdfg_emu::diagnose("%s: only the multiprocessor count is emulated", SDFG_EMU_STRINGIFY(SDFG_EMU_API(DeviceGetAttribute)));
    return (SDFG_EMU_ERROR)sdfg_emu::fail(sdfg_emu::not_supported);
  }
  *value = sdfg_emu::multiprocessors;
  return (SDFG_EMU_ERROR)sdfg_emu::success;
}
inline SDFG_EMU_ERROR SDFG_EMU_API(OccupancyMaxActiveBlocksPerMultiprocessor)(int* blocks, const void* kernel, int threads,
                                                                              size_t shared) {
  sdfg_emu::api(SDFG_EMU_STRINGIFY(SDFG_EMU_API(OccupancyMaxActiveBlocksPerMultiprocessor)));
  if (blocks == nullptr || kernel == nullptr) return (SDFG_EMU_ERROR)sdfg_emu::fail(sdfg_emu::invalid_value);
  *blocks = sdfg_emu::resident_blocks(threads, shared);
  return (SDFG_EMU_ERROR)sdfg_emu::success;
}
inline SDFG_EMU_ERROR SDFG_EMU_API(LaunchCooperativeKernel)(const void* f, dim3 grid, dim3 block, void** args, size_t shared,
                                                            SDFG_EMU_STREAM s) {
  (void)f, (void)grid, (void)block, (void)args, (void)shared, (void)s;
  sdfg_emu::diagnose("%s with untyped arguments is not emulated: launch through SDFG_LAUNCH_COOPERATIVE",
                     SDFG_EMU_STRINGIFY(SDFG_EMU_API(LaunchCooperativeKernel)));
  return (SDFG_EMU_ERROR)sdfg_emu::fail(sdfg_emu::not_supported);
}
#define SDFG_LAUNCH_COOPERATIVE(kernel, grid, block, shared, stream, ...) \
  ((SDFG_EMU_ERROR)::sdfg_emu::launch_cooperative(#kernel, kernel, grid, block, shared, stream, ##__VA_ARGS__))

// The emitter's declaration that a kernel synchronizes (__syncthreads,
// shuffles), before its launches: the threaded mode runs it as fibers.
#define SDFG_SYNCHRONIZING(kernel) (void)(::sdfg_emu::synchronizes[(const void*)(kernel)] = 1)
#define SDFG_LAUNCH(kernel, grid, block, shared, stream, ...) \
  ((SDFG_EMU_ERROR)::sdfg_emu::launch(#kernel, kernel, grid, block, shared, stream, ##__VA_ARGS__))
