//! A builder that makes SDFGs in a few readable lines per node.
//!
//! Shapes, subsets, ranges and conditions are written in their text form
//! (`"N, M"`, `"A[i, 0:N]"`, `"i = 0:N"`, `"i < N"`), so a test or a frontend
//! reads like the program it builds. Malformed text does not panic: the
//! builder records the error, keeps going, and [`SdfgBuilder::build`] returns
//! every error with the text that caused it.
//!
//! ```
//! use sdfg_ir::builder::SdfgBuilder;
//! use sdfg_ir::code::{Expr, Stmt};
//! use sdfg_ir::{Connector, DType, Schedule};
//!
//! let mut b = SdfgBuilder::new("scale");
//! b.symbol("N").array("x", DType::Float64, "N").array("y", DType::Float64, "N");
//! b.state("compute", |s| {
//!     let x = s.access("x");
//!     let y = s.access("y");
//!     let (entry, exit) = s.map("scale", "i = 0:N", Schedule::Default);
//!     let t = s.tasklet(
//!         "mul",
//!         vec![Connector::scalar("a", DType::Float64)],
//!         vec![Connector::scalar("b", DType::Float64)],
//!         vec![Stmt::assign("b", Expr::var("a") * Expr::f64(2.0))],
//!     );
//!     s.path(&[x, entry, t], None, Some("a"), "x[i]");
//!     s.path(&[t, exit, y], Some("b"), None, "y[i]");
//! });
//! let sdfg = b.build().unwrap();
//! assert!(sdfg_ir::validate(&sdfg).is_ok());
//! ```

use crate::code::Stmt;
use crate::control::{Assignment, BlockKind, ConditionalBlock, ControlBlock, LoopBlock, Region};
use crate::data::DataDesc;
use crate::dtype::DType;
use crate::memlet::{Memlet, Range, Subset};
use crate::node::{
    Connector, EdgeId, HostCallback, LibraryNode, LibraryOp, MAP_IN_PREFIX, MAP_OUT_PREFIX, Map,
    MapEntry, MapExit, NestedSdfg, Node, NodeId, Tasklet,
};
use crate::placement::Schedule;
use crate::propagate::propagate_memlet;
use crate::sdfg::Sdfg;
use crate::state::State;
use crate::symbolic::{ParseError, SymCond, SymExpr};
use std::collections::BTreeMap;
use std::fmt;

/// A problem found while building: which text could not be understood, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{context} {}: {reason}", crate::quote(.text))]
pub struct BuildError {
    /// What the text was meant to be (`"subset"`, `"memlet"`, ...).
    pub context: &'static str,
    /// The text.
    pub text: String,
    /// What is wrong with it.
    pub reason: String,
}

/// All problems found while building an SDFG.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildErrors(pub Vec<BuildError>);

impl fmt::Display for BuildErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for BuildErrors {}

fn record<T>(
    errors: &mut Vec<BuildError>,
    context: &'static str,
    text: &str,
    r: Result<T, ParseError>,
) -> Option<T> {
    r.map_err(|e| {
        errors.push(BuildError {
            context,
            text: text.to_owned(),
            reason: e.to_string(),
        })
    })
    .ok()
}

/// Parses a comma-separated list of expressions (a shape), recording errors.
fn parse_shape(errors: &mut Vec<BuildError>, text: &str) -> Vec<SymExpr> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    let subset = record(errors, "shape", text, Subset::parse(text)).unwrap_or_default();
    subset.ranges.into_iter().map(|r| r.begin).collect()
}

/// Parses `data[subset]`, recording errors.
pub(crate) fn parse_memlet_text(text: &str) -> Result<Memlet, ParseError> {
    let text = text.trim();
    let Some(open) = text.find('[') else {
        // A bare name is the whole container; the caller completes the subset.
        return Ok(Memlet::new(text, Subset::default()));
    };
    if !text.ends_with(']') {
        return Err(ParseError::custom(
            text.len(),
            "`]` at the end of the memlet",
        ));
    }
    let data = text[..open].trim();
    let subset = Subset::parse(&text[open + 1..text.len() - 1]).map_err(|e| e.shifted(open + 1))?;
    Ok(Memlet::new(data, subset))
}

/// Anything the builder accepts where a memlet is expected: text such as
/// `"A[i, 0:N]"` (a bare `"A"` means all of `A`), text with write-conflict
/// resolution (`("y[i]", Wcr::Sum)`), or a [`Memlet`].
pub trait IntoMemlet {
    /// Converts, recording problems in `errors`.
    fn into_memlet(
        self,
        errors: &mut Vec<BuildError>,
        containers: &BTreeMap<String, DataDesc>,
    ) -> Option<Memlet>;
}

impl IntoMemlet for Memlet {
    fn into_memlet(
        self,
        _: &mut Vec<BuildError>,
        _: &BTreeMap<String, DataDesc>,
    ) -> Option<Memlet> {
        Some(self)
    }
}

impl IntoMemlet for &str {
    fn into_memlet(
        self,
        errors: &mut Vec<BuildError>,
        containers: &BTreeMap<String, DataDesc>,
    ) -> Option<Memlet> {
        let m = record(errors, "memlet", self, parse_memlet_text(self))?;
        if m.subset.rank() == 0 {
            return match containers.get(&m.data) {
                Some(desc) => Some(Memlet::full(m.data, &desc.shape())),
                None => {
                    errors.push(BuildError {
                        context: "memlet",
                        text: self.to_owned(),
                        reason: "a bare name needs a declared container".to_owned(),
                    });
                    None
                }
            };
        }
        Some(m)
    }
}

impl IntoMemlet for (&str, crate::memlet::Wcr) {
    fn into_memlet(
        self,
        errors: &mut Vec<BuildError>,
        containers: &BTreeMap<String, DataDesc>,
    ) -> Option<Memlet> {
        self.0
            .into_memlet(errors, containers)
            .map(|m| m.with_wcr(self.1))
    }
}

/// Builds an [`Sdfg`]: declarations, then blocks in program order.
pub struct SdfgBuilder {
    sdfg: Sdfg,
    /// Regions being filled; the innermost is last. The root region is `stack[0]`.
    stack: Vec<Region>,
    errors: Vec<BuildError>,
}

impl SdfgBuilder {
    /// Starts an SDFG named `name`.
    pub fn new(name: impl Into<String>) -> SdfgBuilder {
        SdfgBuilder {
            sdfg: Sdfg::new(name),
            stack: vec![Region::default()],
            errors: Vec::new(),
        }
    }

    /// Declares an `int64` symbol that is an argument (a problem size).
    pub fn symbol(&mut self, name: &str) -> &mut Self {
        self.symbol_typed(name, DType::Int64)
    }

    /// Declares a symbol of the given integer type that is an argument.
    pub fn symbol_typed(&mut self, name: &str, dtype: DType) -> &mut Self {
        self.sdfg.symbols.insert(name.to_owned(), dtype);
        self.sdfg.arguments.push(name.to_owned());
        self
    }

    /// Declares an `int64` symbol that is not an argument (a loop variable, or
    /// a symbol assigned on a transition).
    pub fn local_symbol(&mut self, name: &str) -> &mut Self {
        self.sdfg.symbols.insert(name.to_owned(), DType::Int64);
        self
    }

    /// Declares a container; non-transient containers become arguments, in declaration order.
    pub fn container(&mut self, name: &str, desc: DataDesc) -> &mut Self {
        if !desc.transient {
            self.sdfg.arguments.push(name.to_owned());
        }
        self.sdfg.containers.insert(name.to_owned(), desc);
        self
    }

    /// Declares a contiguous array argument with shape text such as `"N, M + 1"`.
    pub fn array(&mut self, name: &str, dtype: DType, shape: &str) -> &mut Self {
        let shape = parse_shape(&mut self.errors, shape);
        self.container(name, DataDesc::array(dtype, shape))
    }

    /// Declares a scalar argument.
    pub fn scalar(&mut self, name: &str, dtype: DType) -> &mut Self {
        self.container(name, DataDesc::scalar(dtype))
    }

    /// Declares a transient contiguous array.
    pub fn transient(&mut self, name: &str, dtype: DType, shape: &str) -> &mut Self {
        let shape = parse_shape(&mut self.errors, shape);
        self.container(name, DataDesc::array(dtype, shape).into_transient())
    }

    /// Declares a transient scalar.
    pub fn transient_scalar(&mut self, name: &str, dtype: DType) -> &mut Self {
        self.container(name, DataDesc::scalar(dtype).into_transient())
    }

    /// Parses an expression, recording errors (a malformed one becomes `0`).
    pub fn expr(&mut self, text: &str) -> SymExpr {
        record(&mut self.errors, "expression", text, SymExpr::parse(text))
            .unwrap_or_else(|| SymExpr::int(0))
    }

    /// Parses a condition, recording errors (a malformed one becomes `False`).
    pub fn cond(&mut self, text: &str) -> SymCond {
        record(&mut self.errors, "condition", text, SymCond::parse(text))
            .unwrap_or_else(|| SymCond::constant(false))
    }

    fn push_block(&mut self, label: &str, kind: BlockKind) -> &mut Self {
        if let Some(region) = self.stack.last_mut() {
            region.blocks.push(ControlBlock::new(label, kind));
        }
        self
    }

    fn nested_region(&mut self, f: impl FnOnce(&mut SdfgBuilder)) -> Region {
        self.stack.push(Region::default());
        f(self);
        self.stack.pop().unwrap_or_default()
    }

    /// Appends a state, filled by `f`.
    pub fn state(&mut self, label: &str, f: impl FnOnce(&mut StateBuilder<'_>)) -> &mut Self {
        let mut sb = StateBuilder {
            state: State::new(),
            containers: &self.sdfg.containers,
            errors: &mut self.errors,
        };
        f(&mut sb);
        let state = sb.state;
        self.push_block(label, BlockKind::State(state))
    }

    /// Appends an already built state.
    pub fn add_state(&mut self, label: &str, state: State) -> &mut Self {
        self.push_block(label, BlockKind::State(state))
    }

    /// Appends `for var in range(start, stop, step)` (the variable is declared
    /// as a local symbol), with the body built by `f`.
    pub fn for_loop(
        &mut self,
        label: &str,
        var: &str,
        start: &str,
        stop: &str,
        step: i64,
        f: impl FnOnce(&mut SdfgBuilder),
    ) -> &mut Self {
        self.local_symbol(var);
        let start = self.expr(start);
        let stop = self.expr(stop);
        let body = self.nested_region(f);
        let l = LoopBlock::for_range(var, start, stop, step, body);
        self.push_block(label, BlockKind::Loop(l))
    }

    /// Appends `while cond:` with the body built by `f`.
    pub fn while_loop(
        &mut self,
        label: &str,
        cond: &str,
        f: impl FnOnce(&mut SdfgBuilder),
    ) -> &mut Self {
        let cond = self.cond(cond);
        let body = self.nested_region(f);
        self.push_block(label, BlockKind::Loop(LoopBlock::while_loop(cond, body)))
    }

    /// Appends `if cond: then else: otherwise` (no else when `otherwise` is `None`).
    pub fn if_else(
        &mut self,
        label: &str,
        cond: &str,
        then: impl FnOnce(&mut SdfgBuilder),
        otherwise: Option<&dyn Fn(&mut SdfgBuilder)>,
    ) -> &mut Self {
        let cond = self.cond(cond);
        let then = self.nested_region(then);
        let otherwise = otherwise.map(|f| self.nested_region(f));
        self.push_block(
            label,
            BlockKind::Conditional(ConditionalBlock {
                branches: vec![(cond, then)],
                otherwise,
            }),
        )
    }

    /// Appends a `break`.
    pub fn break_(&mut self, label: &str) -> &mut Self {
        self.push_block(label, BlockKind::Break)
    }

    /// Appends a `continue`.
    pub fn continue_(&mut self, label: &str) -> &mut Self {
        self.push_block(label, BlockKind::Continue)
    }

    /// Appends a `return`.
    pub fn return_(&mut self, label: &str) -> &mut Self {
        self.push_block(label, BlockKind::Return)
    }

    /// Adds `symbol = value` to the transition after the last block of the current region.
    pub fn assign(&mut self, symbol: &str, value: &str) -> &mut Self {
        let value = self.expr(value);
        match self.stack.last_mut().and_then(|r| r.blocks.last_mut()) {
            Some(block) => block.transition.assignments.push(Assignment {
                symbol: symbol.to_owned(),
                value,
            }),
            None => self.errors.push(BuildError {
                context: "assignment",
                text: format!("{symbol} = {value}"),
                reason: "there is no block before it to leave".to_owned(),
            }),
        }
        self
    }

    /// Gives direct access to the SDFG under construction (for what the
    /// builder has no shorthand for).
    pub fn sdfg_mut(&mut self) -> &mut Sdfg {
        &mut self.sdfg
    }

    /// Finishes the SDFG, or returns every text that could not be parsed.
    pub fn build(mut self) -> Result<Sdfg, BuildErrors> {
        if !self.errors.is_empty() {
            return Err(BuildErrors(self.errors));
        }
        self.sdfg.body = self.stack.into_iter().next().unwrap_or_default();
        Ok(self.sdfg)
    }
}

/// Builds one state's dataflow graph. Obtained from [`SdfgBuilder::state`],
/// or standalone with [`StateBuilder::standalone`].
pub struct StateBuilder<'a> {
    state: State,
    containers: &'a BTreeMap<String, DataDesc>,
    errors: &'a mut Vec<BuildError>,
}

impl<'a> StateBuilder<'a> {
    /// A builder for a state outside an SDFG builder; `containers` resolves bare
    /// names in memlets and `errors` collects problems.
    pub fn standalone(
        containers: &'a BTreeMap<String, DataDesc>,
        errors: &'a mut Vec<BuildError>,
    ) -> StateBuilder<'a> {
        StateBuilder {
            state: State::new(),
            containers,
            errors,
        }
    }

    /// The state built so far.
    pub fn finish(self) -> State {
        self.state
    }

    /// Direct access to the state (for edits the builder has no shorthand for).
    pub fn state_mut(&mut self) -> &mut State {
        &mut self.state
    }

    /// Adds an access node.
    pub fn access(&mut self, data: &str) -> NodeId {
        self.state.add_access(data)
    }

    /// Adds a map scope with parameters written as `"i = 0:N, j = 0:M"`;
    /// returns `(entry, exit)`.
    pub fn map(&mut self, label: &str, params: &str, schedule: Schedule) -> (NodeId, NodeId) {
        let mut names = Vec::new();
        let mut ranges = Vec::new();
        for part in params.split(',').filter(|p| !p.trim().is_empty()) {
            match part.split_once('=') {
                Some((name, range)) => {
                    names.push(name.trim().to_owned());
                    let r = record(
                        self.errors,
                        "map range",
                        range,
                        range.trim().parse::<Range>(),
                    );
                    ranges.push(r.unwrap_or_else(|| Range::index(SymExpr::int(0))));
                }
                None => self.errors.push(BuildError {
                    context: "map parameter",
                    text: part.to_owned(),
                    reason: "expected `name = begin:stop[:step]`".to_owned(),
                }),
            }
        }
        self.map_with(Map {
            label: label.to_owned(),
            params: names,
            ranges,
            schedule,
        })
    }

    /// Adds a map scope from a [`Map`]; returns `(entry, exit)`.
    pub fn map_with(&mut self, map: Map) -> (NodeId, NodeId) {
        let label = map.label.clone();
        let entry = self.state.add_node(Node::MapEntry(MapEntry {
            map,
            in_connectors: Default::default(),
            out_connectors: Default::default(),
        }));
        let exit = self.state.add_node(Node::MapExit(MapExit {
            entry,
            label,
            in_connectors: Default::default(),
            out_connectors: Default::default(),
        }));
        (entry, exit)
    }

    /// Adds a tasklet.
    pub fn tasklet(
        &mut self,
        label: &str,
        inputs: Vec<Connector>,
        outputs: Vec<Connector>,
        body: Vec<Stmt>,
    ) -> NodeId {
        self.state.add_node(Node::Tasklet(Tasklet {
            label: label.to_owned(),
            inputs,
            outputs,
            body,
        }))
    }

    /// Adds one map around one tasklet and wires it to access nodes, like
    /// DaCe's `add_mapped_tasklet`: the shape most element-wise dataflow
    /// takes, written as one call instead of a map, a tasklet and a memlet
    /// path per connector.
    ///
    /// `inputs` are `(source access node, connector, innermost memlet)` and
    /// `outputs` `(connector, destination access node, innermost memlet)`;
    /// each becomes a [`path`](Self::path) through the map, so outer memlets
    /// are propagated. A tasklet without inputs (or outputs) is ordered inside
    /// the scope by an empty memlet, as the validator requires. Both the map
    /// and the tasklet are labelled `label`. Input memlets are text (reads
    /// carry no write-conflict resolution); outputs take anything
    /// [`IntoMemlet`], such as `("s[0]", Wcr::Sum)`, one form per call (to mix
    /// forms, pass [`Memlet`]s or add the write paths by hand). Returns
    /// `(entry, tasklet, exit)`.
    pub fn mapped_tasklet<O: IntoMemlet>(
        &mut self,
        label: &str,
        params: &str,
        schedule: Schedule,
        inputs: Vec<(NodeId, Connector, &str)>,
        body: Vec<Stmt>,
        outputs: Vec<(Connector, NodeId, O)>,
    ) -> (NodeId, NodeId, NodeId) {
        let (entry, exit) = self.map(label, params, schedule);
        let in_conns = inputs.iter().map(|(_, c, _)| c.clone()).collect();
        let out_conns = outputs.iter().map(|(c, _, _)| c.clone()).collect();
        let tasklet = self.tasklet(label, in_conns, out_conns, body);
        if inputs.is_empty() {
            self.empty_edge(entry, tasklet);
        }
        for (src, conn, memlet) in inputs {
            self.path(&[src, entry, tasklet], None, Some(&conn.name), memlet);
        }
        if outputs.is_empty() {
            self.empty_edge(tasklet, exit);
        }
        for (conn, dst, memlet) in outputs {
            self.path(&[tasklet, exit, dst], Some(&conn.name), None, memlet);
        }
        (entry, tasklet, exit)
    }

    /// Adds a library node with the default schedule.
    pub fn library(&mut self, label: &str, op: LibraryOp) -> NodeId {
        self.state.add_node(Node::Library(LibraryNode {
            label: label.to_owned(),
            op,
            schedule: Schedule::Default,
        }))
    }

    /// Adds a nested SDFG whose connectors are the inner containers `inputs`
    /// and `outputs`, with inner symbols bound as in `mapping` (`("M", "k")`).
    pub fn nested(
        &mut self,
        label: &str,
        sdfg: Sdfg,
        inputs: &[&str],
        outputs: &[&str],
        mapping: &[(&str, &str)],
    ) -> NodeId {
        let symbol_mapping = mapping
            .iter()
            .map(|(inner, outer)| {
                let e = record(self.errors, "symbol mapping", outer, SymExpr::parse(outer));
                ((*inner).to_owned(), e.unwrap_or_else(|| SymExpr::int(0)))
            })
            .collect();
        self.state.add_node(Node::NestedSdfg(NestedSdfg {
            label: label.to_owned(),
            sdfg: Box::new(sdfg),
            symbol_mapping,
            inputs: inputs.iter().map(|s| (*s).to_owned()).collect(),
            outputs: outputs.iter().map(|s| (*s).to_owned()).collect(),
        }))
    }

    /// Adds a host callback.
    pub fn callback(
        &mut self,
        label: &str,
        callee: &str,
        inputs: Vec<Connector>,
        outputs: Vec<Connector>,
    ) -> NodeId {
        self.state.add_node(Node::Callback(HostCallback {
            label: label.to_owned(),
            callee: callee.to_owned(),
            inputs,
            outputs,
        }))
    }

    /// Adds one edge. Returns `None` (and records why) if the memlet is malformed.
    pub fn edge(
        &mut self,
        src: NodeId,
        src_conn: Option<&str>,
        dst: NodeId,
        dst_conn: Option<&str>,
        memlet: impl IntoMemlet,
    ) -> Option<EdgeId> {
        let m = memlet.into_memlet(self.errors, self.containers)?;
        Some(self.state.add_edge(src, src_conn, dst, dst_conn, m))
    }

    /// Adds an empty memlet ordering `dst` after `src`.
    pub fn empty_edge(&mut self, src: NodeId, dst: NodeId) -> EdgeId {
        self.state.add_empty_edge(src, dst)
    }

    /// Connects a path of nodes through map scopes, like DaCe's `add_memlet_path`.
    ///
    /// `memlet` is the innermost memlet: the one next to the code node (the
    /// last edge of a read path that ends at a code node, the first edge of a
    /// write path that starts at one). Every map entry or exit on the way gets a
    /// fresh `IN_x`/`OUT_x` connector pair, and every outer edge carries the
    /// memlet propagated over the maps it crosses.
    pub fn path(
        &mut self,
        nodes: &[NodeId],
        src_conn: Option<&str>,
        dst_conn: Option<&str>,
        memlet: impl IntoMemlet,
    ) -> Vec<EdgeId> {
        let Some(inner) = memlet.into_memlet(self.errors, self.containers) else {
            return Vec::new();
        };
        if nodes.len() < 2 {
            self.errors.push(BuildError {
                context: "memlet path",
                text: inner.to_string(),
                reason: "a path needs at least two nodes".to_owned(),
            });
            return Vec::new();
        }
        let shape = self
            .containers
            .get(&inner.data)
            .map(DataDesc::shape)
            .unwrap_or_default();
        // A path that starts at a map exit or a code node writes; otherwise it reads.
        let writes = matches!(self.state.node(nodes[0]), Some(n) if n.is_code() || matches!(n, Node::MapExit(_)));
        // Memlets per edge, innermost first, then laid out in path order.
        let n_edges = nodes.len() - 1;
        let mut memlets = Vec::with_capacity(n_edges);
        let mut current = inner;
        memlets.push(current.clone());
        for k in 1..n_edges {
            // Edge k (counted from the inner end) crosses the scope node between it and edge k-1.
            let scope_node = if writes { nodes[k] } else { nodes[n_edges - k] };
            if let Some(map) = self.map_of(scope_node) {
                current = propagate_memlet(&current, &map, &shape);
            }
            memlets.push(current.clone());
        }
        if !writes {
            memlets.reverse();
        }
        let mut edges = Vec::with_capacity(n_edges);
        let mut next_src_conn = src_conn.map(str::to_owned);
        for (i, memlet) in memlets.into_iter().enumerate() {
            let (src, dst) = (nodes[i], nodes[i + 1]);
            let is_last = i + 1 == n_edges;
            let dst_c = if is_last {
                dst_conn.map(str::to_owned)
            } else {
                self.add_scope_connectors(dst, &memlet.data)
            };
            let e =
                self.state
                    .add_edge(src, next_src_conn.as_deref(), dst, dst_c.as_deref(), memlet);
            edges.push(e);
            next_src_conn = dst_c.map(|c| c.replacen(MAP_IN_PREFIX, MAP_OUT_PREFIX, 1));
        }
        edges
    }

    /// The map of a map entry or exit node.
    fn map_of(&self, node: NodeId) -> Option<Map> {
        match self.state.node(node)? {
            Node::MapEntry(e) => Some(e.map.clone()),
            Node::MapExit(x) => match self.state.node(x.entry)? {
                Node::MapEntry(e) => Some(e.map.clone()),
                _ => None,
            },
            _ => None,
        }
    }

    /// Adds a fresh `IN_x`/`OUT_x` pair on a map entry or exit and returns `IN_x`.
    fn add_scope_connectors(&mut self, node: NodeId, data: &str) -> Option<String> {
        let (ins, outs) = match self.state.graph.node_weight_mut(node)? {
            Node::MapEntry(e) => (&mut e.in_connectors, &mut e.out_connectors),
            Node::MapExit(x) => (&mut x.in_connectors, &mut x.out_connectors),
            _ => return None,
        };
        let mut suffix = data.to_owned();
        let mut k = 1;
        while ins.contains(&format!("{MAP_IN_PREFIX}{suffix}")) {
            suffix = format!("{data}_{k}");
            k += 1;
        }
        let cin = format!("{MAP_IN_PREFIX}{suffix}");
        ins.insert(cin.clone());
        outs.insert(format!("{MAP_OUT_PREFIX}{suffix}"));
        Some(cin)
    }
}
