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
  hipErrorCooperativeLaunchTooLarge = 720,
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

// Lanes per warp (64, the wavefront of AMD's CDNA GPUs), and the shuffle the emitter's block reductions use.
constexpr int warpSize = 64;
template <class T>
inline T __shfl_down(T var, unsigned int delta, int width = warpSize) {
  return sdfg_emu::shuffle_down(var, delta, width, warpSize);
}

inline const sdfg_emu::Limits& sdfg_emu::limits() {
  static const Limits l{"HIP", {1024, 1024, 1024}, 1024, {2147483647ULL, 65536ULL, 65536ULL}, true, 64 * 1024, 64};
  return l;
}

// The one device attribute the emitter asks for.
typedef enum hipDeviceAttribute_t {
  hipDeviceAttributeMultiprocessorCount = 63,
} hipDeviceAttribute_t;

#define SDFG_EMU_API(Name) hip##Name
#define SDFG_EMU_ATTRIBUTE hipDeviceAttribute_t
#define SDFG_EMU_MULTIPROCESSORS hipDeviceAttributeMultiprocessorCount
#define SDFG_EMU_ERROR hipError_t
#define SDFG_EMU_KIND hipMemcpyKind
#define SDFG_EMU_STREAM hipStream_t
#define SDFG_EMU_EVENT hipEvent_t
#include "../sdfg_emulation/runtime_api.h"

// HIP's own names for pinned host memory (the emitter spells them as CUDA
// does, `{prefix}MallocHost`, which HIP keeps as deprecated aliases).
inline hipError_t hipHostMalloc(void** p, size_t bytes, unsigned int flags = 0) {
  (void)flags;
  return SDFG_EMU_CALL(HostMalloc, sdfg_emu::host_malloc(p, bytes));
}
inline hipError_t hipHostFree(void* p) { return SDFG_EMU_CALL(HostFree, sdfg_emu::host_free(p)); }
