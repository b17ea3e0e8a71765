//! Phase 2: host code inside states becomes device code.
//!
//! A tasklet at host level of a state would make the state hybrid: device
//! kernels around host code that reads their results. Each such tasklet is
//! wrapped in a single-thread kernel (a map over `0:1`), so the data it
//! touches can stay on the device. Empty (ordering) memlets into it cross
//! the new map without connectors.

use super::{OffloadError, Report, for_each_state_mut};
use crate::accelerator::Accelerator;
use sdfg_ir::node::{MAP_IN_PREFIX, MAP_OUT_PREFIX};
use sdfg_ir::{Edge, Map, MapEntry, MapExit, Node, Range, Sdfg, SymExpr};

pub(crate) fn wrap_host_tasklets(
    sdfg: &mut Sdfg,
    acc: &dyn Accelerator,
    report: &mut Report,
) -> Result<(), OffloadError> {
    let mut param = "__s".to_owned();
    while sdfg.symbols.contains_key(&param) || sdfg.containers.contains_key(&param) {
        param.push('_');
    }
    for_each_state_mut(&mut sdfg.body, &mut |label, state| {
        let tree = state
            .scope_tree()
            .map_err(|e| OffloadError::Invalid(e.to_string()))?;
        let tasklets: Vec<_> = state
            .nodes()
            .filter(|(id, n)| matches!(n, Node::Tasklet(_)) && tree.parent(*id).is_none())
            .map(|(id, n)| (id, n.label().to_owned()))
            .collect();
        for (t, name) in tasklets {
            let map = Map {
                label: format!("{name}_single"),
                params: vec![param.clone()],
                ranges: vec![Range::index(SymExpr::int(0))],
                schedule: acc.kernel_schedule(),
            };
            report.kernels.push(format!(
                "{} (single-thread kernel for host tasklet `{name}`, state `{label}`)",
                map.label
            ));
            let entry = state.add_node(Node::MapEntry(MapEntry {
                map: map.clone(),
                in_connectors: Default::default(),
                out_connectors: Default::default(),
            }));
            let exit = state.add_node(Node::MapExit(MapExit {
                entry,
                label: map.label.clone(),
                in_connectors: Default::default(),
                out_connectors: Default::default(),
            }));
            let ins: Vec<_> = state
                .in_edges(t)
                .map(|(e, src, w)| (e, src, w.clone()))
                .collect();
            let outs: Vec<_> = state
                .out_edges(t)
                .map(|(e, dst, w)| (e, dst, w.clone()))
                .collect();
            let mut data_in = false;
            for (k, (e, src, w)) in ins.into_iter().enumerate() {
                state.graph.remove_edge(e);
                if w.memlet.is_none() {
                    state.graph.add_edge(src, entry, Edge::empty());
                    continue;
                }
                data_in = true;
                let (cin, cout) = (
                    format!("{MAP_IN_PREFIX}{k}"),
                    format!("{MAP_OUT_PREFIX}{k}"),
                );
                if let Some(Node::MapEntry(m)) = state.graph.node_weight_mut(entry) {
                    m.in_connectors.insert(cin.clone());
                    m.out_connectors.insert(cout.clone());
                }
                state.graph.add_edge(
                    src,
                    entry,
                    Edge {
                        src_conn: w.src_conn.clone(),
                        dst_conn: Some(cin),
                        memlet: w.memlet.clone(),
                    },
                );
                state.graph.add_edge(
                    entry,
                    t,
                    Edge {
                        src_conn: Some(cout),
                        dst_conn: w.dst_conn.clone(),
                        memlet: w.memlet,
                    },
                );
            }
            if !data_in {
                state.graph.add_edge(entry, t, Edge::empty());
            }
            // Fix (tests/offload.rs): a tasklet without out edges left the
            // new exit unreached from inside its scope, and the pass returned
            // `OffloadError::Invalid`. Close the scope with an empty memlet.
            if outs.is_empty() {
                state.graph.add_edge(t, exit, Edge::empty());
            }
            for (k, (e, dst, w)) in outs.into_iter().enumerate() {
                state.graph.remove_edge(e);
                if w.memlet.is_none() {
                    state.graph.add_edge(t, exit, Edge::empty());
                    state.graph.add_edge(exit, dst, Edge::empty());
                    continue;
                }
                let (cin, cout) = (
                    format!("{MAP_IN_PREFIX}{k}"),
                    format!("{MAP_OUT_PREFIX}{k}"),
                );
                if let Some(Node::MapExit(m)) = state.graph.node_weight_mut(exit) {
                    m.in_connectors.insert(cin.clone());
                    m.out_connectors.insert(cout.clone());
                }
                state.graph.add_edge(
                    t,
                    exit,
                    Edge {
                        src_conn: w.src_conn.clone(),
                        dst_conn: Some(cin),
                        memlet: w.memlet.clone(),
                    },
                );
                state.graph.add_edge(
                    exit,
                    dst,
                    Edge {
                        src_conn: Some(cout),
                        dst_conn: w.dst_conn.clone(),
                        memlet: w.memlet,
                    },
                );
            }
        }
        Ok(())
    })
}
