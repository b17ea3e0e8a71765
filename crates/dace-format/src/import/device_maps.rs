//! Device maps inside device maps: what DaCe means by them, in the IR.
//!
//! GT4Py's GPU backends write a `GPU_Device` map over `K` around
//! `GPU_Device` maps over `I` and `J`. DaCe's CUDA code generator does
//! not launch the inner maps: it adds their dimensions to the outer
//! kernel's grid (`get_kernel_dimensions`), so one kernel runs every
//! `(k, j, i)` point, with a grid barrier between inner maps that follow
//! one another. The IR launches no kernel inside a kernel; it says the
//! same thing in one of two ways:
//!
//! - where the inner map is the outer map's whole body (a perfect nest)
//!   and its ranges do not read the outer map's parameters, one map over
//!   the parameters of both, outer first: the grid DaCe launches;
//! - elsewhere each inner map runs its iterations in sequence within its
//!   thread of the outer map, which computes the same values (the
//!   iterations of a parallel map are independent, which is what lets
//!   DaCe spread them over the grid), leaving the grid to the outer map.

use sdfg_ir::node::{MAP_IN_PREFIX, MAP_OUT_PREFIX};
use sdfg_ir::{BlockKind, Edge, Node, NodeId, Schedule, Sdfg, State, Storage};
use std::collections::BTreeSet;

/// Rewrites every device map nested in a device map of `state` as the
/// module documentation says.
pub(super) fn fold_nested_device_maps(state: &mut State) {
    // One rewrite at a time: a merge removes nodes the scope tree names.
    while let Some((outer, inner)) = nested_pair(state) {
        if !merge(state, outer, inner)
            && let Some(Node::MapEntry(e)) = state.graph.node_weight_mut(inner)
        {
            e.map.schedule = Schedule::Sequential;
        }
    }
}

/// A device map whose nearest enclosing map is a device map.
fn nested_pair(state: &State) -> Option<(NodeId, NodeId)> {
    let tree = state.scope_tree().ok()?;
    let device = |id: NodeId| matches!(state.node(id), Some(Node::MapEntry(e)) if e.map.schedule == Schedule::DeviceKernel);
    state
        .nodes()
        .map(|(id, _)| id)
        .filter(|&id| device(id))
        .find_map(|id| {
            let parent = tree.parent(id)?;
            device(parent).then_some((parent, id))
        })
}

/// Merges `inner` into `outer` where `inner` is `outer`'s whole body and
/// its ranges do not read `outer`'s parameters; whether it did.
fn merge(state: &mut State, outer: NodeId, inner: NodeId) -> bool {
    let (Some(outer_exit), Some(inner_exit)) = (state.exit_of(outer), state.exit_of(inner)) else {
        return false;
    };
    let Some(Node::MapEntry(o)) = state.node(outer) else {
        return false;
    };
    let Some(Node::MapEntry(i)) = state.node(inner) else {
        return false;
    };
    let reads_outer = i
        .map
        .ranges
        .iter()
        .flat_map(|r| r.free_symbols())
        .any(|s| o.map.params.contains(&s));
    // A perfect nest: the outer entry leads only to the inner entry, and
    // only the inner exit leads to the outer exit.
    let only = |from: NodeId, to: NodeId| state.out_edges(from).all(|(_, d, _)| d == to);
    let only_into = |to: NodeId, from: NodeId| state.in_edges(to).all(|(_, s, _)| s == from);
    if reads_outer || !only(outer, inner) || !only_into(outer_exit, inner_exit) {
        return false;
    }
    let (params, ranges) = (i.map.params.clone(), i.map.ranges.clone());
    // Inside: edges leaving the inner entry leave the outer entry from the
    // connector that fed the inner one; edges into the inner exit enter
    // the outer exit at the connector the inner one fed.
    let feeding: Vec<(Option<String>, Option<String>)> = state
        .in_edges(inner)
        .map(|(_, _, e)| (e.dst_conn.clone(), e.src_conn.clone()))
        .collect();
    let fed: Vec<(Option<String>, Option<String>)> = state
        .out_edges(inner_exit)
        .map(|(_, _, e)| (e.src_conn.clone(), e.dst_conn.clone()))
        .collect();
    let renamed = |pairs: &[(Option<String>, Option<String>)],
                   conn: &Option<String>,
                   from: &str,
                   to: &str| {
        let partner = conn
            .as_ref()
            .and_then(|c| c.strip_prefix(from))
            .map(|s| format!("{to}{s}"));
        pairs
            .iter()
            .find(|(c, _)| *c == partner)
            .and_then(|(_, outer)| outer.clone())
    };
    let body_out: Vec<(NodeId, Edge)> = state
        .out_edges(inner)
        .map(|(_, d, e)| (d, e.clone()))
        .collect();
    let body_in: Vec<(NodeId, Edge)> = state
        .in_edges(inner_exit)
        .map(|(_, s, e)| (s, e.clone()))
        .collect();
    for (dst, mut e) in body_out {
        e.src_conn = match &e.src_conn {
            Some(_) => renamed(&feeding, &e.src_conn, MAP_OUT_PREFIX, MAP_IN_PREFIX),
            None => None,
        };
        state.graph.add_edge(outer, dst, e);
    }
    for (src, mut e) in body_in {
        e.dst_conn = match &e.dst_conn {
            Some(_) => renamed(&fed, &e.dst_conn, MAP_IN_PREFIX, MAP_OUT_PREFIX),
            None => None,
        };
        state.graph.add_edge(src, outer_exit, e);
    }
    state.graph.remove_node(inner);
    state.graph.remove_node(inner_exit);
    if let Some(Node::MapEntry(o)) = state.graph.node_weight_mut(outer) {
        o.map.params.extend(params);
        o.map.ranges.extend(ranges);
    }
    true
}

/// What DaCe decides for `Default` storage and nested device maps once
/// an SDFG's code has a place (DaCe's `set_default_schedule_and_storage_types`,
/// which its code generator runs): inside a kernel, a nested SDFG's
/// transients live in registers and its connectors are the device data
/// the kernel was given, and a device map in it is a loop
/// of the kernel's thread (the IR launches no kernel in a kernel); a
/// transient of `Default` storage that only kernels touch lives in their
/// registers. Applied to SDFGs whose schedules are decided (DaCe's GPU
/// transformations, GT4Py's `dace:gpu`): before that, `Default` is the
/// offload pass's to decide.
pub(super) fn resolve_device_defaults(sdfg: &mut Sdfg) {
    if !sdfg.schedules_decided() {
        return;
    }
    resolve(sdfg, false);
}

fn resolve(sdfg: &mut Sdfg, on_device: bool) {
    if on_device {
        for d in sdfg.containers.values_mut() {
            if d.storage == Storage::Default {
                // As the offload pass places a nested SDFG's inside a
                // kernel: connectors are the kernel's device data (DaCe
                // refuses external data in registers), transients each
                // thread's own.
                d.storage = if d.transient {
                    Storage::Register
                } else {
                    Storage::DeviceGlobal
                };
            }
        }
    }
    // Per container: whether some access runs on the host.
    let mut on_host: BTreeSet<String> = BTreeSet::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    sdfg.body.for_each_region_mut(&mut |r| {
        for b in &mut r.blocks {
            let BlockKind::State(s) = &mut b.kind else {
                continue;
            };
            let Ok(tree) = s.scope_tree() else { continue };
            // Where each node runs: on the host, in a kernel, or in a
            // persistent kernel (whose nested SDFG's top-level maps are
            // the grid's, shared by its threads: left as they are).
            let places: Vec<(NodeId, bool, bool)> = s
                .nodes()
                .map(|(id, _)| {
                    let persistent = tree.ancestors(id).into_iter().any(|e| {
                        matches!(s.node(e), Some(Node::MapEntry(m)) if m.map.schedule == Schedule::DevicePersistent)
                    });
                    (id, on_device || tree.inside_device_map(s, id), persistent)
                })
                .collect();
            for (id, device, persistent) in places {
                match s.graph.node_weight_mut(id) {
                    Some(Node::Access(a)) => {
                        seen.insert(a.data.clone());
                        if !device {
                            on_host.insert(a.data.clone());
                        }
                    }
                    Some(Node::NestedSdfg(n)) if device && !persistent => {
                        demote_device_maps(&mut n.sdfg);
                        resolve(&mut n.sdfg, true);
                    }
                    _ => {}
                }
            }
        }
    });
    if !on_device {
        for (name, d) in &mut sdfg.containers {
            if d.transient
                && d.storage == Storage::Default
                && seen.contains(name)
                && !on_host.contains(name)
            {
                d.storage = Storage::Register;
            }
        }
    }
}

/// Every device map of `sdfg` (run inside a kernel) as a loop of the
/// kernel's thread, nested SDFGs included.
fn demote_device_maps(sdfg: &mut Sdfg) {
    sdfg.body.for_each_region_mut(&mut |r| {
        for b in &mut r.blocks {
            if let BlockKind::State(s) = &mut b.kind {
                for n in s.graph.node_weights_mut() {
                    match n {
                        Node::MapEntry(e) if e.map.schedule.is_device() => {
                            e.map.schedule = Schedule::Sequential;
                        }
                        Node::NestedSdfg(n) => demote_device_maps(&mut n.sdfg),
                        _ => {}
                    }
                }
            }
        }
    });
}
