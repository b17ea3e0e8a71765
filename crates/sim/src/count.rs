//! Counting a run's launches and host <-> device bytes without running it.
//!
//! The simulator counts what a run launches and copies (see [`RunReport`]),
//! but it executes every element, which at NPBench's larger presets takes
//! minutes per kernel. Launches and copies depend only on control flow and
//! on the sizes of copies, and in most programs those depend only on
//! symbols: [`count_statically`] walks the control flow with the symbols'
//! values, as the simulator does, and counts what the simulator would count,
//! without touching an element.
//!
//! It is exact or it refuses: a condition, assignment, map range or copy
//! size that reads data ([`NotCountable::DataDependent`]), or a construct
//! whose count needs per-point execution (a host map around device work,
//! [`NotCountable::Unsupported`]), is an error naming where, and only a run
//! can count such a program. The corpus checks every exact count against the
//! simulated run of the same program, so the two rules cannot drift apart.
//!
//! [`RunReport`]: crate::RunReport

use sdfg_ir::symbolic::{EvalError, SymEnv, SymExpr};
use sdfg_ir::{
    BlockKind, Memlet, Node, NodeId, Region, Schedule, Sdfg, Side, State, Subset, VIEW_CONNECTOR,
};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

/// What a run launches and moves between host and device, as
/// [`RunReport`](crate::RunReport) counts it: device maps and device-wide
/// library calls issued by the host (an empty map launches nothing), and
/// copies between host and device memory, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StaticCount {
    /// Kernel launches.
    pub launches: u64,
    /// Host to device bytes.
    pub to_device_bytes: u64,
    /// Device to host bytes.
    pub to_host_bytes: u64,
}

impl StaticCount {
    /// Bytes moved between host and device, both directions (as
    /// [`RunReport::transfer_bytes`](crate::RunReport::transfer_bytes)).
    pub fn transfer_bytes(&self) -> u64 {
        self.to_device_bytes + self.to_host_bytes
    }
}

/// Why a program's counts cannot be known without running it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotCountable {
    /// Control flow or a copy's size reads a container the run computes.
    #[error("{at}: {what} reads `{data}`, which the run computes")]
    DataDependent {
        /// The block, state or node.
        at: String,
        /// What reads it.
        what: String,
        /// The container.
        data: String,
    },
    /// A construct whose count needs the run (a host map around device work).
    #[error("{at}: {what}")]
    Unsupported {
        /// The block, state or node.
        at: String,
        /// What it is.
        what: String,
    },
    /// An expression that cannot be evaluated (an undefined symbol, an overflow).
    #[error("{at}: {error}")]
    Eval {
        /// The block, state or node.
        at: String,
        /// The error.
        error: EvalError,
    },
    /// More loop iterations and states than [`STEP_LIMIT`].
    #[error("more than {STEP_LIMIT} loop iterations and states")]
    StepLimit,
}

/// The most loop iterations and states one count walks.
pub const STEP_LIMIT: u64 = 200_000_000;

/// Counts the launches and host <-> device bytes of one run of `sdfg` with
/// these symbol values. `scalars` gives the values of integer scalar
/// arguments; interstate code may read those that the program never writes.
/// Everything else it reads is data, and makes the count
/// [`NotCountable::DataDependent`].
pub fn count_statically(
    sdfg: &Sdfg,
    symbols: &BTreeMap<String, i64>,
    scalars: &BTreeMap<String, i64>,
) -> Result<StaticCount, NotCountable> {
    let written = written_containers(sdfg);
    let readable = scalars
        .iter()
        .filter(|(name, _)| {
            !written.contains(name.as_str())
                && sdfg.containers.get(*name).is_some_and(|d| !d.is_view())
        })
        .map(|(n, v)| (n.clone(), *v))
        .collect();
    let spaces = sdfg
        .containers
        .iter()
        .map(|(name, d)| (name.clone(), d.storage.side().unwrap_or(Side::Host)))
        .collect();
    let mut level = Level {
        sdfg,
        env: Env {
            symbols: symbols.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            scalars: readable,
            unreadable: RefCell::new(None),
        },
        spaces,
        path: sdfg.name.clone(),
    };
    let mut counter = Counter::default();
    counter.region(&mut level, &sdfg.body)?;
    Ok(counter.count)
}

/// Containers some state of `sdfg` (not of a nested SDFG) writes: an access
/// node with an incoming edge, or the origin of a view.
fn written_containers(sdfg: &Sdfg) -> std::collections::BTreeSet<&str> {
    let mut out = std::collections::BTreeSet::new();
    let mut stack = vec![&sdfg.body];
    while let Some(region) = stack.pop() {
        for block in &region.blocks {
            match &block.kind {
                BlockKind::State(state) => {
                    for (id, node) in state.nodes() {
                        if let Node::Access(a) = node
                            && state.in_edges(id).next().is_some()
                        {
                            out.insert(a.data.as_str());
                        }
                    }
                    for (_, _, _, e) in state.edges() {
                        let view = e.src_conn.as_deref() == Some(VIEW_CONNECTOR)
                            || e.dst_conn.as_deref() == Some(VIEW_CONNECTOR);
                        if let (true, Some(m)) = (view, &e.memlet) {
                            out.insert(m.data.as_str());
                        }
                    }
                }
                BlockKind::Loop(l) => stack.push(&l.body),
                BlockKind::Conditional(c) => {
                    stack.extend(c.branches.iter().map(|(_, r)| r));
                    stack.extend(&c.otherwise);
                }
                BlockKind::Break | BlockKind::Continue | BlockKind::Return => {}
            }
        }
    }
    out
}

/// Symbol values, and the scalars interstate code may read.
struct Env {
    symbols: HashMap<String, i64>,
    scalars: HashMap<String, i64>,
    /// The container an evaluation could not read, for the error.
    unreadable: RefCell<Option<String>>,
}

impl SymEnv for Env {
    fn symbol(&self, name: &str) -> Option<i64> {
        self.symbols.get(name).copied()
    }

    fn read(&self, data: &str, index: &[i64]) -> Option<i64> {
        match self.scalars.get(data) {
            Some(v) if index.iter().all(|&i| i == 0) => Some(*v),
            _ => {
                *self.unreadable.borrow_mut() = Some(data.to_owned());
                None
            }
        }
    }
}

/// One SDFG being walked: its environment and where its containers live.
struct Level<'s> {
    sdfg: &'s Sdfg,
    env: Env,
    spaces: HashMap<String, Side>,
    path: String,
}

impl Level<'_> {
    fn eval(&self, e: &SymExpr, at: &str, what: &str) -> Result<i64, NotCountable> {
        e.eval(&self.env)
            .map_err(|error| self.error(error, at, what))
    }

    fn error(&self, error: EvalError, at: &str, what: &str) -> NotCountable {
        let at = format!("{}: {at}", self.path);
        match (error, self.env.unreadable.borrow_mut().take()) {
            (EvalError::UnreadableData { data, .. }, _) | (_, Some(data)) => {
                NotCountable::DataDependent {
                    at,
                    what: what.to_owned(),
                    data,
                }
            }
            (error, None) => NotCountable::Eval { at, error },
        }
    }

    fn assign(&mut self, symbol: &str, value: &SymExpr, at: &str) -> Result<(), NotCountable> {
        let v = self.eval(value, at, &format!("the assignment of `{symbol}`"))?;
        self.env.symbols.insert(symbol.to_owned(), v);
        Ok(())
    }

    /// Elements of a subset: the product of its ranges' lengths (an empty
    /// range has none).
    fn elements(&self, s: &Subset, at: &str) -> Result<u64, NotCountable> {
        let mut n = 1u64;
        for r in &s.ranges {
            let len = self.eval(&r.num_elements(), at, "the size of a copy")?;
            n = n.saturating_mul(u64::try_from(len).unwrap_or(0));
        }
        Ok(n)
    }

    /// Where `data` lives, seen from `state`: a view lives where its origin
    /// does (the view edge of one of its access nodes says which).
    fn space(&self, state: &State, data: &str, at: &str) -> Result<Side, NotCountable> {
        let mut name = data.to_owned();
        for _ in 0..=self.sdfg.containers.len() {
            let Some(desc) = self.sdfg.containers.get(&name) else {
                return Err(self.unsupported(at, format!("`{name}` is no container here")));
            };
            if !desc.is_view() {
                return Ok(self.spaces.get(&name).copied().unwrap_or(Side::Host));
            }
            name = view_origin(state, &name)
                .ok_or_else(|| self.unsupported(at, format!("the view `{name}` has no origin")))?;
        }
        Err(self.unsupported(at, format!("the views of `{data}` form a cycle")))
    }

    fn unsupported(&self, at: &str, what: String) -> NotCountable {
        NotCountable::Unsupported {
            at: format!("{}: {at}", self.path),
            what,
        }
    }
}

/// The container a view's access node in `state` aliases.
fn view_origin(state: &State, view: &str) -> Option<String> {
    state.nodes().find_map(|(id, n)| match n {
        Node::Access(a) if a.data == view => state
            .in_edges(id)
            .find(|(_, _, e)| e.dst_conn.as_deref() == Some(VIEW_CONNECTOR))
            .or_else(|| {
                state
                    .out_edges(id)
                    .find(|(_, _, e)| e.src_conn.as_deref() == Some(VIEW_CONNECTOR))
            })
            .and_then(|(_, _, e)| e.memlet.as_ref().map(|m| m.data.clone())),
        _ => None,
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Flow {
    Next,
    Break,
    Continue,
    Return,
}

#[derive(Default)]
struct Counter {
    count: StaticCount,
    steps: u64,
}

impl Counter {
    fn step(&mut self) -> Result<(), NotCountable> {
        self.steps += 1;
        if self.steps > STEP_LIMIT {
            return Err(NotCountable::StepLimit);
        }
        Ok(())
    }

    fn region(&mut self, level: &mut Level<'_>, region: &Region) -> Result<Flow, NotCountable> {
        for block in &region.blocks {
            let at = block.label.as_str();
            let flow = match &block.kind {
                BlockKind::State(s) => {
                    self.step()?;
                    self.state(level, s, at)?;
                    Flow::Next
                }
                BlockKind::Loop(l) => {
                    if let (Some(v), Some(init)) = (&l.variable, &l.init) {
                        level.assign(v, init, at)?;
                    }
                    loop {
                        let go = l
                            .condition
                            .eval(&level.env)
                            .map_err(|e| level.error(e, at, "the loop's condition"))?;
                        if !go {
                            break;
                        }
                        self.step()?;
                        match self.region(level, &l.body)? {
                            Flow::Break => break,
                            Flow::Return => return Ok(Flow::Return),
                            Flow::Next | Flow::Continue => {}
                        }
                        if let (Some(v), Some(update)) = (&l.variable, &l.update) {
                            level.assign(v, update, at)?;
                        }
                    }
                    Flow::Next
                }
                BlockKind::Conditional(c) => {
                    let mut taken = c.otherwise.as_ref();
                    for (cond, body) in &c.branches {
                        let yes = cond
                            .eval(&level.env)
                            .map_err(|e| level.error(e, at, "a branch's condition"))?;
                        if yes {
                            taken = Some(body);
                            break;
                        }
                    }
                    match taken {
                        Some(body) => self.region(level, body)?,
                        None => Flow::Next,
                    }
                }
                BlockKind::Break => Flow::Break,
                BlockKind::Continue => Flow::Continue,
                BlockKind::Return => Flow::Return,
            };
            if flow != Flow::Next {
                return Ok(flow);
            }
            for a in &block.transition.assignments {
                level.assign(&a.symbol, &a.value, at)?;
            }
        }
        Ok(Flow::Next)
    }

    /// A state the host runs: its top-level device maps and device-wide
    /// library calls launch, its copies between the two memories move
    /// bytes, and its nested SDFGs run on the host in turn.
    fn state(
        &mut self,
        level: &mut Level<'_>,
        state: &State,
        at: &str,
    ) -> Result<(), NotCountable> {
        let tree = state
            .scope_tree()
            .map_err(|e| level.unsupported(at, format!("an invalid state ({e})")))?;
        for id in tree.children(None) {
            match &state.graph[id] {
                Node::MapEntry(m) if m.map.schedule.is_launch() => {
                    let mut empty = false;
                    for r in &m.map.ranges {
                        let what = "a kernel's range";
                        let (b, e, s) = (
                            level.eval(&r.begin, at, what)?,
                            level.eval(&r.end, at, what)?,
                            level.eval(&r.step, at, what)?,
                        );
                        empty |= (s > 0 && b > e) || (s < 0 && b < e);
                    }
                    if !empty {
                        self.count.launches += 1;
                    }
                }
                Node::MapEntry(m) if !only_host_code(state, &tree, id) => {
                    return Err(level.unsupported(
                        at,
                        format!(
                            "the host map `{}` holds more than tasklets: its launches and copies are per point",
                            m.map.label
                        ),
                    ));
                }
                Node::Library(l) if l.schedule == Schedule::DeviceKernel => {
                    self.count.launches += 1;
                }
                Node::NestedSdfg(n) => self.nested(level, state, id, n, at)?,
                Node::Access(a) => self.copies(level, state, id, &a.data, at)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// The copies into an access node (from another access node, or
    /// through a scope boundary from a different container) and out of it
    /// through a scope boundary, as the simulator's plan makes them.
    fn copies(
        &mut self,
        level: &Level<'_>,
        state: &State,
        id: NodeId,
        data: &str,
        at: &str,
    ) -> Result<(), NotCountable> {
        let mut copies: Vec<(&str, &str, &Memlet)> = Vec::new();
        for (_, src, e) in state.in_edges(id) {
            let Some(m) = &e.memlet else { continue };
            if e.dst_conn.as_deref() == Some(VIEW_CONNECTOR) {
                continue;
            }
            match &state.graph[src] {
                Node::Access(a) if e.src_conn.as_deref() != Some(VIEW_CONNECTOR) => {
                    copies.push((&a.data, data, m));
                }
                Node::MapEntry(_) | Node::MapExit(_) if m.data != data => {
                    copies.push((&m.data, data, m));
                }
                _ => {}
            }
        }
        for (_, dst, e) in state.out_edges(id) {
            let Some(m) = &e.memlet else { continue };
            if e.src_conn.as_deref() == Some(VIEW_CONNECTOR) {
                continue;
            }
            if matches!(state.graph[dst], Node::MapEntry(_) | Node::MapExit(_)) && m.data != data {
                copies.push((data, &m.data, m));
            }
        }
        for (from, to, m) in copies {
            let (src_space, dst_space) =
                (level.space(state, from, at)?, level.space(state, to, at)?);
            if src_space == dst_space {
                continue;
            }
            let other = if m.data == from { to } else { from };
            let other_shape = level
                .sdfg
                .containers
                .get(other)
                .map(|d| d.shape())
                .unwrap_or_default();
            let (src_subset, _) = m.copy_subsets(from, &other_shape);
            let dtype = level
                .sdfg
                .containers
                .get(to)
                .ok_or_else(|| level.unsupported(at, format!("`{to}` is no container here")))?
                .dtype;
            let bytes = level
                .elements(&src_subset, at)?
                .saturating_mul(dtype.size_bytes());
            if src_space == Side::Host {
                self.count.to_device_bytes += bytes;
            } else {
                self.count.to_host_bytes += bytes;
            }
        }
        Ok(())
    }

    /// A nested SDFG the host runs: its symbols are the mapping's values,
    /// its arguments live where the outer containers bound to them do.
    fn nested(
        &mut self,
        level: &Level<'_>,
        state: &State,
        id: NodeId,
        n: &sdfg_ir::NestedSdfg,
        at: &str,
    ) -> Result<(), NotCountable> {
        let mut symbols = HashMap::new();
        for (inner, outer) in &n.symbol_mapping {
            let what = format!("the value of `{inner}` in `{}`", n.label);
            symbols.insert(inner.clone(), level.eval(outer, at, &what)?);
        }
        let mut bound: HashMap<&str, &str> = HashMap::new();
        for (_, _, e) in state.in_edges(id) {
            if let (Some(c), Some(m)) = (&e.dst_conn, &e.memlet) {
                bound.insert(c, &m.data);
            }
        }
        for (_, _, e) in state.out_edges(id) {
            if let (Some(c), Some(m)) = (&e.src_conn, &e.memlet) {
                bound.insert(c, &m.data);
            }
        }
        let mut spaces = HashMap::new();
        for (name, desc) in &n.sdfg.containers {
            let space = match bound.get(name.as_str()) {
                Some(outer) if !desc.transient => level.space(state, outer, at)?,
                _ => desc.storage.side().unwrap_or(Side::Host),
            };
            spaces.insert(name.clone(), space);
        }
        let mut inner = Level {
            sdfg: &n.sdfg,
            env: Env {
                symbols,
                scalars: HashMap::new(),
                unreadable: RefCell::new(None),
            },
            spaces,
            path: format!("{}/{}", level.path, n.sdfg.name),
        };
        self.region(&mut inner, &n.sdfg.body)?;
        Ok(())
    }
}

/// Whether the scope of the host map `entry` holds only tasklets and
/// access nodes connected to them: code whose launches and copies are none,
/// whatever its points.
fn only_host_code(state: &State, tree: &sdfg_ir::ScopeTree, entry: NodeId) -> bool {
    let exit = state.exit_of(entry);
    let inside = |id: NodeId| tree.ancestors(id).contains(&entry);
    state.nodes().all(|(id, node)| {
        if !inside(id) || Some(id) == exit {
            return true;
        }
        match node {
            Node::Tasklet(_) => true,
            Node::Access(_) => state
                .in_edges(id)
                .map(|(_, s, _)| s)
                .chain(state.out_edges(id).map(|(_, d, _)| d))
                .all(|other| matches!(state.graph[other], Node::Tasklet(_))),
            _ => false,
        }
    })
}
