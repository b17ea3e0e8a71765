//! Every answer of the `Accelerator` trait the emitter asks decides
//! something: a dialect that differs from CUDA's in that answer alone
//! emits a different unit for a program chosen to depend on it. (The
//! answers the passes ask are tested the same way in `sdfg-passes`'s
//! `tests/answers.rs`.)

use sdfg_accelerator::{Accelerator, CopyKind, VendorCall};
use sdfg_backend_cuda::Cuda;
use sdfg_codegen::{
    Blas, Dialect, DialectIncludes, DialectKernel, DialectMemory, DialectSync, Solver, emit,
};
use sdfg_ir::{LibraryOp, Sdfg, Storage};
use sdfg_passes::{Options, offload};

mod common;
use common::emitted;

/// The one answer a variant of CUDA changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Change {
    Nothing,
    Name,
    WarpSize,
    DefaultBlock,
    MaxGrid,
    SynchronousCopies,
    TwoStreams,
    NoCopyToHost,
}

struct Variant(Change);

impl Accelerator for Variant {
    fn name(&self) -> &'static str {
        match self.0 {
            Change::Name => "another cuda",
            _ => Cuda.name(),
        }
    }
    fn warp_size(&self) -> u32 {
        match self.0 {
            Change::WarpSize => 64,
            _ => Cuda.warp_size(),
        }
    }
    fn default_block(&self) -> [u32; 3] {
        match self.0 {
            Change::DefaultBlock => [64, 4, 1],
            _ => Cuda.default_block(),
        }
    }
    fn max_grid(&self) -> [u64; 3] {
        match self.0 {
            Change::MaxGrid => [16, 16, 16],
            _ => Cuda.max_grid(),
        }
    }
    fn sync_before_host_read(&self) -> bool {
        self.0 != Change::SynchronousCopies
    }
    fn streams(&self) -> u32 {
        if self.0 == Change::TwoStreams { 2 } else { 1 }
    }
    fn copy(&self, src: Storage, dst: Storage) -> Option<CopyKind> {
        match Cuda.copy(src, dst) {
            Some(CopyKind::DeviceToHost) if self.0 == Change::NoCopyToHost => None,
            kind => kind,
        }
    }
    fn grid_barrier(&self) -> bool {
        Cuda.grid_barrier()
    }
    fn vendor_library(&self, op: &LibraryOp) -> Option<VendorCall> {
        Cuda.vendor_library(op)
    }
}

impl DialectKernel for Variant {
    fn shuffle_down(&self) -> &'static str {
        Cuda.shuffle_down()
    }
}

impl DialectMemory for Variant {
    fn api_prefix(&self) -> &'static str {
        Cuda.api_prefix()
    }
    fn multiprocessor_count_attribute(&self) -> &'static str {
        Cuda.multiprocessor_count_attribute()
    }
}

impl DialectSync for Variant {}

impl DialectIncludes for Variant {
    fn runtime_header(&self) -> &'static str {
        Cuda.runtime_header()
    }
    fn cooperative_groups_header(&self) -> &'static str {
        Cuda.cooperative_groups_header()
    }
    fn blas(&self) -> Blas {
        Cuda.blas()
    }
    fn solver(&self) -> Solver {
        Cuda.solver()
    }
}

impl Dialect for Variant {
    fn source_extension(&self) -> &'static str {
        Cuda.source_extension()
    }
}

/// The program `f(params)` with `body`, where `N` and `M` are symbols.
fn program(params: &str, body: &str) -> Sdfg {
    common::program(&format!(
        "import dace as dc\nimport numpy as np\nN = dc.symbol('N')\nM = dc.symbol('M')\n\n@dc.program\ndef f({params}):\n{body}"
    ))
}

/// The unit `d` gets for `sdfg`: offloaded, library nodes lowered, emitted.
fn source(sdfg: &Sdfg, d: &dyn Dialect) -> String {
    emitted(sdfg, d).source
}

#[test]
fn the_unchanged_variant_emits_cudas_unit() {
    let sdfg = program(
        "A: dc.float64[N], B: dc.float64[N]",
        "    B[:] = A * 2.0 + 1.0\n",
    );
    assert_eq!(
        source(&sdfg, &Variant(Change::Nothing)),
        source(&sdfg, &Cuda)
    );
}

#[test]
fn every_answer_the_emitter_asks_changes_the_unit() {
    let elementwise = program(
        "A: dc.float64[N, M], B: dc.float64[N, M]",
        "    B[:] = A * 2.0 + 1.0\n",
    );
    // Rows of 40: a block of whole warps of 32 reduces each, but no block
    // of warps of 64 (fewer elements than one warp: a thread per row).
    let rows = program(
        "A: dc.float64[N, 40], r: dc.float64[N]",
        "    r[:] = np.max(A, axis=1)\n",
    );
    for (change, sdfg, shows) in [
        (Change::Name, &elementwise, "`another cuda` accelerator"),
        (Change::WarpSize, &rows, ""),
        (Change::DefaultBlock, &elementwise, "64"),
        (Change::MaxGrid, &elementwise, "16"),
        (Change::SynchronousCopies, &elementwise, ""),
        (
            Change::TwoStreams,
            &elementwise,
            "cudaStreamCreate(&sdfg_h->stream_1)",
        ),
    ] {
        let base = source(sdfg, &Variant(Change::Nothing));
        let changed = source(sdfg, &Variant(change));
        assert!(base != changed, "{change:?} changed nothing");
        assert!(changed.contains(shows), "{change:?}: no `{shows}`");
    }
    // Synchronous copies: the host reads what was copied back without
    // waiting for an event; asynchronous ones wait.
    let wait = "cudaEventSynchronize(sdfg_copied)";
    assert!(source(&elementwise, &Cuda).contains(wait));
    assert!(!source(&elementwise, &Variant(Change::SynchronousCopies)).contains(wait));
}

#[test]
fn the_emitter_issues_copies_as_the_accelerator_answers() {
    // Placed for CUDA, emitted for an accelerator that cannot copy back:
    // the emitter asks `copy` as placement did and refuses, naming the
    // copy, instead of printing a copy the device cannot issue.
    let sdfg = program("A: dc.float64[N], B: dc.float64[N]", "    B[:] = A + 1.0\n");
    let (out, _) = offload(&sdfg, &Cuda, &Options::default()).unwrap();
    let err = emit(&out, &Variant(Change::NoCopyToHost))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("a copy from device_global to default storage") && err.contains("dev_B -> B"),
        "{err}"
    );
    assert!(emit(&out, &Variant(Change::Nothing)).is_ok());
}
