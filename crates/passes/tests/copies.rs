//! Copy maps become copies: contiguous blocks on both sides only, the
//! results unchanged and no kernel launched for them.

use sdfg_ir::Sdfg;
use sdfg_passes::copies::maps_to_copies;

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
fn strided_or_reordered_sections_stay_maps() {
    for (body, params) in [
        // A column: a stride of M.
        (
            "    B[:, 0] = A[:, 0]\n",
            "A: dc.float64[N, M], B: dc.float64[N, M]",
        ),
        // Part of each row.
        (
            "    B[:, 1:M] = A[:, 1:M]\n",
            "A: dc.float64[N, M], B: dc.float64[N, M]",
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
