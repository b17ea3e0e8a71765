//! Phase 2: host code inside states becomes device code.
//!
//! A tasklet at host level of a state would make the state hybrid: device
//! kernels around host code that reads their results. Host tasklets are
//! grouped into partitions: tasklets joined by a memlet (data or ordering)
//! or by an access node only host tasklets touch (which moves inside the
//! partition, so a transient passed along becomes a register). A partition
//! that a path could leave and re-enter (through a kernel, a callback or
//! other data) would have to run both before and after that path; it is
//! split into its tasklets. Each partition is wrapped in a single-thread
//! kernel (a map over `0:1`), so the data it touches can stay on the
//! device. Empty (ordering) memlets cross the new map without connectors.
//!
//! One kind of state stays on the host whole: a *host state*, sequential
//! scalar code that touches only what the host holds anyway. It holds
//! nothing but tasklets and access nodes; it writes only scalars (a scalar,
//! or an array of one element) or transients that interstate code alone
//! reads (a branch flag, a loop bound); and what it reads, no other kind of
//! state writes. The host states of an SDFG are a fixed point: a candidate
//! leaves the set when it reads a container some state outside the set
//! writes (its value would come from the device), or writes one some state
//! outside the set reads, a write-conflict resolution included (it would
//! have to go there), unless that is a scalar the accelerator's kernels
//! take by value (it goes there as a kernel argument). A state touching
//! data whose home is the device (an argument already on the GPU) is no
//! host state: its code goes to the data. What remains is host code whose scalars never cross
//! to the device, reading inputs valid on the host from the start; where
//! device code also writes what it writes, the placement walk copies the
//! device's value back only where host code reads it, as it would for any
//! container. Moving such code to the
//! device would give every statement a single-thread launch and every
//! condition a copy back (crc16's bit loop: a kernel per statement, a byte
//! back per iteration), as DaCe's GPU transformation also keeps scalar
//! tasklets on the host.

use super::locations::interstate_reads;
use super::{OffloadError, Report, for_each_state_mut};
use crate::accelerator::Accelerator;
use crate::dependence::{RegionUse, commute};
use sdfg_ir::NodeId;
use sdfg_ir::node::{MAP_IN_PREFIX, MAP_OUT_PREFIX};
use sdfg_ir::{BlockKind, Edge, Map, MapEntry, MapExit, Node, Range, Sdfg, State, SymExpr};
use std::collections::{BTreeMap, BTreeSet};

pub(crate) fn wrap_host_tasklets(
    sdfg: &mut Sdfg,
    acc: &dyn Accelerator,
    report: &mut Report,
    host_states: bool,
) -> Result<(), OffloadError> {
    let param = single_thread_param(sdfg);
    let host = if host_states {
        HostStates::of(sdfg, acc.scalars_by_value())
    } else {
        HostStates::default()
    };
    merge_device_states(sdfg, &host);
    for_each_state_mut(&mut sdfg.body, &mut |label, state| {
        if host.stays(label) {
            report.host_states.push(format!(
                "{label} (sequential scalar code on what the host holds: it writes only scalars and what interstate code reads, and reads nothing device code writes)"
            ));
            return Ok(());
        }
        for (members, name) in partitions(state)? {
            let map = Map {
                label: format!("{name}_single"),
                params: vec![param.clone()],
                ranges: vec![Range::index(SymExpr::int(0))],
                schedule: acc.kernel_schedule(),
            };
            let what = if members.len() == 1 {
                format!("host tasklet `{name}`")
            } else {
                format!("the partition of host code starting at tasklet `{name}`")
            };
            report.kernels.push(format!(
                "{} (single-thread kernel for {what}, state `{label}`)",
                map.label
            ));
            wrap(state, &members, map);
        }
        Ok(())
    })
}

/// The most ordering edges one merge of two states may add (tasklets of
/// the first times tasklets of the second): merges of small states are
/// the point; the bound keeps the pass linear.
const MAX_ORDERING_EDGES: usize = 16;

/// How many blocks a state of device tasklets may move past to meet the
/// next one: the bound keeps the pass linear.
const MAX_CROSSED: usize = 8;

/// States of device tasklets (plain host code that does not stay on the
/// host, no copies between access nodes) merge into one state, every
/// tasklet of the second ordered after every tasklet of the first by an
/// empty memlet, so that their tasklets become one partition: one
/// single-thread kernel where each statement had its own (lu's `A[i, j] -=
/// ...; A[i, j] /= A[j, j]`). Neither was a host state, so the host states
/// of the SDFG stay what they were.
///
/// The two need not be adjacent: up to [`MAX_CROSSED`] blocks may stand
/// between them (with no transition anywhere from the first to the
/// second), when the first [`commute`]s with each of them (it moves down to
/// the second) or the second does (it moves up to the first). Durbin's
/// iteration updates `beta`, launches the flip and the dot, computes
/// `alpha`, the flip and the update of `y`, and stores `y[k] = alpha`:
/// `beta` moves down past the flip and the dot, `y[k]` up past the two
/// maps that touch only `y[:k]`, and the three are one launch, not three.
fn merge_device_states(sdfg: &mut Sdfg, host: &HostStates) {
    let symbols: BTreeSet<String> = sdfg.symbols.keys().cloned().collect();
    let views: BTreeSet<&str> = sdfg
        .containers
        .iter()
        .filter(|(_, d)| d.is_view())
        .map(|(n, _)| n.as_str())
        .collect();
    let is_view = |x: &str| views.contains(x);
    let mut body = std::mem::take(&mut sdfg.body);
    body.for_each_region_mut(&mut |region| {
        let mut k = 0;
        while k < region.blocks.len() {
            match partner(region, k, host, &symbols, &is_view) {
                Some((j, up)) if merge_states(region, k, j, up) => {}
                _ => k += 1,
            }
        }
    });
    sdfg.body = body;
}

/// The tasklets of a state of device tasklets that may merge (see
/// [`merge_device_states`]); `None` for any other block.
fn device_tasklets(block: &sdfg_ir::ControlBlock, host: &HostStates) -> Option<Vec<NodeId>> {
    let BlockKind::State(s) = &block.kind else {
        return None;
    };
    if host.stays(&block.label) || plain_host_code(s).is_none() {
        return None;
    }
    // Copies between access nodes would need ordering of their own.
    let copies = s.edges().any(|(_, x, y, _)| {
        s.node(x).and_then(Node::as_access).is_some()
            && s.node(y).and_then(Node::as_access).is_some()
    });
    let tasklets = tasklets_of(s);
    (!copies && !tasklets.is_empty()).then_some(tasklets)
}

/// The tasklets of `state`.
fn tasklets_of(state: &State) -> Vec<NodeId> {
    state
        .nodes()
        .filter(|(_, n)| matches!(n, Node::Tasklet(_)))
        .map(|(id, _)| id)
        .collect()
}

/// The state block `k` merges with, if any: `(j, up)`, where `up` says the
/// second moves up to the first (else the first moves down to the second).
fn partner(
    region: &sdfg_ir::Region,
    k: usize,
    host: &HostStates,
    symbols: &BTreeSet<String>,
    is_view: &dyn Fn(&str) -> bool,
) -> Option<(usize, bool)> {
    let blocks = &region.blocks;
    let first = device_tasklets(&blocks[k], host)?;
    let mut first_use: Option<RegionUse> = None;
    let mut crossed: Vec<RegionUse> = Vec::new();
    for j in k + 1..blocks.len().min(k + 2 + MAX_CROSSED) {
        if !blocks[j - 1].transition.is_empty() {
            return None;
        }
        let mergeable = device_tasklets(&blocks[j], host)
            .is_some_and(|second| first.len() * second.len() <= MAX_ORDERING_EDGES);
        if mergeable && crossed.is_empty() {
            return Some((j, true));
        }
        let second_use = RegionUse::of_block(&blocks[j], symbols);
        if mergeable {
            let first_use =
                first_use.get_or_insert_with(|| RegionUse::of_block(&blocks[k], symbols));
            if crossed.iter().all(|c| commute(first_use, c, is_view)) {
                return Some((j, false));
            }
            if crossed.iter().all(|c| commute(&second_use, c, is_view)) {
                return Some((j, true));
            }
        }
        crossed.push(second_use);
    }
    None
}

/// Merges state `j` into state `k` (`k < j`, every transition from `k` to
/// `j - 1` empty), placing the merged state at `k` when `up`, else at `j -
/// 1`, with `j`'s transition after the last block it stood behind.
/// Returns `false`, changing nothing, unless both are states.
fn merge_states(region: &mut sdfg_ir::Region, k: usize, j: usize, up: bool) -> bool {
    let (BlockKind::State(_), BlockKind::State(_)) =
        (&region.blocks[k].kind, &region.blocks[j].kind)
    else {
        return false;
    };
    let second = region.blocks.remove(j);
    let (BlockKind::State(s1), BlockKind::State(s2)) = (&mut region.blocks[k].kind, second.kind)
    else {
        return false;
    };
    let (sinks, sources) = (tasklets_of(s1), tasklets_of(&s2));
    let mut ids = BTreeMap::new();
    for (id, n) in s2.nodes() {
        ids.insert(id, s1.add_node(n.clone()));
    }
    for (_, src, dst, e) in s2.edges() {
        s1.graph.add_edge(ids[&src], ids[&dst], e.clone());
    }
    for s in &sinks {
        for t in &sources {
            s1.graph.add_edge(*s, ids[t], Edge::empty());
        }
    }
    if up {
        region.blocks[j - 1].transition = second.transition;
    } else {
        let mut merged = region.blocks.remove(k);
        merged.transition = second.transition;
        region.blocks.insert(j - 1, merged);
    }
    true
}

/// The parameter of single-thread maps: a name no symbol or container has.
pub(crate) fn single_thread_param(sdfg: &Sdfg) -> String {
    let mut param = "__s".to_owned();
    while sdfg.symbols.contains_key(&param) || sdfg.containers.contains_key(&param) {
        param.push('_');
    }
    param
}

/// The partitions of a state's host code, each with the label of its first
/// tasklet: host-level tasklets joined through direct memlets and through
/// access nodes that only host-level tasklets touch (such an access node
/// moves inside the partition's kernel). A partition is kept only if no
/// path leaves it and comes back (through a kernel, a callback or other
/// data), so wrapping it keeps the state acyclic; otherwise its tasklets
/// are wrapped one by one.
fn partitions(state: &State) -> Result<Vec<(BTreeSet<NodeId>, String)>, OffloadError> {
    let tree = state
        .scope_tree()
        .map_err(|e| OffloadError::Invalid(e.to_string()))?;
    // Tasklets only the host can run (a clock's read) stay host code.
    let host = |n: NodeId| {
        matches!(state.node(n), Some(Node::Tasklet(t)) if !t.host_only())
            && tree.parent(n).is_none()
    };
    let tasklets: Vec<NodeId> = state
        .nodes()
        .map(|(id, _)| id)
        .filter(|n| host(*n))
        .collect();
    // Union-find over node ids.
    let mut parent: BTreeMap<NodeId, NodeId> = tasklets.iter().map(|t| (*t, *t)).collect();
    fn find(parent: &mut BTreeMap<NodeId, NodeId>, n: NodeId) -> NodeId {
        let p = parent[&n];
        if p == n {
            return n;
        }
        let root = find(parent, p);
        parent.insert(n, root);
        root
    }
    let join = |parent: &mut BTreeMap<NodeId, NodeId>, a: NodeId, b: NodeId| {
        let (ra, rb) = (find(parent, a), find(parent, b));
        if ra != rb {
            parent.insert(rb.max(ra), rb.min(ra));
        }
    };
    for (_, src, dst, _) in state.edges() {
        if host(src) && host(dst) {
            join(&mut parent, src, dst);
        }
    }
    for (id, node) in state.nodes() {
        if node.as_access().is_none() || tree.parent(id).is_some() {
            continue;
        }
        let near: Vec<NodeId> = state
            .in_edges(id)
            .map(|(_, n, _)| n)
            .chain(state.out_edges(id).map(|(_, n, _)| n))
            .collect();
        let inner = state.in_edges(id).next().is_some() && state.out_edges(id).next().is_some();
        if inner && near.iter().all(|n| host(*n)) {
            parent.insert(id, id);
            for n in near {
                join(&mut parent, id, n);
            }
        }
    }
    let mut groups: BTreeMap<NodeId, BTreeSet<NodeId>> = BTreeMap::new();
    for n in parent.keys().copied().collect::<Vec<_>>() {
        let root = find(&mut parent, n);
        groups.entry(root).or_default().insert(n);
    }
    let mut out = Vec::new();
    for members in groups.into_values() {
        let split = members.len() > 1 && leaves_and_returns(state, &members);
        let parts: Vec<BTreeSet<NodeId>> = if split {
            members
                .iter()
                .filter(|n| host(**n))
                .map(|n| BTreeSet::from([*n]))
                .collect()
        } else {
            vec![members]
        };
        for part in parts {
            let Some(first) = part.iter().copied().find(|n| host(*n)) else {
                continue;
            };
            let name = state
                .node(first)
                .map(|n| n.label().to_owned())
                .unwrap_or_default();
            out.push((part, name));
        }
    }
    Ok(out)
}

/// Whether some path leaves `members` and comes back into it.
fn leaves_and_returns(state: &State, members: &BTreeSet<NodeId>) -> bool {
    let mut stack: Vec<NodeId> = members
        .iter()
        .flat_map(|m| state.out_edges(*m).map(|(_, n, _)| n))
        .filter(|n| !members.contains(n))
        .collect();
    let mut seen: BTreeSet<NodeId> = stack.iter().copied().collect();
    while let Some(n) = stack.pop() {
        for (_, next, _) in state.out_edges(n) {
            if members.contains(&next) {
                return true;
            }
            if seen.insert(next) {
                stack.push(next);
            }
        }
    }
    false
}

/// Wraps `members` in a map scope `map`: memlets from outside enter through
/// the entry, memlets to outside leave through the exit (each on its own
/// connector pair; empty memlets without connectors), and members with no
/// way in or out get an empty memlet from the entry or to the exit.
fn wrap(state: &mut State, members: &BTreeSet<NodeId>, map: Map) {
    let entry = state.add_node(Node::MapEntry(MapEntry {
        map: map.clone(),
        in_connectors: Default::default(),
        out_connectors: Default::default(),
    }));
    let exit = state.add_node(Node::MapExit(MapExit {
        entry,
        label: map.label,
        in_connectors: Default::default(),
        out_connectors: Default::default(),
    }));
    let crossing: Vec<_> = state
        .edges()
        .filter(|(_, s, d, _)| members.contains(s) != members.contains(d))
        .map(|(e, s, d, w)| (e, s, d, w.clone()))
        .collect();
    let (mut k_in, mut k_out) = (0, 0);
    for (e, src, dst, w) in crossing {
        state.graph.remove_edge(e);
        let entering = members.contains(&dst);
        let (scope, outer, inner) = if entering {
            (entry, src, dst)
        } else {
            (exit, dst, src)
        };
        if w.memlet.is_none() {
            if entering {
                state.graph.add_edge(outer, scope, Edge::empty());
                state.graph.add_edge(scope, inner, Edge::empty());
            } else {
                state.graph.add_edge(inner, scope, Edge::empty());
                state.graph.add_edge(scope, outer, Edge::empty());
            }
            continue;
        }
        let k = if entering { &mut k_in } else { &mut k_out };
        let (cin, cout) = (
            format!("{MAP_IN_PREFIX}{k}"),
            format!("{MAP_OUT_PREFIX}{k}"),
        );
        *k += 1;
        match state.graph.node_weight_mut(scope) {
            Some(Node::MapEntry(m)) => {
                m.in_connectors.insert(cin.clone());
                m.out_connectors.insert(cout.clone());
            }
            Some(Node::MapExit(m)) => {
                m.in_connectors.insert(cin.clone());
                m.out_connectors.insert(cout.clone());
            }
            _ => {}
        }
        if entering {
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
                dst,
                Edge {
                    src_conn: Some(cout),
                    dst_conn: w.dst_conn,
                    memlet: w.memlet,
                },
            );
        } else {
            state.graph.add_edge(
                src,
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
                    dst_conn: w.dst_conn,
                    memlet: w.memlet,
                },
            );
        }
    }
    // Every member is reached from the entry and reaches the exit.
    for m in members {
        if state.in_edges(*m).next().is_none() {
            state.graph.add_edge(entry, *m, Edge::empty());
        }
        if state.out_edges(*m).next().is_none() {
            state.graph.add_edge(*m, exit, Edge::empty());
        }
    }
}

/// The host states of an SDFG (one level: a nested SDFG is a level of its
/// own), by label.
#[derive(Default)]
pub(crate) struct HostStates {
    stay: BTreeSet<String>,
}

/// What the fixed point needs of one state.
struct StateUse {
    label: String,
    reads: BTreeSet<String>,
    writes: BTreeSet<String>,
    /// Only tasklets and access nodes.
    plain: bool,
}

impl HostStates {
    /// The host states of `sdfg`; `by_value`: whether the accelerator's
    /// kernels take scalars by value (the accelerator's
    /// `scalars_by_value`), so that device code reading a scalar the host
    /// wrote costs no copy.
    pub(crate) fn of(sdfg: &Sdfg, by_value: bool) -> HostStates {
        let mut states: Vec<StateUse> = Vec::new();
        let mut interstate = BTreeSet::new();
        sdfg.walk_blocks(&mut |_, _, block| {
            interstate.extend(interstate_reads(block));
            if let BlockKind::State(state) = &block.kind {
                let (mut reads, writes) = reads_writes(state);
                // A write-conflict resolution reads what it updates.
                reads.extend(
                    state
                        .edges()
                        .filter_map(|(_, _, _, e)| e.memlet.as_ref())
                        .filter(|m| m.wcr.is_some())
                        .map(|m| m.data.clone()),
                );
                states.push(StateUse {
                    label: block.label.clone(),
                    reads,
                    writes,
                    plain: plain_host_code(state).is_some(),
                });
            }
        });
        let read_by_states: BTreeSet<&String> = states.iter().flat_map(|s| &s.reads).collect();
        // A scalar, or an array of one element (a scalar argument, a
        // returned scalar).
        let scalar = |x: &String| {
            sdfg.containers.get(x).is_some_and(|d| {
                !d.is_view()
                    && (d.is_scalar() || d.total_elements().and_then(|n| n.as_int()) == Some(1))
            })
        };
        let only_interstate = |x: &String| {
            sdfg.containers.get(x).is_some_and(|d| d.transient)
                && interstate.contains(x)
                && !read_by_states.contains(x)
        };
        // A true scalar that only host states write reaches kernels as an
        // argument: the host may compute it (a linspace's step from scalar
        // arguments) without a launch, and without a copy where kernels
        // take it by value.
        let passed = |x: &String| by_value && sdfg.containers.get(x).is_some_and(|d| d.is_scalar());
        // Data whose home is the device (arguments already on the GPU) is
        // not on the host: code on it goes to the device.
        let on_device = |x: &String| {
            sdfg.containers
                .get(x)
                .is_some_and(|d| d.storage.side() == Some(sdfg_ir::Side::Device))
        };
        let mut stay: BTreeSet<String> = states
            .iter()
            .filter(|s| {
                s.plain
                    && !s.writes.is_empty()
                    && s.writes.iter().all(|x| scalar(x) || only_interstate(x))
                    && !s.reads.iter().chain(&s.writes).any(on_device)
            })
            .map(|s| s.label.clone())
            .collect();
        loop {
            let outside = |stay: &BTreeSet<String>| {
                let (mut reads, mut writes) = (BTreeSet::new(), BTreeSet::new());
                for s in states.iter().filter(|s| !stay.contains(&s.label)) {
                    reads.extend(s.reads.iter().cloned());
                    writes.extend(s.writes.iter().cloned());
                }
                (reads, writes)
            };
            let (read_outside, written_outside) = outside(&stay);
            let leaving: Vec<String> = states
                .iter()
                .filter(|s| stay.contains(&s.label))
                .filter(|s| {
                    s.reads.iter().any(|x| written_outside.contains(x))
                        || s.writes.iter().any(|x| {
                            // Read outside: it would have to go there, but
                            // a scalar only host states write goes as a
                            // kernel argument.
                            let passed = passed(x) && !written_outside.contains(x);
                            read_outside.contains(x) && !passed
                        })
                })
                .map(|s| s.label.clone())
                .collect();
            if leaving.is_empty() {
                break;
            }
            for l in leaving {
                stay.remove(&l);
            }
        }
        HostStates { stay }
    }

    /// Whether the state labelled `label` stays on the host.
    pub(crate) fn stays(&self, label: &str) -> bool {
        self.stay.contains(label)
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

/// The containers a state reads (memlets leaving access nodes, or entering
/// a scope, or passed between code nodes) and writes (memlets entering
/// access nodes, or leaving a scope, or passed between code nodes).
fn reads_writes(state: &State) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut reads, mut writes) = (BTreeSet::new(), BTreeSet::new());
    for (_, src, dst, edge) in state.edges() {
        let Some(m) = &edge.memlet else { continue };
        let from_data = state
            .node(src)
            .is_some_and(|n| n.as_access().is_some() || matches!(n, Node::MapEntry(_)));
        let to_data = state
            .node(dst)
            .is_some_and(|n| n.as_access().is_some() || matches!(n, Node::MapExit(_)));
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
