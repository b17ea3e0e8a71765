//! DaCe's symbols that the IR's symbols cannot hold, and map parameters
//! that shadow symbols.
//!
//! DaCe keeps scalar values of any type in symbols, computed on interstate
//! edges in Python: `udiff = 1.0` (`float64`), `z = int_pts[idx]`
//! (`complex128`), `crc = ((~crc) & 65535)` (`uint16`, bitwise). The IR's
//! symbols are 64-bit integers whose expressions are canonical
//! polynomials, so the import keeps such a symbol in a scalar container of
//! its type (*promotes* it) instead:
//!
//! - each interstate assignment to it becomes a state whose tasklet
//!   computes the value (the text is DaCe Python, read by
//!   [`crate::python::read_tasklet`]; the containers it names are the
//!   tasklet's inputs), placed after the block the edge leaves and before
//!   the edge's other assignments, which it reads as they were;
//! - a tasklet whose code reads it gets an input connector of its name,
//!   fed from an access node through the map scopes around the tasklet;
//! - a condition the symbolic layer cannot read (a float comparison, a
//!   test of a complex magnitude) is computed into a `bool` container by a
//!   state before the block that tests it (before a `while` loop, at the
//!   end of its body and before its `continue`s), and the condition reads
//!   that container;
//! - integer and boolean containers named in control flow become reads,
//!   as any scalar container DaCe names there does.
//!
//! A symbol is promoted when its type is not an integer, or when one of
//! its assignments is outside the symbolic layer. A `bool` or `float64`
//! symbol that only carries a value read from data into the condition of
//! the block its edge enters (`I_index = I[j]` then `if I_index:`, DaCe's
//! spelling of `if I[j]:`) is substituted into that condition instead,
//! which keeps the read where the condition is. Promoted symbols that
//! size maps or memlets are refused by name: containers cannot.

use crate::python::{self, TaskletConnectors};
use sdfg_ir::builder::StateBuilder;
use sdfg_ir::code::rename_vars;
use sdfg_ir::node::{Connector, Edge, Tasklet};
use sdfg_ir::{
    BlockKind, CmpOp, ControlBlock, DType, DataKind, Memlet, Node, NodeId, Region, Sdfg, State,
    SymCond, SymExpr,
};
use std::collections::{BTreeMap, BTreeSet};

/// Where `text` names identifiers as values: not attributes
/// (`dace.float64` names `dace`), not parts of numbers (`1e5`).
fn identifier_spans(text: &str) -> Vec<std::ops::Range<usize>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut k = 0;
    while k < bytes.len() {
        let c = bytes[k];
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = k;
            while k < bytes.len() && (bytes[k].is_ascii_alphanumeric() || bytes[k] == b'_') {
                k += 1;
            }
            if !text[..start].trim_end().ends_with('.') {
                out.push(start..k);
            }
        } else if c.is_ascii_digit() {
            while k < bytes.len()
                && (bytes[k].is_ascii_alphanumeric() || bytes[k] == b'_' || bytes[k] == b'.')
            {
                k += 1;
            }
        } else {
            k += 1;
        }
    }
    out
}

/// The identifiers `text` names as values ([`identifier_spans`]).
pub(super) fn identifiers(text: &str) -> BTreeSet<&str> {
    identifier_spans(text)
        .into_iter()
        .map(|r| &text[r])
        .collect()
}

/// `text` with the identifiers `names` maps renamed.
pub(super) fn rename_identifiers(text: &str, names: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for r in identifier_spans(text) {
        if let Some(new) = names.get(&text[r.clone()]) {
            out.push_str(&text[at..r.start]);
            out.push_str(new);
            at = r.end;
        }
    }
    out.push_str(&text[at..]);
    out
}

/// The connector through which code reads the container `name`: DaCe
/// refuses a connector named like a container or symbol.
pub(super) fn input_connector(name: &str, taken: impl Fn(&str) -> bool) -> String {
    fresh(&format!("__in_{name}"), taken)
}

/// A state of one tasklet running `code` (DaCe Python), which writes each
/// output connector `conn` into the scalar container `data` of type
/// `dtype` of `outputs`, and reads the containers of `sdfg` the code
/// names: scalars as values, arrays through pointers (the whole array,
/// dynamic).
pub(super) fn computing_state(
    label: &str,
    code: &str,
    outputs: &[(String, String, DType)],
    sdfg: &Sdfg,
    offsets: &super::offsets::Offsets,
) -> Result<State, String> {
    let mut conns = TaskletConnectors::default();
    let mut memlets = BTreeMap::new();
    let mut renames = BTreeMap::new();
    let named = identifiers(code);
    for &name in &named {
        let Some(d) = sdfg.containers.get(name) else {
            continue;
        };
        if outputs.iter().any(|(c, _, _)| c == name) {
            continue;
        }
        let conn = input_connector(name, |n| {
            sdfg.containers.contains_key(n) || sdfg.symbols.contains_key(n) || named.contains(n)
        });
        renames.insert(name.to_owned(), conn.clone());
        let memlet = match &d.kind {
            DataKind::Scalar => Memlet::full(name, &d.shape()),
            DataKind::Array(_) | DataKind::View(_) => Memlet::full(name, &d.shape()).into_dynamic(),
            _ => return Err(format!("`{name}` is a {}", d.kind_name())),
        };
        let rank = if d.is_scalar() { 0 } else { d.rank() };
        conns.inputs.insert(conn.clone(), (d.dtype, rank));
        memlets.insert(conn, memlet);
    }
    let code = rename_identifiers(code, &renames);
    for (conn, _, dtype) in outputs {
        conns.outputs.insert(conn.clone(), (*dtype, 0));
    }
    let (mut body, pointers) = python::read_tasklet(&code, &conns).map_err(|e| e.to_string())?;
    // DaCe's interstate code indexes arrays as DaCe does (`offsets.rs`).
    let containers: BTreeMap<String, String> = renames
        .iter()
        .map(|(c, n)| (n.clone(), c.clone()))
        .collect();
    super::offsets::shift_loads(&mut body, &containers, offsets)?;
    let connector = |(name, &(dtype, _)): (&String, &(DType, usize))| Connector {
        name: name.clone(),
        dtype,
        pointer: pointers.contains(name),
    };
    let tasklet = Tasklet {
        label: label.to_owned(),
        inputs: conns.inputs.iter().map(connector).collect(),
        outputs: conns.outputs.iter().map(connector).collect(),
        body,
    };
    let mut state = State::new();
    let t = state.add_node(Node::Tasklet(tasklet));
    for (conn, memlet) in memlets {
        let a = state.add_access(memlet.data.clone());
        state
            .graph
            .add_edge(a, t, Edge::new(None, Some(&conn), memlet));
    }
    for (conn, data, _) in outputs {
        let a = state.add_access(data.clone());
        let memlet = Memlet::full(data.clone(), &[SymExpr::int(1)]);
        state
            .graph
            .add_edge(t, a, Edge::new(Some(conn), None, memlet));
    }
    Ok(state)
}

/// The state computing the interstate assignments `pairs` (symbol, DaCe
/// Python value) of promoted symbols, by one tasklet: its inputs are read
/// before any output is written, as DaCe evaluates one edge's assignments
/// together.
pub(super) fn assignment_state(
    label: &str,
    pairs: &[(String, String)],
    sdfg: &Sdfg,
    offsets: &super::offsets::Offsets,
) -> Result<State, String> {
    let mut code = String::new();
    let mut outputs = Vec::new();
    for (symbol, value) in pairs {
        let conn = fresh(&format!("__out_{symbol}"), |n| {
            sdfg.containers.contains_key(n) || sdfg.symbols.contains_key(n)
        });
        let dtype = sdfg
            .containers
            .get(symbol)
            .map(|d| d.dtype)
            .ok_or_else(|| format!("`{symbol}` is not declared"))?;
        code.push_str(&format!("{conn} = {value}\n"));
        outputs.push((conn, symbol.clone(), dtype));
    }
    computing_state(label, &code, &outputs, sdfg, offsets)
}

/// The state computing the truth of the DaCe Python condition `text` into
/// the `bool` container `target`.
pub(super) fn condition_state(
    label: &str,
    text: &str,
    target: &str,
    sdfg: &Sdfg,
    offsets: &super::offsets::Offsets,
) -> Result<State, String> {
    let conn = fresh("__cond", |n| {
        sdfg.containers.contains_key(n) || sdfg.symbols.contains_key(n)
    });
    let code = format!("{conn} = False\nif {text}:\n    {conn} = True\n");
    computing_state(
        label,
        &code,
        &[(conn.clone(), target.to_owned(), DType::Bool)],
        sdfg,
        offsets,
    )
}

/// The condition that reads the `bool` container `name`.
pub(super) fn truth_of(name: &str) -> SymCond {
    SymCond::cmp(
        SymExpr::read(name, vec![SymExpr::int(0)]),
        CmpOp::Ne,
        SymExpr::int(0),
    )
}

/// `base`, or `base_1`, `base_2`, ...: the first that `taken` refuses.
pub(super) fn fresh(base: &str, taken: impl Fn(&str) -> bool) -> String {
    if !taken(base) {
        return base.to_owned();
    }
    (1..)
        .map(|k| format!("{base}_{k}"))
        .find(|n| !taken(n))
        .unwrap_or_default()
}

/// Whether the loop whose body is `body` has a `continue` of its own (not
/// of loops nested in it).
pub(super) fn continues(body: &Region) -> bool {
    body.blocks.iter().any(|b| match &b.kind {
        BlockKind::Continue => true,
        BlockKind::Conditional(c) => {
            c.branches.iter().any(|(_, r)| continues(r))
                || c.otherwise.as_ref().is_some_and(continues)
        }
        _ => false,
    })
}

/// Inserts the block `make` returns before every `continue` of the loop
/// whose body is `body` (not of loops nested in it): a `while` condition
/// computed into a container is computed again before the loop tests it.
pub(super) fn before_continues(body: &mut Region, make: &mut dyn FnMut() -> ControlBlock) {
    let mut k = 0;
    while k < body.blocks.len() {
        match &mut body.blocks[k].kind {
            BlockKind::Continue => {
                body.blocks.insert(k, make());
                k += 1;
            }
            BlockKind::Conditional(c) => {
                for (_, r) in &mut c.branches {
                    before_continues(r, make);
                }
                if let Some(r) = &mut c.otherwise {
                    before_continues(r, make);
                }
            }
            _ => {}
        }
        k += 1;
    }
}

/// Feeds the input connectors through which tasklets read promoted
/// symbols, `(tasklet, connector, container)`: an access node of the
/// container, and a path through the map scopes around the tasklet.
pub(super) fn connect_reads(
    state: &mut State,
    sdfg: &Sdfg,
    reads: &[(NodeId, String, String)],
) -> Result<(), String> {
    if reads.is_empty() {
        return Ok(());
    }
    let scopes = state.scope_tree().map_err(|e| e.to_string())?;
    let mut errors = Vec::new();
    let mut b = StateBuilder::standalone(&sdfg.containers, &mut errors);
    std::mem::swap(b.state_mut(), state);
    for (tasklet, conn, data) in reads {
        let access = b.access(data);
        let mut path = vec![access];
        path.extend(scopes.ancestors(*tasklet).into_iter().rev());
        path.push(*tasklet);
        b.path(
            &path,
            None,
            Some(conn),
            Memlet::full(data.clone(), &[SymExpr::int(1)]),
        );
    }
    std::mem::swap(b.state_mut(), state);
    match errors.first() {
        Some(e) => Err(e.to_string()),
        None => Ok(()),
    }
}

/// Gives the parameters of maps that are also symbols of `sdfg` fresh
/// names inside their scopes (DaCe lets a map parameter shadow a symbol
/// there; the IR's names are one namespace): the map's parameters, the
/// memlets on the edges inside the scope, the ranges of maps nested in it,
/// and what its tasklets and nested SDFGs read.
pub(super) fn rename_shadowing_parameters(state: &mut State, sdfg: &Sdfg) -> Result<(), String> {
    let shadowing: Vec<NodeId> = state
        .nodes()
        .filter(|(_, n)| {
            matches!(n, Node::MapEntry(e)
                if e.map.params.iter().any(|p| sdfg.symbols.contains_key(p)))
        })
        .map(|(id, _)| id)
        .collect();
    if shadowing.is_empty() {
        return Ok(());
    }
    let scopes = state.scope_tree().map_err(|e| e.to_string())?;
    let mut taken: BTreeSet<String> = sdfg
        .symbols
        .keys()
        .chain(sdfg.containers.keys())
        .cloned()
        .collect();
    for (_, n) in state.nodes() {
        if let Node::MapEntry(e) = n {
            taken.extend(e.map.params.iter().cloned());
        }
    }
    for entry in shadowing {
        let exit = state
            .exit_of(entry)
            .ok_or_else(|| format!("the map entry {} has no exit", entry.index()))?;
        let Some(Node::MapEntry(e)) = state.node(entry) else {
            continue;
        };
        let mut names = BTreeMap::new();
        for p in &e.map.params {
            if sdfg.symbols.contains_key(p) {
                let new = fresh(&format!("{p}_map"), |n| taken.contains(n));
                taken.insert(new.clone());
                names.insert(p.clone(), new);
            }
        }
        let exprs: BTreeMap<String, SymExpr> = names
            .iter()
            .map(|(old, new)| (old.clone(), SymExpr::symbol(new.clone())))
            .collect();
        let inside = |n: NodeId| n != exit && scopes.ancestors(n).contains(&entry);
        let inner: Vec<NodeId> = state
            .nodes()
            .map(|(id, _)| id)
            .filter(|&n| inside(n))
            .collect();
        let edges: Vec<_> = state
            .edges()
            .filter(|&(_, u, v, _)| (u == entry || inside(u)) && (v == exit || inside(v)))
            .map(|(id, ..)| id)
            .collect();
        if let Some(Node::MapEntry(e)) = state.graph.node_weight_mut(entry) {
            for p in &mut e.map.params {
                if let Some(new) = names.get(p) {
                    *p = new.clone();
                }
            }
        }
        for n in inner {
            match state.graph.node_weight_mut(n) {
                Some(Node::MapEntry(e)) => {
                    for r in &mut e.map.ranges {
                        *r = r.subs(&exprs);
                    }
                }
                Some(Node::Tasklet(t)) => {
                    let mut local = names.clone();
                    for c in t.inputs.iter().chain(&t.outputs) {
                        local.remove(&c.name);
                    }
                    rename_vars(&mut t.body, &local);
                }
                Some(Node::NestedSdfg(nested)) => {
                    for v in nested.symbol_mapping.values_mut() {
                        *v = v.subs(&exprs);
                    }
                }
                _ => {}
            }
        }
        for id in edges {
            if let Some(m) = state
                .graph
                .edge_weight_mut(id)
                .and_then(|e| e.memlet.as_mut())
            {
                m.subset = m.subset.subs(&exprs);
                m.other_subset = m.other_subset.as_ref().map(|s| s.subs(&exprs));
                m.volume = m.volume.subs(&exprs);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::identifiers;

    #[test]
    fn identifiers_skip_attributes_and_numbers() {
        let ids = identifiers("dace.float64(x) + 1e5 * y_1 - abs(z) . real");
        assert_eq!(
            ids.into_iter().collect::<Vec<_>>(),
            ["abs", "dace", "x", "y_1", "z"]
        );
    }
}
