//! Memlet propagation: what a map scope accesses, seen from outside.
//!
//! Inside a map, a memlet describes what *one iteration* touches, in terms of
//! the map's parameters (`A[i, 0:M]`). The edge that brings the data into the
//! scope must describe what *all iterations together* touch: the union of the
//! inner subsets over the map's range (`A[0:N, 0:M]`), and a volume that many
//! times larger. This module computes that union exactly for bounds that are
//! affine in each parameter with a constant coefficient, which covers every
//! subset of the NPBench kernels; for anything else it falls back to the
//! whole extent of the dimension, which is always correct.

use crate::memlet::{Memlet, Range, Subset};
use crate::node::Map;
use crate::symbolic::SymExpr;
use std::cmp::Ordering;

/// Smallest and largest value a map parameter takes over its range, or `None`
/// when the step's sign is unknown.
fn param_extremes(range: &Range) -> Option<(SymExpr, SymExpr)> {
    let step = range.step.as_int()?;
    let last = match step {
        1 | -1 => range.end.clone(),
        s => {
            let s = SymExpr::int(s);
            &range.begin + &(&range.end - &range.begin).floor_div(&s) * &s
        }
    };
    match step.cmp(&0) {
        Ordering::Greater => Some((range.begin.clone(), last)),
        Ordering::Less => Some((last, range.begin.clone())),
        Ordering::Equal => None,
    }
}

/// Bounds of `expr` over all iterations of `map`: `(lowest, highest)`, or
/// `None` when `expr` is not affine with constant coefficients in a parameter.
fn expr_bounds(expr: &SymExpr, map: &Map) -> Option<(SymExpr, SymExpr)> {
    let mut lo = expr.clone();
    let mut hi = expr.clone();
    for (param, range) in map.dims() {
        let (lo_coeff, _) = lo.linear_in(param)?;
        let (hi_coeff, _) = hi.linear_in(param)?;
        if lo_coeff.is_zero() && hi_coeff.is_zero() {
            continue;
        }
        let (pmin, pmax) = param_extremes(range)?;
        let at = |e: &SymExpr, v: &SymExpr| {
            e.subs(&std::iter::once((param.clone(), v.clone())).collect())
        };
        // The coefficient's sign decides which end of the parameter's range
        // minimizes the expression.
        let (lo_at, hi_at) = match (lo_coeff.as_int()?.cmp(&0), hi_coeff.as_int()?.cmp(&0)) {
            (Ordering::Less, _) | (_, Ordering::Less) => (&pmax, &pmin),
            _ => (&pmin, &pmax),
        };
        // Both copies carry the same coefficient (they only differ in the
        // parameters already substituted), so one decision serves both.
        lo = at(&lo, lo_at);
        hi = at(&hi, hi_at);
    }
    Some((lo, hi))
}

/// Propagates one dimension's range; `None` when the bounds are not affine.
fn propagate_range(range: &Range, map: &Map) -> Option<Range> {
    let mentions_param = map.params.iter().any(|p| range.any_symbol(&mut |s| s == p));
    if !mentions_param {
        return Some(range.clone());
    }
    // `A[i]` under `i = b:e:s` is exactly `A[b:e:s]`, stride included.
    if range.is_index()
        && range.step.as_int() == Some(1)
        && let Some(p) = range.begin.is_symbol()
        && let Some(r) = map.dims().find_map(|(q, r)| (q == p).then_some(r))
        && r.step.as_int().is_some_and(|s| s > 0)
    {
        return Some(r.clone());
    }
    let (begin, end) = if range.step.as_int().is_some_and(|s| s < 0) {
        (&range.end, &range.begin)
    } else {
        (&range.begin, &range.end)
    };
    if range
        .step
        .any_symbol(&mut |s| map.params.iter().any(|p| p == s))
    {
        return None;
    }
    let (lo, _) = expr_bounds(begin, map)?;
    let (_, hi) = expr_bounds(end, map)?;
    Some(Range::inclusive(lo, hi))
}

/// Whether the box of the dimensions propagated one by one is exactly
/// what the points touch together: every dimension naming a parameter is
/// the index `p + c` or `c - p` of its own parameter `p` (over a unit-step
/// range unless it is `p` itself, whose propagation keeps the step). A diagonal `A[j, j]` (one parameter in two dimensions), `A[2 * i]`
/// (every other element) or `A[i + j]` touch less than their box: the
/// memlet is then dynamic, so no pass takes it for a write of every
/// element of the box (the offload pass would skip copying in the rest).
fn jointly_exact(subset: &Subset, map: &Map) -> bool {
    let mut used: Vec<&str> = Vec::new();
    for r in &subset.ranges {
        let named: Vec<(&String, &Range)> = map
            .dims()
            .filter(|(p, _)| r.any_symbol(&mut |s| s == p.as_str()))
            .collect();
        match named.as_slice() {
            [] => {}
            [(p, range)] => {
                let plain = r.begin.is_symbol() == Some(p.as_str());
                let shifted = r.is_index()
                    && range.step.as_int() == Some(1)
                    && r.begin.linear_in(p).is_some_and(|(coeff, rest)| {
                        matches!(coeff.as_int(), Some(1 | -1))
                            && !map.params.iter().any(|q| rest.has_symbol(q))
                    });
                if !(r.is_index() && (plain || shifted)) || used.contains(&p.as_str()) {
                    return false;
                }
                used.push(p.as_str());
            }
            _ => return false,
        }
    }
    true
}

/// The subset outside `map` for one subset inside it: the box of
/// [`propagate_memlet`] without its volume and exactness, for a caller that
/// needs only the bounds (the validator's bounds check inside scopes).
pub fn propagate_subset(inner: &Subset, map: &Map, shape: &[SymExpr]) -> Subset {
    propagate_ranges(inner, map, shape).0
}

/// The propagated box, and whether every dimension's bounds were affine
/// (otherwise the dimension takes the container's whole extent).
fn propagate_ranges(inner: &Subset, map: &Map, shape: &[SymExpr]) -> (Subset, bool) {
    let mut affine = true;
    let ranges = inner
        .ranges
        .iter()
        .enumerate()
        .map(|(d, r)| {
            propagate_range(r, map).unwrap_or_else(|| {
                affine = false;
                match shape.get(d) {
                    Some(extent) => Range::full(extent),
                    None => r.clone(),
                }
            })
        })
        .collect();
    (Subset::new(ranges), affine)
}

/// The memlet outside `map` for one memlet inside it.
///
/// `shape` is the accessed container's shape, used for dimensions whose
/// bounds are not affine in the parameters (the whole extent is taken).
pub fn propagate_memlet(inner: &Memlet, map: &Map, shape: &[SymExpr]) -> Memlet {
    let (subset, affine) = propagate_ranges(&inner.subset, map, shape);
    let exact = affine && jointly_exact(&inner.subset, map);
    let volume = &inner.volume * &map.num_iterations();
    // The product still names a parameter when an inner extent depends on
    // it (a triangular nest): the exact count is a sum over the range, so
    // take the propagated subset's size, an upper bound, instead.
    let (volume, exact_volume) = if map.params.iter().any(|p| volume.has_symbol(p)) {
        (subset.num_elements(), false)
    } else {
        (volume, true)
    };
    Memlet {
        data: inner.data.clone(),
        subset,
        other_subset: None,
        wcr: inner.wcr,
        volume,
        dynamic: inner.dynamic || !exact || !exact_volume,
    }
}

/// The memlet outside `map` for several memlets inside it that share one
/// connector: the bounding union of each one's propagation. `None` when the
/// list is empty or the memlets name different containers or ranks.
pub fn propagate_union(inner: &[&Memlet], map: &Map, shape: &[SymExpr]) -> Option<Memlet> {
    let (first, rest) = inner.split_first()?;
    let mut acc = propagate_memlet(first, map, shape);
    for m in rest {
        if m.data != acc.data {
            return None;
        }
        let p = propagate_memlet(m, map, shape);
        acc.subset = acc.subset.bounding_union(&p.subset)?;
        acc.volume = &acc.volume + &p.volume;
        acc.dynamic |= p.dynamic;
        if acc.wcr != p.wcr {
            acc.wcr = None;
            acc.dynamic = true;
        }
    }
    Some(acc)
}

/// Recomputes the memlets outside every map scope of `state` from the
/// memlets inside it, innermost scopes first.
///
/// For a map entry, the edge arriving at `IN_x` gets the union of the edges
/// leaving `OUT_x`, propagated over the map; for a map exit, the edges leaving
/// `OUT_x` get the union of the edges arriving at `IN_x`. Passes call this
/// after they change what a scope accesses. `containers` gives the shapes for
/// non-affine fallbacks. Scopes whose connectors carry no inner memlets are
/// left alone; an invalid scope structure leaves the state unchanged.
pub fn propagate_state(
    state: &mut crate::state::State,
    containers: &std::collections::BTreeMap<String, crate::data::DataDesc>,
) {
    use crate::node::{MAP_IN_PREFIX, MAP_OUT_PREFIX, Node};
    use petgraph::Direction;
    use petgraph::visit::EdgeRef;

    let Ok(tree) = state.scope_tree() else {
        return;
    };
    // Scope nodes, deepest first, so inner propagation feeds outer propagation.
    let mut scope_nodes: Vec<(usize, crate::node::NodeId)> = state
        .nodes()
        .filter(|(_, n)| matches!(n, Node::MapEntry(_) | Node::MapExit(_)))
        .map(|(id, _)| (tree.ancestors(id).len(), id))
        .collect();
    scope_nodes.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));

    for (_, id) in scope_nodes {
        let (map, is_entry, connectors) = match &state.graph[id] {
            Node::MapEntry(e) => (e.map.clone(), true, e.out_connectors.clone()),
            Node::MapExit(x) => match state.node(x.entry) {
                Some(Node::MapEntry(e)) => (e.map.clone(), false, x.in_connectors.clone()),
                _ => continue,
            },
            _ => continue,
        };
        for inner_conn in connectors {
            // Inner side: edges leaving OUT_x of an entry, or arriving at IN_x of an exit.
            let (inner_dir, outer_dir, outer_conn) = if is_entry {
                (
                    Direction::Outgoing,
                    Direction::Incoming,
                    inner_conn.replacen(MAP_OUT_PREFIX, MAP_IN_PREFIX, 1),
                )
            } else {
                (
                    Direction::Incoming,
                    Direction::Outgoing,
                    inner_conn.replacen(MAP_IN_PREFIX, MAP_OUT_PREFIX, 1),
                )
            };
            let conn_of = |e: &crate::node::Edge, dir: Direction| match dir {
                Direction::Outgoing => e.src_conn.clone(),
                Direction::Incoming => e.dst_conn.clone(),
            };
            let inner: Vec<Memlet> = state
                .graph
                .edges_directed(id, inner_dir)
                .filter(|e| conn_of(e.weight(), inner_dir).as_deref() == Some(inner_conn.as_str()))
                .filter_map(|e| e.weight().memlet.clone())
                .collect();
            let Some(data) = inner.first().map(|m| m.data.clone()) else {
                continue;
            };
            let shape = containers
                .get(&data)
                .map(crate::data::DataDesc::shape)
                .unwrap_or_default();
            let refs: Vec<&Memlet> = inner.iter().collect();
            let Some(outer) = propagate_union(&refs, &map, &shape) else {
                continue;
            };
            let targets: Vec<crate::node::EdgeId> = state
                .graph
                .edges_directed(id, outer_dir)
                .filter(|e| conn_of(e.weight(), outer_dir).as_deref() == Some(outer_conn.as_str()))
                .map(|e| e.id())
                .collect();
            for t in targets {
                if let Some(edge) = state.graph.edge_weight_mut(t) {
                    edge.memlet = Some(outer.clone());
                }
            }
        }
    }
}
