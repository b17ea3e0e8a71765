//! Library lowering: every expansion computes what the simulator's reference
//! semantics of the library node compute, on the host and offloaded.

use sdfg_ir::{Node, Sdfg};
use sdfg_passes::{LibraryError, Options, lower_library_nodes, offload};
use sdfg_sim::{Arguments, RunResult, SimAccelerator, Simulator};

mod common;
use common::{program, same};

/// `N = 5`, `M = 3`: shapes of the expansions' edge cases.
fn args(sdfg: &Sdfg) -> Arguments {
    common::args_with(sdfg, 5, 3)
}

fn run(sdfg: &Sdfg, a: &Arguments) -> RunResult {
    let valid = sdfg_ir::validate(sdfg).unwrap_or_else(|e| panic!("{e}"));
    Simulator::new()
        .run(valid, a)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn library_nodes(sdfg: &Sdfg) -> usize {
    sdfg.states()
        .iter()
        .map(|(_, s)| {
            s.nodes()
                .filter(|(_, n)| matches!(n, Node::Library(_)))
                .count()
        })
        .sum()
}

/// Lowers `sdfg` on the host and after offloading; both compute what the
/// library nodes compute, and no library node is left.
fn check(sdfg: &Sdfg) -> Vec<String> {
    assert!(library_nodes(sdfg) > 0, "the program has no library node");
    let a = args(sdfg);
    let reference = run(sdfg, &a);
    let mut host = sdfg.clone();
    let lines = lower_library_nodes(&mut host, &SimAccelerator).unwrap();
    assert_eq!(library_nodes(&host), 0);
    same(&reference, &run(&host, &a));
    let (mut device, _) = offload(sdfg, &SimAccelerator, &Options::default()).unwrap();
    lower_library_nodes(&mut device, &SimAccelerator).unwrap();
    assert_eq!(library_nodes(&device), 0);
    let r = run(&device, &a);
    same(&reference, &r);
    assert!(r.report.launches > 0);
    lines
}

#[test]
fn matrix_products_of_every_rank_expand_to_a_map_and_a_reduction() {
    let lines = check(&program(
        "    C[:] = A @ B\n    y[:] = A @ x\n    z[:] = w @ B\n    s[0] = w @ v\n",
        "A: dc.float64[N, M], B: dc.float64[M, N], C: dc.float64[N, N], x: dc.float64[M], y: dc.float64[N], w: dc.float64[M], z: dc.float64[N], v: dc.float64[M], s: dc.float64[1]",
    ));
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(lines.iter().all(|l| l.contains("pure expansion")));
}

#[test]
fn a_product_of_slices_indexes_inside_them() {
    check(&program(
        "    for i in range(1, N):\n        y[i] = A[i, :i] @ x[:i]\n",
        "A: dc.float64[N, N], x: dc.float64[N], y: dc.float64[N]",
    ));
}

#[test]
fn reductions_over_some_or_all_axes_with_and_without_identity() {
    check(&program(
        "    r[:] = np.sum(A, axis=0)\n    c[:] = np.max(A, axis=1)\n    t[0] = np.sum(A)\n",
        "A: dc.float64[N, M], r: dc.float64[M], c: dc.float64[N], t: dc.float64[1]",
    ));
}

/// The labels of the thread-block maps of `sdfg`'s states.
fn thread_block_maps(sdfg: &Sdfg) -> Vec<String> {
    let mut labels: Vec<String> = sdfg
        .states()
        .iter()
        .flat_map(|(_, s)| {
            s.nodes()
                .filter_map(|(_, n)| match n {
                    Node::MapEntry(m) if m.map.schedule == sdfg_ir::Schedule::DeviceThreadBlock => {
                        Some(m.map.label.clone())
                    }
                    _ => None,
                })
                .collect::<Vec<_>>()
        })
        .collect();
    labels.sort();
    labels
}

#[test]
fn device_reductions_of_one_output_or_of_rows_share_each_output_among_a_block() {
    // Blocks for the full sum, the row maximum, the matrix-vector rows and
    // the dot product; a thread per output for the column sum, the
    // vector-matrix product and the matrix product (their threads read
    // consecutive elements already), and for rows known to be shorter than
    // a warp.
    let sdfg = program(
        "    r[:] = np.sum(A, axis=0)\n    c[:] = np.max(A, axis=1)\n    t[0] = np.sum(A)\n    y[:] = A @ x\n    z[:] = w @ A\n    C[:] = A @ B\n    s[0] = x @ x\n    q[:] = np.sum(S, axis=1)\n",
        "A: dc.float64[N, M], B: dc.float64[M, N], C: dc.float64[N, N], r: dc.float64[M], c: dc.float64[N], t: dc.float64[1], x: dc.float64[M], y: dc.float64[N], w: dc.float64[N], z: dc.float64[M], s: dc.float64[1], S: dc.float64[N, 4], q: dc.float64[N]",
    );
    let a = args(&sdfg);
    let reference = run(&sdfg, &a);
    let (mut device, _) = offload(&sdfg, &SimAccelerator, &Options::default()).unwrap();
    lower_library_nodes(&mut device, &SimAccelerator).unwrap();
    let blocks = thread_block_maps(&device);
    assert_eq!(
        blocks,
        [
            "matmul_reduce",
            "matmul_reduce",
            "reduce_reduce",
            "reduce_reduce"
        ]
    );
    same(&reference, &run(&device, &a));
    // On the host, and inside kernels, reductions stay sequential.
    let mut host = sdfg.clone();
    lower_library_nodes(&mut host, &SimAccelerator).unwrap();
    assert!(thread_block_maps(&host).is_empty());
}

#[test]
fn a_cholesky_factorization_expands_to_one_sequential_scope() {
    // A symmetric positive-definite A: B @ B.T + N * I.
    let sdfg = program(
        "    for i in range(N):\n        for j in range(N):\n            A[i, j] = A[i, j] * 0.1 + A[j, i] * 0.1\n        A[i, i] = A[i, i] + N\n    L[:] = np.linalg.cholesky(A)\n",
        "A: dc.float64[N, N], L: dc.float64[N, N]",
    );
    check(&sdfg);
}

#[test]
fn linear_solves_expand_to_lu_with_partial_pivoting() {
    // A zero first pivot: without row exchanges the elimination divides by
    // zero. Right-hand sides as a vector and as a matrix; real and complex.
    let setup = "    A[0, 0] = 0.0\n    for i in range(1, N):\n        A[i, i] = A[i, i] + N\n";
    let lines = check(&program(
        &format!("{setup}    x[:] = np.linalg.solve(A, b)\n    X[:] = np.linalg.solve(A, B)\n"),
        "A: dc.float64[N, N], b: dc.float64[N], x: dc.float64[N], B: dc.float64[N, M], X: dc.float64[N, M]",
    ));
    assert!(
        lines.iter().all(|l| l.contains("LU with partial pivoting")),
        "{lines:?}"
    );
    check(&program(
        &format!("{setup}    X[:] = np.linalg.solve(A, B)\n"),
        "A: dc.complex128[N, N], B: dc.complex128[N, M], X: dc.complex128[N, M]",
    ));
}

#[test]
fn an_operation_without_an_expansion_is_refused_by_name() {
    let sdfg = program(
        "    L[:] = np.linalg.cholesky(A)\n",
        "A: dc.complex128[N, N], L: dc.complex128[N, N]",
    );
    let mut s = sdfg.clone();
    match lower_library_nodes(&mut s, &SimAccelerator) {
        Err(LibraryError::Unsupported { what, node, state }) => {
            assert!(what.contains("Cholesky"), "{what}");
            assert!(!node.is_empty() && !state.is_empty());
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// An accelerator that maps matrix products to a BLAS, as the CUDA and HIP
/// backends do.
struct WithBlas;

impl sdfg_passes::Accelerator for WithBlas {
    fn name(&self) -> &'static str {
        "with-blas"
    }
    fn warp_size(&self) -> u32 {
        32
    }
    fn default_block(&self) -> [u32; 3] {
        [128, 1, 1]
    }
    fn max_grid(&self) -> [u64; 3] {
        [1 << 31, 65_535, 65_535]
    }
    fn vendor_library(&self, op: &sdfg_ir::LibraryOp) -> Option<sdfg_passes::VendorCall> {
        use sdfg_ir::LibraryOp as L;
        let function = match op {
            L::Gemm { .. } => "gemm",
            L::Gemv { .. } => "gemv",
            L::Dot => "dot",
            L::Cholesky { .. } => "potrf",
            L::Solve => "getrf+getrs",
            _ => return None,
        };
        Some(sdfg_passes::VendorCall {
            library: "BLAS",
            function,
        })
    }
}

#[test]
fn device_wide_products_an_accelerator_maps_to_blas_stay_specialized_library_nodes() {
    let sdfg = program(
        "    C[:] = A @ B\n    y[:] = A @ x\n    z[:] = w @ B\n    s[0] = w @ v\n    r[:] = np.sum(A, axis=0)\n",
        "A: dc.float64[N, M], B: dc.float64[M, N], C: dc.float64[N, N], x: dc.float64[M], y: dc.float64[N], w: dc.float64[M], z: dc.float64[N], v: dc.float64[M], s: dc.float64[1], r: dc.float64[M]",
    );
    let a = args(&sdfg);
    let reference = run(&sdfg, &a);
    let (mut device, _) = offload(&sdfg, &WithBlas, &Options::default()).unwrap();
    let lines = lower_library_nodes(&mut device, &WithBlas).unwrap();
    let mut ops: Vec<String> = device
        .states()
        .iter()
        .flat_map(|(_, s)| {
            s.nodes()
                .filter_map(|(_, n)| match n {
                    Node::Library(l) => Some(l.op.name().to_owned()),
                    _ => None,
                })
                .collect::<Vec<_>>()
        })
        .collect();
    ops.sort();
    // GEMM, two GEMVs (matrix x vector, vector x matrix), DOT; the
    // reduction has no vendor form here and is expanded.
    assert_eq!(ops, ["dot", "gemm", "gemv", "gemv"], "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("BLAS gemm")), "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("reduce") && l.contains("pure expansion")),
        "{lines:?}"
    );
    // The specialized nodes compute what the products did.
    same(&reference, &run(&device, &a));
    // Negative control: on the host (not offloaded) nothing stays a library node.
    let mut host = sdfg.clone();
    lower_library_nodes(&mut host, &WithBlas).unwrap();
    assert_eq!(library_nodes(&host), 0);
}

/// The kernels (device maps) of `sdfg`'s states.
fn kernels(sdfg: &Sdfg) -> usize {
    sdfg.states()
        .iter()
        .map(|(_, s)| {
            s.nodes()
                .filter(|(id, n)| {
                    matches!(n, Node::MapEntry(m) if m.map.schedule.is_device())
                        && s.scope_tree().is_ok_and(|t| t.parent(*id).is_none())
                })
                .count()
        })
        .sum()
}

#[test]
fn a_vendor_gemm_absorbs_the_scaling_before_it_and_the_accumulation_after_it() {
    // PolyBench's gemm, and the same with the scales on the other side and
    // without beta.
    for body in [
        "    C[:] = alpha * A @ B + beta * C
",
        "    C[:] = (A * alpha) @ B + C * beta
",
        "    C[:] = A @ (alpha * B) + C
",
    ] {
        let sdfg = program(
            body,
            "alpha: dc.float64, beta: dc.float64, A: dc.float64[N, M], B: dc.float64[M, N], C: dc.float64[N, N]",
        );
        let a = args(&sdfg);
        let reference = run(&sdfg, &a);
        let (mut device, _) = offload(&sdfg, &WithBlas, &Options::default()).unwrap();
        let lines = lower_library_nodes(&mut device, &WithBlas).unwrap();
        assert_eq!(library_nodes(&device), 1, "{body}{lines:?}");
        assert_eq!(kernels(&device), 0, "{body}{lines:?}");
        assert!(
            lines.iter().any(|l| l.contains("scaled by `alpha`"))
                && lines.iter().any(|l| l.contains("in place")),
            "{body}{lines:?}"
        );
        // The one call computes what the three steps did.
        same(&reference, &run(&device, &a));
    }
    // Negative control: a scale read elsewhere too stays a kernel (its
    // transient is used after the product).
    let sdfg = program(
        "    T = alpha * A
    C[:] = T @ B + beta * C
    D[:] = T
",
        "alpha: dc.float64, beta: dc.float64, A: dc.float64[N, M], B: dc.float64[M, N], C: dc.float64[N, N], D: dc.float64[N, M]",
    );
    let a = args(&sdfg);
    let reference = run(&sdfg, &a);
    let (mut device, _) = offload(&sdfg, &WithBlas, &Options::default()).unwrap();
    let lines = lower_library_nodes(&mut device, &WithBlas).unwrap();
    assert!(kernels(&device) >= 1, "{lines:?}");
    assert!(!lines.iter().any(|l| l.contains("scaled by")), "{lines:?}");
    same(&reference, &run(&device, &a));
}

#[test]
fn batched_products_broadcast_their_batch_dimensions() {
    check(&program(
        "    C[:] = A @ B\n    D[:] = A @ E\n",
        "A: dc.float64[3, N, M], B: dc.float64[3, M, N], C: dc.float64[3, N, N], E: dc.float64[M, N], D: dc.float64[3, N, N]",
    ));
}

#[test]
fn a_device_wide_cholesky_an_accelerator_maps_to_a_solver_stays_a_library_node() {
    let sdfg = program(
        "    for i in range(N):\n        for j in range(N):\n            A[i, j] = A[i, j] * 0.1 + A[j, i] * 0.1\n        A[i, i] = A[i, i] + N\n    L[:] = np.linalg.cholesky(A)\n",
        "A: dc.float64[N, N], L: dc.float64[N, N]",
    );
    let a = args(&sdfg);
    let reference = run(&sdfg, &a);
    let (mut device, _) = offload(&sdfg, &WithBlas, &Options::default()).unwrap();
    let lines = lower_library_nodes(&mut device, &WithBlas).unwrap();
    assert_eq!(library_nodes(&device), 1, "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("BLAS potrf")), "{lines:?}");
    same(&reference, &run(&device, &a));
    // Negative control: the simulated accelerator maps nothing; expanded.
    let (mut sim, _) = offload(&sdfg, &SimAccelerator, &Options::default()).unwrap();
    lower_library_nodes(&mut sim, &SimAccelerator).unwrap();
    assert_eq!(library_nodes(&sim), 0);
}

#[test]
fn a_device_wide_solve_an_accelerator_maps_to_a_solver_stays_a_library_node() {
    let sdfg = program(
        "    for i in range(N):\n        A[i, i] = A[i, i] + N\n    X[:] = np.linalg.solve(A, B)\n",
        "A: dc.complex128[N, N], B: dc.complex128[N, M], X: dc.complex128[N, M]",
    );
    let a = args(&sdfg);
    let reference = run(&sdfg, &a);
    let (mut device, _) = offload(&sdfg, &WithBlas, &Options::default()).unwrap();
    let lines = lower_library_nodes(&mut device, &WithBlas).unwrap();
    assert_eq!(library_nodes(&device), 1, "{lines:?}");
    assert!(
        lines.iter().any(|l| l.contains("BLAS getrf+getrs")),
        "{lines:?}"
    );
    same(&reference, &run(&device, &a));
    // Controls: on the host, or where nothing is mapped, it is expanded.
    let mut host = sdfg.clone();
    lower_library_nodes(&mut host, &WithBlas).unwrap();
    assert_eq!(library_nodes(&host), 0);
    let (mut sim, _) = offload(&sdfg, &SimAccelerator, &Options::default()).unwrap();
    lower_library_nodes(&mut sim, &SimAccelerator).unwrap();
    assert_eq!(library_nodes(&sim), 0);
}

#[test]
fn transposes_expand_to_a_permuted_copy() {
    // The frontend lowers `.T` and `np.transpose` to views; these nodes come
    // from other producers, so build them directly.
    use sdfg_ir::builder::SdfgBuilder;
    use sdfg_ir::{DType, LibraryOp};
    let mut b = SdfgBuilder::new("transposes");
    b.symbol("N")
        .symbol("M")
        .array("A", DType::Float64, "N, M")
        .array("B", DType::Float64, "M, N")
        .array("C", DType::Float64, "N, M, 2")
        .array("D", DType::Float64, "M, 2, N");
    b.state("t", |s| {
        let (a, bb) = (s.access("A"), s.access("B"));
        let t = s.library("t", LibraryOp::Transpose);
        s.edge(a, None, t, Some("_in"), "A[0:N, 0:M]");
        s.edge(t, Some("_out"), bb, None, "B[0:M, 0:N]");
    });
    b.state("p", |s| {
        let (c, d) = (s.access("C"), s.access("D"));
        let t = s.library(
            "p",
            LibraryOp::TensorTranspose {
                axes: vec![1, 2, 0],
            },
        );
        s.edge(c, None, t, Some("_in"), "C[0:N, 0:M, 0:2]");
        s.edge(t, Some("_out"), d, None, "D[0:M, 0:2, 0:N]");
    });
    check(&b.build().unwrap());
}
