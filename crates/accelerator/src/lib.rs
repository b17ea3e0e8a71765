//! The `Accelerator` trait: what the offload pass, the emitters and the
//! simulator ask about a device, so that none of them names a vendor.
//!
//! It sits on its own floor, below `sdfg-passes`, `sdfg-sim` and
//! `sdfg-codegen`, because all three ask it and none should need another
//! to see it. The pass is written once against this trait; adding an
//! accelerator means implementing it (`docs/adding-an-accelerator.md`),
//! and the simulated accelerator of `sdfg-sim` is the smallest example.
//!
//! Every method decides something, and its doc says who asks: a method no
//! decision needs does not belong here. The `answers` tests of
//! `sdfg-passes` and `sdfg-codegen` change one answer at a time (an
//! accelerator with unified memory, one that cannot copy, one without
//! cooperating thread blocks, another warp size, a second stream, ...) and
//! check that the offloaded SDFG or the emitted unit changes with it.

use sdfg_ir::{LibraryOp, MemoryModel, Node, Schedule, Side, Storage};

/// How a copy between two storage kinds is issued, if it is legal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyKind {
    /// Host memory to device memory.
    HostToDevice,
    /// Device memory to host memory.
    DeviceToHost,
    /// Within device memory.
    DeviceToDevice,
    /// Within host memory.
    HostToHost,
}

impl CopyKind {
    /// The direction in words (`"host -> device"`), as reports say it.
    pub fn direction(self) -> &'static str {
        match self {
            CopyKind::HostToDevice => "host -> device",
            CopyKind::DeviceToHost => "device -> host",
            CopyKind::DeviceToDevice => "device -> device",
            CopyKind::HostToHost => "host -> host",
        }
    }
}

/// The vendor function a library operation maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VendorCall {
    /// The library (`"cuBLAS"`).
    pub library: &'static str,
    /// The function (`"cublasDgemm"`; the exact variant is chosen by dtype at emission).
    pub function: &'static str,
}

/// What a device offers and how it behaves.
///
/// Defaults describe a typical discrete GPU with a separate memory, which
/// a backend for such a GPU overrides only where it differs.
pub trait Accelerator {
    /// The accelerator's name, as `--backend` spells it (`"cuda"`, `"sim"`):
    /// the offload report and the emitted unit's header name it.
    fn name(&self) -> &'static str;

    /// Where the pass puts device copies ("twins") of host containers and
    /// transients used only by kernels (asked by placement).
    fn global_storage(&self) -> Storage {
        Storage::DeviceGlobal
    }

    /// The schedule the pass gives maps that become kernels, and device-wide
    /// library calls (asked by the pass's schedules and library lowering).
    fn kernel_schedule(&self) -> Schedule {
        Schedule::DeviceKernel
    }

    /// The schedule of maps inside a kernel that run sequentially per thread
    /// (asked by the pass's schedules and library lowering).
    fn inner_schedule(&self) -> Schedule {
        Schedule::Sequential
    }

    /// The schedule of a map whose iterations the threads of one block
    /// share inside a kernel ([`Schedule::DeviceThreadBlock`]), or `None`
    /// for a device without cooperating blocks of threads. Library lowering
    /// gives it to the reduced dimensions of a device-wide reduction with
    /// one output, or whose reduced axis is innermost (softmax's rows), so
    /// that a block, not one thread, reduces each output: the threads read
    /// consecutive elements, and the emitter combines their partials with a
    /// block reduction sized by [`Accelerator::warp_size`].
    fn block_schedule(&self) -> Option<Schedule> {
        Some(Schedule::DeviceThreadBlock)
    }

    /// Threads that execute in lock step (warp 32, wavefront 64): library
    /// lowering decides by it whether a reduction is shared by a block, and
    /// the emitter sizes block reductions by it.
    fn warp_size(&self) -> u32;

    /// The block size used when a map does not say (threads per dimension):
    /// the emitter's launch plans, and persistent kernels' grids.
    fn default_block(&self) -> [u32; 3];

    /// The largest grid per dimension: the emitter spreads a larger map over
    /// grid-stride loops.
    fn max_grid(&self) -> [u64; 3];

    /// Whether code of `schedule` may touch `storage` directly; host code is
    /// asked about as [`Schedule::Sequential`].
    ///
    /// Asked by the offload pass's placement: a container the device uses
    /// gets a device twin, and copies, only where kernels may not touch its
    /// storage; a container whose home is the device gets a host twin only
    /// where host code may not touch it. The pass records the answers for
    /// host and device global memory in the SDFG
    /// ([`sdfg_ir::MemoryModel`]), which the validator and the simulator
    /// check the result against. The default: separate memories.
    fn can_access(&self, schedule: Schedule, storage: Storage) -> bool {
        match storage.side() {
            Some(side) => (side == Side::Device) == schedule.is_device(),
            None => true,
        }
    }

    /// How a copy from `src` to `dst` storage is issued, or `None` when the
    /// pair cannot be copied directly.
    ///
    /// Asked by the offload pass's placement for every copy between a
    /// container and its twin (the kind is recorded in the report; `None`
    /// makes the pass refuse the program, naming the container), and by the
    /// emitter's copy plans, which issue each copy as this kind (`None`: it
    /// refuses the copy, naming it).
    fn copy(&self, src: Storage, dst: Storage) -> Option<CopyKind> {
        use Side::{Device, Host};
        match (src.side(), dst.side()) {
            (Some(Host), Some(Device)) => Some(CopyKind::HostToDevice),
            (Some(Device), Some(Host)) => Some(CopyKind::DeviceToHost),
            (Some(Device), Some(Device)) => Some(CopyKind::DeviceToDevice),
            (Some(Host), Some(Host)) => Some(CopyKind::HostToHost),
            _ => None,
        }
    }

    /// Whether scalar arguments of kernels are passed by value (so a scalar
    /// a kernel *writes* must live in device memory instead). Asked by
    /// placement and the pass's partition of states into host and device
    /// work.
    fn scalars_by_value(&self) -> bool {
        true
    }

    /// Whether the host must synchronize (wait for the stream) before it
    /// reads the result of a device-to-host copy: true where copies are
    /// asynchronous. Asked by the emitter, which places the wait after the
    /// copies a host read depends on; an accelerator whose copies complete
    /// before they return needs none.
    fn sync_before_host_read(&self) -> bool {
        true
    }

    /// Whether the threads of a whole grid can run at once and wait for
    /// each other (a grid-wide barrier; CUDA's and HIP's cooperative
    /// launch). Then a loop whose tests read what device code inside it
    /// writes runs inside one persistent kernel
    /// ([`Schedule::DevicePersistent`]): one launch for the loop, its tests
    /// evaluated where the data is, instead of a launch per state per
    /// iteration and a copy back to the host per test. `false` keeps such
    /// loops on the host. Asked by the pass's persistent-kernel phase.
    fn grid_barrier(&self) -> bool {
        false
    }

    /// Number of streams (queues) kernels and copies may use: the emitter
    /// creates as many in `NAME_init` and orders work across them. (Work
    /// goes to the first; putting large copies on a second is the
    /// copy-overlap work of the kernel-quality issue.)
    fn streams(&self) -> u32 {
        1
    }

    /// The vendor call for a library operation, or `None` to use the pure
    /// expansion (maps and tasklets). Asked by library lowering; the report
    /// names the call.
    fn vendor_library(&self, op: &LibraryOp) -> Option<VendorCall>;

    /// Whether code inside a kernel may contain `node`. Host callbacks and
    /// device-wide library calls cannot be issued by a kernel; the pass's
    /// schedules keep their enclosing maps on the host.
    fn kernel_can_issue(&self, node: &Node) -> bool {
        match node {
            Node::Callback(_) => false,
            Node::Tasklet(t) => !t.host_only(),
            Node::Library(l) => l.schedule != Schedule::DeviceKernel,
            _ => true,
        }
    }
}

/// The memory model `acc` answers for: whether its kernels may touch every
/// kind of host memory, and whether host code may touch its global
/// storage, each asked of [`Accelerator::can_access`].
///
/// The offload pass places by this model and records it in the SDFG
/// (`Sdfg::memory`), so that what it places in place is exactly what the
/// validator and the simulator accept. An accelerator that reaches only
/// some host memory (pinned, say, but not pageable) gets separate memories:
/// the IR does not describe partial access, and twins are always correct.
pub fn memory_model(acc: &dyn Accelerator) -> MemoryModel {
    let kernel = acc.kernel_schedule();
    MemoryModel {
        device_touches_host: [Storage::Default, Storage::Host, Storage::HostPinned]
            .into_iter()
            .all(|s| acc.can_access(kernel, s)),
        host_touches_device: acc.can_access(Schedule::Sequential, acc.global_storage()),
    }
}
