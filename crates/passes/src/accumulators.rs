//! Accumulators of a loop made private to its iterations, so the loop can
//! become a map: `for j: for k: PE += T[j, k]` is `for j: acc = 0; for k:
//! acc += T[j, k]; PE (+)= acc`, each iteration summing its own part in a
//! register and adding it to `PE` once, with a write-conflict resolution
//! (one atomic per iteration on a device, not one per element).
//!
//! Without it the loop carries `PE` from one iteration to the next (each
//! reads what the last wrote) and stays a loop: on a device, one thread
//! running the whole reduction (nbody's potential energy). The rewrite
//! applies to a container that the loop's body touches only through
//! accumulations (tasklets `X = X + e`, or `X = X * e`, reading and writing
//! one fixed element of `X`, the same operation everywhere, `e` free of
//! `X`), nowhere else, not in a condition or an assignment between
//! states, and updates only inside a loop of the body: each iteration then
//! sums a part of its own before its one atomic. (A loop whose iterations
//! each add one term, `for i: s += f(a[i])`, would be one atomic per term
//! on one address: a reduction, not partial sums; it stays as it is.)
//! Floating-point sums are added in another order, as every parallel
//! reduction adds them (DaCe's, NumPy's pairwise sum).
//!
//! Loop-to-map asks for the rewrite only where the loop as it is does not
//! convert, and keeps it only where the rewritten loop does.

use crate::dependence::RegionUse;
use sdfg_ir::code::{BinaryOp, Expr, Stmt, expr_names};
use sdfg_ir::{
    BlockKind, Connector, ControlBlock, DataDesc, LoopBlock, Memlet, Node, NodeId, Range, Region,
    Sdfg, State, Subset, SymExpr, Tasklet, Wcr,
};
use std::collections::{BTreeMap, BTreeSet};

/// One accumulation `X[s] = X[s] op e`: its state's position is not needed
/// (every access of `X` is one), only what it updates and how.
#[derive(Clone, Debug, PartialEq)]
struct Update {
    subset: Subset,
    op: Wcr,
}

/// The loop `l` (labelled `label`) with every accumulator privatized, and
/// the private scalars it declares (name, descriptor), or `None` where it
/// has no accumulator. The caller adds the scalars to `sdfg` when it keeps
/// the loop.
pub(crate) fn privatized(
    sdfg: &Sdfg,
    label: &str,
    l: &LoopBlock,
) -> Option<(LoopBlock, Vec<(String, DataDesc)>)> {
    let accumulators = accumulators(sdfg, l)?;
    let mut out = l.clone();
    let mut declared = Vec::new();
    let (mut first, mut last) = (Vec::new(), Vec::new());
    for (x, Update { subset, op }) in accumulators {
        let desc = sdfg.containers.get(&x)?;
        let dtype = desc.dtype;
        let acc = fresh(sdfg, &declared, &format!("{x}_acc"));
        out.body.for_each_region_mut(&mut |r| {
            for b in &mut r.blocks {
                if let BlockKind::State(s) = &mut b.kind {
                    rename_accesses(s, &x, &acc);
                }
            }
        });
        // acc = identity, first in each iteration.
        let mut init = State::new();
        let t = init.add_node(Node::Tasklet(Tasklet {
            label: format!("{acc}_init"),
            inputs: vec![],
            outputs: vec![Connector::scalar("o", dtype)],
            body: vec![Stmt::assign("o", Expr::Lit(op.identity(dtype)))],
        }));
        let a = init.add_access(acc.clone());
        init.add_edge(t, Some("o"), a, None, Memlet::new(acc.clone(), scalar()));
        first.push(ControlBlock::new(
            format!("{label}_{acc}_init"),
            BlockKind::State(init),
        ));
        // X[s] (op)= acc, last.
        let mut fold = State::new();
        let a = fold.add_access(acc.clone());
        let t = fold.add_node(Node::Tasklet(Tasklet {
            label: format!("{acc}_fold"),
            inputs: vec![Connector::scalar("a", dtype)],
            outputs: vec![Connector::scalar("o", dtype)],
            body: vec![Stmt::assign("o", Expr::var("a"))],
        }));
        let to = fold.add_access(x.clone());
        fold.add_edge(a, None, t, Some("a"), Memlet::new(acc.clone(), scalar()));
        fold.add_edge(
            t,
            Some("o"),
            to,
            None,
            Memlet::new(x.clone(), subset).with_wcr(op),
        );
        last.push(ControlBlock::new(
            format!("{label}_{acc}_fold"),
            BlockKind::State(fold),
        ));
        declared.push((acc, DataDesc::scalar(dtype).into_transient()));
    }
    let body = std::mem::take(&mut out.body.blocks);
    out.body = Region::new(first.into_iter().chain(body).chain(last).collect());
    Some((out, declared))
}

/// The one element of a scalar.
fn scalar() -> Subset {
    Subset::new(vec![Range::index(SymExpr::int(0))])
}

/// A container name taken neither in `sdfg` nor by `declared`.
fn fresh(sdfg: &Sdfg, declared: &[(String, DataDesc)], base: &str) -> String {
    let taken = |n: &str| sdfg.containers.contains_key(n) || declared.iter().any(|(d, _)| d == n);
    let mut name = base.to_owned();
    let mut k = 1;
    while taken(&name) {
        name = format!("{base}_{k}");
        k += 1;
    }
    name
}

/// The accumulators of `l`'s body: containers touched only by
/// accumulations of one operation at one fixed element.
fn accumulators(sdfg: &Sdfg, l: &LoopBlock) -> Option<BTreeMap<String, Update>> {
    let mut found: BTreeMap<String, Option<Update>> = BTreeMap::new();
    let mut touched_otherwise: BTreeSet<String> = BTreeSet::new();
    // Whether each container's every update lies in a loop of the body.
    let mut shallow: BTreeSet<String> = BTreeSet::new();
    let mut visit = |b: &ControlBlock, in_loop: bool| {
        let BlockKind::State(s) = &b.kind else {
            return;
        };
        let updates = updates(s);
        let in_updates: BTreeSet<NodeId> = updates
            .iter()
            .flat_map(|(t, from, to, _, _)| [*t, *from, *to])
            .collect();
        for (id, n) in s.nodes() {
            if let Node::Access(a) = n {
                let only_updates = s
                    .in_edges(id)
                    .map(|(_, src, _)| src)
                    .chain(s.out_edges(id).map(|(_, dst, _)| dst))
                    .all(|m| in_updates.contains(&m));
                if !only_updates || !in_updates.contains(&id) {
                    touched_otherwise.insert(a.data.clone());
                }
            }
        }
        // Memlets naming a container through other nodes (a map's
        // connectors, a nested SDFG's) count as other uses too.
        for (_, src, dst, e) in s.edges() {
            if let Some(m) = &e.memlet
                && !(in_updates.contains(&src) && in_updates.contains(&dst))
            {
                touched_otherwise.insert(m.data.clone());
            }
        }
        for (_, _, _, x, u) in updates {
            if !in_loop {
                shallow.insert(x.clone());
            }
            let entry = found.entry(x).or_insert_with(|| Some(u.clone()));
            if entry.as_ref() != Some(&u) {
                *entry = None;
            }
        }
    };
    walk(&l.body, false, &mut visit);
    // Read between states (a condition, an assignment): not only updated.
    let symbols: BTreeSet<String> = sdfg.symbols.keys().cloned().collect();
    for a in RegionUse::of(&l.body, &symbols).accesses {
        if a.interstate {
            touched_otherwise.insert(a.data);
        }
    }
    let out: BTreeMap<String, Update> = found
        .into_iter()
        .filter(|(x, _)| !touched_otherwise.contains(x) && !shallow.contains(x))
        .filter_map(|(x, u)| Some((x, u?)))
        .filter(|(x, _)| sdfg.containers.get(x).is_some_and(|d| !d.is_view()))
        .collect();
    (!out.is_empty()).then_some(out)
}

/// Calls `f` on every block of `r` and inside it, with whether the block
/// lies in a loop of `r`.
fn walk(r: &Region, in_loop: bool, f: &mut dyn FnMut(&ControlBlock, bool)) {
    for b in &r.blocks {
        f(b, in_loop);
        match &b.kind {
            BlockKind::Loop(l) => walk(&l.body, true, f),
            BlockKind::Conditional(c) => {
                for (_, branch) in &c.branches {
                    walk(branch, in_loop, f);
                }
                if let Some(other) = &c.otherwise {
                    walk(other, in_loop, f);
                }
            }
            _ => {}
        }
    }
}

/// The accumulations of a state: (tasklet, the access node read, the one
/// written, the container, the update).
fn updates(s: &State) -> Vec<(NodeId, NodeId, NodeId, String, Update)> {
    let mut out = Vec::new();
    for (t, n) in s.nodes() {
        let Node::Tasklet(tasklet) = n else {
            continue;
        };
        let [Stmt::Assign { target, value }] = tasklet.body.as_slice() else {
            continue;
        };
        let outs: Vec<_> = s.out_edges(t).collect();
        let [(_, to, e_out)] = outs.as_slice() else {
            continue;
        };
        let Some(m_out) = &e_out.memlet else {
            continue;
        };
        if e_out.src_conn.as_deref() != Some(target.as_str())
            || m_out.wcr.is_some()
            || m_out.dynamic
            || !matches!(s.node(*to), Some(Node::Access(a)) if a.data == m_out.data)
            || !m_out
                .subset
                .ranges
                .iter()
                .all(|r| r.is_index() && r.begin.as_int().is_some())
        {
            continue;
        }
        // The input reading the same element of the same container.
        let Some((from, conn)) = s.in_edges(t).find_map(|(_, src, e)| {
            let m = e.memlet.as_ref()?;
            (m.data == m_out.data
                && m.subset == m_out.subset
                && m.wcr.is_none()
                && !m.dynamic
                && matches!(s.node(src), Some(Node::Access(_))))
            .then(|| (src, e.dst_conn.clone()))
            .and_then(|(src, c)| Some((src, c?)))
        }) else {
            continue;
        };
        let Some(op) = accumulation(value, &conn) else {
            continue;
        };
        out.push((
            t,
            from,
            *to,
            m_out.data.clone(),
            Update {
                subset: m_out.subset.clone(),
                op,
            },
        ));
    }
    out
}

/// The operation of `value` when it is `x op e` or `e op x` for connector
/// `x` with `e` free of it, `op` a sum or a product.
fn accumulation(value: &Expr, x: &str) -> Option<Wcr> {
    let Expr::Binary { op, lhs, rhs } = value else {
        return None;
    };
    let wcr = match op {
        BinaryOp::Add => Wcr::Sum,
        BinaryOp::Mul => Wcr::Product,
        _ => return None,
    };
    let is_x = |e: &Expr| matches!(e, Expr::Var(v) if v == x);
    let other = match (is_x(lhs), is_x(rhs)) {
        (true, false) => rhs,
        (false, true) => lhs,
        _ => return None,
    };
    let mut names = Vec::new();
    expr_names(other, &mut names);
    (!names.iter().any(|n| n == x)).then_some(wcr)
}

/// Every access node and memlet of `x` in `s` names `acc` at its one
/// element instead (the accumulations, the only uses of `x` there).
fn rename_accesses(s: &mut State, x: &str, acc: &str) {
    let ids: Vec<NodeId> = s.nodes().map(|(id, _)| id).collect();
    for id in ids {
        if let Some(Node::Access(a)) = s.graph.node_weight_mut(id)
            && a.data == x
        {
            a.data = acc.to_owned();
        }
    }
    for e in s.graph.edge_weights_mut() {
        if let Some(m) = &mut e.memlet
            && m.data == x
        {
            m.data = acc.to_owned();
            m.subset = scalar();
            if let Some(o) = &mut m.other_subset {
                *o = scalar();
            }
        }
    }
}
