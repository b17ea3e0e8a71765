//! Nested SDFGs inside kernels: code of each thread.
//!
//! The offload pass makes an SDFG nested in a kernel (loop-to-map's loop
//! bodies, for one) the thread's own program: its maps are sequential, its
//! transients registers, its interstate code device code. The emitter
//! prints it inline, in a block of the kernel body:
//!
//! - each connector becomes a pointer to the first element of the outer
//!   memlet's subset (computed before the block opens, so an inner name may
//!   shadow an outer one); the inner descriptor's strides must be the outer
//!   subset's, as DaCe's nested SDFGs have them;
//! - each mapped symbol becomes a constant of the block (a symbol mapped to
//!   itself is simply visible), each symbol the inner SDFG assigns a local
//!   variable;
//! - each transient a register array of constant size;
//! - the control flow as C++ statements (`for`, `if`, `break`,
//!   `continue`), states in topological order with tasklets inline, maps as
//!   loops and copies element by element, as inside any kernel scope.
//!
//! The inner SDFG is printed by an emitter of its own (its names, its
//! layouts); the symbols it uses are translated back through the mapping,
//! so the kernel takes the outer symbols it needs as parameters.

use super::persistent::{Position, READ_BARRIER, barrier_precedes_writes};
use super::{Ctx, Emitter, for_header, for_parts, unsupported};
use crate::EmitError;
use crate::cpp::{ctype, ident};
use sdfg_ir::{BlockKind, NestedSdfg, NodeId, Region, State, Storage, SymExpr};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// The element offset of an inner container's layout, in outer symbols:
/// the connector's pointer is moved back by it, since every inner access
/// adds it again.
fn inner_offset_of(desc: &sdfg_ir::DataDesc, n: &NestedSdfg) -> SymExpr {
    desc.layout()
        .map(|l| l.offset.subs(&n.symbol_mapping))
        .unwrap_or_else(|| SymExpr::int(0))
}

impl Emitter<'_> {
    /// The nested SDFG `n` (node `id` of `state`, inside a kernel) inline;
    /// returns the outer symbols it uses. `grid`: it is a persistent
    /// kernel's body, which every thread of the grid runs together
    /// (`emit/persistent.rs`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn nested_in_kernel(
        &self,
        label: &str,
        state: &State,
        id: NodeId,
        n: &NestedSdfg,
        grid: bool,
        indent: usize,
        out: &mut String,
    ) -> Result<BTreeSet<String>, EmitError> {
        let pad = "  ".repeat(indent);
        let inner_pad = "  ".repeat(indent + 1);
        let inner_sdfg = &*n.sdfg;
        let mut used = BTreeSet::new();
        let refuse = |what: String| unsupported(what, &n.label, label);
        let _ = writeln!(out, "{pad}{{  // nested SDFG {}", n.label);
        let mut head = String::new();
        let mut binds = String::new();
        // Connectors: a pointer to the subset's first element.
        let mut bound: BTreeMap<String, String> = BTreeMap::new();
        let edges = state
            .in_edges(id)
            .filter_map(|(_, _, e)| Some((e.dst_conn.clone()?, e.memlet.clone()?)))
            .chain(
                state
                    .out_edges(id)
                    .filter_map(|(_, _, e)| Some((e.src_conn.clone()?, e.memlet.clone()?))),
            );
        for (conn, m) in edges {
            let desc = inner_sdfg.containers.get(&conn).ok_or_else(|| {
                refuse(format!(
                    "a connector `{conn}` the nested SDFG does not declare"
                ))
            })?;
            // The first element, as one canonical expression (`0` for a
            // whole container).
            let first = self
                .desc(&m.data)
                .and_then(|d| d.layout())
                .map(|l| {
                    l.strides
                        .iter()
                        .zip(&m.subset.ranges)
                        .fold(l.offset.clone(), |acc, (s, r)| acc + s * &r.begin)
                })
                .unwrap_or_else(|| SymExpr::int(0));
            let offset = {
                let mut p = self.sym();
                let o = p.expr(&(first - &inner_offset_of(desc, n)));
                used.extend(p.used);
                o
            };
            let outer_strides: Vec<SymExpr> = self
                .subset_extents(&m.data, &m.subset)
                .into_iter()
                .map(|(_, s)| s)
                .collect();
            let all_strides: Vec<SymExpr> = self
                .desc(&m.data)
                .and_then(|d| d.layout())
                .map(|l| {
                    l.strides
                        .iter()
                        .zip(&m.subset.ranges)
                        .map(|(s, r)| s * &r.step)
                        .collect()
                })
                .unwrap_or_default();
            let inner_strides: Vec<SymExpr> = desc
                .layout()
                .map(|l| {
                    l.strides
                        .iter()
                        .map(|s| s.subs(&n.symbol_mapping))
                        .collect()
                })
                .unwrap_or_default();
            let scalar_like = inner_strides.is_empty()
                || desc.total_elements().and_then(|c| c.as_int()) == Some(1);
            if !scalar_like && inner_strides != outer_strides && inner_strides != all_strides {
                return Err(refuse(format!(
                    "connector `{conn}` with strides ({}) other than those of `{}[{}]`",
                    inner_strides
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                    m.data,
                    m.subset
                )));
            }
            if bound.contains_key(&conn) {
                continue;
            }
            let k = bound.len();
            let temp = format!("sdfg_nb{k}");
            let t = ctype(desc.dtype);
            let _ = writeln!(
                head,
                "{inner_pad}{t}* const {temp} = {} + {offset};",
                ident(&m.data)
            );
            let _ = writeln!(binds, "{inner_pad}  {t}* const {} = {temp};", ident(&conn));
            bound.insert(conn, temp);
        }
        // Symbols: mapped ones are constants, assigned ones variables.
        for (k, (s, e)) in n.symbol_mapping.iter().enumerate() {
            let mut p = self.sym();
            let value = p.expr(e);
            used.extend(p.used);
            if e.is_symbol() == Some(s.as_str()) {
                continue;
            }
            let t = ctype(
                inner_sdfg
                    .symbols
                    .get(s)
                    .copied()
                    .unwrap_or(sdfg_ir::DType::Int64),
            );
            let _ = writeln!(head, "{inner_pad}const {t} sdfg_ns{k} = {value};");
            let _ = writeln!(binds, "{inner_pad}  const {t} {} = sdfg_ns{k};", ident(s));
        }
        for (s, t) in &inner_sdfg.symbols {
            if !n.symbol_mapping.contains_key(s) {
                let _ = writeln!(binds, "{inner_pad}  {} {} = 0;", ctype(*t), ident(s));
            }
        }
        // Transients: the thread's registers.
        for (x, d) in &inner_sdfg.containers {
            if !d.transient || d.is_view() {
                continue;
            }
            if d.storage != Storage::Register {
                return Err(refuse(format!(
                    "the transient `{x}` in {} storage (inside a kernel it must be a register)",
                    d.storage
                )));
            }
            let count = d.total_elements().and_then(|c| c.as_int()).ok_or_else(|| {
                refuse(format!(
                    "the transient `{x}` with a size not known at compile time"
                ))
            })?;
            let _ = writeln!(
                binds,
                "{inner_pad}  {t} {n}_s[{c}];\n{inner_pad}  {t}* {n} = {n}_s;",
                t = ctype(d.dtype),
                n = ident(x),
                c = count.max(1)
            );
        }
        out.push_str(&head);
        let _ = writeln!(out, "{inner_pad}{{");
        out.push_str(&binds);
        let inner = Emitter::new(inner_sdfg, self.d);
        let mut inner_used = BTreeSet::new();
        let ctx = if grid { Ctx::Grid } else { Ctx::Device };
        inner.thread_region(
            &inner_sdfg.body,
            &Vec::new(),
            ctx,
            indent + 2,
            out,
            &mut inner_used,
        )?;
        let _ = writeln!(out, "{inner_pad}}}\n{pad}}}");
        used.extend(
            inner_used
                .into_iter()
                .filter(|s| !inner_sdfg.symbols.contains_key(s)),
        );
        Ok(used)
    }

    /// A region of an SDFG nested in a kernel, as statements of the thread
    /// (`ctx` [`Ctx::Device`]), or of every thread of a persistent kernel's
    /// grid ([`Ctx::Grid`]: each state ends at a grid-wide barrier, so that
    /// the tests and assignments after it read what it wrote, and a test or
    /// assignment reading memory that could be written again before the
    /// next barrier is followed by one of its own,
    /// [`barrier_precedes_writes`]). `outer`: the positions of the
    /// compound blocks around `region`, outermost first.
    fn thread_region<'r>(
        &self,
        region: &'r Region,
        outer: &Position<'r>,
        ctx: Ctx,
        indent: usize,
        out: &mut String,
        used: &mut BTreeSet<String>,
    ) -> Result<(), EmitError> {
        let pad = "  ".repeat(indent);
        let grid = ctx == Ctx::Grid;
        // The positions after a read at `index` from which to look for a
        // barrier: the blocks `next` enters (given relative to the block).
        let here = |index: usize| {
            let mut at = outer.clone();
            at.push((region, index));
            at
        };
        let inside = |index: usize, r: &'r Region| {
            let mut at = here(index);
            at.push((r, 0));
            at
        };
        // Whether what a read at block `index` reads needs a barrier after
        // it before the code in `next` runs.
        let guard = |read: BTreeSet<String>, next: Vec<Position<'r>>| {
            grid && !read.is_empty() && !barrier_precedes_writes(next, &read)
        };
        for (index, block) in region.blocks.iter().enumerate() {
            let label = &block.label;
            let _ = writeln!(out, "{pad}// {label}");
            match &block.kind {
                BlockKind::State(state) => {
                    let tree = state
                        .scope_tree()
                        .map_err(|e| EmitError::Invalid(format!("state `{label}`: {e}")))?;
                    let _ = writeln!(out, "{pad}{{");
                    // `scope_body` needs `&mut self` for kernels and vendor
                    // calls, which a thread never has: a scratch emitter.
                    let mut scratch = Emitter::new(self.sdfg, self.d);
                    used.extend(scratch.scope_body(
                        label,
                        state,
                        &tree,
                        None,
                        ctx,
                        indent + 1,
                        out,
                    )?);
                    if grid {
                        let _ = writeln!(out, "{pad}  SDFG_GRID_SYNC();");
                    }
                    let _ = writeln!(out, "{pad}}}");
                }
                BlockKind::Loop(l) => {
                    let mut p = self.sym();
                    let mut read = l.condition.reads();
                    for e in [&l.init, &l.update].into_iter().flatten() {
                        read.extend(e.reads());
                    }
                    if guard(read, vec![inside(index, &l.body), here(index + 1)]) {
                        // The test into a local, a barrier, then the
                        // decision (the init and the update read before
                        // the test, so the barrier covers them too).
                        let (init, cond, update) = for_parts(&mut p, l);
                        let _ = writeln!(
                            out,
                            "{pad}for ({init}; ; {update}) {{\n{pad}  const bool sdfg_go = {cond};\n{pad}  {READ_BARRIER}\n{pad}  if (!sdfg_go) break;"
                        );
                    } else {
                        let _ = writeln!(out, "{pad}{}", for_header(&mut p, l));
                    }
                    used.extend(p.used);
                    let mut at = outer.clone();
                    at.push((region, index));
                    self.thread_region(&l.body, &at, ctx, indent + 1, out, used)?;
                    let _ = writeln!(out, "{pad}}}");
                }
                BlockKind::Conditional(c) => {
                    let read: BTreeSet<String> = c
                        .branches
                        .iter()
                        .flat_map(|(cond, _)| cond.reads())
                        .collect();
                    let mut next: Vec<Position<'r>> = c
                        .branches
                        .iter()
                        .map(|(_, r)| r)
                        .chain(&c.otherwise)
                        .map(|r| inside(index, r))
                        .collect();
                    if c.otherwise.is_none() {
                        next.push(here(index + 1));
                    }
                    let mut at = outer.clone();
                    at.push((region, index));
                    if guard(read, next) {
                        // Which branch, decided into a local as the
                        // conditions are tested (in order: a later one may
                        // only be valid where the earlier ones fail), a
                        // barrier, then the branch.
                        let taken = format!("sdfg_branch{indent}");
                        let _ =
                            writeln!(out, "{pad}{{\n{pad}  int {taken} = {};", c.branches.len());
                        for (k, (cond, _)) in c.branches.iter().enumerate() {
                            let mut p = self.sym();
                            let cond = p.cond(cond);
                            used.extend(p.used);
                            let kw = if k == 0 { "if" } else { "else if" };
                            let _ = writeln!(out, "{pad}  {kw} ({cond}) {taken} = {k};");
                        }
                        let _ = writeln!(out, "{pad}  {READ_BARRIER}");
                        for (k, (_, r)) in c.branches.iter().enumerate() {
                            let kw = if k == 0 { "if" } else { "} else if" };
                            let _ = writeln!(out, "{pad}  {kw} ({taken} == {k}) {{");
                            self.thread_region(r, &at, ctx, indent + 2, out, used)?;
                        }
                        if let Some(r) = &c.otherwise {
                            let _ = writeln!(out, "{pad}  }} else {{");
                            self.thread_region(r, &at, ctx, indent + 2, out, used)?;
                        }
                        let _ = writeln!(out, "{pad}  }}\n{pad}}}");
                    } else {
                        for (k, (cond, r)) in c.branches.iter().enumerate() {
                            let mut p = self.sym();
                            let cond = p.cond(cond);
                            used.extend(p.used);
                            let kw = if k == 0 { "if" } else { "} else if" };
                            let _ = writeln!(out, "{pad}{kw} ({cond}) {{");
                            self.thread_region(r, &at, ctx, indent + 1, out, used)?;
                        }
                        if let Some(r) = &c.otherwise {
                            let _ = writeln!(out, "{pad}}} else {{");
                            self.thread_region(r, &at, ctx, indent + 1, out, used)?;
                        }
                        let _ = writeln!(out, "{pad}}}");
                    }
                }
                BlockKind::Break => {
                    let _ = writeln!(out, "{pad}break;");
                }
                BlockKind::Continue => {
                    let _ = writeln!(out, "{pad}continue;");
                }
                BlockKind::Return => {
                    return Err(unsupported(
                        "a `return` inside an SDFG nested in a kernel",
                        label,
                        label,
                    ));
                }
            }
            for a in &block.transition.assignments {
                let mut p = self.sym();
                let v = p.expr(&a.value);
                used.extend(p.used);
                let _ = writeln!(out, "{pad}{} = {v};", ident(&a.symbol));
            }
            if guard(block.transition.reads(), vec![here(index + 1)]) {
                let _ = writeln!(out, "{pad}{READ_BARRIER}");
            }
        }
        Ok(())
    }
}
