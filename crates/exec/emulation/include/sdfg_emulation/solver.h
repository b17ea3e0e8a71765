// Vendor dense solvers on the emulated GPU (cuSOLVER's Dn API, hipSOLVER's
// compatibility API): potrf, getrf and getrs served by LAPACKE (column-major,
// the `_work` variants, which do not scan the input for NaN), behind the
// vendors' argument checks: sizes not negative, leading dimensions at least
// max(1, n), a workspace at least as large as `_bufferSize` said, and every
// matrix, pivot vector, workspace and `info` in device memory. `info` is
// written to device memory when the call runs, as on a GPU.
#pragma once
#include "blas.h"
#include "library.h"

#include <complex>
#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>
#include <lapacke.h>

namespace sdfg_emu {
namespace solver {

using Result = LibraryResult;
constexpr Result ok = library_ok, not_initialized = library_not_initialized, invalid_value = library_invalid_value,
                 execution_failed = library_execution_failed;

struct Handle : LibraryHandle {
  static long long& live() { return live_solver_handles; }
};
using Handles = Registry<Handle>;

inline bool in_device(const char* call, const char* name, const void* p, size_t bytes) {
  if (bytes == 0 || heap.holding(p, bytes) != nullptr) return true;
  diagnose("%s: %s (%p, %zu bytes) is not inside one live device allocation; on a GPU the call faults", call, name, p, bytes);
  fault(illegal_address);
  return false;
}
template <class T>
inline size_t matrix_bytes(int rows, int cols, int ld) {
  return rows <= 0 || cols <= 0 ? 0 : ((size_t)(cols - 1) * ld + rows) * sizeof(T);
}

// The workspace each call asks for (in elements): what `_bufferSize`
// reports, and what the factorization then requires.
inline int potrf_work(int n) { return n > 0 ? n : 1; }
inline int getrf_work(int m, int n) { return (m > n ? m : n) > 0 ? (m > n ? m : n) : 1; }

inline lapack_int potrf_now(char uplo, int n, float* a, int lda) { return LAPACKE_spotrf_work(LAPACK_COL_MAJOR, uplo, n, a, lda); }
inline lapack_int potrf_now(char uplo, int n, double* a, int lda) { return LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, uplo, n, a, lda); }
inline lapack_int getrf_now(int m, int n, float* a, int lda, lapack_int* ipiv) {
  return LAPACKE_sgetrf_work(LAPACK_COL_MAJOR, m, n, a, lda, ipiv);
}
inline lapack_int getrf_now(int m, int n, double* a, int lda, lapack_int* ipiv) {
  return LAPACKE_dgetrf_work(LAPACK_COL_MAJOR, m, n, a, lda, ipiv);
}
inline lapack_int getrf_now(int m, int n, std::complex<float>* a, int lda, lapack_int* ipiv) {
  return LAPACKE_cgetrf_work(LAPACK_COL_MAJOR, m, n, a, lda, ipiv);
}
inline lapack_int getrf_now(int m, int n, std::complex<double>* a, int lda, lapack_int* ipiv) {
  return LAPACKE_zgetrf_work(LAPACK_COL_MAJOR, m, n, a, lda, ipiv);
}
inline lapack_int getrs_now(char t, int n, int nrhs, const float* a, int lda, const lapack_int* ipiv, float* b, int ldb) {
  return LAPACKE_sgetrs_work(LAPACK_COL_MAJOR, t, n, nrhs, a, lda, ipiv, b, ldb);
}
inline lapack_int getrs_now(char t, int n, int nrhs, const double* a, int lda, const lapack_int* ipiv, double* b, int ldb) {
  return LAPACKE_dgetrs_work(LAPACK_COL_MAJOR, t, n, nrhs, a, lda, ipiv, b, ldb);
}
inline lapack_int getrs_now(char t, int n, int nrhs, const std::complex<float>* a, int lda, const lapack_int* ipiv,
                            std::complex<float>* b, int ldb) {
  return LAPACKE_cgetrs_work(LAPACK_COL_MAJOR, t, n, nrhs, a, lda, ipiv, b, ldb);
}
inline lapack_int getrs_now(char t, int n, int nrhs, const std::complex<double>* a, int lda, const lapack_int* ipiv,
                            std::complex<double>* b, int ldb) {
  return LAPACKE_zgetrs_work(LAPACK_COL_MAJOR, t, n, nrhs, a, lda, ipiv, b, ldb);
}
static_assert(sizeof(lapack_int) == sizeof(int), "the vendors' pivots are int: LAPACKE must be built with 32-bit integers");

template <class T>
inline Result potrf_buffer_size(const char* call, Handle* h, int n, const T* a, int lda, int* lwork) {
  (void)a;
  api(call);
  if (!Handles::known(h)) return not_initialized;
  if (!at_least(call, "n", n, 0) || !at_least(call, "lda", lda, n > 1 ? n : 1) || lwork == nullptr) return invalid_value;
  *lwork = potrf_work(n);
  return ok;
}

template <class T>
inline Result potrf(const char* call, Handle* h, bool upper, int n, T* a, int lda, T* work, int lwork, int* info) {
  api(call);
  counters.vendor[call] += 1;
  if (!Handles::known(h)) return not_initialized;
  if (sticky != success) return execution_failed;
  if (!at_least(call, "n", n, 0) || !at_least(call, "lda", lda, n > 1 ? n : 1) || !at_least(call, "lwork", lwork, potrf_work(n)))
    return invalid_value;
  if (!in_device(call, "A", a, matrix_bytes<T>(n, n, lda)) || !in_device(call, "the workspace", work, (size_t)lwork * sizeof(T)) ||
      !in_device(call, "info", info, sizeof(int)))
    return execution_failed;
  blas::single_threaded();
  enqueue(h->stream, [=] { *info = n > 0 ? (int)potrf_now(upper ? 'U' : 'L', n, a, lda) : 0; });
  return ok;
}

template <class T>
inline Result getrf_buffer_size(const char* call, Handle* h, int m, int n, const T* a, int lda, int* lwork) {
  (void)a;
  api(call);
  if (!Handles::known(h)) return not_initialized;
  if (!at_least(call, "m", m, 0) || !at_least(call, "n", n, 0) || !at_least(call, "lda", lda, m > 1 ? m : 1) || lwork == nullptr)
    return invalid_value;
  *lwork = getrf_work(m, n);
  return ok;
}

template <class T, class L>
inline Result getrf(const char* call, Handle* h, int m, int n, T* a, int lda, T* work, int* ipiv, int* info) {
  api(call);
  counters.vendor[call] += 1;
  if (!Handles::known(h)) return not_initialized;
  if (sticky != success) return execution_failed;
  if (!at_least(call, "m", m, 0) || !at_least(call, "n", n, 0) || !at_least(call, "lda", lda, m > 1 ? m : 1)) return invalid_value;
  int k = m < n ? m : n;
  if (!in_device(call, "A", a, matrix_bytes<T>(m, n, lda)) ||
      !in_device(call, "the workspace", work, (size_t)getrf_work(m, n) * sizeof(T)) ||
      !in_device(call, "the pivots", ipiv, (size_t)k * sizeof(int)) || !in_device(call, "info", info, sizeof(int)))
    return execution_failed;
  blas::single_threaded();
  enqueue(h->stream, [=] { *info = k > 0 ? (int)getrf_now(m, n, (L*)a, lda, (lapack_int*)ipiv) : 0; });
  return ok;
}

template <class T, class L>
inline Result getrs(const char* call, Handle* h, char trans, int n, int nrhs, const T* a, int lda, const int* ipiv, T* b, int ldb,
                    int* info) {
  api(call);
  counters.vendor[call] += 1;
  if (!Handles::known(h)) return not_initialized;
  if (sticky != success) return execution_failed;
  if (!at_least(call, "n", n, 0) || !at_least(call, "nrhs", nrhs, 0) || !at_least(call, "lda", lda, n > 1 ? n : 1) ||
      !at_least(call, "ldb", ldb, n > 1 ? n : 1))
    return invalid_value;
  if (!in_device(call, "A", a, matrix_bytes<T>(n, n, lda)) || !in_device(call, "the pivots", ipiv, (size_t)n * sizeof(int)) ||
      !in_device(call, "B", b, matrix_bytes<T>(n, nrhs, ldb)) || !in_device(call, "info", info, sizeof(int)))
    return execution_failed;
  blas::single_threaded();
  enqueue(h->stream, [=] {
    *info = n > 0 && nrhs > 0 ? (int)getrs_now(trans, n, nrhs, (const L*)a, lda, (const lapack_int*)ipiv, (L*)b, ldb) : 0;
  });
  return ok;
}

}  // namespace solver
}  // namespace sdfg_emu
