//! Tasklets: a tasklet's inputs bound to locals or pointers, its body
//! printed by [`crate::cpp::TaskletPrinter`], and its outputs written back
//! (plainly, combined, atomically, or into a persistent kernel's partial).
//!
//! Separate because the same tasklet code runs on the host and in every
//! kind of kernel code: only the write-back differs with where it runs.

use super::{Ctx, Emitter};
use crate::EmitError;
use crate::cpp::{self, PointerCoeffs, TaskletPrinter, ctype, ident};
use crate::dialect::Axis;
use sdfg_ir::code::Binding;
use sdfg_ir::{Memlet, Node, NodeId, State, Storage};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

impl Emitter<'_> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn tasklet(
        &self,
        _label: &str,
        state: &State,
        n: NodeId,
        ctx: Ctx,
        indent: usize,
        out: &mut String,
        used: &mut BTreeSet<String>,
    ) -> Result<(), EmitError> {
        let Some(Node::Tasklet(t)) = state.node(n) else {
            return Ok(());
        };
        let pad = "  ".repeat(indent);
        // Code every thread of a block runs stores to memory others see
        // from the block's first thread only: once, as the SDFG says.
        let leader = ctx == Ctx::Block
            && state.out_edges(n).any(|(_, _, e)| {
                e.memlet.as_ref().is_some_and(|m| {
                    self.desc(&m.data).is_some_and(|d| {
                        !matches!(d.storage, Storage::Register | Storage::DeviceShared)
                    })
                })
            });
        if leader {
            let first: Vec<String> = Axis::ALL
                .iter()
                .map(|&a| format!("{} == 0", self.d.thread_index(a)))
                .collect();
            let _ = writeln!(out, "{pad}if ({})", first.join(" && "));
        }
        let _ = writeln!(out, "{pad}{{  // tasklet {}", t.label);
        let inner = "  ".repeat(indent + 1);
        let mut bindings = BTreeMap::new();
        let mut coeffs = PointerCoeffs::new();
        for (_, _, e) in state.in_edges(n) {
            let (Some(conn), Some(m)) = (e.dst_conn.as_deref(), e.memlet.as_ref()) else {
                continue;
            };
            let Some(c) = t.inputs.iter().find(|c| c.name == conn) else {
                continue;
            };
            let (offset, dims) = self.subset_geometry(&m.data, &m.subset, used);
            let ty = ctype(c.dtype);
            if c.pointer {
                coeffs.insert(
                    conn.to_owned(),
                    dims.iter().map(|(_, s)| s.clone()).collect(),
                );
                let _ = writeln!(
                    out,
                    "{inner}const {ty}* {} = {} + ({offset});",
                    cpp::local(conn),
                    ident(&m.data)
                );
                bindings.insert(
                    conn.to_owned(),
                    Binding::PointerIn {
                        dtype: c.dtype,
                        rank: dims.len(),
                    },
                );
            } else {
                let _ = writeln!(
                    out,
                    "{inner}const {ty} {} = {}[{offset}];",
                    cpp::local(conn),
                    ident(&m.data)
                );
                bindings.insert(conn.to_owned(), Binding::Value(c.dtype));
            }
        }
        let mut updates = BTreeMap::new();
        let outs: Vec<(&str, &Memlet)> = state
            .out_edges(n)
            .filter_map(|(_, _, e)| Some((e.src_conn.as_deref()?, e.memlet.as_ref()?)))
            .collect();
        for c in &t.outputs {
            let ty = ctype(c.dtype);
            if c.pointer {
                let Some((_, m)) = outs.iter().find(|(k, _)| *k == c.name) else {
                    continue;
                };
                let (offset, dims) = self.subset_geometry(&m.data, &m.subset, used);
                coeffs.insert(
                    c.name.clone(),
                    dims.iter().map(|(_, s)| s.clone()).collect(),
                );
                if let Some(w) = m.wcr {
                    updates.insert(c.name.clone(), (w, self.shared_update(&m.data, ctx)));
                }
                let _ = writeln!(
                    out,
                    "{inner}{ty}* {} = {} + ({offset});",
                    cpp::local(&c.name),
                    ident(&m.data)
                );
                bindings.insert(
                    c.name.clone(),
                    Binding::PointerOut {
                        dtype: c.dtype,
                        rank: dims.len(),
                    },
                );
            } else {
                let _ = writeln!(out, "{inner}{ty} {};", cpp::local(&c.name));
                bindings.insert(c.name.clone(), Binding::Output(c.dtype));
            }
        }
        let symbols: BTreeSet<String> = self.sdfg.symbols.keys().cloned().collect();
        let is_symbol =
            |s: &str| !bindings.contains_key(s) && (symbols.contains(s) || !s.is_empty());
        let mut printer = TaskletPrinter {
            bindings: bindings.clone(),
            is_symbol: &is_symbol,
            coeffs: &coeffs,
            used: BTreeSet::new(),
            updates,
        };
        printer.body(&t.body, indent + 1, out);
        used.extend(printer.used);
        for (conn, m) in &outs {
            let Some(c) = t.outputs.iter().find(|c| c.name == *conn) else {
                continue;
            };
            if c.pointer {
                continue;
            }
            let (offset, _) = self.subset_geometry(&m.data, &m.subset, used);
            let target = format!("{}[{offset}]", ident(&m.data));
            let v = cpp::local(conn);
            let line = match m.wcr {
                None => format!("{target} = {v};"),
                Some(w) if self.partials.contains_key(&m.data) => {
                    let p = &self.partials[&m.data];
                    format!("{p} = {};", cpp::combine(w, p, &v))
                }
                Some(w) if self.shared_update(&m.data, ctx) => {
                    format!(
                        "{};",
                        self.d.atomic_update(cpp::atomic_update(w), &target, &v)
                    )
                }
                Some(w) => format!("{target} = {};", cpp::combine(w, &target, &v)),
            };
            let _ = writeln!(out, "{inner}{line}");
        }
        let _ = writeln!(out, "{pad}}}");
        Ok(())
    }
}
