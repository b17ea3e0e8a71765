//! Copy maps become copies: a map whose only work is `out = in` between
//! two contiguous blocks, element for element in order, is one copy between
//! the two access nodes.
//!
//! The frontend lowers every assignment of array sections (`A[r] = T`,
//! `B[:] = A`) to a map of a tasklet `out = in`; on a device that is a
//! kernel launch. A copy between access nodes is a runtime copy instead (a
//! `MemcpyAsync` on the device, no launch), as DaCe's frontend makes for
//! such assignments. The rewrite is done only where the copy is one block
//! of memory on both sides, so it never turns into many runtime calls:
//!
//! - the map holds one tasklet `out = in` (or two, through a transient
//!   scalar of the point: `x = a.copy(); y[:] = x` once map fusion made `x`
//!   a scalar), the same type on both sides,
//!   reading `X[f(p)]` and writing `Y[g(p)]` with no write-conflict
//!   resolution, and unit steps;
//! - in both, the map's parameters appear in order, each alone (plus a
//!   constant offset) in one dimension, and the other dimensions are fixed
//!   indices before them (or of extent one, anywhere: `keepdims`);
//! - both containers are row-major contiguous and, over the map's range,
//!   every parameter but the first covers its dimension whole: each side is
//!   one run of consecutive elements, in the same order.

use crate::nest::{copy_tasklet, single_map};
use sdfg_ir::{
    BlockKind, DataDesc, Edge, Memlet, Node, NodeId, Range, Sdfg, State, Subset, SymExpr,
};

/// Rewrites every copy map it can (see the [module docs](self)); returns
/// one line per copy (`state: X -> Y`).
pub fn maps_to_copies(sdfg: &mut Sdfg) -> Vec<String> {
    let mut done = Vec::new();
    let containers = sdfg.containers.clone();
    sdfg.body.for_each_region_mut(&mut |region| {
        for block in &mut region.blocks {
            let BlockKind::State(state) = &mut block.kind else {
                continue;
            };
            if let Some(line) = rewrite(state, &containers) {
                done.push(format!("{}: {line}", block.label));
            }
        }
    });
    done
}

/// The block a map's inner memlet covers over the map's range, if it is
/// one contiguous run of `desc` in the map's order.
fn block_of(
    subset: &Subset,
    params: &[String],
    ranges: &[Range],
    desc: &DataDesc,
) -> Option<Subset> {
    let layout = desc.layout()?;
    if !layout.is_contiguous() || subset.ranges.iter().any(|r| !r.is_index()) {
        return None;
    }
    let shape = desc.shape();
    let mut out = Vec::new();
    let mut next = 0;
    for (d, r) in subset.ranges.iter().enumerate() {
        let e = &r.begin;
        let named: Vec<usize> = params
            .iter()
            .enumerate()
            .filter(|(_, p)| e.has_symbol(p))
            .map(|(k, _)| k)
            .collect();
        match named.as_slice() {
            [] => {
                // A fixed index: before the parameters, or of a dimension
                // of one element (`keepdims`) anywhere.
                if next > 0 && shape[d].as_int() != Some(1) {
                    return None;
                }
                out.push(r.clone());
            }
            [k] if *k == next => {
                let p = &params[*k];
                let (coeff, rest) = e.linear_in(p)?;
                if coeff.as_int() != Some(1) || params.iter().any(|q| rest.has_symbol(q)) {
                    return None;
                }
                let range = &ranges[*k];
                let block = Range::inclusive(&range.begin + &rest, &range.end + &rest);
                // Every parameter but the first covers its dimension.
                if *k > 0 && block != Range::full(&shape[d]) {
                    return None;
                }
                out.push(block);
                next += 1;
            }
            _ => return None,
        }
    }
    (next == params.len()).then(|| Subset::new(out))
}

/// The copy tasklet reading access node `a`, a transient scalar written
/// once and read once, into `exit`: (the tasklet, its output memlet).
fn copy_on(
    state: &State,
    a: NodeId,
    exit: NodeId,
    containers: &std::collections::BTreeMap<String, DataDesc>,
) -> Option<(NodeId, Memlet)> {
    let x = state.node(a)?.as_access()?;
    let desc = containers.get(x)?;
    if !desc.transient || !desc.is_scalar() || state.in_edges(a).count() != 1 {
        return None;
    }
    let outs: Vec<NodeId> = state.out_edges(a).map(|(_, d, _)| d).collect();
    let [t2] = outs.as_slice() else {
        return None;
    };
    let (src, mi, dst, mo) = copy_tasklet(state, *t2)?;
    (src == a && mi.data == x && dst == exit).then_some((*t2, mo))
}

fn rewrite(
    state: &mut State,
    containers: &std::collections::BTreeMap<String, DataDesc>,
) -> Option<String> {
    let (entry, exit) = single_map(state)?;
    let Some(Node::MapEntry(m)) = state.node(entry) else {
        return None;
    };
    let (params, ranges) = (m.map.params.clone(), m.map.ranges.clone());
    if ranges.iter().any(|r| r.step.as_int() != Some(1)) {
        return None;
    }
    let inner: Vec<NodeId> = state
        .nodes()
        .map(|(id, _)| id)
        .filter(|id| *id != entry && *id != exit)
        .filter(|id| state.in_edges(*id).any(|(_, s, _)| s == entry))
        .collect();
    let [t] = inner.as_slice() else {
        return None;
    };
    let (_, mi, to, mo) = copy_tasklet(state, *t)?;
    // A copy through a scalar of the point (`x = a.copy(); y[:] = x`
    // after map fusion made `x` a scalar): the two copies are one.
    let (mo, through) = if to == exit {
        (mo, None)
    } else {
        let (t2, mo2) = copy_on(state, to, exit, containers)?;
        (mo2, Some((to, t2)))
    };
    if mi.dynamic || mo.dynamic {
        return None;
    }
    let (dx, dy) = (containers.get(&mi.data)?, containers.get(&mo.data)?);
    let Some(Node::Tasklet(tasklet)) = state.node(*t) else {
        return None;
    };
    let dtype = tasklet.inputs.first().map(|c| c.dtype);
    if Some(dx.dtype) != dtype || Some(dy.dtype) != dtype || mi.data == mo.data {
        return None;
    }
    let sx = block_of(&mi.subset, &params, &ranges, dx)?;
    let sy = block_of(&mo.subset, &params, &ranges, dy)?;
    // The outer access nodes.
    let source = state
        .in_edges(entry)
        .find(|(_, _, e)| e.memlet.as_ref().is_some_and(|m| m.data == mi.data))
        .map(|(_, s, _)| s)?;
    let sink = state
        .out_edges(exit)
        .find(|(_, _, e)| e.memlet.as_ref().is_some_and(|m| m.data == mo.data))
        .map(|(_, d, _)| d)?;
    let (x, y) = (mi.data.clone(), mo.data.clone());
    let volume: SymExpr = sx.num_elements();
    let memlet = Memlet {
        volume,
        ..Memlet::new(x.clone(), sx.clone())
    }
    .with_other_subset(sy.clone());
    // Nothing else may hang on the map: its only in and out edges are the
    // copy's.
    if state.in_edges(entry).count() != 1 || state.out_edges(exit).count() != 1 {
        return None;
    }
    state.graph.remove_node(*t);
    if let Some((scalar, t2)) = through {
        state.graph.remove_node(scalar);
        state.graph.remove_node(t2);
    }
    state.graph.remove_node(entry);
    state.graph.remove_node(exit);
    state.graph.add_edge(
        source,
        sink,
        Edge {
            src_conn: None,
            dst_conn: None,
            memlet: Some(memlet),
        },
    );
    Some(format!("`{x}[{sx}]` -> `{y}[{sy}]`"))
}
