//! Map fusion: two consecutive states, each one map over the same range,
//! become one state with one map when every point of the second needs only
//! what the same point of the first wrote.
//!
//! ```text
//! map (i): mask[i] = r1 <= radius[i] < r2        map (i):
//! map (j): if mask[j]: tmp += data[j]      =>       m = r1 <= radius[i] < r2
//!                                                   if m: tmp += data[i]
//! ```
//!
//! One kernel where there were two, and a transient only the two maps used
//! (`mask`, as long as the data) becomes a scalar of each point: loop-to-map
//! can then make a loop around them private to its iterations (azimint's bin
//! loop), and no memory traffic is spent on it.
//!
//! Two states `S1; S2` (nothing between them) fuse when:
//!
//! - each holds exactly one map at its top level, with only the access
//!   nodes it reads and writes around it, and the ranges are equal (the
//!   second map's parameters are renamed to the first's);
//! - every container the first map writes and the second reads is read at
//!   exactly the element the first wrote at the same point, an injective
//!   element (the dependence test of [`crate::dependence`]), by one writer;
//! - the second map writes nothing the first touches, and neither has a
//!   write-conflict resolution on a container both touch; except a
//!   container both update in place (`B[i] += A[i]` then `B[i] *= 2`): the
//!   first writes it, the second reads and writes it, and every access of
//!   both maps to it is at the same injective element of the point, without
//!   resolution. Each point then updates its own element, in program order
//!   (the second reads the first's value through the access node below,
//!   and comes after every read of the first map: an empty edge orders a
//!   read the first's writer does not depend on), and the first's write
//!   leaves the scope only through the second's; or
//!   a container the second writes *apart* from everything the first
//!   touches: some dimension separates the elements written from those the
//!   first reads or writes, over every pair of points (`p[:, -1] = p[:,
//!   -2]`, column `N - 1` against `N - 2`, [`crate::dependence::separated`]),
//!   so the two need no order. Columns `0` and `N - 1` are not apart: they
//!   are one column when `N` is 1.
//!
//! The second map's reads of what the first wrote then come from the
//! writer inside the fused scope, through an access node. A transient the
//! two maps alone use, at a single element per point, becomes a scalar of
//! the point, and its array disappears. The pass repeats along a region, so
//! chains fuse whole; running it again changes nothing.

use crate::dependence::{RegionUse, independent, separated, state_accesses};
use crate::nest::single_map;
use sdfg_ir::code::rename_vars;
use sdfg_ir::node::{MAP_IN_PREFIX, MAP_OUT_PREFIX};
use sdfg_ir::{
    BlockKind, ControlBlock, DataDesc, Edge, EdgeId, Memlet, Node, NodeId, Region, Sdfg, State,
    Subset, SymExpr,
};
use std::collections::{BTreeMap, BTreeSet};

/// Fuses every pair it can (see the [module docs](self)); returns one line
/// per fusion (`S2 into S1`).
pub fn fuse_maps(sdfg: &mut Sdfg) -> Vec<String> {
    let symbols: BTreeSet<String> = sdfg.symbols.keys().cloned().collect();
    let mut counts = RegionUse::of(&sdfg.body, &symbols).into_per_container();
    let mut fused = Vec::new();
    let mut body = std::mem::take(&mut sdfg.body);
    body.for_each_region_mut(&mut |region| {
        fuse_region(sdfg, region, &mut counts, &mut fused);
    });
    sdfg.body = body;
    fused
}

/// Accesses per container of one state, counted as [`RegionUse`] counts
/// them (by [`state_accesses`]) without building one.
fn state_counts(state: &State) -> BTreeMap<String, usize> {
    let mut c: BTreeMap<String, usize> = BTreeMap::new();
    state_accesses(state, |a| match c.get_mut(a.data) {
        Some(n) => *n += 1,
        None => {
            c.insert(a.data.to_owned(), 1);
        }
    });
    c
}

/// One pass over a region's blocks, each block fused into an earlier map
/// state it can meet: the latest block itself, or one a few blocks back
/// when every block between touches nothing it touches (it commutes past
/// them, so the fused state stands where the later one stood). Blocks
/// move into a new vector once, so the pass stays linear.
fn fuse_region(
    sdfg: &mut Sdfg,
    region: &mut Region,
    counts: &mut BTreeMap<String, usize>,
    fused: &mut Vec<String>,
) {
    let blocks = std::mem::take(&mut region.blocks);
    let mut out: Vec<ControlBlock> = Vec::with_capacity(blocks.len());
    // The single map of each block of `out` ([`single_map`]), found once:
    // every block is tried against the few before it, and the search
    // computes a scope tree.
    let mut maps: Vec<Option<(NodeId, NodeId)>> = Vec::with_capacity(blocks.len());
    // The access counts of the state fused last, by label: a chain fuses
    // into it again and again, and recounting it each time made the pass
    // quadratic in the size of a fused state.
    let mut last: Option<(String, BTreeMap<String, usize>)> = None;
    for b in blocks {
        let map2 = match &b.kind {
            BlockKind::State(s2) => single_map(s2),
            _ => None,
        };
        let Some((j, plan)) = map2.and_then(|m| meeting(&out, &maps, &b, m)) else {
            out.push(b);
            maps.push(map2);
            continue;
        };
        let mut a = out.remove(j);
        maps.remove(j);
        let (BlockKind::State(s1), BlockKind::State(s2)) = (&mut a.kind, &b.kind) else {
            out.push(a);
            maps.push(None);
            out.push(b);
            maps.push(None);
            continue;
        };
        // Moved, not copied: the fused state grows with every fusion.
        let s1 = std::mem::take(s1);
        let label = a.label;
        let c1 = match last.take() {
            Some((l, c)) if l == label => c,
            _ => state_counts(&s1),
        };
        let c2 = state_counts(s2);
        // A transient the two maps alone use becomes a scalar of the point.
        // (Not one the second map writes too: its last value leaves the
        // scope, and a later fusion may pass it on.)
        let dead: BTreeSet<String> = plan
            .through
            .iter()
            .filter(|(x, _)| !plan.written2.contains(*x))
            .filter(|(x, sub)| {
                let here = c1.get(*x).copied().unwrap_or(0) + c2.get(*x).copied().unwrap_or(0);
                sdfg.containers
                    .get(*x)
                    .is_some_and(|d| d.transient && !d.is_view())
                    && counts.get(*x).copied().unwrap_or(0) == here
                    && sub.ranges.iter().all(|r| r.is_index())
            })
            .map(|(x, _)| x.clone())
            .collect();
        let merged = fuse(sdfg, s1, s2, &plan, &dead);
        fused.push(format!("`{}` into `{label}`", b.label));
        for (x, n) in c1.iter().chain(&c2) {
            if let Some(c) = counts.get_mut(x) {
                *c = c.saturating_sub(*n);
            }
        }
        let cm = state_counts(&merged);
        for (x, n) in &cm {
            match counts.get_mut(x) {
                Some(c) => *c += n,
                None => {
                    counts.insert(x.clone(), *n);
                }
            }
        }
        last = Some((label.clone(), cm));
        // The fused state's map is the first's.
        maps.push(Some((plan.e1, plan.x1)));
        out.push(ControlBlock {
            label,
            kind: BlockKind::State(merged),
            transition: b.transition,
        });
    }
    region.blocks = out;
}

/// The most nodes a fused state may have: a kernel of hundreds of
/// statements gains nothing more from fusion (it spills registers), and
/// the bound keeps the pass linear in the program's size.
const MAX_FUSED_NODES: usize = 128;

/// How far back a map state is looked for to fuse with.
pub(crate) const WINDOW: usize = 8;

/// Where block `b`, coming after `out`, fuses: the position of a map
/// state within [`WINDOW`] blocks back whose plan with `b` holds, with
/// every block after it a state without transitions that touches nothing
/// it touches (and no transition on it either).
fn meeting(
    out: &[ControlBlock],
    maps: &[Option<(NodeId, NodeId)>],
    b: &ControlBlock,
    map2: (NodeId, NodeId),
) -> Option<(usize, Plan)> {
    let BlockKind::State(s2) = &b.kind else {
        return None;
    };
    let last = out.len().checked_sub(1)?;
    let first = out.len().saturating_sub(WINDOW);
    for j in (first..=last).rev() {
        let a = &out[j];
        if !a.transition.is_empty() {
            return None;
        }
        let BlockKind::State(s1) = &a.kind else {
            return None;
        };
        if s1.graph.node_count() + s2.graph.node_count() <= MAX_FUSED_NODES
            && let Some(map1) = maps.get(j).copied().flatten()
            && let Some(plan) = plan(s1, map1, s2, map2)
            && commutes(a, &out[j + 1..])
        {
            return Some((j, plan));
        }
    }
    None
}

/// Whether map state `a` commutes past `between`: each a state touching
/// nothing `a` writes and writing nothing `a` reads.
pub(crate) fn commutes(a: &ControlBlock, between: &[ControlBlock]) -> bool {
    if between.is_empty() {
        return true;
    }
    let Some((r1, w1)) = touched(a) else {
        return false;
    };
    between.iter().all(|c| {
        touched(c).is_some_and(|(r2, w2)| {
            !w1.iter().any(|x| r2.contains(x) || w2.contains(x))
                && !w2.iter().any(|x| r1.contains(x))
        })
    })
}

/// The containers a state block without transitions reads and writes;
/// `None` for any other block.
fn touched(b: &ControlBlock) -> Option<(BTreeSet<&str>, BTreeSet<&str>)> {
    let BlockKind::State(s) = &b.kind else {
        return None;
    };
    if !b.transition.is_empty() {
        return None;
    }
    let (mut read, mut written) = (BTreeSet::new(), BTreeSet::new());
    state_accesses(s, |a| {
        if a.write {
            written.insert(a.data);
        } else {
            read.insert(a.data);
        }
    });
    Some((read, written))
}

/// What a fusion needs: the two maps and the renaming of the second's
/// parameters, and the containers passed from the first to the second
/// with the element each point passes.
struct Plan {
    e1: NodeId,
    x1: NodeId,
    e2: NodeId,
    x2: NodeId,
    renames: BTreeMap<String, SymExpr>,
    names: BTreeMap<String, String>,
    through: BTreeMap<String, Subset>,
    /// Containers the second map updates in place after the first: the
    /// first's write leaves the scope only through the second's.
    in_place: BTreeSet<String>,
    /// Containers the second map writes.
    written2: BTreeSet<String>,
}

/// The inner memlets of a map: (reads from its entry, writes into its
/// exit). Borrowed: the first state of a chain grows with every fusion
/// (up to [`MAX_FUSED_NODES`]), and copying its memlets for each plan
/// was a sixth of the pass.
fn inner(state: &State, entry: NodeId, exit: NodeId) -> (Vec<&Memlet>, Vec<&Memlet>) {
    let reads = state
        .out_edges(entry)
        .filter_map(|(_, _, e)| e.memlet.as_ref())
        .collect();
    let writes = state
        .in_edges(exit)
        .filter_map(|(_, _, e)| e.memlet.as_ref())
        .collect();
    (reads, writes)
}

/// The plan of fusing `s2` into `s1` (whose maps are `map2` and `map1`,
/// as [`single_map`] finds them), if they fuse.
fn plan(s1: &State, map1: (NodeId, NodeId), s2: &State, map2: (NodeId, NodeId)) -> Option<Plan> {
    let (e1, x1) = map1;
    let (e2, x2) = map2;
    let (Some(Node::MapEntry(m1)), Some(Node::MapEntry(m2))) = (s1.node(e1), s2.node(e2)) else {
        return None;
    };
    if m1.map.schedule != m2.map.schedule {
        return None;
    }
    let (renames, names) =
        if m1.map.ranges == m2.map.ranges && m1.map.params.len() == m2.map.params.len() {
            let renames: BTreeMap<String, SymExpr> = m2
                .map
                .params
                .iter()
                .zip(&m1.map.params)
                .map(|(a, b)| (a.clone(), SymExpr::symbol(b.clone())))
                .collect();
            let names: BTreeMap<String, String> = m2
                .map
                .params
                .iter()
                .cloned()
                .zip(m1.map.params.iter().cloned())
                .collect();
            (renames, names)
        } else {
            (linearized(&m1.map, &m2.map, s2)?, BTreeMap::new())
        };
    let (r1, w1) = inner(s1, e1, x1);
    let (r2, w2) = inner(s2, e2, x2);
    let touched1: BTreeSet<&str> = r1.iter().chain(&w1).map(|m| m.data.as_str()).collect();
    // What the second map writes and the first touches: a container both
    // update in place, or one the second writes where the first never
    // looks (else the two do not fuse).
    let shared: BTreeSet<&str> = w2
        .iter()
        .map(|m| m.data.as_str())
        .filter(|x| touched1.contains(x))
        .collect();
    let r2: Vec<Memlet> = r2.into_iter().map(|m| renamed(m, &renames)).collect();
    let none = BTreeSet::new();
    let mut in_place = BTreeSet::new();
    for x in shared {
        let w2x: Vec<Memlet> = w2
            .iter()
            .filter(|m| m.data == x)
            .map(|m| renamed(m, &renames))
            .collect();
        let of_x = |m: &&Memlet| m.data == x;
        // In place: the first writes it, the second reads and writes it,
        // each point of both maps at one element of its own, the same in
        // both: the point's updates run in program order in one thread,
        // and no other point sees them.
        let mut all = r1
            .iter()
            .copied()
            .chain(w1.iter().copied())
            .chain(&r2)
            .chain(&w2x)
            .filter(of_x);
        let first = all.next()?;
        let plain = |m: &Memlet| m.wcr.is_none() && !m.dynamic && m.subset == first.subset;
        if w1.iter().any(of_x)
            && r2.iter().any(|m| m.data == x)
            && plain(first)
            && all.all(plain)
            && independent(
                &first.subset,
                &first.subset,
                &m1.map.params,
                &m1.map.ranges,
                &none,
            )
        {
            in_place.insert(x);
            continue;
        }
        // Apart: no point's write meets what any point of the first map
        // touches (`p[:, -1] = p[:, -2]`: column N - 1 written, N - 2
        // read), so no order between the two is needed.
        let apart = w2x.iter().all(|b| {
            b.wcr.is_none()
                && r1.iter().chain(&w1).copied().filter(of_x).all(|a| {
                    a.wcr.is_none()
                        && separated(&a.subset, &b.subset, &m1.map.params, &m1.map.ranges, &none)
                })
        });
        if !apart {
            return None;
        }
    }
    let mut through = BTreeMap::new();
    for x in w1.iter().map(|m| m.data.as_str()).collect::<BTreeSet<_>>() {
        let reads: Vec<&Memlet> = r2.iter().filter(|m| m.data == x).collect();
        if reads.is_empty() {
            continue;
        }
        let writes: Vec<&Memlet> = w1.iter().copied().filter(|m| m.data == x).collect();
        let [w] = writes.as_slice() else {
            return None;
        };
        if w.wcr.is_some()
            || w.dynamic
            || reads.iter().any(|r| r.subset != w.subset)
            || !independent(&w.subset, &w.subset, &m1.map.params, &m1.map.ranges, &none)
            || (r1.iter().any(|m| m.data == x) && !in_place.contains(x))
        {
            return None;
        }
        through.insert(x.to_owned(), w.subset.clone());
    }
    Some(Plan {
        e1,
        x1,
        e2,
        x2,
        renames,
        names,
        through,
        in_place: in_place.into_iter().map(str::to_owned).collect(),
        written2: w2.iter().map(|m| m.data.clone()).collect(),
    })
}

/// The second map's one parameter as the row-major linear index of the
/// first's (`n = (a * B + b) * C + c` over `a < A, b < B, c < C`), where the
/// second runs over `0:A*B*C` and the first over the box `0:A, 0:B, 0:C`:
/// the same points, numbered as a flat array and as its reshape number
/// them (stockham_fft's twiddle fill through a 3-D view, then a product
/// over the flat array). Every memlet of the second is renamed with it
/// and the plan must still hold; tasklet code naming the parameter is
/// refused (it would need the expression, not a name).
fn linearized(
    m1: &sdfg_ir::Map,
    m2: &sdfg_ir::Map,
    s2: &State,
) -> Option<BTreeMap<String, SymExpr>> {
    let ([n], [r2]) = (m2.params.as_slice(), m2.ranges.as_slice()) else {
        return None;
    };
    let from_zero = |r: &sdfg_ir::Range| r.begin.is_zero() && r.step.as_int() == Some(1);
    if m1.params.len() < 2 || !from_zero(r2) || !m1.ranges.iter().all(from_zero) {
        return None;
    }
    let counts: Vec<SymExpr> = m1.ranges.iter().map(sdfg_ir::Range::num_elements).collect();
    let total = counts.iter().fold(SymExpr::int(1), |acc, c| &acc * c);
    if total.joined_powers() != r2.num_elements().joined_powers() {
        return None;
    }
    let in_code = s2.nodes().any(|(_, node)| {
        let Node::Tasklet(t) = node else {
            return false;
        };
        let mut names = Vec::new();
        sdfg_ir::code::body_names(&t.body, &mut names);
        names.iter().any(|x| x == n)
    });
    if in_code {
        return None;
    }
    let mut index = SymExpr::int(0);
    for (p, count) in m1.params.iter().zip(&counts) {
        index = &(&index * count) + &SymExpr::symbol(p.clone());
    }
    Some(BTreeMap::from([(n.clone(), index)]))
}

fn renamed(m: &Memlet, renames: &BTreeMap<String, SymExpr>) -> Memlet {
    let mut m = m.clone();
    m.subset = m.subset.subs(renames);
    m.other_subset = m.other_subset.map(|s| s.subs(renames));
    m.volume = m.volume.subs(renames);
    m
}

/// A connector name of `node` not taken yet, from `base` (`IN_A`, `IN_A_1`, ...).
fn fresh_connector(taken: &BTreeSet<String>, base: &str) -> String {
    if !taken.contains(base) {
        return base.to_owned();
    }
    (1..)
        .map(|k| format!("{base}_{k}"))
        .find(|c| !taken.contains(c))
        .unwrap_or_default()
}

/// A container name no container or symbol has, from `base`.
fn fresh_container(sdfg: &Sdfg, base: &str) -> String {
    let taken = |n: &str| sdfg.containers.contains_key(n) || sdfg.symbols.contains_key(n);
    (0..)
        .map(|k| format!("{base}_p{k}"))
        .find(|n| !taken(n))
        .unwrap_or_default()
}

fn connectors(state: &State, n: NodeId) -> (BTreeSet<String>, BTreeSet<String>) {
    match state.node(n) {
        Some(Node::MapEntry(e)) => (e.in_connectors.clone(), e.out_connectors.clone()),
        Some(Node::MapExit(x)) => (x.in_connectors.clone(), x.out_connectors.clone()),
        _ => Default::default(),
    }
}

fn add_connectors(state: &mut State, n: NodeId, cin: &str, cout: &str) {
    match state.graph.node_weight_mut(n) {
        Some(Node::MapEntry(e)) => {
            e.in_connectors.insert(cin.to_owned());
            e.out_connectors.insert(cout.to_owned());
        }
        Some(Node::MapExit(x)) => {
            x.in_connectors.insert(cin.to_owned());
            x.out_connectors.insert(cout.to_owned());
        }
        _ => {}
    }
}

fn remove_connectors(state: &mut State, n: NodeId, cin: &str, cout: &str) {
    match state.graph.node_weight_mut(n) {
        Some(Node::MapEntry(e)) => {
            e.in_connectors.remove(cin);
            e.out_connectors.remove(cout);
        }
        Some(Node::MapExit(x)) => {
            x.in_connectors.remove(cin);
            x.out_connectors.remove(cout);
        }
        _ => {}
    }
}

/// The nodes `n` depends on in `state` (a path leads from each to `n`).
fn ancestors(state: &State, n: NodeId) -> BTreeSet<NodeId> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![n];
    while let Some(v) = stack.pop() {
        for (_, src, _) in state.in_edges(v) {
            if seen.insert(src) {
                stack.push(src);
            }
        }
    }
    seen
}

/// Removes edge `id` into `exit`'s connector `conn`, with what it fed
/// outside the scope: the outer edge, its access node where nothing else
/// uses it, and the connector pair.
fn drop_exit_edge(out: &mut State, exit: NodeId, id: EdgeId, conn: Option<String>) {
    out.graph.remove_edge(id);
    let Some(cin) = conn else {
        return;
    };
    let cout = cin.replacen(MAP_IN_PREFIX, MAP_OUT_PREFIX, 1);
    let outer: Vec<_> = out
        .out_edges(exit)
        .filter(|(_, _, e)| e.src_conn.as_deref() == Some(cout.as_str()))
        .map(|(id, d, _)| (id, d))
        .collect();
    for (oid, d) in outer {
        out.graph.remove_edge(oid);
        if out.in_edges(d).next().is_none() && out.out_edges(d).next().is_none() {
            out.graph.remove_node(d);
        }
    }
    remove_connectors(out, exit, &cin, &cout);
}

/// The fused state.
fn fuse(sdfg: &mut Sdfg, s1: State, s2: &State, plan: &Plan, dead: &BTreeSet<String>) -> State {
    let mut out = s1;
    // The nodes inside the first map's scope, needed (and computed: a walk
    // of the growing fused state) only to order an in-place update.
    let first_nodes: BTreeSet<NodeId> = if plan.in_place.is_empty() {
        BTreeSet::new()
    } else {
        out.scope_tree()
            .map(|tree| {
                out.nodes()
                    .map(|(id, _)| id)
                    .filter(|id| tree.ancestors(*id).contains(&plan.e1))
                    .collect()
            })
            .unwrap_or_default()
    };
    // The first map's writes of what the second updates in place: they
    // reach the exit through the second map's (dead transients go whole,
    // below).
    let superseded: Vec<(EdgeId, Option<String>)> = out
        .in_edges(plan.x1)
        .filter(|(_, _, e)| {
            e.memlet
                .as_ref()
                .is_some_and(|m| plan.in_place.contains(&m.data) && !dead.contains(&m.data))
        })
        .map(|(id, _, e)| (id, e.dst_conn.clone()))
        .collect();
    // The writer of each passed container inside the first map.
    let mut writer: BTreeMap<String, (NodeId, Option<String>)> = BTreeMap::new();
    for (_, src, e) in out.in_edges(plan.x1) {
        if let Some(m) = &e.memlet
            && plan.through.contains_key(&m.data)
        {
            writer.insert(m.data.clone(), (src, e.src_conn.clone()));
        }
    }
    for (id, conn) in superseded {
        drop_exit_edge(&mut out, plan.x1, id, conn);
    }
    // The second state's nodes, renamed, the map's entry and exit becoming
    // the first's.
    let mut ids: BTreeMap<NodeId, NodeId> = BTreeMap::new();
    ids.insert(plan.e2, plan.e1);
    ids.insert(plan.x2, plan.x1);
    for (id, n) in s2.nodes() {
        if id == plan.e2 || id == plan.x2 {
            continue;
        }
        let mut n = n.clone();
        match &mut n {
            Node::Tasklet(t) => rename_vars(&mut t.body, &plan.names),
            Node::MapEntry(e) => {
                for r in &mut e.map.ranges {
                    *r = r.subs(&plan.renames);
                }
            }
            Node::NestedSdfg(ns) => {
                for e in ns.symbol_mapping.values_mut() {
                    *e = e.subs(&plan.renames);
                }
            }
            _ => {}
        }
        ids.insert(id, out.add_node(n));
    }
    // The exits of maps nested in the second map name their entries by
    // the second state's ids: they take the copies' (an inner map's exit
    // named a node of the first state once).
    let copies: Vec<NodeId> = ids
        .iter()
        .filter(|(old, _)| **old != plan.e2 && **old != plan.x2)
        .map(|(_, new)| *new)
        .collect();
    for new in copies {
        if let Some(Node::MapExit(x)) = out.graph.node_weight_mut(new)
            && let Some(&entry) = ids.get(&x.entry)
        {
            x.entry = entry;
        }
    }
    // Connectors of the second map, renamed where the first has them.
    let (in1, _) = connectors(&out, plan.e1);
    let (xin1, _) = connectors(&out, plan.x1);
    let mut entry_names: BTreeMap<String, String> = BTreeMap::new();
    let mut exit_names: BTreeMap<String, String> = BTreeMap::new();
    let mut taken_in = in1.clone();
    // A container the second map reads from outside with the memlet the
    // first already brings in shares the first's connector: one connector
    // per container and range, as a map the frontend built would have (a
    // chain of `k` fusions made `k` connectors of one array once).
    let outer1: Vec<(&Memlet, &str)> = out
        .in_edges(plan.e1)
        .filter_map(|(_, _, e)| Some((e.memlet.as_ref()?, e.dst_conn.as_deref()?)))
        .collect();
    let mut shared: BTreeMap<String, String> = BTreeMap::new();
    for (_, _, e) in s2.in_edges(plan.e2) {
        if let (Some(m), Some(c)) = (&e.memlet, &e.dst_conn)
            && !plan.through.contains_key(&m.data)
            && let Some((_, c1)) = outer1.iter().find(|(m1, _)| *m1 == m)
            && let (Some(b2), Some(b1)) = (
                c.strip_prefix(MAP_IN_PREFIX),
                c1.strip_prefix(MAP_IN_PREFIX),
            )
        {
            shared.insert(b2.to_owned(), b1.to_owned());
        }
    }
    for c in connectors(s2, plan.e2).0 {
        let base = c.strip_prefix(MAP_IN_PREFIX).unwrap_or(&c).to_owned();
        if let Some(b1) = shared.get(&base) {
            entry_names.insert(base, b1.clone());
            continue;
        }
        let fresh = fresh_connector(&taken_in, &format!("{MAP_IN_PREFIX}{base}"));
        taken_in.insert(fresh.clone());
        entry_names.insert(base, fresh.trim_start_matches(MAP_IN_PREFIX).to_owned());
    }
    let mut taken_out = xin1.clone();
    for c in connectors(s2, plan.x2).0 {
        let base = c.strip_prefix(MAP_IN_PREFIX).unwrap_or(&c).to_owned();
        let fresh = fresh_connector(&taken_out, &format!("{MAP_IN_PREFIX}{base}"));
        taken_out.insert(fresh.clone());
        exit_names.insert(base, fresh.trim_start_matches(MAP_IN_PREFIX).to_owned());
    }
    let rename_conn = |names: &BTreeMap<String, String>, c: &Option<String>| {
        c.as_ref().map(|c| {
            for prefix in [MAP_IN_PREFIX, MAP_OUT_PREFIX] {
                if let Some(base) = c.strip_prefix(prefix)
                    && let Some(n) = names.get(base)
                {
                    return format!("{prefix}{n}");
                }
            }
            c.clone()
        })
    };
    // One access node per passed container inside the scope (a scalar of
    // the point for a dead transient).
    let mut passed: BTreeMap<String, (NodeId, Memlet)> = BTreeMap::new();
    let mut scalars: BTreeMap<String, String> = BTreeMap::new();
    for (x, subset) in &plan.through {
        let Some((w, conn)) = writer.get(x).cloned() else {
            continue;
        };
        let (name, memlet) = if dead.contains(x) {
            let desc = &sdfg.containers[x];
            let scalar = fresh_container(sdfg, x);
            sdfg.containers.insert(
                scalar.clone(),
                DataDesc::scalar(desc.dtype).into_transient(),
            );
            let m = Memlet::new(scalar.clone(), Subset::at(vec![SymExpr::int(0)]));
            scalars.insert(x.clone(), scalar.clone());
            (scalar, m)
        } else {
            (x.clone(), Memlet::new(x.clone(), subset.clone()))
        };
        let a = out.add_access(name);
        out.graph.add_edge(
            w,
            a,
            Edge {
                src_conn: conn,
                dst_conn: None,
                memlet: Some(memlet.clone()),
            },
        );
        passed.insert(x.clone(), (a, memlet));
    }
    for (_, src, dst, e) in s2.edges() {
        let mut e = e.clone();
        if let Some(m) = &e.memlet {
            e.memlet = Some(renamed(m, &plan.renames));
        }
        // A read of a passed container: from the access node in the scope.
        if src == plan.e2
            && let Some(m) = &e.memlet
            && let Some((a, memlet)) = passed.get(&m.data)
        {
            out.graph.add_edge(
                *a,
                ids[&dst],
                Edge {
                    src_conn: None,
                    dst_conn: e.dst_conn,
                    memlet: Some(memlet.clone()),
                },
            );
            continue;
        }
        // ... and its outer edge into the second map's entry is gone.
        if dst == plan.e2
            && let Some(m) = &e.memlet
            && passed.contains_key(&m.data)
        {
            continue;
        }
        // ... and so is the outer edge of a connector the first map's
        // shares.
        if dst == plan.e2
            && let Some(c) = e
                .dst_conn
                .as_deref()
                .and_then(|c| c.strip_prefix(MAP_IN_PREFIX))
            && shared.contains_key(c)
        {
            continue;
        }
        let (s, d) = (ids[&src], ids[&dst]);
        if dst == plan.e2 || src == plan.e2 {
            e.src_conn = rename_conn(&entry_names, &e.src_conn);
            e.dst_conn = rename_conn(&entry_names, &e.dst_conn);
        }
        if dst == plan.x2 || src == plan.x2 {
            e.src_conn = rename_conn(&exit_names, &e.src_conn);
            e.dst_conn = rename_conn(&exit_names, &e.dst_conn);
        }
        out.graph.add_edge(s, d, e);
    }
    // The entry's and exit's connectors.
    let used_in: BTreeSet<String> = out
        .in_edges(plan.e1)
        .filter_map(|(_, _, e)| e.dst_conn.clone())
        .collect();
    for base in entry_names.values() {
        let (cin, cout) = (
            format!("{MAP_IN_PREFIX}{base}"),
            format!("{MAP_OUT_PREFIX}{base}"),
        );
        if used_in.contains(&cin) {
            add_connectors(&mut out, plan.e1, &cin, &cout);
        }
    }
    for base in exit_names.values() {
        let (cin, cout) = (
            format!("{MAP_IN_PREFIX}{base}"),
            format!("{MAP_OUT_PREFIX}{base}"),
        );
        add_connectors(&mut out, plan.x1, &cin, &cout);
    }
    // An in-place update of the second map comes after every read of the
    // first map's: a read the first's writer does not depend on (a value
    // read from an access node inside the scope) gets an edge ordering it
    // before the second's writers.
    for x in &plan.in_place {
        let Some(&(w, _)) = writer.get(x) else {
            continue;
        };
        let before_w = ancestors(&out, w);
        let readers: BTreeSet<NodeId> = out
            .edges()
            .filter(|(_, _, d, e)| {
                first_nodes.contains(d)
                    && *d != plan.x1
                    && *d != w
                    && !before_w.contains(d)
                    && e.memlet.as_ref().is_some_and(|m| &m.data == x)
            })
            .map(|(_, _, d, _)| d)
            .collect();
        let writers: Vec<NodeId> = s2
            .in_edges(plan.x2)
            .filter(|(_, _, e)| e.memlet.as_ref().is_some_and(|m| &m.data == x))
            .filter_map(|(_, src, _)| ids.get(&src).copied())
            .collect();
        for &r in &readers {
            for &t in &writers {
                out.graph.add_edge(r, t, Edge::empty());
            }
        }
    }
    // A dead transient is no longer written back, and no longer exists.
    for x in dead {
        let to_exit: Vec<_> = out
            .in_edges(plan.x1)
            .filter(|(_, _, e)| e.memlet.as_ref().is_some_and(|m| &m.data == x))
            .map(|(id, _, e)| (id, e.dst_conn.clone()))
            .collect();
        for (id, conn) in to_exit {
            drop_exit_edge(&mut out, plan.x1, id, conn);
        }
        sdfg.containers.remove(x);
    }
    // What is left of a dead transient is inside the scope, at the point's
    // element (an earlier fusion passed it through an access node): the
    // point's scalar now.
    for (x, scalar) in &scalars {
        let ids: Vec<NodeId> = out.nodes().map(|(id, _)| id).collect();
        for id in ids {
            if let Some(Node::Access(a)) = out.graph.node_weight_mut(id)
                && &a.data == x
            {
                a.data = scalar.clone();
            }
        }
        for e in out.graph.edge_weights_mut() {
            if let Some(m) = &mut e.memlet
                && &m.data == x
            {
                *m = Memlet::new(scalar.clone(), Subset::at(vec![SymExpr::int(0)]));
            }
        }
    }
    crate::nest::drop_lonely_access_nodes(&mut out);
    out
}
