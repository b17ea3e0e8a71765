//! Windows: where a nested SDFG's container lies in the container its
//! connector is bound to.
//!
//! The IR binds a nested SDFG's connector to the region its memlet selects
//! (the simulator's binding, DaCe's convention before 2.0): the inner
//! container's index `i` in a dimension is the outer index `begin + i *
//! step` of the window's dimension it stands for. The inner container has
//! the window's dimensions (same rank), or those that are not single
//! indices, or (one element) none. Inlining a nested SDFG composes its
//! memlets with the window; the export to DaCe 2.0, whose connectors are
//! whole arrays, does the same inside the nested SDFG.

use crate::memlet::{Memlet, Range, Subset};
use crate::symbolic::SymExpr;
use std::collections::{BTreeMap, BTreeSet};

/// Where a nested SDFG's container lives in the container its connector is
/// bound to: that container and, per dimension of it, a fixed index or the
/// next of the inner container's dimensions, scaled and shifted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// The outer container.
    pub data: String,
    /// Per dimension of it, what indexes it.
    pub dims: Vec<Dim>,
    /// Every dimension the inner one's own from 0, step 1: indices unchanged.
    identity: bool,
}

/// One dimension of the outer container in a [`Window`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dim {
    /// A single index.
    Fixed(SymExpr),
    /// The inner container's next dimension, from `begin` in steps of `step`.
    Mapped {
        /// The window's first index.
        begin: SymExpr,
        /// Its step.
        step: SymExpr,
    },
}

impl Window {
    /// The whole container `data` of rank `rank`, indexed as it is.
    pub fn whole(data: String, rank: usize) -> Window {
        Window {
            data,
            dims: (0..rank)
                .map(|_| Dim::Mapped {
                    begin: SymExpr::int(0),
                    step: SymExpr::int(1),
                })
                .collect(),
            identity: true,
        }
    }

    /// The window `subset` of `data` bound to a callee's container of
    /// shape `inner`: the callee's dimensions are the window's (same rank),
    /// or its dimensions that are not single indices, or (a callee's one
    /// element) none.
    pub fn bound(data: &str, subset: &Subset, inner: &[SymExpr]) -> Option<Window> {
        let mapped = |r: &Range| Dim::Mapped {
            begin: r.begin.clone(),
            step: r.step.clone(),
        };
        let ranges = &subset.ranges;
        let dims: Vec<Dim> = if inner.len() == ranges.len() {
            ranges.iter().map(mapped).collect()
        } else if inner.len() == ranges.iter().filter(|r| !r.is_index()).count() {
            ranges
                .iter()
                .map(|r| {
                    if r.is_index() {
                        Dim::Fixed(r.begin.clone())
                    } else {
                        mapped(r)
                    }
                })
                .collect()
        } else if inner.iter().all(|e| e.as_int() == Some(1)) && ranges.iter().all(Range::is_index)
        {
            ranges.iter().map(|r| Dim::Fixed(r.begin.clone())).collect()
        } else {
            return None;
        };
        let identity = dims.iter().all(|d| {
            matches!(d, Dim::Mapped { begin, step } if begin.is_zero() && step.as_int() == Some(1))
        });
        Some(Window {
            data: data.to_owned(),
            dims,
            identity,
        })
    }

    /// This window of a view, seen through the window `view` by which the
    /// view shows its container: one window of that container.
    pub fn through(&self, view: &Window) -> Window {
        let mut next = self.dims.iter();
        let dims: Vec<Dim> = view
            .dims
            .iter()
            .map(|d| match d {
                Dim::Fixed(i) => Dim::Fixed(i.clone()),
                Dim::Mapped { begin, step } => match next.next() {
                    Some(Dim::Fixed(i)) => Dim::Fixed(begin + &(i * step)),
                    Some(Dim::Mapped { begin: b, step: s }) => Dim::Mapped {
                        begin: begin + &(b * step),
                        step: s * step,
                    },
                    None => Dim::Fixed(begin.clone()),
                },
            })
            .collect();
        let identity = dims.len() == self.dims.len()
            && dims.iter().all(|d| {
                matches!(d, Dim::Mapped { begin, step } if begin.is_zero() && step.as_int() == Some(1))
            });
        Window {
            data: view.data.clone(),
            dims,
            identity,
        }
    }

    /// The caller's subset for the callee's `inner` subset.
    pub fn compose(&self, inner: &Subset) -> Subset {
        if self.identity {
            return inner.clone();
        }
        let mut next = inner.ranges.iter();
        Subset::new(
            self.dims
                .iter()
                .map(|d| match d {
                    Dim::Fixed(i) => Range::index(i.clone()),
                    Dim::Mapped { begin, step } => match next.next() {
                        Some(r) => Range {
                            begin: begin + &(&r.begin * step),
                            end: begin + &(&r.end * step),
                            step: &r.step * step,
                        },
                        None => Range::index(begin.clone()),
                    },
                })
                .collect(),
        )
    }

    /// The outer container's index for the inner one's `index` (one per
    /// inner dimension; none for a scalar): what a read of the inner
    /// container in interstate code reads.
    pub fn index(&self, index: &[SymExpr]) -> Vec<SymExpr> {
        self.compose(&Subset::new(
            index.iter().map(|i| Range::index(i.clone())).collect(),
        ))
        .ranges
        .into_iter()
        .map(|r| r.begin)
        .collect()
    }

    /// Whether indices pass unchanged (every dimension the inner one's,
    /// from 0, step 1).
    pub fn is_identity(&self) -> bool {
        self.identity
    }

    /// The window with symbols substituted in its indices.
    pub fn subs(&self, map: &BTreeMap<String, SymExpr>) -> Window {
        Window {
            data: self.data.clone(),
            dims: self
                .dims
                .iter()
                .map(|d| match d {
                    Dim::Fixed(i) => Dim::Fixed(i.subs(map)),
                    Dim::Mapped { begin, step } => Dim::Mapped {
                        begin: begin.subs(map),
                        step: step.subs(map),
                    },
                })
                .collect(),
            identity: self.identity,
        }
    }

    /// The symbols its indices name.
    pub fn free_symbols(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for d in &self.dims {
            match d {
                Dim::Fixed(i) => out.extend(i.free_symbols()),
                Dim::Mapped { begin, step } => {
                    out.extend(begin.free_symbols());
                    out.extend(step.free_symbols());
                }
            }
        }
        out
    }
}

/// A memlet of an SDFG some of whose containers became windows of others,
/// in the windows' indices: its subset composed with its container's
/// window, and a copy's other end written out in full (its default
/// depends on ranks that windows change) and composed with the other
/// container's window. The one rule inlining a nested SDFG
/// (`sdfg-passes`' `inline-nested`) and widening its connectors to whole
/// arrays for DaCe 2.0 (`sdfg-dace-format`'s export) both follow.
///
/// `ends` are the containers of the access nodes at the edge's ends;
/// `window` gives a container's window (none where it stays as it is),
/// `shape` its shape before. The memlet keeps naming its container: the
/// caller renames it where the window's container replaces it.
pub fn compose_memlet<'w>(
    m: &mut Memlet,
    ends: (Option<&str>, Option<&str>),
    window: &dyn Fn(&str) -> Option<&'w Window>,
    shape: &dyn Fn(&str) -> Vec<SymExpr>,
) {
    let own = window(&m.data);
    let other = match ends {
        (Some(a), Some(b)) => Some(if a == m.data { b } else { a }),
        _ => None,
    };
    if let Some(o) = other {
        match window(o) {
            Some(w) => m.other_subset = Some(w.compose(&m.other_end(&shape(o)))),
            None if own.is_some() => m.other_subset = Some(m.other_end(&shape(o))),
            None => {}
        }
    }
    if let Some(w) = own {
        m.subset = w.compose(&m.subset);
    }
}
