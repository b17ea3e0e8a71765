//! Persistent kernels ([`Schedule::DevicePersistent`]): a loop whose tests
//! read what the device writes, run by one kernel.
//!
//! The offload pass nests such a loop in a map over one point scheduled
//! `DevicePersistent` (`crates/passes/src/offload/persistent.rs`). The
//! emitter launches it cooperatively, on as many blocks of the default
//! block size as can be resident at once (the occupancy API times the
//! multiprocessors), so that the grid may wait for itself:
//!
//! - every thread runs the body's control flow: its loops, tests and
//!   interstate assignments (symbols are each thread's locals, assigned
//!   alike from memory all threads see);
//! - a top-level map scheduled as a device kernel is shared by all the
//!   threads: one grid-stride loop over its points, flattened;
//! - other top-level code (tasklets, copies, sequential maps) runs on the
//!   grid's first thread;
//! - a grid-wide barrier (`SDFG_GRID_SYNC()`, cooperative groups' grid
//!   sync) ends every state, so that the tests and assignments after it
//!   read what it wrote, and separates the parts of a state where a later
//!   one reads what an earlier one wrote.

use super::{Ctx, Emitter, decompose, unsupported};
use crate::EmitError;
use crate::cpp::{self, SymPrinter, ctype, ident};
use sdfg_ir::{Node, NodeId, Schedule, ScopeTree, State};
use std::collections::BTreeSet;
use std::fmt::Write;

impl Emitter<'_> {
    /// The declarations a persistent kernel's body starts with: its map's
    /// one point, and the thread's rank in the grid and the grid's size,
    /// which its shared maps stride by.
    pub(super) fn persistent_index(
        &self,
        p: &mut SymPrinter<'_>,
        map: &sdfg_ir::Map,
        label: &str,
        out: &mut String,
    ) -> Result<(), EmitError> {
        for (param, r) in map.dims() {
            if r.num_elements().as_int() != Some(1) {
                return Err(unsupported(
                    format!(
                        "a persistent map over more than one point (`{param}` in {} .. {})",
                        r.begin, r.end
                    ),
                    &map.label,
                    label,
                ));
            }
            let _ = writeln!(
                out,
                "  const int64_t {} = {};",
                ident(param),
                p.expr(&r.begin)
            );
        }
        let _ = writeln!(
            out,
            "  const int64_t sdfg_rank = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;\n  \
             const int64_t sdfg_threads = (int64_t)gridDim.x * blockDim.x;"
        );
        Ok(())
    }

    /// The host's launch of persistent kernel `name` with the arguments
    /// `args` (each with a leading comma): as many blocks as can be
    /// resident at once, and cooperative, so that its grid may wait for
    /// itself.
    pub(super) fn persistent_launch(
        &self,
        name: &str,
        args: &str,
        indent: usize,
        out: &mut String,
    ) {
        let pad = "  ".repeat(indent);
        let threads: u32 = self.d.default_block().iter().product();
        let p = self.d.api_prefix();
        let _ = writeln!(
            out,
            "{pad}{{\n\
             {pad}  int sdfg_device = 0, sdfg_units = 0, sdfg_resident = 0;\n\
             {pad}  SDFG_CHECK({p}GetDevice(&sdfg_device));\n\
             {pad}  SDFG_CHECK({p}DeviceGetAttribute(&sdfg_units, {attr}, sdfg_device));\n\
             {pad}  SDFG_CHECK({p}OccupancyMaxActiveBlocksPerMultiprocessor(&sdfg_resident, (const void*){name}, {threads}, 0));\n\
             {pad}  dim3 sdfg_grid((unsigned)sdfg::imax(1, (int64_t)sdfg_units * sdfg_resident));\n\
             {pad}  dim3 sdfg_block({threads});\n\
             {pad}  SDFG_COOPERATIVE_KERNEL({name}, sdfg_grid, sdfg_block, 0{args});\n\
             {pad}}}",
            attr = self.d.multiprocessor_count_attribute(),
        );
    }

    /// A state of a persistent kernel's body, its top-level nodes in
    /// `order` (topological): shared maps as grid-stride loops, the rest
    /// on the grid's first thread, and a grid-wide barrier before a node
    /// that depends on one emitted since the last barrier. Returns the
    /// symbols used.
    pub(super) fn grid_state(
        &mut self,
        label: &str,
        state: &State,
        tree: &ScopeTree,
        order: &[NodeId],
        indent: usize,
        out: &mut String,
    ) -> Result<BTreeSet<String>, EmitError> {
        let pad = "  ".repeat(indent);
        let mut used = BTreeSet::new();
        let mut since_barrier: Vec<NodeId> = Vec::new();
        for &n in order.iter().filter(|n| tree.parent(**n).is_none()) {
            let Some(node) = state.node(n) else { continue };
            let mut code = String::new();
            match node {
                Node::MapExit(_) => {}
                Node::MapEntry(m) if m.map.schedule == Schedule::DeviceKernel => {
                    used.extend(self.grid_map(label, state, tree, n, indent, &mut code)?);
                }
                Node::Access(a) => {
                    // Copies into it from other containers, shared by the
                    // threads (none for a node only read, or written by code).
                    used.extend(self.grid_copies(label, state, n, &a.data, indent, &mut code)?);
                }
                Node::Tasklet(_) => {
                    let _ = writeln!(code, "{pad}if (sdfg_rank == 0) {{");
                    self.tasklet(
                        label,
                        state,
                        n,
                        Ctx::Device,
                        indent + 1,
                        &mut code,
                        &mut used,
                    )?;
                    let _ = writeln!(code, "{pad}}}");
                }
                Node::MapEntry(_) => {
                    let _ = writeln!(code, "{pad}if (sdfg_rank == 0) {{");
                    used.extend(self.map_loops(
                        label,
                        state,
                        tree,
                        n,
                        Ctx::Device,
                        indent + 1,
                        &mut code,
                    )?);
                    let _ = writeln!(code, "{pad}}}");
                }
                other => {
                    return Err(unsupported(
                        format!("a {} in a persistent kernel's body", other.kind_name()),
                        other.label(),
                        label,
                    ));
                }
            }
            if code.is_empty() {
                continue;
            }
            if since_barrier.iter().any(|&m| state.reaches(m, n)) {
                let _ = writeln!(out, "{pad}SDFG_GRID_SYNC();");
                since_barrier.clear();
            }
            out.push_str(&code);
            since_barrier.push(n);
        }
        Ok(used)
    }

    /// The copies into access node `n` (of `x`) from other access nodes,
    /// shared by the threads of a persistent kernel: one grid-stride loop
    /// over each copy's elements, flattened.
    fn grid_copies(
        &self,
        label: &str,
        state: &State,
        n: NodeId,
        x: &str,
        indent: usize,
        out: &mut String,
    ) -> Result<BTreeSet<String>, EmitError> {
        let pad = "  ".repeat(indent);
        let mut used = BTreeSet::new();
        for (_, src, e) in state.in_edges(n) {
            let (Some(m), Some(Node::Access(a))) = (&e.memlet, state.node(src)) else {
                continue;
            };
            if e.dst_conn.as_deref() == Some(sdfg_ir::node::VIEW_CONNECTOR)
                || e.src_conn.as_deref() == Some(sdfg_ir::node::VIEW_CONNECTOR)
            {
                continue;
            }
            let other = if m.data == a.data { x } else { &a.data };
            let (sa, sb) = m.copy_subsets(&a.data, &self.shape(other));
            let (oa, da) = self.subset_geometry(&a.data, &sa, &mut used);
            let (ob, db) = self.subset_geometry(x, &sb, &mut used);
            if da.len() != db.len() {
                return Err(unsupported(
                    format!(
                        "a copy `{}` -> `{x}` between subsets of different shapes",
                        a.data
                    ),
                    x,
                    label,
                ));
            }
            let total = if da.is_empty() {
                "1".to_owned()
            } else {
                da.iter()
                    .map(|(c, _)| format!("sdfg::imax(0, {c})"))
                    .collect::<Vec<_>>()
                    .join(" * ")
            };
            let _ = writeln!(
                out,
                "{pad}for (int64_t sdfg_g = sdfg_rank; sdfg_g < {total}; sdfg_g += sdfg_threads) {{\n{pad}  int64_t sdfg_rest = sdfg_g;"
            );
            let (mut ia, mut ib) = (format!("({oa})"), format!("({ob})"));
            for (k, ((c, s1), (_, s2))) in da.iter().zip(&db).enumerate().rev() {
                let v = format!("sdfg_e{k}");
                if k == 0 {
                    let _ = writeln!(out, "{pad}  const int64_t {v} = sdfg_rest;");
                } else {
                    let _ = writeln!(
                        out,
                        "{pad}  const int64_t {v} = sdfg_rest % ({c});\n{pad}  sdfg_rest /= ({c});"
                    );
                }
                ia = format!("{ia} + {v} * {s1}");
                ib = format!("{ib} + {v} * {s2}");
            }
            let _ = writeln!(
                out,
                "{pad}  {}[{ib}] = {}[{ia}];\n{pad}}}",
                ident(x),
                ident(&a.data)
            );
        }
        Ok(used)
    }

    /// A map the threads of a persistent kernel share: one grid-stride
    /// loop over its points, flattened (the innermost parameter varying
    /// fastest), its body code of each thread.
    fn grid_map(
        &mut self,
        label: &str,
        state: &State,
        tree: &ScopeTree,
        entry: NodeId,
        indent: usize,
        out: &mut String,
    ) -> Result<BTreeSet<String>, EmitError> {
        let Some(Node::MapEntry(m)) = state.node(entry) else {
            return Ok(BTreeSet::new());
        };
        let map = m.map.clone();
        let pad = "  ".repeat(indent);
        let mut p = self.sym();
        let counts: Vec<String> = map
            .ranges
            .iter()
            .map(|r| p.expr(&r.num_elements()))
            .collect();
        let total = counts
            .iter()
            .map(|c| format!("sdfg::imax(0, {c})"))
            .collect::<Vec<_>>()
            .join(" * ");
        // A reduction into one element: each thread combines its elements
        // into a partial of its own, and the partial into the element once.
        let reduced = self.reductions_into_one_element(state, tree, entry, &map);
        let mut combine = String::new();
        let mut used = BTreeSet::new();
        let indent = if reduced.is_empty() {
            indent
        } else {
            let _ = writeln!(out, "{pad}{{");
            indent + 1
        };
        let lpad = "  ".repeat(indent);
        for (k, (data, m, w)) in reduced.iter().enumerate() {
            let Some(desc) = self.desc(data) else {
                continue;
            };
            let partial = format!("sdfg_partial{k}");
            let _ = writeln!(
                out,
                "{lpad}{} {partial} = {};",
                ctype(desc.dtype),
                cpp::literal(&w.identity(desc.dtype))
            );
            let (offset, _) = self.subset_geometry(data, &m.subset, &mut used);
            let _ = writeln!(
                combine,
                "{lpad}sdfg::{}(&{}[{offset}], {partial});",
                cpp::atomic_update(*w),
                ident(data)
            );
            self.partials.insert(data.clone(), partial);
        }
        let _ = writeln!(
            out,
            "{lpad}for (int64_t sdfg_g = sdfg_rank; sdfg_g < {total}; sdfg_g += sdfg_threads) {{\n{lpad}  int64_t sdfg_rest = sdfg_g;"
        );
        decompose(&mut p, &map, &counts, &format!("{lpad}  "), out);
        used.extend(p.used);
        let body = self.scope_body(
            label,
            state,
            tree,
            Some(entry),
            Ctx::Device,
            indent + 1,
            out,
        );
        self.partials.clear();
        used.extend(body?);
        let _ = writeln!(out, "{lpad}}}");
        if !reduced.is_empty() {
            out.push_str(&combine);
            let _ = writeln!(out, "{pad}}}");
        }
        for param in &map.params {
            used.remove(param);
        }
        Ok(used)
    }

    /// The containers map `entry` only combines values into one element
    /// of (a write-conflict resolution at an index free of the map's
    /// parameters, and no pointer write or read of it inside): what a
    /// thread can reduce into a partial result of its own. With the
    /// element's memlet and the resolution.
    fn reductions_into_one_element(
        &self,
        state: &State,
        tree: &ScopeTree,
        entry: NodeId,
        map: &sdfg_ir::Map,
    ) -> Vec<(String, sdfg_ir::Memlet, sdfg_ir::Wcr)> {
        let Some(exit) = state.exit_of(entry) else {
            return Vec::new();
        };
        let params: BTreeSet<&str> = map.params.iter().map(String::as_str).collect();
        let inside: Vec<NodeId> = state
            .nodes()
            .map(|(id, _)| id)
            .filter(|&id| id != exit && tree.ancestors(id).contains(&entry))
            .collect();
        let mut out = Vec::new();
        for (_, _, e) in state.out_edges(exit) {
            let Some(m) = &e.memlet else { continue };
            let Some(w) = m.wcr else { continue };
            let one = m.subset.ranges.iter().all(|r| r.is_index())
                && !m.subset.any_symbol(&mut |s| params.contains(s));
            // Any other use of it inside: an edge without the resolution
            // (a read, a plain write), or a pointer connector's.
            let elsewhere = inside.iter().any(|&id| {
                let pointers: Vec<&str> = match state.node(id) {
                    Some(Node::Tasklet(t)) => t
                        .inputs
                        .iter()
                        .chain(&t.outputs)
                        .filter(|c| c.pointer)
                        .map(|c| c.name.as_str())
                        .collect(),
                    _ => Vec::new(),
                };
                state
                    .in_edges(id)
                    .chain(state.out_edges(id))
                    .filter_map(|(_, _, x)| Some((x, x.memlet.as_ref()?)))
                    .filter(|(_, xm)| xm.data == m.data)
                    .any(|(x, xm)| {
                        let pointer = [x.src_conn.as_deref(), x.dst_conn.as_deref()]
                            .iter()
                            .flatten()
                            .any(|c| pointers.contains(c));
                        xm.wcr.is_none() || pointer
                    })
            });
            if one && !elsewhere && !out.iter().any(|(d, _, _)| d == &m.data) {
                out.push((m.data.clone(), m.clone(), w));
            }
        }
        out
    }
}
