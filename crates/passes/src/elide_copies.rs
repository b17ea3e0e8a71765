//! Copy elision: `y = x`, where `x` is a temporary that is dead after
//! the copy, computes `x` into `y` itself instead of copying it there.
//!
//! The frontend lowers `return x` to a state copying the transient `x`
//! into `__return` element by element (a map of `__return[i] = x[i]`, or
//! one tasklet for a scalar), and an assignment of a whole temporary into
//! an array (`y[:] = t`) the same way: on a device an extra kernel each,
//! after which `x` is dead. This is what DaCe's
//! `RedundantArray` removes.
//!
//! The copy goes, and `x` is renamed `y` everywhere (its nested SDFGs'
//! connectors keep their inner names), when
//! - the copy is a state of its own at the top level of the SDFG, copying
//!   all of `x` into all of `y` (same type, shape and layout; neither a
//!   view);
//! - `x` is a transient that nothing after the copy touches and no
//!   interstate code reads: its last value is the one copied;
//! - nothing before the copy touches `y`, nor reads it in interstate code:
//!   until the copy, `y`'s memory is free to hold `x`. An argument the
//!   program only overwrites qualifies when no `return` before the copy
//!   can leave it holding part of `x`; one it reads first does not.
//!
//! Because the copy stands at the top level, "before" and "after" are the
//! blocks in front of it and behind it: no loop runs it twice.

use crate::dependence::RegionUse;
use crate::nest::{copy_tasklet, single_map};
use sdfg_ir::{BlockKind, Node, Range, Sdfg, State, Subset, SymExpr};
use std::collections::BTreeSet;

/// Removes every copy it can (see the [module docs](self)); returns one
/// line per copy (`` `x` as `y` ``).
pub fn elide_copies(sdfg: &mut Sdfg) -> Vec<String> {
    let symbols: BTreeSet<String> = sdfg.symbols.keys().cloned().collect();
    let mut done = Vec::new();
    let mut k = 0;
    while k < sdfg.body.blocks.len() {
        let Some((x, r)) = copy_of(sdfg, k, &symbols) else {
            k += 1;
            continue;
        };
        rename(sdfg, &x, &r);
        let block = &mut sdfg.body.blocks[k];
        if block.transition.is_empty() {
            sdfg.body.blocks.remove(k);
        } else {
            block.kind = BlockKind::State(State::new());
            k += 1;
        }
        sdfg.containers.remove(&x);
        done.push(format!("`{x}` as `{r}`"));
    }
    done
}

/// The (source, destination) of top-level block `k`, if it is a whole
/// copy of a transient dead after it into a container free before it.
fn copy_of(sdfg: &Sdfg, k: usize, symbols: &BTreeSet<String>) -> Option<(String, String)> {
    let block = &sdfg.body.blocks[k];
    let BlockKind::State(state) = &block.kind else {
        return None;
    };
    let (x, y, extents) = element_copy(state)?;
    let (dx, dy) = (sdfg.containers.get(&x)?, sdfg.containers.get(&y)?);
    if x == y
        || !dx.transient
        || dx.is_view()
        || dy.is_view()
        || dx.dtype != dy.dtype
        || dx.shape() != dy.shape()
        || dx.layout() != dy.layout()
        || dx.is_scalar() != dy.is_scalar()
        || extents.is_some_and(|e| e != dy.shape())
    {
        return None;
    }
    let uses = |blocks: &[sdfg_ir::ControlBlock], data: &str| {
        blocks.iter().any(|b| {
            RegionUse::of_block(b, symbols)
                .accesses
                .iter()
                .any(|a| a.data == data)
        })
    };
    let interstate = RegionUse::of(&sdfg.body, symbols)
        .accesses
        .iter()
        .any(|a| a.data == x && a.interstate);
    let before = &sdfg.body.blocks[..k];
    // An argument is the caller's: it may take `x`'s values early only if
    // every run reaches the copy (no `return` before it).
    let returns_early = || {
        before
            .iter()
            .any(|b| RegionUse::of_block(b, symbols).jumps.contains(&"return"))
    };
    let free = !uses(before, &y) && (dy.transient || !returns_early());
    (free && !interstate && !uses(&sdfg.body.blocks[k + 1..], &x)).then_some((x, y))
}

/// The (source, destination, the map's extents) of a state that copies one
/// container into another, element by element, with one tasklet `out = in`:
/// inside a map from 0 over some extents (the caller compares them with
/// the shape), or alone at element 0.
fn element_copy(state: &State) -> Option<(String, String, Option<Vec<SymExpr>>)> {
    let tasklets: Vec<_> = state.nodes().filter(|(_, n)| n.is_code()).collect();
    let [(t, Node::Tasklet(_))] = tasklets.as_slice() else {
        return None;
    };
    let (src, mi, dst, mo) = copy_tasklet(state, *t)?;
    if mi.subset != mo.subset {
        return None;
    }
    // The element each point copies: the map's parameters in order over
    // its whole shape, or element 0 of a scalar.
    let mut extents = None;
    let covers_all = match single_map(state) {
        Some((entry, _)) => {
            let Some(Node::MapEntry(e)) = state.node(entry) else {
                return None;
            };
            let at = Subset::at(e.map.params.iter().map(SymExpr::symbol).collect());
            let shape: Vec<SymExpr> = e.map.ranges.iter().map(|r| r.end.clone() + 1).collect();
            let full = e
                .map
                .ranges
                .iter()
                .zip(&shape)
                .all(|(r, s)| *r == Range::full(s));
            extents = Some(shape);
            full && mi.subset == at
                && state
                    .node(src)
                    .is_some_and(|n| matches!(n, Node::MapEntry(_)))
        }
        None => {
            mi.subset
                .ranges
                .iter()
                .all(|r| r.is_index() && r.begin.is_zero())
                && state.node(src).and_then(Node::as_access).is_some()
                && state.node(dst).and_then(Node::as_access).is_some()
        }
    };
    covers_all.then(|| (mi.data.clone(), mo.data.clone(), extents))
}

/// Renames container `from` to `to` in every state of `sdfg` (not inside
/// nested SDFGs, whose connectors keep their names).
fn rename(sdfg: &mut Sdfg, from: &str, to: &str) {
    sdfg.body.for_each_region_mut(&mut |region| {
        for block in &mut region.blocks {
            let BlockKind::State(state) = &mut block.kind else {
                continue;
            };
            for n in state.graph.node_weights_mut() {
                if let Node::Access(a) = n
                    && a.data == from
                {
                    a.data = to.to_owned();
                }
            }
            for e in state.graph.edge_weights_mut() {
                if let Some(m) = &mut e.memlet
                    && m.data == from
                {
                    m.data = to.to_owned();
                }
            }
        }
    });
}
