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
use crate::dialect::{Axis, LaunchGrid, LaunchPlan};
use sdfg_ir::{BlockKind, Node, NodeId, Region, Schedule, ScopeTree, State};
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
        let d = self.d;
        let _ = writeln!(
            out,
            "  const int64_t sdfg_rank = (int64_t){} * {} + {};\n  \
             const int64_t sdfg_threads = (int64_t){} * {};",
            d.block_index(Axis::X),
            d.block_size(Axis::X),
            d.thread_index(Axis::X),
            d.grid_size(Axis::X),
            d.block_size(Axis::X)
        );
        Ok(())
    }

    /// The host's launch of persistent kernel `name` with `arguments`:
    /// as many blocks of the default block size as can be resident at
    /// once, and cooperative, so that its grid may wait for itself.
    pub(super) fn persistent_launch(&self, name: &str, arguments: Vec<String>) -> LaunchPlan {
        let threads: u32 = self.d.default_block().iter().product();
        LaunchPlan {
            kernel: name.to_owned(),
            grid: LaunchGrid::Resident,
            block: vec![threads.to_string()],
            shared_bytes: "0".to_owned(),
            cooperative: true,
            synchronizing: false,
            arguments,
            guard: Vec::new(),
        }
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
            let target = format!("{}[{offset}]", ident(data));
            let _ = writeln!(
                combine,
                "{lpad}{};",
                self.d
                    .atomic_update(cpp::atomic_update(*w), &target, &partial)
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

/// The barrier after a test or assignment of a persistent kernel's body
/// that reads memory ([`barrier_precedes_writes`]).
pub(super) const READ_BARRIER: &str =
    "SDFG_GRID_SYNC();  // every thread has read it before any writes it again";

/// A point of a persistent kernel's body: the block about to run at the
/// innermost level, below the compound blocks (loops, conditionals) that
/// hold it, outermost first. An index one past a region's end is the end
/// of that region.
pub(super) type Position<'a> = Vec<(&'a Region, usize)>;

/// Whether the grid's threads all pass a grid-wide barrier, on every path
/// from each of `starts`, before any code writes one of `read`.
///
/// A persistent kernel's control flow (its tests, branch conditions and
/// interstate assignments) is run by every thread, reading values one
/// thread or all of them wrote into device memory before the barrier that
/// ended the last state. Nothing orders a thread's read after that barrier
/// before another thread's next write of the same value, unless a barrier
/// lies between them: a thread that races ahead to the next write makes
/// slower threads read the new value, the threads disagree on the control
/// flow, and the barriers pair up wrongly (issue #39's probe: a condition
/// computed once per iteration of a loop whose body may run no state).
/// Where this answers `false`, the emitter reads the values into the
/// thread's locals and puts a barrier after the read.
///
/// Every state of the body ends with a barrier, so a path is safe once it
/// reaches a state that writes none of `read`, and unsafe at one that
/// writes any; tests and assignments on the way only read. Breaks,
/// continues, loop back edges and the ends of regions are followed as the
/// emitted C++ runs them; the end of the body ends the kernel, after which
/// nothing writes. Each position is visited once, so the walk is linear in
/// the body's size.
pub(super) fn barrier_precedes_writes(starts: Vec<Position<'_>>, read: &BTreeSet<String>) -> bool {
    let mut work = starts;
    let mut seen: BTreeSet<(*const Region, usize)> = BTreeSet::new();
    while let Some(mut at) = work.pop() {
        let Some(&(region, index)) = at.last() else {
            continue;
        };
        if !seen.insert((std::ptr::from_ref(region), index)) {
            continue;
        }
        let Some(block) = region.blocks.get(index) else {
            // The end of a region: a loop's body goes back to its test,
            // which continues the body or leaves the loop; any other
            // region goes on after the block holding it.
            at.pop();
            let Some(&(outer, k)) = at.last() else {
                continue;
            };
            if let Some(BlockKind::Loop(l)) = outer.blocks.get(k).map(|b| &b.kind) {
                let mut again = at.clone();
                again.push((&l.body, 0));
                work.push(again);
            }
            at.last_mut().expect("non-empty").1 = k + 1;
            work.push(at);
            continue;
        };
        match &block.kind {
            BlockKind::State(state) => {
                if writes_any(state, read) {
                    return false;
                }
            }
            BlockKind::Loop(l) => {
                let mut enter = at.clone();
                enter.push((&l.body, 0));
                work.push(enter);
                at.last_mut().expect("non-empty").1 = index + 1;
                work.push(at);
            }
            BlockKind::Conditional(c) => {
                for r in c.branches.iter().map(|(_, r)| r).chain(&c.otherwise) {
                    let mut enter = at.clone();
                    enter.push((r, 0));
                    work.push(enter);
                }
                if c.otherwise.is_none() {
                    at.last_mut().expect("non-empty").1 = index + 1;
                    work.push(at);
                }
            }
            BlockKind::Break | BlockKind::Continue => {
                // To the innermost loop around: past it, or back to its test.
                let Some(depth) = at[..at.len() - 1]
                    .iter()
                    .rposition(|(r, k)| matches!(r.blocks[*k].kind, BlockKind::Loop(_)))
                else {
                    continue;
                };
                at.truncate(depth + 1);
                if matches!(block.kind, BlockKind::Continue) {
                    let (r, k) = at[depth];
                    if let BlockKind::Loop(l) = &r.blocks[k].kind {
                        let mut again = at.clone();
                        again.push((&l.body, 0));
                        work.push(again);
                    }
                }
                at[depth].1 += 1;
                work.push(at);
            }
            // The kernel ends.
            BlockKind::Return => {}
        }
    }
    true
}

/// Whether `state` writes one of `data`: an access node of it with an
/// incoming memlet (from code, a copy, a nested SDFG or a view; an empty
/// edge only orders).
fn writes_any(state: &State, data: &BTreeSet<String>) -> bool {
    state.nodes().any(|(id, node)| {
        matches!(node, Node::Access(a) if data.contains(&a.data))
            && state.in_edges(id).any(|(_, _, e)| e.memlet.is_some())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sdfg_ir::{ConditionalBlock, ControlBlock, LoopBlock, Memlet, SymCond, SymExpr};

    /// A state copying `from` into `to` (a write of `to`), or an empty one.
    fn state(label: &str, write: Option<(&str, &str)>) -> ControlBlock {
        let mut s = State::new();
        if let Some((from, to)) = write {
            let a = s.add_access(from);
            let b = s.add_access(to);
            s.add_edge(a, None, b, None, Memlet::full(from, &[SymExpr::int(1)]));
        }
        ControlBlock::new(label, BlockKind::State(s))
    }

    fn branch(then: Vec<ControlBlock>, otherwise: Option<Vec<ControlBlock>>) -> ControlBlock {
        let test = SymCond::parse("c[0] > 0").unwrap();
        ControlBlock::new(
            "if",
            BlockKind::Conditional(ConditionalBlock {
                branches: vec![(test, Region::new(then))],
                otherwise: otherwise.map(Region::new),
            }),
        )
    }

    fn looped(body: Vec<ControlBlock>) -> ControlBlock {
        let test = SymCond::parse("m < 9").unwrap();
        ControlBlock::new(
            "loop",
            BlockKind::Loop(LoopBlock::while_loop(test, Region::new(body))),
        )
    }

    /// Whether the branch at `root`'s block `at` (a conditional at the
    /// top level) may decide on `c` without a barrier after the read.
    fn safe_after_branch(root: &Region, path: &[usize]) -> bool {
        // The position of the conditional, through the loops around it.
        let mut at: Position<'_> = Vec::new();
        let mut region = root;
        for (depth, &k) in path.iter().enumerate() {
            at.push((region, k));
            if depth + 1 < path.len() {
                let BlockKind::Loop(l) = &region.blocks[k].kind else {
                    panic!("not a loop");
                };
                region = &l.body;
            }
        }
        let BlockKind::Conditional(c) = &region.blocks[*path.last().unwrap()].kind else {
            panic!("not a conditional");
        };
        let mut next: Vec<Position<'_>> = c
            .branches
            .iter()
            .map(|(_, r)| r)
            .chain(&c.otherwise)
            .map(|r| {
                let mut p = at.clone();
                p.push((r, 0));
                p
            })
            .collect();
        if c.otherwise.is_none() {
            let mut p = at.clone();
            p.last_mut().unwrap().1 += 1;
            next.push(p);
        }
        barrier_precedes_writes(next, &BTreeSet::from(["c".to_owned()]))
    }

    #[test]
    fn a_condition_written_again_before_any_barrier_needs_one_after_its_read() {
        // The probe's shape: the condition computed at the top of a loop
        // body, then a branch that may run no state: the back edge reaches
        // the next computation of `c` first.
        let probe = Region::new(vec![looped(vec![
            state("compute", Some(("flags", "c"))),
            branch(vec![state("work", Some(("x", "y")))], None),
        ])]);
        assert!(!safe_after_branch(&probe, &[0, 1]));
        // An else branch with a state of its own: every path meets a
        // barrier first.
        let both = Region::new(vec![looped(vec![
            state("compute", Some(("flags", "c"))),
            branch(
                vec![state("work", Some(("x", "y")))],
                Some(vec![state("other", Some(("x", "z")))]),
            ),
        ])]);
        assert!(safe_after_branch(&both, &[0, 1]));
        // A branch whose state writes the condition itself.
        let rewrites = Region::new(vec![branch(vec![state("reset", Some(("x", "c")))], None)]);
        assert!(!safe_after_branch(&rewrites, &[0]));
        // The end of the body ends the kernel: nothing writes after it.
        let last = Region::new(vec![
            state("compute", Some(("flags", "c"))),
            branch(vec![state("work", Some(("x", "y")))], None),
        ]);
        assert!(safe_after_branch(&last, &[1]));
        // A `break` leaves the loop for a state writing the condition; a
        // `continue` goes back to the top, where a state reads only.
        let broken = Region::new(vec![
            looped(vec![
                state("compute", Some(("flags", "c"))),
                branch(vec![ControlBlock::new("break", BlockKind::Break)], None),
                state("work", Some(("x", "y"))),
            ]),
            state("after", Some(("x", "c"))),
        ]);
        assert!(!safe_after_branch(&broken, &[0, 1]));
        let continued = Region::new(vec![looped(vec![
            state("read", Some(("c", "y"))),
            state("compute", Some(("flags", "c"))),
            branch(
                vec![ControlBlock::new("continue", BlockKind::Continue)],
                None,
            ),
            state("work", Some(("x", "y"))),
        ])]);
        assert!(safe_after_branch(&continued, &[0, 2]));
    }
}
