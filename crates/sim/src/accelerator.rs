//! The simulated accelerator: the [`Accelerator`] the offload pass targets
//! when no GPU is involved, and the worked example of
//! `docs/adding-an-accelerator.md`.
//!
//! It behaves like a discrete GPU with a separate memory: device global and
//! shared storage, kernels and thread blocks, copies in every direction
//! between host and device memory, scalars passed by value. It has no vendor
//! libraries, so every library operation takes its pure expansion (in the
//! simulator: its reference semantics).

use sdfg_accelerator::{Accelerator, VendorCall};
use sdfg_ir::LibraryOp;

/// The simulated accelerator.
#[derive(Clone, Copy, Debug, Default)]
pub struct SimAccelerator;

impl Accelerator for SimAccelerator {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn warp_size(&self) -> u32 {
        32
    }

    fn default_block(&self) -> [u32; 3] {
        [128, 1, 1]
    }

    fn max_grid(&self) -> [u64; 3] {
        [(1 << 31) - 1, 65_535, 65_535]
    }

    fn grid_barrier(&self) -> bool {
        true
    }

    fn vendor_library(&self, _op: &LibraryOp) -> Option<VendorCall> {
        None
    }
}
