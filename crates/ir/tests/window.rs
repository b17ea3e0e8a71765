//! Windows of nested SDFGs' containers, and the one rule by which a
//! memlet inside is written in the windows' indices
//! (`sdfg_ir::window::compose_memlet`, shared by inlining and the export).

use sdfg_ir::window::{Window, compose_memlet};
use sdfg_ir::{Memlet, Subset, SymExpr};

fn sym(s: &str) -> SymExpr {
    SymExpr::parse(s).unwrap()
}

fn subset(s: &str) -> Subset {
    Subset::parse(s).unwrap()
}

/// `c` of `M` elements bound to the column `A[1:N, i]`: its index `j` is
/// `A[j + 1, i]`.
fn column() -> Window {
    Window::bound("A", &subset("1:N, i"), &[sym("M")]).unwrap()
}

#[test]
fn a_window_that_drops_a_dimension_maps_indices_into_it() {
    let w = column();
    assert_eq!(w.data, "A");
    assert!(!w.is_identity());
    assert_eq!(w.index(&[sym("j")]), [sym("j + 1"), sym("i")]);
    assert_eq!(w.compose(&subset("0:M")), subset("1:M + 1, i"));
}

#[test]
fn a_memlet_of_a_tasklet_is_composed_with_its_containers_window() {
    let w = column();
    let mut m = Memlet::parse("c", "j").unwrap();
    compose_memlet(&mut m, (None, None), &|c| (c == "c").then_some(&w), &|_| {
        vec![sym("M")]
    });
    // The caller renames; the rule composes.
    assert_eq!(m.data, "c");
    assert_eq!(m.subset, subset("j + 1, i"));
    assert_eq!(m.other_subset, None);
}

#[test]
fn a_copys_other_end_is_written_out_then_composed() {
    let w = column();
    // `c -> x` (`x` of `M` elements, not windowed): `c`'s subset composed,
    // `x`'s end written out in full (its default, the same subset, no
    // longer has `x`'s rank once `c`'s subset is two-dimensional).
    let mut m = Memlet::parse("c", "0:M").unwrap();
    compose_memlet(
        &mut m,
        (Some("c"), Some("x")),
        &|c| (c == "c").then_some(&w),
        &|_| vec![sym("M")],
    );
    assert_eq!(m.subset, subset("1:M + 1, i"));
    assert_eq!(m.other_subset, Some(subset("0:M")));
    // `x -> c`, the memlet naming `x`: the other end is `c`'s, composed.
    let mut m = Memlet::parse("x", "0:M").unwrap();
    compose_memlet(
        &mut m,
        (Some("x"), Some("c")),
        &|c| (c == "c").then_some(&w),
        &|_| vec![sym("M")],
    );
    assert_eq!(m.subset, subset("0:M"));
    assert_eq!(m.other_subset, Some(subset("1:M + 1, i")));
    // Neither windowed: unchanged.
    let mut m = Memlet::parse("x", "0:M").unwrap();
    let before = m.clone();
    compose_memlet(&mut m, (Some("x"), Some("y")), &|_| None, &|_| {
        vec![sym("M")]
    });
    assert_eq!(m, before);
}
