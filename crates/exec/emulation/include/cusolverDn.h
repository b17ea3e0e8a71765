// cuSOLVER's dense API, emulated on the CPU over LAPACKE: the calls
// sdfg-codegen's CUDA units make, with cuSOLVER's status codes (see
// sdfg_emulation/solver.h for the checks).
#pragma once
#include "cublas_v2.h"
#include "cuda_runtime.h"
#include "sdfg_emulation/solver.h"

// cuComplex.h: layout-compatible with std::complex and the prelude's complex.
typedef float2 cuFloatComplex;
typedef cuFloatComplex cuComplex;
typedef double2 cuDoubleComplex;

typedef enum {
  CUSOLVER_STATUS_SUCCESS = 0,
  CUSOLVER_STATUS_NOT_INITIALIZED = 1,
  CUSOLVER_STATUS_ALLOC_FAILED = 2,
  CUSOLVER_STATUS_INVALID_VALUE = 3,
  CUSOLVER_STATUS_ARCH_MISMATCH = 4,
  CUSOLVER_STATUS_MAPPING_ERROR = 5,
  CUSOLVER_STATUS_EXECUTION_FAILED = 6,
  CUSOLVER_STATUS_INTERNAL_ERROR = 7,
  CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED = 8,
  CUSOLVER_STATUS_NOT_SUPPORTED = 9,
} cusolverStatus_t;
typedef sdfg_emu::solver::Handle* cusolverDnHandle_t;

SDFG_EMU_LIBRARY(cusolverDn, cusolverStatus_t, CUSOLVER, cusolverDnHandle_t, cudaStream_t, CUSOLVER_STATUS_NOT_INITIALIZED,
                 sdfg_emu::solver::Handles)
#define sdfg_emu_cusolver cusolverDn_emulated_status

#define SDFG_EMU_CUSOLVER_POTRF(X, T)                                                                                             \
  inline cusolverStatus_t cusolverDn##X##potrf_bufferSize(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, T* A, int lda,     \
                                                          int* lwork) {                                                           \
    if (uplo != CUBLAS_FILL_MODE_LOWER && uplo != CUBLAS_FILL_MODE_UPPER) return CUSOLVER_STATUS_INVALID_VALUE;                   \
    return sdfg_emu_cusolver(sdfg_emu::solver::potrf_buffer_size("cusolverDn" #X "potrf_bufferSize", h, n, A, lda, lwork));       \
  }                                                                                                                               \
  inline cusolverStatus_t cusolverDn##X##potrf(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, T* A, int lda, T* work,       \
                                               int lwork, int* info) {                                                            \
    if (uplo != CUBLAS_FILL_MODE_LOWER && uplo != CUBLAS_FILL_MODE_UPPER) return CUSOLVER_STATUS_INVALID_VALUE;                   \
    return sdfg_emu_cusolver(                                                                                                     \
        sdfg_emu::solver::potrf("cusolverDn" #X "potrf", h, uplo == CUBLAS_FILL_MODE_UPPER, n, A, lda, work, lwork, info));      \
  }
SDFG_EMU_CUSOLVER_POTRF(S, float)
SDFG_EMU_CUSOLVER_POTRF(D, double)

#define SDFG_EMU_CUSOLVER_LU(X, T, L)                                                                                             \
  inline cusolverStatus_t cusolverDn##X##getrf_bufferSize(cusolverDnHandle_t h, int m, int n, T* A, int lda, int* lwork) {       \
    return sdfg_emu_cusolver(sdfg_emu::solver::getrf_buffer_size("cusolverDn" #X "getrf_bufferSize", h, m, n, A, lda, lwork));    \
  }                                                                                                                               \
  inline cusolverStatus_t cusolverDn##X##getrf(cusolverDnHandle_t h, int m, int n, T* A, int lda, T* work, int* ipiv, int* info) { \
    return sdfg_emu_cusolver(sdfg_emu::solver::getrf<T, L>("cusolverDn" #X "getrf", h, m, n, A, lda, work, ipiv, info));          \
  }                                                                                                                               \
  inline cusolverStatus_t cusolverDn##X##getrs(cusolverDnHandle_t h, cublasOperation_t trans, int n, int nrhs, const T* A,        \
                                               int lda, const int* ipiv, T* B, int ldb, int* info) {                              \
    char t = trans == CUBLAS_OP_N ? 'N' : trans == CUBLAS_OP_T ? 'T' : trans == CUBLAS_OP_C ? 'C' : 0;                            \
    if (t == 0) return CUSOLVER_STATUS_INVALID_VALUE;                                                                             \
    return sdfg_emu_cusolver(sdfg_emu::solver::getrs<T, L>("cusolverDn" #X "getrs", h, t, n, nrhs, A, lda, ipiv, B, ldb, info));  \
  }
SDFG_EMU_CUSOLVER_LU(S, float, float)
SDFG_EMU_CUSOLVER_LU(D, double, double)
SDFG_EMU_CUSOLVER_LU(C, cuComplex, std::complex<float>)
SDFG_EMU_CUSOLVER_LU(Z, cuDoubleComplex, std::complex<double>)
