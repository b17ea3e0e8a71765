//! The two ends of a copy, as the IR and DaCe read them.
//!
//! An edge copies where the IR reads it as a copy: between two access
//! nodes, or between an access node and a map's entry or exit whose memlet
//! names another container (a copy into or out of the map's scope, such as
//! a register `__tmp2` written into `bcol[i, j]` through the map's exit).
//! Its memlet's `subset` belongs to the container it names (`data`); the
//! other end's subset is `other_subset`. Where that is missing, each reader
//! supplies its own default, and they differ:
//!
//! - the IR ([`Memlet::other_end`]) takes the same subset where the ranks
//!   agree and the whole other container otherwise;
//! - DaCe 2.0.0b1 lowers each copy to a copy node before generating code
//!   (its `InsertExplicitCopies` pass, on by default through the setting
//!   `compiler.cpu.explicit_copy`), taking the whole other container where
//!   the two element counts may be equal and the same subset where they
//!   provably differ;
//! - DaCe's older copy code, which DaCe 2.0.0b1 keeps for the copies it does
//!   not lower that way (those with a write-conflict resolution, those
//!   between element types, those into or out of a view inside a map) and
//!   uses for every copy where that setting is off, starts at the other
//!   container's first element and pairs the dimensions by heuristics:
//!   `A[4, 2:5]` into a 10 by 10 `B` lands in `B[0:3, 0]`.
//!
//! The readings agree where the other container has exactly the subset's
//! extents (dimensions of one aside): the copy fills it whole. That is the
//! common case, and the one DaCe's `auto_optimize` leaves in vadv, where
//! `bcol[__i0, __i1]` is written from the 1 by 1 register `__tmp2`, that
//! is from `__tmp2[0, 0]`, not `__tmp2[__i0, __i1]`.
//!
//! So the export writes the other subset out for every copy (where the IR
//! left it implied it says so with
//! [`IMPLIED_OTHER_MARK`](crate::export::IMPLIED_OTHER_MARK), which gives the
//! IR's SDFG back exactly), and the import makes a missing one explicit as
//! DaCe 2.0.0b1 reads it by default ([`dace_other_subset`]), refusing by
//! name where DaCe's readings differ or where it cannot tell which one DaCe
//! takes.

use sdfg_ir::node::VIEW_CONNECTOR;
use sdfg_ir::{DataDesc, DataKind, Memlet, Node, Range, Sdfg, Subset, SymExpr};
use std::cmp::Ordering;

/// The end of a copy that its memlet does not name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OtherEnd<'a> {
    /// The container at that end.
    pub container: &'a str,
    /// Whether the copy crosses a map's entry or exit (the other end is
    /// the access node inside or outside the scope) rather than joining
    /// two access nodes.
    pub through_scope: bool,
}

/// The end of the edge from `src` to `dst` that the memlet `m` does not
/// name, where the IR reads the edge as a copy; `None` for every other
/// edge (a view's edge to the container it views is not a copy).
///
/// Between two access nodes the memlet names one of them (both, within
/// one container) and the other is the other end; naming neither, its
/// subset is the destination's and the other end is the source, which is
/// how both the IR ([`Memlet::copy_subsets`]) and DaCe (`is_data_src`
/// false) read it.
pub(crate) fn other_end<'a>(
    src: &'a Node,
    dst: &'a Node,
    src_conn: Option<&str>,
    dst_conn: Option<&str>,
    m: &Memlet,
) -> Option<OtherEnd<'a>> {
    if src_conn == Some(VIEW_CONNECTOR) || dst_conn == Some(VIEW_CONNECTOR) {
        return None;
    }
    let scope = |n: &Node| matches!(n, Node::MapEntry(_) | Node::MapExit(_));
    match (src, dst) {
        (Node::Access(a), Node::Access(b)) => Some(OtherEnd {
            container: if m.data == a.data { &b.data } else { &a.data },
            through_scope: false,
        }),
        (Node::Access(a), d) if scope(d) && m.data != a.data => Some(OtherEnd {
            container: &a.data,
            through_scope: true,
        }),
        (s, Node::Access(b)) if scope(s) && m.data != b.data => Some(OtherEnd {
            container: &b.data,
            through_scope: true,
        }),
        _ => None,
    }
}

/// Whether DaCe 2.0.0b1 lowers this copy to a copy node
/// (`InsertExplicitCopies`), which reads a missing other subset by element
/// counts; the copies it leaves to its older copy code read it from the
/// other container's start instead.
fn lowered_to_copy_node(named: &DataDesc, other: &DataDesc, m: &Memlet, end: OtherEnd<'_>) -> bool {
    let array_or_scalar = |d: &DataDesc| {
        matches!(
            d.kind,
            DataKind::Scalar | DataKind::Array(_) | DataKind::View(_)
        )
    };
    let view_in_scope = end.through_scope && matches!(other.kind, DataKind::View(_));
    m.wcr.is_none()
        && named.dtype == other.dtype
        && array_or_scalar(named)
        && array_or_scalar(other)
        && !view_in_scope
}

/// Extents without the dimensions of one (which no copy pairs with
/// another dimension).
fn squeezed(extents: impl IntoIterator<Item = SymExpr>) -> Vec<SymExpr> {
    extents
        .into_iter()
        .filter(|e| e.as_int() != Some(1))
        .collect()
}

/// The other subset that DaCe 2.0.0b1 means for the copy `m` whose file
/// leaves `other_subset` out (`null`), in the coordinates of the other
/// end's container: the whole of it where the element counts are equal
/// (`__tmp2[0:1, 0:1]` for vadv's register), the memlet's own subset where
/// they provably differ (`A[2:5]` into a `B` of 10 elements lands in
/// `B[2:5]`; DaCe's older copy code would write `B[0:3]`).
///
/// Refused, with the reason: counts that the IR's canonical form can
/// neither prove equal nor prove different (DaCe decides with sympy's
/// assumptions, so which reading it takes cannot be told); counts that
/// differ with ranks that differ (the same subset does not index the other
/// container, and DaCe's code generator fails on it); and a copy left to
/// DaCe's older copy code whose other container is not exactly the
/// subset's extents, where that code's heuristic placement and the copy
/// node's reading differ. The caller names the place in the file.
pub(crate) fn dace_other_subset(
    sdfg: &Sdfg,
    m: &Memlet,
    end: OtherEnd<'_>,
) -> Result<Subset, String> {
    let undeclared = |name: &str| format!("the container `{name}` is not declared");
    let named = sdfg.container(&m.data).ok_or_else(|| undeclared(&m.data))?;
    let other = sdfg
        .container(end.container)
        .ok_or_else(|| undeclared(end.container))?;
    let shape = other.shape();
    let whole = Subset::full(&shape);
    let fills_other = squeezed(m.subset.ranges.iter().map(Range::num_elements))
        == squeezed(shape.iter().cloned());
    let missing = format!(
        "the copy between `{}[{}]` and `{}` leaves the subset of `{}` out (`other_subset` is null)",
        m.data, m.subset, end.container, end.container
    );
    if !fills_other && !lowered_to_copy_node(named, other, m, end) {
        return Err(format!(
            "{missing}, and DaCe copies it with its older copy code (a write-conflict resolution, element types that differ, or a view inside a map), which starts at the first element of `{}` and pairs dimensions by heuristics where DaCe's copy nodes read it by element counts; the two readings differ unless the subset has the extents of `{}`, which it does not",
            end.container, end.container
        ));
    }
    let (count, other_count) = (m.subset.num_elements(), whole.num_elements());
    match count.try_compare(&other_count) {
        Some(Ordering::Equal) => Ok(whole),
        Some(_) if m.subset.rank() == shape.len() => Ok(m.subset.clone()),
        Some(_) => Err(format!(
            "{missing}: DaCe then takes the same subset in `{}`, whose rank differs ({} against {}), and its code generator fails on that copy",
            end.container,
            shape.len(),
            m.subset.rank()
        )),
        None => Err(format!(
            "{missing}: DaCe then copies into the whole of `{}` where the element counts ({count} and {other_count}) may be equal and into the same subset where they differ, deciding with sympy's assumptions, and the import cannot tell which",
            end.container
        )),
    }
}
