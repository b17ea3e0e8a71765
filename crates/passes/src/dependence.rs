//! What a region of control flow reads, writes and names, and the
//! dependence test between iterations of a loop.
//!
//! Loop-to-map asks one question of a loop body: can two different
//! iterations touch the same element, one of them writing it? The answer
//! comes from the memlets, whose subsets are canonical symbolic expressions
//! ([`SymExpr`]), so the test is symbolic and exact where it says yes:
//!
//! - Every access of the body is collected with its subset: the memlets at
//!   access nodes of every state (at the top of a scope they are the
//!   propagated ranges of the whole scope), memlets passed between code
//!   nodes, and interstate reads of data (whole containers, since a read in
//!   a condition has no subset the test could use).
//! - Symbols that change inside the body (assigned on its transitions, the
//!   variables of inner loops, the parameters of inner maps) are *varying*:
//!   nothing is assumed about them.
//! - Two accesses of iterations `p` and `p'` are disjoint when some
//!   dimension separates them for every pair of iterations: both ranges free
//!   of the loop's variables and of varying symbols, one ending before the
//!   other begins (a constant difference); or, for each loop variable, some
//!   dimension where both are the same single index `a*p + c` (`a` a
//!   non-zero constant, `c` free of loop variables, varying symbols and data
//!   reads), so equal elements force equal iterations; or, the stride
//!   test, both `a*p + M*g` with one constant `a`, a monomial `M` free of
//!   varying symbols and at least `|a|` times the number of values `p`
//!   takes, and any integers `g` (which may name inner map parameters):
//!   the delinearized index of an array written through a reshaped view
//!   (stockham_fft's `Dv[:, :, k]`, `a*R**(K-i-1)*R**i + b*R**(K-i-1) + k`).
//! - An access at the boundary of a map scope whose memlet is coarser than
//!   what happens inside (the whole container, dynamic) also carries the
//!   subsets of the memlets inside the scope ([`Access::inner`]); two
//!   accesses are independent when their own subsets are, or when every
//!   pair of their inner subsets is.
//!
//! Anything else is a possible dependence: the test errs on the side of
//! keeping a loop, never of a wrong map.

use sdfg_ir::code::body_names;
use sdfg_ir::node::{MAP_IN_PREFIX, MAP_OUT_PREFIX};
use sdfg_ir::{
    BlockKind, ControlBlock, LoopBlock, Memlet, Node, Range, Region, State, Subset, SymExpr,
    VIEW_CONNECTOR, Wcr,
};
use std::collections::{BTreeMap, BTreeSet};

/// One access of a region to a container.
#[derive(Clone, Debug, PartialEq)]
pub struct Access {
    /// The container.
    pub data: String,
    /// The elements, `None` where unknown (interstate reads, copies whose
    /// memlet names the other container without an other subset).
    pub subset: Option<Subset>,
    /// Whether it writes (else it reads).
    pub write: bool,
    /// The write-conflict resolution of a write.
    pub wcr: Option<Wcr>,
    /// Whether the memlet is dynamic (may touch fewer elements).
    pub dynamic: bool,
    /// Whether interstate code makes it (a condition, a loop bound, an
    /// assignment on a transition), rather than a state.
    pub interstate: bool,
    /// For a read: whether it reads an access node the same state writes
    /// first (it sees that state's value, not the one before).
    pub after_write: bool,
    /// The block it is in, for messages.
    pub block: String,
    /// For an access at the boundary of a map scope: the subsets of the
    /// memlets inside the scope that make it, in the map's parameters, when
    /// each of them is a code node's (empty otherwise). The scope's own
    /// memlet is often the whole container (dynamic); these say which
    /// elements, for the dependence test to use where they are finer.
    pub inner: Vec<Subset>,
}

/// Everything a region does, as the loop transformations need it.
#[derive(Clone, Debug, Default)]
pub struct RegionUse {
    /// Every access, in program order of the blocks.
    pub accesses: Vec<Access>,
    /// Symbols named anywhere (memlets, ranges, tasklet code, conditions,
    /// assignments, nested SDFGs' mappings), with how many places name
    /// them, so uses outside a loop are a subtraction. A loop's variable
    /// named inside that loop is not counted: the loop binds it.
    pub symbols: BTreeMap<String, usize>,
    /// Symbols assigned inside (transitions, loop variables).
    pub assigned: BTreeSet<String>,
    /// Parameters of maps inside.
    pub map_params: BTreeSet<String>,
    /// Host callbacks inside, by label.
    pub callbacks: Vec<String>,
    /// `break` or `continue` that leave the region's own loop (not one
    /// nested in it), and `return` anywhere, by kind name.
    pub jumps: Vec<&'static str>,
    /// Names of loop variables inside the loops that bind them (with the
    /// loops' own declarations), with how many places name them.
    pub bound_uses: BTreeMap<String, usize>,
    /// Variables of the loops being walked.
    bound: Vec<String>,
    /// Accesses per container (filled when the walk is done).
    per_container: BTreeMap<String, usize>,
}

impl RegionUse {
    /// What `region` does; `symbols` is the set of names that are symbols
    /// (to tell them from tasklet locals and connectors).
    pub fn of(region: &Region, symbols: &BTreeSet<String>) -> RegionUse {
        let mut u = RegionUse::default();
        u.region(region, symbols, 0);
        u.finish()
    }

    /// What one block does, its transition included.
    pub fn of_block(block: &ControlBlock, symbols: &BTreeSet<String>) -> RegionUse {
        let mut u = RegionUse::default();
        u.block(block, symbols, 0);
        u.finish()
    }

    /// What one state does (a block's transition aside).
    pub fn of_state(label: &str, state: &State, symbols: &BTreeSet<String>) -> RegionUse {
        let mut u = RegionUse::default();
        u.state(label, state, symbols);
        u.finish()
    }

    /// What loop `l` (labelled `label`) does: its header and its body.
    pub fn of_loop(l: &LoopBlock, label: &str, symbols: &BTreeSet<String>) -> RegionUse {
        let mut u = RegionUse::default();
        u.looped(l, label, symbols, 0);
        u.finish()
    }

    /// The containers written.
    pub fn written(&self) -> BTreeSet<&str> {
        self.accesses
            .iter()
            .filter(|a| a.write)
            .map(|a| a.data.as_str())
            .collect()
    }

    /// The containers read.
    pub fn read(&self) -> BTreeSet<&str> {
        self.accesses
            .iter()
            .filter(|a| !a.write)
            .map(|a| a.data.as_str())
            .collect()
    }

    /// Symbols that change inside: assigned, or parameters of inner maps.
    pub fn varying(&self) -> BTreeSet<String> {
        self.assigned.union(&self.map_params).cloned().collect()
    }

    /// Whether `self` (a whole SDFG's use) names symbol `s` more often than `inner`.
    pub fn symbol_outside(&self, inner: &RegionUse, s: &str) -> bool {
        self.symbols.get(s).copied().unwrap_or(0) > inner.symbols.get(s).copied().unwrap_or(0)
    }

    /// How many accesses of `x` the walk counted.
    pub fn count(&self, x: &str) -> usize {
        self.per_container.get(x).copied().unwrap_or(0)
    }

    /// Whether `self` accesses `x` more often than `inner`.
    pub fn container_outside(&self, inner: &RegionUse, x: &str) -> bool {
        let count = |u: &RegionUse| u.per_container.get(x).copied().unwrap_or(0);
        count(self) > count(inner)
    }

    /// The number of accesses per container, which the walk counted.
    pub fn into_per_container(self) -> BTreeMap<String, usize> {
        self.per_container
    }

    /// Counts the accesses per container, once the walk is done.
    fn finish(mut self) -> RegionUse {
        for a in &self.accesses {
            *self.per_container.entry(a.data.clone()).or_default() += 1;
        }
        self
    }

    fn name_symbols(&mut self, names: impl IntoIterator<Item = String>) {
        for n in names {
            self.name_symbol(&n);
        }
    }

    /// Counts one place naming `n` (a new key is the only allocation).
    fn name_symbol(&mut self, n: &str) {
        let counts = if self.bound.iter().any(|b| b == n) {
            &mut self.bound_uses
        } else {
            &mut self.symbols
        };
        match counts.get_mut(n) {
            Some(c) => *c += 1,
            None => {
                counts.insert(n.to_owned(), 1);
            }
        }
    }

    /// Whether `self` (a whole SDFG's use) names symbol `s` anywhere
    /// `inner` does not, bound by another loop or not: the symbol must stay
    /// declared there.
    pub fn named_outside(&self, inner: &RegionUse, s: &str) -> bool {
        let all = |u: &RegionUse| {
            u.symbols.get(s).copied().unwrap_or(0) + u.bound_uses.get(s).copied().unwrap_or(0)
        };
        all(self) > all(inner)
    }

    fn interstate(&mut self, label: &str, reads: BTreeSet<String>, names: BTreeSet<String>) {
        for data in reads {
            self.accesses.push(Access {
                data,
                subset: None,
                write: false,
                wcr: None,
                dynamic: true,
                interstate: true,
                after_write: false,
                block: label.to_owned(),
                inner: Vec::new(),
            });
        }
        self.name_symbols(names);
    }

    fn looped(&mut self, l: &LoopBlock, label: &str, symbols: &BTreeSet<String>, loops: usize) {
        if let Some(v) = &l.variable {
            self.assigned.insert(v.clone());
            self.bound.push(v.clone());
            *self.bound_uses.entry(v.clone()).or_default() += 1;
        }
        let mut reads = l.condition.reads();
        let mut names = l.condition.free_symbols();
        for e in [&l.init, &l.update].into_iter().flatten() {
            reads.extend(e.reads());
            names.extend(e.free_symbols());
        }
        self.interstate(label, reads, names);
        self.region(&l.body, symbols, loops + 1);
        if l.variable.is_some() {
            self.bound.pop();
        }
    }

    fn region(&mut self, region: &Region, symbols: &BTreeSet<String>, loops: usize) {
        for block in &region.blocks {
            self.block(block, symbols, loops);
        }
    }

    fn block(&mut self, block: &ControlBlock, symbols: &BTreeSet<String>, loops: usize) {
        let label = &block.label;
        match &block.kind {
            BlockKind::State(state) => self.state(label, state, symbols),
            BlockKind::Loop(l) => self.looped(l, label, symbols, loops),
            BlockKind::Conditional(c) => {
                for (cond, r) in &c.branches {
                    self.interstate(label, cond.reads(), cond.free_symbols());
                    self.region(r, symbols, loops);
                }
                if let Some(r) = &c.otherwise {
                    self.region(r, symbols, loops);
                }
            }
            BlockKind::Break | BlockKind::Continue if loops == 0 => {
                self.jumps.push(block.kind.name());
            }
            BlockKind::Return => self.jumps.push("return"),
            BlockKind::Break | BlockKind::Continue => {}
        }
        for a in &block.transition.assignments {
            self.interstate(label, a.value.reads(), a.value.free_symbols());
            self.assigned.insert(a.symbol.clone());
            self.name_symbols([a.symbol.clone()]);
        }
    }

    fn state(&mut self, label: &str, state: &State, symbols: &BTreeSet<String>) {
        // Each memlet names each of its symbols once.
        let mut names: Vec<&str> = Vec::new();
        for (_, _, _, e) in state.edges() {
            if let Some(m) = &e.memlet {
                names.clear();
                m.any_symbol(&mut |s| {
                    if !names.contains(&s) {
                        names.push(s);
                    }
                    false
                });
                for n in &names {
                    self.name_symbol(n);
                }
            }
        }
        state_accesses(state, |a| {
            self.accesses.push(Access {
                data: a.data.to_owned(),
                subset: a.subset.cloned(),
                write: a.write,
                wcr: if a.write { a.memlet.wcr } else { None },
                dynamic: a.memlet.dynamic,
                interstate: false,
                after_write: a.after_write,
                block: label.to_owned(),
                inner: a
                    .scope
                    .map(|(n, conn)| inner_subsets(state, n, conn, a.data))
                    .unwrap_or_default(),
            })
        });
        for (_, node) in state.nodes() {
            match node {
                Node::MapEntry(e) => {
                    self.map_params.extend(e.map.params.iter().cloned());
                    for r in &e.map.ranges {
                        self.name_symbols(r.free_symbols());
                    }
                }
                Node::Tasklet(t) => {
                    let mut names = Vec::new();
                    body_names(&t.body, &mut names);
                    self.name_symbols(names.into_iter().filter(|n| symbols.contains(n)));
                }
                Node::NestedSdfg(n) => {
                    for e in n.symbol_mapping.values() {
                        self.name_symbols(e.free_symbols());
                    }
                }
                Node::Callback(c) => self.callbacks.push(c.label.clone()),
                Node::Access(_) | Node::MapExit(_) | Node::Library(_) => {}
            }
        }
    }
}

/// One access of a state to a container, as [`state_accesses`] finds it.
#[derive(Clone, Copy, Debug)]
pub struct EdgeAccess<'s> {
    /// The memlet that makes it.
    pub memlet: &'s Memlet,
    /// The container.
    pub data: &'s str,
    /// The elements, `None` where unknown (a copy's memlet naming the other
    /// container without an other subset).
    pub subset: Option<&'s Subset>,
    /// Whether it writes (else it reads).
    pub write: bool,
    /// For a read: whether its access node is written first in the state.
    pub after_write: bool,
    /// Where the edge enters or leaves a map scope: the map entry (a read)
    /// or exit (a write) and the connector on it.
    pub scope: Option<(sdfg_ir::NodeId, &'s str)>,
}

/// The subsets of the memlets on `data` inside the scope that `scope`'s
/// connector `conn` enters (a map entry's `IN_x`) or leaves (a map exit's
/// `OUT_x`), when each connects a code node; empty otherwise.
fn inner_subsets(state: &State, scope: sdfg_ir::NodeId, conn: &str, data: &str) -> Vec<Subset> {
    let is_code = |n| state.node(n).is_some_and(Node::is_code);
    let mut out = Vec::new();
    let inner: Vec<(sdfg_ir::NodeId, &sdfg_ir::Edge)> = match state.node(scope) {
        Some(Node::MapEntry(_)) => {
            let Some(x) = conn.strip_prefix(MAP_IN_PREFIX) else {
                return out;
            };
            let want = format!("{MAP_OUT_PREFIX}{x}");
            state
                .out_edges(scope)
                .filter(|(_, _, e)| e.src_conn.as_deref() == Some(want.as_str()))
                .map(|(_, n, e)| (n, e))
                .collect()
        }
        Some(Node::MapExit(_)) => {
            let Some(x) = conn.strip_prefix(MAP_OUT_PREFIX) else {
                return out;
            };
            let want = format!("{MAP_IN_PREFIX}{x}");
            state
                .in_edges(scope)
                .filter(|(_, _, e)| e.dst_conn.as_deref() == Some(want.as_str()))
                .map(|(_, n, e)| (n, e))
                .collect()
        }
        _ => return out,
    };
    for (n, e) in inner {
        match &e.memlet {
            Some(m) if is_code(n) && m.data == data => out.push(m.subset.clone()),
            _ => return Vec::new(),
        }
    }
    out
}

/// Calls `f` on every access `state` makes through its memlets, in edge
/// order: the one rule of what counts as an access, shared by
/// [`RegionUse`] and the passes that only count accesses (map fusion),
/// which need none of the symbols and copies a [`RegionUse`] collects.
pub fn state_accesses<'s>(state: &'s State, mut f: impl FnMut(EdgeAccess<'s>)) {
    let access = |n| state.node(n).and_then(Node::as_access);
    let is_code = |n| state.node(n).is_some_and(Node::is_code);
    for (_, src, dst, e) in state.edges() {
        let Some(m) = &e.memlet else { continue };
        let written_first =
            access(src).is_some() && state.in_edges(src).any(|(_, _, e)| e.memlet.is_some());
        let scope = match (state.node(src), state.node(dst)) {
            (Some(Node::Access(_)), Some(Node::MapEntry(_))) => {
                e.dst_conn.as_deref().map(|c| (dst, c))
            }
            (Some(Node::MapExit(_)), Some(Node::Access(_))) => {
                e.src_conn.as_deref().map(|c| (src, c))
            }
            _ => None,
        };
        let mut push = |data: &'s str, subset: Option<&'s Subset>, write: bool| {
            f(EdgeAccess {
                memlet: m,
                data,
                subset,
                write,
                after_write: !write && written_first,
                scope,
            })
        };
        // A view edge is an access of the origin only: the view's own
        // accesses are the ones through it.
        if e.dst_conn.as_deref() == Some(VIEW_CONNECTOR) {
            push(&m.data, Some(&m.subset), false);
            continue;
        }
        if e.src_conn.as_deref() == Some(VIEW_CONNECTOR) {
            push(&m.data, Some(&m.subset), true);
            continue;
        }
        match (access(src), access(dst)) {
            // A copy: its memlet's subset is the end it names, the source
            // when both ends are one container (`p[:, -1] = p[:, -2]`).
            (Some(x), Some(y)) => {
                let (from, to) = if m.data == x {
                    (Some(&m.subset), m.other_subset.as_ref())
                } else {
                    (m.other_subset.as_ref(), Some(&m.subset))
                };
                push(x, from, false);
                push(y, to, true);
            }
            (Some(x), None) => push(x, own_subset(m, x), false),
            (None, Some(y)) => push(y, own_subset(m, y), true),
            (None, None) => {}
        }
        // A transient passed from one code node to the next.
        if is_code(src) && is_code(dst) {
            push(&m.data, Some(&m.subset), true);
            push(&m.data, Some(&m.subset), false);
        }
    }
}

/// The subset of a memlet on container `x`: its subset when it names `x`,
/// its other subset when it names the other end of a copy.
fn own_subset<'m>(m: &'m Memlet, x: &str) -> Option<&'m Subset> {
    if m.data == x {
        Some(&m.subset)
    } else {
        m.other_subset.as_ref()
    }
}

/// Whether `e` names none of `syms` and reads no data.
fn invariant(e: &SymExpr, syms: &BTreeSet<String>) -> bool {
    !e.has_reads() && !e.any_symbol(&mut |s| syms.contains(s))
}

/// The least and greatest value of `e` over every iteration, the loop
/// variables `params` running over `bounds` (their least and greatest
/// values, which may name outer variables: a triangular nest), when `e`
/// is affine in them with constant coefficients and the rest invariant.
fn extent(
    e: &SymExpr,
    params: &[String],
    bounds: &[(SymExpr, SymExpr)],
    unknown: &BTreeSet<String>,
) -> Option<(SymExpr, SymExpr)> {
    let (mut lo, mut hi) = (e.clone(), e.clone());
    // Each round replaces the variables present; bounds naming outer
    // variables take one more round per level.
    for _ in 0..=params.len() {
        let mut changed = false;
        for (p, (plo, phi)) in params.iter().zip(bounds) {
            for (x, least) in [(&mut lo, true), (&mut hi, false)] {
                if !x.has_symbol(p) {
                    continue;
                }
                let (c, rest) = x.linear_in(p)?;
                let c = c.as_int()?;
                let pick = if (c > 0) == least { plo } else { phi };
                *x = rest + pick * c;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    (invariant(&lo, unknown) && invariant(&hi, unknown)).then_some((lo, hi))
}

/// The least and greatest values of a loop or map range.
pub fn range_bounds(r: &Range) -> Option<(SymExpr, SymExpr)> {
    match r.step.as_int()? {
        s if s > 0 => Some((r.begin.clone(), r.end.clone())),
        s if s < 0 => Some((r.end.clone(), r.begin.clone())),
        _ => None,
    }
}

/// Whether accesses `a` and `b`, made by iterations `p` and `p'` of the
/// loop variables `params` (running over `ranges`, or unknown ranges when
/// `ranges` is shorter), are disjoint whenever `p != p'` (see the [module
/// docs](self)). `varying` are the symbols that change inside an
/// iteration.
pub fn independent(
    a: &Subset,
    b: &Subset,
    params: &[String],
    ranges: &[Range],
    varying: &BTreeSet<String>,
) -> bool {
    if a.rank() != b.rank() {
        return false;
    }
    let (unknown, bounds) = unknowns_and_bounds(params, ranges, varying);
    // Each loop variable pinned by some dimension: equal elements mean
    // equal iterations. (Tried first: it is the common case, and cheaper
    // than the spans below.)
    let pinned = params.iter().enumerate().all(|(k, p)| {
        a.ranges.iter().zip(&b.ranges).any(|(ra, rb)| {
            if !ra.is_index() || !rb.is_index() {
                return false;
            }
            if ra.begin == rb.begin
                && let Some((coeff, rest)) = ra.begin.linear_in(p)
                && coeff.as_int().is_some_and(|c| c != 0)
                && invariant(&rest, &unknown)
            {
                return true;
            }
            bounds
                .get(k)
                .is_some_and(|b| strided(&ra.begin, &rb.begin, p, b, &unknown))
        })
    });
    pinned
        || (a == b
            && a.ranges
                .iter()
                .any(|r| r.is_index() && mixed_radix(&r.begin, params, &bounds, &unknown)))
        || separated(a, b, params, ranges, varying)
}

/// Whether index `e` numbers the points of a box of `params` one to one,
/// as the [`digits`] of a mixed-radix number, the innermost's coefficient
/// a non-zero constant, and a part free of the unknowns (the flat index of
/// a row-major reshape: `a * M * R**i + b * M + k` over `k < M`, `b <
/// R**i`). No two points then meet, though no single dimension pins each
/// parameter.
fn mixed_radix(
    e: &SymExpr,
    params: &[String],
    bounds: &[(SymExpr, SymExpr)],
    unknown: &BTreeSet<String>,
) -> bool {
    if bounds.len() < params.len() || params.is_empty() {
        return false;
    }
    if bounds
        .iter()
        .any(|(lo, hi)| !invariant(lo, unknown) || !invariant(hi, unknown))
    {
        return false;
    }
    let ranges: Vec<(SymExpr, SymExpr)> = bounds
        .iter()
        .map(|(lo, hi)| (lo.clone(), hi - lo + SymExpr::int(1)))
        .collect();
    digits(e, params, &ranges[..params.len()], None)
        .is_some_and(|(_, base)| invariant(&base, unknown))
}

/// `e` read as a number whose digits are `params` (innermost last), each
/// running over `count` values from `first` (`ranges`): every parameter's
/// coefficient is the next inner one's times that one's count, the
/// innermost's `unit` (or any non-zero constant without one). Returns the
/// coefficients, in `params`' order, and `e` with every parameter at its
/// first value. `None` where `e` is not such a number. Map-to-copy asks it
/// whether a copy's points are one run of elements in order, the
/// dependence test whether a flat index is one to one.
pub(crate) fn digits(
    e: &SymExpr,
    params: &[String],
    ranges: &[(SymExpr, SymExpr)],
    unit: Option<&SymExpr>,
) -> Option<(Vec<SymExpr>, SymExpr)> {
    let mut rest = e.clone();
    let mut at_first = SymExpr::int(0);
    let mut run = unit.cloned();
    let mut coeffs = Vec::with_capacity(params.len());
    for (p, (first, count)) in params.iter().zip(ranges).rev() {
        let (coeff, others) = rest.linear_in(p)?;
        let fits = match &run {
            Some(r) => coeff == *r,
            None => coeff.as_int().is_some_and(|c| c != 0),
        };
        if !fits || params.iter().any(|q| coeff.has_symbol(q)) {
            return None;
        }
        at_first = &at_first + &(&coeff * first);
        run = Some(&coeff * count);
        coeffs.push(coeff);
        rest = others;
    }
    if params.iter().any(|q| rest.has_symbol(q)) {
        return None;
    }
    coeffs.reverse();
    Some((coeffs, &rest + &at_first))
}

/// The symbols whose values an access test cannot know (the loop
/// variables and what changes inside an iteration), and the bounds of the
/// ranges that have them.
fn unknowns_and_bounds(
    params: &[String],
    ranges: &[Range],
    varying: &BTreeSet<String>,
) -> (BTreeSet<String>, Vec<(SymExpr, SymExpr)>) {
    let mut unknown: BTreeSet<String> = varying.clone();
    unknown.extend(params.iter().cloned());
    (unknown, ranges.iter().map_while(range_bounds).collect())
}

/// Whether accesses `a` and `b` are disjoint for every pair of iterations
/// of `params`, equal ones included: some dimension where what one ever
/// touches lies wholly below what the other does (`p[i, N - 2]` and
/// `p[i, N - 1]`). Map fusion asks this of a write of the second map
/// against an access of the first: such a pair needs no order.
pub fn separated(
    a: &Subset,
    b: &Subset,
    params: &[String],
    ranges: &[Range],
    varying: &BTreeSet<String>,
) -> bool {
    if a.rank() != b.rank() {
        return false;
    }
    let (unknown, bounds) = unknowns_and_bounds(params, ranges, varying);
    let known = &params[..bounds.len().min(params.len())];
    // The elements a range touches over every iteration.
    let span = |r: &Range| -> Option<(SymExpr, SymExpr)> {
        if !r.is_index() && r.step.as_int().is_none_or(|s| s <= 0) {
            return None;
        }
        let (lo, _) = extent(&r.begin, known, &bounds, &unknown)?;
        let (_, hi) = extent(&r.end, known, &bounds, &unknown)?;
        Some((lo, hi))
    };
    a.ranges.iter().zip(&b.ranges).any(|(ra, rb)| {
        let (Some((alo, ahi)), Some((blo, bhi))) = (span(ra), span(rb)) else {
            return false;
        };
        ahi.try_compare(&blo) == Some(std::cmp::Ordering::Less)
            || bhi.try_compare(&alo) == Some(std::cmp::Ordering::Less)
    })
}

/// Whether two blocks that follow each other with no transition between
/// them run in either order to the same effect: neither jumps or calls
/// back to the host, neither assigns a symbol the other names, and every
/// pair of their accesses to one container, one of the two a write, is
/// [`separated`] (the symbols either block varies unknown). `y[k] = alpha`
/// and `y[:k] += alpha * t` commute: `k` lies past `0..k - 1`. A view names
/// its origin's elements under another name, so `is_view` containers
/// commute with nothing; an access of unknown elements (an interstate
/// read) commutes only with reads.
pub fn commute(a: &RegionUse, b: &RegionUse, is_view: impl Fn(&str) -> bool) -> bool {
    if !a.jumps.is_empty() || !b.jumps.is_empty() {
        return false;
    }
    if !a.callbacks.is_empty() || !b.callbacks.is_empty() {
        return false;
    }
    let names = |x: &RegionUse, y: &RegionUse| {
        x.assigned
            .iter()
            .any(|s| y.symbols.contains_key(s) || y.bound_uses.contains_key(s))
    };
    if names(a, b) || names(b, a) {
        return false;
    }
    if a.accesses
        .iter()
        .chain(&b.accesses)
        .any(|x| is_view(&x.data))
    {
        return false;
    }
    let varying: BTreeSet<String> = a.varying().union(&b.varying()).cloned().collect();
    let mut of_b: BTreeMap<&str, Vec<&Access>> = BTreeMap::new();
    for y in &b.accesses {
        of_b.entry(y.data.as_str()).or_default().push(y);
    }
    a.accesses.iter().all(|x| {
        of_b.get(x.data.as_str()).into_iter().flatten().all(|y| {
            if !(x.write || y.write) {
                return true;
            }
            match (&x.subset, &y.subset) {
                (Some(sx), Some(sy)) => separated(sx, sy, &[], &[], &varying),
                _ => false,
            }
        })
    })
}

/// Whether indices `a` and `b` are `c * p + M * g` and `c * p' + M * g'`
/// for one constant `c`, one monomial `M` of at least `|c|` times the
/// values `p` takes (`bounds`: its least and greatest), and any integers `g`
/// and `g'` (they may name anything: inner map parameters, other loop
/// variables, data; `M` itself names none of the `unknown` symbols). Equal indices then force `p == p'`, since `c * (p -
/// p')` is a multiple of `M` smaller than `M`. This is the stride test that
/// delinearizes `Dv[:, :, k]` through a reshaped view (stockham_fft's
/// `a * R**(K-i-1) * R**i + b * R**(K-i-1) + k` for `k < R**(K-i-1)`).
fn strided(
    a: &SymExpr,
    b: &SymExpr,
    p: &str,
    bounds: &(SymExpr, SymExpr),
    unknown: &BTreeSet<String>,
) -> bool {
    let (Some((ca, ra)), Some((cb, rb))) = (a.linear_in(p), b.linear_in(p)) else {
        return false;
    };
    let Some(c) = ca.as_int().filter(|c| *c != 0 && cb.as_int() == Some(*c)) else {
        return false;
    };
    // Equal constant terms cancel.
    let k = ra.constant_term();
    if rb.constant_term() != k {
        return false;
    }
    let (ra, rb) = (ra - SymExpr::int(k), rb - SymExpr::int(k));
    // The stride is the same in every iteration.
    let Some(m) = SymExpr::common_monomial(&[&ra, &rb]).filter(|m| invariant(m, unknown)) else {
        return false;
    };
    let (lo, hi) = bounds;
    let span = (hi - lo + SymExpr::int(1)) * SymExpr::int(c.saturating_abs());
    matches!(
        m.try_compare(&span),
        Some(std::cmp::Ordering::Greater | std::cmp::Ordering::Equal)
    )
}

/// The subsets an access makes inside its map scope, or its own.
fn finer(a: &Access) -> Option<Vec<&Subset>> {
    if a.inner.is_empty() {
        a.subset.as_ref().map(|s| vec![s])
    } else {
        Some(a.inner.iter().collect())
    }
}

/// The accesses with distinct (subset, read or write), first ones kept.
fn distinct<'a>(all: impl Iterator<Item = &'a Access>) -> Vec<&'a Access> {
    let mut seen: Vec<&Access> = Vec::new();
    for a in all {
        if !seen
            .iter()
            .any(|s| s.subset == a.subset && s.write == a.write && s.inner == a.inner)
        {
            seen.push(a);
        }
    }
    seen
}

/// Why two iterations of a loop over `params` may conflict on `data`, or
/// `None` when they cannot: every write checked against every access of the
/// same container. A container only ever updated with one write-conflict
/// resolution (a sum, a maximum) never conflicts: the updates commute.
pub fn conflict(
    data: &str,
    accesses: &[&Access],
    params: &[String],
    ranges: &[Range],
    varying: &BTreeSet<String>,
) -> Option<String> {
    let wcr = accesses.first().and_then(|a| a.wcr);
    if wcr.is_some() && accesses.iter().all(|a| a.write && a.wcr == wcr) {
        return None;
    }
    let show = |a: &Access| match &a.subset {
        Some(s) => format!("`{data}[{s}]` in `{}`", a.block),
        None => format!("all of `{data}` in `{}`", a.block),
    };
    // Each distinct subset once: a body naming `B[i]` a thousand times is
    // one test, not a million (the first access with it is the one shown).
    let writes = distinct(accesses.iter().copied().filter(|a| a.write));
    let all = distinct(accesses.iter().copied());
    for w in writes {
        for x in all.iter().copied() {
            let ok = match (&w.subset, &x.subset) {
                (Some(sw), Some(sx)) => independent(sw, sx, params, ranges, varying),
                _ => false,
            };
            // Else the finer subsets inside map scopes, pair by pair.
            let ok = ok
                || (!w.inner.is_empty() || !x.inner.is_empty())
                    && finer(w).zip(finer(x)).is_some_and(|(iw, ix)| {
                        iw.iter().all(|sw| {
                            ix.iter()
                                .all(|sx| independent(sw, sx, params, ranges, varying))
                        })
                    });
            if !ok {
                let what = if x.write { "writes" } else { "reads" };
                return Some(format!(
                    "one iteration writes {} and another may {what} {}",
                    show(w),
                    show(x)
                ));
            }
        }
    }
    None
}
