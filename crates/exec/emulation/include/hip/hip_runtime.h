// The HIP runtime API, emulated on the CPU (see sdfg_emulation/runtime.h):
// exactly what sdfg-codegen's HIP translation units use, under HIP's names,
// error codes and launch limits (those hipDeviceProp_t reports for AMD
// Instinct GPUs: 1024 threads per block in each dimension, grids of
// 2^31 - 1 x 65536 x 65536 blocks, fewer than 2^32 work items per
// dimension).
#pragma once
#include "../sdfg_emulation/runtime.h"

typedef enum hipError_t {
  hipSuccess = 0,
  hipErrorInvalidValue = 1,
  hipErrorOutOfMemory = 2,
  hipErrorInvalidConfiguration = 9,
  hipErrorInvalidPitchValue = 12,
  hipErrorInvalidDevicePointer = 17,
  hipErrorInvalidMemcpyDirection = 21,
  hipErrorInvalidHandle = 400,
  hipErrorIllegalAddress = 700,
  hipErrorLaunchFailure = 719,
  hipErrorNotSupported = 801,
} hipError_t;

typedef enum hipMemcpyKind {
  hipMemcpyHostToHost = 0,
  hipMemcpyHostToDevice = 1,
  hipMemcpyDeviceToHost = 2,
  hipMemcpyDeviceToDevice = 3,
  hipMemcpyDefault = 4,
} hipMemcpyKind;

typedef sdfg_emu_stream* hipStream_t;
typedef sdfg_emu_event* hipEvent_t;
#define hipEventDefault 0x0
#define hipEventBlockingSync 0x1
#define hipEventDisableTiming 0x2

inline const sdfg_emu::Limits& sdfg_emu::limits() {
  static const Limits l{"HIP", {1024, 1024, 1024}, 1024, {2147483647ULL, 65536ULL, 65536ULL}, true, 64 * 1024};
  return l;
}

#define SDFG_EMU_CALL(name, ...) \
  (sdfg_emu::api(name), sdfg_emu::sticky != sdfg_emu::success ? (hipError_t)sdfg_emu::sticky : (hipError_t)(__VA_ARGS__))

inline const char* hipGetErrorString(hipError_t e) { return sdfg_emu::error_string(e); }
inline hipError_t hipGetLastError() {
  sdfg_emu::api("hipGetLastError");
  int e = sdfg_emu::sticky != sdfg_emu::success ? sdfg_emu::sticky : sdfg_emu::last_error;
  sdfg_emu::last_error = sdfg_emu::success;
  return (hipError_t)e;
}
inline hipError_t hipPeekAtLastError() { return (hipError_t)(sdfg_emu::sticky != 0 ? sdfg_emu::sticky : sdfg_emu::last_error); }
inline hipError_t hipMalloc(void** p, size_t bytes) { return SDFG_EMU_CALL("hipMalloc", sdfg_emu::device_malloc(p, bytes)); }
inline hipError_t hipFree(void* p) { return SDFG_EMU_CALL("hipFree", sdfg_emu::device_free(p)); }
inline hipError_t hipHostMalloc(void** p, size_t bytes, unsigned int flags = 0) {
  (void)flags;
  return SDFG_EMU_CALL("hipHostMalloc", sdfg_emu::host_malloc(p, bytes));
}
inline hipError_t hipHostFree(void* p) { return SDFG_EMU_CALL("hipHostFree", sdfg_emu::host_free(p)); }
// The deprecated names the emitter's `{prefix}MallocHost` / `{prefix}FreeHost` spell.
inline hipError_t hipMallocHost(void** p, size_t bytes) { return SDFG_EMU_CALL("hipMallocHost", sdfg_emu::host_malloc(p, bytes)); }
inline hipError_t hipFreeHost(void* p) { return SDFG_EMU_CALL("hipFreeHost", sdfg_emu::host_free(p)); }
inline hipError_t hipStreamCreate(hipStream_t* s) { return SDFG_EMU_CALL("hipStreamCreate", sdfg_emu::stream_create(s)); }
inline hipError_t hipStreamDestroy(hipStream_t s) { return SDFG_EMU_CALL("hipStreamDestroy", sdfg_emu::stream_destroy(s)); }
inline hipError_t hipStreamSynchronize(hipStream_t s) { return SDFG_EMU_CALL("hipStreamSynchronize", sdfg_emu::stream_synchronize(s)); }
inline hipError_t hipDeviceSynchronize() { return SDFG_EMU_CALL("hipDeviceSynchronize", sdfg_emu::fail(sdfg_emu::drain_all())); }
inline hipError_t hipEventCreate(hipEvent_t* e) { return SDFG_EMU_CALL("hipEventCreate", sdfg_emu::event_create(e)); }
inline hipError_t hipEventCreateWithFlags(hipEvent_t* e, unsigned int flags) {
  (void)flags;
  return SDFG_EMU_CALL("hipEventCreateWithFlags", sdfg_emu::event_create(e));
}
inline hipError_t hipEventDestroy(hipEvent_t e) { return SDFG_EMU_CALL("hipEventDestroy", sdfg_emu::event_destroy(e)); }
inline hipError_t hipEventRecord(hipEvent_t e, hipStream_t s = 0) { return SDFG_EMU_CALL("hipEventRecord", sdfg_emu::event_record(e, s)); }
inline hipError_t hipEventSynchronize(hipEvent_t e) { return SDFG_EMU_CALL("hipEventSynchronize", sdfg_emu::event_synchronize(e)); }
inline hipError_t hipMemcpyAsync(void* dst, const void* src, size_t bytes, hipMemcpyKind kind, hipStream_t s = 0) {
  return SDFG_EMU_CALL("hipMemcpyAsync", sdfg_emu::copy_2d("hipMemcpyAsync", dst, bytes, src, bytes, bytes, 1, kind, s));
}
inline hipError_t hipMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                                   hipMemcpyKind kind, hipStream_t s = 0) {
  return SDFG_EMU_CALL("hipMemcpy2DAsync", sdfg_emu::copy_2d("hipMemcpy2DAsync", dst, dpitch, src, spitch, width, height, kind, s));
}
inline hipError_t hipMemcpy(void* dst, const void* src, size_t bytes, hipMemcpyKind kind) {
  sdfg_emu::api("hipMemcpy");
  int e = sdfg_emu::copy_2d("hipMemcpy", dst, bytes, src, bytes, bytes, 1, kind, nullptr);
  return (hipError_t)(e != 0 ? e : sdfg_emu::fail(sdfg_emu::drain_all()));
}
inline hipError_t hipMemsetAsync(void* p, int value, size_t bytes, hipStream_t s = 0) {
  return SDFG_EMU_CALL("hipMemsetAsync", sdfg_emu::memset_async(p, value, bytes, s));
}
inline hipError_t hipLaunchKernel(const void* f, dim3 grid, dim3 block, void** args, size_t shared, hipStream_t s) {
  (void)f, (void)grid, (void)block, (void)args, (void)shared, (void)s;
  sdfg_emu::diagnose("hipLaunchKernel with untyped arguments is not emulated: launch through SDFG_LAUNCH");
  return (hipError_t)sdfg_emu::fail(sdfg_emu::not_supported);
}

#define SDFG_LAUNCH(kernel, grid, block, shared, stream, ...) \
  ((hipError_t)::sdfg_emu::launch(#kernel, kernel, grid, block, shared, stream, ##__VA_ARGS__))
