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
use crate::cpp::{SymPrinter, ident};
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
                    // Copies into it, on one thread (none for a node only
                    // read, or written by code).
                    let mut body = String::new();
                    used.extend(self.scope_copies(
                        label,
                        state,
                        n,
                        &a.data,
                        indent + 1,
                        &mut body,
                    )?);
                    if !body.is_empty() {
                        let _ = writeln!(code, "{pad}if (sdfg_rank == 0) {{");
                        code.push_str(&body);
                        let _ = writeln!(code, "{pad}}}");
                    }
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
        let _ = writeln!(
            out,
            "{pad}for (int64_t sdfg_g = sdfg_rank; sdfg_g < {total}; sdfg_g += sdfg_threads) {{\n{pad}  int64_t sdfg_rest = sdfg_g;"
        );
        decompose(&mut p, &map, &counts, &format!("{pad}  "), out);
        let mut used = p.used;
        used.extend(self.scope_body(
            label,
            state,
            tree,
            Some(entry),
            Ctx::Device,
            indent + 1,
            out,
        )?);
        let _ = writeln!(out, "{pad}}}");
        for param in &map.params {
            used.remove(param);
        }
        Ok(used)
    }
}
