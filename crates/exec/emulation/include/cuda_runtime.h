// The CUDA runtime API, emulated on the CPU (see sdfg_emulation/runtime.h):
// exactly what sdfg-codegen's CUDA translation units use, under CUDA's
// names, error codes and launch limits (those of compute capability 9.0).
#pragma once
#include "sdfg_emulation/runtime.h"

typedef enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidPitchValue = 12,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchFailure = 719,
  cudaErrorNotSupported = 801,
} cudaError_t;

typedef enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
} cudaMemcpyKind;

typedef sdfg_emu_stream* cudaStream_t;
typedef sdfg_emu_event* cudaEvent_t;
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02

inline const sdfg_emu::Limits& sdfg_emu::limits() {
  static const Limits l{"CUDA", {1024, 1024, 64}, 1024, {2147483647ULL, 65535ULL, 65535ULL}, false, 48 * 1024};
  return l;
}

#define SDFG_EMU_CALL(name, ...)  \
  (sdfg_emu::api(name), sdfg_emu::sticky != sdfg_emu::success ? (cudaError_t)sdfg_emu::sticky : (cudaError_t)(__VA_ARGS__))

inline const char* cudaGetErrorString(cudaError_t e) { return sdfg_emu::error_string(e); }
inline cudaError_t cudaGetLastError() {
  sdfg_emu::api("cudaGetLastError");
  int e = sdfg_emu::sticky != sdfg_emu::success ? sdfg_emu::sticky : sdfg_emu::last_error;
  sdfg_emu::last_error = sdfg_emu::success;
  return (cudaError_t)e;
}
inline cudaError_t cudaPeekAtLastError() { return (cudaError_t)(sdfg_emu::sticky != 0 ? sdfg_emu::sticky : sdfg_emu::last_error); }
inline cudaError_t cudaMalloc(void** p, size_t bytes) { return SDFG_EMU_CALL("cudaMalloc", sdfg_emu::device_malloc(p, bytes)); }
inline cudaError_t cudaFree(void* p) { return SDFG_EMU_CALL("cudaFree", sdfg_emu::device_free(p)); }
inline cudaError_t cudaMallocHost(void** p, size_t bytes) { return SDFG_EMU_CALL("cudaMallocHost", sdfg_emu::host_malloc(p, bytes)); }
inline cudaError_t cudaFreeHost(void* p) { return SDFG_EMU_CALL("cudaFreeHost", sdfg_emu::host_free(p)); }
inline cudaError_t cudaStreamCreate(cudaStream_t* s) { return SDFG_EMU_CALL("cudaStreamCreate", sdfg_emu::stream_create(s)); }
inline cudaError_t cudaStreamDestroy(cudaStream_t s) { return SDFG_EMU_CALL("cudaStreamDestroy", sdfg_emu::stream_destroy(s)); }
inline cudaError_t cudaStreamSynchronize(cudaStream_t s) { return SDFG_EMU_CALL("cudaStreamSynchronize", sdfg_emu::stream_synchronize(s)); }
inline cudaError_t cudaDeviceSynchronize() { return SDFG_EMU_CALL("cudaDeviceSynchronize", sdfg_emu::fail(sdfg_emu::drain_all())); }
inline cudaError_t cudaEventCreate(cudaEvent_t* e) { return SDFG_EMU_CALL("cudaEventCreate", sdfg_emu::event_create(e)); }
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  (void)flags;
  return SDFG_EMU_CALL("cudaEventCreateWithFlags", sdfg_emu::event_create(e));
}
inline cudaError_t cudaEventDestroy(cudaEvent_t e) { return SDFG_EMU_CALL("cudaEventDestroy", sdfg_emu::event_destroy(e)); }
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = 0) { return SDFG_EMU_CALL("cudaEventRecord", sdfg_emu::event_record(e, s)); }
inline cudaError_t cudaEventSynchronize(cudaEvent_t e) { return SDFG_EMU_CALL("cudaEventSynchronize", sdfg_emu::event_synchronize(e)); }
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s = 0) {
  return SDFG_EMU_CALL("cudaMemcpyAsync", sdfg_emu::copy_2d("cudaMemcpyAsync", dst, bytes, src, bytes, bytes, 1, kind, s));
}
inline cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                                     cudaMemcpyKind kind, cudaStream_t s = 0) {
  return SDFG_EMU_CALL("cudaMemcpy2DAsync", sdfg_emu::copy_2d("cudaMemcpy2DAsync", dst, dpitch, src, spitch, width, height, kind, s));
}
inline cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  sdfg_emu::api("cudaMemcpy");
  int e = sdfg_emu::copy_2d("cudaMemcpy", dst, bytes, src, bytes, bytes, 1, kind, nullptr);
  return (cudaError_t)(e != 0 ? e : sdfg_emu::fail(sdfg_emu::drain_all()));
}
inline cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t s = 0) {
  return SDFG_EMU_CALL("cudaMemsetAsync", sdfg_emu::memset_async(p, value, bytes, s));
}
// Untyped launches cannot be run by a CPU: the emitter launches through
// SDFG_LAUNCH, which passes the arguments typed.
inline cudaError_t cudaLaunchKernel(const void* f, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t s) {
  (void)f, (void)grid, (void)block, (void)args, (void)shared, (void)s;
  sdfg_emu::diagnose("cudaLaunchKernel with untyped arguments is not emulated: launch through SDFG_LAUNCH");
  return (cudaError_t)sdfg_emu::fail(sdfg_emu::not_supported);
}

#define SDFG_LAUNCH(kernel, grid, block, shared, stream, ...) \
  ((cudaError_t)::sdfg_emu::launch(#kernel, kernel, grid, block, shared, stream, ##__VA_ARGS__))
