// Declaration-only subset of hipBLAS's public API (ROCm 5.x `hipblas.h`),
// for compile checks where hipBLAS is not installed. See ../README.md.
#pragma once
#include <hip/hip_runtime_api.h>

typedef void* hipblasHandle_t;

typedef enum {
  HIPBLAS_STATUS_SUCCESS = 0,
  HIPBLAS_STATUS_NOT_INITIALIZED = 1,
  HIPBLAS_STATUS_ALLOC_FAILED = 2,
  HIPBLAS_STATUS_INVALID_VALUE = 3,
  HIPBLAS_STATUS_MAPPING_ERROR = 4,
  HIPBLAS_STATUS_EXECUTION_FAILED = 5,
  HIPBLAS_STATUS_INTERNAL_ERROR = 6,
  HIPBLAS_STATUS_NOT_SUPPORTED = 7,
  HIPBLAS_STATUS_ARCH_MISMATCH = 8,
  HIPBLAS_STATUS_HANDLE_IS_NULLPTR = 9,
  HIPBLAS_STATUS_INVALID_ENUM = 10,
  HIPBLAS_STATUS_UNKNOWN = 11
} hipblasStatus_t;

typedef enum {
  HIPBLAS_OP_N = 111,
  HIPBLAS_OP_T = 112,
  HIPBLAS_OP_C = 113
} hipblasOperation_t;

typedef enum {
  HIPBLAS_POINTER_MODE_HOST = 0,
  HIPBLAS_POINTER_MODE_DEVICE = 1
} hipblasPointerMode_t;

#ifdef __cplusplus
extern "C" {
#endif

hipblasStatus_t hipblasCreate(hipblasHandle_t* handle);
hipblasStatus_t hipblasDestroy(hipblasHandle_t handle);
hipblasStatus_t hipblasSetStream(hipblasHandle_t handle, hipStream_t streamId);
hipblasStatus_t hipblasSetPointerMode(hipblasHandle_t handle, hipblasPointerMode_t mode);

hipblasStatus_t hipblasSgemm(hipblasHandle_t handle, hipblasOperation_t transA,
                             hipblasOperation_t transB, int m, int n, int k, const float* alpha,
                             const float* AP, int lda, const float* BP, int ldb,
                             const float* beta, float* CP, int ldc);
hipblasStatus_t hipblasDgemm(hipblasHandle_t handle, hipblasOperation_t transA,
                             hipblasOperation_t transB, int m, int n, int k, const double* alpha,
                             const double* AP, int lda, const double* BP, int ldb,
                             const double* beta, double* CP, int ldc);

hipblasStatus_t hipblasSgemv(hipblasHandle_t handle, hipblasOperation_t trans, int m, int n,
                             const float* alpha, const float* AP, int lda, const float* x,
                             int incx, const float* beta, float* y, int incy);
hipblasStatus_t hipblasDgemv(hipblasHandle_t handle, hipblasOperation_t trans, int m, int n,
                             const double* alpha, const double* AP, int lda, const double* x,
                             int incx, const double* beta, double* y, int incy);

hipblasStatus_t hipblasSdot(hipblasHandle_t handle, int n, const float* x, int incx,
                            const float* y, int incy, float* result);
hipblasStatus_t hipblasDdot(hipblasHandle_t handle, int n, const double* x, int incx,
                            const double* y, int incy, double* result);

#ifdef __cplusplus
}
#endif
