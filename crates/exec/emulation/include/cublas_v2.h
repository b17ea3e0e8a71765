// cuBLAS (v2 API), emulated on the CPU over OpenBLAS: the calls
// sdfg-codegen's CUDA units make, with cuBLAS's status codes (see
// sdfg_emulation/blas.h for the checks).
#pragma once
#include "cuda_runtime.h"
#include "sdfg_emulation/blas.h"

typedef enum {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_ARCH_MISMATCH = 8,
  CUBLAS_STATUS_MAPPING_ERROR = 11,
  CUBLAS_STATUS_EXECUTION_FAILED = 13,
  CUBLAS_STATUS_INTERNAL_ERROR = 14,
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
} cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;
typedef enum { CUBLAS_FILL_MODE_LOWER = 0, CUBLAS_FILL_MODE_UPPER = 1 } cublasFillMode_t;
typedef enum { CUBLAS_POINTER_MODE_HOST = 0, CUBLAS_POINTER_MODE_DEVICE = 1 } cublasPointerMode_t;
typedef sdfg_emu::blas::Handle* cublasHandle_t;

SDFG_EMU_LIBRARY(cublas, cublasStatus_t, CUBLAS, cublasHandle_t, cudaStream_t, CUBLAS_STATUS_NOT_INITIALIZED,
                 sdfg_emu::blas::Handles)
#define sdfg_emu_cublas cublas_emulated_status
// Only N and T: the emulated calls are real-valued.
inline bool sdfg_emu_cublas_op(cublasOperation_t op, bool* transpose) {
  *transpose = op != CUBLAS_OP_N;
  return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}
inline cublasStatus_t cublasSetPointerMode(cublasHandle_t h, cublasPointerMode_t mode) {
  sdfg_emu::api("cublasSetPointerMode");
  if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE) return CUBLAS_STATUS_INVALID_VALUE;
  return sdfg_emu_cublas(sdfg_emu::blas::set_pointer_mode(h, mode == CUBLAS_POINTER_MODE_DEVICE));
}

#define SDFG_EMU_CUBLAS_GEMM(NAME, T)                                                                                        \
  inline cublasStatus_t NAME(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const T* alpha, \
                             const T* A, int lda, const T* B, int ldb, const T* beta, T* C, int ldc) {                         \
    bool a, b;                                                                                                                 \
    if (!sdfg_emu_cublas_op(ta, &a) || !sdfg_emu_cublas_op(tb, &b)) return CUBLAS_STATUS_INVALID_VALUE;                        \
    return sdfg_emu_cublas(sdfg_emu::blas::gemm(#NAME, h, a, b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc));                 \
  }
SDFG_EMU_CUBLAS_GEMM(cublasSgemm, float)
SDFG_EMU_CUBLAS_GEMM(cublasDgemm, double)

#define SDFG_EMU_CUBLAS_GEMV(NAME, T)                                                                                          \
  inline cublasStatus_t NAME(cublasHandle_t h, cublasOperation_t trans, int m, int n, const T* alpha, const T* A, int lda,     \
                             const T* x, int incx, const T* beta, T* y, int incy) {                                            \
    bool t;                                                                                                                    \
    if (!sdfg_emu_cublas_op(trans, &t)) return CUBLAS_STATUS_INVALID_VALUE;                                                    \
    return sdfg_emu_cublas(sdfg_emu::blas::gemv(#NAME, h, t, m, n, alpha, A, lda, x, incx, beta, y, incy));                    \
  }
SDFG_EMU_CUBLAS_GEMV(cublasSgemv, float)
SDFG_EMU_CUBLAS_GEMV(cublasDgemv, double)

inline cublasStatus_t cublasSdot(cublasHandle_t h, int n, const float* x, int incx, const float* y, int incy, float* result) {
  return sdfg_emu_cublas(sdfg_emu::blas::dot("cublasSdot", h, n, x, incx, y, incy, result));
}
inline cublasStatus_t cublasDdot(cublasHandle_t h, int n, const double* x, int incx, const double* y, int incy, double* result) {
  return sdfg_emu_cublas(sdfg_emu::blas::dot("cublasDdot", h, n, x, incx, y, incy, result));
}
