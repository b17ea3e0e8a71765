//! Reductions across threads: whether a combining write races (and so is
//! atomic), thread-block maps whose threads combine into a register
//! through a block reduction, and the reductions spread over the whole
//! grid, whose last block combines the blocks' partials.
//!
//! Separate because these are the kernels' cooperative parts: the block
//! barrier, the block and grid reductions of the prelude and the buffers
//! the unit keeps for them.

use super::{Ctx, Emitter, decompose, unsupported};
use crate::EmitError;
use crate::cpp::{self, ctype, ident};
use crate::dialect::Axis;
use sdfg_ir::{DType, Node, NodeId, Range, Schedule, ScopeTree, State, Storage, SymExpr, Wcr};
use std::collections::BTreeSet;
use std::fmt::Write;

/// The most blocks a reduction spread over the grid launches: enough to
/// fill any current GPU several times over (an H100 has 132 SMs), few
/// enough for the last block to combine their partials in one pass.
pub(super) const GRID_REDUCTION_BLOCKS: i64 = 1024;

/// A reduction spread over the grid ([`Emitter::grid_spread`]).
pub(super) struct GridSpread {
    /// The thread-block map's entry.
    pub(super) entry: NodeId,
    /// The type of what it combines.
    pub(super) dtype: DType,
    /// Its iterations, which the blocks share.
    pub(super) iterations: SymExpr,
}

impl Emitter<'_> {
    /// Whether a combining write to `data` from code running in `ctx` may
    /// race with other threads (then it is atomic). Registers are private to
    /// a thread: no other thread can write them, and atomics on them are
    /// illegal; host code is sequential.
    pub(super) fn shared_update(&self, data: &str, ctx: Ctx) -> bool {
        let private = self
            .desc(data)
            .is_some_and(|d| d.storage == Storage::Register);
        ctx != Ctx::Host && !private
    }

    /// The reduction of kernel `entry` that spreads over the grid, where it
    /// can: a kernel of one point (a full reduction: `np.sum(a)`, a dot)
    /// whose one thread-block map combines into one register, by a sum,
    /// product, minimum or maximum. One block would run all of it on one
    /// multiprocessor; instead every block takes a share of the
    /// iterations, and the last block to finish combines the blocks'
    /// partials (`sdfg::grid_reduce`) and runs the rest of the kernel
    /// alone. So the kernel must hold nothing else that other blocks would
    /// repeat: before the thread-block map only code writing registers
    /// (each block's own), everything else after it.
    pub(super) fn grid_spread(
        &self,
        state: &State,
        tree: &ScopeTree,
        entry: NodeId,
        map: &sdfg_ir::Map,
    ) -> Option<GridSpread> {
        if SymExpr::constant_product(map.ranges.iter().map(Range::num_elements)) != Some(1) {
            return None;
        }
        let in_scope: Vec<NodeId> = state
            .nodes()
            .map(|(id, _)| id)
            .filter(|id| tree.ancestors(*id).contains(&entry))
            .collect();
        let blocks: Vec<NodeId> = in_scope
            .iter()
            .copied()
            .filter(|id| {
                matches!(state.node(*id), Some(Node::MapEntry(m)) if m.map.schedule == Schedule::DeviceThreadBlock)
            })
            .collect();
        let [tb] = blocks.as_slice() else {
            return None;
        };
        let Some(Node::MapEntry(tb_map)) = state.node(*tb) else {
            return None;
        };
        if tree.parent(*tb) != Some(entry) {
            return None;
        }
        let tb_exit = state.exit_of(*tb)?;
        let register = |x: &str| self.desc(x).is_some_and(|d| d.storage == Storage::Register);
        // The one register the map combines into.
        let mut partials = state
            .out_edges(tb_exit)
            .filter_map(|(_, _, e)| e.memlet.as_ref());
        let m = partials.next()?;
        if partials.next().is_some()
            || !register(&m.data)
            || !matches!(m.wcr, Some(Wcr::Sum | Wcr::Product | Wcr::Min | Wcr::Max))
        {
            return None;
        }
        let dtype = self.desc(&m.data)?.dtype;
        // What runs after the map: everything reachable from its exit.
        let mut after: BTreeSet<NodeId> = BTreeSet::new();
        let mut stack = vec![tb_exit];
        while let Some(n) = stack.pop() {
            for (_, d, _) in state.out_edges(n) {
                if after.insert(d) {
                    stack.push(d);
                }
            }
        }
        let inside_tb = |id: NodeId| id == *tb || tree.ancestors(id).contains(tb);
        let repeated = in_scope.iter().any(|&id| {
            if inside_tb(id) || after.contains(&id) {
                return false;
            }
            // Before the map (or beside it): each block runs it; only
            // registers may be written there.
            state
                .in_edges(id)
                .filter_map(|(_, _, e)| e.memlet.as_ref())
                .chain(
                    state
                        .out_edges(id)
                        .filter_map(|(_, _, e)| e.memlet.as_ref()),
                )
                .any(|m| {
                    let written = state.node(id).is_some_and(|n| n.as_access().is_some())
                        && state.in_edges(id).next().is_some();
                    (written || m.wcr.is_some()) && !register(&m.data)
                })
        });
        if repeated {
            return None;
        }
        Some(GridSpread {
            entry: *tb,
            dtype,
            iterations: tb_map.map.num_iterations(),
        })
    }

    /// A thread-block map: the block's threads share its iterations, then
    /// wait for each other.
    pub(super) fn thread_block_map(
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
        let pad = "  ".repeat(indent);
        let mut p = self.sym();
        let counts: Vec<String> = m
            .map
            .ranges
            .iter()
            .map(|r| p.expr(&r.num_elements()))
            .collect();
        // Registers the map's iterations combine into (a reduction's
        // accumulator): each thread combines its share into a partial
        // started from the identity, then the block's partials are combined
        // (`sdfg::block_reduce`) into the value the register had.
        let mut partials: Vec<(String, Wcr, DType)> = Vec::new();
        let exit = state.exit_of(entry);
        for (_, _, e) in exit.into_iter().flat_map(|x| state.out_edges(x)) {
            let Some(m) = e.memlet.as_ref() else { continue };
            let (Some(w), Some(desc)) = (m.wcr, self.desc(&m.data)) else {
                continue;
            };
            if desc.storage != Storage::Register {
                continue;
            }
            if !m.subset.ranges.iter().all(Range::is_index) {
                return Err(unsupported(
                    format!(
                        "a combining write from a thread-block map to several elements of register `{}`",
                        m.data
                    ),
                    &m.data,
                    label,
                ));
            }
            let (offset, _) = self.subset_geometry(&m.data, &m.subset, &mut p.used);
            let target = format!("{}[{offset}]", ident(&m.data));
            if !partials.iter().any(|(t, _, _)| *t == target) {
                partials.push((target, w, desc.dtype));
            }
        }
        // Named after the map: several thread-block maps share a kernel.
        let before = |k: usize| format!("sdfg_before{}_{k}", entry.index());
        for (k, (target, w, dtype)) in partials.iter().enumerate() {
            let _ = writeln!(
                out,
                "{pad}const {t} {b} = {target};\n{pad}{target} = {};",
                cpp::literal(&w.identity(*dtype)),
                b = before(k),
                t = ctype(*dtype)
            );
        }
        let spread = self.spread == Some(entry);
        let d = self.d;
        let (first, stride) = if spread {
            (
                format!(
                    "(int64_t){} * {} + {}",
                    d.block_index(Axis::X),
                    d.block_size(Axis::X),
                    d.thread_index(Axis::X)
                ),
                format!(
                    "(int64_t){} * {}",
                    d.grid_size(Axis::X),
                    d.block_size(Axis::X)
                ),
            )
        } else {
            (d.thread_index(Axis::X), d.block_size(Axis::X))
        };
        let _ = writeln!(
            out,
            "{pad}for (int64_t sdfg_t = {first}; sdfg_t < {}; sdfg_t += {stride}) {{",
            counts.join(" * ")
        );
        let _ = writeln!(out, "{pad}  int64_t sdfg_rest = sdfg_t;");
        decompose(&mut p, &m.map, &counts, &format!("{pad}  "), out);
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
        for (k, (target, w, dtype)) in partials.iter().enumerate() {
            let op = format!("sdfg::op_{w}<{}>", ctype(*dtype));
            let total = format!("sdfg::block_reduce<{op}>({target})");
            if spread {
                // The blocks' totals combined by the last block to finish;
                // the others are done.
                let _ = writeln!(
                    out,
                    "{pad}{t} sdfg_part = {total};\n{pad}if (!sdfg::grid_reduce<{op}>(sdfg_part, {}, sdfg_parts, sdfg_tickets)) return;",
                    cpp::literal(&w.identity(*dtype)),
                    t = ctype(*dtype)
                );
                let _ = writeln!(
                    out,
                    "{pad}{target} = {};",
                    cpp::combine(*w, &before(k), "sdfg_part")
                );
            } else {
                let _ = writeln!(
                    out,
                    "{pad}{target} = {};",
                    cpp::combine(*w, &before(k), &total)
                );
            }
        }
        let _ = writeln!(out, "{pad}{};", self.d.block_barrier());
        for param in &m.map.params {
            used.remove(param);
        }
        Ok(used)
    }
}
