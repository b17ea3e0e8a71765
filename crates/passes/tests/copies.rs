//! Copy maps become copies: one runtime copy each (a contiguous run, or
//! one two-dimensional copy), the results unchanged and no kernel launched
//! for them.

use sdfg_ir::builder::SdfgBuilder;
use sdfg_ir::code::{Expr, Stmt};
use sdfg_ir::{BlockKind, Connector, DType, Schedule, Sdfg};
use sdfg_passes::copies::maps_to_copies;
use sdfg_passes::dependence::RegionUse;

mod common;
use common::{program, rewritten};

/// The copies made and the offloaded run's launches, with every check of
/// [`common::rewritten`].
#[track_caller]
fn copies(sdfg: &Sdfg) -> (Vec<String>, u64) {
    let (_, lines, run) = rewritten(sdfg, maps_to_copies);
    (lines, run.report.launches)
}

#[test]
fn a_shifted_contiguous_section_is_one_copy() {
    let sdfg = program(
        "    B[1:N] = A[0:N - 1]\n",
        "A: dc.float64[N], B: dc.float64[N]",
    );
    let (lines, launches) = copies(&sdfg);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(launches, 0);
}

#[test]
fn rows_of_a_matrix_are_one_copy() {
    // Rows 1.. of a row-major matrix are one run of memory.
    let sdfg = program(
        "    B[1:N, :] = A[0:N - 1, :]\n",
        "A: dc.float64[N, M], B: dc.float64[N, M]",
    );
    let (lines, launches) = copies(&sdfg);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(launches, 0);
}

#[test]
fn columns_and_parts_of_rows_are_one_two_dimensional_copy() {
    for body in [
        // A column: rows of one element, a pitch of M.
        "    B[:, 0] = A[:, 0]\n",
        // Part of each row: rows of M - 1 elements, a pitch of M.
        "    B[:, 1:M] = A[:, 1:M]\n",
        // A column into a vector: pitches M and 1.
        "    C[:] = A[:, 2]\n",
    ] {
        let sdfg = program(
            body,
            "A: dc.float64[N, M], B: dc.float64[N, M], C: dc.float64[N]",
        );
        let (lines, launches) = copies(&sdfg);
        assert_eq!(lines.len(), 1, "{body}: {lines:?}");
        assert_eq!(launches, 0, "{body}");
    }
}

#[test]
fn sections_needing_several_copies_or_a_kernel_stay_maps() {
    for (body, params) in [
        // Columns of each plane: neither dimension coalesces, so it would
        // be a loop of two-dimensional copies.
        (
            "    B[:, :, 0] = A[:, :, 0]\n",
            "A: dc.float64[N, M, 3], B: dc.float64[N, M, 3]",
        ),
        // A transpose.
        (
            "    B[:] = np.transpose(A)\n",
            "A: dc.float64[N, M], B: dc.float64[M, N]",
        ),
        // A conversion.
        ("    B[:] = A\n", "A: dc.float64[N], B: dc.float32[N]"),
    ] {
        let sdfg = program(body, params);
        let (lines, launches) = copies(&sdfg);
        assert!(lines.is_empty(), "{body}: {lines:?}");
        assert!(launches >= 1, "{body}");
    }
}

#[test]
fn a_reshape_between_whole_arrays_of_different_shapes_is_one_copy() {
    for (body, params) in [
        // Flattening: the read is `A[i // M, i % M]`, whose flat index is
        // `i` (the canonical form folds it).
        (
            "    B[:] = np.reshape(A, (N * M,))\n",
            "A: dc.float64[N, M], B: dc.float64[N * M]",
        ),
        // Unflattening: the read is `v[i * M + j]`, two parameters in one
        // dimension as the digits of one run.
        (
            "    C[:, :] = np.reshape(v, (N, M))\n",
            "v: dc.float64[N * M], C: dc.float64[N, M]",
        ),
    ] {
        let sdfg = program(body, params);
        let (lines, launches) = copies(&sdfg);
        assert_eq!(lines.len(), 1, "{body}: {lines:?}");
        assert_eq!(launches, 0, "{body}");
    }
    // Negative controls: a reversal covers a run backwards, and a
    // transposing reshape's digits are out of order: kernels both.
    for (body, params) in [
        (
            "    for i in dc.map[0:N]:\n        B[i] = A[N - 1 - i]\n",
            "A: dc.float64[N], B: dc.float64[N]",
        ),
        (
            "    C[:, :] = np.transpose(np.reshape(v, (M, N)))\n",
            "v: dc.float64[N * M], C: dc.float64[N, M]",
        ),
    ] {
        let sdfg = program(body, params);
        let (lines, launches) = copies(&sdfg);
        assert!(lines.is_empty(), "{body}: {lines:?}");
        assert!(launches >= 1, "{body}");
    }
}

#[test]
fn a_copy_within_one_container_is_one_copy_where_its_ends_lie_apart() {
    // cavity_flow's boundary conditions: the frontend's temporary of the
    // right-hand side becomes a scalar of the point (map fusion: column
    // M - 1 lies apart from column M - 2), and the map is one copy of `A`
    // into itself, its memlet naming the source.
    let fused = |body: &str| {
        let mut sdfg = program(body, "A: dc.float64[N, M]");
        sdfg_passes::map_fusion::fuse_maps(&mut sdfg);
        sdfg
    };
    for (body, want) in [
        (
            "    A[:, M - 1] = A[:, M - 2]\n",
            "`A[0:N, M - 2]` -> `A[0:N, M - 1]`",
        ),
        ("    A[0, :] = A[1, :]\n", "`A[1, 0:M]` -> `A[0, 0:M]`"),
    ] {
        let (lines, launches) = copies(&fused(body));
        assert_eq!(lines.len(), 1, "{body}: {lines:?}");
        assert!(lines[0].contains(want), "{body}: {lines:?}");
        assert_eq!(launches, 0, "{body}");
    }
    // Ends that overlap (a map shifting a vector by one, which the
    // frontend refuses to write but an SDFG may hold) would need a memmove:
    // the map stays.
    let mut b = SdfgBuilder::new("shift");
    b.symbol("N").array("x", DType::Float64, "N");
    b.state("s", |s| {
        let (from, to) = (s.access("x"), s.access("x"));
        let c = |n: &str| Connector::scalar(n, DType::Float64);
        s.mapped_tasklet(
            "shift",
            "i = 0:N - 1",
            Schedule::Default,
            vec![(from, c("a"), "x[i]")],
            vec![Stmt::assign("b", Expr::var("a"))],
            vec![(c("b"), to, "x[i + 1]")],
        );
    });
    let mut sdfg = b.build().unwrap();
    assert_eq!(maps_to_copies(&mut sdfg), Vec::<String>::new());
}

#[test]
fn a_copy_of_a_copy_is_one_copy() {
    // `T = A.copy(); B[:] = T` inside a loop (where copy elision does not
    // reach): map fusion makes `T` a scalar of the point between two copy
    // tasklets, and the chain is one copy.
    let sdfg = program(
        "    for k in range(2):\n        T = A.copy()\n        B[:] = T\n        A[:] = B + 1.0\n",
        "A: dc.float64[N, M], B: dc.float64[N, M]",
    );
    let mut fused = sdfg.clone();
    let lines = sdfg_passes::map_fusion::fuse_maps(&mut fused);
    assert!(!lines.is_empty(), "the copies fuse first");
    let (lines, _) = copies(&fused);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("`A[0:N, 0:M]` -> `B[0:N, 0:M]`"),
        "{lines:?}"
    );
}

#[test]
fn a_copy_within_one_container_reads_its_source_and_writes_its_destination() {
    // The memlet names its source; the dependence analysis (which map
    // fusion, horizontal fusion and the merging of device states ask) must
    // take the destination's subset from the other subset, not from the
    // name both ends share.
    let mut b = SdfgBuilder::new("self_copy");
    b.array("x", DType::Float64, "4");
    b.state("s", |s| {
        let (from, to) = (s.access("x"), s.access("x"));
        let m = sdfg_ir::Memlet::parse("x", "0:2")
            .unwrap()
            .with_other_subset(sdfg_ir::Subset::parse("2:4").unwrap());
        s.edge(from, None, to, None, m);
    });
    let sdfg = b.build().unwrap();
    let BlockKind::State(state) = &sdfg.body.blocks[0].kind else {
        panic!("a state");
    };
    let uses = RegionUse::of_state("s", state, &Default::default());
    let subsets: Vec<(bool, String)> = uses
        .accesses
        .iter()
        .map(|a| {
            (
                a.write,
                a.subset.as_ref().map(|s| s.to_string()).unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        subsets,
        [(false, "0:2".to_owned()), (true, "2:4".to_owned())]
    );
}
