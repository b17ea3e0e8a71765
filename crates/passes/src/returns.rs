//! Return values in place: `return y` computes `y` into the return value
//! itself instead of copying it there.
//!
//! The frontend lowers `return y` to a state copying the transient `y`
//! into `__return` element by element (a map of `__return[i] = y[i]`, or
//! one tasklet for a scalar): on a device an extra kernel per return value,
//! after which `y` is dead. When that copy is the only access of
//! `__return`, it stands at the top level of the SDFG, `y` is a transient
//! (not a view) of the same type, shape and layout, nothing after the copy
//! touches `y` and no interstate code reads it, the copy is removed and
//! `y` is renamed `__return` everywhere (its nested SDFGs' connectors keep
//! their inner names). The same holds for `__return_0`, `__return_1`, ...

use crate::dependence::RegionUse;
use crate::nest::{copy_tasklet, single_map};
use sdfg_ir::{BlockKind, Node, Range, Sdfg, State, Subset, SymExpr};
use std::collections::BTreeSet;

/// Writes every return value it can in place (see the [module
/// docs](self)); returns one line per return value (`y` as `__return`).
pub fn returns_in_place(sdfg: &mut Sdfg) -> Vec<String> {
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

/// Whether `name` is a return value's container.
fn is_return(name: &str) -> bool {
    name == "__return"
        || name
            .strip_prefix("__return_")
            .is_some_and(|n| n.parse::<u64>().is_ok())
}

/// The (source, return value) of top-level block `k`, if it is a whole copy
/// of a dead transient into a return value that nothing else writes.
fn copy_of(sdfg: &Sdfg, k: usize, symbols: &BTreeSet<String>) -> Option<(String, String)> {
    let block = &sdfg.body.blocks[k];
    let BlockKind::State(state) = &block.kind else {
        return None;
    };
    let (x, r, extents) = element_copy(state)?;
    let (dx, dr) = (sdfg.containers.get(&x)?, sdfg.containers.get(&r)?);
    if !is_return(&r)
        || !dx.transient
        || dx.is_view()
        || dx.dtype != dr.dtype
        || dx.shape() != dr.shape()
        || dx.layout() != dr.layout()
        || dx.is_scalar() != dr.is_scalar()
        || extents.is_some_and(|e| e != dr.shape())
    {
        return None;
    }
    let whole = RegionUse::of(&sdfg.body, symbols);
    let here = RegionUse::of_block(block, symbols);
    if whole.container_outside(&here, &r) {
        return None;
    }
    if whole.accesses.iter().any(|a| a.data == x && a.interstate) {
        return None;
    }
    let after = sdfg.body.blocks[k + 1..].iter().any(|b| {
        RegionUse::of_block(b, symbols)
            .accesses
            .iter()
            .any(|a| a.data == x)
    });
    (!after).then_some((x, r))
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
