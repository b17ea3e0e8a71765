//! DaCe's index offsets, read into the IR's arrays from 0.
//!
//! DaCe's `Array.offset` adds a per-dimension offset to every index before
//! the strides apply: Fortran's `a(1:n)` is DaCe's array of `n` elements
//! with offset `-1`, indexed `1..=n` by memlets and interstate code (DaCe's
//! Fortran frontend writes `-1` for every array, its lower bound in the
//! index arithmetic). The IR's arrays index from 0, so the import adds the
//! offset to every index of the container: memlet subsets (and the other
//! end of a copy into or out of it), and reads of it in interstate code,
//! map ranges and nested SDFGs' symbol mappings. Tasklets index their
//! connectors from the memlet's start, in DaCe as in the IR, so their
//! code stays as it is. Each SDFG's containers are its own: a nested
//! SDFG's offsets are read with it.

use super::{ImportError, join, sym};
use sdfg_ir::{BlockKind, Memlet, Node, Region, State, Subset, SymExpr};
use serde_json::Value;
use std::collections::BTreeMap;

/// The index offsets of the SDFG's containers that have one other than 0.
pub(super) type Offsets = BTreeMap<String, Vec<SymExpr>>;

/// The non-zero index offsets among `_arrays` (at `apath`).
pub(super) fn read(attrs: &Value, apath: &str) -> Result<Offsets, ImportError> {
    let mut out = Offsets::new();
    let Some(arrays) = attrs.get("_arrays").and_then(Value::as_object) else {
        return Ok(out);
    };
    for (name, d) in arrays {
        let Some(offsets) = d["attributes"].get("offset").and_then(Value::as_array) else {
            continue;
        };
        let dpath = join(apath, &format!("_arrays.{name}.attributes"));
        let offsets = offsets
            .iter()
            .enumerate()
            .map(|(k, o)| sym(o, &join(&dpath, &format!("offset[{k}]"))))
            .collect::<Result<Vec<_>, _>>()?;
        if offsets.iter().any(|o| !o.is_zero()) {
            out.insert(name.clone(), offsets);
        }
    }
    Ok(out)
}

/// Adds the offsets to the indices of their containers that `body`'s
/// interstate code, map ranges and nested SDFGs' symbol mappings read.
/// (Memlets are shifted as the states are read, [`shift_memlet`]: the
/// states the import adds are written in the IR's indices.)
pub(super) fn apply(body: &mut Region, offsets: &Offsets) {
    if offsets.is_empty() {
        return;
    }
    body.for_each_region_mut(&mut |region| {
        for b in &mut region.blocks {
            b.map_interstate(&|e| e.shift_reads(offsets), &|c| c.shift_reads(offsets));
            if let BlockKind::State(s) = &mut b.kind {
                shift_nodes(s, offsets);
            }
        }
    });
}

/// Shifts a memlet read from DaCe to the IR's indices; `src` and `dst`
/// are the containers of the access nodes at its ends, which decide the
/// container of its other subset (the end that is not the memlet's; the
/// destination where both are).
pub(super) fn shift_memlet(
    m: &mut Memlet,
    src: Option<&str>,
    dst: Option<&str>,
    offsets: &Offsets,
) {
    if offsets.is_empty() {
        return;
    }
    let other = match (src, dst) {
        (Some(a), Some(b)) if a == m.data => Some(b),
        (Some(a), _) if a != m.data => Some(a),
        (_, Some(b)) if b != m.data => Some(b),
        _ => None,
    };
    shift_subset(&mut m.subset, offsets.get(&m.data), offsets);
    if let Some(o) = m.other_subset.as_mut() {
        shift_subset(o, other.and_then(|c| offsets.get(c)), offsets);
    }
    m.volume = m.volume.shift_reads(offsets);
}

fn shift_subset(subset: &mut Subset, by: Option<&Vec<SymExpr>>, offsets: &Offsets) {
    for (d, r) in subset.ranges.iter_mut().enumerate() {
        let o = by
            .and_then(|b| b.get(d))
            .cloned()
            .unwrap_or_else(|| SymExpr::int(0));
        r.begin = r.begin.shift_reads(offsets) + o.clone();
        r.end = r.end.shift_reads(offsets) + o;
        r.step = r.step.shift_reads(offsets);
    }
}

fn shift_nodes(s: &mut State, offsets: &Offsets) {
    for n in s.graph.node_weights_mut() {
        match n {
            Node::MapEntry(e) => {
                for r in &mut e.map.ranges {
                    r.begin = r.begin.shift_reads(offsets);
                    r.end = r.end.shift_reads(offsets);
                    r.step = r.step.shift_reads(offsets);
                }
            }
            Node::NestedSdfg(n) => {
                for v in n.symbol_mapping.values_mut() {
                    *v = v.shift_reads(offsets);
                }
            }
            _ => {}
        }
    }
}

/// Tasklet code the import writes from DaCe's interstate code (a condition
/// computed into a container) indexes containers as DaCe does: its loads
/// of `inputs[conn]`, a container with offsets, get them added. The
/// offsets must be integers there.
pub(super) fn shift_loads(
    body: &mut [sdfg_ir::code::Stmt],
    inputs: &BTreeMap<String, String>,
    offsets: &Offsets,
) -> Result<(), String> {
    use sdfg_ir::code::{BinaryOp, Expr, Stmt};
    fn expr(
        e: &mut Expr,
        inputs: &BTreeMap<String, String>,
        offsets: &Offsets,
    ) -> Result<(), String> {
        match e {
            Expr::Lit(_) | Expr::Var(_) => {}
            Expr::Load { conn, index } => {
                for i in index.iter_mut() {
                    expr(i, inputs, offsets)?;
                }
                if let Some(by) = inputs.get(conn.as_str()).and_then(|c| offsets.get(c)) {
                    for (i, o) in index.iter_mut().zip(by) {
                        let o = o.as_int().ok_or_else(|| {
                            format!("reads `{conn}`, whose index offset `{o}` is not a number")
                        })?;
                        let lhs = std::mem::replace(i, Expr::i64(0));
                        *i = Expr::binary(BinaryOp::Add, lhs, Expr::i64(o));
                    }
                }
            }
            Expr::Unary { arg, .. } | Expr::Cast { arg, .. } => expr(arg, inputs, offsets)?,
            Expr::Binary { lhs, rhs, .. } => {
                expr(lhs, inputs, offsets)?;
                expr(rhs, inputs, offsets)?;
            }
            Expr::Call { args, .. } => {
                for a in args {
                    expr(a, inputs, offsets)?;
                }
            }
            Expr::Select {
                cond,
                then,
                otherwise,
            } => {
                expr(cond, inputs, offsets)?;
                expr(then, inputs, offsets)?;
                expr(otherwise, inputs, offsets)?;
            }
        }
        Ok(())
    }
    for s in body {
        match s {
            Stmt::Let { value, .. } | Stmt::Assign { value, .. } => expr(value, inputs, offsets)?,
            Stmt::Store { index, value, .. } => {
                for i in index.iter_mut() {
                    expr(i, inputs, offsets)?;
                }
                expr(value, inputs, offsets)?;
            }
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                expr(cond, inputs, offsets)?;
                shift_loads(then, inputs, offsets)?;
                shift_loads(otherwise, inputs, offsets)?;
            }
        }
    }
    Ok(())
}
