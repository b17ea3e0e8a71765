// Declaration-only subset of hipSOLVER's public API (ROCm 5.x
// `hipsolver.h`, its cuSOLVER-compatible `hipsolverDn` functions), for
// compile checks where hipSOLVER is not installed. See ../README.md.
#pragma once
#include <hip/hip_runtime_api.h>

typedef void* hipsolverHandle_t;
typedef hipsolverHandle_t hipsolverDnHandle_t;

typedef enum {
  HIPSOLVER_STATUS_SUCCESS = 0,
  HIPSOLVER_STATUS_NOT_INITIALIZED = 1,
  HIPSOLVER_STATUS_ALLOC_FAILED = 2,
  HIPSOLVER_STATUS_INVALID_VALUE = 3,
  HIPSOLVER_STATUS_MAPPING_ERROR = 4,
  HIPSOLVER_STATUS_EXECUTION_FAILED = 5,
  HIPSOLVER_STATUS_INTERNAL_ERROR = 6,
  HIPSOLVER_STATUS_NOT_SUPPORTED = 7,
  HIPSOLVER_STATUS_ARCH_MISMATCH = 8,
  HIPSOLVER_STATUS_HANDLE_IS_NULLPTR = 9,
  HIPSOLVER_STATUS_INVALID_ENUM = 10,
  HIPSOLVER_STATUS_UNKNOWN = 11
} hipsolverStatus_t;

typedef enum {
  HIPSOLVER_FILL_MODE_UPPER = 121,
  HIPSOLVER_FILL_MODE_LOWER = 122
} hipsolverFillMode_t;

#ifdef __cplusplus
extern "C" {
#endif

hipsolverStatus_t hipsolverDnCreate(hipsolverDnHandle_t* handle);
hipsolverStatus_t hipsolverDnDestroy(hipsolverDnHandle_t handle);
hipsolverStatus_t hipsolverDnSetStream(hipsolverDnHandle_t handle, hipStream_t streamId);

hipsolverStatus_t hipsolverDnSpotrf_bufferSize(hipsolverDnHandle_t handle,
                                               hipsolverFillMode_t uplo, int n, float* A,
                                               int lda, int* lwork);
hipsolverStatus_t hipsolverDnDpotrf_bufferSize(hipsolverDnHandle_t handle,
                                               hipsolverFillMode_t uplo, int n, double* A,
                                               int lda, int* lwork);
hipsolverStatus_t hipsolverDnSpotrf(hipsolverDnHandle_t handle, hipsolverFillMode_t uplo,
                                    int n, float* A, int lda, float* work, int lwork,
                                    int* devInfo);
hipsolverStatus_t hipsolverDnDpotrf(hipsolverDnHandle_t handle, hipsolverFillMode_t uplo,
                                    int n, double* A, int lda, double* work, int lwork,
                                    int* devInfo);

#ifdef __cplusplus
}
#endif
