//! The `Accelerator` trait: what the offload pass, the emitters and the
//! simulator ask about a device, so that none of them names a vendor.
//!
//! The pass is written once against this trait. Adding an accelerator means
//! implementing it (see `docs/adding-an-accelerator.md`); the simulated
//! accelerator of `sdfg-sim` is the worked example.

use sdfg_ir::{LibraryOp, Node, Schedule, Storage};

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
/// Every method has the meaning the offload pass relies on in its doc;
/// defaults describe a typical discrete GPU with a separate memory.
pub trait Accelerator {
    /// The accelerator's name, as `--backend` spells it (`"cuda"`, `"sim"`).
    fn name(&self) -> &'static str;

    /// Where the pass puts device copies ("twins") of host containers and
    /// transients used only by kernels.
    fn global_storage(&self) -> Storage {
        Storage::DeviceGlobal
    }

    /// The schedule the pass gives maps that become kernels, and device-wide library calls.
    fn kernel_schedule(&self) -> Schedule {
        Schedule::DeviceKernel
    }

    /// The schedule of maps inside a kernel that run sequentially per thread.
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

    /// Threads that execute in lock step (warp 32, wavefront 64).
    fn warp_size(&self) -> u32;

    /// The block size used when a map does not say (threads per dimension).
    fn default_block(&self) -> [u32; 3];

    /// The largest grid per dimension.
    fn max_grid(&self) -> [u64; 3];

    /// Whether code of `schedule` may touch `storage` directly. The pass
    /// inserts copies wherever this is false.
    fn can_access(&self, schedule: Schedule, storage: Storage) -> bool {
        match storage.side() {
            Some(side) => (side == sdfg_ir::Side::Device) == schedule.is_device(),
            None => true,
        }
    }

    /// How a copy from `src` to `dst` storage is issued, or `None` when the
    /// pair cannot be copied directly.
    fn copy(&self, src: Storage, dst: Storage) -> Option<CopyKind> {
        use sdfg_ir::Side::{Device, Host};
        match (src.side(), dst.side()) {
            (Some(Host), Some(Device)) => Some(CopyKind::HostToDevice),
            (Some(Device), Some(Host)) => Some(CopyKind::DeviceToHost),
            (Some(Device), Some(Device)) => Some(CopyKind::DeviceToDevice),
            (Some(Host), Some(Host)) => Some(CopyKind::HostToHost),
            _ => None,
        }
    }

    /// Whether scalar arguments of kernels are passed by value (so a scalar
    /// a kernel *writes* must live in device memory instead).
    fn scalars_by_value(&self) -> bool {
        true
    }

    /// Whether the host must synchronize (wait for the stream) before it
    /// reads the result of a device-to-host copy. True for asynchronous copies.
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
    /// loops on the host.
    fn grid_barrier(&self) -> bool {
        false
    }

    /// Number of streams (queues) kernels and copies may use.
    fn streams(&self) -> u32 {
        1
    }

    /// The vendor call for a library operation, or `None` to use the pure
    /// expansion (maps and tasklets).
    fn vendor_library(&self, op: &LibraryOp) -> Option<VendorCall>;

    /// Whether code inside a kernel may contain `node`. Host callbacks and
    /// device-wide library calls cannot be issued by a kernel; the pass keeps
    /// their enclosing maps on the host.
    fn kernel_can_issue(&self, node: &Node) -> bool {
        match node {
            Node::Callback(_) => false,
            Node::Tasklet(t) => !t.host_only(),
            Node::Library(l) => l.schedule != Schedule::DeviceKernel,
            _ => true,
        }
    }
}
