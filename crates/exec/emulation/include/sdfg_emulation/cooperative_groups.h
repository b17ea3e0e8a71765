// Cooperative groups, emulated on the CPU (see sdfg_emulation/runtime.h):
// what sdfg-codegen's persistent kernels use, the grid and its barrier.
// A grid's sync waits for every thread of a cooperative launch, all of
// whose threads are fibers; it passes the line it is called from (GCC's
// __builtin_LINE() as a default argument is the caller's line), so that
// threads waiting at different barriers are found.
#pragma once
#include "runtime.h"

namespace cooperative_groups {
struct grid_group {
  void sync(int line = __builtin_LINE()) const { sdfg_emu::grid_barrier(line); }
  unsigned long long size() const {
    return (unsigned long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z;
  }
  unsigned long long thread_rank() const {
    unsigned long long block = blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
    unsigned long long thread = threadIdx.x + (unsigned long long)blockDim.x * (threadIdx.y + (unsigned long long)blockDim.y * threadIdx.z);
    return block * blockDim.x * blockDim.y * blockDim.z + thread;
  }
};
inline grid_group this_grid() { return grid_group{}; }
}  // namespace cooperative_groups
