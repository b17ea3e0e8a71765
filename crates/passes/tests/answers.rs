//! Every answer of the `Accelerator` trait the passes ask decides
//! something: for each method, an accelerator that differs from the
//! simulated one in that answer alone changes what the pipeline makes of a
//! program chosen to depend on it. (The answers only the emitter asks are
//! tested the same way in `sdfg-codegen`'s tests.)
//!
//! The unified-memory accelerator is the proof that placement asks rather
//! than assumes: with kernels and host code free to touch each other's
//! memory, the pass places no twin and no copy, the SDFG records the
//! memory model it was placed for, and the simulator runs the result to
//! the host program's answer; the same SDFG claiming separate memories is
//! invalid.

use sdfg_ir::{LibraryOp, MemoryModel, Node, Schedule, Sdfg, Storage};
use sdfg_passes::pipeline::{self, Pass, PipelineOptions};
use sdfg_passes::{Accelerator, CopyKind, OffloadError, PipelineError, Report, VendorCall};
use sdfg_sim::SimAccelerator;

mod common;
use common::{args, program, run, same};

/// The one answer a variant changes.
#[derive(Clone, Copy, Debug)]
enum Change {
    Name,
    UnifiedMemory,
    NoCopyToDevice,
    GlobalStorage,
    KernelSchedule,
    InnerSchedule,
    NoBlockSchedule,
    WarpSize,
    ScalarsByReference,
    NoGridBarrier,
    VendorGemm,
    TaskletsStayOnHost,
}

/// The simulated accelerator with one answer changed.
struct Variant(Change);

impl Accelerator for Variant {
    fn name(&self) -> &'static str {
        match self.0 {
            Change::Name => "another sim",
            _ => SimAccelerator.name(),
        }
    }
    fn global_storage(&self) -> Storage {
        match self.0 {
            Change::GlobalStorage => Storage::HostPinned,
            _ => SimAccelerator.global_storage(),
        }
    }
    fn kernel_schedule(&self) -> Schedule {
        match self.0 {
            Change::KernelSchedule => Schedule::HostParallel,
            _ => SimAccelerator.kernel_schedule(),
        }
    }
    fn inner_schedule(&self) -> Schedule {
        match self.0 {
            Change::InnerSchedule => Schedule::DeviceThreadBlock,
            _ => SimAccelerator.inner_schedule(),
        }
    }
    fn block_schedule(&self) -> Option<Schedule> {
        match self.0 {
            Change::NoBlockSchedule => None,
            _ => SimAccelerator.block_schedule(),
        }
    }
    fn warp_size(&self) -> u32 {
        match self.0 {
            Change::WarpSize => 4,
            _ => SimAccelerator.warp_size(),
        }
    }
    fn default_block(&self) -> [u32; 3] {
        SimAccelerator.default_block()
    }
    fn max_grid(&self) -> [u64; 3] {
        SimAccelerator.max_grid()
    }
    fn can_access(&self, schedule: Schedule, storage: Storage) -> bool {
        match self.0 {
            Change::UnifiedMemory => storage != Storage::DeviceShared || schedule.is_device(),
            _ => SimAccelerator.can_access(schedule, storage),
        }
    }
    fn copy(&self, src: Storage, dst: Storage) -> Option<CopyKind> {
        match (self.0, SimAccelerator.copy(src, dst)) {
            (Change::NoCopyToDevice, Some(CopyKind::HostToDevice)) => None,
            (_, kind) => kind,
        }
    }
    fn scalars_by_value(&self) -> bool {
        !matches!(self.0, Change::ScalarsByReference)
    }
    fn grid_barrier(&self) -> bool {
        !matches!(self.0, Change::NoGridBarrier) && SimAccelerator.grid_barrier()
    }
    fn vendor_library(&self, op: &LibraryOp) -> Option<VendorCall> {
        match (self.0, op) {
            (Change::VendorGemm, LibraryOp::MatMul | LibraryOp::Gemm { .. }) => Some(VendorCall {
                library: "simBLAS",
                function: "gemm",
            }),
            _ => SimAccelerator.vendor_library(op),
        }
    }
    fn kernel_can_issue(&self, node: &Node) -> bool {
        match (self.0, node) {
            (Change::TaskletsStayOnHost, Node::Tasklet(_)) => false,
            _ => SimAccelerator.kernel_can_issue(node),
        }
    }
}

/// The whole pipeline for `acc`: the offloaded SDFG and its report text.
fn offloaded(sdfg: &Sdfg, acc: &dyn Accelerator) -> Result<(Sdfg, String), PipelineError> {
    let (out, report) = pipeline::run(sdfg, Some(acc), &PipelineOptions::default(), &Pass::ALL)?;
    let text = report
        .offload
        .as_ref()
        .map(Report::to_string)
        .unwrap_or_default();
    Ok((out.into_inner(), text))
}

/// A program whose pipeline output depends on `change`'s answer.
fn program_for(change: Change) -> Sdfg {
    let (params, body) = match change {
        Change::InnerSchedule => (
            "A: dc.float64[N, M], B: dc.float64[M]",
            "    B[:] = np.sum(A, axis=0)\n",
        ),
        // 16 elements per row: fewer than the simulated warp of 32 threads
        // (one thread reduces a row), more than a warp of 4 (a block does).
        Change::WarpSize => (
            "A: dc.float64[N, 16], B: dc.float64[N]",
            "    B[:] = np.sum(A, axis=1)\n",
        ),
        Change::NoBlockSchedule => (
            "A: dc.float64[N, M], B: dc.float64[N]",
            "    B[:] = np.sum(A, axis=1)\n",
        ),
        Change::ScalarsByReference => (
            "A: dc.float64[N], B: dc.float64[N]",
            "    s = np.sum(A)\n    B[:] = A / s\n",
        ),
        Change::NoGridBarrier => (
            "A: dc.float64[N]",
            "    while A[0] < 100.0:\n        A[:] = A * 2.0 + 1.0\n",
        ),
        Change::VendorGemm => (
            "A: dc.float64[N, M], B: dc.float64[M, N], C: dc.float64[N, N]",
            "    C[:] = A @ B\n",
        ),
        _ => (
            "A: dc.float64[N], B: dc.float64[N]",
            "    B[:] = A * 2.0 + 1.0\n",
        ),
    };
    program(body, params)
}

#[test]
fn every_answer_the_passes_ask_changes_their_output() {
    use Change::*;
    for change in [
        Name,
        UnifiedMemory,
        GlobalStorage,
        KernelSchedule,
        InnerSchedule,
        NoBlockSchedule,
        WarpSize,
        ScalarsByReference,
        NoGridBarrier,
        VendorGemm,
        TaskletsStayOnHost,
    ] {
        let sdfg = program_for(change);
        let (base, base_report) = offloaded(&sdfg, &SimAccelerator)
            .unwrap_or_else(|e| panic!("{change:?}: the simulated accelerator: {e}"));
        let changed = offloaded(&sdfg, &Variant(change));
        let same_output = changed
            .as_ref()
            .is_ok_and(|(out, report)| *out == base && *report == base_report);
        assert!(
            !same_output,
            "{change:?}: changing the answer changed nothing:\n{base_report}"
        );
    }
}

#[test]
fn with_unified_memory_the_pass_places_no_twin_and_no_copy_and_the_result_runs() {
    let sdfg = program_for(Change::UnifiedMemory);
    let (out, report) =
        sdfg_passes::offload(&sdfg, &Variant(Change::UnifiedMemory), &Default::default())
            .unwrap_or_else(|e| panic!("{e}"));
    assert!(report.copies.is_empty(), "{report}");
    assert!(
        report.placements.iter().all(|p| p.twin.is_none()),
        "{report}"
    );
    assert_eq!(
        out.memory,
        MemoryModel {
            device_touches_host: true,
            host_touches_device: true
        }
    );
    // A kernel reads and writes the caller's arrays where they are.
    let kernels = out
        .states()
        .into_iter()
        .flat_map(|(_, s)| s.nodes().map(|(_, n)| n.clone()).collect::<Vec<_>>())
        .filter(|n| matches!(n, Node::MapEntry(e) if e.map.schedule == Schedule::DeviceKernel))
        .count();
    assert!(kernels > 0, "nothing was offloaded:\n{report}");
    let a = args(&sdfg);
    same(&run(&sdfg, &a), &run(&out, &a));
    // The JSON keeps the model, and the same SDFG claiming separate
    // memories is invalid: kernels would touch host memory.
    assert_eq!(Sdfg::from_json(&out.to_json()).unwrap(), out);
    let mut separate = out.clone();
    separate.memory = MemoryModel::default();
    let errors = sdfg_ir::validate(&separate).unwrap_err().to_string();
    assert!(errors.contains("`A`"), "{errors}");
    // The separate-memory accelerator copies both ways for the same program.
    let (_, separate_report) =
        sdfg_passes::offload(&sdfg, &SimAccelerator, &Default::default()).unwrap();
    assert!(!separate_report.copies.is_empty());
}

#[test]
fn an_accelerator_that_cannot_copy_to_the_device_refuses_naming_the_container() {
    let sdfg = program_for(Change::NoCopyToDevice);
    let e = sdfg_passes::offload(&sdfg, &Variant(Change::NoCopyToDevice), &Default::default())
        .unwrap_err();
    let OffloadError::Unsupported { what, .. } = &e else {
        panic!("{e}");
    };
    assert!(
        what.contains("`A`") && what.contains("cannot copy"),
        "{what}"
    );
}
