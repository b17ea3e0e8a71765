//! Copy maps become copies: a map whose only work is `out = in` between
//! two boxes, element for element in order, that one runtime copy can
//! move, is one copy between the two access nodes.
//!
//! The frontend lowers every assignment of array sections (`A[r] = T`,
//! `B[:] = A`) to a map of a tasklet `out = in`; on a device that is a
//! kernel launch. A copy between access nodes is a runtime copy instead (a
//! `MemcpyAsync` on the device, no launch), as DaCe's frontend makes for
//! such assignments. The rewrite is done only where the copy is one
//! runtime call, so it never turns into many:
//!
//! - the map holds one tasklet `out = in` (or two, through a transient
//!   scalar of the point: `x = a.copy(); y[:] = x` once map fusion made `x`
//!   a scalar), the same type on both sides,
//!   reading `X[f(p)]` and writing `Y[g(p)]` with no write-conflict
//!   resolution, and unit steps;
//! - in both, the map's parameters appear in order, each alone (plus a
//!   constant offset) in one dimension, and the other dimensions are fixed
//!   indices;
//! - over the map's range, the innermost parameters' dimensions coalesce
//!   into one run of consecutive elements on both sides (each one's stride
//!   is the run of those inside it), and at most the outermost stays
//!   apart, at a stride no shorter than the run: one contiguous copy, or
//!   one two-dimensional copy (`Memcpy2DAsync`: a column, `p[:, -1] =
//!   p[:, -2]`), decided on the layouts' symbolic strides;
//! - within one container (cavity_flow's boundary conditions), the source
//!   and destination boxes lie apart ([`separated`]); the memlet names the
//!   source, as the IR's copies within one container always do.

use crate::dependence::{digits, separated};
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

/// The box a map's inner memlet covers over the map's range, with the
/// elements and the stride (in elements of the layout) of each parameter,
/// in the map's order, and whether the layout is row-major contiguous:
/// `None` unless the parameters index the dimensions in order, each
/// dimension indexed by none (a fixed index) or by consecutive parameters
/// plus an offset free of them. A dimension of one parameter takes it with
/// coefficient 1; one of several (the flat index of a reshape, `X[a * M +
/// b]` over `a < R, b < M`) takes them as the digits of one run, each
/// coefficient the elements of those inside it, so the box along that
/// dimension is one interval.
fn block_of(
    subset: &Subset,
    params: &[String],
    ranges: &[Range],
    desc: &DataDesc,
) -> Option<CopyEnd> {
    let layout = desc.layout()?;
    if subset.ranges.iter().any(|r| !r.is_index()) {
        return None;
    }
    let mut out = Vec::new();
    let mut dims = Vec::new();
    let mut next = 0;
    for (d, r) in subset.ranges.iter().enumerate() {
        let e = &r.begin;
        let named: Vec<usize> = params
            .iter()
            .enumerate()
            .filter(|(_, p)| e.has_symbol(p))
            .map(|(k, _)| k)
            .collect();
        let Some((&first, &last)) = named.first().zip(named.last()) else {
            out.push(r.clone());
            continue;
        };
        if first != next || last + 1 - first != named.len() {
            return None;
        }
        let spans = spans(&ranges[first..=last]);
        let (coeffs, base) = digits(e, &params[first..=last], &spans, Some(&SymExpr::int(1)))?;
        let stride = layout.strides.get(d)?;
        let run = spans
            .iter()
            .fold(SymExpr::int(1), |acc, (_, count)| &acc * count);
        for ((_, count), coeff) in spans.into_iter().zip(coeffs) {
            dims.push((count, stride * &coeff));
        }
        out.push(Range::inclusive(base.clone(), &base + &run - 1));
        next = last + 1;
    }
    (next == params.len()).then(|| CopyEnd {
        block: Subset::new(out),
        dims,
        row_major: layout.is_contiguous(),
    })
}

/// [`block_of`] for an end whose indices mix the parameters (the read of
/// `y[:] = np.reshape(T, (N,))` for a 2-D `T`: `T[i // M, i % M]`), in a
/// row-major contiguous layout: the flat index, `sum(index * stride)`, must
/// be affine in the parameters (the canonical form folds `i // M * M + i %
/// M` into `i`), the points numbering one run of elements in order (the
/// innermost parameter's coefficient 1, each other's the elements of those
/// inside it). The box is the
/// map's propagated memlet `outer` where it holds exactly the elements
/// copied, else the whole container where the copy starts at its first
/// element and has its size: a box holding all the elements copied and
/// no more in a row-major layout is their one run.
fn flat_end(
    inner: &Subset,
    outer: &Subset,
    params: &[String],
    ranges: &[Range],
    desc: &DataDesc,
) -> Option<CopyEnd> {
    let layout = desc.layout()?;
    if !layout.is_contiguous() || inner.ranges.iter().any(|r| !r.is_index()) {
        return None;
    }
    let flat = inner
        .ranges
        .iter()
        .zip(&layout.strides)
        .fold(SymExpr::int(0), |acc, (r, s)| acc + &r.begin * s);
    // Consecutive points at consecutive elements, in increasing order (a
    // reversal, `A[M - 1 - i]`, covers a run too, backwards: no copy).
    let spans = spans(ranges);
    let (coeffs, start) = digits(&flat, params, &spans, Some(&SymExpr::int(1)))?;
    let volume = spans
        .iter()
        .fold(SymExpr::int(1), |acc, (_, count)| &acc * count);
    let dims: Vec<(SymExpr, SymExpr)> = spans
        .into_iter()
        .map(|(_, count)| count)
        .zip(coeffs)
        .collect();
    let whole = Subset::full(&desc.shape());
    let size = |s: &Subset| s.num_elements().joined_powers();
    let volume = volume.joined_powers();
    let block = if size(outer) == volume {
        outer.clone()
    } else if start.is_zero() && size(&whole) == volume {
        whole
    } else {
        return None;
    };
    Some(CopyEnd {
        block,
        dims,
        row_major: true,
    })
}

/// Each range's first value and number of values (unit steps), as
/// [`digits`] takes them.
fn spans(ranges: &[Range]) -> Vec<(SymExpr, SymExpr)> {
    ranges
        .iter()
        .map(|r| (r.begin.clone(), r.num_elements()))
        .collect()
}

/// One end of a copy, as [`block_of`] finds it.
struct CopyEnd {
    /// The box copied.
    block: Subset,
    /// The elements and the stride of each parameter's dimension.
    dims: Vec<(SymExpr, SymExpr)>,
    /// Whether the layout is row-major contiguous: a dimension's stride is
    /// then the elements of all the dimensions inside it, at least any box
    /// of them in bounds.
    row_major: bool,
}

/// Whether copying one box into the other is one runtime call, as the
/// emitter issues it: the innermost dimensions coalesce into one run of
/// consecutive elements on both sides, and at most the outermost stays, at
/// a stride no shorter than the run on either side (a two-dimensional
/// copy: a column, `p[:, N - 1] = p[:, N - 2]`). That stride is known to be
/// long enough where it exceeds the run by a constant, or in a row-major
/// layout, where it spans the whole dimensions inside it, which the box
/// (in bounds, as the validator and the runtime check) does not exceed.
fn one_call(a: &CopyEnd, b: &CopyEnd) -> bool {
    let mut run = SymExpr::int(1);
    for (k, ((count, sa), (_, sb))) in a.dims.iter().zip(&b.dims).enumerate().rev() {
        if *sa == run && *sb == run {
            run = &run * count;
            continue;
        }
        let spaced = |side: &CopyEnd, s: &SymExpr| {
            side.row_major
                || matches!(
                    s.try_compare(&run),
                    Some(std::cmp::Ordering::Greater | std::cmp::Ordering::Equal)
                )
        };
        return k == 0 && spaced(a, sa) && spaced(b, sb);
    }
    true
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
    if Some(dx.dtype) != dtype || Some(dy.dtype) != dtype {
        return None;
    }
    let outer_in = state
        .in_edges(entry)
        .find_map(|(_, _, e)| e.memlet.as_ref().filter(|m| m.data == mi.data))?;
    let outer_out = state
        .out_edges(exit)
        .find_map(|(_, _, e)| e.memlet.as_ref().filter(|m| m.data == mo.data))?;
    let end = |inner: &Memlet, outer: &Memlet, desc: &DataDesc| {
        block_of(&inner.subset, &params, &ranges, desc)
            .or_else(|| flat_end(&inner.subset, &outer.subset, &params, &ranges, desc))
    };
    let from = end(&mi, outer_in, dx)?;
    let to = end(&mo, outer_out, dy)?;
    if !one_call(&from, &to) {
        return None;
    }
    let (sx, sy) = (from.block, to.block);
    // Within one container the two boxes must lie apart: overlapping ones
    // would need a memmove, which the runtimes' copies are not.
    if mi.data == mo.data && !separated(&sx, &sy, &[], &[], &Default::default()) {
        return None;
    }
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
