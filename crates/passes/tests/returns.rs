//! Return values in place: which copies into `__return` go, which stay, and
//! that the program still returns what it did.

use sdfg_ir::Sdfg;
use sdfg_passes::returns::returns_in_place;

mod common;
use common::{program, rewritten};

#[track_caller]
fn in_place(sdfg: &Sdfg) -> (Sdfg, Vec<String>) {
    let (out, lines, _) = rewritten(sdfg, returns_in_place);
    (out, lines)
}

fn states(sdfg: &Sdfg) -> usize {
    sdfg.states().len()
}

#[test]
fn a_returned_temporary_is_computed_in_place() {
    let sdfg = program("    y = A * 2.0 + 1.0\n    return y\n", "A: dc.float64[N]");
    let (out, lines) = in_place(&sdfg);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(states(&out), states(&sdfg) - 1);
    assert!(out.containers.contains_key("__return"));
}

#[test]
fn each_value_of_a_tuple_and_a_scalar() {
    let sdfg = program(
        "    y = A * 2.0\n    s = np.sum(A)\n    return y, s\n",
        "A: dc.float64[N]",
    );
    let (_, lines) = in_place(&sdfg);
    assert_eq!(lines.len(), 2, "{lines:?}");
}

#[test]
fn an_argument_or_a_temporary_used_later_is_copied() {
    // An argument is the caller's, not ours to rename.
    let sdfg = program("    return A\n", "A: dc.float64[N]");
    let (_, lines) = in_place(&sdfg);
    assert!(lines.is_empty(), "{lines:?}");
    // Two returns in branches: the first copy is followed by code reading
    // the temporary (the other branch's copy), so neither goes.
    let sdfg = program(
        "    y = A * 2.0\n    if A[0] > 0.5:\n        return y\n    B[:] = y\n    return B * 1.0\n",
        "A: dc.float64[N], B: dc.float64[N]",
    );
    let (out, _) = in_place(&sdfg);
    assert!(out.containers.contains_key("__return"));
}
