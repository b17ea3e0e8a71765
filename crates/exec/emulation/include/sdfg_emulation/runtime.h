// The emulated GPU: a CPU implementation of the runtime surface that
// sdfg-codegen's translation units use, shared by the CUDA and HIP front
// headers (`cuda_runtime.h`, `hip/hip_runtime.h` in this directory).
//
// An emitted unit compiles unchanged with
//   g++ -std=c++17 -x c++ -shared -fPIC -I <this include directory> unit.cu
// and then behaves as on a GPU in every way the emulation can make
// observable:
//
// - Kernels are plain functions run over every block and thread, with
//   thread-local threadIdx / blockIdx / blockDim / gridDim. Launches are
//   typed (SDFG_LAUNCH passes each argument converted to the kernel's
//   parameter type) and checked against the dialect's launch limits; a
//   violation is returned as the runtime would ("invalid configuration
//   argument"). A pointer argument that is not device memory is the fault a
//   GPU would give (an illegal address, sticky).
// - Device memory is a heap of its own (one reserved address range): fresh
//   allocations are poisoned (every byte 0xFF: NaN in floats, -1 in
//   integers), each is followed by a guard page, freed ranges are never
//   reused, and outside device work (launches, copies, vendor calls) every
//   page is inaccessible, so host code dereferencing a device pointer faults
//   with a message naming the allocation.
// - Streams are lazy: copies, launches and vendor calls are queued and run
//   at the next synchronization; the host side of a pending device-to-host
//   copy holds poison until then, so a missing synchronization gives a wrong
//   answer instead of passing (stricter than CUDA's pageable-memory copies,
//   which return late and would hide it; pinned memory does not).
// - __syncthreads and __shared__ work: a kernel that synchronizes runs the
//   threads of a block as fibers (ucontext). Whether it does is learnt from
//   the first block of its first launch; a kernel that did not is run as
//   plain calls from then on.
// - Atomics are real atomics. With SDFG_EMULATION_THREADS=N a launch runs on
//   N OS threads with static partitioning (threads round-robin; blocks for
//   kernels that synchronize), so ThreadSanitizer sees races between GPU
//   threads.
// - Every API call, launch, copy (by direction, with bytes) and vendor call
//   is counted; `sdfg_emulation_report()` returns the counts as JSON.
//
// What it cannot check: timing, warp-synchronous behaviour (lanes of a warp
// do not run in lock step here), memory-model subtleties beyond data races,
// and the limits of a particular GPU beyond those listed in the front
// headers.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

// AddressSanitizer proper; GCC defines __SANITIZE_ADDRESS__ for the
// counting build's kernel AddressSanitizer too, which has no runtime
// (metrics.h defines its hooks).
#if defined(__SANITIZE_ADDRESS__) && !defined(SDFG_EMULATION_METRICS)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define SDFG_EMU_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define SDFG_EMU_TSAN 1
#endif

// ---- the language extensions, for a host compiler ----
#define __global__
#define __device__
#define __host__
#define __shared__ static thread_local
#define __forceinline__ inline
#define __launch_bounds__(...)

struct uint3 {
  unsigned int x, y, z;
};
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct float2 {
  float x, y;
};
struct double2 {
  double x, y;
};

// The coordinates of the GPU thread running on this OS thread (or fiber).
inline thread_local uint3 threadIdx __attribute__((tls_model("initial-exec")));
inline thread_local uint3 blockIdx __attribute__((tls_model("initial-exec")));
inline thread_local dim3 blockDim __attribute__((tls_model("initial-exec")));
inline thread_local dim3 gridDim __attribute__((tls_model("initial-exec")));

struct sdfg_emu_stream;
struct sdfg_emu_event;

namespace sdfg_emu {

// Error codes, numbered as CUDA numbers them (HIP mirrors the numbering).
enum Error : int {
  success = 0,
  invalid_value = 1,
  memory_allocation = 2,
  invalid_configuration = 9,
  invalid_pitch_value = 12,
  invalid_device_pointer = 17,
  invalid_memcpy_direction = 21,
  invalid_resource_handle = 400,
  illegal_address = 700,
  launch_failure = 719,
  cooperative_launch_too_large = 720,
  not_supported = 801,
};

inline const char* error_string(int e) {
  switch (e) {
    case success: return "no error";
    case invalid_value: return "invalid argument";
    case memory_allocation: return "out of memory";
    case invalid_configuration: return "invalid configuration argument";
    case invalid_pitch_value: return "invalid pitch argument";
    case invalid_device_pointer: return "invalid device pointer";
    case invalid_memcpy_direction: return "invalid copy direction for memcpy";
    case invalid_resource_handle: return "invalid resource handle";
    case illegal_address: return "an illegal memory access was encountered";
    case launch_failure: return "unspecified launch failure";
    case cooperative_launch_too_large: return "too many blocks in cooperative launch";
    case not_supported: return "operation not supported";
    default: return "unknown error";
  }
}

// Launch limits of a dialect's devices.
struct Limits {
  const char* runtime;                  // "CUDA", "HIP"
  unsigned int block[3];                // threads per block per dimension
  unsigned int threads_per_block;       // threads per block in all
  unsigned long long grid[3];           // blocks per grid dimension
  bool work_items_below_2_pow_32;       // gridDim * blockDim < 2^32 per dimension (HIP)
  size_t shared_bytes;                  // dynamic shared memory per block
  unsigned int warp;                    // threads of a warp (wavefront)
};
// Defined by the front header.
inline const Limits& limits();

// Writes `text` to stderr, prefixed, even from a signal handler.
inline void diagnose_raw(const char* text) {
  const char prefix[] = "sdfg emulation: ";
  ssize_t ignored = ::write(2, prefix, sizeof(prefix) - 1);
  ignored = ::write(2, text, std::strlen(text));
  ignored = ::write(2, "\n", 1);
  (void)ignored;
}
__attribute__((format(printf, 1, 2))) inline void diagnose(const char* format, ...) {
  char text[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof(text), format, args);
  va_end(args);
  diagnose_raw(text);
}

// ---- counters ----
struct CopyCount {
  unsigned long long count = 0, bytes = 0;
};
// What one kernel's launches did that decides its speed on a GPU
// (docs/emulation.md, "What it measures"). The launch shapes and atomics
// are counted always; coalescing and serial work by the counting build
// (metrics.h), else `traced` is false.
struct KernelMetrics {
  std::map<std::pair<unsigned long long, unsigned long long>, unsigned long long> shapes;  // (blocks, threads per block) -> launches
  unsigned long long atomics = 0;        // atomic operations issued by its threads
  unsigned long long warp_accesses = 0;  // warp-wide loads and stores of device global memory
  unsigned long long sectors = 0;        // 32-byte sectors those touched
  unsigned long long ideal_sectors = 0;  // the fewest their distinct bytes could occupy
  unsigned long long serial_accesses = 0;  // per launch the longest thread's accesses, summed
  bool traced = true;
};
// The kernel whose launch is running (its metrics), or null.
inline KernelMetrics* launch_metrics = nullptr;
inline void end_launch_traces(KernelMetrics& m);
inline void count_atomic() {
  if (launch_metrics != nullptr) __atomic_fetch_add(&launch_metrics->atomics, 1, __ATOMIC_RELAXED);
}

struct Counters {
  unsigned long long launches = 0, helper_launches = 0, api_calls = 0, synchronizations = 0;
  unsigned long long allocations = 0, frees = 0;
  CopyCount host_to_device, device_to_host, device_to_device, host_to_host;
  std::map<std::string, unsigned long long> kernels, vendor, api;
  std::map<std::string, KernelMetrics> metrics;
  size_t device_bytes = 0, peak_device_bytes = 0;
};
inline Counters counters;

inline void api(const char* name) {
  counters.api_calls += 1;
  counters.api[name] += 1;
}

// The first error that corrupts the context (a fault in device work): every
// later call returns it, as on a GPU.
inline int sticky = success;
// The last error of a call, returned (and reset) by GetLastError.
inline int last_error = success;
inline int fail(int e) {
  if (e != success) last_error = e;
  return e;
}
inline void fault(int e) {
  if (sticky == success) sticky = e;
  last_error = e;
}

// ---- device memory ----
struct Allocation {
  char* begin;          // what the caller got
  size_t bytes;         // what the caller asked for
  char* pages;          // the pages it occupies (the guard page follows)
  size_t page_bytes;
  unsigned long long id;
  bool live;
};

struct Heap {
  char* base = nullptr;
  size_t reserved = 0, top = 0, page = 4096;
  std::map<uintptr_t, Allocation> allocations;  // by first page
  bool open = false;                            // accessible (device work running)
  unsigned long long next_id = 1;
  unsigned long long attempts = 0;              // device allocations asked for, ever
  long long fail_at = -1;                       // SDFG_EMULATION_FAIL_ALLOCATION: the n-th allocation fails

  bool contains(const void* p) const {
    auto a = (const char*)p;
    return base != nullptr && a >= base && a < base + reserved;
  }
  // The allocation whose pages (or guard page) hold `p`.
  const Allocation* around(const void* p) const {
    if (!contains(p)) return nullptr;
    auto it = allocations.upper_bound((uintptr_t)p);
    if (it == allocations.begin()) return nullptr;
    --it;
    const Allocation& a = it->second;
    return (const char*)p < a.pages + a.page_bytes + page ? &a : nullptr;
  }
  // The live allocation holding all of [p, p + n), or null.
  const Allocation* holding(const void* p, size_t n) const {
    const Allocation* a = around(p);
    if (a == nullptr || !a->live) return nullptr;
    auto c = (const char*)p;
    return c >= a->begin && c + n <= a->begin + a->bytes ? a : nullptr;
  }
  bool overlaps(const void* p, size_t n) const {
    auto c = (const char*)p;
    return base != nullptr && c < base + reserved && c + n > base;
  }
};
inline Heap heap;

inline void protect(const Allocation& a, bool accessible) {
  ::mprotect(a.pages, a.page_bytes, accessible ? PROT_READ | PROT_WRITE : PROT_NONE);
}
inline void open_heap() {
  if (heap.open) return;
  for (auto& [_, a] : heap.allocations)
    if (a.live) protect(a, true);
  heap.open = true;
}
inline void close_heap() {
  if (!heap.open) return;
  for (auto& [_, a] : heap.allocations)
    if (a.live) protect(a, false);
  heap.open = false;
}

// A device fault or a host access to device memory: a message naming the
// allocation, then the previous handler (the sanitizer's, or the default).
inline struct sigaction previous_segv, previous_bus;
inline volatile sig_atomic_t in_device_work = 0;

inline void append_number(char*& out, unsigned long long v, int base) {
  char digits[32];
  int n = 0;
  do {
    digits[n++] = "0123456789abcdef"[v % base];
    v /= base;
  } while (v != 0);
  if (base == 16) {
    *out++ = '0';
    *out++ = 'x';
  }
  while (n > 0) *out++ = digits[--n];
}
inline void append_text(char*& out, const char* s) {
  while (*s) *out++ = *s++;
}

inline void on_fault(int sig, siginfo_t* info, void* context) {
  (void)context;
  const void* at = info->si_addr;
  if (heap.contains(at)) {
    char text[512];
    char* out = text;
    append_text(out, in_device_work ? "device code accessed " : "host code accessed device memory at ");
    append_number(out, (uintptr_t)at, 16);
    const Allocation* a = heap.around(at);
    if (a != nullptr) {
      auto c = (const char*)at;
      if (!a->live) {
        append_text(out, ", inside device allocation #");
        append_number(out, a->id, 10);
        append_text(out, ", which was freed");
      } else if (c >= a->begin + a->bytes) {
        append_text(out, ", ");
        append_number(out, (unsigned long long)(c - (a->begin + a->bytes)), 10);
        append_text(out, " bytes past the end of device allocation #");
        append_number(out, a->id, 10);
        append_text(out, " (");
        append_number(out, a->bytes, 10);
        append_text(out, " bytes)");
      } else if (c < a->begin) {
        append_text(out, ", before the start of device allocation #");
        append_number(out, a->id, 10);
      } else {
        append_text(out, ", byte ");
        append_number(out, (unsigned long long)(c - a->begin), 10);
        append_text(out, " of device allocation #");
        append_number(out, a->id, 10);
        append_text(out, " (");
        append_number(out, a->bytes, 10);
        append_text(out, " bytes); on a GPU this is a segmentation fault or an illegal address");
      }
    }
    *out = 0;
    diagnose_raw(text);
  }
  // Let the previous handler see the fault: it recurs when the access runs again.
  ::sigaction(sig, sig == SIGBUS ? &previous_bus : &previous_segv, nullptr);
}

inline void start() {
  if (heap.base != nullptr) return;
  heap.page = (size_t)::sysconf(_SC_PAGESIZE);
  heap.reserved = (size_t)1 << 36;  // 64 GiB of address space, none of it committed
  void* p = ::mmap(nullptr, heap.reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    diagnose("cannot reserve the device heap: %s", std::strerror(errno));
    std::abort();
  }
  heap.base = (char*)p;
  if (const char* f = std::getenv("SDFG_EMULATION_FAIL_ALLOCATION")) heap.fail_at = std::atoll(f);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGSEGV, &sa, &previous_segv);
  ::sigaction(SIGBUS, &sa, &previous_bus);
}

inline size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// A poisoned allocation, right-aligned in its pages (256-byte aligned, as
// cudaMalloc's are) so that running off its end reaches the guard page.
inline int device_malloc(void** out, size_t bytes) {
  start();
  if (out == nullptr) return fail(invalid_value);
  *out = nullptr;
  if (bytes == 0) return success;
  counters.allocations += 1;
  heap.attempts += 1;
  if (heap.fail_at >= 0 && (long long)heap.attempts == heap.fail_at) {
    diagnose("device allocation #%llu fails as SDFG_EMULATION_FAIL_ALLOCATION asks", heap.attempts);
    return fail(memory_allocation);
  }
  size_t page_bytes = round_up(round_up(bytes, 256), heap.page);
  if (heap.top + page_bytes + heap.page > heap.reserved) return fail(memory_allocation);
  char* pages = heap.base + heap.top;
  heap.top += page_bytes + heap.page;
  if (::mprotect(pages, page_bytes, PROT_READ | PROT_WRITE) != 0) return fail(memory_allocation);
  std::memset(pages, 0xFF, page_bytes);
  char* begin = pages + page_bytes - round_up(bytes, 256);
#if defined(SDFG_EMU_ASAN)
  // Everything of the pages but the allocation itself is a red zone.
  ASAN_POISON_MEMORY_REGION(pages, (size_t)(begin - pages));
  ASAN_POISON_MEMORY_REGION(begin + bytes, (size_t)(pages + page_bytes - (begin + bytes)));
#endif
  Allocation a{begin, bytes, pages, page_bytes, heap.next_id++, true};
  heap.allocations[(uintptr_t)pages] = a;
  if (!heap.open) protect(a, false);
  counters.device_bytes += bytes;
  if (counters.device_bytes > counters.peak_device_bytes) counters.peak_device_bytes = counters.device_bytes;
  *out = begin;
  return success;
}

// ---- pinned host memory ----
inline std::map<uintptr_t, size_t> pinned;  // begin -> bytes
inline int host_malloc(void** out, size_t bytes) {
  start();
  if (out == nullptr) return fail(invalid_value);
  *out = nullptr;
  void* p = std::malloc(bytes == 0 ? 1 : bytes);
  if (p == nullptr) return fail(memory_allocation);
  std::memset(p, 0xFF, bytes);
  pinned[(uintptr_t)p] = bytes;
  *out = p;
  return success;
}
inline bool is_pinned(const void* p, size_t n) {
  auto it = pinned.upper_bound((uintptr_t)p);
  if (it == pinned.begin()) return false;
  --it;
  return (uintptr_t)p + n <= it->first + it->second;
}

// ---- streams and events ----
struct Operation {
  unsigned long long sequence;
  std::function<void()> run;
};

}  // namespace sdfg_emu

struct sdfg_emu_stream {
  std::deque<sdfg_emu::Operation> queue;
  unsigned long long enqueued = 0;  // sequence number of the last queued operation
  bool live = true;
};
struct sdfg_emu_event {
  sdfg_emu_stream* stream = nullptr;
  unsigned long long sequence = 0;
  bool live = true;
};

namespace sdfg_emu {

inline sdfg_emu_stream default_stream;
inline std::set<sdfg_emu_stream*> streams;
inline std::set<sdfg_emu_event*> events;

inline sdfg_emu_stream* resolve(sdfg_emu_stream* s) { return s == nullptr ? &default_stream : s; }
inline bool valid(sdfg_emu_stream* s) { return s == nullptr || streams.count(s) != 0; }

inline void enqueue(sdfg_emu_stream* s, std::function<void()> run) {
  s = resolve(s);
  s->enqueued += 1;
  s->queue.push_back(Operation{s->enqueued, std::move(run)});
}

// Runs the operations of `s` up to sequence number `upto`, with the device
// heap accessible; a fault stops the stream (its later work is dropped, as a
// GPU does after an illegal address).
inline int drain(sdfg_emu_stream* s, unsigned long long upto) {
  s = resolve(s);
  counters.synchronizations += 1;
  if (s->queue.empty() || s->queue.front().sequence > upto) return sticky;
  open_heap();
  in_device_work = 1;
  while (!s->queue.empty() && s->queue.front().sequence <= upto) {
    Operation op = std::move(s->queue.front());
    s->queue.pop_front();
    if (sticky == success) op.run();
  }
  in_device_work = 0;
  close_heap();
  return sticky;
}
inline int drain_all() {
  int e = drain(&default_stream, ~0ULL);
  for (sdfg_emu_stream* s : streams) {
    int f = drain(s, ~0ULL);
    if (e == success) e = f;
  }
  return e;
}

inline int stream_create(sdfg_emu_stream** out) {
  start();
  if (out == nullptr) return fail(invalid_value);
  *out = new sdfg_emu_stream();
  streams.insert(*out);
  return success;
}
inline int stream_destroy(sdfg_emu_stream* s) {
  if (s == nullptr || streams.count(s) == 0) return fail(invalid_resource_handle);
  int e = drain(s, ~0ULL);
  streams.erase(s);
  delete s;
  return e;
}
inline int stream_synchronize(sdfg_emu_stream* s) {
  if (!valid(s)) return fail(invalid_resource_handle);
  return fail(drain(s, ~0ULL));
}
inline int event_create(sdfg_emu_event** out) {
  if (out == nullptr) return fail(invalid_value);
  *out = new sdfg_emu_event();
  events.insert(*out);
  return success;
}
inline int event_destroy(sdfg_emu_event* e) {
  if (e == nullptr || events.count(e) == 0) return fail(invalid_resource_handle);
  events.erase(e);
  delete e;
  return success;
}
inline int event_record(sdfg_emu_event* e, sdfg_emu_stream* s) {
  if (e == nullptr || events.count(e) == 0 || !valid(s)) return fail(invalid_resource_handle);
  e->stream = resolve(s);
  e->sequence = e->stream->enqueued;
  return sticky;
}
inline int event_synchronize(sdfg_emu_event* e) {
  if (e == nullptr || events.count(e) == 0) return fail(invalid_resource_handle);
  if (e->stream == nullptr) return sticky;
  return fail(drain(e->stream, e->sequence));
}

inline int device_free(void* p) {
  if (p == nullptr) return success;
  // cudaFree synchronizes the device first.
  int e = drain_all();
  auto it = heap.allocations.end();
  const Allocation* a = heap.around(p);
  if (a != nullptr) it = heap.allocations.find((uintptr_t)a->pages);
  if (it == heap.allocations.end() || !it->second.live || it->second.begin != p) {
    diagnose("free of %p, which is not a live device allocation%s", p,
             a != nullptr && !a->live ? " (it was freed before)" : "");
    return fail(invalid_value);
  }
  Allocation& alloc = it->second;
  alloc.live = false;
  counters.frees += 1;
  counters.device_bytes -= alloc.bytes;
  // The address range is never reused: a later access through the old
  // pointer faults.
  ::mprotect(alloc.pages, alloc.page_bytes, PROT_NONE);
  ::madvise(alloc.pages, alloc.page_bytes, MADV_DONTNEED);
  return e;
}
inline int host_free(void* p) {
  if (p == nullptr) return success;
  int e = drain_all();
  auto it = pinned.find((uintptr_t)p);
  if (it == pinned.end()) {
    diagnose("host free of %p, which is not pinned memory from MallocHost", p);
    return fail(invalid_value);
  }
  pinned.erase(it);
  std::free(p);
  return e;
}

// ---- copies ----
enum Direction : int { host_to_host = 0, host_to_device = 1, device_to_host = 2, device_to_device = 3, by_pointer = 4 };

inline const char* side_name(bool device) { return device ? "device" : "host"; }

// The range [p, first + (rows - 1) * pitch + width) of one side of a copy,
// checked against the side it must be on.
inline bool check_side(const char* call, const char* role, const void* p, size_t pitch, size_t width, size_t rows, bool device) {
  size_t extent = (rows - 1) * pitch + width;
  if (device) {
    if (heap.holding(p, extent) != nullptr) return true;
    diagnose("%s: the %s %p (%zu bytes) is not inside one live device allocation", call, role, p, extent);
    return false;
  }
  if (!heap.overlaps(p, extent)) return true;
  diagnose("%s: the %s %p is device memory, but the copy's direction says host", call, role, p);
  return false;
}

inline CopyCount& count_of(bool src_device, bool dst_device) {
  if (src_device && dst_device) return counters.device_to_device;
  if (src_device) return counters.device_to_host;
  if (dst_device) return counters.host_to_device;
  return counters.host_to_host;
}

// A pitched copy of `rows` rows of `width` bytes (a plain copy is one row).
inline int copy_2d(const char* call, void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t rows,
                   int kind, sdfg_emu_stream* s) {
  start();
  if (sticky != success) return sticky;
  if (!valid(s)) return fail(invalid_resource_handle);
  if (width > dpitch || width > spitch) {
    diagnose("%s: width %zu is larger than a pitch (destination %zu, source %zu)", call, width, dpitch, spitch);
    return fail(invalid_pitch_value);
  }
  if (width == 0 || rows == 0) return success;
  if (dst == nullptr || src == nullptr) return fail(invalid_value);
  bool src_device, dst_device;
  switch (kind) {
    case host_to_host: src_device = false; dst_device = false; break;
    case host_to_device: src_device = false; dst_device = true; break;
    case device_to_host: src_device = true; dst_device = false; break;
    case device_to_device: src_device = true; dst_device = true; break;
    case by_pointer: src_device = heap.contains(src); dst_device = heap.contains(dst); break;
    default: return fail(invalid_memcpy_direction);
  }
  if (!check_side(call, "source", src, spitch, width, rows, src_device) ||
      !check_side(call, "destination", dst, dpitch, width, rows, dst_device))
    return fail(invalid_value);
  CopyCount& c = count_of(src_device, dst_device);
  c.count += 1;
  c.bytes += (unsigned long long)width * rows;
  auto d = (char*)dst;
  auto sp = (const char*)src;
  if (!src_device && dst_device && !is_pinned(src, (rows - 1) * spitch + width)) {
    // Pageable host memory is staged when the call is made: the source may
    // be reused as soon as it returns.
    auto staged = std::make_shared<std::vector<char>>(width * rows);
    for (size_t r = 0; r < rows; ++r) std::memcpy(staged->data() + r * width, sp + r * spitch, width);
    enqueue(s, [=] {
      for (size_t r = 0; r < rows; ++r) std::memcpy(d + r * dpitch, staged->data() + r * width, width);
    });
    return success;
  }
  if (src_device && !dst_device) {
    // Until the copy has run, the host side holds poison.
    for (size_t r = 0; r < rows; ++r) std::memset(d + r * dpitch, 0xFF, width);
  }
  enqueue(s, [=] {
    for (size_t r = 0; r < rows; ++r) std::memmove(d + r * dpitch, sp + r * spitch, width);
  });
  return success;
}

inline int memset_async(void* p, int value, size_t bytes, sdfg_emu_stream* s) {
  start();
  if (sticky != success) return sticky;
  if (!valid(s)) return fail(invalid_resource_handle);
  if (bytes == 0) return success;
  if (heap.holding(p, bytes) == nullptr) {
    diagnose("MemsetAsync: %p (%zu bytes) is not inside one live device allocation", p, bytes);
    return fail(invalid_value);
  }
  auto d = (char*)p;
  enqueue(s, [=] { std::memset(d, value, bytes); });
  return success;
}

// ---- kernels ----

// The threads of a launch share these (set per OS thread).
struct Running {
  const char* kernel = nullptr;
  bool fibers = false;      // threads run as fibers: __syncthreads yields
  bool synchronized = false;  // a thread called __syncthreads (learnt on the first launch)
  bool cooperative = false;   // a cooperative launch: every thread of the grid is a fiber
};

// The emulated device's multiprocessors, and how many blocks of a
// cooperative launch each holds at once: two and one, so that a persistent
// kernel's grid is small (every thread of it is a fiber) yet has several
// blocks for its grid-wide barriers to join.
constexpr int multiprocessors = 2;
inline int resident_blocks(int threads, size_t shared) {
  const Limits& l = limits();
  return threads >= 1 && (unsigned int)threads <= l.threads_per_block && shared <= l.shared_bytes ? 1 : 0;
}
inline thread_local Running running;

// SDFG_EMULATION_THREADS=N: OS threads per launch (1 by default).
inline unsigned int os_threads() {
  static unsigned int n = [] {
    const char* v = std::getenv("SDFG_EMULATION_THREADS");
    long k = v != nullptr ? std::atol(v) : 1;
    return (unsigned int)(k < 1 ? 1 : (k > 64 ? 64 : k));
  }();
  return n;
}

inline bool os_threads_configured() { return os_threads() > 1; }

// Fibers for the threads of one block of a kernel that synchronizes.
struct Fiber {
  ucontext_t context;
  char* stack = nullptr;
  size_t stack_bytes = 0;
  bool done = false;
  // In a cooperative launch: the line of the grid-wide barrier the thread
  // waits at (0: none), and how many it has passed.
  int grid_line = 0;
  unsigned long long grid_passed = 0;
#if defined(SDFG_EMU_TSAN)
  void* tsan = nullptr;
#endif
};
struct FiberPool {
  ucontext_t scheduler;
  std::vector<Fiber> fibers;
  Fiber* current = nullptr;
  std::function<void()>* body = nullptr;
  // Each fiber's (blockIdx, threadIdx).
  std::vector<std::pair<uint3, uint3>> coordinates;
#if defined(SDFG_EMU_TSAN)
  void* scheduler_tsan = nullptr;
#endif
#if defined(SDFG_EMU_ASAN)
  const void* scheduler_stack = nullptr;
  size_t scheduler_stack_bytes = 0;
#endif
};
inline thread_local FiberPool* pool = nullptr;

inline size_t fiber_stack_bytes() {
#if defined(SDFG_EMU_ASAN) || defined(SDFG_EMU_TSAN)
  return 1 << 20;
#else
  return 256 << 10;
#endif
}

// Switches from the running context to `to`. Under the sanitizers the
// switch is announced (a finishing fiber passes `finishing`, so that
// AddressSanitizer drops its fake stack); when the context is resumed later,
// a fiber learns the scheduler's stack again.
inline void switch_to(ucontext_t* from, ucontext_t* to, const void* to_stack, size_t to_stack_bytes, void* to_tsan,
                      bool from_fiber, bool finishing) {
  (void)to_stack;
  (void)to_stack_bytes;
  (void)to_tsan;
  (void)from_fiber;
  (void)finishing;
#if defined(SDFG_EMU_ASAN)
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(finishing ? nullptr : &fake, to_stack, to_stack_bytes);
#endif
#if defined(SDFG_EMU_TSAN)
  __tsan_switch_to_fiber(to_tsan, 0);
#endif
  ::swapcontext(from, to);
#if defined(SDFG_EMU_ASAN)
  if (from_fiber)
    __sanitizer_finish_switch_fiber(fake, &pool->scheduler_stack, &pool->scheduler_stack_bytes);
  else
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
}

inline void to_scheduler(bool finishing) {
  const void* stack = nullptr;
  size_t bytes = 0;
  void* tsan = nullptr;
#if defined(SDFG_EMU_ASAN)
  stack = pool->scheduler_stack;
  bytes = pool->scheduler_stack_bytes;
#endif
#if defined(SDFG_EMU_TSAN)
  tsan = pool->scheduler_tsan;
#endif
  switch_to(&pool->current->context, &pool->scheduler, stack, bytes, tsan, true, finishing);
}

inline void fiber_main() {
#if defined(SDFG_EMU_ASAN)
  __sanitizer_finish_switch_fiber(nullptr, &pool->scheduler_stack, &pool->scheduler_stack_bytes);
#endif
  (*pool->body)();
  pool->current->done = true;
  to_scheduler(true);
}

// The order in which each round resumes the fibers
// (SDFG_EMULATION_INTERLEAVING): `in-order` (the default), `reversed`, or
// `shuffled:SEED` (a fresh permutation per round, reproducible from the
// seed). Code that is correct on a GPU gives the same answer under every
// order; a race between two threads of one barrier interval (a read of a
// value another thread writes before the next barrier) gives different
// answers under some of them, which the corpus runs persistent kernels
// under to show (docs/emulation.md).
struct Interleaving {
  enum Kind { in_order, reversed, shuffled } kind = in_order;
  unsigned long long seed = 0;
};
inline const Interleaving& interleaving() {
  static Interleaving s = [] {
    Interleaving r;
    const char* v = std::getenv("SDFG_EMULATION_INTERLEAVING");
    if (v == nullptr || *v == 0 || std::strcmp(v, "in-order") == 0) return r;
    if (std::strcmp(v, "reversed") == 0) {
      r.kind = Interleaving::reversed;
      return r;
    }
    if (std::strncmp(v, "shuffled", 8) == 0 && (v[8] == 0 || v[8] == ':')) {
      r.kind = Interleaving::shuffled;
      r.seed = v[8] == ':' ? std::strtoull(v + 9, nullptr, 10) : 0;
      return r;
    }
    diagnose("SDFG_EMULATION_INTERLEAVING=%s: expected in-order, reversed or shuffled:SEED", v);
    std::abort();
  }();
  return s;
}

// splitmix64: the shuffled interleaving's generator.
inline unsigned long long mix(unsigned long long x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The order of one round of `threads` fibers; `salt` tells rounds,
// launches and OS threads apart.
inline void round_order(std::vector<unsigned int>& order, unsigned int threads, unsigned long long salt) {
  order.resize(threads);
  for (unsigned int t = 0; t < threads; ++t) order[t] = t;
  const Interleaving& s = interleaving();
  if (s.kind == Interleaving::reversed) {
    for (unsigned int t = 0; t < threads; ++t) order[t] = threads - 1 - t;
  } else if (s.kind == Interleaving::shuffled) {
    unsigned long long state = mix(s.seed ^ mix(salt));
    for (unsigned int t = threads; t > 1; --t) {
      state = mix(state);
      std::swap(order[t - 1], order[(unsigned int)(state % t)]);
    }
  }
}

// Makes `threads` fibers running `body`, thread `t` at `coordinates[t]`.
inline void prepare_fibers(unsigned int threads, std::function<void()>& body) {
  if (pool->fibers.size() < threads) pool->fibers.resize(threads);
  pool->body = &body;
  for (unsigned int t = 0; t < threads; ++t) {
    Fiber& f = pool->fibers[t];
    if (f.stack == nullptr) {
      f.stack_bytes = fiber_stack_bytes();
      f.stack = (char*)::mmap(nullptr, f.stack_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (f.stack == (char*)MAP_FAILED) {
        diagnose("cannot allocate a fiber stack");
        std::abort();
      }
#if defined(SDFG_EMU_TSAN)
      f.tsan = __tsan_create_fiber(0);
#endif
    }
    ::getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack;
    f.context.uc_stack.ss_size = f.stack_bytes;
    f.context.uc_link = nullptr;
    ::makecontext(&f.context, fiber_main, 0);
    f.done = false;
    f.grid_line = 0;
    f.grid_passed = 0;
  }
}

// Resumes fiber `t` until it reaches a barrier or returns.
inline void resume(unsigned int t) {
  Fiber& f = pool->fibers[t];
  blockIdx = pool->coordinates[t].first;
  threadIdx = pool->coordinates[t].second;
  pool->current = &f;
  void* tsan = nullptr;
#if defined(SDFG_EMU_TSAN)
  tsan = f.tsan;
#endif
  switch_to(&pool->scheduler, &f.context, f.stack, f.stack_bytes, tsan, false, false);
  pool->current = nullptr;
}

// Fiber runs, numbered: the shuffled interleaving's salt.
inline std::atomic<unsigned long long> fiber_runs{0};

// Runs `threads` GPU threads as fibers, thread `t` at `coordinates[t]`
// (blockIdx, threadIdx), round by round: each round resumes every
// unfinished thread, in the interleaving's order, until it reaches a barrier
// (__syncthreads) or returns.
inline void run_as_fibers(unsigned int threads, std::function<void()>& body) {
  prepare_fibers(threads, body);
  std::vector<unsigned int> order;
  const unsigned long long run = fiber_runs.fetch_add(1);
  for (unsigned long long round = 0, any = 1; any; ++round) {
    any = 0;
    round_order(order, threads, run * 0x100000001b3ULL + round);
    for (unsigned int t : order) {
      if (pool->fibers[t].done) continue;
      any = 1;
      resume(t);
    }
  }
}

inline FiberPool& fiber_pool() {
  if (pool == nullptr) pool = new FiberPool();
#if defined(SDFG_EMU_TSAN)
  if (pool->scheduler_tsan == nullptr) pool->scheduler_tsan = __tsan_get_current_fiber();
#endif
  return *pool;
}

// Runs the threads of the current block as fibers.
inline void run_block_as_fibers(unsigned int threads, std::function<void()>& body) {
  FiberPool& p = fiber_pool();
  p.coordinates.resize(threads);
  for (unsigned int t = 0; t < threads; ++t) {
    unsigned int x = t % blockDim.x, y = (t / blockDim.x) % blockDim.y, z = t / (blockDim.x * blockDim.y);
    p.coordinates[t] = {blockIdx, uint3{x, y, z}};
  }
  run_as_fibers(threads, body);
}

inline void set_block(unsigned long long b, dim3 grid);

// The grid-wide barrier of one cooperative launch, shared by the OS
// threads running its blocks. Every thread of the grid must pass the same
// barriers in the same order: the emitter's persistent kernels run one
// control flow on every thread, so threads waiting at different barriers
// (told apart by their lines in the unit), or a thread returning while
// others wait, mean the threads disagree on the control flow, which on a
// GPU hangs the grid or pairs its barriers wrongly. The emulation stops
// there with a message instead.
struct GridSync {
  std::mutex m;
  std::condition_variable cv;
  const char* kernel = nullptr;
  unsigned int participants = 0;  // OS threads that still run fibers
  unsigned int arrived = 0;
  unsigned int departed = 0;
  unsigned long long generation = 0;
  int line = 0;  // the barrier the arrived OS threads wait at
};

// `what` names the barriers by their lines in the unit.
[[noreturn]] inline void grid_divergence(const char* kernel, const std::string& what) {
  diagnose("kernel `%s`: %s: the grid's threads disagree on the kernel's control flow, "
           "which on a GPU hangs the grid or pairs its barriers wrongly",
           kernel != nullptr ? kernel : "?", what.c_str());
  std::abort();
}
inline std::string different_barriers(int a, int b) {
  return "threads wait at different grid-wide barriers (lines " + std::to_string(a) + " and " + std::to_string(b) + " of the unit)";
}
inline std::string returned_before(int line) {
  return "a thread returned while others wait at the grid-wide barrier at line " + std::to_string(line) + " of the unit";
}

// This OS thread's fibers, all waiting at the grid barrier at `line`,
// join the other OS threads' there.
inline void grid_arrive(GridSync& g, int line) {
  std::unique_lock<std::mutex> lock(g.m);
  if (g.departed > 0) grid_divergence(g.kernel, returned_before(line));
  if (g.arrived == 0)
    g.line = line;
  else if (g.line != line)
    grid_divergence(g.kernel, different_barriers(g.line, line));
  g.arrived += 1;
  if (g.arrived == g.participants) {
    g.arrived = 0;
    g.generation += 1;
    g.cv.notify_all();
    return;
  }
  const unsigned long long generation = g.generation;
  g.cv.wait(lock, [&] { return g.generation != generation; });
}

// This OS thread's fibers have all returned.
inline void grid_depart(GridSync& g) {
  std::lock_guard<std::mutex> lock(g.m);
  if (g.arrived > 0) grid_divergence(g.kernel, returned_before(g.line));
  g.departed += 1;
  g.participants -= 1;
}

// Runs the fibers of this OS thread's blocks of a cooperative launch,
// round by round in the interleaving's order; when every unfinished one waits
// at the grid barrier, the OS thread waits there for the others.
inline void run_cooperative_fibers(unsigned int threads, std::function<void()>& body, GridSync& g, unsigned long long salt) {
  prepare_fibers(threads, body);
  std::vector<unsigned int> order;
  for (unsigned long long round = 0;; ++round) {
    round_order(order, threads, salt * 0x100000001b3ULL + round);
    for (unsigned int t : order) {
      Fiber& f = pool->fibers[t];
      if (!f.done && f.grid_line == 0) resume(t);
    }
    unsigned int live = 0, waiting = 0, finished = 0;
    int line = 0;
    for (unsigned int t = 0; t < threads; ++t) {
      const Fiber& f = pool->fibers[t];
      if (f.done) {
        finished += 1;
        continue;
      }
      live += 1;
      if (f.grid_line == 0) continue;
      waiting += 1;
      if (line == 0)
        line = f.grid_line;
      else if (f.grid_line != line)
        grid_divergence(g.kernel, different_barriers(line, f.grid_line));
    }
    if (live == 0) break;
    // Some wait at a block's barrier (or at none): another round.
    if (waiting < live) continue;
    if (finished > 0) grid_divergence(g.kernel, returned_before(line));
    grid_arrive(g, line);
    for (unsigned int t = 0; t < threads; ++t) {
      Fiber& f = pool->fibers[t];
      f.grid_line = 0;
      f.grid_passed += 1;
    }
  }
  grid_depart(g);
}

// Cooperative launches, numbered: the shuffled interleaving's salt.
inline std::atomic<unsigned long long> cooperative_launches{0};

// Runs every thread of a cooperative launch's grid as a fiber, so that a
// grid-wide barrier may wait for all of them: on this OS thread, or in
// the threaded mode (SDFG_EMULATION_THREADS) with the blocks spread over
// the OS threads, so that ThreadSanitizer sees what threads of different
// blocks do between two barriers.
inline void run_grid_as_fibers(const char* name, dim3 grid, dim3 block, std::function<void()> call) {
  const unsigned long long blocks = (unsigned long long)grid.x * grid.y * grid.z;
  const unsigned int per_block = block.x * block.y * block.z;
  const unsigned int workers = (unsigned int)std::min<unsigned long long>(os_threads(), blocks);
  const unsigned long long launch = cooperative_launches.fetch_add(1);
  GridSync g;
  g.kernel = name;
  g.participants = workers;
  auto work = [&](unsigned int w) {
    FiberPool& p = fiber_pool();
    gridDim = grid;
    blockDim = block;
    running = Running{name, true, true, true};
    p.coordinates.clear();
    for (unsigned long long b = w; b < blocks; b += workers) {
      set_block(b, grid);
      for (unsigned int t = 0; t < per_block; ++t) {
        unsigned int x = t % block.x, y = (t / block.x) % block.y, z = t / (block.x * block.y);
        p.coordinates.push_back({blockIdx, uint3{x, y, z}});
      }
    }
    run_cooperative_fibers((unsigned int)p.coordinates.size(), call, g, launch * 64 + w);
    running = Running{};
  };
  if (workers <= 1) {
    work(0);
    return;
  }
  std::vector<std::thread> os;
  for (unsigned int w = 0; w < workers; ++w) os.emplace_back(work, w);
  for (auto& t : os) t.join();
}

// A grid-wide barrier (cooperative groups' `this_grid().sync()`), at line
// `line` of the unit: every thread of a cooperative launch waits here for
// all the others. Outside such a launch a GPU's behaviour is undefined (it
// may hang): the emulation stops.
inline void grid_barrier(int line) {
  if (!running.cooperative) {
    diagnose("kernel `%s` waits at a grid-wide barrier, but was not launched cooperatively "
             "(cudaLaunchCooperativeKernel / hipLaunchCooperativeKernel)",
             running.kernel != nullptr ? running.kernel : "?");
    std::abort();
  }
  pool->current->grid_line = line > 0 ? line : 1;
  to_scheduler(false);
}

inline void barrier() {
  if (!running.fibers) {
    diagnose("kernel `%s` synchronizes (__syncthreads or a shuffle), but its first launch did not; "
             "its threads run as plain calls, which cannot stop here",
             running.kernel != nullptr ? running.kernel : "?");
    std::abort();
  }
  running.synchronized = true;
  to_scheduler(false);
}

// A warp shuffle (`__shfl_down_sync`, `__shfl_down`): lane `l` of each
// group of `width` lanes gets lane `l + delta`'s value, or keeps its own
// past the group's end. The threads of a warp do not run in lock step here,
// so a shuffle is an exchange through a per-block buffer between two
// barriers, and every thread of the block must reach it the same number of
// times (as in the emitter's block reductions, where every thread calls
// them); it counts as synchronizing, so its kernel runs as fibers.
inline thread_local std::vector<unsigned char> exchange;
template <class T>
inline T shuffle_down(T v, unsigned int delta, int width, int warp) {
  if (running.cooperative) {
    // Its exchange buffer is per block; a cooperative grid's blocks share
    // one scheduler.
    diagnose("kernel `%s`: a shuffle in a cooperative launch is not emulated",
             running.kernel != nullptr ? running.kernel : "?");
    std::abort();
  }
  if (width <= 0 || width > warp || (width & (width - 1)) != 0) {
    diagnose("kernel `%s`: a shuffle of width %d (a power of two up to the warp size %d)",
             running.kernel != nullptr ? running.kernel : "?", width, warp);
    std::abort();
  }
  const unsigned int n = blockDim.x * blockDim.y * blockDim.z;
  const unsigned int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  if (exchange.size() < (size_t)n * sizeof(T)) exchange.resize((size_t)n * sizeof(T));
  std::memcpy(&exchange[(size_t)t * sizeof(T)], &v, sizeof(T));
  barrier();
  T r = v;
  if (t % (unsigned int)width + delta < (unsigned int)width && t + delta < n)
    std::memcpy(&r, &exchange[(size_t)(t + delta) * sizeof(T)], sizeof(T));
  barrier();
  return r;
}

// Whether each kernel synchronizes: 0 not known yet, 1 yes, 2 no.
inline std::map<const void*, int> synchronizes;

inline void set_block(unsigned long long b, dim3 grid) {
  blockIdx = uint3{(unsigned int)(b % grid.x), (unsigned int)((b / grid.x) % grid.y), (unsigned int)(b / ((unsigned long long)grid.x * grid.y))};
}

// Runs every thread of a grid: `call` runs the kernel for the current
// coordinates.
inline void run_grid(const char* name, const void* key, dim3 grid, dim3 block, std::function<void()> call) {
  unsigned long long blocks = (unsigned long long)grid.x * grid.y * grid.z;
  unsigned int per_block = block.x * block.y * block.z;
  unsigned int workers = os_threads();
  // The threaded mode runs threads as plain calls on several OS threads
  // (so ThreadSanitizer sees every pair: fibers would hide races between
  // the threads of a block), unless the unit declared that the kernel
  // synchronizes (SDFG_SYNCHRONIZING): then its blocks run on several OS
  // threads, each block's threads as fibers.
  int& known = synchronizes[key];
  if (workers > 1 && known == 0) known = 2;
  unsigned long long first = 0;
  if (known == 0) {
    // The first block of the first launch, as fibers: does it synchronize?
    gridDim = grid;
    blockDim = block;
    running = Running{name, true, false};
    set_block(0, grid);
    run_block_as_fibers(per_block, call);
    known = running.synchronized ? 1 : 2;
    first = 1;
  }
  bool fibers = known == 1;
  auto work = [&, fibers, first](unsigned int w) {
    gridDim = grid;
    blockDim = block;
    running = Running{name, fibers, fibers};
    if (fibers) {
      // Blocks are partitioned: the threads of a block share its fibers.
      for (unsigned long long b = first + w; b < blocks; b += workers) {
        set_block(b, grid);
        run_block_as_fibers(per_block, call);
      }
      return;
    }
    // Threads are partitioned round-robin over the whole grid.
    unsigned long long total = blocks * per_block;
    for (unsigned long long t = first * per_block + w; t < total; t += workers) {
      unsigned long long b = t / per_block;
      unsigned int r = (unsigned int)(t % per_block);
      set_block(b, grid);
      threadIdx = uint3{r % block.x, (r / block.x) % block.y, r / (block.x * block.y)};
      call();
    }
  };
  if (workers == 1) {
    work(0);
  } else {
    std::vector<std::thread> pool_threads;
    for (unsigned int w = 0; w < workers; ++w) pool_threads.emplace_back(work, w);
    for (auto& t : pool_threads) t.join();
  }
  running = Running{};
}

inline int check_configuration(const char* name, dim3 grid, dim3 block, size_t shared) {
  const Limits& l = limits();
  unsigned long long g[3] = {grid.x, grid.y, grid.z};
  unsigned int b[3] = {block.x, block.y, block.z};
  const char* axis[3] = {"x", "y", "z"};
  unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
  for (int k = 0; k < 3; ++k) {
    if (g[k] == 0 || b[k] == 0) {
      diagnose("launch of `%s`: gridDim.%s = %llu, blockDim.%s = %u (zero is not a launch)", name, axis[k], g[k], axis[k], b[k]);
      return invalid_configuration;
    }
    if (g[k] > l.grid[k]) {
      diagnose("launch of `%s`: gridDim.%s = %llu exceeds %s's limit of %llu", name, axis[k], g[k], l.runtime, l.grid[k]);
      return invalid_configuration;
    }
    if (b[k] > l.block[k]) {
      diagnose("launch of `%s`: blockDim.%s = %u exceeds %s's limit of %u", name, axis[k], b[k], l.runtime, l.block[k]);
      return invalid_configuration;
    }
    if (l.work_items_below_2_pow_32 && g[k] * b[k] >= (1ULL << 32)) {
      diagnose("launch of `%s`: gridDim.%s * blockDim.%s = %llu work items, %s allows fewer than 2^32", name, axis[k], axis[k],
               g[k] * b[k], l.runtime);
      return invalid_configuration;
    }
  }
  if (threads > l.threads_per_block) {
    diagnose("launch of `%s`: %llu threads per block exceed %s's limit of %u", name, threads, l.runtime, l.threads_per_block);
    return invalid_configuration;
  }
  if (shared > l.shared_bytes) {
    diagnose("launch of `%s`: %zu bytes of dynamic shared memory exceed %s's limit of %zu", name, shared, l.runtime, l.shared_bytes);
    return invalid_configuration;
  }
  return success;
}

// A pointer argument must be device memory (or null): a GPU faults on a
// host pointer. Returns why not, or null.
template <class T>
inline const char* bad_argument(const T& value) {
  if constexpr (std::is_pointer<T>::value) {
    const void* p = (const void*)value;
    if (p == nullptr) return nullptr;
    if (!heap.contains(p)) return "host memory";
    const Allocation* a = heap.around(p);
    if (a != nullptr && !a->live) return "freed device memory";
  }
  return nullptr;
}

template <class Tuple, size_t... I>
inline bool check_arguments(const char* name, const Tuple& args, std::index_sequence<I...>) {
  bool ok = true;
  size_t index = 0;
  auto one = [&](const auto& value) {
    if constexpr (std::is_pointer<std::decay_t<decltype(value)>>::value) {
      if (const char* why = bad_argument(value)) {
        diagnose("kernel `%s`: argument %zu (%p) points to %s; on a GPU the kernel faults (an illegal memory access)", name, index,
                 (const void*)value, why);
        ok = false;
      }
    }
    ++index;
  };
  (one(std::get<I>(args)), ...);
  return ok;
}

// A typed launch: the arguments converted to the kernel's parameter types
// now, the grid run when the stream reaches it. A cooperative one (a
// persistent kernel) may have no larger a grid than the device holds at
// once (else the launch fails, as on a GPU), and all its threads are
// fibers of one scheduler, so that its grid may wait for itself.
template <class... P, class... A>
inline int launch_typed(const char* name, bool cooperative, void (*kernel)(P...), dim3 grid, dim3 block, size_t shared,
                        sdfg_emu_stream* s, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "a launch passes one argument per kernel parameter");
  start();
  api(cooperative ? "LaunchCooperativeKernel" : "LaunchKernel");
  if (sticky != success) return sticky;
  if (!valid(s)) return fail(invalid_resource_handle);
  int e = check_configuration(name, grid, block, shared);
  if (e != success) return fail(e);
  if (cooperative) {
    unsigned long long blocks = (unsigned long long)grid.x * grid.y * grid.z;
    unsigned long long fit =
        (unsigned long long)multiprocessors * (unsigned long long)resident_blocks((int)(block.x * block.y * block.z), shared);
    if (blocks > fit) {
      diagnose("cooperative launch of `%s`: %llu blocks, but the device holds %llu at once", name, blocks, fit);
      return fail(cooperative_launch_too_large);
    }
  }
  if (std::strncmp(name, "sdfg::", 6) == 0)
    counters.helper_launches += 1;
  else
    counters.launches += 1;
  counters.kernels[name] += 1;
  auto typed = std::make_shared<std::tuple<P...>>(std::forward<A>(args)...);
  enqueue(s, [=] {
    if (!check_arguments(name, *typed, std::index_sequence_for<P...>{})) {
      fault(illegal_address);
      return;
    }
    KernelMetrics& m = counters.metrics[name];
    m.shapes[{(unsigned long long)grid.x * grid.y * grid.z, (unsigned long long)block.x * block.y * block.z}] += 1;
    launch_metrics = &m;
    if (cooperative)
      run_grid_as_fibers(name, grid, block, [&] { std::apply(kernel, *typed); });
    else
      run_grid(name, (const void*)kernel, grid, block, [&] { std::apply(kernel, *typed); });
    launch_metrics = nullptr;
    end_launch_traces(m);
  });
  return success;
}

template <class... P, class... A>
inline int launch(const char* name, void (*kernel)(P...), dim3 grid, dim3 block, size_t shared, sdfg_emu_stream* s, A&&... args) {
  return launch_typed(name, false, kernel, grid, block, shared, s, std::forward<A>(args)...);
}

template <class... P, class... A>
inline int launch_cooperative(const char* name, void (*kernel)(P...), dim3 grid, dim3 block, size_t shared, sdfg_emu_stream* s,
                              A&&... args) {
  return launch_typed(name, true, kernel, grid, block, shared, s, std::forward<A>(args)...);
}

}  // namespace sdfg_emu

#include "metrics.h"

namespace sdfg_emu {

// ---- the report ----
inline std::string& report_text() {
  static std::string text;
  return text;
}
inline void append_json_counts(std::string& out, const char* key, const std::map<std::string, unsigned long long>& m) {
  out += "\"";
  out += key;
  out += "\":{";
  bool first = true;
  for (auto& [k, v] : m) {
    if (!first) out += ",";
    first = false;
    out += "\"" + k + "\":" + std::to_string(v);
  }
  out += "}";
}
inline void append_json_metrics(std::string& out, const std::map<std::string, KernelMetrics>& all) {
  out += "\"kernel_metrics\":{";
  bool first = true;
  for (auto& [name, m] : all) {
    if (!first) out += ",";
    first = false;
    out += "\"" + name + "\":{\"shapes\":[";
    bool first_shape = true;
    for (auto& [shape, launches] : m.shapes) {
      if (!first_shape) out += ",";
      first_shape = false;
      out += "[" + std::to_string(shape.first) + "," + std::to_string(shape.second) + "," + std::to_string(launches) + "]";
    }
    out += "],\"atomics\":" + std::to_string(m.atomics);
    out += ",\"warp_accesses\":" + std::to_string(m.warp_accesses);
    out += ",\"sectors\":" + std::to_string(m.sectors);
    out += ",\"ideal_sectors\":" + std::to_string(m.ideal_sectors);
    out += ",\"serial_accesses\":" + std::to_string(m.serial_accesses);
    out += std::string(",\"traced\":") + (m.traced ? "true" : "false") + "}";
  }
  out += "}";
}
inline void append_json_copy(std::string& out, const char* key, const CopyCount& c) {
  out += "\"";
  out += key;
  out += "\":{\"count\":" + std::to_string(c.count) + ",\"bytes\":" + std::to_string(c.bytes) + "}";
}

}  // namespace sdfg_emu

// Library handles the vendor headers create (counted to find leaks).
namespace sdfg_emu {
inline long long live_blas_handles = 0, live_solver_handles = 0;
}

// The counts so far, as JSON (kept until the next call).
extern "C" __attribute__((used, visibility("default"))) inline const char* sdfg_emulation_report(void) {
  using namespace sdfg_emu;
  std::string& out = report_text();
  unsigned long long live = 0;
  for (auto& [_, a] : heap.allocations) live += a.live ? 1 : 0;
  out = "{\"runtime\":\"";
  out += limits().runtime;
  out += "\",\"launches\":" + std::to_string(counters.launches);
  out += ",\"helper_launches\":" + std::to_string(counters.helper_launches);
  out += ",\"api_calls\":" + std::to_string(counters.api_calls);
  out += ",\"synchronizations\":" + std::to_string(counters.synchronizations);
  out += ",\"allocations\":" + std::to_string(counters.allocations);
  out += ",\"peak_device_bytes\":" + std::to_string(counters.peak_device_bytes);
  out += ",";
  append_json_copy(out, "host_to_device", counters.host_to_device);
  out += ",";
  append_json_copy(out, "device_to_host", counters.device_to_host);
  out += ",";
  append_json_copy(out, "device_to_device", counters.device_to_device);
  out += ",";
  append_json_copy(out, "host_to_host", counters.host_to_host);
  out += ",";
  append_json_counts(out, "kernels", counters.kernels);
  out += ",";
  append_json_counts(out, "vendor", counters.vendor);
  out += ",";
  append_json_counts(out, "api", counters.api);
  out += ",";
  append_json_metrics(out, counters.metrics);
  out += ",\"live\":{\"device_allocations\":" + std::to_string(live);
  out += ",\"pinned_allocations\":" + std::to_string(pinned.size());
  out += ",\"streams\":" + std::to_string(streams.size());
  out += ",\"events\":" + std::to_string(events.size());
  out += ",\"blas_handles\":" + std::to_string(live_blas_handles);
  out += ",\"solver_handles\":" + std::to_string(live_solver_handles);
  out += "},\"error\":" + std::to_string(sticky);
  out += "}";
  return out.c_str();
}

// Zeroes the counts (what is live stays live).
extern "C" __attribute__((used, visibility("default"))) inline void sdfg_emulation_reset(void) {
  sdfg_emu::counters = sdfg_emu::Counters{};
  for (auto& [_, a] : sdfg_emu::heap.allocations)
    if (a.live) sdfg_emu::counters.device_bytes += a.bytes;
  sdfg_emu::counters.peak_device_bytes = sdfg_emu::counters.device_bytes;
}

// ---- device functions ----
inline void __syncthreads() { sdfg_emu::barrier(); }
#if defined(SDFG_EMU_TSAN)
// ThreadSanitizer does not model fences: each fence is told to it as a
// release and an acquire of one token, so a fence orders what came before
// an earlier fence in any thread (the last block of a grid reduction reads
// the partials the others stored before their fences and tickets; a block
// that reads before another fenced still races, as it does on a GPU).
inline char sdfg_emu_fence_token;
inline void __threadfence() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  __tsan_release(&sdfg_emu_fence_token);
  __tsan_acquire(&sdfg_emu_fence_token);
}
#else
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
#endif

template <class T>
inline T sdfg_emu_atomic_add(T* p, T v) {
  sdfg_emu::count_atomic();
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
inline int atomicAdd(int* p, int v) { return sdfg_emu_atomic_add(p, v); }
inline unsigned int atomicAdd(unsigned int* p, unsigned int v) { return sdfg_emu_atomic_add(p, v); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) { return sdfg_emu_atomic_add(p, v); }
inline float atomicAdd(float* p, float v) {
  sdfg_emu::count_atomic();
  float old, next;
  __atomic_load(p, &old, __ATOMIC_RELAXED);
  do {
    next = old + v;
  } while (!__atomic_compare_exchange(p, &old, &next, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return old;
}
inline double atomicAdd(double* p, double v) {
  sdfg_emu::count_atomic();
  double old, next;
  __atomic_load(p, &old, __ATOMIC_RELAXED);
  do {
    next = old + v;
  } while (!__atomic_compare_exchange(p, &old, &next, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return old;
}
template <class T>
inline T sdfg_emu_atomic_cas(T* p, T compare, T value) {
  sdfg_emu::count_atomic();
  __atomic_compare_exchange_n(p, &compare, value, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return compare;
}
inline int atomicCAS(int* p, int compare, int value) { return sdfg_emu_atomic_cas(p, compare, value); }
inline unsigned int atomicCAS(unsigned int* p, unsigned int compare, unsigned int value) { return sdfg_emu_atomic_cas(p, compare, value); }
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long compare, unsigned long long value) {
  return sdfg_emu_atomic_cas(p, compare, value);
}
template <class T>
inline T sdfg_emu_atomic_min(T* p, T v) {
  sdfg_emu::count_atomic();
  T old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (v < old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
template <class T>
inline T sdfg_emu_atomic_max(T* p, T v) {
  sdfg_emu::count_atomic();
  T old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (v > old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
inline int atomicMin(int* p, int v) { return sdfg_emu_atomic_min(p, v); }
inline unsigned int atomicMin(unsigned int* p, unsigned int v) { return sdfg_emu_atomic_min(p, v); }
inline int atomicMax(int* p, int v) { return sdfg_emu_atomic_max(p, v); }
inline unsigned int atomicMax(unsigned int* p, unsigned int v) { return sdfg_emu_atomic_max(p, v); }
inline unsigned long long atomicMin(unsigned long long* p, unsigned long long v) { return sdfg_emu_atomic_min(p, v); }
inline unsigned long long atomicMax(unsigned long long* p, unsigned long long v) { return sdfg_emu_atomic_max(p, v); }
inline int atomicExch(int* p, int v) {
  sdfg_emu::count_atomic();
  return __atomic_exchange_n(p, v, __ATOMIC_RELAXED);
}
inline unsigned int atomicExch(unsigned int* p, unsigned int v) {
  sdfg_emu::count_atomic();
  return __atomic_exchange_n(p, v, __ATOMIC_RELAXED);
}
