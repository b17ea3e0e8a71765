//! Folding element-wise scaling and accumulation into vendor GEMM calls.
//!
//! NumPy's `C[:] = alpha * A @ B + beta * C` lowers to three steps: a map
//! computing `alpha * A` into a transient, the product into a second
//! transient, and a map adding `beta * C`. BLAS computes `C = alpha A B +
//! beta C` in one call, in place, with the scales as values. Once library
//! lowering has kept a device-wide product as a vendor GEMM, this step
//! absorbs its neighbours, within one region of the control flow:
//!
//! - **prologue**: the state right before the call is one map computing
//!   `s * X` (or `X * s`) element by element over the whole of the
//!   transient the call reads as `_a` or `_b`, where `s` is a scalar the
//!   host holds: the call reads `X` instead, and `alpha` becomes the value
//!   of `s` (the `_alpha` connector);
//! - **epilogue**: the state right after it is one map computing `T + t * C`
//!   (either operand order, `C * t`, or `T + C`) element by element over the
//!   whole of the call's output transient `T`, into `C` at the same
//!   elements: the call writes `C` in place, accumulating it with `beta` the
//!   value of `t` (the `_beta` connector), or 1.
//!
//! A transient is only absorbed when nothing but the two states touches it,
//! and a state is only removed when its transition assigns nothing.
//! Anything else is left as it was: the result is the same, with the
//! kernels and temporaries the fold would have removed.

use crate::dependence::RegionUse;
use crate::library::operands;
use sdfg_ir::code::{BinaryOp, Expr, Stmt};
use sdfg_ir::{
    BlockKind, DataDesc, LibraryOp, Literal, Memlet, Node, NodeId, Region, Sdfg, Side, State,
    Subset, SymExpr,
};
use std::collections::{BTreeMap, BTreeSet};

/// Folds every prologue and epilogue it can into the vendor GEMMs of
/// `sdfg` (top level only: a vendor call is issued by the host); returns
/// one line per fold, for the lowering report.
pub(crate) fn fold_gemm_scales(sdfg: &mut Sdfg) -> Vec<String> {
    let mut gemms = false;
    sdfg.walk_blocks(&mut |_, _, b| {
        if let BlockKind::State(s) = &b.kind {
            gemms |= s.nodes().any(
                |(_, n)| matches!(n, Node::Library(l) if matches!(l.op, LibraryOp::Gemm { .. })),
            );
        }
    });
    if !gemms {
        return Vec::new();
    }
    let states_of = states_per_container(sdfg);
    let mut lines = Vec::new();
    let Sdfg {
        body, containers, ..
    } = sdfg;
    let mut removed: Vec<String> = Vec::new();
    let mut stack = vec![body];
    while let Some(region) = stack.pop() {
        fold_region(region, containers, &states_of, &mut removed, &mut lines);
        for block in &mut region.blocks {
            match &mut block.kind {
                BlockKind::Loop(l) => stack.push(&mut l.body),
                BlockKind::Conditional(c) => {
                    stack.extend(c.branches.iter_mut().map(|(_, r)| r));
                    stack.extend(c.otherwise.as_mut());
                }
                _ => {}
            }
        }
    }
    for x in removed {
        containers.remove(&x);
    }
    lines
}

/// For each container, the labels of the blocks that access it (one per
/// access), from the region's uses; interstate reads count as their block.
fn states_per_container(sdfg: &Sdfg) -> BTreeMap<String, Vec<String>> {
    let symbols: BTreeSet<String> = sdfg.symbols.keys().cloned().collect();
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for a in RegionUse::of(&sdfg.body, &symbols).accesses {
        let at = if a.interstate {
            "<interstate>".to_owned()
        } else {
            a.block
        };
        out.entry(a.data).or_default().push(at);
    }
    out
}

fn fold_region(
    region: &mut Region,
    containers: &BTreeMap<String, DataDesc>,
    states_of: &BTreeMap<String, Vec<String>>,
    removed: &mut Vec<String>,
    lines: &mut Vec<String>,
) {
    let mut g = 0;
    while g < region.blocks.len() {
        let Some(call) = state_at(region, g).and_then(lone_gemm) else {
            g += 1;
            continue;
        };
        let label = region.blocks[g].label.clone();
        // Only the transient the call reads or writes, touched by nothing
        // but the call's state and `other`'s.
        let private = |x: &str, other: &str| {
            containers.get(x).is_some_and(|d| d.transient)
                && states_of
                    .get(x)
                    .is_some_and(|s| s.iter().all(|l| *l == label || l == other))
        };
        // The epilogue first: removing the prologue moves the call.
        if g + 1 < region.blocks.len()
            && region.blocks[g].transition.assignments.is_empty()
            && let Some(q) = state_at(region, g + 1)
            && let Some(out) = operand(state_of_call(region, g), call, "_c", false)
            && private(&out, &region.blocks[g + 1].label)
            && let Some(e) = epilogue(q, &out, containers)
        {
            let next = region.blocks.remove(g + 1);
            region.blocks[g].transition = next.transition;
            if let BlockKind::State(s) = &mut region.blocks[g].kind {
                apply_epilogue(s, call, &e, containers);
            }
            removed.push(out);
            lines.push(format!(
                "gemm in state `{label}`: accumulates into `{}` in place (state `{}` folded)",
                e.target, next.label
            ));
        }
        if g > 0
            && region.blocks[g - 1].transition.assignments.is_empty()
            && let Some(p) = state_at(region, g - 1)
        {
            let before = region.blocks[g - 1].label.clone();
            let found = ["_a", "_b"].into_iter().find_map(|conn| {
                let data = operand(state_of_call(region, g), call, conn, true)?;
                if !private(&data, &before) {
                    return None;
                }
                let pro = prologue(p, &data, containers)?;
                Some((conn, data, pro))
            });
            if let Some((conn, data, pro)) = found {
                region.blocks.remove(g - 1);
                g -= 1;
                if let BlockKind::State(s) = &mut region.blocks[g].kind {
                    apply_prologue(s, call, conn, &data, &pro);
                }
                removed.push(data);
                lines.push(format!(
                    "gemm in state `{label}`: reads `{}` scaled by `{}` (state `{before}` folded)",
                    pro.source, pro.scale
                ));
            }
        }
        g += 1;
    }
}

/// The state of block `k`, if it is one.
fn state_at(region: &Region, k: usize) -> Option<&State> {
    match &region.blocks.get(k)?.kind {
        BlockKind::State(s) => Some(s),
        _ => None,
    }
}

/// The state of block `g`, known to hold the call.
fn state_of_call(region: &Region, g: usize) -> &State {
    match &region.blocks[g].kind {
        BlockKind::State(s) => s,
        _ => unreachable!("block {g} was matched as a state"),
    }
}

/// The node of a state's only computation, when it is a device-wide vendor
/// GEMM without transposes, scales or accumulation (as vendor lowering
/// makes it), among access nodes.
fn lone_gemm(state: &State) -> Option<NodeId> {
    let mut call = None;
    for (id, n) in state.nodes() {
        match n {
            Node::Access(_) => {}
            Node::Library(l)
                if call.is_none()
                    && l.schedule.is_device()
                    && matches!(
                        &l.op,
                        LibraryOp::Gemm {
                            beta,
                            trans_a: false,
                            trans_b: false,
                            alpha_input: false,
                            beta_input: false,
                            ..
                        } if literal_zero(beta)
                    ) =>
            {
                call = Some(id)
            }
            _ => return None,
        }
    }
    call
}

fn literal_zero(l: &Literal) -> bool {
    matches!(l, Literal::Float { value, .. } if *value == 0.0)
}

/// The container on connector `conn` of node `id`.
fn operand(state: &State, id: NodeId, conn: &str, incoming: bool) -> Option<String> {
    operands(state, id, incoming)
        .remove(conn)
        .map(|o| o.memlet.data)
}

/// A state that is one map with one tasklet, over the whole of `data`'s
/// shape: the tasklet's statement, its inputs (connector -> memlet), its
/// output memlet, and the map's parameters.
struct Elementwise {
    value: Expr,
    inputs: BTreeMap<String, Memlet>,
    output: Memlet,
    params: Vec<String>,
}

fn elementwise(state: &State, shape: &[SymExpr]) -> Option<Elementwise> {
    let mut entry = None;
    let mut tasklet = None;
    for (id, n) in state.nodes() {
        match n {
            Node::Access(_) | Node::MapExit(_) => {}
            Node::MapEntry(m) if entry.is_none() => entry = Some(m),
            Node::Tasklet(t) if tasklet.is_none() => tasklet = Some((id, t)),
            _ => return None,
        }
    }
    let (entry, (tid, t)) = (entry?, tasklet?);
    let full = entry.map.ranges.len() == shape.len()
        && entry.map.ranges.iter().zip(shape).all(|(r, n)| {
            r.begin.as_int() == Some(0) && r.step.as_int() == Some(1) && r.num_elements() == *n
        });
    let [Stmt::Assign { target, value }] = t.body.as_slice() else {
        return None;
    };
    if !full || t.outputs.len() != 1 || t.outputs[0].name != *target {
        return None;
    }
    let inputs = state
        .in_edges(tid)
        .map(|(_, _, e)| Some((e.dst_conn.clone()?, e.memlet.clone()?)))
        .collect::<Option<BTreeMap<_, _>>>()?;
    let mut outs = state.out_edges(tid);
    let output = outs.next()?.2.memlet.clone()?;
    if outs.next().is_some() || output.wcr.is_some() {
        return None;
    }
    Some(Elementwise {
        value: value.clone(),
        inputs,
        output,
        params: entry.map.params.clone(),
    })
}

/// Whether `m` is `data` at exactly the map's point (`data[i, j]`).
fn at_point(m: &Memlet, data: &str, params: &[String]) -> bool {
    m.data == data
        && m.wcr.is_none()
        && m.subset.ranges.len() == params.len()
        && m.subset
            .ranges
            .iter()
            .zip(params)
            .all(|(r, p)| r.is_index() && r.begin.is_symbol() == Some(p.as_str()))
}

/// The host-held scalar read through input connector `conn`, if it is one.
fn host_scalar(
    e: &Elementwise,
    conn: &str,
    containers: &BTreeMap<String, DataDesc>,
) -> Option<String> {
    let m = e.inputs.get(conn)?;
    let d = containers.get(&m.data)?;
    let on_host = d.storage.side() != Some(Side::Device);
    (d.is_scalar() && on_host && m.subset.ranges.iter().all(|r| r.is_index()))
        .then(|| m.data.clone())
}

/// What a prologue folds: the array the call reads instead, and the scale.
struct Prologue {
    source: String,
    scale: String,
}

fn prologue(
    state: &State,
    data: &str,
    containers: &BTreeMap<String, DataDesc>,
) -> Option<Prologue> {
    let desc = containers.get(data)?;
    let e = elementwise(state, &desc.shape())?;
    if !at_point(&e.output, data, &e.params) {
        return None;
    }
    let Expr::Binary {
        op: BinaryOp::Mul,
        lhs,
        rhs,
    } = &e.value
    else {
        return None;
    };
    let (Expr::Var(l), Expr::Var(r)) = (&**lhs, &**rhs) else {
        return None;
    };
    for (s, x) in [(l, r), (r, l)] {
        let Some(scale) = host_scalar(&e, s, containers) else {
            continue;
        };
        let m = e.inputs.get(x)?;
        let src = containers.get(&m.data)?;
        if at_point(m, &m.data, &e.params)
            && src.shape() == desc.shape()
            && src.dtype == desc.dtype
            && containers.get(&scale)?.dtype == desc.dtype
            && src.layout() == desc.layout()
        {
            return Some(Prologue {
                source: m.data.clone(),
                scale,
            });
        }
    }
    None
}

/// What an epilogue folds: the array accumulated into, and beta's scalar.
struct Epilogue {
    target: String,
    scale: Option<String>,
}

fn epilogue(
    state: &State,
    data: &str,
    containers: &BTreeMap<String, DataDesc>,
) -> Option<Epilogue> {
    let desc = containers.get(data)?;
    let e = elementwise(state, &desc.shape())?;
    let target = e.output.data.clone();
    let tdesc = containers.get(&target)?;
    if target == data
        || !at_point(&e.output, &target, &e.params)
        || tdesc.shape() != desc.shape()
        || tdesc.dtype != desc.dtype
        || tdesc.layout() != desc.layout()
    {
        return None;
    }
    let Expr::Binary {
        op: BinaryOp::Add,
        lhs,
        rhs,
    } = &e.value
    else {
        return None;
    };
    let reads = |conn: &str, x: &str| {
        e.inputs
            .get(conn)
            .is_some_and(|m| at_point(m, x, &e.params))
    };
    for (p, q) in [(&**lhs, &**rhs), (&**rhs, &**lhs)] {
        let Expr::Var(product) = p else { continue };
        if !reads(product, data) {
            continue;
        }
        match q {
            Expr::Var(c) if reads(c, &target) => {
                return Some(Epilogue {
                    target,
                    scale: None,
                });
            }
            Expr::Binary {
                op: BinaryOp::Mul,
                lhs: a,
                rhs: b,
            } => {
                let (Expr::Var(a), Expr::Var(b)) = (&**a, &**b) else {
                    continue;
                };
                for (s, c) in [(a, b), (b, a)] {
                    if let Some(scale) = host_scalar(&e, s, containers)
                        && reads(c, &target)
                        && containers.get(&scale)?.dtype == desc.dtype
                    {
                        return Some(Epilogue {
                            target,
                            scale: Some(scale),
                        });
                    }
                }
            }
            _ => {}
        }
    }
    None
}

/// A memlet of the whole of `data`.
fn whole(data: &str, containers: &BTreeMap<String, DataDesc>) -> Memlet {
    let shape = containers.get(data).map(|d| d.shape()).unwrap_or_default();
    Memlet::new(data, Subset::full(&shape))
}

/// A one-element memlet of scalar `data`.
fn element(data: &str) -> Memlet {
    Memlet::new(data, Subset::at(vec![SymExpr::int(0)]))
}

/// Changes the scales of GEMM node `call`.
fn set_scales(state: &mut State, call: NodeId, f: impl FnOnce(&mut bool, &mut Literal, &mut bool)) {
    if let Some(Node::Library(l)) = state.graph.node_weight_mut(call)
        && let LibraryOp::Gemm {
            alpha_input,
            beta,
            beta_input,
            ..
        } = &mut l.op
    {
        f(alpha_input, beta, beta_input);
    }
}

fn apply_prologue(state: &mut State, call: NodeId, conn: &str, data: &str, p: &Prologue) {
    // The transient's access node now reads the source.
    let edge = state
        .in_edges(call)
        .find(|(_, _, e)| e.dst_conn.as_deref() == Some(conn))
        .map(|(e, src, _)| (e, src));
    if let Some((e, src)) = edge {
        if let Some(Node::Access(a)) = state.graph.node_weight_mut(src) {
            a.data = p.source.clone();
        }
        if let Some(m) = state
            .graph
            .edge_weight_mut(e)
            .and_then(|w| w.memlet.as_mut())
        {
            debug_assert_eq!(m.data, data);
            m.data = p.source.clone();
        }
    }
    let s = state.add_access(p.scale.clone());
    state.add_edge(s, None, call, Some("_alpha"), element(&p.scale));
    set_scales(state, call, |alpha, _, _| *alpha = true);
}

fn apply_epilogue(
    state: &mut State,
    call: NodeId,
    e: &Epilogue,
    containers: &BTreeMap<String, DataDesc>,
) {
    let out = state
        .out_edges(call)
        .find(|(_, _, w)| w.src_conn.as_deref() == Some("_c"))
        .map(|(id, dst, _)| (id, dst));
    let Some((edge, dst)) = out else { return };
    let m = whole(&e.target, containers);
    if let Some(Node::Access(a)) = state.graph.node_weight_mut(dst) {
        a.data = e.target.clone();
    }
    if let Some(w) = state.graph.edge_weight_mut(edge) {
        w.memlet = Some(m.clone());
    }
    let cin = state.add_access(e.target.clone());
    state.add_edge(cin, None, call, Some("_cin"), m);
    let dtype = containers
        .get(&e.target)
        .map_or(sdfg_ir::DType::Float64, |d| d.dtype);
    if let Some(scale) = &e.scale {
        let s = state.add_access(scale.clone());
        state.add_edge(s, None, call, Some("_beta"), element(scale));
    }
    let scaled = e.scale.is_some();
    set_scales(state, call, |_, beta, beta_input| {
        *beta = Literal::Float { value: 1.0, dtype };
        *beta_input = scaled;
    });
}
