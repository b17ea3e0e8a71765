//! Loop-to-map: a `for` loop whose iterations are independent becomes a
//! map, so the offload pass can make it one kernel instead of a host loop
//! launching the body's kernels once per iteration.
//!
//! The loop `for p in range(b, e, s): BODY` becomes one state holding a map
//! over `p` in `b:e:s` whose scope is a nested SDFG running `BODY` (DaCe's
//! `LoopToMap` does the same). The nested SDFG's containers carry the
//! outer names and descriptors, its symbols the outer names (mapped to
//! themselves), so the body moves unchanged; on a device every thread runs
//! it for its own `p` (the offload pass makes a nested SDFG inside a kernel
//! code of each thread).
//!
//! A body that is one state of tasklets and maps on the outer containers
//! (one statement, or several that pass nothing through an intermediate
//! access node), with nothing private and no symbol of its own, is
//! inlined instead (`nest::inline_in_map`, DaCe's `InlineSDFG`):
//! the map's scope holds the body's nodes, with memlets at the elements
//! each point touches, as the frontend builds an array statement. Map
//! fusion, which the pipeline runs again after this pass, can then fuse it
//! with its neighbours: `k` loop nests updating one array in place are one
//! kernel, not `k`.
//!
//! A loop is converted when (each refusal is reported with its reason):
//!
//! - it is a counted loop: a variable, an initial value, an update
//!   `p + s` with a constant non-zero `s`, and a condition `p < e`,
//!   `p <= e`, `p > e` or `p >= e` (direction matching the step) whose bound
//!   and initial value read no data and nothing the body assigns;
//! - the body leaves only through its end: no `break` or `continue` of this
//!   loop, no `return`, and no host callbacks;
//! - the loop variable and every symbol the body assigns are not used after
//!   the loop (Python would see their last values);
//! - every container the body writes is either *private* to an iteration,
//!   or written at elements no other iteration touches (the dependence
//!   test of [`crate::dependence`]). A private container is a transient used
//!   nowhere else, whose first access in each iteration is a state that
//!   writes all of it without reading it (a scalar computed and used within
//!   the iteration: spmv's row bounds, a dot product's result); it moves
//!   into the nested SDFG. It must be small, of a constant size (each
//!   thread holds its own: [`crate::nest::MAX_PRIVATE_ELEMENTS`]); views
//!   used only inside move with it. A
//!   container only ever updated with one write-conflict resolution is
//!   fine too: the updates commute (they become atomic on a device).
//!
//! A perfect nest of such loops (a loop whose body is one loop, with bounds
//! independent of the outer variables) becomes one map over all their
//! variables when the test holds for all of them together; otherwise the
//! outer loop is tried alone, and when it stays a loop its body is tried
//! loop by loop. The pass repeats until nothing changes, so running it
//! again changes nothing.

use crate::accumulators::privatized;
use crate::dependence::{Access, RegionUse, conflict};
use crate::nest::{
    MAX_PRIVATE_ELEMENTS, Nesting, inline_in_map, mapped_symbols, nest_in_map, privatizable,
    rewrite_loops,
};
use sdfg_ir::symbolic::{CmpOp, CondView};
use sdfg_ir::{BlockKind, ControlBlock, LoopBlock, Range, Region, Sdfg, Subset, SymExpr};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// What the pass did to each `for` loop.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoopReport {
    /// Loops that became maps: label and the map's parameters.
    pub converted: Vec<(String, Vec<String>)>,
    /// Loops kept: label and why.
    pub kept: Vec<(String, String)>,
}

impl fmt::Display for LoopReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "loop-to-map report")?;
        for (l, params) in &self.converted {
            writeln!(f, "  map: loop `{l}` over {}", params.join(", "))?;
        }
        for (l, why) in &self.kept {
            writeln!(f, "  kept: loop `{l}`: {why}")?;
        }
        Ok(())
    }
}

/// Converts every loop of `sdfg` it can prove parallel (see the [module
/// docs](self)); returns what it did. The SDFG stays valid.
pub fn loop_to_map(sdfg: &mut Sdfg) -> LoopReport {
    let mut report = LoopReport::default();
    loop {
        let mut round = LoopReport::default();
        let symbols: BTreeSet<String> = sdfg.symbols.keys().cloned().collect();
        let whole = RegionUse::of(&sdfg.body, &symbols);
        // Symbols the containers' shapes and layouts name are used outside
        // every loop, like those the program names outside it.
        let in_descriptors: BTreeSet<String> = sdfg
            .containers
            .values()
            .flat_map(|d| d.free_symbols())
            .collect();
        let mut body = std::mem::take(&mut sdfg.body);
        let mut cx = Cx {
            sdfg,
            whole: &whole,
            in_descriptors: &in_descriptors,
            symbols: &symbols,
            report: &mut round,
        };
        rewrite_loops(&mut body, &mut |block| cx.convert(block));
        sdfg.body = body;
        // Another round can only convert a loop this one kept (one whose
        // inner loops became maps): with none kept, the pass is done.
        let again = !round.converted.is_empty() && !round.kept.is_empty();
        report.converted.extend(round.converted);
        // A loop's first reason is the telling one (later rounds see the
        // maps made inside it, with their whole-container memlets).
        for (label, why) in round.kept {
            if !report.kept.iter().any(|(l, _)| *l == label) {
                report.kept.push((label, why));
            }
        }
        if !again {
            break;
        }
    }
    let converted: BTreeSet<&String> = report.converted.iter().map(|(l, _)| l).collect();
    let kept = std::mem::take(&mut report.kept);
    report.kept = kept
        .into_iter()
        .filter(|(l, _)| !converted.contains(l))
        .collect();
    report.kept.sort();
    report
}

struct Cx<'a> {
    sdfg: &'a mut Sdfg,
    whole: &'a RegionUse,
    in_descriptors: &'a BTreeSet<String>,
    symbols: &'a BTreeSet<String>,
    report: &'a mut LoopReport,
}

/// A counted loop: variable, and the map range of its iterations.
struct Counted {
    variable: String,
    range: Range,
}

impl Cx<'_> {
    /// Converts `block` (a loop) if it can; returns whether it did.
    fn convert(&mut self, block: &mut ControlBlock) -> bool {
        let BlockKind::Loop(l) = &block.kind else {
            return false;
        };
        // A loop kept only for the accumulators it carries converts with
        // them private to each iteration (`crate::accumulators`).
        let plan = self.plan(&block.label, l).or_else(|why| {
            let Some((rewritten, declared)) = privatized(self.sdfg, &block.label, l) else {
                return Err(why);
            };
            for (x, desc) in &declared {
                self.sdfg.containers.insert(x.clone(), desc.clone());
            }
            match self.plan(&block.label, &rewritten) {
                Ok(plan) => Ok(plan),
                Err(_) => {
                    for (x, _) in &declared {
                        self.sdfg.containers.remove(x);
                    }
                    Err(why)
                }
            }
        });
        match plan {
            Ok(plan) => {
                self.report
                    .converted
                    .push((block.label.clone(), plan.params.clone()));
                let state = inline_in_map(self.sdfg, &block.label, plan)
                    .unwrap_or_else(|plan| nest_in_map(self.sdfg, &block.label, *plan));
                block.kind = BlockKind::State(state);
                true
            }
            Err(why) => {
                self.report.kept.push((block.label.clone(), why));
                false
            }
        }
    }

    /// The conversion of loop `l`: the deepest perfect nest that passes,
    /// else the loop alone, else why not.
    fn plan(&self, label: &str, l: &LoopBlock) -> Result<Nesting, String> {
        let first = counted(l)?;
        let mut nest = vec![(first, l)];
        // The perfect nest below: one loop as the whole body, its bounds
        // free of the outer variables.
        while let Some(inner) = perfect_inner(nest.last().map(|(_, l)| *l)) {
            let Ok(c) = counted(inner) else { break };
            let outer: BTreeSet<String> = nest.iter().map(|(c, _)| c.variable.clone()).collect();
            if !c.range.free_symbols().is_disjoint(&outer) {
                break;
            }
            nest.push((c, inner));
        }
        // Deepest first; the reason reported is the loop's own (depth 1).
        let mut why_not = String::new();
        for depth in (1..=nest.len()).rev() {
            match self.check(label, &nest[..depth]) {
                Ok(plan) => return Ok(plan),
                Err(why) => why_not = why,
            }
        }
        Err(why_not)
    }

    /// Checks the nest `loops` (outermost first) for conversion into one map.
    fn check(&self, label: &str, loops: &[(Counted, &LoopBlock)]) -> Result<Nesting, String> {
        let (_, innermost) = loops.last().ok_or_else(String::new)?;
        let body = &innermost.body;
        let params: Vec<String> = loops.iter().map(|(c, _)| c.variable.clone()).collect();
        let ranges: Vec<Range> = loops.iter().map(|(c, _)| c.range.clone()).collect();
        let outermost = loops[0].1;
        let here = RegionUse::of_loop(outermost, label, self.symbols);
        let inside = RegionUse::of(body, self.symbols);
        if let Some(j) = inside.jumps.first() {
            return Err(format!("its body has a `{j}` that leaves the loop"));
        }
        if let Some(c) = inside.callbacks.first() {
            return Err(format!("its body calls host code (`{c}`)"));
        }
        for p in &params {
            if inside.assigned.contains(p) {
                return Err(format!("its body assigns the loop variable `{p}`"));
            }
        }
        for (c, l) in loops {
            let header = [&l.init, &l.update]
                .into_iter()
                .flatten()
                .any(|e| !e.reads().is_empty())
                || !l.condition.reads().is_empty();
            if header {
                return Err(format!("the bounds of loop `{}` read data", c.variable));
            }
            if let Some(s) = c.range.free_symbols().intersection(&inside.assigned).next() {
                return Err(format!("its bounds use `{s}`, which the body assigns"));
            }
        }
        for s in params.iter().chain(&inside.assigned) {
            if self.whole.symbol_outside(&here, s) {
                return Err(format!(
                    "`{s}` is used after the loop (it would need the last iteration's value)"
                ));
            }
        }
        // Containers: private to an iteration, or passing the dependence test.
        let mut by_data: BTreeMap<&str, Vec<&Access>> = BTreeMap::new();
        for a in &inside.accesses {
            by_data.entry(a.data.as_str()).or_default().push(a);
        }
        let varying = inside.varying();
        let first = FirstTouch::of(body, self.symbols);
        let mut private = BTreeSet::new();
        let (mut inputs, mut outputs) = (BTreeSet::new(), BTreeSet::new());
        for (x, accesses) in &by_data {
            let desc = self
                .sdfg
                .containers
                .get(*x)
                .ok_or_else(|| format!("it uses `{x}`, which is not declared"))?;
            let written = accesses.iter().any(|a| a.write);
            let local = desc.transient && !self.whole.container_outside(&here, x);
            if desc.is_view() && local {
                // Bound afresh by its view edge in each iteration.
                private.insert((*x).to_owned());
                continue;
            }
            if written && local && first.writes_all_first(x, desc) {
                if !privatizable(desc) {
                    return Err(format!(
                        "`{x}`, private to each iteration, has {} elements, not a constant of \
                         at most {MAX_PRIVATE_ELEMENTS}: each iteration would allocate it",
                        desc.total_elements()
                            .map(|n| n.to_string())
                            .unwrap_or_default()
                    ));
                }
                private.insert((*x).to_owned());
                continue;
            }
            if written {
                if let Some(why) = conflict(x, accesses, &params, &ranges, &varying) {
                    return Err(why);
                }
                outputs.insert((*x).to_owned());
            }
            if accesses.iter().any(|a| !a.write) || written {
                inputs.insert((*x).to_owned());
            }
        }
        let mut mapped = mapped_symbols(
            self.sdfg,
            &inside,
            inputs.iter().chain(&outputs).chain(&private),
        );
        mapped.extend(params.iter().cloned());
        let named_outside = params
            .iter()
            .chain(&inside.assigned)
            .filter(|s| self.whole.named_outside(&here, s) || self.in_descriptors.contains(*s))
            .cloned()
            .collect();
        Ok(Nesting {
            named_outside,
            params,
            ranges,
            body: body.clone(),
            private,
            inputs,
            outputs,
            mapped,
            assigned: inside.assigned.clone(),
        })
    }
}

/// The loop that is the whole body of `l`, if any (no transitions around it).
fn perfect_inner(l: Option<&LoopBlock>) -> Option<&LoopBlock> {
    let l = l?;
    match l.body.blocks.as_slice() {
        [b] if b.transition.is_empty() => match &b.kind {
            BlockKind::Loop(inner) => Some(inner),
            _ => None,
        },
        _ => None,
    }
}

/// The variable and iteration range of a counted loop, or why it is not one.
fn counted(l: &LoopBlock) -> Result<Counted, String> {
    let (Some(v), Some(init), Some(update)) = (&l.variable, &l.init, &l.update) else {
        return Err("it is not a counted `for` loop".to_owned());
    };
    let step = update
        .linear_in(v)
        .filter(|(c, _)| c.as_int() == Some(1))
        .and_then(|(_, s)| s.as_int())
        .filter(|s| *s != 0)
        .ok_or_else(|| format!("its update `{v} = {update}` is not a constant step"))?;
    let not_bound = || format!("its condition `{}` is not a bound on `{v}`", l.condition);
    let CondView::Cmp(e, op) = l.condition.view() else {
        return Err(not_bound());
    };
    let (coeff, rest) = e.linear_in(v).ok_or_else(not_bound)?;
    let end = match (coeff.as_int(), op) {
        // v + rest < 0, v + rest <= 0
        (Some(1), CmpOp::Lt) if step > 0 => -rest - 1,
        (Some(1), CmpOp::Le) if step > 0 => -rest,
        // -v + rest < 0 (v > rest), -v + rest <= 0 (v >= rest)
        (Some(-1), CmpOp::Lt) if step < 0 => rest + 1,
        (Some(-1), CmpOp::Le) if step < 0 => rest,
        _ => return Err(not_bound()),
    };
    if init.has_symbol(v) || end.has_symbol(v) {
        return Err(not_bound());
    }
    Ok(Counted {
        variable: v.clone(),
        range: Range {
            begin: init.clone(),
            end,
            step: SymExpr::int(step),
        },
    })
}

/// Per container, the accesses of the first top-level block of a body that
/// touches it, and whether that block is a state: one walk over the body,
/// so checking every candidate for privacy stays linear in its size.
struct FirstTouch {
    first: BTreeMap<String, (bool, Vec<Access>)>,
}

impl FirstTouch {
    fn of(body: &Region, symbols: &BTreeSet<String>) -> FirstTouch {
        let mut first: BTreeMap<String, (bool, Vec<Access>)> = BTreeMap::new();
        for block in &body.blocks {
            let is_state = matches!(block.kind, BlockKind::State(_));
            let u = RegionUse::of_block(block, symbols);
            let mut here: BTreeMap<String, Vec<Access>> = BTreeMap::new();
            for a in u.accesses {
                if !first.contains_key(&a.data) {
                    here.entry(a.data.clone()).or_default().push(a);
                }
            }
            for (x, accesses) in here {
                first.insert(x, (is_state, accesses));
            }
        }
        FirstTouch { first }
    }

    /// Whether the first block touching `x` is a state that writes all of
    /// `x` (plain values, not dynamic) and does not read its old value
    /// (reads on its own transition come after the state, and reads of an
    /// access node the state writes first see the new value).
    fn writes_all_first(&self, x: &str, desc: &sdfg_ir::DataDesc) -> bool {
        let Some((true, accesses)) = self.first.get(x) else {
            return false;
        };
        let whole = Subset::full(&desc.shape());
        let (mut reads, mut writes_all) = (false, false);
        for a in accesses.iter().filter(|a| !a.interstate) {
            reads |= !a.write && !a.after_write;
            writes_all |= a.write
                && a.wcr.is_none()
                && !a.dynamic
                && a.subset.as_ref().is_some_and(|s| covers(s, &whole, desc));
        }
        writes_all && !reads
    }
}

/// Whether `s` is all of a container with full subset `whole` (a scalar's
/// single element, `0`, included).
fn covers(s: &Subset, whole: &Subset, desc: &sdfg_ir::DataDesc) -> bool {
    if s == whole {
        return true;
    }
    let one = desc.total_elements().and_then(|n| n.as_int()) == Some(1);
    one && s
        .ranges
        .iter()
        .all(|r| r.is_index() && r.begin.as_int() == Some(0))
}
