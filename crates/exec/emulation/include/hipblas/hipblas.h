// hipBLAS, emulated on the CPU over OpenBLAS: the calls sdfg-codegen's HIP
// units make, with hipBLAS's status codes and enum values (see
// sdfg_emulation/blas.h for the checks).
#pragma once
#include "../hip/hip_runtime.h"
#include "../sdfg_emulation/blas.h"

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
  HIPBLAS_STATUS_UNKNOWN = 11,
} hipblasStatus_t;
typedef enum { HIPBLAS_OP_N = 111, HIPBLAS_OP_T = 112, HIPBLAS_OP_C = 113 } hipblasOperation_t;
typedef enum { HIPBLAS_FILL_MODE_UPPER = 121, HIPBLAS_FILL_MODE_LOWER = 122, HIPBLAS_FILL_MODE_FULL = 123 } hipblasFillMode_t;
typedef enum { HIPBLAS_POINTER_MODE_HOST = 0, HIPBLAS_POINTER_MODE_DEVICE = 1 } hipblasPointerMode_t;
typedef sdfg_emu::blas::Handle* hipblasHandle_t;

SDFG_EMU_LIBRARY(hipblas, hipblasStatus_t, HIPBLAS, hipblasHandle_t, hipStream_t, HIPBLAS_STATUS_HANDLE_IS_NULLPTR,
                 sdfg_emu::blas::Handles)
#define sdfg_emu_hipblas hipblas_emulated_status
inline bool sdfg_emu_hipblas_op(hipblasOperation_t op, bool* transpose) {
  *transpose = op != HIPBLAS_OP_N;
  return op == HIPBLAS_OP_N || op == HIPBLAS_OP_T || op == HIPBLAS_OP_C;
}
inline hipblasStatus_t hipblasSetPointerMode(hipblasHandle_t h, hipblasPointerMode_t mode) {
  sdfg_emu::api("hipblasSetPointerMode");
  if (h == nullptr) return HIPBLAS_STATUS_HANDLE_IS_NULLPTR;
  if (mode != HIPBLAS_POINTER_MODE_HOST && mode != HIPBLAS_POINTER_MODE_DEVICE) return HIPBLAS_STATUS_INVALID_ENUM;
  return sdfg_emu_hipblas(sdfg_emu::blas::set_pointer_mode(h, mode == HIPBLAS_POINTER_MODE_DEVICE));
}

#define SDFG_EMU_HIPBLAS_GEMM(NAME, T)                                                                                          \
  inline hipblasStatus_t NAME(hipblasHandle_t h, hipblasOperation_t ta, hipblasOperation_t tb, int m, int n, int k,             \
                              const T* alpha, const T* A, int lda, const T* B, int ldb, const T* beta, T* C, int ldc) {        \
    bool a, b;                                                                                                                   \
    if (!sdfg_emu_hipblas_op(ta, &a) || !sdfg_emu_hipblas_op(tb, &b)) return HIPBLAS_STATUS_INVALID_ENUM;                       \
    return sdfg_emu_hipblas(sdfg_emu::blas::gemm(#NAME, h, a, b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc));                 \
  }
SDFG_EMU_HIPBLAS_GEMM(hipblasSgemm, float)
SDFG_EMU_HIPBLAS_GEMM(hipblasDgemm, double)

#define SDFG_EMU_HIPBLAS_GEMV(NAME, T)                                                                                          \
  inline hipblasStatus_t NAME(hipblasHandle_t h, hipblasOperation_t trans, int m, int n, const T* alpha, const T* A, int lda,  \
                              const T* x, int incx, const T* beta, T* y, int incy) {                                            \
    bool t;                                                                                                                      \
    if (!sdfg_emu_hipblas_op(trans, &t)) return HIPBLAS_STATUS_INVALID_ENUM;                                                     \
    return sdfg_emu_hipblas(sdfg_emu::blas::gemv(#NAME, h, t, m, n, alpha, A, lda, x, incx, beta, y, incy));                     \
  }
SDFG_EMU_HIPBLAS_GEMV(hipblasSgemv, float)
SDFG_EMU_HIPBLAS_GEMV(hipblasDgemv, double)

inline hipblasStatus_t hipblasSdot(hipblasHandle_t h, int n, const float* x, int incx, const float* y, int incy, float* result) {
  return sdfg_emu_hipblas(sdfg_emu::blas::dot("hipblasSdot", h, n, x, incx, y, incy, result));
}
inline hipblasStatus_t hipblasDdot(hipblasHandle_t h, int n, const double* x, int incx, const double* y, int incy, double* result) {
  return sdfg_emu_hipblas(sdfg_emu::blas::dot("hipblasDdot", h, n, x, incx, y, incy, result));
}
