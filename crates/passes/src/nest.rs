//! Nesting a region in a map: the rewrite loop-to-map and the offload
//! pass's single-thread loops share.

use sdfg_ir::code::{Expr, Stmt};
use sdfg_ir::node::{MAP_IN_PREFIX, MAP_OUT_PREFIX};
use sdfg_ir::{
    BlockKind, ControlBlock, Edge, Map, MapEntry, MapExit, Memlet, NestedSdfg, Node, NodeId, Range,
    Region, Schedule, Sdfg, State, Subset, SymExpr,
};
use std::collections::{BTreeMap, BTreeSet};

/// The outer symbols a nested body needs mapped: those it names (but
/// assigns nowhere inside) and those in the shapes and layouts of the
/// containers it gets.
pub(crate) fn mapped_symbols<'a>(
    sdfg: &Sdfg,
    inside: &crate::dependence::RegionUse,
    containers: impl IntoIterator<Item = &'a String>,
) -> BTreeSet<String> {
    let mut mapped: BTreeSet<String> = inside
        .symbols
        .keys()
        .filter(|s| sdfg.symbols.contains_key(*s) && !inside.assigned.contains(*s))
        .cloned()
        .collect();
    for x in containers {
        if let Some(d) = sdfg.containers.get(x) {
            mapped.extend(
                d.free_symbols()
                    .into_iter()
                    .filter(|s| !inside.assigned.contains(s)),
            );
        }
    }
    mapped
}

/// Calls `f` on every loop of `region`, outermost first, in program order;
/// where `f` returns true (it rewrote the loop), the walk does not go into
/// it. The traversal loop-to-map, loop sinking and the single-thread loops
/// share.
pub(crate) fn rewrite_loops(region: &mut Region, f: &mut dyn FnMut(&mut ControlBlock) -> bool) {
    for block in &mut region.blocks {
        if matches!(block.kind, BlockKind::Loop(_)) && f(block) {
            continue;
        }
        match &mut block.kind {
            BlockKind::Loop(l) => rewrite_loops(&mut l.body, f),
            BlockKind::Conditional(c) => {
                for (_, r) in &mut c.branches {
                    rewrite_loops(r, f);
                }
                if let Some(r) = &mut c.otherwise {
                    rewrite_loops(r, f);
                }
            }
            BlockKind::State(_) | BlockKind::Break | BlockKind::Continue | BlockKind::Return => {}
        }
    }
}

/// A tasklet whose code is `out = in`, one edge in and one out, no
/// write-conflict resolution, plain values of one type on both connectors:
/// (its source node, input memlet, destination node, output memlet). The
/// element copies of array assignments, which return values in place and
/// copy maps look for.
pub(crate) fn copy_tasklet(state: &State, t: NodeId) -> Option<(NodeId, Memlet, NodeId, Memlet)> {
    let Some(Node::Tasklet(tasklet)) = state.node(t) else {
        return None;
    };
    let [
        Stmt::Assign {
            target,
            value: Expr::Var(v),
        },
    ] = tasklet.body.as_slice()
    else {
        return None;
    };
    let cin = tasklet.inputs.iter().find(|c| &c.name == v)?;
    let cout = tasklet.outputs.iter().find(|c| &c.name == target)?;
    if cin.dtype != cout.dtype || cin.pointer || cout.pointer {
        return None;
    }
    let ins: Vec<_> = state.in_edges(t).collect();
    let outs: Vec<_> = state.out_edges(t).collect();
    let ([(_, src, ei)], [(_, dst, eo)]) = (ins.as_slice(), outs.as_slice()) else {
        return None;
    };
    let (mi, mo) = (ei.memlet.clone()?, eo.memlet.clone()?);
    if ei.dst_conn.as_deref() != Some(v.as_str())
        || eo.src_conn.as_deref() != Some(target.as_str())
        || mi.wcr.is_some()
        || mo.wcr.is_some()
    {
        return None;
    }
    Some((*src, mi, *dst, mo))
}

/// The one map at the top level of a state (its entry and exit), when the
/// state holds nothing else but access nodes connected to it: the shape of
/// a state the frontend makes for one array statement, which loop sinking,
/// map fusion and return values in place look for.
pub(crate) fn single_map(state: &State) -> Option<(NodeId, NodeId)> {
    let tree = state.scope_tree().ok()?;
    let mut entry = None;
    for (id, n) in state.nodes() {
        if tree.parent(id).is_some() {
            continue;
        }
        match n {
            Node::MapEntry(_) if entry.is_none() => entry = Some(id),
            Node::Access(_) | Node::MapExit(_) => {}
            _ => return None,
        }
    }
    let entry = entry?;
    let exit = state.exit_of(entry)?;
    for (_, src, dst, _) in state.edges() {
        let outside = |n: NodeId| tree.parent(n).is_none() && n != entry && n != exit;
        if outside(src) && outside(dst) {
            return None;
        }
    }
    Some((entry, exit))
}

/// The most elements a container private to a map point may have: it
/// becomes the thread's own array (registers, or local memory where it
/// spills), so it must be small and of a size known when compiling.
pub const MAX_PRIVATE_ELEMENTS: i64 = 64;

/// Whether a transient of `desc` can be private to each map point: a view
/// (re-bound by each point), or a small array of constant size.
pub fn privatizable(desc: &sdfg_ir::DataDesc) -> bool {
    desc.is_view()
        || desc
            .total_elements()
            .and_then(|n| n.as_int())
            .is_some_and(|n| n <= MAX_PRIVATE_ELEMENTS)
}

/// A region to run inside a map, one iteration per map point: what the
/// nested SDFG holds and how it connects.
pub struct Nesting {
    /// The map's parameters (symbols the body names).
    pub params: Vec<String>,
    /// Their ranges.
    pub ranges: Vec<Range>,
    /// The nested SDFG's body.
    pub body: Region,
    /// Transients and views that move into the nested SDFG.
    pub private: BTreeSet<String>,
    /// Containers read through the nested SDFG's connectors (written ones
    /// too: a partial write keeps the other elements).
    pub inputs: BTreeSet<String>,
    /// Containers written through the connectors.
    pub outputs: BTreeSet<String>,
    /// Outer symbols the body names (mapped to themselves).
    pub mapped: BTreeSet<String>,
    /// Symbols the body assigns (declared inside only).
    pub assigned: BTreeSet<String>,
    /// Of the parameters and assigned symbols, those the rest of the SDFG
    /// still names (another loop with the same variable): they stay
    /// declared outside, and a parameter among them gets a fresh name for
    /// the map (a map parameter may not shadow a symbol).
    pub named_outside: BTreeSet<String>,
}

/// `{label}_body`, made an identifier (an SDFG's name must be one; a block
/// label need not be: `-1` is a label): other characters become `_`, and a
/// leading digit gets a `b` before it.
fn body_name(label: &str) -> String {
    let mut name: String = label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        name.insert(0, 'b');
    }
    name + "_body"
}

/// The state running `plan.body` once per point of a map over
/// `plan.params` (labelled `label`): the map's scope is a nested SDFG named
/// `{label}_body` whose containers and symbols carry the outer names, so the
/// body moves unchanged. Private containers move from `sdfg` into it, and
/// the parameters and the body's own symbols leave `sdfg`'s symbols.
/// Every memlet is the whole container, dynamic: which elements each point
/// touches is the body's business.
pub fn nest_in_map(sdfg: &mut Sdfg, label: &str, plan: Nesting) -> State {
    let mut inner = Sdfg::new(body_name(label));
    for s in plan.mapped.iter().chain(&plan.assigned) {
        if let Some(t) = sdfg.symbols.get(s) {
            inner.symbols.insert(s.clone(), *t);
        }
    }
    for x in plan.inputs.iter().chain(&plan.outputs) {
        if let Some(d) = sdfg.containers.get(x) {
            let mut d = d.clone();
            d.transient = false;
            inner.containers.insert(x.clone(), d);
        }
    }
    for x in &plan.private {
        if let Some(d) = sdfg.containers.remove(x) {
            inner.containers.insert(x.clone(), d);
        }
    }
    let connectors: BTreeSet<&String> = plan.inputs.iter().chain(&plan.outputs).collect();
    inner.arguments = connectors.iter().map(|x| (*x).clone()).collect();
    inner.arguments.extend(
        plan.mapped
            .iter()
            .filter(|s| !plan.params.contains(s))
            .cloned(),
    );
    let own: Vec<String> = plan
        .params
        .iter()
        .filter(|p| inner.symbols.contains_key(*p))
        .cloned()
        .collect();
    inner.arguments.extend(own);
    inner.body = plan.body;
    // The loop variables and the body's own symbols live inside now, but
    // for those the rest of the SDFG names: a map parameter among them
    // takes a fresh name (the nested SDFG's symbol maps to it).
    let mut renamed: BTreeMap<String, String> = BTreeMap::new();
    for p in &plan.params {
        if plan.named_outside.contains(p) {
            let fresh = (0..)
                .map(|k| format!("{p}_m{k}"))
                .find(|n| !sdfg.symbols.contains_key(n) && !sdfg.containers.contains_key(n))
                .unwrap_or_default();
            renamed.insert(p.clone(), fresh);
        }
    }
    for s in plan.params.iter().chain(&plan.assigned) {
        if !plan.named_outside.contains(s) {
            sdfg.symbols.remove(s);
        }
    }
    let symbol_mapping = plan
        .mapped
        .iter()
        .map(|s| {
            let outer = renamed.get(s).unwrap_or(s);
            (s.clone(), SymExpr::symbol(outer.clone()))
        })
        .collect();
    let params: Vec<String> = plan
        .params
        .iter()
        .map(|p| renamed.get(p).unwrap_or(p).clone())
        .collect();
    let full = |sdfg: &Sdfg, x: &str| {
        let shape = sdfg
            .containers
            .get(x)
            .map(|d| d.shape())
            .unwrap_or_default();
        Memlet::new(x, Subset::full(&shape)).into_dynamic()
    };
    let memlets: BTreeMap<String, Memlet> = connectors
        .iter()
        .map(|x| ((*x).clone(), full(sdfg, x)))
        .collect();
    let map = Map {
        label: label.to_owned(),
        params,
        ranges: plan.ranges,
        schedule: Schedule::Default,
    };
    let mut state = State::new();
    let entry = state.add_node(Node::MapEntry(MapEntry {
        map: map.clone(),
        in_connectors: plan
            .inputs
            .iter()
            .map(|x| format!("{MAP_IN_PREFIX}{x}"))
            .collect(),
        out_connectors: plan
            .inputs
            .iter()
            .map(|x| format!("{MAP_OUT_PREFIX}{x}"))
            .collect(),
    }));
    let exit = state.add_node(Node::MapExit(MapExit {
        entry,
        label: label.to_owned(),
        in_connectors: plan
            .outputs
            .iter()
            .map(|x| format!("{MAP_IN_PREFIX}{x}"))
            .collect(),
        out_connectors: plan
            .outputs
            .iter()
            .map(|x| format!("{MAP_OUT_PREFIX}{x}"))
            .collect(),
    }));
    let nested = state.add_node(Node::NestedSdfg(NestedSdfg {
        label: format!("{label}_body"),
        sdfg: Box::new(inner),
        symbol_mapping,
        inputs: plan.inputs.clone(),
        outputs: plan.outputs.clone(),
    }));
    for x in &plan.inputs {
        let a = state.add_access(x.clone());
        let m = memlets[x].clone();
        state.add_edge(
            a,
            None,
            entry,
            Some(&format!("{MAP_IN_PREFIX}{x}")),
            m.clone(),
        );
        state.add_edge(
            entry,
            Some(&format!("{MAP_OUT_PREFIX}{x}")),
            nested,
            Some(x),
            m,
        );
    }
    for x in &plan.outputs {
        let a = state.add_access(x.clone());
        let m = memlets[x].clone();
        state.add_edge(
            nested,
            Some(x),
            exit,
            Some(&format!("{MAP_IN_PREFIX}{x}")),
            m.clone(),
        );
        state.add_edge(exit, Some(&format!("{MAP_OUT_PREFIX}{x}")), a, None, m);
    }
    if plan.inputs.is_empty() {
        state.graph.add_edge(entry, nested, Edge::empty());
    }
    if plan.outputs.is_empty() {
        state.graph.add_edge(nested, exit, Edge::empty());
    }
    state
}

/// The access nodes of an inlinable body that become the scope's
/// connectors (by container), and the containers read and written.
struct Scope {
    outer: BTreeMap<NodeId, String>,
    reads: BTreeSet<String>,
    writes: BTreeSet<String>,
}

/// The body state of `plan`, where [`inline_in_map`] can inline it: one
/// state and no transition, nothing private, assigned or renamed.
fn inlinable(plan: &Nesting) -> Option<&State> {
    let body = match plan.body.blocks.as_slice() {
        [
            ControlBlock {
                kind: BlockKind::State(body),
                transition,
                ..
            },
        ] if transition.is_empty() => body,
        _ => return None,
    };
    if !plan.private.is_empty() || !plan.assigned.is_empty() || !plan.named_outside.is_empty() {
        return None;
    }
    Some(body)
}

/// The [`Scope`] of an inlinable body: its access nodes are each read or
/// written (not both: an intermediate value needs a nested SDFG to order
/// it) and its other nodes tasklets and maps.
fn scope_of(body: &State, plan: &Nesting) -> Option<Scope> {
    let mut scope = Scope {
        outer: BTreeMap::new(),
        reads: BTreeSet::new(),
        writes: BTreeSet::new(),
    };
    for (id, node) in body.nodes() {
        match node {
            Node::Access(a) => {
                let ins = body.in_edges(id).next().is_some();
                let outs = body.out_edges(id).next().is_some();
                let fits = match (ins, outs) {
                    (true, true) => false,
                    (false, true) => {
                        scope.reads.insert(a.data.clone());
                        plan.inputs.contains(&a.data)
                    }
                    (true, false) => {
                        scope.writes.insert(a.data.clone());
                        plan.outputs.contains(&a.data)
                    }
                    (false, false) => true,
                };
                if !fits {
                    return None;
                }
                scope.outer.insert(id, a.data.clone());
            }
            Node::Tasklet(_) | Node::MapEntry(_) | Node::MapExit(_) => {}
            _ => return None,
        }
    }
    Some(scope)
}

/// The map an inlined body collapses into (DaCe's `MapCollapse`): a body
/// that is one map over a range independent of the loop's variables (the
/// slice statement of `for i in range(N): X[i, :] = i`) loses its map, whose
/// parameters join the loop's, so the loop and the statement are one map of
/// `N x M` points, not `N` points each walking a row in sequence. Repeats
/// through maps nested in that map. `None` when the body is not such a map.
///
/// The parameters keep the nest's order, the loop's first, unless what the
/// body writes varies fastest with a loop variable (`for j: Y[:, j] = j`,
/// whose elements `j` and `j + 1` are neighbours): the loop's parameters
/// then come last, where the emitter puts consecutive threads, so those
/// threads write consecutive elements.
fn collapsed(body: &State, plan: &Nesting) -> Option<(State, Vec<String>, Vec<Range>)> {
    let mut state = body.clone();
    let mut inner: (Vec<String>, Vec<Range>) = (Vec::new(), Vec::new());
    while let Some((entry, _)) = single_map(&state) {
        let Some(Node::MapEntry(e)) = state.node(entry) else {
            break;
        };
        let outer = plan.params.iter().chain(&inner.0);
        let names: BTreeSet<&String> = outer.collect();
        if e.map.schedule != Schedule::Default
            || e.map
                .ranges
                .iter()
                .any(|r| r.any_symbol(&mut |s| names.iter().any(|n| *n == s)))
        {
            break;
        }
        inner.0.extend(e.map.params.iter().cloned());
        inner.1.extend(e.map.ranges.iter().cloned());
        strip(&mut state, entry);
    }
    if inner.0.is_empty() {
        return None;
    }
    // Whether a loop variable steps some write's innermost index by one
    // element (`Y[a, j]`, or `D[(a * R + b) * M + k]` through a flat view).
    let fastest_outer = state.edges().any(|(_, _, dst, e)| {
        let (Some(m), Some(Node::Access(_))) = (&e.memlet, state.node(dst)) else {
            return false;
        };
        let Some(last) = m.subset.ranges.last() else {
            return false;
        };
        plan.params.iter().any(|p| {
            last.begin
                .linear_in(p)
                .is_some_and(|(c, _)| matches!(c.as_int(), Some(1 | -1)))
        })
    });
    let (params, ranges) = if fastest_outer {
        (
            inner.0.iter().chain(&plan.params).cloned().collect(),
            inner.1.iter().chain(&plan.ranges).cloned().collect(),
        )
    } else {
        (
            plan.params.iter().chain(&inner.0).cloned().collect(),
            plan.ranges.iter().chain(&inner.1).cloned().collect(),
        )
    };
    Some((state, params, ranges))
}

/// [`nest_in_map`]'s lighter form, for a body that is one state of
/// tasklets and maps working on the outer containers: the body moves into
/// the map's scope itself, with no nested SDFG around it, as the frontend
/// builds an array statement and as DaCe's `InlineSDFG` leaves a loop that
/// became a map. The memlets inside keep what each point touches (a nested
/// SDFG's connectors carry whole containers), so map fusion can fuse the
/// map with its neighbours and the emitter writes a plain kernel body.
///
/// Refused (the plan comes back) where a nested SDFG is needed: a body of
/// several blocks or with transition assignments, private containers or
/// symbols the body assigns, parameters renamed because the rest of the
/// SDFG names them, nodes other than tasklets, maps and access nodes, or
/// an access node both written and read in the body (an intermediate
/// value, which a nested SDFG orders).
pub(crate) fn inline_in_map(
    sdfg: &mut Sdfg,
    label: &str,
    plan: Nesting,
) -> Result<State, Box<Nesting>> {
    let Some(body) = inlinable(&plan) else {
        return Err(Box::new(plan));
    };
    // The body's own map collapsed into the loop's where it can be, else
    // the body as it is.
    let collapsed = collapsed(body, &plan).and_then(|(state, params, ranges)| {
        Some((scope_of(&state, &plan)?, state, params, ranges))
    });
    let (scope, body, params, ranges) = match collapsed {
        Some((scope, state, params, ranges)) => {
            (scope, std::borrow::Cow::Owned(state), params, ranges)
        }
        None => match scope_of(body, &plan) {
            Some(scope) => (
                scope,
                std::borrow::Cow::Borrowed(body),
                plan.params.clone(),
                plan.ranges.clone(),
            ),
            None => return Err(Box::new(plan)),
        },
    };
    let Scope {
        outer,
        reads,
        writes,
    } = scope;
    let map = Map {
        label: label.to_owned(),
        params,
        ranges,
        schedule: Schedule::Default,
    };
    let connectors = |set: &BTreeSet<String>, prefix: &str| -> BTreeSet<String> {
        set.iter().map(|x| format!("{prefix}{x}")).collect()
    };
    let mut state = State::new();
    let entry = state.add_node(Node::MapEntry(MapEntry {
        map,
        in_connectors: connectors(&reads, MAP_IN_PREFIX),
        out_connectors: connectors(&reads, MAP_OUT_PREFIX),
    }));
    let exit = state.add_node(Node::MapExit(MapExit {
        entry,
        label: label.to_owned(),
        in_connectors: connectors(&writes, MAP_IN_PREFIX),
        out_connectors: connectors(&writes, MAP_OUT_PREFIX),
    }));
    // The body's other nodes, with their ids in the new state; a moved map
    // exit names its entry by the new id.
    let mut moved: BTreeMap<NodeId, NodeId> = BTreeMap::new();
    for (id, node) in body.nodes() {
        if !outer.contains_key(&id) {
            moved.insert(id, state.add_node(node.clone()));
        }
    }
    for &new in moved.values() {
        if let Some(Node::MapExit(x)) = state.graph.node_weight_mut(new) {
            x.entry = moved.get(&x.entry).copied().unwrap_or(x.entry);
        }
    }
    for (_, src, dst, edge) in body.edges() {
        let mut edge = edge.clone();
        let src = match (outer.get(&src), moved.get(&src)) {
            (Some(x), _) => {
                edge.src_conn = Some(format!("{MAP_OUT_PREFIX}{x}"));
                entry
            }
            (None, Some(&n)) => n,
            (None, None) => continue,
        };
        let dst = match (outer.get(&dst), moved.get(&dst)) {
            (Some(x), _) => {
                edge.dst_conn = Some(format!("{MAP_IN_PREFIX}{x}"));
                exit
            }
            (None, Some(&n)) => n,
            (None, None) => continue,
        };
        state.graph.add_edge(src, dst, edge);
    }
    // Nodes that read nothing run after the entry, and nodes that write
    // nothing before the exit: every node stays in the scope.
    for &n in moved.values() {
        if state.in_edges(n).next().is_none() {
            state.add_empty_edge(entry, n);
        }
        if state.out_edges(n).next().is_none() {
            state.add_empty_edge(n, exit);
        }
    }
    if moved.is_empty() {
        state.add_empty_edge(entry, exit);
    }
    let full = |sdfg: &Sdfg, x: &str| {
        let shape = sdfg
            .containers
            .get(x)
            .map(|d| d.shape())
            .unwrap_or_default();
        Memlet::new(x, Subset::full(&shape)).into_dynamic()
    };
    for x in &reads {
        let a = state.add_access(x.clone());
        let conn = format!("{MAP_IN_PREFIX}{x}");
        state.add_edge(a, None, entry, Some(&conn), full(sdfg, x));
    }
    for x in &writes {
        let a = state.add_access(x.clone());
        let conn = format!("{MAP_OUT_PREFIX}{x}");
        state.add_edge(exit, Some(&conn), a, None, full(sdfg, x));
    }
    // What all points together touch, from what each one does.
    sdfg_ir::propagate::propagate_state(&mut state, &sdfg.containers);
    for p in &plan.params {
        sdfg.symbols.remove(p);
    }
    Ok(state)
}

/// The one top-level map of a state: its entry and parameters and ranges.
pub(crate) fn top_map(state: &State) -> Option<(NodeId, Vec<String>, Vec<Range>)> {
    let (entry, _) = single_map(state)?;
    let Some(Node::MapEntry(e)) = state.node(entry) else {
        return None;
    };
    Some((entry, e.map.params.clone(), e.map.ranges.clone()))
}

/// Removes the one top-level map of every state in `region` (a sunk
/// loop, fused maps' bodies): the map's nodes are joined to the access nodes directly, with
/// the memlets they had inside the map.
pub(crate) fn strip_maps(region: &mut Region) {
    region.for_each_region_mut(&mut |r| {
        for block in &mut r.blocks {
            if let BlockKind::State(s) = &mut block.kind
                && let Some((entry, ..)) = top_map(s)
            {
                strip(s, entry);
            }
        }
    });
}

fn strip(state: &mut State, entry: NodeId) {
    let Some(exit) = state.exit_of(entry) else {
        return;
    };
    // Outer ends of the entry's and exit's connectors.
    let mut sources: BTreeMap<String, (NodeId, Option<String>)> = BTreeMap::new();
    for (_, src, e) in state.in_edges(entry) {
        if let Some(c) = e.dst_conn.as_deref().and_then(|c| c.strip_prefix("IN_")) {
            sources.insert(c.to_owned(), (src, e.src_conn.clone()));
        }
    }
    let mut sinks: BTreeMap<String, (NodeId, Option<String>)> = BTreeMap::new();
    for (_, dst, e) in state.out_edges(exit) {
        if let Some(c) = e.src_conn.as_deref().and_then(|c| c.strip_prefix("OUT_")) {
            sinks.insert(c.to_owned(), (dst, e.dst_conn.clone()));
        }
    }
    let inner_out: Vec<(NodeId, Edge)> = state
        .out_edges(entry)
        .map(|(_, d, e)| (d, e.clone()))
        .collect();
    let inner_in: Vec<(NodeId, Edge)> = state
        .in_edges(exit)
        .map(|(_, s, e)| (s, e.clone()))
        .collect();
    for (dst, e) in inner_out {
        let key = e.src_conn.as_deref().and_then(|c| c.strip_prefix("OUT_"));
        if let (Some(k), Some(m)) = (key, e.memlet)
            && let Some((src, conn)) = sources.get(k)
        {
            state.graph.add_edge(
                *src,
                dst,
                Edge {
                    src_conn: conn.clone(),
                    dst_conn: e.dst_conn,
                    memlet: Some(m),
                },
            );
        }
    }
    for (src, e) in inner_in {
        let key = e.dst_conn.as_deref().and_then(|c| c.strip_prefix("IN_"));
        if let (Some(k), Some(m)) = (key, e.memlet)
            && let Some((dst, conn)) = sinks.get(k)
        {
            state.graph.add_edge(
                src,
                *dst,
                Edge {
                    src_conn: e.src_conn,
                    dst_conn: conn.clone(),
                    memlet: Some(m),
                },
            );
        }
    }
    state.graph.remove_node(entry);
    state.graph.remove_node(exit);
    // Access nodes the map used to reach only through an empty memlet are
    // left without edges.
    drop_lonely_access_nodes(state);
}

/// Removes the access nodes of `state` that no edge touches any more (a
/// rewrite moved their memlets elsewhere): they would mean nothing.
pub(crate) fn drop_lonely_access_nodes(state: &mut State) {
    let lonely: Vec<NodeId> = state
        .nodes()
        .filter(|(id, n)| {
            n.as_access().is_some()
                && state.in_edges(*id).next().is_none()
                && state.out_edges(*id).next().is_none()
        })
        .map(|(id, _)| id)
        .collect();
    for id in lonely {
        state.graph.remove_node(id);
    }
}

/// The new map's nested SDFG (a sunk loop, fused maps) binds every
/// stripped map's parameters to the new map's: they become its symbols.
pub(crate) fn bind_renames(mut state: State, renames: &BTreeMap<String, String>) -> State {
    let ids: Vec<NodeId> = state.nodes().map(|(id, _)| id).collect();
    for id in ids {
        if let Some(Node::NestedSdfg(n)) = state.graph.node_weight_mut(id) {
            for (inner, outer) in renames {
                n.sdfg.symbols.insert(inner.clone(), sdfg_ir::DType::Int64);
                n.symbol_mapping
                    .insert(inner.clone(), SymExpr::symbol(outer.clone()));
                if !n.sdfg.arguments.contains(inner) {
                    n.sdfg.arguments.push(inner.clone());
                }
            }
        }
    }
    state
}
