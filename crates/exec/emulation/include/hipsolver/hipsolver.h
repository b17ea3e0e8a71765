// hipSOLVER's cuSOLVER-compatible dense API, emulated on the CPU over
// LAPACKE: the calls sdfg-codegen's HIP units make, with hipSOLVER's status
// codes and enum values (see sdfg_emulation/solver.h for the checks).
#pragma once
#include "../hip/hip_runtime.h"
#include "../sdfg_emulation/solver.h"

// hip/hip_complex.h: layout-compatible with std::complex and the prelude's complex.
typedef float2 hipFloatComplex;
typedef double2 hipDoubleComplex;

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
  HIPSOLVER_STATUS_UNKNOWN = 11,
} hipsolverStatus_t;
typedef enum { HIPSOLVER_FILL_MODE_UPPER = 121, HIPSOLVER_FILL_MODE_LOWER = 122 } hipsolverFillMode_t;
typedef enum { HIPSOLVER_OP_N = 111, HIPSOLVER_OP_T = 112, HIPSOLVER_OP_C = 113 } hipsolverOperation_t;
typedef sdfg_emu::solver::Handle* hipsolverHandle_t;
typedef hipsolverHandle_t hipsolverDnHandle_t;

SDFG_EMU_LIBRARY(hipsolverDn, hipsolverStatus_t, HIPSOLVER, hipsolverDnHandle_t, hipStream_t, HIPSOLVER_STATUS_HANDLE_IS_NULLPTR,
                 sdfg_emu::solver::Handles)
#define sdfg_emu_hipsolver hipsolverDn_emulated_status

#define SDFG_EMU_HIPSOLVER_POTRF(X, T)                                                                                              \
  inline hipsolverStatus_t hipsolverDn##X##potrf_bufferSize(hipsolverDnHandle_t h, hipsolverFillMode_t uplo, int n, T* A, int lda, \
                                                            int* lwork) {                                                           \
    if (uplo != HIPSOLVER_FILL_MODE_LOWER && uplo != HIPSOLVER_FILL_MODE_UPPER) return HIPSOLVER_STATUS_INVALID_ENUM;               \
    return sdfg_emu_hipsolver(sdfg_emu::solver::potrf_buffer_size("hipsolverDn" #X "potrf_bufferSize", h, n, A, lda, lwork));       \
  }                                                                                                                                 \
  inline hipsolverStatus_t hipsolverDn##X##potrf(hipsolverDnHandle_t h, hipsolverFillMode_t uplo, int n, T* A, int lda, T* work,   \
                                                 int lwork, int* info) {                                                            \
    if (uplo != HIPSOLVER_FILL_MODE_LOWER && uplo != HIPSOLVER_FILL_MODE_UPPER) return HIPSOLVER_STATUS_INVALID_ENUM;               \
    return sdfg_emu_hipsolver(                                                                                                      \
        sdfg_emu::solver::potrf("hipsolverDn" #X "potrf", h, uplo == HIPSOLVER_FILL_MODE_UPPER, n, A, lda, work, lwork, info));    \
  }
SDFG_EMU_HIPSOLVER_POTRF(S, float)
SDFG_EMU_HIPSOLVER_POTRF(D, double)

#define SDFG_EMU_HIPSOLVER_LU(X, T, L)                                                                                                \
  inline hipsolverStatus_t hipsolverDn##X##getrf_bufferSize(hipsolverDnHandle_t h, int m, int n, T* A, int lda, int* lwork) {         \
    return sdfg_emu_hipsolver(sdfg_emu::solver::getrf_buffer_size("hipsolverDn" #X "getrf_bufferSize", h, m, n, A, lda, lwork));      \
  }                                                                                                                                   \
  inline hipsolverStatus_t hipsolverDn##X##getrf(hipsolverDnHandle_t h, int m, int n, T* A, int lda, T* work, int* ipiv, int* info) { \
    return sdfg_emu_hipsolver(sdfg_emu::solver::getrf<T, L>("hipsolverDn" #X "getrf", h, m, n, A, lda, work, ipiv, info));            \
  }                                                                                                                                   \
  inline hipsolverStatus_t hipsolverDn##X##getrs(hipsolverDnHandle_t h, hipsolverOperation_t trans, int n, int nrhs, const T* A,      \
                                                 int lda, const int* ipiv, T* B, int ldb, int* info) {                                \
    char t = trans == HIPSOLVER_OP_N ? 'N' : trans == HIPSOLVER_OP_T ? 'T' : trans == HIPSOLVER_OP_C ? 'C' : 0;                       \
    if (t == 0) return HIPSOLVER_STATUS_INVALID_ENUM;                                                                                 \
    return sdfg_emu_hipsolver(sdfg_emu::solver::getrs<T, L>("hipsolverDn" #X "getrs", h, t, n, nrhs, A, lda, ipiv, B, ldb, info));    \
  }
SDFG_EMU_HIPSOLVER_LU(S, float, float)
SDFG_EMU_HIPSOLVER_LU(D, double, double)
SDFG_EMU_HIPSOLVER_LU(C, hipFloatComplex, std::complex<float>)
SDFG_EMU_HIPSOLVER_LU(Z, hipDoubleComplex, std::complex<double>)
