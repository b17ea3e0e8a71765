// Declaration-only subset of hipSOLVER's public API (ROCm 5.x
// `hipsolver.h`, its cuSOLVER-compatible `hipsolverDn` functions), for
// compile checks where hipSOLVER is not installed. See ../README.md.
#pragma once
#include <hip/hip_runtime_api.h>
#include <hip/hip_complex.h>

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

typedef enum {
  HIPSOLVER_OP_N = 111,
  HIPSOLVER_OP_T = 112,
  HIPSOLVER_OP_C = 113
} hipsolverOperation_t;

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

hipsolverStatus_t hipsolverDnSgetrf_bufferSize(hipsolverDnHandle_t handle, int m, int n,
                                               float* A, int lda, int* lwork);
hipsolverStatus_t hipsolverDnSgetrf(hipsolverDnHandle_t handle, int m, int n, float* A,
                                    int lda, float* work, int* devIpiv, int* devInfo);
hipsolverStatus_t hipsolverDnSgetrs(hipsolverDnHandle_t handle, hipsolverOperation_t trans,
                                    int n, int nrhs, const float* A, int lda,
                                    const int* devIpiv, float* B, int ldb, int* devInfo);

hipsolverStatus_t hipsolverDnDgetrf_bufferSize(hipsolverDnHandle_t handle, int m, int n,
                                               double* A, int lda, int* lwork);
hipsolverStatus_t hipsolverDnDgetrf(hipsolverDnHandle_t handle, int m, int n, double* A,
                                    int lda, double* work, int* devIpiv, int* devInfo);
hipsolverStatus_t hipsolverDnDgetrs(hipsolverDnHandle_t handle, hipsolverOperation_t trans,
                                    int n, int nrhs, const double* A, int lda,
                                    const int* devIpiv, double* B, int ldb, int* devInfo);

hipsolverStatus_t hipsolverDnCgetrf_bufferSize(hipsolverDnHandle_t handle, int m, int n,
                                               hipFloatComplex* A, int lda, int* lwork);
hipsolverStatus_t hipsolverDnCgetrf(hipsolverDnHandle_t handle, int m, int n, hipFloatComplex* A,
                                    int lda, hipFloatComplex* work, int* devIpiv, int* devInfo);
hipsolverStatus_t hipsolverDnCgetrs(hipsolverDnHandle_t handle, hipsolverOperation_t trans,
                                    int n, int nrhs, const hipFloatComplex* A, int lda,
                                    const int* devIpiv, hipFloatComplex* B, int ldb, int* devInfo);

hipsolverStatus_t hipsolverDnZgetrf_bufferSize(hipsolverDnHandle_t handle, int m, int n,
                                               hipDoubleComplex* A, int lda, int* lwork);
hipsolverStatus_t hipsolverDnZgetrf(hipsolverDnHandle_t handle, int m, int n, hipDoubleComplex* A,
                                    int lda, hipDoubleComplex* work, int* devIpiv, int* devInfo);
hipsolverStatus_t hipsolverDnZgetrs(hipsolverDnHandle_t handle, hipsolverOperation_t trans,
                                    int n, int nrhs, const hipDoubleComplex* A, int lda,
                                    const int* devIpiv, hipDoubleComplex* B, int ldb, int* devInfo);

#ifdef __cplusplus
}
#endif
