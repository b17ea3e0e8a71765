//! The IR's SDFG written in DaCe's `.sdfg` schema.
//!
//! The export is a direct translation, one DaCe element per IR element,
//! so that what a DaCe user sees (in DaCe's viewer, or continuing with
//! DaCe's transformations) is what this project's passes produced:
//!
//! | IR | DaCe |
//! |---|---|
//! | [`Sdfg`] | `SDFG` (`using_explicit_control_flow`), its body as the top-level region |
//! | [`Region`] | the blocks of a control-flow region, chained by `InterstateEdge`s |
//! | block transition | the assignments of the `InterstateEdge` leaving the block |
//! | [`LoopBlock`] | `LoopRegion` (`init_statement`, `loop_condition`, `update_statement`) |
//! | [`ConditionalBlock`] | `ConditionalBlock`, the `else` region as a branch without condition |
//! | `Break`, `Continue`, `Return` | `BreakBlock`, `ContinueBlock`, `ReturnBlock` |
//! | [`State`] | `SDFGState`, nodes numbered from 0 in the IR's order |
//! | access node, map entry/exit | `AccessNode`, `MapEntry`/`MapExit` with DaCe's schedule |
//! | tasklet | `Tasklet` with Python code ([`crate::python`]) |
//! | library node | `LibraryNode` with DaCe's class path and connector names ([`crate::names`]) |
//! | nested SDFG | `NestedSDFG` with its symbol mapping |
//! | memlet | `Memlet`: `subset`, `other_subset` (written for every copy, see `copies.rs`), `volume`, `dynamic`, `wcr` (`allow_oob` on a copy between ends of different ranks, a reshape) |
//!
//! Where the IR has a structure DaCe cannot hold directly, a block is
//! added and marked with the property `_meta_sdfg_added`, which DaCe keeps
//! but ignores: an empty state for an empty region, and a state carrying
//! the assignments of a region's last transition (DaCe's assignments live
//! on edges between two blocks) or the second half of a transition whose
//! assignments read each other (DaCe evaluates one edge's assignments
//! together). The argument order, symbols included, is kept in
//! `_meta_sdfg_arguments`. An importer reading these marks gives back the
//! IR's SDFG exactly.
//!
//! Refused by name: host callbacks, streams, structures, container
//! arrays, a symbolic start offset, GEMMs whose alpha or beta are read
//! from a container, complex alpha or beta, and blocks after a jump.

use crate::copies;
use crate::names::{self, DaceLibrary};
use crate::python::{self, PythonError};
use crate::symbolic::{write_cond, write_expr, write_loop_cond, write_serialized_expr};
use sdfg_ir::control::{BlockKind, ConditionalBlock, LoopBlock, Region, Transition};
use sdfg_ir::{
    DataDesc, DataKind, Layout, LibraryOp, Literal, Memlet, Node, NodeId, Range, Sdfg, State,
    Subset, SymExpr,
};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// Why an SDFG cannot be written in DaCe's format.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExportError {
    /// The SDFG uses something DaCe's schema has no counterpart for.
    #[error("{at}: {what} cannot be written in DaCe's format: {why}")]
    Unsupported {
        /// Where: the SDFG, block and node.
        at: String,
        /// The element.
        what: String,
        /// Why DaCe cannot hold it.
        why: String,
    },
    /// A tasklet's code cannot be written as DaCe Python.
    #[error("{at}: tasklet `{tasklet}`: {source}")]
    Tasklet {
        /// Where: the SDFG and state.
        at: String,
        /// The tasklet's label.
        tasklet: String,
        /// What is wrong with its code.
        source: PythonError,
    },
    /// The SDFG is not valid (a state's scopes do not nest).
    #[error("{at}: {message}")]
    Invalid {
        /// Where.
        at: String,
        /// What is wrong.
        message: String,
    },
}

/// Writes `sdfg` as the JSON value of a DaCe `.sdfg` file.
pub fn export(sdfg: &Sdfg) -> Result<Value, ExportError> {
    if !sdfg.memory.is_separate() {
        return Err(ExportError::Unsupported {
            at: format!("SDFG `{}`", sdfg.name),
            what: "an SDFG placed for shared host and device memory".to_owned(),
            why: "DaCe's storage types assume separate memories, and its validator rejects GPU code touching host storage".to_owned(),
        });
    }
    // Connectors bound to windows, restated as DaCe 2.0 binds them.
    let widened =
        crate::windows::whole_connectors(sdfg).map_err(|why| ExportError::Unsupported {
            at: format!("SDFG `{}`", sdfg.name),
            what: "a nested SDFG's connector".to_owned(),
            why,
        })?;
    let sdfg = widened.as_ref().unwrap_or(sdfg);
    Exporter {
        sdfg,
        offloaded: is_offloaded(sdfg),
    }
    .sdfg()
}

/// Whether any container of `sdfg` (nested SDFGs included) lives on the
/// device: the SDFG has been offloaded, and its host containers are
/// placed, not left for DaCe to decide.
fn is_offloaded(sdfg: &Sdfg) -> bool {
    let mut device = sdfg
        .containers
        .values()
        .any(|d| d.storage.side() == Some(sdfg_ir::Side::Device));
    sdfg.walk_blocks(&mut |_, _, b| {
        if let BlockKind::State(s) = &b.kind {
            device |= s
                .nodes()
                .any(|(_, n)| matches!(n, Node::NestedSdfg(n) if is_offloaded(&n.sdfg)));
        }
    });
    device
}

/// Writes `sdfg` as the text of a DaCe `.sdfg` file (indented JSON).
pub fn to_dace_string(sdfg: &Sdfg) -> Result<String, ExportError> {
    let value = export(sdfg)?;
    // A `Value` of strings, numbers, booleans and nulls always serializes.
    Ok(serde_json::to_string_pretty(&value).unwrap_or_default())
}

/// The property marking a block the export added (see the module docs).
pub const ADDED_MARK: &str = "_meta_sdfg_added";
/// The DaCe version whose format is written: the symbolic properties are
/// in the serialized spelling of DaCe 2.0 (`$N`), which DaCe reads from
/// files of this version on.
pub const DACE_VERSION: &str = "2.0.0b1";
/// The property of a container whose storage is the IR's `Default` but
/// written as `CPU_Heap`: in an offloaded SDFG the IR's default storage
/// is the host, while DaCe's `Default` means "decide from the context"
/// and would move host data accessed next to kernels into registers.
pub const DEFAULT_STORAGE_MARK: &str = "_meta_sdfg_default_storage";
/// The property of a one-element array that is the IR's scalar (a scalar
/// return value, which DaCe only takes as an array).
pub const SCALAR_MARK: &str = "_meta_sdfg_scalar";
/// The property holding the IR's `transient` flag of a container where
/// the export writes another (return values, which DaCe wants
/// non-transient).
pub const TRANSIENT_MARK: &str = "_meta_sdfg_transient";
/// The property of a tasklet mapping each output connector the export
/// added to the output it copies (DaCe lets a connector feed one edge).
pub const COPIES_MARK: &str = "_meta_sdfg_copies";
/// The property of a tasklet listing its connectors, inputs then outputs,
/// and of an interstate edge listing the symbols it assigns, in the IR's
/// order where that is not DaCe's (sorted by name).
pub const ORDER_MARK: &str = "_meta_sdfg_connector_order";
/// The property of a nested SDFG mapping the names the export gave its
/// return-value containers (`nested__return`) back to the IR's.
pub const RENAMED_MARK: &str = "_meta_sdfg_renamed";
/// The property holding the label of the `return` that ended the SDFG's
/// body, which the export left out (`null` where there was none).
pub const TRAILING_RETURN_MARK: &str = "_meta_sdfg_trailing_return";
/// The property holding the IR's argument order, symbols included.
pub const ARGUMENTS_MARK: &str = "_meta_sdfg_arguments";
/// On a map: the dimensions the IR runs with the step -1, which DaCe's
/// maps may not have (its validator refuses a negative step): written
/// ascending over the same points, which a parallel map visits in any
/// order, and read back descending.
pub const DESCENDING_MARK: &str = "_meta_sdfg_descending";
/// The property of a copy's memlet whose `other_subset` the export wrote
/// out although the IR left it implied ([`Memlet::other_end`]): DaCe's
/// default for a missing one differs from the IR's (see `copies.rs`), and
/// the import leaves it implied again where it still is the IR's default.
pub const IMPLIED_OTHER_MARK: &str = "_meta_sdfg_other_subset_implied";

struct Exporter<'a> {
    sdfg: &'a Sdfg,
    /// Whether the SDFG (or the one it is nested in) has been offloaded:
    /// see [`DEFAULT_STORAGE_MARK`].
    offloaded: bool,
}

impl Exporter<'_> {
    fn at(&self) -> String {
        format!("SDFG `{}`", self.sdfg.name)
    }

    fn sdfg(&self) -> Result<Value, ExportError> {
        let s = self.sdfg;
        let mut arrays = Map::new();
        for (name, desc) in &s.containers {
            arrays.insert(name.clone(), self.data(name, desc)?);
        }
        let symbols: Map<String, Value> = s
            .symbols
            .iter()
            .map(|(n, t)| (n.clone(), json!(t.name())))
            .collect();
        let arg_names: Vec<&String> = s
            .arguments
            .iter()
            .filter(|a| s.containers.contains_key(*a))
            .collect();
        // A `return` that ends the program changes nothing, and DaCe's GPU
        // code generator cannot take a ReturnBlock at the top level: it is
        // left out and recorded.
        let mut body = std::borrow::Cow::Borrowed(&s.body);
        let trailing_return = match s.body.blocks.last() {
            Some(b) if matches!(b.kind, BlockKind::Return) && s.body.blocks.len() > 1 => {
                Value::String(b.label.clone())
            }
            _ => Value::Null,
        };
        if !trailing_return.is_null() {
            body.to_mut().blocks.pop();
        }
        let (nodes, edges) = self.region(&body, &s.name)?;
        Ok(json!({
            "type": "SDFG",
            "attributes": {
                "name": s.name,
                "arg_names": arg_names,
                "_arrays": arrays,
                "symbols": symbols,
                "using_explicit_control_flow": true,
                ARGUMENTS_MARK: s.arguments,
                TRAILING_RETURN_MARK: trailing_return,
            },
            "nodes": nodes,
            "edges": edges,
            "start_block": 0,
            "label": s.name,
            "collapsed": false,
            "dace_version": DACE_VERSION,
        }))
    }

    /// A symbolic property in DaCe's serialized spelling; `what` names it
    /// in the error for an expression that reads a container.
    fn sym(&self, e: &SymExpr, what: &dyn Fn() -> String) -> Result<String, ExportError> {
        write_serialized_expr(e).ok_or_else(|| {
            self.unsupported(
                format!("{}, {}", sdfg_ir::quote(&e.to_string()), what()),
                "DaCe's symbolic properties cannot read containers (DaCe reads them into symbols on interstate edges)",
            )
        })
    }

    fn syms(&self, es: &[SymExpr], what: &dyn Fn() -> String) -> Result<Vec<String>, ExportError> {
        es.iter().map(|e| self.sym(e, what)).collect()
    }

    /// DaCe's `Range` of a subset: inclusive ends, as in the IR.
    fn range_json(&self, s: &Subset, what: &dyn Fn() -> String) -> Result<Value, ExportError> {
        let mut ranges = Vec::new();
        for r in &s.ranges {
            ranges.push(json!({
                "start": self.sym(&r.begin, what)?,
                "end": self.sym(&r.end, what)?,
                "step": self.sym(&r.step, what)?,
                "tile": "1",
            }));
        }
        Ok(json!({"type": "Range", "ranges": ranges}))
    }

    fn unsupported(&self, what: String, why: &str) -> ExportError {
        ExportError::Unsupported {
            at: self.at(),
            what,
            why: why.to_owned(),
        }
    }

    fn data(&self, name: &str, d: &DataDesc) -> Result<Value, ExportError> {
        let common = |attrs: &mut Map<String, Value>| {
            attrs.insert("dtype".into(), json!(d.dtype.name()));
            attrs.insert("transient".into(), json!(d.transient));
            let storage = if self.offloaded && d.storage == sdfg_ir::Storage::Default {
                // The pass placed it on the host; DaCe's `Default` would
                // let DaCe place it again (in registers, inside kernels).
                attrs.insert(DEFAULT_STORAGE_MARK.into(), json!(true));
                names::storage_name(sdfg_ir::Storage::Host)
            } else {
                names::storage_name(d.storage)
            };
            attrs.insert("storage".into(), json!(storage));
            attrs.insert("lifetime".into(), json!(names::lifetime_name(d.lifetime)));
        };
        let (kind, mut attrs) = match &d.kind {
            // DaCe returns arrays only: a scalar return value is an array
            // of one element.
            DataKind::Scalar if is_return_value(name) => (
                "Array",
                json_map(json!({
                    "shape": ["1"], "strides": ["1"], "total_size": "1",
                    "offset": ["0"], "start_offset": 0, SCALAR_MARK: true,
                })),
            ),
            DataKind::Scalar => ("Scalar", json_map(json!({ "shape": ["1"] }))),
            DataKind::Array(l) => ("Array", self.layout(name, l)?),
            DataKind::View(l) => ("ArrayView", self.layout(name, l)?),
            DataKind::Stream { .. } => {
                return Err(self.unsupported(
                    format!("the stream `{name}`"),
                    "the offload pass and DaCe's GPU code generator share no stream semantics",
                ));
            }
            DataKind::Structure { .. } | DataKind::ContainerArray { .. } => {
                return Err(self.unsupported(
                    format!("the container `{name}`"),
                    "structures and container arrays are outside the supported subset",
                ));
            }
        };
        common(&mut attrs);
        if is_return_value(name) {
            // DaCe returns values through non-transient containers its
            // callers allocate; the IR keeps them transient and copies
            // them out.
            attrs.insert("transient".into(), json!(false));
            attrs.insert(TRANSIENT_MARK.into(), json!(d.transient));
        }
        Ok(json!({ "type": kind, "attributes": attrs }))
    }

    fn layout(&self, name: &str, l: &Layout) -> Result<Map<String, Value>, ExportError> {
        let start = l.offset.as_int().ok_or_else(|| {
            self.unsupported(
                format!(
                    "the start offset {} of `{name}`",
                    sdfg_ir::quote(&l.offset.to_string())
                ),
                "DaCe's `start_offset` is an integer",
            )
        })?;
        let what = || format!("in the layout of `{name}`");
        Ok(json_map(json!({
            "shape": self.syms(&l.shape, &what)?,
            "strides": self.syms(&l.strides, &what)?,
            "total_size": self.sym(&l.total_size, &what)?,
            "offset": vec!["0"; l.shape.len()],
            "start_offset": start,
        })))
    }

    /// The blocks and interstate edges of a region. `label` names the
    /// region, for the blocks the export adds.
    fn region(&self, r: &Region, label: &str) -> Result<(Vec<Value>, Vec<Value>), ExportError> {
        let mut nodes = Vec::new();
        let mut edges = Vec::new();
        // The transition from the previous block, not yet written.
        let mut pending: Option<&Transition> = None;
        let mut jumped: Option<&str> = None;
        for block in &r.blocks {
            if let Some(jump) = jumped {
                return Err(self.unsupported(
                    format!("the block `{}`", block.label),
                    &format!("it follows the jump `{jump}` and can never run"),
                ));
            }
            let value = self.block(block)?;
            if let Some(t) = pending.take() {
                self.transition(t, &block.label, &mut nodes, &mut edges);
            }
            nodes.push(value);
            if matches!(
                block.kind,
                BlockKind::Break | BlockKind::Continue | BlockKind::Return
            ) {
                jumped = Some(&block.label);
            } else {
                pending = Some(&block.transition);
            }
        }
        match pending {
            Some(t) if !t.is_empty() => {
                let carrier = format!("{label}_transition");
                self.transition(t, &carrier, &mut nodes, &mut edges);
                nodes.push(added_state(&carrier));
            }
            _ if nodes.is_empty() => nodes.push(added_state(&format!("{label}_empty"))),
            _ => {}
        }
        for (id, n) in nodes.iter_mut().enumerate() {
            n["id"] = json!(id);
        }
        Ok((nodes, edges))
    }

    /// Writes the edges of a transition from the last block of `nodes` to
    /// the block about to be pushed (named `next`), adding states between
    /// them where its assignments must run in steps.
    fn transition(
        &self,
        t: &Transition,
        next: &str,
        nodes: &mut Vec<Value>,
        edges: &mut Vec<Value>,
    ) {
        let steps = steps(t);
        let last = steps.len().saturating_sub(1);
        for (k, step) in steps.iter().enumerate() {
            let assignments: Map<String, Value> = step
                .iter()
                .map(|a| (a.symbol.clone(), json!(write_expr(&a.value))))
                .collect();
            let src = nodes.len() - 1;
            let mut attributes = json!({ "assignments": assignments });
            // DaCe's assignments are a dictionary (written sorted).
            if step.windows(2).any(|w| w[0].symbol > w[1].symbol) {
                let order: Vec<&str> = step.iter().map(|a| a.symbol.as_str()).collect();
                attributes[ORDER_MARK] = json!(order);
            }
            edges.push(json!({
                "type": "Edge",
                "attributes": {"data": {"type": "InterstateEdge", "attributes": attributes}},
                "src": src.to_string(),
                "dst": (src + 1).to_string(),
            }));
            if k < last {
                nodes.push(added_state(&format!("{next}_step_{k}")));
            }
        }
        if steps.is_empty() {
            let src = nodes.len() - 1;
            edges.push(json!({
                "type": "Edge",
                "attributes": {"data": {"type": "InterstateEdge", "attributes": {}}},
                "src": src.to_string(),
                "dst": (src + 1).to_string(),
            }));
        }
    }

    fn block(&self, b: &sdfg_ir::control::ControlBlock) -> Result<Value, ExportError> {
        let label = &b.label;
        Ok(match &b.kind {
            BlockKind::State(s) => self.state(s, label)?,
            BlockKind::Loop(l) => self.loop_region(l, label)?,
            BlockKind::Conditional(c) => self.conditional(c, label)?,
            BlockKind::Break => jump("BreakBlock", label),
            BlockKind::Continue => jump("ContinueBlock", label),
            BlockKind::Return => jump("ReturnBlock", label),
        })
    }

    fn loop_region(&self, l: &LoopBlock, label: &str) -> Result<Value, ExportError> {
        let (nodes, edges) = self.region(&l.body, label)?;
        let var = l.variable.clone().unwrap_or_default();
        let statement = |value: &Option<SymExpr>| {
            value
                .as_ref()
                .map(|v| python_code(&format!("{var} = {}", write_expr(v))))
        };
        Ok(json!({
            "type": "LoopRegion",
            "label": label,
            "attributes": {
                "loop_variable": var,
                "init_statement": statement(&l.init),
                "update_statement": statement(&l.update),
                "loop_condition": python_code(&match &l.variable {
                    Some(v) => write_loop_cond(&l.condition, v),
                    None => write_cond(&l.condition),
                }),
                "inverted": false,
            },
            "nodes": nodes,
            "edges": edges,
            "start_block": 0,
            "collapsed": false,
        }))
    }

    fn conditional(&self, c: &ConditionalBlock, label: &str) -> Result<Value, ExportError> {
        let mut branches = Vec::new();
        for (k, (cond, region)) in c.branches.iter().enumerate() {
            let name = format!("{label}_branch_{k}");
            branches.push(json!([
                python_code(&write_cond(cond)),
                self.branch(region, &name)?
            ]));
        }
        if let Some(region) = &c.otherwise {
            let name = format!("{label}_else");
            branches.push(json!([null, self.branch(region, &name)?]));
        }
        Ok(json!({
            "type": "ConditionalBlock",
            "label": label,
            "attributes": {},
            "branches": branches,
            "collapsed": false,
        }))
    }

    fn branch(&self, r: &Region, label: &str) -> Result<Value, ExportError> {
        let (nodes, edges) = self.region(r, label)?;
        Ok(json!({
            "type": "ControlFlowRegion",
            "label": label,
            "attributes": {},
            "nodes": nodes,
            "edges": edges,
            "start_block": 0,
            "collapsed": false,
        }))
    }

    fn state(&self, s: &State, label: &str) -> Result<Value, ExportError> {
        let at = || format!("{}, state `{label}`", self.at());
        let tree = s.scope_tree().map_err(|e| ExportError::Invalid {
            at: at(),
            message: e.to_string(),
        })?;
        let ids: BTreeMap<NodeId, usize> =
            s.nodes().enumerate().map(|(k, (id, _))| (id, k)).collect();
        let exits: BTreeMap<NodeId, NodeId> = s
            .nodes()
            .filter_map(|(id, n)| match n {
                Node::MapExit(x) => Some((x.entry, id)),
                _ => None,
            })
            .collect();
        let id_of = |n: NodeId| json!(ids[&n].to_string());
        // DaCe lets a tasklet's output connector feed one edge: the others
        // get connectors of their own, copies of the first.
        let mut renamed: BTreeMap<sdfg_ir::EdgeId, String> = BTreeMap::new();
        let mut copies: BTreeMap<NodeId, Vec<(String, String)>> = BTreeMap::new();
        for (id, node) in s.nodes() {
            let Node::Tasklet(t) = node else { continue };
            for c in &t.outputs {
                let mut fed = s
                    .out_edges(id)
                    .filter(|(_, _, e)| e.src_conn.as_deref() == Some(c.name.as_str()));
                fed.next();
                for (k, (edge, _, _)) in fed.enumerate() {
                    if c.pointer {
                        return Err(ExportError::Unsupported {
                            at: at(),
                            what: format!("the output `{}` of the tasklet `{}`", c.name, t.label),
                            why: "it is indexed and feeds several edges, and DaCe lets a connector feed one".to_owned(),
                        });
                    }
                    let taken = |n: &str| {
                        t.inputs.iter().chain(&t.outputs).any(|c| c.name == n)
                            || copies
                                .get(&id)
                                .is_some_and(|v| v.iter().any(|(_, m)| m == n))
                    };
                    let mut name = format!("{}_{}", c.name, k + 1);
                    while taken(&name) {
                        name.push('_');
                    }
                    copies
                        .entry(id)
                        .or_default()
                        .push((c.name.clone(), name.clone()));
                    renamed.insert(edge, name);
                }
            }
        }
        // DaCe's return values are `__return*` in nested SDFGs too: the
        // IR's nested containers of those names are renamed.
        let mut nested: BTreeMap<NodeId, (Sdfg, BTreeMap<String, String>)> = BTreeMap::new();
        for (id, node) in s.nodes() {
            let Node::NestedSdfg(n) = node else { continue };
            let returns: Vec<&String> = n
                .sdfg
                .containers
                .keys()
                .filter(|c| is_return_value(c))
                .collect();
            if returns.is_empty() {
                continue;
            }
            let mut inner = (*n.sdfg).clone();
            let mut renames = BTreeMap::new();
            for old in returns {
                let mut new = format!("nested{old}");
                while n.sdfg.containers.contains_key(&new)
                    || n.inputs.contains(&new)
                    || n.outputs.contains(&new)
                {
                    new.push('_');
                }
                // Where a symbolic expression reads it, the name stays:
                // DaCe only refuses a nested SDFG that also has
                // `__return_<i>`, which its own expansions may add.
                if crate::rename::rename_container(&mut inner, old, &new) {
                    renames.insert(old.clone(), new);
                }
            }
            if !renames.is_empty() {
                nested.insert(id, (inner, renames));
            }
        }
        let mut scope_dict: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        let mut nodes = Vec::new();
        for (id, node) in s.nodes() {
            let parent = match node {
                Node::MapExit(x) => Some(x.entry),
                _ => tree.parent(id),
            };
            let key = parent.map_or("-1".to_owned(), |p| ids[&p].to_string());
            scope_dict.entry(key).or_default().push(ids[&id]);
            let extra = copies.get(&id).map_or(&[][..], Vec::as_slice);
            let mut v = self
                .node(s, id, node, extra, nested.get(&id))
                .map_err(|e| match e {
                    ExportError::Unsupported { what, why, .. } => ExportError::Unsupported {
                        at: at(),
                        what,
                        why,
                    },
                    ExportError::Tasklet {
                        tasklet, source, ..
                    } => ExportError::Tasklet {
                        at: at(),
                        tasklet,
                        source,
                    },
                    other => other,
                })?;
            let (scope_entry, scope_exit) = match node {
                Node::MapEntry(_) => (parent.map(id_of), exits.get(&id).map(|x| id_of(*x))),
                Node::MapExit(x) => (Some(id_of(x.entry)), Some(id_of(id))),
                _ => (
                    parent.map(id_of),
                    parent.and_then(|p| exits.get(&p)).map(|x| id_of(*x)),
                ),
            };
            v["id"] = json!(ids[&id]);
            v["scope_entry"] = scope_entry.unwrap_or(Value::Null);
            v["scope_exit"] = scope_exit.unwrap_or(Value::Null);
            nodes.push(v);
        }
        let mut edges = Vec::new();
        for (edge, src, dst, e) in s.edges() {
            // DaCe passes a nested SDFG's array from the outer array's
            // start, whatever the memlet's region; the IR passes the
            // region. They agree where the region starts at 0.
            for end in [src, dst] {
                if let (Some(Node::NestedSdfg(n)), Some(m)) = (s.node(end), &e.memlet)
                    && let Some(c) = if end == dst { &e.dst_conn } else { &e.src_conn }
                    && n.sdfg.container(c).is_some_and(|d| d.layout().is_some())
                    && m.subset.ranges.iter().any(|r| r.begin.as_int() != Some(0))
                {
                    return Err(ExportError::Unsupported {
                        at: at(),
                        what: format!(
                            "the memlet {} of the nested SDFG `{}`",
                            sdfg_ir::quote(&format!("{}[{}]", m.data, m.subset)),
                            n.label
                        ),
                        why: "DaCe passes a nested SDFG's array from the outer array's start, and this region starts elsewhere".to_owned(),
                    });
                }
            }
            let lib_conn = |n: NodeId, c: &Option<String>| -> Option<String> {
                let c = c.as_deref()?;
                match s.node(n) {
                    Some(Node::Library(l)) => names::library(&l.op)
                        .and_then(|lib| lib.dace_connector(c))
                        .map(str::to_owned),
                    _ => Some(c.to_owned()),
                }
            };
            let memlet = match &e.memlet {
                Some(m) => self
                    .memlet(
                        s,
                        m,
                        (src, dst),
                        (e.src_conn.as_deref(), e.dst_conn.as_deref()),
                    )
                    .map_err(|e| match e {
                        ExportError::Unsupported { what, why, .. } => ExportError::Unsupported {
                            at: at(),
                            what,
                            why,
                        },
                        other => other,
                    })?,
                None => json!({"type": "Memlet", "attributes": {}}),
            };
            let nested_conn = |n: NodeId, c: Option<String>| -> Option<String> {
                let c = c?;
                Some(
                    nested
                        .get(&n)
                        .and_then(|(_, r)| r.get(&c))
                        .cloned()
                        .unwrap_or(c),
                )
            };
            edges.push(json!({
                "type": "MultiConnectorEdge",
                "attributes": {"data": memlet},
                "src": ids[&src].to_string(),
                "dst": ids[&dst].to_string(),
                "src_connector": renamed.get(&edge).cloned().or_else(|| nested_conn(src, lib_conn(src, &e.src_conn))),
                "dst_connector": nested_conn(dst, lib_conn(dst, &e.dst_conn)),
            }));
        }
        let mut state = json!({
            "type": "SDFGState",
            "label": label,
            "attributes": {},
            "nodes": nodes,
            "edges": edges,
            "collapsed": false,
        });
        state["scope_dict"] = json!(scope_dict);
        Ok(state)
    }

    /// A node; `copies` are the extra output connectors of a tasklet, each
    /// a copy of one of its outputs (`(output, copy)`).
    /// `renamed` is a nested SDFG's with its return-value containers
    /// renamed, and the renames.
    fn node(
        &self,
        s: &State,
        id: NodeId,
        node: &Node,
        copies: &[(String, String)],
        renamed: Option<&(Sdfg, BTreeMap<String, String>)>,
    ) -> Result<Value, ExportError> {
        let conns = |names: &mut dyn Iterator<Item = &str>| -> Map<String, Value> {
            names.map(|n| (n.to_owned(), Value::Null)).collect()
        };
        Ok(match node {
            Node::Access(a) => {
                let mut attrs = json_map(json!({ "data": a.data }));
                let views: Vec<&str> = s
                    .in_edges(id)
                    .filter_map(|(_, _, e)| e.dst_conn.as_deref())
                    .chain(
                        s.out_edges(id)
                            .filter_map(|(_, _, e)| e.src_conn.as_deref()),
                    )
                    .collect();
                if views.contains(&sdfg_ir::node::VIEW_CONNECTOR) {
                    let c = conns(&mut std::iter::once(sdfg_ir::node::VIEW_CONNECTOR));
                    let inbound = s.in_edges(id).any(|(_, _, e)| {
                        e.dst_conn.as_deref() == Some(sdfg_ir::node::VIEW_CONNECTOR)
                    });
                    let key = if inbound {
                        "in_connectors"
                    } else {
                        "out_connectors"
                    };
                    attrs.insert(key.into(), Value::Object(c));
                }
                json!({"type": "AccessNode", "label": a.data, "attributes": attrs})
            }
            Node::MapEntry(m) => {
                let mut ranges: Vec<Range> = m.map.ranges.clone();
                let mut descending = Vec::new();
                for (d, r) in ranges.iter_mut().enumerate() {
                    if r.step.as_int() == Some(-1) {
                        std::mem::swap(&mut r.begin, &mut r.end);
                        r.step = SymExpr::int(1);
                        descending.push(d);
                    }
                }
                let mut v = json!({
                    "type": "MapEntry",
                    "label": m.map.label,
                    "attributes": {
                        "label": m.map.label,
                        "params": m.map.params,
                        "range": self.range_json(&Subset::new(ranges), &|| format!("in the range of the map `{}`", m.map.label))?,
                        "schedule": names::schedule_name(m.map.schedule),
                        "in_connectors": conns(&mut m.in_connectors.iter().map(String::as_str)),
                        "out_connectors": conns(&mut m.out_connectors.iter().map(String::as_str)),
                    },
                });
                if !descending.is_empty() {
                    v["attributes"][DESCENDING_MARK] = json!(descending);
                }
                v
            }
            Node::MapExit(x) => json!({
                "type": "MapExit",
                "label": x.label,
                "attributes": {
                    "in_connectors": conns(&mut x.in_connectors.iter().map(String::as_str)),
                    "out_connectors": conns(&mut x.out_connectors.iter().map(String::as_str)),
                },
            }),
            Node::Tasklet(t) => {
                let rank = |conn: &str, input: bool| -> usize {
                    let memlet = if input {
                        s.in_edges(id)
                            .find(|(_, _, e)| e.dst_conn.as_deref() == Some(conn))
                            .and_then(|(_, _, e)| e.memlet.as_ref())
                    } else {
                        s.out_edges(id)
                            .find(|(_, _, e)| e.src_conn.as_deref() == Some(conn))
                            .and_then(|(_, _, e)| e.memlet.as_ref())
                    };
                    memlet.map_or(0, |m| sdfg_ir::validate::squeezed_rank(&m.subset))
                };
                let bindings = t.bindings(rank);
                // GT4Py's timers go back as the C++ GT4Py writes (`cpp.rs`).
                let timer = copies
                    .is_empty()
                    .then(|| crate::cpp::write_timer(&t.body))
                    .flatten();
                let mut code = match &timer {
                    Some(c) => c.clone(),
                    None => python::write_tasklet(&t.body, bindings).map_err(|source| {
                        ExportError::Tasklet {
                            at: self.at(),
                            tasklet: t.label.clone(),
                            source,
                        }
                    })?,
                };
                for (output, copy) in copies {
                    code.push_str(&format!("{copy} = {output}\n"));
                }
                let outputs = t
                    .outputs
                    .iter()
                    .map(|c| c.name.as_str())
                    .chain(copies.iter().map(|(_, c)| c.as_str()));
                let copied: Map<String, Value> = copies
                    .iter()
                    .map(|(output, copy)| (copy.clone(), json!(output)))
                    .collect();
                let mut v = json!({
                    "type": "Tasklet",
                    "label": t.label,
                    "attributes": {
                        "label": t.label,
                        "code": match timer {
                            Some(_) => json!({"string_data": code, "language": "CPP"}),
                            None => python_code(&code),
                        },
                        "in_connectors": conns(&mut t.inputs.iter().map(|c| c.name.as_str())),
                        "out_connectors": conns(&mut { outputs }),
                    },
                });
                if !copied.is_empty() {
                    v["attributes"][COPIES_MARK] = Value::Object(copied);
                }
                // DaCe's connectors are a dictionary (written sorted), the
                // IR's a list in an order of its own.
                let order: Vec<&str> = t
                    .inputs
                    .iter()
                    .chain(&t.outputs)
                    .map(|c| c.name.as_str())
                    .collect();
                let sorted =
                    |cs: &[sdfg_ir::node::Connector]| cs.windows(2).all(|w| w[0].name < w[1].name);
                if !sorted(&t.inputs) || !sorted(&t.outputs) {
                    v["attributes"][ORDER_MARK] = json!(order);
                }
                v
            }
            Node::NestedSdfg(n) => {
                let (sdfg, renames) = match renamed {
                    Some((sdfg, renames)) => (sdfg, Some(renames)),
                    None => (&*n.sdfg, None),
                };
                let inner = Exporter {
                    sdfg,
                    offloaded: self.offloaded,
                }
                .sdfg()?;
                let name = |c: &String| -> String {
                    renames
                        .and_then(|r| r.get(c))
                        .cloned()
                        .unwrap_or_else(|| c.clone())
                };
                let inputs: Vec<String> = n.inputs.iter().map(name).collect();
                let outputs: Vec<String> = n.outputs.iter().map(name).collect();
                let mut mapping = Map::new();
                for (k, v) in &n.symbol_mapping {
                    let what = || format!("the value of `{k}` in the nested SDFG `{}`", n.label);
                    mapping.insert(k.clone(), json!(self.sym(v, &what)?));
                }
                let mut v = json!({
                    "type": "NestedSDFG",
                    "label": n.label,
                    "attributes": {
                        "label": n.label,
                        "sdfg": inner,
                        "symbol_mapping": mapping,
                        "in_connectors": conns(&mut inputs.iter().map(String::as_str)),
                        "out_connectors": conns(&mut outputs.iter().map(String::as_str)),
                    },
                });
                if let Some(r) = renames {
                    let back: Map<String, Value> = r
                        .iter()
                        .map(|(old, new)| (new.clone(), json!(old)))
                        .collect();
                    v["attributes"][RENAMED_MARK] = Value::Object(back);
                }
                v
            }
            Node::Library(l) => self.library(s, id, l)?,
            Node::Callback(c) => {
                return Err(self.unsupported(
                    format!("the host callback `{}` (calling `{}`)", c.label, c.callee),
                    "a DaCe callback refers to a Python object of the calling process",
                ));
            }
        })
    }

    fn library(
        &self,
        s: &State,
        id: NodeId,
        l: &sdfg_ir::LibraryNode,
    ) -> Result<Value, ExportError> {
        let what = || format!("the library node `{}` ({})", l.label, l.op.name());
        let lib: DaceLibrary = names::library(&l.op)
            .ok_or_else(|| self.unsupported(what(), "DaCe has no such library node"))?;
        let number = |lit: &Literal| -> Result<Value, ExportError> {
            literal_number(lit).ok_or_else(|| {
                self.unsupported(what(), "DaCe's BLAS nodes take a real alpha and beta")
            })
        };
        let mut attrs = json_map(json!({
            "name": l.label,
            "label": l.label,
            "schedule": names::schedule_name(l.schedule),
        }));
        match &l.op {
            LibraryOp::MatMul | LibraryOp::BatchedMatMul | LibraryOp::Dot | LibraryOp::Solve => {}
            LibraryOp::Gemm {
                alpha,
                beta,
                trans_a,
                trans_b,
                alpha_input,
                beta_input,
            } => {
                if *alpha_input || *beta_input {
                    return Err(self.unsupported(
                        what(),
                        "DaCe's Gemm takes alpha and beta as constants, not from a container",
                    ));
                }
                attrs.insert("alpha".into(), number(alpha)?);
                attrs.insert("beta".into(), number(beta)?);
                attrs.insert("transA".into(), json!(trans_a));
                attrs.insert("transB".into(), json!(trans_b));
                attrs.insert("cin".into(), json!(l.op.in_connectors().contains(&"_cin")));
            }
            LibraryOp::Gemv {
                alpha,
                beta,
                trans_a,
            } => {
                attrs.insert("alpha".into(), number(alpha)?);
                attrs.insert("beta".into(), number(beta)?);
                attrs.insert("transA".into(), json!(trans_a));
            }
            LibraryOp::Reduce { op, axes, identity } => {
                attrs.insert("wcr".into(), json!(names::wcr_lambda(*op)));
                // The IR numbers the axes of the input without its index
                // dimensions, DaCe all dimensions of the input's subset.
                let kept: Vec<usize> = s
                    .in_edges(id)
                    .find_map(|(_, _, e)| e.memlet.as_ref())
                    .map(|m| names::kept_dimensions(&m.subset))
                    .unwrap_or_default();
                let axes = match axes {
                    None => None,
                    Some(axes) => Some(
                        axes.iter()
                            .map(|&a| kept.get(a).copied())
                            .collect::<Option<Vec<_>>>()
                            .ok_or_else(|| {
                                self.unsupported(what(), "its axes exceed its input's dimensions")
                            })?,
                    ),
                };
                attrs.insert("axes".into(), json!(axes));
                attrs.insert(
                    "identity".into(),
                    identity
                        .as_ref()
                        .map_or(Value::Null, |i| json!(identity_text(i))),
                );
            }
            LibraryOp::Transpose => {
                let dtype = s
                    .in_edges(id)
                    .find_map(|(_, _, e)| e.memlet.as_ref())
                    .and_then(|m| self.sdfg.container(&m.data))
                    .map(|d| d.dtype.name());
                attrs.insert("dtype".into(), json!(dtype));
            }
            LibraryOp::TensorTranspose { axes } => {
                attrs.insert("axes".into(), json!(axes));
            }
            LibraryOp::Cholesky { lower } => {
                attrs.insert("lower".into(), json!(lower));
            }
        }
        let dace_conns = |ours: Vec<&str>| -> Map<String, Value> {
            ours.into_iter()
                .filter_map(|c| lib.dace_connector(c))
                .map(|c| (c.to_owned(), Value::Null))
                .collect()
        };
        attrs.insert(
            "in_connectors".into(),
            Value::Object(dace_conns(l.op.in_connectors())),
        );
        attrs.insert(
            "out_connectors".into(),
            Value::Object(dace_conns(l.op.out_connectors())),
        );
        Ok(json!({
            "type": "LibraryNode",
            "label": l.label,
            "classpath": lib.classpath,
            "attributes": attrs,
        }))
    }

    fn memlet(
        &self,
        s: &State,
        m: &Memlet,
        (src, dst): (NodeId, NodeId),
        connectors: (Option<&str>, Option<&str>),
    ) -> Result<Value, ExportError> {
        let rank_of = |data: &str| self.sdfg.container(data).map(DataDesc::rank);
        let what = || format!("in the memlet of `{}`", m.data);
        let subset = |sub: &Subset, data: Option<&str>| {
            // DaCe's scalars have the shape `[1]`: their subset is `0`.
            if sub.rank() == 0 && data.and_then(rank_of).unwrap_or(0) == 0 {
                self.range_json(&Subset::at(vec![SymExpr::int(0)]), &what)
            } else {
                self.range_json(sub, &what)
            }
        };
        let mut attrs = json_map(json!({
            "data": m.data,
            "subset": subset(&m.subset, Some(&m.data))?,
            "volume": self.sym(&m.volume, &what)?,
            "dynamic": m.dynamic,
            "wcr": m.wcr.map(names::wcr_lambda),
        }));
        let (Some(src_node), Some(dst_node)) = (s.node(src), s.node(dst)) else {
            return Ok(json!({"type": "Memlet", "attributes": attrs}));
        };
        let (src_conn, dst_conn) = connectors;
        if let (Node::Access(a), Node::Access(_)) = (src_node, dst_node) {
            // A copy: DaCe needs to know which end `data` names.
            attrs.insert("is_data_src".into(), json!(a.data == m.data));
        }
        if let Some(end) = copies::other_end(src_node, dst_node, src_conn, dst_conn, m) {
            // A copy: its other end is written out, as the IR reads it.
            // DaCe's default for a missing `other_subset` is not the IR's
            // (the whole other container where the element counts may be
            // equal, or its start), so leaving it out would move other
            // elements.
            let shape = self
                .sdfg
                .container(end.container)
                .map(DataDesc::shape)
                .ok_or_else(|| ExportError::Unsupported {
                    at: String::new(),
                    what: format!("the copy into or out of `{}`", end.container),
                    why: "the container is not declared".to_owned(),
                })?;
            let o = m.other_end(&shape);
            attrs.insert("other_subset".into(), subset(&o, Some(end.container))?);
            if m.other_subset.is_none() {
                attrs.insert(IMPLIED_OTHER_MARK.into(), json!(true));
            }
            // A reshape (ends of different ranks, one run of elements
            // each, as map-to-copy makes them): DaCe's validator counts
            // the elements of each end and cannot always prove them equal
            // (`R * ceiling(R**i) * ceiling(R**(K - i - 1))` against
            // `ceiling(R**K)`); map-to-copy established them equal and the
            // simulator checks them at every copy, so DaCe's check is
            // waived for this memlet, as its `allow_oob` property provides.
            if o.rank() != m.subset.rank() {
                attrs.insert("allow_oob".into(), json!(true));
            }
        } else if let Some(o) = &m.other_subset {
            attrs.insert("other_subset".into(), subset(o, None)?);
        }
        Ok(json!({"type": "Memlet", "attributes": attrs}))
    }
}

/// The assignments of a transition in steps DaCe can take one edge each:
/// within a step no assignment reads or re-assigns a symbol another
/// assignment of the step assigns, so evaluating them together (as DaCe
/// may) and in order (as the IR does) agree.
fn steps(t: &Transition) -> Vec<Vec<&sdfg_ir::control::Assignment>> {
    let mut steps: Vec<Vec<&sdfg_ir::control::Assignment>> = Vec::new();
    let mut assigned: BTreeSet<&str> = BTreeSet::new();
    for a in &t.assignments {
        let reads = a.value.reads();
        let conflict = assigned.contains(a.symbol.as_str())
            || a.value
                .free_symbols()
                .iter()
                .chain(reads.iter())
                .any(|n| assigned.contains(n.as_str()));
        if conflict || steps.is_empty() {
            steps.push(Vec::new());
            assigned.clear();
        }
        assigned.insert(&a.symbol);
        if let Some(step) = steps.last_mut() {
            step.push(a);
        }
    }
    steps
}

/// Whether `name` is a return value (`__return`, `__return_0`, ...).
pub fn is_return_value(name: &str) -> bool {
    name == "__return"
        || name
            .strip_prefix("__return_")
            .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
}

fn json_map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn python_code(text: &str) -> Value {
    json!({"string_data": text, "language": "Python"})
}

fn jump(kind: &str, label: &str) -> Value {
    json!({
        "type": kind,
        "label": label,
        "attributes": {},
        "nodes": [],
        "edges": [],
        "collapsed": false,
    })
}

fn added_state(label: &str) -> Value {
    json!({
        "type": "SDFGState",
        "label": label,
        "attributes": { ADDED_MARK: true },
        "nodes": [],
        "edges": [],
        "scope_dict": {"-1": []},
        "collapsed": false,
    })
}

/// A reduction's identity as DaCe stores it: the text of a Python number
/// (`"0"`, `"-inf"`), which DaCe's expansions put into tasklet code.
fn identity_text(l: &Literal) -> String {
    match *l {
        Literal::Bool(b) => (if b { "True" } else { "False" }).to_owned(),
        Literal::Int { value, .. } => value.to_string(),
        Literal::UInt { value, .. } => value.to_string(),
        Literal::Float { value, .. } if value.is_nan() => "nan".to_owned(),
        Literal::Float { value, .. } if value.is_infinite() => {
            (if value > 0.0 { "inf" } else { "-inf" }).to_owned()
        }
        Literal::Float { value, .. } => format!("{value:?}"),
        Literal::Complex { re, im, .. } => format!("complex({re:?}, {im:?})"),
    }
}

/// A real literal as a JSON number; `None` for complex values and
/// non-finite floats, which JSON cannot hold as numbers.
fn literal_number(l: &Literal) -> Option<Value> {
    match *l {
        Literal::Bool(b) => Some(json!(i64::from(b))),
        Literal::Int { value, .. } => Some(json!(value)),
        Literal::UInt { value, .. } => Some(json!(value)),
        Literal::Float { value, .. } if value.is_finite() => Some(json!(value)),
        Literal::Float { .. } | Literal::Complex { .. } => None,
    }
}
