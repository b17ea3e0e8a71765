//! Host control flow: the regions of the program's body (loops as `for`
//! statements, conditionals as `if` chains, `break`, `continue`,
//! `return`), each state's nodes in topological order, the waits a state
//! needs (pinned memory, copies back to the host), grow-only buffers and
//! view pointers.
//!
//! Separate because it decides *where* things run and in what order,
//! while copies, kernels and vendor calls decide *how*: this module only
//! dispatches a state's top-level nodes to them.

use super::{Ctx, Emitter, for_header, unsupported};
use crate::cpp::{ctype, ident};
use crate::{EmitError, Memory};
use sdfg_accelerator::CopyKind;
use sdfg_ir::{BlockKind, Node, NodeId, Region, ScopeTree, State, Storage, VIEW_CONNECTOR};
use std::collections::BTreeSet;
use std::fmt::Write;

impl Emitter<'_> {
    pub(super) fn region(
        &mut self,
        region: &Region,
        indent: usize,
        out: &mut String,
    ) -> Result<(), EmitError> {
        let pad = "  ".repeat(indent);
        for block in &region.blocks {
            let _ = writeln!(out, "{pad}// {}", block.label);
            match &block.kind {
                BlockKind::State(state) => {
                    let _ = writeln!(out, "{pad}{{");
                    self.state(&block.label, state, indent + 1, out)?;
                    let _ = writeln!(out, "{pad}}}");
                }
                BlockKind::Loop(l) => {
                    let _ = writeln!(out, "{pad}{}", for_header(&mut self.sym(), l));
                    self.region(&l.body, indent + 1, out)?;
                    let _ = writeln!(out, "{pad}}}");
                }
                BlockKind::Conditional(c) => {
                    for (k, (cond, r)) in c.branches.iter().enumerate() {
                        let cond = self.sym().cond(cond);
                        let kw = if k == 0 { "if" } else { "} else if" };
                        let _ = writeln!(out, "{pad}{kw} ({cond}) {{");
                        self.region(r, indent + 1, out)?;
                    }
                    if let Some(r) = &c.otherwise {
                        let _ = writeln!(out, "{pad}}} else {{");
                        self.region(r, indent + 1, out)?;
                    }
                    let _ = writeln!(out, "{pad}}}");
                }
                BlockKind::Break => {
                    let _ = writeln!(out, "{pad}break;");
                }
                BlockKind::Continue => {
                    let _ = writeln!(out, "{pad}continue;");
                }
                BlockKind::Return => {
                    let _ = writeln!(
                        out,
                        "{pad}SDFG_CHECK({});\n{pad}return 0;",
                        self.d.synchronize("stream")
                    );
                }
            }
            for a in &block.transition.assignments {
                let v = self.sym().expr(&a.value);
                let _ = writeln!(out, "{pad}{} = {v};", ident(&a.symbol));
            }
        }
        Ok(())
    }

    pub(super) fn state(
        &mut self,
        label: &str,
        state: &State,
        indent: usize,
        out: &mut String,
    ) -> Result<(), EmitError> {
        let pad = "  ".repeat(indent);
        let tree = state
            .scope_tree()
            .map_err(|e| EmitError::Invalid(format!("state `{label}`: {e}")))?;
        let order = state
            .topological_order()
            .ok_or_else(|| EmitError::Invalid(format!("state `{label}` has a cycle")))?;
        // Grow-only buffers this state uses.
        for x in state.accessed_containers() {
            if self.growable.contains(x) {
                self.reserve(x, indent, out);
            }
        }
        // Host code waits for the stream only where a queued copy may
        // still use what it touches: pinned host memory, which copies read
        // and write asynchronously. A copy from pageable memory reads it
        // when issued; what a copy back writes the host reads after the
        // event its state ends with (below).
        let host_code: Vec<NodeId> = order
            .iter()
            .copied()
            .filter(|n| {
                tree.parent(*n).is_none()
                    && (matches!(state.node(*n), Some(Node::Tasklet(_)))
                        || matches!(state.node(*n), Some(Node::MapEntry(m))
                            if !m.map.schedule.is_device() && !self.launches_only(state, &tree, *n)))
            })
            .collect();
        let pinned = host_code.iter().any(|&n| {
            let scope: Vec<NodeId> = state
                .nodes()
                .map(|(id, _)| id)
                .filter(|&id| id == n || tree.ancestors(id).contains(&n))
                .collect();
            scope.iter().any(|&id| {
                state
                    .in_edges(id)
                    .chain(state.out_edges(id))
                    .filter_map(|(_, _, e)| e.memlet.as_ref())
                    .any(|m| {
                        self.desc(&m.data)
                            .is_some_and(|d| d.storage == Storage::HostPinned)
                    })
            })
        });
        if pinned {
            let _ = writeln!(out, "{pad}SDFG_CHECK({});", self.d.synchronize("stream"));
        }
        // The host's symbols are in scope: what the views read needs no
        // passing.
        let _ = self.views(label, state, &tree, None, indent, out)?;
        let mut device_to_host = false;
        for &n in order.iter().filter(|n| tree.parent(**n).is_none()) {
            device_to_host |= self.host_node(label, state, &tree, n, indent, out)?;
        }
        if device_to_host && self.d.sync_before_host_read() {
            // The host reads what was copied back only once the copies are
            // done: an event after them, waited for (where copies are
            // asynchronous, as the accelerator says).
            let _ = writeln!(
                out,
                "{pad}SDFG_CHECK({});\n{pad}SDFG_CHECK({});",
                self.d.record_event("sdfg_copied", "stream"),
                self.d.wait_event("sdfg_copied")
            );
        }
        Ok(())
    }

    /// Whether a host map's scope holds nothing but maps that become kernels.
    pub(super) fn launches_only(&self, state: &State, tree: &ScopeTree, entry: NodeId) -> bool {
        tree.children(Some(entry))
            .iter()
            .all(|c| match state.node(*c) {
                Some(Node::MapEntry(m)) => m.map.schedule.is_device(),
                Some(Node::MapExit(_)) => true,
                _ => false,
            })
    }

    /// Grows the buffer of `x` to its current size where it is smaller. The
    /// pointer and capacity are reset before the old buffer is released,
    /// so a failing release or allocation never leaves a freed pointer for
    /// `exit` to release again.
    pub(super) fn reserve(&self, x: &str, indent: usize, out: &mut String) {
        let pad = "  ".repeat(indent);
        let Some(desc) = self.desc(x) else { return };
        let Some(count) = desc.total_elements() else {
            return;
        };
        let n = self.sym().expr(&count);
        let t = ctype(desc.dtype);
        let name = ident(x);
        let cap = format!("sdfg_cap_{name}");
        let _ = writeln!(out, "{pad}if ((size_t)sdfg::imax({n}, 1) > {cap}) {{");
        let _ = writeln!(
            out,
            "{pad}  {t}* sdfg_old = {name};\n{pad}  {name} = nullptr;\n{pad}  {cap} = 0;"
        );
        let memory = match desc.storage {
            Storage::DeviceGlobal => Some(Memory::Device),
            Storage::HostPinned => Some(Memory::PinnedHost),
            _ => None,
        };
        match memory {
            Some(memory) => {
                let _ = writeln!(
                    out,
                    "{pad}  if (sdfg_old) SDFG_CHECK({});\n{pad}  SDFG_CHECK({});",
                    self.d.release(memory, "sdfg_old"),
                    self.d.allocate(
                        memory,
                        &format!("(void**)&{name}"),
                        &format!("sizeof({t}) * (size_t)sdfg::imax({n}, 1)")
                    )
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "{pad}  std::free(sdfg_old);\n{pad}  {name} = ({t}*)std::calloc((size_t)sdfg::imax({n}, 1), sizeof({t}));\n\
                     {pad}  if (!{name}) {{ std::fprintf(stderr, \"{}: out of host memory for `{x}`\\n\"); return 1; }}",
                    ident(&self.sdfg.name)
                );
            }
        }
        let _ = writeln!(out, "{pad}  {cap} = (size_t)sdfg::imax({n}, 1);\n{pad}}}");
    }

    /// Declares the view pointers of a scope (`None`: the state's top
    /// level); returns the symbols their offsets read (a kernel takes them
    /// as parameters).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn views(
        &self,
        label: &str,
        state: &State,
        tree: &ScopeTree,
        scope: Option<NodeId>,
        indent: usize,
        out: &mut String,
    ) -> Result<BTreeSet<String>, EmitError> {
        let pad = "  ".repeat(indent);
        let mut used = BTreeSet::new();
        for (_, src, dst, e) in state.edges() {
            let view = if e.dst_conn.as_deref() == Some(VIEW_CONNECTOR) {
                dst
            } else if e.src_conn.as_deref() == Some(VIEW_CONNECTOR) {
                src
            } else {
                continue;
            };
            if tree.parent(view) != scope {
                continue;
            }
            let origin = if view == dst { src } else { dst };
            let (Some(v), Some(o), Some(m)) = (
                state.node(view).and_then(Node::as_access),
                state.node(origin).and_then(Node::as_access),
                e.memlet.as_ref(),
            ) else {
                continue;
            };
            let (subset, _) = m.copy_subsets(o, &self.shape(v));
            let (offset, _) = self.subset_geometry(o, &subset, &mut used);
            let desc = self
                .desc(v)
                .ok_or_else(|| EmitError::Invalid(format!("unknown view `{v}` in `{label}`")))?;
            let _ = writeln!(
                out,
                "{pad}{}* {} = {} + ({offset});",
                ctype(desc.dtype),
                ident(v),
                ident(o)
            );
        }
        Ok(used)
    }

    /// Emits one node at the top level of a state; returns whether it
    /// copied from the device to the host.
    pub(super) fn host_node(
        &mut self,
        label: &str,
        state: &State,
        tree: &ScopeTree,
        n: NodeId,
        indent: usize,
        out: &mut String,
    ) -> Result<bool, EmitError> {
        let Some(node) = state.node(n) else {
            return Ok(false);
        };
        match node {
            Node::Access(_) => {
                let mut d2h = false;
                for (_, src, e) in state.in_edges(n) {
                    let view_edge = e.dst_conn.as_deref() == Some(VIEW_CONNECTOR)
                        || e.src_conn.as_deref() == Some(VIEW_CONNECTOR);
                    if view_edge || state.node(src).and_then(Node::as_access).is_none() {
                        continue;
                    }
                    if let Some(m) = &e.memlet
                        && let Some(plan) = self.plan_copy(label, state, src, n, m)?
                    {
                        d2h |= plan.kind == CopyKind::DeviceToHost;
                        self.copy(&plan, indent, out);
                    }
                }
                Ok(d2h)
            }
            Node::MapEntry(m) if m.map.schedule.is_device() => {
                self.kernel(label, state, tree, n, indent, out)?;
                Ok(false)
            }
            Node::MapEntry(_) => {
                self.map_loops(label, state, tree, n, Ctx::Host, indent, out)?;
                Ok(false)
            }
            Node::MapExit(_) => Ok(false),
            Node::Tasklet(t) => {
                if t.host_only() {
                    // The host's clock times the device's work issued
                    // before it (GT4Py's timers): that work ends first.
                    let _ = writeln!(
                        out,
                        "{}SDFG_CHECK({});",
                        "  ".repeat(indent),
                        self.d.synchronize("stream")
                    );
                }
                self.tasklet(
                    label,
                    state,
                    n,
                    Ctx::Host,
                    indent,
                    out,
                    &mut BTreeSet::new(),
                )?;
                Ok(false)
            }
            Node::Library(l) if l.schedule.is_device() => {
                self.vendor_call(label, state, n, indent, out)?;
                Ok(false)
            }
            Node::Library(l) => Err(unsupported(
                format!(
                    "the library node `{}` ({}) on the host: lower it first (sdfg_passes::lower_library_nodes)",
                    l.label,
                    l.op.name()
                ),
                &l.label,
                label,
            )),
            Node::NestedSdfg(nested) => Err(unsupported(
                "a nested SDFG (not emitted yet)",
                &nested.label,
                label,
            )),
            Node::Callback(c) => Err(unsupported(
                "a host callback (not emitted yet)",
                &c.label,
                label,
            )),
        }
    }
}
