//! SDFGs nested at host level become part of the SDFG that calls them, as
//! DaCe's `InlineSDFG` and `InlineMultistateSDFG` make them.
//!
//! DaCe's Fortran frontend writes every called subroutine as a nested SDFG
//! at host level, and gt4py.next nests its fields' programs so; DaCe's own
//! pipeline inlines them during `simplify` before it offloads anything.
//! Inlined, their loops, maps and host code are the caller's: loop-to-map,
//! fusion and the offload pass see through the call, and the emitter has
//! one host program to write. A nested SDFG inside a map stays nested: it
//! is code each point of the map runs, which the emitter writes per
//! thread.
//!
//! The state holding the call splits in two around it: the nodes the call
//! depends on (and those independent of it) run before the callee's
//! blocks, the nodes that depend on it after; an access node feeding both
//! sides appears in both. The callee's blocks go between them, rewritten
//! into the caller's names:
//!
//! - a connector becomes the caller's container it is bound to, its
//!   indices composed with the window the memlet binds (the rule by which
//!   the simulator binds a nested SDFG's connectors: the window's start
//!   plus the index times the window's step, on the window's dimensions
//!   that are not single indices where the ranks say so);
//! - a transient becomes the caller's, renamed where the name is taken;
//! - a symbol mapped to one of the caller's symbols becomes it; any other
//!   symbol (mapped to an expression, or assigned inside the callee)
//!   becomes a symbol of the caller, assigned its mapped value on the
//!   transition into the callee, as the binding evaluates it once per call;
//! - map parameters and block labels are renamed where the caller's names
//!   would clash with them.
//!
//! A call stays nested (and the report says why) where inlining would
//! need what this does not do: a `return` inside the callee before its
//! end, a connector bound through a write-conflict resolution, one bound
//! to two different containers or windows, a window whose rank fits
//! neither rule, a view that reshapes, or an edge that would cross the
//! split from a node other than an access node. Interstate code reading a
//! connector reads the caller's container through the window.

use sdfg_ir::code::Stmt;
use sdfg_ir::window::{Dim, Window};
use sdfg_ir::{
    Assignment, BlockKind, ControlBlock, DType, DataDesc, Lifetime, Memlet, Node, NodeId, Range,
    Region, State, Subset, SymCond, SymExpr,
};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// What inlining did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InlineReport {
    /// The nested SDFGs inlined, by label, in the order they were.
    pub inlined: Vec<String>,
    /// The nested SDFGs at host level kept nested, with why
    /// (`` `label`: reason ``), each once.
    pub kept: Vec<String>,
}

/// Inlines every SDFG nested at host level in `sdfg` (and those nested in
/// them, which become host level in turn) that can be; reports which were
/// and which stay nested.
pub fn inline_nested_sdfgs(sdfg: &mut sdfg_ir::Sdfg) -> InlineReport {
    let mut report = InlineReport::default();
    if !has_host_nested(&sdfg.body) {
        return report;
    }
    let mut names = Names::of(sdfg);
    let sdfg_ir::Sdfg {
        symbols,
        containers,
        body,
        ..
    } = sdfg;
    let mut kept = BTreeSet::new();
    body.for_each_region_mut(&mut |region| {
        let mut i = 0;
        while i < region.blocks.len() {
            let BlockKind::State(state) = &region.blocks[i].kind else {
                i += 1;
                continue;
            };
            let mut chosen = None;
            for node in host_nested(state) {
                let mut trial = names.clone();
                match inline_call(state, node, &mut trial, symbols, containers) {
                    Ok(call) => {
                        names = trial;
                        chosen = Some(call);
                        break;
                    }
                    Err(why) => {
                        let line = format!("`{}`: {why}", state.graph[node].label());
                        if kept.insert(line.clone()) {
                            report.kept.push(line);
                        }
                    }
                }
            }
            let Some(call) = chosen else {
                i += 1;
                continue;
            };
            report.inlined.push(call.label.clone());
            let block = region.blocks.remove(i);
            let blocks = call.splice(block, &mut names, symbols, containers);
            region.blocks.splice(i..i, blocks);
        }
    });
    report
}

/// Whether a state anywhere in `region` holds a nested SDFG outside every
/// map: the pass's fast exit on programs without one.
fn has_host_nested(region: &Region) -> bool {
    let mut found = false;
    for b in &region.blocks {
        b.walk(&mut |b| {
            if let BlockKind::State(s) = &b.kind {
                found |= !host_nested(s).is_empty();
            }
        });
    }
    found
}

/// The nested SDFG nodes of `state` outside every map, in id order.
fn host_nested(state: &State) -> Vec<NodeId> {
    let nested: Vec<NodeId> = state
        .nodes()
        .filter(|(_, n)| matches!(n, Node::NestedSdfg(_)))
        .map(|(id, _)| id)
        .collect();
    if nested.is_empty() {
        return nested;
    }
    let Ok(tree) = state.scope_tree() else {
        return Vec::new();
    };
    nested
        .into_iter()
        .filter(|&n| tree.parent(n).is_none())
        .collect()
}

/// The names taken in the calling SDFG: symbols, containers, map
/// parameters (a map parameter may not shadow a symbol), and block labels
/// (unique within an SDFG), with fresh ones made from them.
#[derive(Clone, Debug, Default)]
struct Names {
    taken: BTreeSet<String>,
    labels: BTreeSet<String>,
}

impl Names {
    fn of(sdfg: &sdfg_ir::Sdfg) -> Names {
        let mut names = Names::default();
        names.taken.extend(sdfg.symbols.keys().cloned());
        names.taken.extend(sdfg.containers.keys().cloned());
        names.take_region(&sdfg.body);
        names
    }

    /// Takes the labels and map parameters of `region`'s blocks.
    fn take_region(&mut self, region: &Region) {
        for b in &region.blocks {
            b.walk(&mut |b| {
                self.labels.insert(b.label.clone());
                if let BlockKind::State(s) = &b.kind {
                    for (_, n) in s.nodes() {
                        if let Node::MapEntry(e) = n {
                            self.taken.extend(e.map.params.iter().cloned());
                        }
                    }
                }
            });
        }
    }

    /// `base` if no name is, else `base_1`, `base_2`, ...: now taken.
    fn fresh(set: &mut BTreeSet<String>, base: &str) -> String {
        let mut name = base.to_owned();
        let mut k = 0;
        while set.contains(&name) {
            k += 1;
            name = format!("{base}_{k}");
        }
        set.insert(name.clone());
        name
    }

    fn name(&mut self, base: &str) -> String {
        Self::fresh(&mut self.taken, base)
    }

    fn label(&mut self, base: &str) -> String {
        Self::fresh(&mut self.labels, base)
    }
}

/// One call, rewritten into the caller's names and ready to replace its
/// state.
struct Call {
    label: String,
    /// The state's nodes that run before the callee's blocks.
    before: State,
    /// The symbols bound on entry.
    assignments: Vec<Assignment>,
    /// The callee's blocks.
    blocks: Vec<ControlBlock>,
    /// The state's nodes that run after.
    after: State,
    /// Symbols and containers the caller gains.
    symbols: BTreeMap<String, DType>,
    containers: BTreeMap<String, DataDesc>,
    /// The caller's containers the call binds.
    bound: BTreeSet<String>,
}

impl Call {
    /// The blocks replacing `block`, the caller's state that held the call;
    /// declares what the callee brings.
    fn splice(
        self,
        block: ControlBlock,
        names: &mut Names,
        symbols: &mut BTreeMap<String, DType>,
        containers: &mut BTreeMap<String, DataDesc>,
    ) -> Vec<ControlBlock> {
        symbols.extend(self.symbols);
        containers.extend(self.containers);
        // A container of one execution of the state now lives across the
        // callee's blocks.
        let mut spanning = self.bound;
        let before: BTreeSet<&str> = self.before.accessed_containers().into_iter().collect();
        spanning.extend(
            self.after
                .accessed_containers()
                .into_iter()
                .filter(|c| before.contains(c))
                .map(str::to_owned),
        );
        for c in spanning {
            if let Some(d) = containers.get_mut(&c)
                && d.transient
                && d.lifetime == Lifetime::State
            {
                d.lifetime = Lifetime::Sdfg;
            }
        }
        let mut out = Vec::new();
        if self.before.graph.node_count() > 0 || !self.assignments.is_empty() {
            let mut b = ControlBlock::new(block.label.clone(), BlockKind::State(self.before));
            b.transition.assignments = self.assignments;
            out.push(b);
        }
        out.extend(self.blocks);
        if self.after.graph.node_count() > 0 || !block.transition.is_empty() || out.is_empty() {
            let label = names.label(&format!("{}_after_{}", block.label, self.label));
            out.push(ControlBlock {
                label,
                kind: BlockKind::State(self.after),
                transition: block.transition,
            });
        }
        out
    }
}

/// Plans inlining the nested SDFG `node` of `state`: the callee rewritten
/// into the caller's names (taken from `names`), and the state split.
fn inline_call(
    state: &State,
    node: NodeId,
    names: &mut Names,
    symbols: &BTreeMap<String, DType>,
    containers: &BTreeMap<String, DataDesc>,
) -> Result<Call, String> {
    let Some(Node::NestedSdfg(nested)) = state.node(node) else {
        return Err("not a nested SDFG".to_owned());
    };
    let inner = &nested.sdfg;
    // What each connector is bound to, and by which access node.
    let mut bound: BTreeMap<String, (String, Subset)> = BTreeMap::new();
    let mut access: BTreeMap<String, NodeId> = BTreeMap::new();
    let edges = state
        .in_edges(node)
        .map(|(_, other, e)| (other, e.dst_conn.as_ref(), e))
        .chain(
            state
                .out_edges(node)
                .map(|(_, other, e)| (other, e.src_conn.as_ref(), e)),
        );
    for (other, conn, e) in edges {
        let (Some(conn), Some(m)) = (conn, &e.memlet) else {
            continue;
        };
        if m.wcr.is_some() {
            return Err(format!(
                "its connector `{conn}` is written through a write-conflict resolution"
            ));
        }
        if state.graph[other].as_access() != Some(m.data.as_str()) {
            return Err(format!(
                "its connector `{conn}` is not bound by an access node of `{}`",
                m.data
            ));
        }
        let b = (m.data.clone(), m.subset.clone());
        match bound.get(conn) {
            Some(prev) if *prev != b => {
                return Err(format!(
                    "its connector `{conn}` is bound to `{}[{}]` and `{}[{}]`",
                    prev.0, prev.1, b.0, b.1
                ));
            }
            _ => {
                bound.insert(conn.clone(), b);
                access.entry(conn.clone()).or_insert(other);
            }
        }
    }
    // The callee's blocks end where it returns: only at its end.
    let mut blocks = inner.body.blocks.clone();
    if matches!(blocks.last().map(|b| &b.kind), Some(BlockKind::Return))
        && blocks.last().is_some_and(|b| b.transition.is_empty())
    {
        blocks.pop();
    }
    let mut early_return = false;
    for b in &blocks {
        b.walk(&mut |b| early_return |= matches!(b.kind, BlockKind::Return));
    }
    if early_return {
        return Err("it returns before its end".to_owned());
    }

    // Symbols: the caller's where mapped to one and never assigned inside,
    // else new symbols of the caller, bound on entry.
    let mut assigned = BTreeSet::new();
    for b in &blocks {
        b.walk(&mut |b| {
            if let BlockKind::Loop(l) = &b.kind
                && let Some(v) = &l.variable
            {
                assigned.insert(v.clone());
            }
            assigned.extend(b.transition.assignments.iter().map(|a| a.symbol.clone()));
        });
    }
    let mut ids: BTreeMap<String, String> = BTreeMap::new();
    let mut constants: BTreeMap<String, SymExpr> = BTreeMap::new();
    let mut new_symbols = BTreeMap::new();
    let mut assignments = Vec::new();
    for (s, dtype) in &inner.symbols {
        let mapped = nested.symbol_mapping.get(s);
        if !assigned.contains(s)
            && let Some(t) = mapped.and_then(SymExpr::is_symbol)
            && symbols.contains_key(t)
        {
            ids.insert(s.clone(), t.to_owned());
            continue;
        }
        let fresh = names.name(s);
        new_symbols.insert(fresh.clone(), *dtype);
        if let Some(e) = mapped {
            assignments.push(Assignment {
                symbol: fresh.clone(),
                value: e.clone(),
            });
            // Never assigned inside and reading no container, the
            // expression has the symbol's value wherever the callee's
            // expressions read it (the callee cannot change the caller's
            // symbols): its expressions take the expression itself, as
            // DaCe's InlineSDFG substitutes the mapping, so that a
            // stride mapped to the caller's array's stride is that
            // stride, not a symbol equal to it only at run time. Tasklet
            // code reads the symbol assigned on entry.
            if !assigned.contains(s) && e.reads().is_empty() {
                constants.insert(s.clone(), e.clone());
            }
        }
        ids.insert(s.clone(), fresh);
    }

    // Containers: connectors become the caller's windows, transients the
    // caller's.
    let mut windows: BTreeMap<String, Window> = BTreeMap::new();
    let mut new_containers = BTreeMap::new();
    for (c, d) in &inner.containers {
        if let Some((o, subset)) = bound.get(c) {
            let Some(od) = containers.get(o) else {
                return Err(format!(
                    "its connector `{c}` is bound to `{o}`, not declared"
                ));
            };
            if od.dtype != d.dtype {
                return Err(format!(
                    "its connector `{c}` ({}) is bound to `{o}` ({})",
                    d.dtype, od.dtype
                ));
            }
            let mut w = Window::bound(o, subset, d.dims()).ok_or_else(|| {
                format!(
                    "its connector `{c}` of rank {} is bound to `{o}[{subset}]`, a window of another rank",
                    d.rank()
                )
            })?;
            if od.is_view() {
                let view = viewed(state, node, access[c], o, od, containers).map_err(|why| {
                    format!("its connector `{c}` is bound to the view `{o}`, {why}")
                })?;
                w = w.through(&view);
            }
            windows.insert(c.clone(), w);
        } else if d.transient {
            let name = if names.taken.contains(c) {
                names.name(&format!("{}_{c}", nested.label))
            } else {
                names.name(c)
            };
            windows.insert(c.clone(), Window::whole(name.clone(), d.rank()));
            new_containers.insert(name, d.clone());
        }
    }

    // Map parameters clashing with the caller's names.
    let mut params = BTreeSet::new();
    for b in &blocks {
        b.walk(&mut |b| {
            if let BlockKind::State(s) = &b.kind {
                for (_, n) in s.nodes() {
                    if let Node::MapEntry(e) = n {
                        params.extend(e.map.params.iter().cloned());
                    }
                }
            }
        });
    }
    for p in params {
        if names.taken.contains(&p) {
            let fresh = names.name(&p);
            ids.insert(p, fresh);
        }
    }

    let windows_data: BTreeSet<String> = bound
        .keys()
        .filter_map(|c| windows.get(c))
        .map(|w| w.data.clone())
        .collect();
    let mut rewrite = Rewrite {
        subs: ids
            .iter()
            .map(|(k, v)| (k.clone(), SymExpr::symbol(v.clone())))
            .chain(constants)
            .collect(),
        ids,
        windows,
        inner_shapes: inner
            .containers
            .iter()
            .map(|(k, d)| (k.clone(), d.shape()))
            .collect(),
        names,
        error: RefCell::new(None),
    };
    for d in new_containers.values_mut() {
        for e in d.expressions_mut() {
            *e = e.subs(&rewrite.subs);
        }
    }
    let mut region = Region::new(blocks);
    rewrite.region(&mut region)?;
    rewrite.names.take_region(&region);
    let (before, after) = split(state, node)?;
    Ok(Call {
        label: nested.label.clone(),
        before,
        assignments,
        blocks: region.blocks,
        after,
        symbols: new_symbols,
        containers: new_containers,
        bound: windows_data,
    })
}

/// The window of its container that the view `o` (the access node `a` of
/// `state`, bound to the call `node`) shows: the one edge joining it to
/// another container's access node, where the view's strides are that
/// container's over the window (a window, not a reshape).
fn viewed(
    state: &State,
    node: NodeId,
    a: NodeId,
    o: &str,
    od: &DataDesc,
    containers: &BTreeMap<String, DataDesc>,
) -> Result<Window, String> {
    let ends: Vec<(NodeId, &Memlet)> = state
        .in_edges(a)
        .map(|(_, n, e)| (n, e))
        .chain(state.out_edges(a).map(|(_, n, e)| (n, e)))
        .filter(|(n, _)| *n != node)
        .filter_map(|(n, e)| Some((n, e.memlet.as_ref()?)))
        .filter(|(n, _)| state.graph[*n].as_access().is_some_and(|d| d != o))
        .collect();
    let [(n, m)] = ends.as_slice() else {
        return Err(format!("which {} edges join to other data", ends.len()));
    };
    let v = state.graph[*n].as_access().unwrap_or_default();
    let vd = containers
        .get(v)
        .ok_or_else(|| format!("a view of `{v}`, not declared"))?;
    if vd.is_view() {
        return Err(format!("a view of the view `{v}`"));
    }
    let subset = if m.data == v {
        m.subset.clone()
    } else {
        m.other_end(vd.dims())
    };
    let w = Window::bound(v, &subset, od.dims())
        .ok_or_else(|| format!("a view of `{v}[{subset}]` of another rank"))?;
    // The view's strides are the container's, scaled by the window's steps.
    let (Some(vl), Some(ol)) = (vd.layout(), od.layout()) else {
        return Err(format!("a view of `{v}`, which has no layout"));
    };
    let strides: Vec<SymExpr> = w
        .dims
        .iter()
        .zip(&vl.strides)
        .filter_map(|(d, s)| match d {
            Dim::Mapped { step, .. } => Some(s * step),
            Dim::Fixed(_) => None,
        })
        .collect();
    if strides != ol.strides || !ol.offset.is_zero() {
        return Err(format!(
            "which reshapes `{v}[{subset}]` (strides {:?}, not {:?})",
            ol.strides
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            strides.iter().map(ToString::to_string).collect::<Vec<_>>()
        ));
    }
    Ok(w)
}

/// The callee's code rewritten into the caller's names.
struct Rewrite<'a> {
    /// Symbols and map parameters renamed, as expressions.
    subs: BTreeMap<String, SymExpr>,
    /// The same, as names (tasklet code, loop variables, assignments).
    ids: BTreeMap<String, String>,
    windows: BTreeMap<String, Window>,
    inner_shapes: BTreeMap<String, Vec<SymExpr>>,
    names: &'a mut Names,
    /// The first failure inside an expression rewrite (which cannot return one).
    error: RefCell<Option<String>>,
}

impl Rewrite<'_> {
    fn window(&self, c: &str) -> Result<&Window, String> {
        self.windows
            .get(c)
            .ok_or_else(|| format!("it uses `{c}`, which no connector binds"))
    }

    fn check_reads(&self, reads: BTreeSet<String>) {
        if let Some(r) = reads.iter().find(|r| !self.windows.contains_key(*r)) {
            self.error.borrow_mut().get_or_insert(format!(
                "its interstate code reads `{r}`, which no connector binds"
            ));
        }
    }

    /// A read of the callee's container as the caller's, through its window.
    fn read(&self, x: &str, index: &[SymExpr]) -> Option<(String, Vec<SymExpr>)> {
        let w = self.windows.get(x)?;
        Some((w.data.clone(), w.index(index)))
    }

    fn expr(&self, e: &SymExpr) -> SymExpr {
        self.check_reads(e.reads());
        e.subs(&self.subs)
            .reindex_reads(&|x: &str, i: &[SymExpr]| self.read(x, i))
    }

    fn cond(&self, c: &SymCond) -> SymCond {
        self.check_reads(c.reads());
        c.subs(&self.subs)
            .reindex_reads(&|x: &str, i: &[SymExpr]| self.read(x, i))
    }

    fn id(&self, name: &str) -> String {
        self.ids
            .get(name)
            .cloned()
            .unwrap_or_else(|| name.to_owned())
    }

    fn region(&mut self, region: &mut Region) -> Result<(), String> {
        for b in &mut region.blocks {
            b.label = self.names.label(&b.label);
            b.map_interstate(&|e| self.expr(e), &|c| self.cond(c));
            for a in &mut b.transition.assignments {
                a.symbol = self.id(&a.symbol);
            }
            match &mut b.kind {
                BlockKind::State(s) => self.state(s)?,
                BlockKind::Loop(l) => {
                    if let Some(v) = &mut l.variable {
                        *v = self.id(v);
                    }
                    self.region(&mut l.body)?;
                }
                BlockKind::Conditional(c) => {
                    for (_, r) in &mut c.branches {
                        self.region(r)?;
                    }
                    if let Some(r) = &mut c.otherwise {
                        self.region(r)?;
                    }
                }
                BlockKind::Break | BlockKind::Continue | BlockKind::Return => {}
            }
            if let Some(e) = self.error.borrow_mut().take() {
                return Err(e);
            }
        }
        Ok(())
    }

    fn state(&mut self, s: &mut State) -> Result<(), String> {
        let edges: Vec<_> = s.graph.edge_indices().collect();
        for id in edges {
            let Some((src, dst)) = s.graph.edge_endpoints(id) else {
                continue;
            };
            let ends = (
                s.graph[src].as_access().map(str::to_owned),
                s.graph[dst].as_access().map(str::to_owned),
            );
            let Some(m) = s.graph[id].memlet.as_mut() else {
                continue;
            };
            self.memlet(m, ends)?;
        }
        for n in s.graph.node_weights_mut() {
            match n {
                Node::Access(a) => a.data = self.window(&a.data)?.data.clone(),
                Node::MapEntry(e) => {
                    for p in &mut e.map.params {
                        *p = self.id(p);
                    }
                    for r in &mut e.map.ranges {
                        *r = Range {
                            begin: self.expr(&r.begin),
                            end: self.expr(&r.end),
                            step: self.expr(&r.step),
                        };
                    }
                }
                Node::Tasklet(t) => {
                    // The names the code reads as symbols: not its
                    // connectors or locals.
                    let mut own: BTreeSet<&str> = t
                        .inputs
                        .iter()
                        .chain(&t.outputs)
                        .map(|c| c.name.as_str())
                        .collect();
                    let mut locals = Vec::new();
                    let_names(&t.body, &mut locals);
                    own.extend(locals.iter().map(String::as_str));
                    let ids: BTreeMap<String, String> = self
                        .ids
                        .iter()
                        .filter(|(k, _)| !own.contains(k.as_str()))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    sdfg_ir::code::rename_vars(&mut t.body, &ids);
                }
                Node::NestedSdfg(n) => {
                    for v in n.symbol_mapping.values_mut() {
                        *v = self.expr(v);
                    }
                }
                Node::MapExit(_) | Node::Library(_) | Node::Callback(_) => {}
            }
        }
        match self.error.borrow_mut().take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// A subset of the callee in the caller's symbols.
    fn subset(&self, s: &Subset) -> Subset {
        Subset::new(
            s.ranges
                .iter()
                .map(|r| Range {
                    begin: self.expr(&r.begin),
                    end: self.expr(&r.end),
                    step: self.expr(&r.step),
                })
                .collect(),
        )
    }

    /// A memlet of the callee in the caller's containers; `ends` are the
    /// containers of the access nodes at the edge's ends.
    fn memlet(&self, m: &mut Memlet, ends: (Option<String>, Option<String>)) -> Result<(), String> {
        // Every container it names must be bound (a copy's both ends).
        self.window(&m.data)?;
        if let (Some(a), Some(b)) = &ends {
            self.window(a)?;
            self.window(b)?;
        }
        // In the caller's symbols first: the windows' and the shapes'.
        m.subset = self.subset(&m.subset);
        m.other_subset = m.other_subset.as_ref().map(|o| self.subset(o));
        m.volume = self.expr(&m.volume);
        sdfg_ir::window::compose_memlet(
            m,
            (ends.0.as_deref(), ends.1.as_deref()),
            &|c| self.windows.get(c),
            &|c| {
                let shape = self.inner_shapes.get(c).cloned().unwrap_or_default();
                shape.iter().map(|e| self.expr(e)).collect()
            },
        );
        m.data = self.window(&m.data)?.data.clone();
        if m.other_subset.as_ref() == Some(&m.subset) {
            m.other_subset = None;
        }
        Ok(())
    }
}

/// The names `let` binds in `body`, at any depth.
fn let_names(body: &[Stmt], out: &mut Vec<String>) {
    for s in body {
        match s {
            Stmt::Let { name, .. } => out.push(name.clone()),
            Stmt::If {
                then, otherwise, ..
            } => {
                let_names(then, out);
                let_names(otherwise, out);
            }
            Stmt::Assign { .. } | Stmt::Store { .. } => {}
        }
    }
}

/// `state` without `node`, split into the nodes that run before it (those
/// it depends on, and those independent of it) and those that run after
/// (those depending on it); an access node on the first side feeding the
/// second appears on both.
fn split(state: &State, node: NodeId) -> Result<(State, State), String> {
    let mut later = BTreeSet::new();
    let mut queue: VecDeque<NodeId> = state.out_edges(node).map(|(_, d, _)| d).collect();
    while let Some(n) = queue.pop_front() {
        if later.insert(n) {
            queue.extend(state.out_edges(n).map(|(_, d, _)| d));
        }
    }
    let mut before = State::new();
    let mut after = State::new();
    // Each node's id on its side.
    let mut ids: BTreeMap<NodeId, NodeId> = BTreeMap::new();
    for (id, n) in state.nodes() {
        if id == node {
            continue;
        }
        let side = if later.contains(&id) {
            &mut after
        } else {
            &mut before
        };
        ids.insert(id, side.add_node(n.clone()));
    }
    // Access nodes of the first side, repeated on the second.
    let mut repeated: BTreeMap<NodeId, NodeId> = BTreeMap::new();
    for (_, src, dst, e) in state.edges() {
        if src == node || dst == node {
            continue;
        }
        match (later.contains(&src), later.contains(&dst)) {
            (false, false) => {
                before.graph.add_edge(ids[&src], ids[&dst], e.clone());
            }
            (true, true) => {
                after.graph.add_edge(ids[&src], ids[&dst], e.clone());
            }
            (false, true) => {
                let Some(data) = state.graph[src].as_access() else {
                    return Err(format!(
                        "`{}` feeds `{}` past it",
                        state.graph[src].label(),
                        state.graph[dst].label()
                    ));
                };
                let copy = *repeated
                    .entry(src)
                    .or_insert_with(|| after.add_access(data));
                after.graph.add_edge(copy, ids[&dst], e.clone());
            }
            (true, false) => unreachable!("a node depending on the call is after it"),
        }
    }
    for (is_after, side) in [(false, &mut before), (true, &mut after)] {
        let entries: BTreeMap<NodeId, NodeId> = ids
            .iter()
            .filter(|(old, _)| later.contains(*old) == is_after)
            .map(|(old, new)| (*old, *new))
            .collect();
        for w in side.graph.node_weights_mut() {
            if let Node::MapExit(x) = w {
                match entries.get(&x.entry) {
                    Some(e) => x.entry = *e,
                    None => return Err(format!("the map `{}` spans the call", x.label)),
                }
            }
        }
        crate::nest::drop_lonely_access_nodes(side);
    }
    Ok((before, after))
}
