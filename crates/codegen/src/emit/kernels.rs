//! Kernels and their launches: a device map's kernel (its parameters,
//! grid-stride loops over the map, locals in registers and shared memory),
//! the grid and block it is launched on, and the loops and scope bodies
//! every kind of code (host, thread, block, grid) shares.
//!
//! Separate because a kernel is the boundary between host and device: its
//! body is emitted into the unit's kernels and its launch into the host
//! code. The launch is decided first, into a [`LaunchPlan`] (kernel, grid,
//! block, shared bytes, cooperative or not, arguments), and printed by
//! one function through the dialect ([`crate::DialectMemory::launch`]).

use super::reductions::GRID_REDUCTION_BLOCKS;
use super::{Ctx, Emitter, decompose, unsupported};
use crate::EmitError;
use crate::cpp::{ctype, ident};
use crate::dialect::{Axis, LaunchGrid, LaunchPlan};
use sdfg_ir::{Node, NodeId, Range, Schedule, ScopeTree, State, Storage, SymExpr};
use std::collections::BTreeSet;
use std::fmt::Write;

impl Emitter<'_> {
    /// A map's iterations as nested sequential loops (on the host, or per
    /// thread inside a kernel), its scope inside.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn map_loops(
        &mut self,
        label: &str,
        state: &State,
        tree: &ScopeTree,
        entry: NodeId,
        ctx: Ctx,
        indent: usize,
        out: &mut String,
    ) -> Result<BTreeSet<String>, EmitError> {
        let Some(Node::MapEntry(m)) = state.node(entry) else {
            return Ok(BTreeSet::new());
        };
        let mut used = BTreeSet::new();
        let mut p = self.sym();
        let mut pad = "  ".repeat(indent);
        let mut depth = 0;
        for (param, r) in m.map.dims() {
            let (b, e, s) = (p.expr(&r.begin), p.expr(&r.end), p.expr(&r.step));
            let v = ident(param);
            let cmp = if r.step.as_int().is_some_and(|s| s < 0) {
                ">="
            } else {
                "<="
            };
            let _ = writeln!(
                out,
                "{pad}for (int64_t {v} = {b}; {v} {cmp} {e}; {v} += {s}) {{"
            );
            depth += 1;
            pad = "  ".repeat(indent + depth);
        }
        used.extend(p.used);
        used.extend(self.scope_body(label, state, tree, Some(entry), ctx, indent + depth, out)?);
        for k in (0..depth).rev() {
            let _ = writeln!(out, "{}}}", "  ".repeat(indent + k));
        }
        for param in &m.map.params {
            used.remove(param);
        }
        Ok(used)
    }

    /// The nodes of a scope in topological order; returns the symbols used.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn scope_body(
        &mut self,
        label: &str,
        state: &State,
        tree: &ScopeTree,
        scope: Option<NodeId>,
        ctx: Ctx,
        indent: usize,
        out: &mut String,
    ) -> Result<BTreeSet<String>, EmitError> {
        let mut used = BTreeSet::new();
        let order = state
            .topological_order()
            .ok_or_else(|| EmitError::Invalid(format!("state `{label}` has a cycle")))?;
        used.extend(self.views(label, state, tree, scope, indent, out)?);
        if ctx == Ctx::Grid && scope.is_none() {
            // A state of a persistent kernel's body.
            let mut grid = self.grid_state(label, state, tree, &order, indent, out)?;
            grid.extend(used);
            return Ok(grid);
        }
        for n in order.into_iter().filter(|n| tree.parent(*n) == scope) {
            match state.node(n) {
                Some(Node::Tasklet(_)) => {
                    self.tasklet(label, state, n, ctx, indent, out, &mut used)?;
                }
                Some(Node::MapEntry(m)) if m.map.schedule.is_device() && ctx == Ctx::Host => {
                    // A kernel launched by a map kept on the host.
                    used.extend(self.kernel(label, state, tree, n, indent, out)?);
                }
                Some(Node::MapEntry(m)) if m.map.schedule == Schedule::DeviceThreadBlock => {
                    used.extend(self.thread_block_map(label, state, tree, n, indent, out)?);
                }
                Some(Node::MapEntry(_)) => {
                    used.extend(self.map_loops(label, state, tree, n, ctx, indent, out)?);
                }
                Some(Node::Access(a)) => {
                    used.extend(self.scope_copies(label, state, n, &a.data, indent, out)?);
                }
                Some(Node::NestedSdfg(nested)) if ctx != Ctx::Host => {
                    used.extend(self.nested_in_kernel(
                        label,
                        state,
                        n,
                        nested,
                        ctx == Ctx::Grid,
                        indent,
                        out,
                    )?);
                }
                Some(Node::MapExit(_)) | None => {}
                Some(other) => {
                    return Err(unsupported(
                        format!("a {} inside a map (not emitted yet)", other.kind_name()),
                        other.label(),
                        label,
                    ));
                }
            }
        }
        Ok(used)
    }

    /// Emits the kernel of device map `entry` and its launch; returns the
    /// symbols the launch uses.
    pub(super) fn kernel(
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
        let mut name = format!("{}_k{}", ident(&map.label), self.kernels.len());
        name.retain(|c| c.is_ascii_alphanumeric() || c == '_');
        let blocks_only = self.has_thread_block_map(state, tree, entry);
        let persistent = map.schedule == Schedule::DevicePersistent;
        let spread = if blocks_only && !persistent {
            self.grid_spread(state, tree, entry, &map)
        } else {
            None
        };

        // The kernel body first: it tells which containers and symbols the
        // kernel takes. Every map dimension is a grid-stride loop, so a
        // grid clamped to the accelerator's limits still covers the map.
        let mut body = String::new();
        let mut p = self.sym();
        let counts: Vec<String> = map
            .ranges
            .iter()
            .map(|r| p.expr(&r.num_elements()))
            .collect();
        let mut index = String::new();
        let dims = map.params.len();
        let d = self.d;
        let thread = |axis: Axis| {
            if spread.is_some() {
                // The one point, in every block: the blocks share the
                // thread-block map's iterations instead.
                ("(int64_t)0".to_owned(), "(int64_t)1".to_owned())
            } else if blocks_only {
                (
                    format!("(int64_t){}", d.block_index(axis)),
                    format!("(int64_t){}", d.grid_size(axis)),
                )
            } else {
                (
                    format!(
                        "(int64_t){} * {} + {}",
                        d.block_index(axis),
                        d.block_size(axis),
                        d.thread_index(axis)
                    ),
                    format!("(int64_t){} * {}", d.grid_size(axis), d.block_size(axis)),
                )
            }
        };
        // The grid's axes, outermost first: a map dimension each, or for a
        // map of more than three dimensions its innermost two and the
        // others folded into the outermost axis (decoded with a division
        // per folded dimension but one).
        let groups: Vec<Vec<usize>> = if dims <= 3 {
            (0..dims).map(|k| vec![k]).collect()
        } else {
            vec![(0..dims - 2).collect(), vec![dims - 2], vec![dims - 1]]
        };
        let axis_counts: Vec<String> = groups
            .iter()
            .map(|g| {
                g.iter()
                    .map(|&k| counts[k].clone())
                    .collect::<Vec<_>>()
                    .join(" * ")
            })
            .collect();
        let axes = groups.len();
        let mut depth = 1;
        if persistent {
            self.persistent_index(&mut p, &map, label, &mut index)?;
        } else {
            for (a, group) in groups.iter().enumerate() {
                let axis = Axis::ALL[axes - 1 - a];
                let (first, stride) = thread(axis);
                let pad = "  ".repeat(depth);
                if let [k] = group[..] {
                    let (param, r) = (&map.params[k], &map.ranges[k]);
                    let _ = writeln!(
                        index,
                        "{pad}for (int64_t {v}_i = {first}; {v}_i < {c}; {v}_i += {stride}) {{\n{pad}  const int64_t {v} = {b} + {v}_i * {s};",
                        v = ident(param),
                        c = counts[k],
                        b = p.expr(&r.begin),
                        s = p.expr(&r.step)
                    );
                } else {
                    let folded = sdfg_ir::Map {
                        label: map.label.clone(),
                        params: group.iter().map(|&k| map.params[k].clone()).collect(),
                        ranges: group.iter().map(|&k| map.ranges[k].clone()).collect(),
                        schedule: map.schedule,
                    };
                    let folded_counts: Vec<String> =
                        group.iter().map(|&k| counts[k].clone()).collect();
                    let _ = writeln!(
                        index,
                        "{pad}for (int64_t sdfg_t = {first}; sdfg_t < {}; sdfg_t += {stride}) {{\n{pad}  int64_t sdfg_rest = sdfg_t;",
                        axis_counts[a]
                    );
                    decompose(
                        &mut p,
                        &folded,
                        &folded_counts,
                        &format!("{pad}  "),
                        &mut index,
                    );
                }
                depth += 1;
            }
        }
        let mut used = p.used;
        let mut inner = String::new();
        let ctx = if persistent {
            Ctx::Grid
        } else if blocks_only {
            Ctx::Block
        } else {
            Ctx::Device
        };
        self.spread = spread.as_ref().map(|g| g.entry);
        let emitted = self.scope_body(label, state, tree, Some(entry), ctx, depth, &mut inner);
        self.spread = None;
        used.extend(emitted?);
        for k in (1..depth).rev() {
            let _ = writeln!(inner, "{}}}", "  ".repeat(k));
        }
        // Containers the kernel touches: registers and shared memory are its own.
        let mut containers: BTreeSet<String> = BTreeSet::new();
        let mut locals = String::new();
        let scope_nodes: Vec<NodeId> = state
            .nodes()
            .map(|(id, _)| id)
            .filter(|id| *id == entry || tree.ancestors(*id).contains(&entry))
            .collect();
        for &id in &scope_nodes {
            if let Some(x) = state.node(id).and_then(Node::as_access) {
                containers.insert(x.to_owned());
            }
            for (_, _, e) in state.in_edges(id).chain(state.out_edges(id)) {
                if let Some(m) = &e.memlet {
                    containers.insert(m.data.clone());
                }
            }
        }
        // (C++ type, parameter name, the host's launch argument) of each
        // kernel parameter.
        let mut params: Vec<(String, String, String)> = Vec::new();
        let space = self.d.pointer_address_space();
        let restrict = |t: &str| format!("{space}{t}* {}", d.restrict_qualifier());
        for x in &containers {
            let Some(desc) = self.desc(x) else { continue };
            let t = ctype(desc.dtype);
            match desc.storage {
                Storage::Register | Storage::DeviceShared if !desc.is_view() => {
                    let count =
                        desc.total_elements()
                            .and_then(|c| c.as_int())
                            .ok_or_else(|| {
                                unsupported(
                                    format!(
                                        "`{x}` in {} with a size not known at compile time",
                                        desc.storage
                                    ),
                                    &map.label,
                                    label,
                                )
                            })?;
                    let shared = if desc.storage == Storage::DeviceShared {
                        format!("{} ", self.d.shared_qualifier())
                    } else {
                        String::new()
                    };
                    let _ = writeln!(
                        locals,
                        "  {shared}{t} {n}_s[{c}];\n  {t}* {n} = {n}_s;",
                        n = ident(x),
                        c = count.max(1)
                    );
                }
                _ if desc.is_view() => {
                    // Declared where its view edge is, inside the kernel, or
                    // passed in when declared by the host.
                    let inside = scope_nodes.iter().any(|id| {
                        state.node(*id).and_then(Node::as_access) == Some(x.as_str())
                            && tree.parent(*id).is_some()
                    });
                    if !inside {
                        params.push((restrict(t), ident(x), ident(x)));
                    }
                }
                _ if desc.is_scalar() && desc.storage.side() != Some(sdfg_ir::Side::Device) => {
                    // A host scalar the kernel only reads, taken by value at
                    // the launch (`docs/ir.md`, "Scalars by value"); the
                    // body reads it through a pointer like any container.
                    // (`sdfg` names are the emitter's own: no collision.)
                    let n = ident(x);
                    let _ = writeln!(locals, "  {t}* {n} = &sdfg_value_{n};");
                    params.push((t.to_owned(), format!("sdfg_value_{n}"), format!("{n}[0]")));
                }
                // A persistent kernel's threads read what others wrote
                // before a barrier: no `__restrict__`, which lets a
                // compiler read through the non-coherent read-only cache.
                _ if persistent => params.push((format!("{space}{t}*"), ident(x), ident(x))),
                _ => params.push((restrict(t), ident(x), ident(x))),
            }
        }
        if let Some(g) = &spread {
            let t = ctype(g.dtype);
            params.push((
                restrict(t),
                "sdfg_parts".to_owned(),
                format!("{name}_parts"),
            ));
            params.push((
                format!("{space}unsigned int*"),
                "sdfg_tickets".to_owned(),
                format!("{name}_tickets"),
            ));
            self.grid_buffers.push((name.clone(), t.to_owned()));
        }
        let mut scope_params: BTreeSet<String> = BTreeSet::new();
        for &id in &scope_nodes {
            if let Some(Node::MapEntry(inner_map)) = state.node(id) {
                scope_params.extend(inner_map.map.params.iter().cloned());
            }
        }
        let symbols: Vec<String> = used
            .iter()
            .filter(|s| !scope_params.contains(*s) && !self.sdfg.containers.contains_key(*s))
            .cloned()
            .collect();
        for s in &symbols {
            let t = self
                .sdfg
                .symbols
                .get(s)
                .copied()
                .unwrap_or(sdfg_ir::DType::Int64);
            params.push((ctype(t).to_owned(), ident(s), ident(s)));
        }
        let decl = format!(
            "{} void {name}({})",
            self.d.kernel_qualifier(),
            params
                .iter()
                .map(|(t, n, _)| format!("{t} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        body.push_str(&locals);
        body.push_str(&index);
        body.push_str(&inner);
        self.kernels.push((decl, body));
        self.kernel_names.push(name.clone());

        let arguments: Vec<String> = params.into_iter().map(|(_, _, a)| a).collect();
        if persistent {
            self.cooperative = true;
            let plan = self.persistent_launch(&name, arguments);
            self.launch(&plan, indent, out);
            let mut launch_used: BTreeSet<String> = symbols.into_iter().collect();
            launch_used.retain(|s| !map.params.contains(s));
            return Ok(launch_used);
        }
        // Symbols the grid of a spread reduction names (its iterations).
        let mut symbols_used_by_grid: BTreeSet<String> = BTreeSet::new();
        // The launch: blocks to cover the map, at most the accelerator's
        // grid limit per axis (the grid-stride loops do the rest).
        let block = self.d.default_block();
        let limits = self.d.max_grid();
        let threads: u32 = block.iter().product();
        // A block no wider than a constant extent needs (rounded up to a
        // power of two): a single-point kernel is one thread, nbody's
        // `(N, 3)` maps 4 x 64 threads instead of 32 x 8 with 29 lanes idle.
        let extents: Vec<Option<i64>> = groups
            .iter()
            .map(|g| SymExpr::constant_product(g.iter().map(|&k| map.ranges[k].num_elements())))
            .collect();
        let fit = |limit: u32, extent: Option<i64>| match extent.and_then(|c| u32::try_from(c).ok())
        {
            Some(c) if c >= 1 => limit.min(c.next_power_of_two()),
            _ => limit,
        };
        let (grid, blockdim) = if blocks_only {
            // Whole warps (the block reductions shuffle within warps), no
            // more than the widest thread-block map needs.
            let warp = self.d.warp_size().max(1);
            let widest = self.thread_block_extent(state, tree, entry);
            let threads = fit(threads, widest).max(warp).div_ceil(warp) * warp;
            let g: Vec<String> = match &spread {
                // As many blocks as the iterations fill, at least one.
                Some(g) => {
                    let mut printer = self.sym();
                    let n = printer.expr(&g.iterations);
                    symbols_used_by_grid.extend(printer.used);
                    vec![format!(
                        "sdfg::imin(sdfg::imax(sdfg::ifloordiv({n} + {threads} - 1, {threads}), 1LL), {GRID_REDUCTION_BLOCKS}LL)"
                    )]
                }
                None => axis_counts.iter().rev().cloned().collect(),
            };
            (g, vec![threads.to_string()])
        } else if axes == 1 {
            let total = counts.join(" * ");
            let product = SymExpr::constant_product(map.ranges.iter().map(Range::num_elements));
            let threads = fit(threads, product);
            (
                vec![format!(
                    "sdfg::ifloordiv({total} + {threads} - 1, {threads})"
                )],
                vec![threads.to_string()],
            )
        } else {
            // Extents innermost first, as the block's axes x, y, z.
            let inner = |k: usize| extents[axes - 1 - k];
            let bx = fit(block[0].max(1), inner(0));
            let by = if axes == 2 {
                (threads / bx).max(1)
            } else {
                block[1].max(1)
            };
            let by = fit(by, inner(1));
            let bz = if axes == 3 {
                fit(block[2].max(1), inner(2))
            } else {
                1
            };
            let b = [bx, by, bz];
            let g = axis_counts
                .iter()
                .rev()
                .enumerate()
                .map(|(k, c)| format!("sdfg::ifloordiv({c} + {} - 1, {})", b[k], b[k]))
                .collect();
            (g, b[..axes].iter().map(u32::to_string).collect())
        };
        let plan = LaunchPlan {
            kernel: name,
            grid: LaunchGrid::Blocks(
                grid.iter()
                    .enumerate()
                    .map(|(axis, g)| format!("(unsigned)sdfg::imin({g}, {}LL)", limits[axis]))
                    .collect(),
            ),
            block: blockdim,
            shared_bytes: "0".to_owned(),
            cooperative: false,
            // Its threads wait for each other: a runtime that runs threads
            // itself (the emulated GPU) needs to know before the launch.
            synchronizing: blocks_only,
            arguments,
            guard: counts.iter().map(|c| format!("{c} > 0")).collect(),
        };
        self.launch(&plan, indent, out);
        let mut launch_used: BTreeSet<String> = symbols.into_iter().collect();
        launch_used.extend(symbols_used_by_grid);
        launch_used.retain(|s| !map.params.contains(s));
        Ok(launch_used)
    }

    /// The most iterations a thread-block map inside kernel `entry` has,
    /// where every such map's count is a constant (`None` otherwise).
    pub(super) fn thread_block_extent(
        &self,
        state: &State,
        tree: &ScopeTree,
        entry: NodeId,
    ) -> Option<i64> {
        state
            .nodes()
            .filter(|(id, _)| tree.ancestors(*id).contains(&entry))
            .filter_map(|(_, n)| match n {
                Node::MapEntry(m) if m.map.schedule == Schedule::DeviceThreadBlock => Some(
                    SymExpr::constant_product(m.map.ranges.iter().map(Range::num_elements)),
                ),
                _ => None,
            })
            .try_fold(1i64, |a, c| c.map(|c| a.max(c)))
    }

    pub(super) fn has_thread_block_map(
        &self,
        state: &State,
        tree: &ScopeTree,
        entry: NodeId,
    ) -> bool {
        state.nodes().any(|(id, n)| {
            matches!(n, Node::MapEntry(m) if m.map.schedule == Schedule::DeviceThreadBlock)
                && tree.ancestors(id).contains(&entry)
        })
    }

    /// Prints the launch `plan` decided, in the dialect's form: the one
    /// place kernel launches are printed.
    pub(super) fn launch(&self, plan: &LaunchPlan, indent: usize, out: &mut String) {
        out.push_str(&self.d.launch(plan, &"  ".repeat(indent)));
    }
}
