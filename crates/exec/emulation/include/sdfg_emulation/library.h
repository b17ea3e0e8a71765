// What the emulated vendor libraries (BLAS, dense solvers) share: their
// handles, the outcome of a call, and the handle functions and status codes
// under each library's names.
#pragma once
#include "runtime.h"

namespace sdfg_emu {

// How an emulated library call ended, before the library names it.
enum LibraryResult { library_ok, library_not_initialized, library_invalid_value, library_execution_failed };

// A library handle: the stream its calls are queued on, and (for BLAS) the
// side alpha, beta and results live on.
struct LibraryHandle {
  sdfg_emu_stream* stream = nullptr;
  bool device_pointers = false;
};

// A size argument's check: `value >= bound`, or a message saying which.
inline bool at_least(const char* call, const char* what, long long value, long long bound) {
  if (value >= bound) return true;
  diagnose("%s: %s = %lld, but must be at least %lld", call, what, value, bound);
  return false;
}

// The handles of one library that exist (`H::live()` counts them for the
// report).
template <class H>
struct Registry {
  static inline std::set<H*> live;
  static LibraryResult create(H** out) {
    start();
    if (out == nullptr) return library_invalid_value;
    *out = new H();
    live.insert(*out);
    H::live() += 1;
    return library_ok;
  }
  static LibraryResult destroy(H* h) {
    if (live.erase(h) == 0) return library_not_initialized;
    delete h;
    H::live() -= 1;
    return library_ok;
  }
  static LibraryResult set_stream(H* h, sdfg_emu_stream* s) {
    if (live.count(h) == 0) return library_not_initialized;
    if (!valid(s)) return library_invalid_value;
    h->stream = s;
    return library_ok;
  }
  static bool known(H* h) { return live.count(h) != 0; }
};

}  // namespace sdfg_emu

// The status mapping and the handle functions of one library:
//   FN      the prefix of its functions (`cublas`, `cusolverDn`),
//   STATUS  its status type, CONST the prefix of its status constants,
//   HANDLE  its handle type, STREAM the runtime's stream type,
//   NULL_HANDLE the status it gives a null handle.
#define SDFG_EMU_LIBRARY(FN, STATUS, CONST, HANDLE, STREAM, NULL_HANDLE, REGISTRY)                         \
  inline STATUS FN##_emulated_status(sdfg_emu::LibraryResult r) {                                         \
    switch (r) {                                                                                          \
      case sdfg_emu::library_ok: return CONST##_STATUS_SUCCESS;                                           \
      case sdfg_emu::library_not_initialized: return CONST##_STATUS_NOT_INITIALIZED;                      \
      case sdfg_emu::library_invalid_value: return CONST##_STATUS_INVALID_VALUE;                          \
      default: return CONST##_STATUS_EXECUTION_FAILED;                                                    \
    }                                                                                                     \
  }                                                                                                       \
  inline STATUS FN##Create(HANDLE* h) {                                                                   \
    sdfg_emu::api(#FN "Create");                                                                          \
    return FN##_emulated_status(REGISTRY::create(h));                                                     \
  }                                                                                                       \
  inline STATUS FN##Destroy(HANDLE h) {                                                                   \
    sdfg_emu::api(#FN "Destroy");                                                                         \
    if (h == nullptr) return NULL_HANDLE;                                                                 \
    return FN##_emulated_status(REGISTRY::destroy(h));                                                    \
  }                                                                                                       \
  inline STATUS FN##SetStream(HANDLE h, STREAM s) {                                                       \
    sdfg_emu::api(#FN "SetStream");                                                                       \
    if (h == nullptr) return NULL_HANDLE;                                                                 \
    return FN##_emulated_status(REGISTRY::set_stream(h, s));                                              \
  }
