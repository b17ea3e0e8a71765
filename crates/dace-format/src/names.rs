//! The vocabulary shared by DaCe and the IR: storage, schedule and
//! lifetime names, library nodes with their class paths and connectors,
//! and write-conflict resolutions as the lambdas DaCe stores.
//!
//! Each table is written once and read in both directions, so the export
//! and the import cannot drift apart: a kind the IR has and DaCe does not
//! (or the reverse) is simply absent from a table, and both directions
//! refuse it by name.

use sdfg_ir::{LibraryOp, Lifetime, Schedule, Storage, Wcr};

/// The IR's storage kinds by DaCe's `StorageType` names
/// ([`Storage::DACE_NAMES`]: the frontend reads them in annotations too).
pub const STORAGES: [(Storage, &str); 6] = Storage::DACE_NAMES;

/// The IR's schedules by DaCe's `ScheduleType` names.
pub const SCHEDULES: [(Schedule, &str); 6] = [
    (Schedule::Default, "Default"),
    (Schedule::Sequential, "Sequential"),
    (Schedule::HostParallel, "CPU_Multicore"),
    (Schedule::DeviceKernel, "GPU_Device"),
    (Schedule::DeviceThreadBlock, "GPU_ThreadBlock"),
    (Schedule::DevicePersistent, "GPU_Persistent"),
];

/// The IR's lifetimes by DaCe's `AllocationLifetime` names.
pub const LIFETIMES: [(Lifetime, &str); 5] = [
    (Lifetime::Scope, "Scope"),
    (Lifetime::State, "State"),
    (Lifetime::Sdfg, "SDFG"),
    (Lifetime::Persistent, "Persistent"),
    (Lifetime::External, "External"),
];

/// DaCe's name of a storage kind.
pub fn storage_name(s: Storage) -> &'static str {
    lookup(&STORAGES, s)
}

/// DaCe's name of a schedule.
pub fn schedule_name(s: Schedule) -> &'static str {
    lookup(&SCHEDULES, s)
}

/// DaCe's name of a lifetime.
pub fn lifetime_name(l: Lifetime) -> &'static str {
    lookup(&LIFETIMES, l)
}

/// The storage kind DaCe calls `name`, if the IR has it.
pub fn storage_from(name: &str) -> Option<Storage> {
    reverse(&STORAGES, name)
}

/// The schedule DaCe calls `name`, if the IR has it.
pub fn schedule_from(name: &str) -> Option<Schedule> {
    reverse(&SCHEDULES, name)
}

/// The lifetime DaCe calls `name`, if the IR has it.
pub fn lifetime_from(name: &str) -> Option<Lifetime> {
    reverse(&LIFETIMES, name)
}

fn lookup<T: PartialEq + Copy>(table: &[(T, &'static str)], key: T) -> &'static str {
    // Every table lists every variant of its enum (checked by a test), so
    // the fallback is unreachable; it keeps this total without a panic.
    table
        .iter()
        .find(|(k, _)| *k == key)
        .map_or("Default", |(_, n)| n)
}

fn reverse<T: Copy>(table: &[(T, &str)], name: &str) -> Option<T> {
    table.iter().find(|(_, n)| *n == name).map(|(k, _)| *k)
}

/// A library operation as DaCe knows it: the class DaCe loads it with and
/// the names of its connectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DaceLibrary {
    /// The Python class path DaCe stores in `classpath`.
    pub classpath: &'static str,
    /// The IR's connector names paired with DaCe's, inputs and outputs.
    pub connectors: &'static [(&'static str, &'static str)],
}

/// DaCe's class and connector names for a library operation, or `None`
/// for an operation DaCe has no node for.
pub fn library(op: &LibraryOp) -> Option<DaceLibrary> {
    let (classpath, connectors): (&str, &[(&str, &str)]) = match op {
        LibraryOp::MatMul => (
            "dace.libraries.blas.nodes.matmul.MatMul",
            &[("_a", "_a"), ("_b", "_b"), ("_c", "_c")],
        ),
        // DaCe's Gemm reads and writes the same connector `_c`.
        LibraryOp::Gemm { .. } => (
            "dace.libraries.blas.nodes.gemm.Gemm",
            &[("_a", "_a"), ("_b", "_b"), ("_cin", "_c"), ("_c", "_c")],
        ),
        LibraryOp::Gemv { .. } => (
            "dace.libraries.blas.nodes.gemv.Gemv",
            &[("_a", "_A"), ("_x", "_x"), ("_y_in", "_y"), ("_y", "_y")],
        ),
        LibraryOp::Dot => (
            "dace.libraries.blas.nodes.dot.Dot",
            &[("_x", "_x"), ("_y", "_y"), ("_result", "_result")],
        ),
        LibraryOp::BatchedMatMul => (
            "dace.libraries.blas.nodes.batched_matmul.BatchedMatMul",
            &[("_a", "_a"), ("_b", "_b"), ("_c", "_c")],
        ),
        LibraryOp::Reduce { .. } => (
            "dace.libraries.standard.nodes.reduce.Reduce",
            // DaCe's Reduce has one unnamed input and output.
            &[],
        ),
        LibraryOp::Transpose => (
            "dace.libraries.linalg.nodes.transpose.Transpose",
            &[("_in", "_inp"), ("_out", "_out")],
        ),
        LibraryOp::TensorTranspose { .. } => (
            "dace.libraries.linalg.nodes.ttranspose.TensorTranspose",
            &[("_in", "_inp_tensor"), ("_out", "_out_tensor")],
        ),
        LibraryOp::Cholesky { .. } => (
            "dace.libraries.linalg.nodes.cholesky.Cholesky",
            &[("_a", "_a"), ("_b", "_b")],
        ),
        LibraryOp::Solve => (
            "dace.libraries.linalg.nodes.solve.Solve",
            &[("_a", "_ain"), ("_b", "_bin"), ("_x", "_bout")],
        ),
    };
    Some(DaceLibrary {
        classpath,
        connectors,
    })
}

impl DaceLibrary {
    /// DaCe's name for the IR's connector `ours`; `None` where DaCe's node
    /// has no name for it (Reduce's connectors are unnamed in DaCe).
    pub fn dace_connector(&self, ours: &str) -> Option<&'static str> {
        self.connectors
            .iter()
            .find(|(o, _)| *o == ours)
            .map(|(_, d)| *d)
    }
}

/// The dimensions of `subset` that are not single indices, in order: the
/// IR numbers a reduction's axes among these, DaCe among all of them.
pub fn kept_dimensions(subset: &sdfg_ir::Subset) -> Vec<usize> {
    subset
        .ranges
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.is_index())
        .map(|(k, _)| k)
        .collect()
}

/// The lambda DaCe stores for a write-conflict resolution, in the
/// spelling DaCe itself writes (`(lambda x, y: (x + y))`), which DaCe's
/// `detect_reduction_type` recognizes.
pub fn wcr_lambda(w: Wcr) -> &'static str {
    match w {
        Wcr::Sum => "(lambda x, y: (x + y))",
        Wcr::Product => "(lambda x, y: (x * y))",
        Wcr::Min => "(lambda x, y: min(x, y))",
        Wcr::Max => "(lambda x, y: max(x, y))",
        Wcr::BitAnd => "(lambda x, y: (x & y))",
        Wcr::BitOr => "(lambda x, y: (x | y))",
        Wcr::BitXor => "(lambda x, y: (x ^ y))",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_list_every_kind_once_in_each_direction() {
        for s in Storage::ALL {
            assert_eq!(storage_from(storage_name(s)), Some(s), "{s}");
        }
        for s in Schedule::ALL {
            assert_eq!(schedule_from(schedule_name(s)), Some(s), "{s}");
        }
        for l in [
            Lifetime::Scope,
            Lifetime::State,
            Lifetime::Sdfg,
            Lifetime::Persistent,
            Lifetime::External,
        ] {
            assert_eq!(lifetime_from(lifetime_name(l)), Some(l), "{l}");
        }
        assert_eq!(storage_from("CPU_ThreadLocal"), None);
        assert_eq!(
            schedule_from("GPU_Persistent"),
            Some(Schedule::DevicePersistent)
        );
        assert_eq!(schedule_from("FPGA_Device"), None);
    }

    #[test]
    fn library_connectors_cover_the_ir_connectors() {
        use sdfg_ir::Literal;
        let ops = [
            LibraryOp::MatMul,
            LibraryOp::Gemm {
                alpha: Literal::f64(1.0),
                beta: Literal::f64(1.0),
                trans_a: false,
                trans_b: false,
                alpha_input: false,
                beta_input: false,
            },
            LibraryOp::Gemv {
                alpha: Literal::f64(1.0),
                beta: Literal::f64(1.0),
                trans_a: true,
            },
            LibraryOp::Dot,
            LibraryOp::BatchedMatMul,
            LibraryOp::Transpose,
            LibraryOp::TensorTranspose { axes: vec![1, 0] },
            LibraryOp::Cholesky { lower: true },
            LibraryOp::Solve,
        ];
        for op in ops {
            let lib = library(&op).unwrap();
            for c in op.in_connectors().into_iter().chain(op.out_connectors()) {
                assert!(lib.dace_connector(c).is_some(), "{} `{c}`", op.name());
            }
        }
    }
}
