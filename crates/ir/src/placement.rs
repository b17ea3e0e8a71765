//! Where data lives and where work runs, in vendor-neutral terms.
//!
//! The IR never names a vendor: a container is in [`Storage::DeviceGlobal`],
//! not in "CUDA global memory", and a map runs as a [`Schedule::DeviceKernel`],
//! not as a "CUDA kernel". What a kind means on a particular machine (its
//! limits, which copies between kinds are legal, how a kernel is launched) is
//! answered by the accelerator description that the offload pass and the
//! backends are given.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Which address space a piece of code runs in, and so which storage it may touch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The CPU that runs the program's host function.
    Host,
    /// The accelerator.
    Device,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Host => "host",
            Side::Device => "device",
        })
    }
}

/// The storage kind of a container.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Storage {
    /// Not yet decided; means ordinary host memory until a pass places it.
    /// Frontends produce this so that the offload pass is free to choose.
    #[default]
    Default,
    /// Pageable host memory (the heap or the stack of the host function).
    Host,
    /// Page-locked host memory: still host memory, but copies from and to it
    /// can be asynchronous.
    HostPinned,
    /// The accelerator's global memory.
    DeviceGlobal,
    /// Memory shared by the threads of one thread block.
    DeviceShared,
    /// A variable private to the code that uses it (a local of a thread on the
    /// device, a local of the host function on the host).
    Register,
}

impl Storage {
    /// Every storage kind, in declaration order.
    pub const ALL: [Storage; 6] = [
        Storage::Default,
        Storage::Host,
        Storage::HostPinned,
        Storage::DeviceGlobal,
        Storage::DeviceShared,
        Storage::Register,
    ];

    /// DaCe's `StorageType` names of the storage kinds, read by both of
    /// DaCe's inputs: its SDFG files and the `@ dace.StorageType.NAME`
    /// annotations of its programs. DaCe names NVIDIA's terms but uses
    /// `GPU_Global` and `GPU_Shared` for AMD GPUs as well, so the mapping
    /// is one to one.
    pub const DACE_NAMES: [(Storage, &'static str); 6] = [
        (Storage::Default, "Default"),
        (Storage::Host, "CPU_Heap"),
        (Storage::HostPinned, "CPU_Pinned"),
        (Storage::DeviceGlobal, "GPU_Global"),
        (Storage::DeviceShared, "GPU_Shared"),
        (Storage::Register, "Register"),
    ];

    /// The storage kind DaCe calls `name`, if the IR has it.
    pub fn from_dace_name(name: &str) -> Option<Storage> {
        Self::DACE_NAMES
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(s, _)| *s)
    }

    /// The side whose memory this is, or `None` for registers, which belong to
    /// whichever code declares them.
    pub fn side(self) -> Option<Side> {
        match self {
            Storage::Default | Storage::Host | Storage::HostPinned => Some(Side::Host),
            Storage::DeviceGlobal | Storage::DeviceShared => Some(Side::Device),
            Storage::Register => None,
        }
    }

    /// Whether code running on `side` may read or write this storage directly.
    ///
    /// This is the generic rule the validator enforces in both directions: host
    /// code may not dereference device memory and device code may not
    /// dereference host memory (pinned host memory included: mapping it into
    /// the device address space is an accelerator-specific choice made by the
    /// offload pass, not a property of the IR).
    pub fn accessible_from(self, side: Side) -> bool {
        match self.side() {
            Some(s) => s == side,
            None => true,
        }
    }

    /// The serialized spelling (`"device_global"`).
    pub fn name(self) -> &'static str {
        match self {
            Storage::Default => "default",
            Storage::Host => "host",
            Storage::HostPinned => "host_pinned",
            Storage::DeviceGlobal => "device_global",
            Storage::DeviceShared => "device_shared",
            Storage::Register => "register",
        }
    }
}

impl fmt::Display for Storage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which memory code on each side may touch directly: the rule the
/// validator and the simulator check an offloaded SDFG against.
///
/// The default is two separate memories (a discrete GPU): host code touches
/// host storage, device code device storage, and data crosses by copies.
/// An accelerator that shares memory with the host answers otherwise
/// through `Accelerator::can_access`; the offload pass places no twins and
/// no copies where it does, and records the answers here, in the SDFG, so
/// that the SDFG stays valid, and simulates, for the machine it was
/// offloaded for. Shared memory and registers are never reachable from
/// the other side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MemoryModel {
    /// Device code may touch host memory (pageable and pinned): a GPU that
    /// shares the CPU's page tables (HMM, Grace Hopper's address
    /// translation, an APU such as MI300A).
    #[serde(default)]
    pub device_touches_host: bool,
    /// Host code may touch device global memory (managed memory, a
    /// host-mapped device heap).
    #[serde(default)]
    pub host_touches_device: bool,
}

impl MemoryModel {
    /// Whether code running on `side` may read or write `storage`.
    pub fn accessible(self, storage: Storage, side: Side) -> bool {
        storage.accessible_from(side)
            || match (storage, side) {
                (Storage::Default | Storage::Host | Storage::HostPinned, Side::Device) => {
                    self.device_touches_host
                }
                (Storage::DeviceGlobal, Side::Host) => self.host_touches_device,
                _ => false,
            }
    }

    /// Whether this is the default model of separate memories (which the
    /// SDFG's JSON leaves out).
    pub fn is_separate(&self) -> bool {
        *self == MemoryModel::default()
    }
}

/// How the iterations of a map (or the work of a library node) are executed.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Schedule {
    /// Not yet decided: inherits from the enclosing scope, sequential on the host at top level.
    #[default]
    Default,
    /// One iteration after another, in the enclosing context.
    Sequential,
    /// Parallel on the host's cores.
    HostParallel,
    /// A device kernel: the map's iteration space becomes the launch grid.
    /// For a library node: a device-wide call issued by the host.
    DeviceKernel,
    /// The threads of one block, inside a device kernel.
    DeviceThreadBlock,
    /// A persistent device kernel (DaCe's `GPU_Persistent`): a map over one
    /// point whose scope is a nested SDFG that every thread of a grid
    /// runs together, the grid as large as can be resident at once. The
    /// nested SDFG's own maps scheduled [`Schedule::DeviceKernel`] share
    /// their iterations among all the threads, the rest of its code runs on
    /// one thread, and the threads wait for each other (a grid-wide
    /// barrier) between its states. Its control flow runs on the device:
    /// a `while` loop deciding on device data is one launch, not a launch
    /// per state per iteration and a copy back per test.
    DevicePersistent,
}

impl Schedule {
    /// Every schedule, in declaration order.
    pub const ALL: [Schedule; 6] = [
        Schedule::Default,
        Schedule::Sequential,
        Schedule::HostParallel,
        Schedule::DeviceKernel,
        Schedule::DeviceThreadBlock,
        Schedule::DevicePersistent,
    ];

    /// True for the schedules whose body runs on the device.
    pub fn is_device(self) -> bool {
        matches!(
            self,
            Schedule::DeviceKernel | Schedule::DeviceThreadBlock | Schedule::DevicePersistent
        )
    }

    /// True for the schedules the host launches as one kernel: a device
    /// kernel and a persistent one.
    pub fn is_launch(self) -> bool {
        matches!(self, Schedule::DeviceKernel | Schedule::DevicePersistent)
    }

    /// The serialized spelling (`"device_kernel"`).
    pub fn name(self) -> &'static str {
        match self {
            Schedule::Default => "default",
            Schedule::Sequential => "sequential",
            Schedule::HostParallel => "host_parallel",
            Schedule::DeviceKernel => "device_kernel",
            Schedule::DeviceThreadBlock => "device_thread_block",
            Schedule::DevicePersistent => "device_persistent",
        }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How long a transient container's memory lives, which decides where the
/// backend allocates and frees it.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Lifetime {
    /// Allocated on entry to the innermost scope that uses it (a map body, a kernel).
    #[default]
    Scope,
    /// Allocated for one execution of a state.
    State,
    /// Allocated once per call of the SDFG.
    Sdfg,
    /// Allocated once and kept across calls (needs a loop-invariant size).
    Persistent,
    /// Owned by the caller (the lifetime of every argument).
    External,
}

impl fmt::Display for Lifetime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Lifetime::Scope => "scope",
            Lifetime::State => "state",
            Lifetime::Sdfg => "sdfg",
            Lifetime::Persistent => "persistent",
            Lifetime::External => "external",
        })
    }
}
