//! Phase 2b: states in which host code and device code touch one container.
//!
//! After the [`partitions`](super::partitions), the host code left in a
//! state beside device code is what cannot run on a device: callbacks, and
//! maps that stay on the host. (Host tasklets there became one-point device
//! maps, as DaCe's GPU transformation wraps them.) Where such host code and
//! device code touch one container, no copy could sit between them, so the
//! state is split in dataflow order, as DaCe's pass splits it:
//!
//! - each top-level unit of the state (a map scope, a code node) gets a
//!   level: the longest dataflow path to it, counting a step wherever the
//!   path passes from code on one side to code on the other;
//! - each (level, side) becomes a state of its own, in that order (host
//!   before device within a level: the two are independent there), holding
//!   its units and the access nodes they use;
//! - the placement walk then puts whatever copies are needed between them.
//!
//! A state with copies between access nodes or views, or with data passed
//! directly from code on one side to code on the other, is left whole
//! (where the copy or the view would go, or which container would carry
//! the data, is not decided here); if host and device code still share a
//! container in it, the placement walk refuses it, naming the container
//! and the state.

use super::Report;
use sdfg_ir::{BlockKind, ControlBlock, Node, NodeId, Sdfg, State, VIEW_CONNECTOR};
use std::collections::{BTreeMap, BTreeSet};

/// Splits every mixed state of `sdfg` (not of SDFGs nested in it), naming
/// each split in the report.
pub(crate) fn split_mixed_states(sdfg: &mut Sdfg, report: &mut Report) {
    let mut labels: BTreeSet<String> = BTreeSet::new();
    sdfg.walk_blocks(&mut |_, _, b| {
        labels.insert(b.label.clone());
    });
    sdfg.body.for_each_region_mut(&mut |region| {
        let blocks = std::mem::take(&mut region.blocks);
        for mut block in blocks {
            let parts = match &block.kind {
                BlockKind::State(state) => split(state),
                _ => None,
            };
            let Some((parts, shared)) = parts else {
                region.blocks.push(block);
                continue;
            };
            report.split_states.push(format!(
                "{} into {} states (host code and device code share {})",
                block.label,
                parts.len(),
                shared
                    .iter()
                    .map(|x| format!("`{x}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            let transition = std::mem::take(&mut block.transition);
            let count = parts.len();
            for (k, part) in parts.into_iter().enumerate() {
                let label = if k == 0 {
                    block.label.clone()
                } else {
                    fresh(&mut labels, &format!("{}_part{k}", block.label))
                };
                let mut b = ControlBlock::new(label, BlockKind::State(part));
                if k + 1 == count {
                    b.transition = transition.clone();
                }
                region.blocks.push(b);
            }
        }
    });
}

fn fresh(labels: &mut BTreeSet<String>, base: &str) -> String {
    let mut label = base.to_owned();
    let mut k = 1;
    while labels.contains(&label) {
        label = format!("{base}_{k}");
        k += 1;
    }
    labels.insert(label.clone());
    label
}

/// The states `state` splits into, in order, and the containers host and
/// device code shared in it; `None` where it stays whole.
fn split(state: &State) -> Option<(Vec<State>, BTreeSet<String>)> {
    let tree = state.scope_tree().ok()?;
    // The top-level unit of each node (access nodes have none).
    let unit_of = |n: NodeId| -> Option<NodeId> {
        match state.node(n)? {
            Node::Access(_) => None,
            _ => Some(tree.ancestors(n).last().copied().unwrap_or(n)),
        }
    };
    let on_device = |u: NodeId| {
        matches!(state.node(u), Some(Node::NestedSdfg(_))) || tree.runs_on_device(state, u)
    };
    // Which sides' code touches each container.
    let mut sides: BTreeMap<&str, BTreeSet<bool>> = BTreeMap::new();
    for (_, src, dst, e) in state.edges() {
        let (a, b) = (state.node(src)?, state.node(dst)?);
        if a.as_access().is_some() && b.as_access().is_some() {
            return None; // a copy: left whole
        }
        if [&e.src_conn, &e.dst_conn]
            .into_iter()
            .any(|c| c.as_deref() == Some(VIEW_CONNECTOR))
        {
            return None; // a view: left whole
        }
        let names = [
            a.as_access(),
            b.as_access(),
            e.memlet.as_ref().map(|m| m.data.as_str()),
        ];
        for code in [unit_of(src), unit_of(dst)].into_iter().flatten() {
            for x in names.into_iter().flatten() {
                sides.entry(x).or_default().insert(on_device(code));
            }
        }
    }
    let shared: BTreeSet<String> = sides
        .iter()
        .filter(|(_, s)| s.len() > 1)
        .map(|(x, _)| (*x).to_owned())
        .collect();
    if shared.is_empty() {
        return None;
    }
    // Dependencies between units: directly, or through an access node.
    let order = state.topological_order()?;
    let mut preds: BTreeMap<NodeId, BTreeSet<NodeId>> = BTreeMap::new();
    let mut writers: BTreeMap<NodeId, BTreeSet<NodeId>> = BTreeMap::new();
    for &n in &order {
        if state.node(n)?.as_access().is_some() {
            for (_, src, _) in state.in_edges(n) {
                writers.entry(n).or_default().extend(unit_of(src));
            }
            continue;
        }
        let Some(u) = unit_of(n) else { continue };
        for (_, src, _) in state.in_edges(n) {
            let from: BTreeSet<NodeId> = match unit_of(src) {
                Some(p) => [p].into(),
                None => writers.get(&src).cloned().unwrap_or_default(),
            };
            preds
                .entry(u)
                .or_default()
                .extend(from.into_iter().filter(|p| *p != u));
        }
    }
    // Levels, in topological order of the units.
    let mut level: BTreeMap<NodeId, usize> = BTreeMap::new();
    for &n in &order {
        let Some(u) = unit_of(n) else { continue };
        if level.contains_key(&u) && u != n {
            continue;
        }
        let l = preds
            .get(&u)
            .into_iter()
            .flatten()
            .filter_map(|p| {
                level
                    .get(p)
                    .map(|l| l + usize::from(on_device(*p) != on_device(u)))
            })
            .max()
            .unwrap_or(0);
        let e = level.entry(u).or_insert(0);
        *e = (*e).max(l);
    }
    // (level, side) of each unit: the part it goes to.
    let keys: BTreeSet<(usize, bool)> = level.iter().map(|(u, l)| (*l, on_device(*u))).collect();
    if keys.len() < 2 {
        return None;
    }
    let part_of_unit = |u: NodeId| -> usize {
        let key = (level.get(&u).copied().unwrap_or(0), on_device(u));
        keys.iter().position(|k| *k == key).unwrap_or(0)
    };
    let mut parts: Vec<State> = (0..keys.len()).map(|_| State::new()).collect();
    let mut ids: Vec<BTreeMap<NodeId, NodeId>> = vec![BTreeMap::new(); keys.len()];
    // Nodes in their original order; an access node in every part that
    // uses it.
    for (n, node) in state.nodes() {
        let homes: BTreeSet<usize> = match unit_of(n) {
            Some(u) => [part_of_unit(u)].into(),
            None => state
                .in_edges(n)
                .map(|(_, m, _)| m)
                .chain(state.out_edges(n).map(|(_, m, _)| m))
                .filter_map(|m| unit_of(m).map(part_of_unit))
                .collect(),
        };
        for p in homes {
            let id = parts[p].add_node(node.clone());
            ids[p].insert(n, id);
        }
    }
    for (_, src, dst, e) in state.edges() {
        let p = part_of_unit(unit_of(src).or(unit_of(dst))?);
        let (Some(&a), Some(&b)) = (ids[p].get(&src), ids[p].get(&dst)) else {
            // Between units of different parts: an empty memlet only
            // orders them, which the parts' sequence does; data passed
            // from code to code directly has no container to cross in.
            if e.memlet.is_some() {
                return None;
            }
            continue;
        };
        parts[p].graph.add_edge(a, b, e.clone());
    }
    Some((parts, shared))
}
