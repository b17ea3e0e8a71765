// Vendor BLAS calls on the emulated GPU (cuBLAS, hipBLAS): GEMM, GEMV and
// DOT served by OpenBLAS's CBLAS in column-major form, behind the vendors'
// documented argument checks: sizes not negative, leading dimensions at least
// max(1, rows), increments not zero, operands in device memory (the whole
// extent a call reads or writes inside one live allocation), alpha and beta
// on the side the pointer mode says, results likewise. A violated check
// returns the vendor's status with a message saying which; an operand a GPU
// could not reach is also the fault it would give (an illegal address).
// Like the kernels, the calls run when their stream is synchronized; alpha
// and beta in host pointer mode are read when the call is made, as the
// vendors do.
#pragma once
#include "library.h"

#include <cblas.h>

namespace sdfg_emu {
namespace blas {

using Result = LibraryResult;
constexpr Result ok = library_ok, not_initialized = library_not_initialized, invalid_value = library_invalid_value,
                 execution_failed = library_execution_failed;

struct Handle : LibraryHandle {
  static long long& live() { return live_blas_handles; }
};
using Handles = Registry<Handle>;

inline Result set_pointer_mode(Handle* h, bool device) {
  if (!Handles::known(h)) return not_initialized;
  h->device_pointers = device;
  return ok;
}

// Every element a column-major `rows x cols` operand with leading dimension
// `ld` spans must lie in one live device allocation.
template <class T>
inline bool operand(const char* call, const char* name, const T* p, long long rows, long long cols, long long ld) {
  if (rows <= 0 || cols <= 0) return true;
  size_t extent = (size_t)((cols - 1) * ld + rows) * sizeof(T);
  if (heap.holding(p, extent) != nullptr) return true;
  diagnose("%s: %s (%p, %lld x %lld, leading dimension %lld: %zu bytes) is not inside one live device allocation; on a GPU the call faults",
           call, name, (const void*)p, rows, cols, ld, extent);
  fault(illegal_address);
  return false;
}
template <class T>
inline bool vector(const char* call, const char* name, const T* p, long long n, long long inc) {
  if (n <= 0) return true;
  long long step = inc < 0 ? -inc : inc;
  size_t extent = (size_t)((n - 1) * step + 1) * sizeof(T);
  if (heap.holding(p, extent) != nullptr) return true;
  diagnose("%s: %s (%p, %lld elements, increment %lld) is not inside one live device allocation; on a GPU the call faults", call,
           name, (const void*)p, n, inc);
  fault(illegal_address);
  return false;
}

// A scalar argument (alpha, beta): read now in host pointer mode, when the
// call runs in device pointer mode.
template <class T>
struct Scalar {
  T value;
  const T* device;
  T get() const { return device != nullptr ? *device : value; }
};
template <class T>
inline bool scalar(const char* call, const char* name, const Handle* h, const T* p, Scalar<T>& out) {
  if (p == nullptr) {
    diagnose("%s: %s is a null pointer", call, name);
    return false;
  }
  if (h->device_pointers) {
    if (heap.holding(p, sizeof(T)) == nullptr) {
      diagnose("%s: %s (%p) must be device memory in the device pointer mode; on a GPU the call faults", call, name, (const void*)p);
      fault(illegal_address);
      return false;
    }
    out = Scalar<T>{T(0), p};
    return true;
  }
  if (heap.contains(p)) {
    diagnose("%s: %s (%p) is device memory, but the pointer mode is host; the host would fault reading it", call, name, (const void*)p);
    return false;
  }
  out = Scalar<T>{*p, nullptr};
  return true;
}

inline CBLAS_TRANSPOSE cblas_op(bool transpose) { return transpose ? CblasTrans : CblasNoTrans; }

inline void gemm_now(bool ta, bool tb, int m, int n, int k, float a, const float* A, int lda, const float* B, int ldb, float b,
                     float* C, int ldc) {
  cblas_sgemm(CblasColMajor, cblas_op(ta), cblas_op(tb), m, n, k, a, A, lda, B, ldb, b, C, ldc);
}
inline void gemm_now(bool ta, bool tb, int m, int n, int k, double a, const double* A, int lda, const double* B, int ldb, double b,
                     double* C, int ldc) {
  cblas_dgemm(CblasColMajor, cblas_op(ta), cblas_op(tb), m, n, k, a, A, lda, B, ldb, b, C, ldc);
}
inline void gemv_now(bool t, int m, int n, float a, const float* A, int lda, const float* x, int incx, float b, float* y, int incy) {
  cblas_sgemv(CblasColMajor, cblas_op(t), m, n, a, A, lda, x, incx, b, y, incy);
}
inline void gemv_now(bool t, int m, int n, double a, const double* A, int lda, const double* x, int incx, double b, double* y,
                     int incy) {
  cblas_dgemv(CblasColMajor, cblas_op(t), m, n, a, A, lda, x, incx, b, y, incy);
}
inline float dot_now(int n, const float* x, int incx, const float* y, int incy) { return cblas_sdot(n, x, incx, y, incy); }
inline double dot_now(int n, const double* x, int incx, const double* y, int incy) { return cblas_ddot(n, x, incx, y, incy); }

inline void single_threaded() {
  static bool once = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
}

// C = alpha op(A) op(B) + beta C, column-major.
template <class T>
inline Result gemm(const char* call, Handle* h, bool ta, bool tb, int m, int n, int k, const T* alpha, const T* A, int lda,
                   const T* B, int ldb, const T* beta, T* C, int ldc) {
  api(call);
  counters.vendor[call] += 1;
  if (!Handles::known(h)) return not_initialized;
  if (sticky != success) return execution_failed;
  int a_rows = ta ? k : m, b_rows = tb ? n : k;
  if (!at_least(call, "m", m, 0) || !at_least(call, "n", n, 0) || !at_least(call, "k", k, 0) ||
      !at_least(call, "lda", lda, a_rows > 1 ? a_rows : 1) || !at_least(call, "ldb", ldb, b_rows > 1 ? b_rows : 1) ||
      !at_least(call, "ldc", ldc, m > 1 ? m : 1))
    return invalid_value;
  Scalar<T> a, b;
  if (!scalar(call, "alpha", h, alpha, a) || !scalar(call, "beta", h, beta, b))
    return sticky != success ? execution_failed : invalid_value;
  if (m == 0 || n == 0) return ok;
  if (!operand(call, "A", A, a_rows, ta ? m : k, lda) || !operand(call, "B", B, b_rows, tb ? k : n, ldb) ||
      !operand(call, "C", C, m, n, ldc))
    return execution_failed;
  single_threaded();
  enqueue(h->stream, [=] {
    T bv = b.get();
    if (bv == T(0)) {
      // beta = 0: C need not hold numbers (the vendors' rule).
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) C[(size_t)j * ldc + i] = T(0);
    }
    if (k > 0) gemm_now(ta, tb, m, n, k, a.get(), A, lda, B, ldb, bv, C, ldc);
  });
  return ok;
}

// y = alpha op(A) x + beta y, column-major `m x n` A.
template <class T>
inline Result gemv(const char* call, Handle* h, bool t, int m, int n, const T* alpha, const T* A, int lda, const T* x, int incx,
                   const T* beta, T* y, int incy) {
  api(call);
  counters.vendor[call] += 1;
  if (!Handles::known(h)) return not_initialized;
  if (sticky != success) return execution_failed;
  if (!at_least(call, "m", m, 0) || !at_least(call, "n", n, 0) || !at_least(call, "lda", lda, m > 1 ? m : 1))
    return invalid_value;
  if (incx == 0 || incy == 0) {
    diagnose("%s: an increment is zero (incx = %d, incy = %d)", call, incx, incy);
    return invalid_value;
  }
  Scalar<T> a, b;
  if (!scalar(call, "alpha", h, alpha, a) || !scalar(call, "beta", h, beta, b))
    return sticky != success ? execution_failed : invalid_value;
  if (m == 0 || n == 0) return ok;
  int xlen = t ? m : n, ylen = t ? n : m;
  if (!operand(call, "A", A, m, n, lda) || !vector(call, "x", x, xlen, incx) || !vector(call, "y", y, ylen, incy))
    return execution_failed;
  single_threaded();
  enqueue(h->stream, [=] {
    T bv = b.get();
    if (bv == T(0))
      for (int i = 0; i < ylen; ++i) y[(size_t)i * (incy < 0 ? -incy : incy)] = T(0);
    gemv_now(t, m, n, a.get(), A, lda, x, incx, bv, y, incy);
  });
  return ok;
}

// result = x . y; where the pointer mode is host, the call waits for the
// stream and writes the result on the host.
template <class T>
inline Result dot(const char* call, Handle* h, int n, const T* x, int incx, const T* y, int incy, T* result) {
  api(call);
  counters.vendor[call] += 1;
  if (!Handles::known(h)) return not_initialized;
  if (sticky != success) return execution_failed;
  if (result == nullptr) {
    diagnose("%s: the result is a null pointer", call);
    return invalid_value;
  }
  if (!vector(call, "x", x, n, incx) || !vector(call, "y", y, n, incy)) return execution_failed;
  if (h->device_pointers) {
    if (heap.holding(result, sizeof(T)) == nullptr) {
      diagnose("%s: the result (%p) must be device memory in the device pointer mode; on a GPU the call faults", call, (void*)result);
      fault(illegal_address);
      return execution_failed;
    }
    single_threaded();
    enqueue(h->stream, [=] { *result = n > 0 ? dot_now(n, x, incx, y, incy) : T(0); });
    return ok;
  }
  if (heap.contains(result)) {
    diagnose("%s: the result (%p) is device memory, but the pointer mode is host", call, (void*)result);
    return invalid_value;
  }
  // Host pointer mode: the call is blocking.
  T value = T(0);
  single_threaded();
  enqueue(h->stream, [=, &value] { value = n > 0 ? dot_now(n, x, incx, y, incy) : T(0); });
  if (drain(h->stream, ~0ULL) != success) return execution_failed;
  *result = value;
  return ok;
}

}  // namespace blas
}  // namespace sdfg_emu
