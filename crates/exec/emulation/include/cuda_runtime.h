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
  cudaErrorCooperativeLaunchTooLarge = 720,
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

// Lanes per warp (32, compute capability 9.0's), and the shuffle the emitter's block reductions use.
constexpr int warpSize = 32;
template <class T>
inline T __shfl_down_sync(unsigned int mask, T var, unsigned int delta, int width = warpSize) {
  (void)mask;
  return sdfg_emu::shuffle_down(var, delta, width, warpSize);
}

inline const sdfg_emu::Limits& sdfg_emu::limits() {
  static const Limits l{"CUDA", {1024, 1024, 64}, 1024, {2147483647ULL, 65535ULL, 65535ULL}, false, 48 * 1024, 32};
  return l;
}

// The one device attribute the emitter asks for.
typedef enum cudaDeviceAttr {
  cudaDevAttrMultiProcessorCount = 16,
} cudaDeviceAttr;

#define SDFG_EMU_API(Name) cuda##Name
#define SDFG_EMU_ATTRIBUTE cudaDeviceAttr
#define SDFG_EMU_MULTIPROCESSORS cudaDevAttrMultiProcessorCount
#define SDFG_EMU_ERROR cudaError_t
#define SDFG_EMU_KIND cudaMemcpyKind
#define SDFG_EMU_STREAM cudaStream_t
#define SDFG_EMU_EVENT cudaEvent_t
#include "sdfg_emulation/runtime_api.h"
