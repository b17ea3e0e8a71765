// What decides a kernel's speed on a GPU, measured while the emulation runs
// it (docs/emulation.md, "What it measures"): how many 32-byte sectors each
// warp-wide global load and store touches against the fewest its bytes
// could occupy, and the longest thread's serial work.
//
// The unit is compiled unchanged: the counting build
// (`EmulatedGpu::metrics`) adds GCC's kernel AddressSanitizer with
// call-based instrumentation, `-fsanitize=kernel-address --param
// asan-instrumentation-with-call-threshold=0`, which calls a hook per load
// and store with its address and size (`__asan_load8_noabort(p)`), and
// defines SDFG_EMULATION_METRICS so that this header defines the hooks.
// The hook's return address tells the access site apart. Everything else
// it sees (host code, the emulation's own bookkeeping, a kernel's local
// variables) is filtered out: only accesses of device global memory by a
// running kernel count.
//
// Threads do not run in lock step here, so a warp-wide access is
// reassembled: the k-th execution of one site by each lane of a warp is
// the warp's k-th access there (as it is on a GPU while the warp does not
// diverge). Its lanes' addresses are gathered per (warp, site, k) until the
// launch ends, then reduced to sectors touched and the ideal
// ceil(distinct bytes / 32).
//
// Included by runtime.h after the launch machinery.

#ifndef SDFG_EMULATION_METRICS_H
#define SDFG_EMULATION_METRICS_H

#include <unordered_map>

namespace sdfg_emu {

#if defined(SDFG_EMULATION_METRICS)

// One warp-wide access: the distinct sectors and the distinct addresses
// (with their sizes) of its lanes.
struct WarpAccess {
  std::vector<uint64_t> sectors;
  std::vector<std::pair<uintptr_t, uint32_t>> addresses;
};

// One access site in one warp: each lane's next execution, and the warp's
// accesses there so far.
struct SiteTrace {
  uint32_t next[64] = {};
  std::vector<WarpAccess> accesses;
};

// One warp of the running launch.
struct WarpTrace {
  std::unordered_map<uintptr_t, SiteTrace> sites;
  uint64_t lane_accesses[64] = {};
};

struct Traces {
  std::unordered_map<uint64_t, WarpTrace> warps;
  uint64_t recorded = 0;   // warp-wide accesses kept for this launch
  bool truncated = false;  // the launch recorded more than the cap
  std::mutex m;            // the threaded mode's OS threads share it
};
inline Traces traces;

// At most this many warp-wide accesses are kept per launch (some hundred
// MiB at the worst); beyond it the launch's coalescing is not measured
// and the report says so.
constexpr uint64_t trace_cap = uint64_t(1) << 22;

inline bool in_list(const std::vector<uint64_t>& v, uint64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Records one traced access of the running kernel's current thread.
inline void record_access(uintptr_t site, const void* p, uint64_t bytes) {
  std::unique_lock<std::mutex> lock(traces.m, std::defer_lock);
  if (os_threads_configured()) lock.lock();
  const unsigned int ws = limits().warp;
  const unsigned long long per_block = (unsigned long long)blockDim.x * blockDim.y * blockDim.z;
  const unsigned long long t = threadIdx.x + blockDim.x * (threadIdx.y + (unsigned long long)blockDim.y * threadIdx.z);
  const unsigned long long b = blockIdx.x + gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
  const unsigned long long warps_per_block = (per_block + ws - 1) / ws;
  const unsigned int lane = (unsigned int)(t % ws);
  WarpTrace& w = traces.warps[b * warps_per_block + t / ws];
  w.lane_accesses[lane] += 1;
  if (traces.truncated) return;
  SiteTrace& s = w.sites[site];
  const uint32_t k = s.next[lane]++;
  if (k >= s.accesses.size()) {
    if (traces.recorded >= trace_cap) {
      traces.truncated = true;
      return;
    }
    traces.recorded += 1;
    s.accesses.resize(k + 1);
  }
  WarpAccess& a = s.accesses[k];
  const uintptr_t at = (uintptr_t)p;
  for (uint64_t sector = at / 32; sector <= (at + bytes - 1) / 32; ++sector)
    if (!in_list(a.sectors, sector)) a.sectors.push_back(sector);
  bool seen = false;
  for (const auto& address : a.addresses) seen = seen || address.first == at;
  if (!seen) a.addresses.push_back({at, (uint32_t)bytes});
}

// Set while a hook records: what it calls is instrumented too, and its
// own accesses must not be traced.
inline thread_local bool tracing = false;

// A load or store of `bytes` at `p` from `site`: only this function and
// the hooks are left uninstrumented, so it tests what it must before it
// calls anything.
__attribute__((no_sanitize_address)) inline void trace_access(uintptr_t site, const void* p, uint64_t bytes) {
  if (tracing || launch_metrics == nullptr || running.kernel == nullptr) return;
  const char* at_byte = (const char*)p;
  if (heap.base == nullptr || at_byte < heap.base || at_byte >= heap.base + heap.reserved) return;
  tracing = true;
  record_access(site, p, bytes);
  tracing = false;
}

// The launch is over: its warps' accesses reduced into `m`.
inline void end_launch_traces(KernelMetrics& m) {
  std::lock_guard<std::mutex> lock(traces.m);
  uint64_t longest = 0;
  for (auto& [_, w] : traces.warps) {
    for (uint64_t n : w.lane_accesses) longest = std::max(longest, n);
    for (auto& [_, s] : w.sites)
      for (const WarpAccess& a : s.accesses) {
        uint64_t distinct = 0;
        for (const auto& address : a.addresses) distinct += address.second;
        m.warp_accesses += 1;
        m.sectors += a.sectors.size();
        m.ideal_sectors += (distinct + 31) / 32;
      }
  }
  m.serial_accesses += longest;
  m.traced = m.traced && !traces.truncated;
  traces.warps.clear();
  traces.recorded = 0;
  traces.truncated = false;
}

#else

inline void end_launch_traces(KernelMetrics& m) { m.traced = false; }

#endif

}  // namespace sdfg_emu

#if defined(SDFG_EMULATION_METRICS)
// The hooks GCC's call-based kernel AddressSanitizer calls, one per size.
#define SDFG_EMU_ACCESS_HOOK(kind, size)                                                                 \
  extern "C" __attribute__((no_sanitize_address, visibility("default"))) void __asan_##kind##size##_noabort( \
      void* p) {                                                                                         \
    sdfg_emu::trace_access((uintptr_t)__builtin_return_address(0), p, size);                             \
  }
SDFG_EMU_ACCESS_HOOK(load, 1)
SDFG_EMU_ACCESS_HOOK(load, 2)
SDFG_EMU_ACCESS_HOOK(load, 4)
SDFG_EMU_ACCESS_HOOK(load, 8)
SDFG_EMU_ACCESS_HOOK(load, 16)
SDFG_EMU_ACCESS_HOOK(store, 1)
SDFG_EMU_ACCESS_HOOK(store, 2)
SDFG_EMU_ACCESS_HOOK(store, 4)
SDFG_EMU_ACCESS_HOOK(store, 8)
SDFG_EMU_ACCESS_HOOK(store, 16)
#undef SDFG_EMU_ACCESS_HOOK
extern "C" __attribute__((no_sanitize_address, visibility("default"))) void __asan_loadN_noabort(void* p, long n) {
  sdfg_emu::trace_access((uintptr_t)__builtin_return_address(0), p, (uint64_t)n);
}
extern "C" __attribute__((no_sanitize_address, visibility("default"))) void __asan_storeN_noabort(void* p, long n) {
  sdfg_emu::trace_access((uintptr_t)__builtin_return_address(0), p, (uint64_t)n);
}
// What else the instrumentation calls (before a call that does not return,
// around dynamic initialization): nothing to do here.
extern "C" __attribute__((no_sanitize_address, visibility("default"))) void __asan_handle_no_return(void) {}
extern "C" __attribute__((no_sanitize_address, visibility("default"))) void __asan_before_dynamic_init(const char*) {}
extern "C" __attribute__((no_sanitize_address, visibility("default"))) void __asan_after_dynamic_init(void) {}
#endif

#endif
