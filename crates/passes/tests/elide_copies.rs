//! Copy elision: which whole copies of dead temporaries go (into return
//! values, temporaries and arguments the program only overwrites), which
//! stay, and that the program still computes what it did.

use sdfg_ir::Sdfg;
use sdfg_passes::elide_copies::elide_copies;

mod common;
use common::{program, rewritten};

#[track_caller]
fn in_place(sdfg: &Sdfg) -> (Sdfg, Vec<String>) {
    let (out, lines, _) = rewritten(sdfg, elide_copies);
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
    // the temporary (the other branch's copy), so neither goes; nor does
    // `B[:] = y`, as the caller would see `y` in `B` after the early return.
    let sdfg = program(
        "    y = A * 2.0\n    if A[0] > 0.5:\n        return y\n    B[:] = y\n    return B * 1.0\n",
        "A: dc.float64[N], B: dc.float64[N]",
    );
    let (out, _) = in_place(&sdfg);
    assert!(out.containers.contains_key("__return"));
}

#[test]
fn a_temporary_assigned_whole_to_a_variable_is_computed_there() {
    let sdfg = program(
        "    y = np.empty_like(A)\n    t = A * 2.0\n    y[:] = t\n    return y\n",
        "A: dc.float64[N, M]",
    );
    let (out, lines) = in_place(&sdfg);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].starts_with("`t"), "{lines:?}");
    assert_eq!(states(&out), states(&sdfg) - 2);
}

#[test]
fn an_argument_only_overwritten_receives_the_temporary() {
    let sdfg = program(
        "    y = A * 2.0 + 1.0\n    B[:] = y\n",
        "A: dc.float64[N], B: dc.float64[N]",
    );
    let (out, lines) = in_place(&sdfg);
    assert_eq!(lines, ["`y_1` as `B`"], "{lines:?}");
    assert!(!out.containers.keys().any(|c| c.starts_with('y')));
}

#[test]
fn a_destination_read_before_the_copy_keeps_it() {
    // `B` is read while `y` is live: computing `y` in `B` would change what
    // that read sees.
    let sdfg = program(
        "    y = A * 2.0\n    C[:] = B * 3.0\n    B[:] = y\n",
        "A: dc.float64[N], B: dc.float64[N], C: dc.float64[N]",
    );
    let (_, lines) = in_place(&sdfg);
    assert!(lines.is_empty(), "{lines:?}");
    // Nor when the source is read after the copy.
    let sdfg = program(
        "    y = A * 2.0\n    B[:] = y\n    C[:] = y + 1.0\n",
        "A: dc.float64[N], B: dc.float64[N], C: dc.float64[N]",
    );
    let (_, lines) = in_place(&sdfg);
    assert!(lines.is_empty(), "{lines:?}");
}
