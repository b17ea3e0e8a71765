//! Phase 2: host code inside states becomes device code.
//!
//! A tasklet at host level of a state would make the state hybrid: device
//! kernels around host code that reads their results. Each such tasklet is
//! wrapped in a single-thread kernel (a map over `0:1`), so the data it
//! touches can stay on the device. Empty (ordering) memlets into it cross
//! the new map without connectors.
//!
//! One kind of state stays on the host whole: a *host state*, holding
//! nothing but tasklets and access nodes, computing only transients that
//! interstate code alone reads (a branch flag, a loop bound) from data no
//! state writes. Moving it to the device would only add a copy back of its
//! result for the condition every time it runs.

use super::locations::interstate_reads;
use super::{OffloadError, Report, for_each_state_mut};
use crate::accelerator::Accelerator;
use sdfg_ir::node::{MAP_IN_PREFIX, MAP_OUT_PREFIX};
use sdfg_ir::{BlockKind, Edge, Map, MapEntry, MapExit, Node, Range, Sdfg, State, SymExpr};
use std::collections::BTreeSet;

pub(crate) fn wrap_host_tasklets(
    sdfg: &mut Sdfg,
    acc: &dyn Accelerator,
    report: &mut Report,
) -> Result<(), OffloadError> {
    let mut param = "__s".to_owned();
    while sdfg.symbols.contains_key(&param) || sdfg.containers.contains_key(&param) {
        param.push('_');
    }
    let host = HostStates::of(sdfg);
    for_each_state_mut(&mut sdfg.body, &mut |label, state| {
        if host.stays(plain_host_code(state)) {
            report.host_states.push(format!(
                "{label} (computes only what interstate code reads, from data no state writes)"
            ));
            return Ok(());
        }
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

/// What decides whether a state is a host state.
struct HostStates {
    /// Containers some state writes (or passes between code nodes).
    written: BTreeSet<String>,
    /// Containers some state reads.
    read: BTreeSet<String>,
    /// Containers interstate code reads.
    interstate: BTreeSet<String>,
    /// Transient containers.
    transients: BTreeSet<String>,
}

impl HostStates {
    fn of(sdfg: &Sdfg) -> HostStates {
        let mut h = HostStates {
            written: BTreeSet::new(),
            read: BTreeSet::new(),
            interstate: BTreeSet::new(),
            transients: sdfg
                .containers
                .iter()
                .filter(|(_, d)| d.transient)
                .map(|(x, _)| x.clone())
                .collect(),
        };
        sdfg.walk_blocks(&mut |_, _, block| {
            h.interstate.extend(interstate_reads(block));
            if let BlockKind::State(state) = &block.kind {
                let (r, w) = reads_writes(state);
                h.read.extend(r);
                h.written.extend(w);
            }
        });
        h
    }

    /// Whether `state` (its reads and writes, if it is plain host code)
    /// stays on the host.
    fn stays(&self, plain: Option<(BTreeSet<String>, BTreeSet<String>)>) -> bool {
        let Some((reads, writes)) = plain else {
            return false;
        };
        !writes.is_empty()
            && writes.iter().all(|x| {
                self.transients.contains(x) && self.interstate.contains(x) && !self.read.contains(x)
            })
            && reads.iter().all(|x| !self.written.contains(x))
    }
}

/// The reads and writes of a state made only of tasklets and access nodes
/// (no scopes, library calls, nested SDFGs or callbacks); `None` otherwise.
fn plain_host_code(state: &State) -> Option<(BTreeSet<String>, BTreeSet<String>)> {
    let plain = state
        .nodes()
        .all(|(_, n)| matches!(n, Node::Tasklet(_) | Node::Access(_)));
    plain.then(|| reads_writes(state))
}

/// The containers a state reads (memlets leaving access nodes or passed
/// between code nodes) and writes (memlets entering access nodes or passed
/// between code nodes).
fn reads_writes(state: &State) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut reads, mut writes) = (BTreeSet::new(), BTreeSet::new());
    for (_, src, dst, edge) in state.edges() {
        let Some(m) = &edge.memlet else { continue };
        let from_data = state.node(src).and_then(Node::as_access).is_some();
        let to_data = state.node(dst).and_then(Node::as_access).is_some();
        if from_data || !to_data {
            reads.insert(m.data.clone());
        }
        if to_data || !from_data {
            writes.insert(m.data.clone());
        }
        // A copy between two containers names one; the other end is the
        // access node's own.
        if let (Some(a), Some(b)) = (
            state.node(src).and_then(Node::as_access),
            state.node(dst).and_then(Node::as_access),
        ) {
            reads.insert(a.to_owned());
            writes.insert(b.to_owned());
        }
    }
    (reads, writes)
}
