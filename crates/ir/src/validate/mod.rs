//! The validator: checks every structural rule and reports *all* violations.
//!
//! [`validate`] walks an SDFG once, collecting errors instead of stopping at
//! the first, and returns a [`Validated`] token on success. Code that needs a
//! well-formed SDFG (code generation, the interpreter) takes the token, so it
//! can rely on the rules below and is promised not to fail on them.
//!
//! Rules, by location:
//! - SDFG: names are identifiers; symbols are integers; a name is not both a
//!   symbol and a container; arguments exist, are not repeated, are not
//!   transient, and cover every non-transient container; block labels are unique.
//! - Containers: layouts use declared symbols, strides match the shape, no
//!   negative constant extents, views are transient, arguments of the
//!   top-level SDFG are not in device-shared or register storage.
//! - Blocks: `break`/`continue` only inside loops; conditionals have branches;
//!   `for` loops have a declared variable, an init and an update; transitions
//!   assign only declared symbols, never containers; interstate code uses
//!   declared symbols and reads existing integer or boolean scalars and arrays
//!   reachable from where it runs (the host, or the device for an SDFG nested
//!   in a kernel).
//! - Nodes: access nodes name containers and have at least one edge; map scopes are well nested (acyclic
//!   graph, consistent scopes, one exit per entry); map parameters are fresh
//!   identifiers with non-zero steps and defined range symbols; scope
//!   connectors come in `IN_x`/`OUT_x` pairs; every input connector has exactly
//!   one edge and every output connector at least one; tasklet code
//!   type-checks and writes every output; library operands have the right
//!   ranks; nested SDFGs connect exactly their non-transient containers,
//!   write none that is only an input, map every symbol argument to defined
//!   outer symbols, and are valid themselves;
//!   views have exactly one view edge; schedules nest (no kernel in a kernel,
//!   thread-block maps only in kernels); host callbacks are never on the
//!   device; device-shared memory is only used inside kernels.
//! - Edges: connectors exist; memlets name existing containers, match the
//!   access node they touch, have the container's rank, stay in bounds where
//!   that is decidable symbolically, use defined symbols, put write-conflict
//!   resolution only on writes, and agree with connector types; and storage is
//!   reachable in *both* directions (also for data passed directly between
//!   two code nodes; the boundary of a host map that launches kernels
//!   carries their data, so it counts as device code): device code (kernels, device-wide
//!   library calls, anything inside them) never touches host storage, and
//!   host code never touches device storage. DaCe finds the second kind only
//!   at code generation, as "Illegal copy!". The second rule applies once
//!   schedules are decided ([`Sdfg::schedules_decided`]): before that, an
//!   argument in device storage is data already on the GPU (DaCe's
//!   `GPU_Global` arguments), which the offload pass stages for whatever
//!   host code reads it.

mod error;

pub use error::{
    BlockError, ContainerError, EdgeError, NodeError, SdfgError, ValidationError, ValidationErrors,
};

use crate::code::{TypeChecker, written_names};
use crate::control::{BlockKind, ControlBlock, Transition};
use crate::data::{DataDesc, DataKind};
use crate::memlet::{Memlet, Subset};
use crate::node::{
    Connector, LibraryOp, MAP_IN_PREFIX, MAP_OUT_PREFIX, Node, NodeId, VIEW_CONNECTOR,
};
use crate::placement::{Schedule, Side, Storage};
use crate::propagate::propagate_subset;
use crate::sdfg::{BlockContext, BlockPath, Sdfg};
use crate::state::{ScopeError, ScopeTree, State};
use crate::symbolic::{Atom, CondView, SymCond, SymExpr};
use std::collections::{BTreeMap, BTreeSet};

/// Proof that an SDFG passed validation. Consumers that rely on validity take
/// this instead of a bare `&Sdfg`.
#[derive(Clone, Copy, Debug)]
pub struct Validated<'a> {
    sdfg: &'a Sdfg,
}

impl<'a> Validated<'a> {
    /// The validated SDFG.
    pub fn sdfg(&self) -> &'a Sdfg {
        self.sdfg
    }
}

/// An SDFG together with the proof that it is valid: what a pipeline of
/// passes hands to code generation, so that the emitter does not validate
/// again what the last pass's check has just accepted (on large programs
/// each validation costs as much as a pass).
///
/// The proof survives only what cannot break it: the SDFG is reachable
/// read-only (through `Deref`), and [`ValidSdfg::update`] validates again
/// after a change.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidSdfg(Sdfg);

/// Why [`ValidSdfg::update`] gave no valid SDFG.
#[derive(Debug)]
pub enum UpdateError<E> {
    /// The change itself failed (a pass refused the SDFG).
    Failed(E),
    /// The change left the SDFG invalid.
    Invalid(ValidationErrors),
    /// The change reported no change but made one (checked in debug builds
    /// only: the claim is what lets release builds skip validating).
    Unreported,
}

impl ValidSdfg {
    /// Validates `sdfg` and keeps it with its proof.
    pub fn new(sdfg: Sdfg) -> Result<ValidSdfg, ValidationErrors> {
        validate(&sdfg)?;
        Ok(ValidSdfg(sdfg))
    }

    /// The borrowed proof, for the consumers that take one.
    pub fn validated(&self) -> Validated<'_> {
        Validated { sdfg: &self.0 }
    }

    /// The SDFG, giving up the proof (to change it freely).
    pub fn into_inner(self) -> Sdfg {
        self.0
    }

    /// Changes the SDFG through `f`, which says whether it changed anything
    /// (as every pass reports its changes): the SDFG is validated again only
    /// when it did. A change that reports none would keep a proof it may
    /// have broken, so debug builds (the tests, the corpus, the fuzzer)
    /// compare the SDFG's JSON before and after to hold `f` to its word.
    pub fn update<E>(
        self,
        f: impl FnOnce(&mut Sdfg) -> Result<bool, E>,
    ) -> Result<(ValidSdfg, bool), UpdateError<E>> {
        let mut sdfg = self.0;
        let before = cfg!(debug_assertions).then(|| sdfg.to_json());
        let changed = f(&mut sdfg).map_err(UpdateError::Failed)?;
        if changed {
            return ValidSdfg::new(sdfg)
                .map(|v| (v, true))
                .map_err(UpdateError::Invalid);
        }
        if before.is_some_and(|b| b != sdfg.to_json()) {
            return Err(UpdateError::Unreported);
        }
        Ok((ValidSdfg(sdfg), false))
    }
}

impl std::ops::Deref for ValidSdfg {
    type Target = Sdfg;

    fn deref(&self) -> &Sdfg {
        &self.0
    }
}

/// Validates an SDFG, returning every violation found.
pub fn validate(sdfg: &Sdfg) -> Result<Validated<'_>, ValidationErrors> {
    let mut errors = Vec::new();
    Validator {
        sdfg,
        path: sdfg.name.clone(),
        base: Side::Host,
        root: true,
        grid: false,
        decided: sdfg.schedules_decided(),
        memory: sdfg.memory,
        errors: &mut errors,
    }
    .run();
    if errors.is_empty() {
        Ok(Validated { sdfg })
    } else {
        Err(ValidationErrors(errors))
    }
}

/// Whether `s` is a valid identifier (C and Python agree on this subset).
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

struct Validator<'a, 'e> {
    sdfg: &'a Sdfg,
    /// Path of SDFG names for messages (`outer/inner`).
    path: String,
    /// Where the SDFG runs: `Device` for an SDFG nested inside device code.
    base: Side,
    /// Whether this is the SDFG being validated (called by the host program)
    /// rather than one nested in it (called by the enclosing code).
    root: bool,
    /// Whether this SDFG is the body of a persistent kernel
    /// ([`Schedule::DevicePersistent`]): its top-level maps may then be
    /// device kernels, whose iterations the kernel's threads share.
    grid: bool,
    /// Whether the schedules of the SDFG being validated are decided
    /// ([`Sdfg::schedules_decided`]). Where they are not, nothing runs on a
    /// device yet and host code touching device storage is data the offload
    /// pass must stage, not an error.
    decided: bool,
    /// The root SDFG's memory model: which storage each side may touch.
    memory: crate::MemoryModel,
    errors: &'e mut Vec<ValidationError>,
}

/// Everything the per-node and per-edge checks of one state need.
struct StateCx<'s> {
    label: &'s str,
    state: &'s State,
    scopes: ScopeTree,
}

impl<'a> Validator<'a, '_> {
    fn run(&mut self) {
        self.check_sdfg();
        for (name, desc) in &self.sdfg.containers {
            self.check_container(name, desc);
        }
        let sdfg = self.sdfg;
        sdfg.walk_blocks(&mut |path, ctx, block| self.check_block(path, ctx, block));
    }

    // -- SDFG level ------------------------------------------------------

    fn sdfg_error(&mut self, error: SdfgError) {
        self.errors.push(ValidationError::Sdfg {
            sdfg: self.path.clone(),
            error,
        });
    }

    fn check_sdfg(&mut self) {
        let sdfg = self.sdfg;
        if !is_identifier(&sdfg.name) {
            self.sdfg_error(SdfgError::InvalidName {
                name: sdfg.name.clone(),
                what: "SDFG",
            });
        }
        for (name, dtype) in &sdfg.symbols {
            if !is_identifier(name) {
                self.sdfg_error(SdfgError::InvalidName {
                    name: name.clone(),
                    what: "symbol",
                });
            }
            if !dtype.is_integer() {
                self.sdfg_error(SdfgError::NonIntegerSymbol {
                    name: name.clone(),
                    dtype: *dtype,
                });
            }
            if sdfg.containers.contains_key(name) {
                self.sdfg_error(SdfgError::NameClash { name: name.clone() });
            }
        }
        for name in sdfg.containers.keys() {
            if !is_identifier(name) {
                self.sdfg_error(SdfgError::InvalidName {
                    name: name.clone(),
                    what: "container",
                });
            }
        }
        let mut seen = BTreeSet::new();
        for arg in &sdfg.arguments {
            if !seen.insert(arg.as_str()) {
                self.sdfg_error(SdfgError::DuplicateArgument { name: arg.clone() });
            }
            match sdfg.containers.get(arg) {
                Some(desc) if desc.transient => {
                    self.sdfg_error(SdfgError::TransientArgument { name: arg.clone() })
                }
                Some(_) => {}
                None if sdfg.symbols.contains_key(arg) => {}
                None => self.sdfg_error(SdfgError::UnknownArgument { name: arg.clone() }),
            }
        }
        for (name, desc) in &sdfg.containers {
            if !desc.transient && !seen.contains(name.as_str()) {
                self.sdfg_error(SdfgError::MissingArgument { name: name.clone() });
            }
        }
        let mut labels: BTreeMap<&str, usize> = BTreeMap::new();
        sdfg.walk_blocks(&mut |_, _, b| *labels.entry(b.label.as_str()).or_default() += 1);
        for (label, count) in labels {
            if count > 1 {
                self.sdfg_error(SdfgError::DuplicateLabel {
                    label: label.to_owned(),
                });
            }
        }
    }

    fn check_container(&mut self, name: &str, desc: &DataDesc) {
        let mut errs = Vec::new();
        for symbol in desc.free_symbols() {
            if !self.sdfg.symbols.contains_key(&symbol) {
                errs.push(ContainerError::UndefinedSymbol { symbol });
            }
        }
        if let Some(layout) = desc.layout()
            && layout.shape.len() != layout.strides.len()
        {
            errs.push(ContainerError::StridesRank {
                shape: layout.shape.len(),
                strides: layout.strides.len(),
            });
        }
        if let Some(e) = desc.expressions().into_iter().find(|e| e.divides_by_zero()) {
            errs.push(ContainerError::DivisionByZero {
                expr: e.to_string(),
            });
        }
        for (dim, extent) in desc.shape().iter().enumerate() {
            if let Some(v) = extent.as_int().filter(|v| *v < 0) {
                errs.push(ContainerError::NegativeExtent { dim, extent: v });
            }
        }
        // An array's layout addresses its own allocation (a view's, the
        // memory of its origin, checked at the view edge). A negative
        // extent is reported above.
        if let DataKind::Array(layout) = &desc.kind
            && layout.shape.len() == layout.strides.len()
            && layout
                .shape
                .iter()
                .all(|e| e.as_int().is_none_or(|v| v >= 0))
            && let Err(e) = layout.check(desc.dtype.size_bytes())
        {
            errs.push(ContainerError::Layout(e));
        }
        if desc.is_view() && !desc.transient {
            errs.push(ContainerError::ViewNotTransient);
        }
        // Only the host program cannot pass such storage; the code around a
        // nested SDFG (a kernel passing a shared tile) can.
        if self.root
            && !desc.transient
            && matches!(desc.storage, Storage::DeviceShared | Storage::Register)
        {
            errs.push(ContainerError::ArgumentStorage {
                storage: desc.storage,
            });
        }
        for error in errs {
            self.errors.push(ValidationError::Container {
                sdfg: self.path.clone(),
                container: name.to_owned(),
                error,
            });
        }
    }

    // -- Control flow ----------------------------------------------------

    fn block_error(&mut self, path: &BlockPath, error: BlockError) {
        self.errors.push(ValidationError::Block {
            sdfg: self.path.clone(),
            block: path.join("/"),
            error,
        });
    }

    fn check_block(&mut self, path: &BlockPath, ctx: BlockContext, block: &'a ControlBlock) {
        match &block.kind {
            BlockKind::State(state) => self.check_state(&block.label, state),
            BlockKind::Loop(l) => {
                match &l.variable {
                    Some(v) => {
                        if !self.sdfg.symbols.contains_key(v) {
                            self.block_error(
                                path,
                                BlockError::UndeclaredLoopVariable { name: v.clone() },
                            );
                        }
                        if l.init.is_none() || l.update.is_none() {
                            self.block_error(path, BlockError::IncompleteLoop);
                        }
                    }
                    None if l.init.is_some() || l.update.is_some() => {
                        self.block_error(path, BlockError::IncompleteLoop)
                    }
                    None => {}
                }
                self.check_interstate_cond(path, "loop condition", &l.condition);
                for (what, e) in [("loop init", &l.init), ("loop update", &l.update)] {
                    if let Some(e) = e {
                        self.check_interstate_expr(path, what, e);
                    }
                }
            }
            BlockKind::Conditional(c) => {
                if c.branches.is_empty() {
                    self.block_error(path, BlockError::EmptyConditional);
                }
                for (cond, _) in &c.branches {
                    self.check_interstate_cond(path, "branch condition", cond);
                }
            }
            BlockKind::Break | BlockKind::Continue if ctx.loop_depth == 0 => {
                let kind = if matches!(block.kind, BlockKind::Break) {
                    "break"
                } else {
                    "continue"
                };
                self.block_error(path, BlockError::JumpOutsideLoop { kind });
            }
            BlockKind::Break | BlockKind::Continue | BlockKind::Return => {}
        }
        self.check_transition(path, &block.transition);
    }

    fn check_transition(&mut self, path: &BlockPath, t: &Transition) {
        for a in &t.assignments {
            if self.sdfg.containers.contains_key(&a.symbol) {
                self.block_error(
                    path,
                    BlockError::AssignsContainer {
                        name: a.symbol.clone(),
                    },
                );
            } else if !self.sdfg.symbols.contains_key(&a.symbol) {
                self.block_error(
                    path,
                    BlockError::AssignsUndeclared {
                        name: a.symbol.clone(),
                    },
                );
            }
            self.check_interstate_expr(path, "transition assignment", &a.value);
        }
    }

    fn check_interstate_cond(&mut self, path: &BlockPath, what: &'static str, c: &SymCond) {
        let mut reads = BTreeMap::new();
        cond_reads(c, &mut reads);
        self.check_interstate_names(path, what, c.free_symbols(), reads);
    }

    fn check_interstate_expr(&mut self, path: &BlockPath, what: &'static str, e: &SymExpr) {
        let mut reads = BTreeMap::new();
        expr_reads(e, &mut reads);
        self.check_interstate_names(path, what, e.free_symbols(), reads);
    }

    /// Interstate code runs on the host: it may use declared symbols and read
    /// integer or boolean scalars and arrays reachable from where it runs.
    fn check_interstate_names(
        &mut self,
        path: &BlockPath,
        what: &'static str,
        symbols: BTreeSet<String>,
        reads: BTreeMap<String, BTreeSet<usize>>,
    ) {
        for symbol in symbols {
            if !self.sdfg.symbols.contains_key(&symbol) {
                self.block_error(path, BlockError::UndefinedSymbol { what, symbol });
            }
        }
        for (name, index_counts) in reads {
            let Some(desc) = self.sdfg.containers.get(&name) else {
                self.block_error(path, BlockError::UnknownRead { what, name });
                continue;
            };
            let reason = if !matches!(
                desc.kind,
                DataKind::Scalar | DataKind::Array(_) | DataKind::View(_)
            ) {
                Some(format!(
                    "a {} cannot be read by interstate code",
                    desc.kind_name()
                ))
            } else if !(desc.dtype.is_integer() || desc.dtype == crate::DType::Bool) {
                Some(format!(
                    "it holds {}; interstate code reads integers and booleans only",
                    desc.dtype
                ))
            } else {
                index_counts
                    .iter()
                    .find(|&&n| n != desc.rank())
                    .map(|n| format!("it is read with {n} indices but has rank {}", desc.rank()))
            };
            if let Some(reason) = reason {
                self.block_error(path, BlockError::BadRead { what, name, reason });
            } else if !self.reachable(desc.storage, self.base) {
                // Interstate code runs where its SDFG runs: on the host at top
                // level, on the device inside a kernel.
                self.block_error(
                    path,
                    BlockError::Inaccessible {
                        what,
                        side: self.base,
                        container: name,
                        storage: desc.storage,
                    },
                );
            }
        }
    }

    // -- States ------------------------------------------------------------

    fn node_error(&mut self, cx: &StateCx<'_>, node: NodeId, error: NodeError) {
        let (kind, label) = cx.state.node(node).map_or(("node", String::new()), |n| {
            (n.kind_name(), n.label().to_owned())
        });
        self.errors.push(ValidationError::Node {
            sdfg: self.path.clone(),
            state: cx.label.to_owned(),
            node: node.index() as u32,
            kind,
            label,
            error,
        });
    }

    fn edge_error(
        &mut self,
        cx: &StateCx<'_>,
        edge: crate::node::EdgeId,
        src: NodeId,
        dst: NodeId,
        error: EdgeError,
    ) {
        let label = |n: NodeId| {
            cx.state
                .node(n)
                .map_or(String::new(), |n| n.label().to_owned())
        };
        self.errors.push(ValidationError::Edge {
            sdfg: self.path.clone(),
            state: cx.label.to_owned(),
            edge: edge.index() as u32,
            src: label(src),
            dst: label(dst),
            error,
        });
    }

    fn check_state(&mut self, label: &str, state: &State) {
        let scopes = match state.scope_tree() {
            Ok(s) => s,
            Err(e) => {
                let cx = StateCx {
                    label,
                    state,
                    scopes: ScopeTree::default(),
                };
                // An exit whose entry is not a map entry can never be fed from
                // inside "its" scope; name the real fault instead.
                let error = match &e {
                    ScopeError::ExitOutsideScope { node }
                        if matches!(state.node(*node), Some(Node::MapExit(x))
                            if !matches!(state.node(x.entry), Some(Node::MapEntry(_)))) =>
                    {
                        NodeError::MapPairing("map exit refers to a node that is not a map entry")
                    }
                    _ => NodeError::Scope(e.clone()),
                };
                self.node_error(&cx, e.node(), error);
                // Scope-dependent rules cannot be judged on a malformed graph.
                return;
            }
        };
        let cx = StateCx {
            label,
            state,
            scopes,
        };
        for (id, node) in state.nodes() {
            self.check_node(&cx, id, node);
        }
        for (id, src, dst, _) in state.edges() {
            self.check_edge(&cx, id, src, dst);
        }
    }

    /// [`check_subset`] of the memlet on the edge leaving `src`, propagated
    /// through the maps around that edge: an index the maps' parameters
    /// drive out of bounds at an extreme of their ranges.
    fn check_subset_over_scopes(
        &self,
        cx: &StateCx<'_>,
        src: NodeId,
        src_node: &Node,
        m: &Memlet,
        shape: &[SymExpr],
        errs: &mut Vec<EdgeError>,
    ) {
        // The edge's own scope, as `ScopeTree::compute` assigns it.
        let scope = match src_node {
            Node::MapEntry(_) => Some(src),
            Node::MapExit(x) => cx.scopes.parent(x.entry),
            _ => cx.scopes.parent(src),
        };
        let Some(scope) = scope else {
            return;
        };
        let mut maps = Vec::new();
        for e in std::iter::once(scope).chain(cx.scopes.ancestors(scope)) {
            if let Some(Node::MapEntry(entry)) = cx.state.node(e) {
                maps.push(&entry.map);
            }
        }
        let mentions = m
            .subset
            .any_symbol(&mut |s| maps.iter().any(|map| map.params.iter().any(|p| p == s)));
        if !mentions || m.subset.rank() != shape.len() {
            return;
        }
        let mut outer = propagate_subset(&m.subset, maps[0], shape);
        for map in &maps[1..] {
            outer = propagate_subset(&outer, map, shape);
        }
        let mut found = Vec::new();
        check_subset(&m.data, "subset", &outer, shape, &mut found);
        errs.extend(found.into_iter().filter_map(|e| match e {
            EdgeError::OutOfBounds {
                data,
                dim,
                index,
                extent,
            } => Some(EdgeError::OutOfBoundsInScope {
                data,
                dim,
                index,
                extent,
            }),
            _ => None,
        }));
    }

    /// Symbols defined at `node`: the SDFG's and the parameters of every map
    /// around it, as a view that borrows both (copying the SDFG's symbols
    /// per node made validation quadratic in program size).
    fn defined_at<'s>(&self, cx: &StateCx<'s>, node: NodeId) -> Defined<'s>
    where
        'a: 's,
    {
        let mut params = Vec::new();
        for e in cx.scopes.ancestors(node) {
            if let Some(Node::MapEntry(m)) = cx.state.node(e) {
                params.extend(m.map.params.iter().map(String::as_str));
            }
        }
        Defined {
            symbols: &self.sdfg.symbols,
            params,
        }
    }

    /// Whether `node` runs on the device: it is a device map's entry or exit,
    /// a device-wide library call, inside a device map, or in an SDFG nested
    /// in device code.
    fn side_of(&self, cx: &StateCx<'_>, node: NodeId) -> Side {
        if self.base == Side::Device || cx.scopes.runs_on_device(cx.state, node) {
            Side::Device
        } else {
            Side::Host
        }
    }

    /// Whether code on `side` may touch `storage`: always where the
    /// SDFG's memory model makes it accessible; host code touching device global memory also where
    /// schedules are not decided yet (data already on the GPU, which the
    /// offload pass stages). Shared memory and registers exist only inside
    /// kernels, decided or not.
    fn reachable(&self, storage: Storage, side: Side) -> bool {
        self.memory.accessible(storage, side)
            || (side == Side::Host && !self.decided && storage == Storage::DeviceGlobal)
    }

    /// Whether `node` is inside a kernel (strictly within a device map, or in
    /// an SDFG nested in device code).
    fn inside_kernel(&self, cx: &StateCx<'_>, node: NodeId) -> bool {
        self.base == Side::Device || cx.scopes.inside_device_map(cx.state, node)
    }

    fn check_node(&mut self, cx: &StateCx<'_>, id: NodeId, node: &Node) {
        match node {
            Node::Access(a) => self.check_access(cx, id, &a.data),
            Node::MapEntry(entry) => {
                self.check_map(cx, id, &entry.map);
                self.check_scope_connectors(cx, id, &entry.in_connectors, &entry.out_connectors);
                let exits = cx
                    .state
                    .nodes()
                    .filter(|(_, n)| matches!(n, Node::MapExit(x) if x.entry == id))
                    .count();
                match exits {
                    1 => {}
                    0 => self.node_error(cx, id, NodeError::MapPairing("map entry has no exit")),
                    _ => self.node_error(
                        cx,
                        id,
                        NodeError::MapPairing("map entry has more than one exit"),
                    ),
                }
            }
            Node::MapExit(exit) => {
                // An exit whose entry is not a map entry fails the scope tree
                // and is reported by `check_state`.
                self.check_scope_connectors(cx, id, &exit.in_connectors, &exit.out_connectors);
            }
            Node::Tasklet(t) => {
                self.check_code_connectors(cx, id, &t.inputs, &t.outputs);
                self.check_tasklet_code(cx, id, t);
            }
            Node::Callback(c) => {
                self.check_code_connectors(cx, id, &c.inputs, &c.outputs);
                if self.side_of(cx, id) == Side::Device {
                    self.node_error(
                        cx,
                        id,
                        NodeError::CallbackOnDevice {
                            callee: c.callee.clone(),
                        },
                    );
                }
            }
            Node::Library(l) => {
                let (ins, outs) = (l.op.in_connectors(), l.op.out_connectors());
                self.check_edge_counts(cx, id, ins.iter().copied(), outs.iter().copied());
                // At the top of a persistent kernel's body the threads
                // share it (library lowering expands it into their maps).
                let grid_level = self.grid && cx.scopes.parent(id).is_none();
                if l.schedule == Schedule::DeviceKernel && self.inside_kernel(cx, id) && !grid_level
                {
                    self.node_error(
                        cx,
                        id,
                        NodeError::BadSchedule {
                            schedule: l.schedule,
                            reason: "a device-wide library call cannot be issued inside a kernel",
                        },
                    );
                }
                self.check_library_operands(cx, id, &l.op);
            }
            Node::NestedSdfg(n) => self.check_nested(cx, id, n),
        }
    }

    fn check_access(&mut self, cx: &StateCx<'_>, id: NodeId, data: &str) {
        // An access node nothing reads or writes is dead weight that hides
        // mistakes (an edge attached to the wrong copy of a container).
        if cx.state.in_edges(id).next().is_none() && cx.state.out_edges(id).next().is_none() {
            self.node_error(cx, id, NodeError::IsolatedAccess);
        }
        let Some(desc) = self.sdfg.containers.get(data) else {
            self.node_error(
                cx,
                id,
                NodeError::UnknownContainer {
                    data: data.to_owned(),
                },
            );
            return;
        };
        if desc.is_view() {
            let count = cx
                .state
                .in_edges(id)
                .filter(|(_, _, e)| e.dst_conn.as_deref() == Some(VIEW_CONNECTOR))
                .count()
                + cx.state
                    .out_edges(id)
                    .filter(|(_, _, e)| e.src_conn.as_deref() == Some(VIEW_CONNECTOR))
                    .count();
            if count != 1 {
                self.node_error(
                    cx,
                    id,
                    NodeError::ViewEdges {
                        data: data.to_owned(),
                        count,
                    },
                );
            }
        }
        if desc.storage == Storage::DeviceShared && !self.inside_kernel(cx, id) {
            self.node_error(
                cx,
                id,
                NodeError::SharedOutsideKernel {
                    data: data.to_owned(),
                },
            );
        }
    }

    fn check_map(&mut self, cx: &StateCx<'_>, id: NodeId, map: &crate::node::Map) {
        if map.params.len() != map.ranges.len() {
            self.node_error(
                cx,
                id,
                NodeError::MapArity {
                    params: map.params.len(),
                    ranges: map.ranges.len(),
                },
            );
        }
        let outer = self.defined_at(cx, id);
        let mut seen = BTreeSet::new();
        for p in &map.params {
            let reason = if !is_identifier(p) {
                Some("is not a valid identifier")
            } else if !seen.insert(p) {
                Some("is repeated")
            } else if outer.contains(p) {
                Some("shadows a symbol or an enclosing map's parameter")
            } else if self.sdfg.containers.contains_key(p) {
                Some("shadows a container")
            } else {
                None
            };
            if let Some(reason) = reason {
                self.node_error(
                    cx,
                    id,
                    NodeError::BadMapParam {
                        name: p.clone(),
                        reason,
                    },
                );
            }
        }
        for (p, r) in map.dims() {
            if r.step.as_int() == Some(0) {
                self.node_error(cx, id, NodeError::ZeroStep { param: p.clone() });
            }
            for symbol in r.free_symbols() {
                if !outer.contains(&symbol) {
                    self.node_error(cx, id, NodeError::UndefinedSymbol { symbol });
                }
            }
        }
        let in_kernel = self.inside_kernel(cx, id);
        // The top-level maps of a persistent kernel's body are shared by
        // its threads, not launched.
        let grid_map = self.grid && cx.scopes.parent(id).is_none();
        let reason = match map.schedule {
            Schedule::DeviceKernel if in_kernel && !grid_map => {
                Some("a kernel cannot be launched inside a kernel")
            }
            Schedule::DevicePersistent if in_kernel => {
                Some("a persistent kernel cannot be launched inside a kernel")
            }
            Schedule::DeviceThreadBlock if !in_kernel => {
                Some("a thread-block map must be inside a device kernel")
            }
            Schedule::HostParallel if in_kernel => {
                Some("host-parallel maps cannot run inside a kernel")
            }
            _ => None,
        };
        if let Some(reason) = reason {
            self.node_error(
                cx,
                id,
                NodeError::BadSchedule {
                    schedule: map.schedule,
                    reason,
                },
            );
        }
    }

    fn check_scope_connectors(
        &mut self,
        cx: &StateCx<'_>,
        id: NodeId,
        ins: &BTreeSet<String>,
        outs: &BTreeSet<String>,
    ) {
        // Every `IN_x` needs an `OUT_x` and vice versa; a connector without
        // either prefix has no partner name at all.
        // The partners' names without their prefix, to look up without
        // building a string per connector.
        fn stems<'s>(set: &'s BTreeSet<String>, prefix: &str) -> BTreeSet<&'s str> {
            set.iter().filter_map(|c| c.strip_prefix(prefix)).collect()
        }
        let (in_stems, out_stems) = (stems(ins, MAP_IN_PREFIX), stems(outs, MAP_OUT_PREFIX));
        let sides = [
            (ins, MAP_IN_PREFIX, &out_stems, MAP_OUT_PREFIX),
            (outs, MAP_OUT_PREFIX, &in_stems, MAP_IN_PREFIX),
        ];
        for (own, prefix, partners, partner_prefix) in sides {
            for c in own {
                let missing = match c.strip_prefix(prefix) {
                    Some(rest) if partners.contains(rest) => None,
                    Some(rest) => Some(format!("a partner `{partner_prefix}{rest}`")),
                    None => Some(format!("the prefix `{prefix}`")),
                };
                if let Some(expected) = missing {
                    self.node_error(
                        cx,
                        id,
                        NodeError::UnpairedScopeConnector {
                            name: c.clone(),
                            expected,
                        },
                    );
                }
            }
        }
        self.check_edge_counts(
            cx,
            id,
            ins.iter().map(String::as_str),
            outs.iter().map(String::as_str),
        );
    }

    fn check_code_connectors(
        &mut self,
        cx: &StateCx<'_>,
        id: NodeId,
        inputs: &[Connector],
        outputs: &[Connector],
    ) {
        let mut seen = BTreeSet::new();
        for c in inputs.iter().chain(outputs) {
            let reason = if !is_identifier(&c.name) {
                Some("not a valid identifier")
            } else if !seen.insert(c.name.as_str()) {
                Some("declared twice")
            } else {
                None
            };
            if let Some(reason) = reason {
                self.node_error(
                    cx,
                    id,
                    NodeError::BadConnector {
                        name: c.name.clone(),
                        reason,
                    },
                );
            }
        }
        self.check_edge_counts(
            cx,
            id,
            inputs.iter().map(|c| c.name.as_str()),
            outputs.iter().map(|c| c.name.as_str()),
        );
    }

    /// Every input connector has exactly one incoming edge, every output at least one outgoing.
    fn check_edge_counts<'c>(
        &mut self,
        cx: &StateCx<'_>,
        id: NodeId,
        ins: impl IntoIterator<Item = &'c str>,
        outs: impl IntoIterator<Item = &'c str>,
    ) {
        // One walk over each side's edges, not one per connector: a fused
        // map has as many connectors as its edges.
        let mut incoming: BTreeMap<&str, usize> = BTreeMap::new();
        for (_, _, e) in cx.state.in_edges(id) {
            if let Some(c) = e.dst_conn.as_deref() {
                *incoming.entry(c).or_default() += 1;
            }
        }
        let outgoing: BTreeSet<&str> = cx
            .state
            .out_edges(id)
            .filter_map(|(_, _, e)| e.src_conn.as_deref())
            .collect();
        for c in ins {
            let count = incoming.get(c).copied().unwrap_or(0);
            if count != 1 {
                self.node_error(
                    cx,
                    id,
                    NodeError::InputEdges {
                        name: c.to_owned(),
                        count,
                    },
                );
            }
        }
        for c in outs {
            if !outgoing.contains(c) {
                self.node_error(cx, id, NodeError::DanglingOutput { name: c.to_owned() });
            }
        }
    }

    /// The memlet on the edge attached to `conn` of `id` (incoming for inputs).
    fn connector_memlet<'s>(
        cx: &StateCx<'s>,
        id: NodeId,
        conn: &str,
        input: bool,
    ) -> Option<&'s Memlet> {
        if input {
            cx.state
                .in_edges(id)
                .find(|(_, _, e)| e.dst_conn.as_deref() == Some(conn))
                .and_then(|(_, _, e)| e.memlet.as_ref())
        } else {
            cx.state
                .out_edges(id)
                .find(|(_, _, e)| e.src_conn.as_deref() == Some(conn))
                .and_then(|(_, _, e)| e.memlet.as_ref())
        }
    }

    fn check_tasklet_code(&mut self, cx: &StateCx<'_>, id: NodeId, t: &crate::node::Tasklet) {
        let rank_of = |conn: &str, input: bool| {
            Self::connector_memlet(cx, id, conn, input).map_or(0, |m| squeezed_rank(&m.subset))
        };
        let bindings = t.bindings(rank_of);
        let defined = self.defined_at(cx, id);
        let is_symbol = |s: &str| defined.contains(s);
        if let Err(e) = TypeChecker::new(bindings, &is_symbol).check_body(&t.body) {
            self.node_error(cx, id, NodeError::Type(e));
        }
        let mut written = Vec::new();
        written_names(&t.body, &mut written);
        for c in &t.outputs {
            if !written.contains(&c.name) {
                self.node_error(
                    cx,
                    id,
                    NodeError::OutputNeverWritten {
                        name: c.name.clone(),
                    },
                );
            }
        }
    }

    fn check_library_operands(&mut self, cx: &StateCx<'_>, id: NodeId, op: &LibraryOp) {
        // (connector, is input, lowest rank, highest rank)
        let spec: &[(&str, bool, usize, usize)] = match op {
            LibraryOp::MatMul => &[("_a", true, 1, 2), ("_b", true, 1, 2), ("_c", false, 0, 2)],
            LibraryOp::Gemm { .. } => &[
                ("_a", true, 2, 2),
                ("_b", true, 2, 2),
                ("_cin", true, 2, 2),
                ("_alpha", true, 0, 0),
                ("_beta", true, 0, 0),
                ("_c", false, 2, 2),
            ],
            LibraryOp::Gemv { .. } => &[
                ("_a", true, 2, 2),
                ("_x", true, 1, 1),
                ("_y_in", true, 1, 1),
                ("_y", false, 1, 1),
            ],
            LibraryOp::Dot => &[
                ("_x", true, 1, 1),
                ("_y", true, 1, 1),
                ("_result", false, 0, 0),
            ],
            LibraryOp::BatchedMatMul => &[
                ("_a", true, 2, usize::MAX),
                ("_b", true, 2, usize::MAX),
                ("_c", false, 3, usize::MAX),
            ],
            LibraryOp::Reduce { .. } => &[("_in", true, 1, usize::MAX)],
            LibraryOp::Transpose => &[("_in", true, 2, 2), ("_out", false, 2, 2)],
            LibraryOp::TensorTranspose { .. } => &[("_in", true, 1, usize::MAX)],
            LibraryOp::Cholesky { .. } => &[("_a", true, 2, 2), ("_b", false, 2, 2)],
            LibraryOp::Solve => &[("_a", true, 2, 2), ("_b", true, 1, 2), ("_x", false, 1, 2)],
        };
        let op_name = op.name();
        for &(conn, input, lo, hi) in spec {
            let Some(m) = Self::connector_memlet(cx, id, conn, input) else {
                continue; // A missing edge is reported by the connector rules.
            };
            let found = squeezed_rank(&m.subset);
            if found < lo || found > hi {
                let expected = match (lo, hi) {
                    (lo, hi) if lo == hi => lo.to_string(),
                    (lo, usize::MAX) => format!("at least {lo}"),
                    (lo, hi) => format!("{lo} to {hi}"),
                };
                self.node_error(
                    cx,
                    id,
                    NodeError::OperandRank {
                        conn: conn.to_owned(),
                        op: op_name,
                        expected,
                        found,
                    },
                );
            }
        }
        let in_rank = Self::connector_memlet(cx, id, "_in", true).map(|m| squeezed_rank(&m.subset));
        let problem = match (op, in_rank) {
            (
                LibraryOp::Reduce {
                    axes: Some(axes), ..
                },
                Some(rank),
            ) => {
                if axes.windows(2).any(|w| w[0] >= w[1]) {
                    Some(format!("axes {axes:?} are not strictly ascending"))
                } else if axes.iter().any(|&a| a >= rank) {
                    Some(format!(
                        "axes {axes:?} exceed the input's {rank} dimensions"
                    ))
                } else {
                    None
                }
            }
            (LibraryOp::TensorTranspose { axes }, Some(rank)) => {
                let mut sorted = axes.clone();
                sorted.sort_unstable();
                if sorted != (0..rank).collect::<Vec<_>>() {
                    Some(format!("axes {axes:?} are not a permutation of 0..{rank}"))
                } else {
                    None
                }
            }
            _ => None,
        };
        if let Some(reason) = problem {
            self.node_error(
                cx,
                id,
                NodeError::BadLibraryParameter {
                    op: op_name,
                    reason,
                },
            );
        }
    }

    fn check_nested(&mut self, cx: &StateCx<'_>, id: NodeId, n: &crate::node::NestedSdfg) {
        let inner = &n.sdfg;
        for name in n.inputs.iter().chain(&n.outputs) {
            if inner.containers.get(name).is_none_or(|d| d.transient) {
                self.node_error(cx, id, NodeError::NestedConnector { name: name.clone() });
            }
        }
        for (name, desc) in &inner.containers {
            if !desc.transient && !n.inputs.contains(name) && !n.outputs.contains(name) {
                self.node_error(cx, id, NodeError::NestedUnconnected { name: name.clone() });
            }
        }
        // What the body writes of the caller's data leaves through an output
        // (DaCe's rule too): a write to an input alone would be lost, or
        // shared by every caller of a kernel.
        let mut written = BTreeSet::new();
        for (_, s) in inner.states() {
            for (_, _, dst, e) in s.edges() {
                if let (Some(_), Some(Node::Access(a))) = (&e.memlet, s.node(dst))
                    && n.inputs.contains(&a.data)
                    && !n.outputs.contains(&a.data)
                {
                    written.insert(a.data.clone());
                }
            }
        }
        for name in written {
            self.node_error(cx, id, NodeError::NestedInputWritten { name });
        }
        let (ins, outs) = (&n.inputs, &n.outputs);
        self.check_edge_counts(
            cx,
            id,
            ins.iter().map(String::as_str),
            outs.iter().map(String::as_str),
        );
        for arg in &inner.arguments {
            if inner.symbols.contains_key(arg) && !n.symbol_mapping.contains_key(arg) {
                self.node_error(
                    cx,
                    id,
                    NodeError::SymbolMapping {
                        symbol: arg.clone(),
                        reason: "no mapping for the inner symbol",
                    },
                );
            }
        }
        let outer = self.defined_at(cx, id);
        for (inner_sym, expr) in &n.symbol_mapping {
            if !inner.symbols.contains_key(inner_sym) {
                self.node_error(
                    cx,
                    id,
                    NodeError::SymbolMapping {
                        symbol: inner_sym.clone(),
                        reason: "mapping of something that is not a symbol of the nested SDFG:",
                    },
                );
            }
            for symbol in expr.free_symbols() {
                if !outer.contains(&symbol) {
                    self.node_error(
                        cx,
                        id,
                        NodeError::MappingUndefinedSymbol {
                            inner: inner_sym.clone(),
                            symbol,
                        },
                    );
                }
            }
        }
        let persistent = cx.scopes.parent(id).is_some_and(|e| {
            matches!(cx.state.node(e), Some(Node::MapEntry(m))
                if m.map.schedule == Schedule::DevicePersistent)
        });
        let mut nested = Validator {
            sdfg: inner,
            path: format!("{}/{}", self.path, inner.name),
            base: self.side_of(cx, id),
            root: false,
            grid: persistent,
            decided: self.decided,
            memory: self.memory,
            errors: &mut *self.errors,
        };
        nested.run();
    }

    // -- Edges -------------------------------------------------------------

    fn check_edge(&mut self, cx: &StateCx<'_>, id: crate::node::EdgeId, src: NodeId, dst: NodeId) {
        let state = cx.state;
        let Some(edge) = state.graph.edge_weight(id) else {
            return;
        };
        let (Some(src_node), Some(dst_node)) = (state.node(src), state.node(dst)) else {
            return;
        };
        let mut errs = Vec::new();

        // Connectors.
        for (side, node, conn, is_src) in [
            ("source", src_node, &edge.src_conn, true),
            ("destination", dst_node, &edge.dst_conn, false),
        ] {
            match (node, conn) {
                (Node::Access(_), None) => {}
                (Node::Access(a), Some(c)) if c == VIEW_CONNECTOR => {
                    let other = if is_src { dst_node } else { src_node };
                    let is_view = self
                        .sdfg
                        .containers
                        .get(&a.data)
                        .is_some_and(DataDesc::is_view);
                    if !is_view || !matches!(other, Node::Access(_)) {
                        errs.push(EdgeError::MisplacedViewConnector);
                    }
                }
                (Node::Access(_), Some(c)) => errs.push(EdgeError::UnknownConnector {
                    side,
                    name: c.clone(),
                }),
                (_, None) if edge.memlet.is_some() => {
                    errs.push(EdgeError::MissingConnector { side })
                }
                (_, None) => {}
                (_, Some(c)) if edge.memlet.is_none() => {
                    errs.push(EdgeError::ConnectorWithoutMemlet {
                        side,
                        name: c.clone(),
                    });
                }
                (n, Some(c)) => {
                    let exists = if is_src {
                        n.out_connectors().contains(&c.as_str())
                    } else {
                        n.in_connectors().contains(&c.as_str())
                    };
                    if !exists {
                        errs.push(EdgeError::UnknownConnector {
                            side,
                            name: c.clone(),
                        });
                    }
                }
            }
        }

        if let Some(m) = &edge.memlet {
            self.check_memlet(cx, edge, (src, dst), (src_node, dst_node), m, &mut errs);
        }
        for error in errs {
            self.edge_error(cx, id, src, dst, error);
        }
    }

    fn check_memlet(
        &self,
        cx: &StateCx<'_>,
        edge: &crate::node::Edge,
        (src, dst): (NodeId, NodeId),
        (src_node, dst_node): (&Node, &Node),
        m: &Memlet,
        errs: &mut Vec<EdgeError>,
    ) {
        let Some(desc) = self.sdfg.containers.get(&m.data) else {
            errs.push(EdgeError::UnknownContainer {
                data: m.data.clone(),
            });
            return;
        };
        let is_view_edge = edge.src_conn.as_deref() == Some(VIEW_CONNECTOR)
            || edge.dst_conn.as_deref() == Some(VIEW_CONNECTOR);

        // The memlet names the access node it touches (either end of a copy,
        // the origin of a view edge).
        let (src_data, dst_data) = (src_node.as_access(), dst_node.as_access());
        let other = match (src_data, dst_data) {
            (Some(a), Some(b)) => {
                if m.data != a && m.data != b {
                    errs.push(EdgeError::DataMismatch {
                        data: m.data.clone(),
                        node_data: a.to_owned(),
                    });
                }
                Some(if m.data == a { b } else { a })
            }
            (Some(a), None) | (None, Some(a)) => {
                // Between an access node and a map entry or exit, the memlet
                // may name the data flowing through the scope (a copy into or
                // out of a transient inside the map); code nodes see exactly
                // the container of the access node they touch.
                let code_end = src_node.is_code() || dst_node.is_code();
                let through_scope = || {
                    let (scope, conn, forward) = if src_data.is_some() {
                        (dst, edge.dst_conn.as_deref(), true)
                    } else {
                        (src, edge.src_conn.as_deref(), false)
                    };
                    path_data(cx.state, scope, conn, forward).contains(&m.data.as_str())
                };
                if m.data != a && !is_view_edge && (code_end || !through_scope()) {
                    errs.push(EdgeError::DataMismatch {
                        data: m.data.clone(),
                        node_data: a.to_owned(),
                    });
                }
                None
            }
            (None, None) => {
                // Inside a scope (a map entry to what it feeds, or what
                // feeds a map exit to it), the memlet names the data the
                // scope's connector carries: the container of the access
                // node at the outer end of its path.
                let path = match (src_node, dst_node) {
                    (Node::MapEntry(_), _) => {
                        path_data(cx.state, src, edge.src_conn.as_deref(), false)
                    }
                    (_, Node::MapExit(_)) => {
                        path_data(cx.state, dst, edge.dst_conn.as_deref(), true)
                    }
                    _ => Vec::new(),
                };
                if let Some(first) = path.first()
                    && !path.contains(&m.data.as_str())
                {
                    errs.push(EdgeError::DataMismatch {
                        data: m.data.clone(),
                        node_data: (*first).to_owned(),
                    });
                }
                None
            }
        };

        // Rank and bounds.
        check_subset(&m.data, "subset", &m.subset, desc.dims(), errs);
        if let (Some(o), Some(other_name)) = (&m.other_subset, other)
            && let Some(other_desc) = self.sdfg.containers.get(other_name)
        {
            check_subset(other_name, "other subset", o, other_desc.dims(), errs);
        }

        // Bounds over every iteration of the maps around the edge (a
        // dynamic memlet is a "may" access, often guarded in its code).
        if !m.dynamic {
            self.check_subset_over_scopes(cx, src, src_node, m, desc.dims(), errs);
        }

        // Symbols.
        let defined = self.defined_at(cx, dst);
        let mut undefined = BTreeSet::new();
        m.any_symbol(&mut |symbol| {
            if !defined.contains(symbol) {
                undefined.insert(symbol.to_owned());
            }
            false
        });
        for symbol in undefined {
            errs.push(EdgeError::UndefinedSymbol {
                data: m.data.clone(),
                symbol,
            });
        }

        // Write-conflict resolution only where data is written.
        if m.wcr.is_some() && (dst_node.is_code() || matches!(dst_node, Node::MapEntry(_))) {
            errs.push(EdgeError::WcrOnRead {
                data: m.data.clone(),
            });
        }

        if let Some(w @ (crate::Wcr::BitAnd | crate::Wcr::BitOr | crate::Wcr::BitXor)) = m.wcr
            && (desc.dtype.is_float() || desc.dtype.is_complex())
        {
            errs.push(EdgeError::BitwiseWcr {
                data: m.data.clone(),
                data_type: desc.dtype,
                wcr: w,
            });
        }

        // Connector types of tasklets and callbacks agree with the container.
        let typed_conn = |node: &Node, conn: &Option<String>, input: bool| -> Option<Connector> {
            let conn = conn.as_deref()?;
            let list = match node {
                Node::Tasklet(t) => {
                    if input {
                        &t.inputs
                    } else {
                        &t.outputs
                    }
                }
                Node::Callback(c) => {
                    if input {
                        &c.inputs
                    } else {
                        &c.outputs
                    }
                }
                _ => return None,
            };
            list.iter().find(|c| c.name == conn).cloned()
        };
        for c in [
            typed_conn(src_node, &edge.src_conn, false),
            typed_conn(dst_node, &edge.dst_conn, true),
        ]
        .into_iter()
        .flatten()
        {
            if c.dtype != desc.dtype {
                errs.push(EdgeError::TypeMismatch {
                    conn: c.name.clone(),
                    conn_type: c.dtype,
                    data: m.data.clone(),
                    data_type: desc.dtype,
                });
            }
        }

        // Data passed directly between two code nodes (no access node) is
        // still held by the memlet's container: the code on either end
        // touches it.
        if src_node.is_code() && dst_node.is_code() {
            for (end, node) in [(src, src_node), (dst, dst_node)] {
                let side = self.side_of(cx, end);
                if !self.reachable(desc.storage, side) {
                    let e = EdgeError::Inaccessible {
                        side,
                        by: node.label().to_owned(),
                        container: m.data.clone(),
                        storage: desc.storage,
                    };
                    if !errs.contains(&e) {
                        errs.push(e);
                    }
                }
            }
        }

        // Storage reachability, in both directions.
        for (access, other_end, other_node) in
            [(src_data, dst, dst_node), (dst_data, src, src_node)]
        {
            let Some(data) = access else { continue };
            let Some(d) = self.sdfg.containers.get(data) else {
                continue;
            };
            // A nested SDFG called from host code is a host level of its own:
            // it receives pointers, and its inner containers say on which side
            // they live (device twins are passed to it after offloading).
            // What must hold is that both sides agree on where the data is.
            if let Node::NestedSdfg(n) = other_node
                && self.side_of(cx, other_end) == Side::Host
            {
                let conn = if other_end == dst {
                    edge.dst_conn.as_deref()
                } else {
                    edge.src_conn.as_deref()
                };
                if let Some(inner) = conn.and_then(|c| n.sdfg.containers.get(c).map(|i| (c, i)))
                    && let (Some(outer_side), Some(inner_side)) =
                        (d.storage.side(), inner.1.storage.side())
                    && outer_side != inner_side
                {
                    errs.push(EdgeError::NestedStorageMismatch {
                        conn: inner.0.to_owned(),
                        inner: inner.1.storage,
                        container: data.to_owned(),
                        outer: d.storage,
                    });
                }
                continue;
            }
            // A kernel takes a scalar it only reads by value, at its launch
            // (`docs/ir.md`, "Scalars by value"): host memory is fine.
            let kernel_input = access == src_data
                && self.base == Side::Host
                && d.is_scalar()
                && m.wcr.is_none()
                && cx.scopes.parent(other_end).is_none()
                && matches!(other_node, Node::MapEntry(e) if e.map.schedule.is_device());
            // So does a device-wide library call its scales (a GEMM's
            // `_alpha` and `_beta`): the host reads them when it issues the
            // call, as BLAS takes them.
            let scale_input = access == src_data
                && self.base == Side::Host
                && d.is_scalar()
                && m.wcr.is_none()
                && cx.scopes.parent(other_end).is_none()
                && matches!(other_node, Node::Library(l) if l.schedule.is_device())
                && matches!(edge.dst_conn.as_deref(), Some("_alpha" | "_beta"));
            if kernel_input || scale_input {
                continue;
            }
            let (side, by) = if other_node.as_access().is_some() {
                // A copy: issued by the host outside kernels, where any pair is
                // a legal transfer; inside device code both ends must be device memory.
                if !self.inside_kernel(cx, other_end) {
                    continue;
                }
                (Side::Device, format!("copy in {}", cx.label))
            } else {
                (self.side_of(cx, other_end), other_node.label().to_owned())
            };
            if !self.reachable(d.storage, side) {
                let e = EdgeError::Inaccessible {
                    side,
                    by,
                    container: data.to_owned(),
                    storage: d.storage,
                };
                if !errs.contains(&e) {
                    errs.push(e);
                }
            }
        }
    }
}

/// Adds every container read by `e`, at any depth, with the number of indices
/// of each read.
fn expr_reads(e: &SymExpr, out: &mut BTreeMap<String, BTreeSet<usize>>) {
    for (atom, _) in e.terms().iter().flat_map(|t| t.factors()) {
        if let Atom::Read(name, index) = atom {
            out.entry(name.to_string()).or_default().insert(index.len());
        }
        for operand in atom.operands() {
            expr_reads(operand, out);
        }
    }
}

/// The containers of the access nodes a memlet path reaches from the scope
/// node `scope`, entered at connector `conn` (`IN_x` going forward into a
/// map entry, `OUT_x` going backward into a map exit), through the scope's
/// matching connectors: the data an edge between an access node and a
/// scope may name besides the access node's own.
fn path_data<'s>(
    state: &'s State,
    scope: NodeId,
    conn: Option<&str>,
    forward: bool,
) -> Vec<&'s str> {
    use crate::node::{MAP_IN_PREFIX, MAP_OUT_PREFIX};
    let (enter, leave) = if forward {
        (MAP_IN_PREFIX, MAP_OUT_PREFIX)
    } else {
        (MAP_OUT_PREFIX, MAP_IN_PREFIX)
    };
    // Connectors by their name without the prefix: a scope's `IN_x` leads
    // to its `OUT_x` (and back), with no string built per step.
    let mut out = Vec::new();
    let mut todo: Vec<(NodeId, &str)> = conn
        .and_then(|c| c.strip_prefix(enter))
        .map(|x| vec![(scope, x)])
        .unwrap_or_default();
    let mut seen = BTreeSet::new();
    let named = |c: Option<&str>, x: &str| c.and_then(|c| c.strip_prefix(leave)) == Some(x);
    while let Some((node, x)) = todo.pop() {
        if !seen.insert((node, x)) {
            continue;
        }
        let next: Vec<(NodeId, Option<&str>)> = if forward {
            state
                .out_edges(node)
                .filter(|(_, _, e)| named(e.src_conn.as_deref(), x))
                .map(|(_, n, e)| (n, e.dst_conn.as_deref()))
                .collect()
        } else {
            state
                .in_edges(node)
                .filter(|(_, _, e)| named(e.dst_conn.as_deref(), x))
                .map(|(_, n, e)| (n, e.src_conn.as_deref()))
                .collect()
        };
        for (n, c) in next {
            match state.node(n) {
                Some(Node::Access(a)) => out.push(a.data.as_str()),
                Some(Node::MapEntry(_) | Node::MapExit(_)) => {
                    if let Some(x) = c.and_then(|c| c.strip_prefix(enter)) {
                        todo.push((n, x));
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The symbols defined at a node ([`Validator::defined_at`]).
struct Defined<'a> {
    symbols: &'a BTreeMap<String, crate::DType>,
    /// Parameters of the maps around the node, innermost first.
    params: Vec<&'a str>,
}

impl Defined<'_> {
    fn contains(&self, name: &str) -> bool {
        self.symbols.contains_key(name) || self.params.contains(&name)
    }
}

/// [`expr_reads`] for every expression of a condition.
fn cond_reads(c: &SymCond, out: &mut BTreeMap<String, BTreeSet<usize>>) {
    match c.view() {
        CondView::Const(_) => {}
        CondView::Cmp(e, _) => expr_reads(e, out),
        CondView::Pair(l, _, r) => {
            expr_reads(l, out);
            expr_reads(r, out);
        }
        CondView::And(ops) | CondView::Or(ops) => ops.iter().for_each(|c| cond_reads(c, out)),
    }
}

/// Number of dimensions of a subset that are not single indices: the rank of
/// the operand a code node sees (`A[i, 0:N]` is a vector).
pub fn squeezed_rank(subset: &Subset) -> usize {
    subset.ranges.iter().filter(|r| !r.is_index()).count()
}

/// Rank, bounds and orientation of one subset against a shape.
fn check_subset(
    data: &str,
    which: &'static str,
    subset: &Subset,
    shape: &[SymExpr],
    errs: &mut Vec<EdgeError>,
) {
    if subset.rank() != shape.len() {
        errs.push(EdgeError::SubsetRank {
            which,
            data: data.to_owned(),
            expected: shape.len(),
            found: subset.rank(),
        });
        return;
    }
    for (dim, (r, extent)) in subset.ranges.iter().zip(shape).enumerate() {
        let descending = r.step.as_int().is_some_and(|s| s < 0);
        let (lo, hi) = if descending {
            (&r.end, &r.begin)
        } else {
            (&r.begin, &r.end)
        };
        let span = hi.const_difference(lo);
        let reversed = span.is_some_and(|d| d < -1);
        if reversed {
            errs.push(EdgeError::ReversedRange {
                data: data.to_owned(),
                dim,
                range: r.to_string(),
            });
            continue;
        }
        // The empty range `k:k` has hi = lo - 1; it touches nothing.
        if span == Some(-1) {
            continue;
        }
        let out_of_bounds = |index: &SymExpr| {
            index.as_int().is_some_and(|v| v < 0)
                || index.const_difference(extent).is_some_and(|v| v >= 0)
        };
        for bound in [lo, hi] {
            if out_of_bounds(bound) {
                errs.push(EdgeError::OutOfBounds {
                    data: data.to_owned(),
                    dim,
                    index: bound.to_string(),
                    extent: extent.to_string(),
                });
                break;
            }
        }
    }
}
