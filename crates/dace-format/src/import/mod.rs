//! DaCe's `.sdfg` files read into the IR's SDFG.
//!
//! The import reads the subset of DaCe's schema that DaCe 2.0 writes for
//! NumPy-style programs with explicit control flow (`LoopRegion`,
//! `ConditionalBlock`, jumps), and everything the export writes, which it
//! gives back exactly: the marks the export leaves (`_meta_sdfg_*`, see
//! [`mod@crate::export`]) undo what it added. The mapping is the export's,
//! read backwards:
//!
//! - control-flow regions must be chains (one edge out of each block but
//!   the last): DaCe's explicit control flow, not a state machine;
//!   interstate edges with conditions are refused, their assignments
//!   become the transition of the block they leave;
//! - tasklet code (Python) is read by [`crate::python::read_tasklet`], its
//!   connectors typed from their memlets' containers;
//! - library nodes by class path, with DaCe's connector names renamed;
//! - symbolic properties in either of DaCe's spellings (`$N` or `N`);
//! - DaCe's symbols that hold values the IR's integer symbols cannot
//!   (`float64`, `complex128`, bitwise updates) are kept in containers,
//!   and map parameters that shadow symbols are renamed (`import/symbols.rs`);
//! - a subtracting write-conflict resolution is a sum of the negated
//!   value;
//! - a copy whose other subset DaCe leaves out gets the one DaCe means
//!   (`copies.rs`).
//!
//! Everything else is refused by name with its place in the file: the
//! JSON path of the element (`nodes[2].nodes[5]`) and what it is.

mod device_maps;
mod offsets;
mod raise;
mod symbols;

use crate::copies;
use crate::export::{
    ADDED_MARK, ARGUMENTS_MARK, COPIES_MARK, DEFAULT_STORAGE_MARK, DESCENDING_MARK,
    IMPLIED_OTHER_MARK, ORDER_MARK, RENAMED_MARK, SCALAR_MARK, TRAILING_RETURN_MARK,
    TRANSIENT_MARK,
};
use crate::names;
use crate::python::{self, TaskletConnectors};
use crate::symbolic::{parse_cond, parse_expr};
use sdfg_ir::control::{
    Assignment, BlockKind, ConditionalBlock, ControlBlock, LoopBlock, Region, Transition,
};
use sdfg_ir::node::{
    AccessNode, Connector, Edge, LibraryNode, Map, MapEntry, MapExit, NestedSdfg, Tasklet,
    VIEW_CONNECTOR,
};
use sdfg_ir::quote;
use sdfg_ir::{
    DType, DataDesc, DataKind, Layout, LibraryOp, Lifetime, Literal, Memlet, Node, NodeId, Range,
    Sdfg, State, Storage, Subset, SymCond, SymExpr, Wcr,
};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Why a DaCe file cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ImportError {
    /// Where in the file: the JSON path of the element.
    pub path: String,
    /// What is wrong, naming the element.
    pub message: String,
}

/// Reads the text of a DaCe `.sdfg` file.
pub fn from_dace_str(text: &str) -> Result<Sdfg, ImportError> {
    let value: Value = serde_json::from_str(text).map_err(|e| ImportError {
        path: "(file)".into(),
        message: format!("not JSON: {e}"),
    })?;
    import(&value)
}

/// Reads a DaCe SDFG from its JSON value.
pub fn import(value: &Value) -> Result<Sdfg, ImportError> {
    let mut out = sdfg(value, "")?;
    device_maps::resolve_device_defaults(&mut out);
    Ok(out)
}

fn err(path: &str, message: impl Into<String>) -> ImportError {
    ImportError {
        path: if path.is_empty() {
            "(root)".into()
        } else {
            path.to_owned()
        },
        message: message.into(),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else if key.starts_with('[') {
        format!("{path}{key}")
    } else {
        format!("{path}.{key}")
    }
}

fn str_of<'a>(v: &'a Value, path: &str, key: &str) -> Result<&'a str, ImportError> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| err(path, format!("expected the string `{key}`")))
}

fn array_of<'a>(v: &'a Value, path: &str, key: &str) -> Result<&'a [Value], ImportError> {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .ok_or_else(|| err(path, format!("expected the list `{key}`")))
}

/// The position `v[key]` names among `len` blocks or nodes: DaCe writes it
/// as a string (`"3"`), sometimes as a number.
fn index_of(v: &Value, key: &str, len: usize) -> Option<usize> {
    v.get(key)
        .and_then(|x| {
            x.as_str()
                .and_then(|s| s.parse().ok())
                .or_else(|| x.as_u64().and_then(|n| usize::try_from(n).ok()))
        })
        .filter(|&i| i < len)
}

fn flag(attrs: &Value, key: &str) -> bool {
    attrs.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// A symbolic property: DaCe writes strings, and sometimes numbers.
fn sym(v: &Value, path: &str) -> Result<SymExpr, ImportError> {
    match v {
        Value::String(s) => parse_expr(s).map_err(|e| err(path, e.to_string())),
        Value::Number(n) => n
            .as_i64()
            .map(SymExpr::int)
            .ok_or_else(|| err(path, format!("the number {n} is not a 64-bit integer"))),
        other => Err(err(
            path,
            format!("expected a symbolic expression, found {other}"),
        )),
    }
}

fn syms(v: &Value, path: &str, key: &str) -> Result<Vec<SymExpr>, ImportError> {
    array_of(v, path, key)?
        .iter()
        .enumerate()
        .map(|(k, e)| sym(e, &join(path, &format!("{key}[{k}]"))))
        .collect()
}

/// The text of a DaCe `CodeBlock` (`{"string_data": ..., "language": ...}`),
/// which must be Python.
fn code_text<'a>(v: &'a Value, path: &str) -> Result<&'a str, ImportError> {
    let lang = v
        .get("language")
        .and_then(Value::as_str)
        .unwrap_or("Python");
    if lang != "Python" {
        return Err(err(path, format!("code in {lang} (only Python is read)")));
    }
    v.get("string_data")
        .and_then(Value::as_str)
        .ok_or_else(|| err(path, "expected a code block"))
}

fn sdfg(v: &Value, path: &str) -> Result<Sdfg, ImportError> {
    // A symbol is promoted to a container where reading it as a symbol
    // fails (`symbols`): each attempt that fails for that reason names the
    // symbols to promote, and the set only grows, within the SDFG's symbols.
    let mut promoted = BTreeSet::new();
    loop {
        let mut requests = BTreeSet::new();
        match sdfg_with(v, path, &promoted, &mut requests) {
            Err(_) if !requests.is_subset(&promoted) => promoted.extend(requests),
            result => return result,
        }
    }
}

/// Reads one SDFG with the symbols `promoted` kept in containers; where a
/// symbol has to be promoted to read the file, adds it to `requests` (and
/// fails).
fn sdfg_with(
    v: &Value,
    path: &str,
    promoted: &BTreeSet<String>,
    requests: &mut BTreeSet<String>,
) -> Result<Sdfg, ImportError> {
    if v.get("type").and_then(Value::as_str) != Some("SDFG") {
        return Err(err(path, "expected an SDFG"));
    }
    let attrs = &v["attributes"];
    let apath = join(path, "attributes");
    let name = str_of(attrs, &apath, "name")?.to_owned();
    let mut out = Sdfg::new(name);
    if let Some(arrays) = attrs.get("_arrays").and_then(Value::as_object) {
        for (n, d) in arrays {
            let dpath = join(&apath, &format!("_arrays.{n}"));
            out.containers.insert(n.clone(), data(d, &dpath, n)?);
        }
    }
    let mut labels = Labels::default();
    if let Some(symbols) = attrs.get("symbols").and_then(Value::as_object) {
        for (n, t) in symbols {
            let type_name = t.as_str().map_or_else(|| t.to_string(), str::to_owned);
            let dtype = match type_name.as_str() {
                "bool" | "bool_" => Some(DType::Bool),
                other => DType::from_name(other),
            };
            match dtype {
                Some(dtype) if promoted.contains(n) => {
                    // Transient where an edge assigns it (set below).
                    out.containers.insert(
                        n.clone(),
                        DataDesc::scalar(dtype).with_lifetime(Lifetime::External),
                    );
                    labels.promoted.insert(n.clone());
                }
                Some(t) if t.is_integer() => {
                    out.symbols.insert(n.clone(), t);
                }
                _ => {
                    labels.data_symbols.insert(n.clone(), type_name);
                }
            }
            if dtype.is_some() {
                labels.promotable.insert(n.clone());
            }
        }
    }
    labels.offsets = offsets::read(attrs, &apath)?;
    let result = sdfg_body(v, path, &apath, attrs, &mut labels, out).map(|mut out| {
        offsets::apply(&mut out.body, &labels.offsets);
        out
    });
    requests.append(&mut labels.requests);
    result
}

/// The rest of [`sdfg_with`]: the control flow, the arguments, and the
/// checks of the symbols the IR keeps elsewhere.
fn sdfg_body(
    v: &Value,
    path: &str,
    apath: &str,
    attrs: &Value,
    labels: &mut Labels,
    mut out: Sdfg,
) -> Result<Sdfg, ImportError> {
    let mut body = region_chain(v, path, labels, &out)?;
    for (n, d) in std::mem::take(&mut labels.new_containers) {
        out.containers.insert(n, d);
    }
    for n in &labels.promoted {
        if let Some(d) = out.containers.get_mut(n)
            && labels.assigned.contains(n)
        {
            d.transient = true;
            d.lifetime = Lifetime::Scope;
        }
    }
    // DaCe 2.0 declares a loop's variable with the loop, not among the
    // SDFG's symbols.
    let mut loop_variables = Vec::new();
    for b in &body.blocks {
        b.walk(&mut |b| {
            if let BlockKind::Loop(l) = &b.kind
                && let Some(v) = &l.variable
            {
                loop_variables.push(v.clone());
            }
        });
    }
    loop_variables.extend(labels.do_while_variables.iter().cloned());
    for v in loop_variables {
        out.symbols.entry(v).or_insert(DType::Int64);
    }
    let mut failure = None;
    body.for_each_region_mut(&mut |region| {
        for b in &mut region.blocks {
            if let BlockKind::State(s) = &mut b.kind
                && failure.is_none()
                && let Err(e) = symbols::rename_shadowing_parameters(s, &out)
            {
                failure = Some(err(apath, format!("in the state `{}`: {e}", b.label)));
            }
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    read_scalars_by_name(&mut body, &out);
    // Names the IR does not hold as symbols, used where only symbols can
    // be: a data symbol there is promoted (the next attempt), a promoted
    // one is refused.
    let used = symbolic_uses(&body, &out);
    for (n, t) in &labels.data_symbols {
        if used.contains(n) {
            if labels.promotable.contains(n) {
                labels.requests.insert(n.clone());
            }
            return Err(data_symbol_refusal(apath, n, t));
        }
    }
    for n in &labels.promoted {
        if used.contains(n) {
            let t = out.containers.get(n).map_or(DType::Int64, |d| d.dtype);
            return Err(err(
                apath,
                format!(
                    "the symbol `{n}` of type {t} holds a value the symbolic layer cannot (a {}), and sizes a map, a memlet or a nested SDFG's symbol: the IR keeps such a value in a container, which cannot size them",
                    if t.is_integer() {
                        "bitwise or non-polynomial expression"
                    } else {
                        "non-integer"
                    },
                ),
            ));
        }
        if !path.is_empty() && !labels.assigned.contains(n) {
            return Err(err(
                apath,
                format!(
                    "the nested SDFG's symbol `{n}` holds data and is passed in by its symbol mapping: the IR keeps such a value in a container, which a symbol mapping cannot pass"
                ),
            ));
        }
    }
    if let Some(label) = attrs.get(TRAILING_RETURN_MARK).and_then(Value::as_str) {
        body.blocks
            .push(ControlBlock::new(labels.take(label), BlockKind::Return));
    }
    out.body = body;
    out.arguments = match attrs.get(ARGUMENTS_MARK).and_then(Value::as_array) {
        Some(args) => args
            .iter()
            .filter_map(|a| a.as_str().map(str::to_owned))
            .collect(),
        None => dace_arguments(attrs, &out),
    };
    Ok(out)
}

/// The names control flow, map ranges, memlets, nested SDFGs' symbol
/// mappings, containers' shapes and tasklet code read as symbols (tasklet
/// code: the names that are neither its connectors nor its locals).
fn symbolic_uses(body: &Region, sdfg: &Sdfg) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    let walk = |b: &ControlBlock, used: &mut BTreeSet<String>| {
        used.extend(b.transition.reads());
        for a in &b.transition.assignments {
            used.extend(a.value.free_symbols());
        }
        match &b.kind {
            BlockKind::Loop(l) => {
                used.extend(l.condition.free_symbols());
                used.extend(
                    l.init
                        .iter()
                        .chain(&l.update)
                        .flat_map(SymExpr::free_symbols),
                );
            }
            BlockKind::Conditional(c) => {
                used.extend(c.branches.iter().flat_map(|(c, _)| c.free_symbols()));
            }
            BlockKind::State(s) => {
                for (_, n) in s.nodes() {
                    match n {
                        Node::Tasklet(t) => {
                            let mut names = Vec::new();
                            sdfg_ir::code::body_names(&t.body, &mut names);
                            let bound: BTreeSet<&str> = t
                                .inputs
                                .iter()
                                .chain(&t.outputs)
                                .map(|c| c.name.as_str())
                                .collect();
                            used.extend(names.into_iter().filter(|n| !bound.contains(n.as_str())));
                        }
                        Node::NestedSdfg(nested) => {
                            used.extend(
                                nested
                                    .symbol_mapping
                                    .values()
                                    .flat_map(SymExpr::free_symbols),
                            );
                        }
                        Node::MapEntry(m) => {
                            used.extend(m.map.ranges.iter().flat_map(Range::free_symbols));
                        }
                        _ => {}
                    }
                }
                for (_, _, _, e) in s.edges() {
                    if let Some(m) = &e.memlet {
                        used.extend(m.free_symbols());
                    }
                }
            }
            _ => {}
        }
    };
    for b in &body.blocks {
        b.walk(&mut |b| walk(b, &mut used));
    }
    for c in sdfg.containers.values() {
        used.extend(c.free_symbols());
    }
    used
}

/// DaCe's calling convention where the file does not carry the IR's:
/// `arg_names`, then the other non-transient containers and the free
/// symbols (those no transition or loop assigns), by name.
fn dace_arguments(attrs: &Value, sdfg: &Sdfg) -> Vec<String> {
    let mut args: Vec<String> = attrs
        .get("arg_names")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|a| a.as_str().map(str::to_owned))
        .collect();
    for (n, d) in &sdfg.containers {
        if !d.transient && !args.contains(n) {
            args.push(n.clone());
        }
    }
    let mut assigned = BTreeSet::new();
    sdfg.walk_blocks(&mut |_, _, b| {
        for a in &b.transition.assignments {
            assigned.insert(a.symbol.clone());
        }
        if let BlockKind::Loop(l) = &b.kind
            && let Some(v) = &l.variable
        {
            assigned.insert(v.clone());
        }
    });
    for s in sdfg.symbols.keys() {
        if !assigned.contains(s) && !args.contains(s) {
            args.push(s.clone());
        }
    }
    args
}

fn data(v: &Value, path: &str, name: &str) -> Result<DataDesc, ImportError> {
    let kind = str_of(v, path, "type")?;
    let attrs = &v["attributes"];
    let apath = join(path, "attributes");
    // DaCe leaves out properties at their default, `int32` for the type.
    let dtype_name = match attrs.get("dtype") {
        None => "int32",
        Some(t) => t
            .as_str()
            .ok_or_else(|| err(&apath, format!("the element type {t} of `{name}`")))?,
    };
    let dtype = match dtype_name {
        "bool" | "bool_" => DType::Bool,
        other => DType::from_name(other)
            .ok_or_else(|| err(&apath, format!("the element type `{other}` of `{name}`")))?,
    };
    let storage_name = attrs
        .get("storage")
        .and_then(Value::as_str)
        .unwrap_or("Default");
    let storage = if flag(attrs, DEFAULT_STORAGE_MARK) {
        Storage::Default
    } else {
        names::storage_from(storage_name)
            .ok_or_else(|| err(&apath, format!("the storage `{storage_name}` of `{name}`")))?
    };
    let mut transient = flag(attrs, "transient");
    if let Some(t) = attrs.get(TRANSIENT_MARK).and_then(Value::as_bool) {
        transient = t;
    }
    let lifetime = match attrs.get("lifetime").and_then(Value::as_str) {
        Some(l) => names::lifetime_from(l)
            .ok_or_else(|| err(&apath, format!("the lifetime `{l}` of `{name}`")))?,
        // DaCe's default; the IR's arguments are the caller's.
        None if !transient => Lifetime::External,
        None => Lifetime::Scope,
    };
    let layout = || -> Result<Layout, ImportError> {
        let shape = syms(attrs, &apath, "shape")?;
        let strides = match attrs.get("strides") {
            Some(_) => syms(attrs, &apath, "strides")?,
            None => Layout::contiguous(shape.clone()).strides,
        };
        if strides.len() != shape.len() {
            return Err(err(
                &apath,
                format!(
                    "`{name}` has {} strides for {} dimensions",
                    strides.len(),
                    shape.len()
                ),
            ));
        }
        let total_size = match attrs.get("total_size") {
            Some(t) => sym(t, &join(&apath, "total_size"))?,
            None => Layout::contiguous(shape.clone()).total_size,
        };
        // Index offsets (`offset`) are added to the indices instead
        // (`offsets.rs`).
        if let Some(offsets) = attrs.get("offset").and_then(Value::as_array)
            && offsets.len() != shape.len()
        {
            return Err(err(
                &join(&apath, "offset"),
                format!(
                    "`{name}` has {} index offsets for {} dimensions",
                    offsets.len(),
                    shape.len()
                ),
            ));
        }
        let offset = match attrs.get("start_offset") {
            Some(o) => sym(o, &join(&apath, "start_offset"))?,
            None => SymExpr::int(0),
        };
        Ok(Layout {
            shape,
            strides,
            offset,
            total_size,
        })
    };
    let kind = match kind {
        "Scalar" => DataKind::Scalar,
        "Array" if flag(attrs, SCALAR_MARK) => DataKind::Scalar,
        "Array" => DataKind::Array(layout()?),
        "ArrayView" | "View" => DataKind::View(layout()?),
        other => {
            return Err(err(
                path,
                format!("`{name}` is a {other}, outside the supported subset"),
            ));
        }
    };
    Ok(DataDesc {
        dtype,
        transient,
        storage,
        lifetime,
        kind,
    })
}

/// What the walk over one SDFG's control flow carries: the block labels
/// taken (they must be unique in the IR's SDFG, nested SDFGs apart;
/// DaCe's need not be), and what it knows and learns of the SDFG's
/// symbols that the IR does not hold as symbols (`symbols`).
#[derive(Default)]
struct Labels {
    taken: BTreeSet<String>,
    /// Symbols substituted where they are read ([`DataSymbols`]).
    data_symbols: DataSymbols,
    /// Symbols kept in scalar containers of their names.
    promoted: BTreeSet<String>,
    /// The promoted symbols some interstate edge assigns.
    assigned: BTreeSet<String>,
    /// Symbols of a type the IR has, which could be promoted.
    promotable: BTreeSet<String>,
    /// Symbols this attempt found it has to promote.
    requests: BTreeSet<String>,
    /// The variables of do-while loops, which transitions assign.
    do_while_variables: BTreeSet<String>,
    /// Containers the walk adds (computed conditions).
    new_containers: BTreeMap<String, DataDesc>,
    /// The containers' index offsets (`offsets.rs`): the states are read
    /// in DaCe's indices, and shifted to the IR's after.
    offsets: offsets::Offsets,
}

impl Labels {
    fn take(&mut self, label: &str) -> String {
        let mut l = label.to_owned();
        let mut k = 1;
        while self.taken.contains(&l) {
            l = format!("{label}_{k}");
            k += 1;
        }
        self.taken.insert(l.clone());
        l
    }

    /// A name for a new container of `sdfg`, from `base`.
    fn container_name(&self, base: &str, sdfg: &Sdfg) -> String {
        symbols::fresh(base, |n| {
            sdfg.containers.contains_key(n)
                || sdfg.symbols.contains_key(n)
                || self.new_containers.contains_key(n)
                || self.data_symbols.contains_key(n)
        })
    }

    /// A block computing the DaCe condition `text` into the `bool`
    /// container `target` (a new label each time).
    fn condition_block(
        &mut self,
        text: &str,
        target: &str,
        label: &str,
        sdfg: &Sdfg,
        path: &str,
    ) -> Result<ControlBlock, ImportError> {
        let label = self.take(&format!("{label}_condition"));
        let state = symbols::condition_state(&label, text, target, sdfg, &self.offsets)
            .map_err(|e| err(path, format!("the condition {}: {e}", quote(text))))?;
        Ok(ControlBlock::new(label, BlockKind::State(state)))
    }

    /// A DaCe condition: read symbolically where the symbolic layer can
    /// (integer symbols, and promoted integer or boolean symbols, which
    /// become reads); else the new `bool` container a block computing it
    /// ([`Self::condition_block`]) is to write before the test, and the
    /// condition reading that container.
    fn condition(&mut self, text: &str, label: &str, sdfg: &Sdfg) -> (Option<String>, SymCond) {
        // A name that is a container (a promoted symbol, or a scalar DaCe
        // reads by name) holding neither an integer nor a truth value
        // cannot be compared symbolically.
        if let Ok(c) = parse_cond(text)
            && !c.free_symbols().iter().any(|n| {
                sdfg.containers
                    .get(n)
                    .is_some_and(|d| !(d.dtype.is_integer() || d.dtype == DType::Bool))
            })
        {
            return (None, c);
        }
        let name = self.container_name(&format!("{label}_cond"), sdfg);
        self.new_containers
            .insert(name.clone(), DataDesc::scalar(DType::Bool).into_transient());
        let c = symbols::truth_of(&name);
        (Some(name), c)
    }
}

/// DaCe's symbols that hold data, not integers: `I_index = I[j, k]` on an
/// interstate edge, read by the condition of the conditional block the
/// edge enters (DaCe's spelling of `if I[j, k]:`), by their type names.
/// The IR's symbols are integers, but its conditions read containers, so
/// such a symbol is replaced by the value it is assigned in the condition
/// of the block its edge enters, which reads the same data at the same
/// point. Where it is used anywhere else, it is promoted to a container
/// (`symbols`).
type DataSymbols = BTreeMap<String, String>;

/// DaCe's control flow reads an integer scalar container by its name
/// (`(n < maxiter)`); the IR's symbolic expressions read containers with
/// an index (`maxiter[0]`). Names of such containers that are not symbols
/// become reads.
fn read_scalars_by_name(body: &mut Region, sdfg: &Sdfg) {
    let map: BTreeMap<String, SymExpr> = sdfg
        .containers
        .iter()
        .filter(|(n, d)| {
            matches!(d.kind, DataKind::Scalar)
                && (d.dtype.is_integer() || d.dtype == DType::Bool)
                && !sdfg.symbols.contains_key(*n)
        })
        .map(|(n, _)| (n.clone(), SymExpr::read(n.clone(), vec![SymExpr::int(0)])))
        .collect();
    if map.is_empty() {
        return;
    }
    body.for_each_region_mut(&mut |region| {
        for b in &mut region.blocks {
            for a in &mut b.transition.assignments {
                a.value = a.value.subs(&map);
            }
            match &mut b.kind {
                BlockKind::Loop(l) => {
                    l.condition = l.condition.subs(&map);
                    l.init = l.init.as_ref().map(|e| e.subs(&map));
                    l.update = l.update.as_ref().map(|e| e.subs(&map));
                }
                BlockKind::Conditional(c) => {
                    for (cond, _) in &mut c.branches {
                        *cond = cond.subs(&map);
                    }
                }
                _ => {}
            }
        }
    });
}

fn data_symbol_refusal(path: &str, name: &str, dtype: &str) -> ImportError {
    err(
        path,
        format!(
            "the symbol `{name}` has the type {dtype}, and the IR's symbols are integers: DaCe keeps a data-dependent value in it, which the import reads only where the condition of the block its assignment enters tests it (the IR keeps such values in containers)"
        ),
    )
}

/// The block a region of `len` blocks starts at (`None` for an empty
/// region), read as DaCe reads it: the one block without predecessors
/// (`has_in` holds those with some) starts the region, whatever the
/// `start_block` field says, because DaCe's transformations add blocks in
/// front of a region's start and leave the field behind (jacobi_1d after
/// `auto_optimize` for the GPU starts at its new copy-in state and still
/// says `start_block: 0`). Only where that is ambiguous (no block or
/// several without predecessors) does the field decide, and then it must
/// be the index of one of the region's blocks: anything else (past the
/// end, negative, not an integer, null, missing) is refused by name rather
/// than guessed.
fn start_block(
    v: &Value,
    path: &str,
    len: usize,
    has_in: &BTreeSet<usize>,
) -> Result<Option<usize>, ImportError> {
    if len == 0 {
        return Ok(None);
    }
    let sources: Vec<usize> = (0..len).filter(|k| !has_in.contains(k)).collect();
    if let [only] = sources[..] {
        return Ok(Some(only));
    }
    let field = v.get("start_block");
    if let Some(k) = field
        .and_then(Value::as_u64)
        .and_then(|k| usize::try_from(k).ok())
        .filter(|&k| k < len)
    {
        return Ok(Some(k));
    }
    let label = v
        .get("attributes")
        .and_then(|a| a.get("label").or_else(|| a.get("name")))
        .and_then(Value::as_str)
        .map_or_else(String::new, |l| format!(" `{l}`"));
    let ambiguity = if sources.is_empty() {
        "every block has a predecessor".to_owned()
    } else {
        let list: Vec<String> = sources.iter().map(ToString::to_string).collect();
        format!("the blocks {} have no predecessor", list.join(", "))
    };
    // The value is described, not repeated: a mutated file may hold a
    // string of any length there.
    let found = match field {
        None => "it has no `start_block`".to_owned(),
        Some(Value::Null) => "its `start_block` is null".to_owned(),
        Some(Value::Number(n)) => format!(
            "its `start_block` {n} is not the index of one of its {len} blocks (0 to {})",
            len - 1
        ),
        Some(Value::String(_)) => "its `start_block` is a string, not an integer".to_owned(),
        Some(_) => "its `start_block` is not an integer".to_owned(),
    };
    Err(err(
        &join(path, "start_block"),
        format!("the region{label} has no start: {ambiguity}, and {found}"),
    ))
}

/// The blocks of a region (`nodes`, `edges`, `start_block`) as a chain.
fn region_chain(
    v: &Value,
    path: &str,
    labels: &mut Labels,
    sdfg: &Sdfg,
) -> Result<Region, ImportError> {
    // A state machine, raised to the explicit control flow read below.
    let raised = raise::raise(v, path)?;
    let v = raised.as_ref().unwrap_or(v);
    let nodes = array_of(v, path, "nodes")?;
    let edges = array_of(v, path, "edges")?;
    let mut next: BTreeMap<usize, (usize, &Value, usize)> = BTreeMap::new();
    let mut has_in = BTreeSet::new();
    for (k, e) in edges.iter().enumerate() {
        let epath = join(path, &format!("edges[{k}]"));
        let end = |key: &str| {
            index_of(e, key, nodes.len())
                .ok_or_else(|| err(&epath, format!("`{key}` is not a block of the region")))
        };
        let (src, dst) = (end("src")?, end("dst")?);
        if next
            .insert(src, (dst, &e["attributes"]["data"], k))
            .is_some()
        {
            return Err(err(
                &epath,
                format!(
                    "block {src} has several successors: a state machine, outside the supported subset (DaCe's explicit control flow is read)"
                ),
            ));
        }
        if !has_in.insert(dst) {
            return Err(err(
                &epath,
                format!(
                    "block {dst} has several predecessors: a state machine, outside the supported subset"
                ),
            ));
        }
    }
    let start = start_block(v, path, nodes.len(), &has_in)?;
    let mut region = Region::default();
    // Assignments of the edges since the last block of the IR's.
    let mut pending: Vec<Assignment> = Vec::new();
    // Data symbols the next block's conditions read (`DataSymbols`).
    let mut replace: Vec<(String, SymExpr)> = Vec::new();
    let mut at = start;
    let mut seen = BTreeSet::new();
    while let Some(k) = at {
        if !seen.insert(k) {
            return Err(err(path, "the region's edges form a cycle"));
        }
        let node = &nodes[k];
        let bpath = join(path, &format!("nodes[{k}]"));
        let added = flag(&node["attributes"], ADDED_MARK);
        if !(added && (!region.blocks.is_empty() || pending.is_empty())) {
            if let Some(last) = region.blocks.last_mut() {
                last.transition.assignments.append(&mut pending);
            }
            let (before, mut b) = block(node, &bpath, labels, sdfg)?;
            if !replace.is_empty() {
                let BlockKind::Conditional(c) = &mut b.kind else {
                    return Err(unsubstituted(&bpath, &replace, labels));
                };
                let map: BTreeMap<String, SymExpr> = replace.drain(..).collect();
                for (cond, _) in &mut c.branches {
                    *cond = cond.subs(&map);
                }
            }
            region.blocks.extend(before);
            region.blocks.push(b);
        }
        at = match next.get(&k) {
            Some(&(dst, edge, ek)) => {
                let epath = join(path, &format!("edges[{ek}].attributes.data"));
                let mut computed = Vec::new();
                let mut plain = Vec::new();
                for (symbol, text) in interstate(edge, &epath)? {
                    if labels.promoted.contains(&symbol) {
                        computed.push((symbol, text));
                        continue;
                    }
                    let value = parse_expr(&text).map_err(|x| {
                        if labels.promotable.contains(&symbol) {
                            labels.requests.insert(symbol.clone());
                        }
                        err(&epath, x.to_string())
                    })?;
                    if labels.data_symbols.contains_key(&symbol) {
                        replace.push((symbol, value));
                    } else {
                        plain.push(Assignment { symbol, value });
                    }
                }
                if !computed.is_empty() {
                    // The edge's other assignments follow the state that
                    // computes the promoted ones, and must not read them.
                    let names: BTreeSet<&str> = computed.iter().map(|(n, _)| n.as_str()).collect();
                    let reads_new = |e: &SymExpr| {
                        e.free_symbols()
                            .iter()
                            .chain(&e.reads())
                            .find(|n| names.contains(n.as_str()))
                            .cloned()
                    };
                    if let Some((a, n)) = plain
                        .iter()
                        .map(|a| (&a.symbol, &a.value))
                        .chain(replace.iter().map(|(s, v)| (s, v)))
                        .find_map(|(a, v)| reads_new(v).map(|n| (a, n)))
                    {
                        return Err(err(
                            &epath,
                            format!(
                                "the assignment to `{a}` reads `{n}`, which the same edge assigns and the IR keeps in a container: DaCe reads the value from before the edge"
                            ),
                        ));
                    }
                    if let Some(last) = region.blocks.last_mut() {
                        last.transition.assignments.append(&mut pending);
                    }
                    let label = labels.take(&format!(
                        "assign_{}",
                        names.iter().copied().collect::<Vec<_>>().join("_")
                    ));
                    let state = symbols::assignment_state(&label, &computed, sdfg, &labels.offsets)
                        .map_err(|e| {
                            let written: Vec<String> = computed
                                .iter()
                                .map(|(n, t)| quote(&format!("{n} = {t}")).to_string())
                                .collect();
                            err(
                                &epath,
                                format!("the assignment {}: {e}", written.join(", ")),
                            )
                        })?;
                    labels.assigned.extend(computed.into_iter().map(|(n, _)| n));
                    region
                        .blocks
                        .push(ControlBlock::new(label, BlockKind::State(state)));
                }
                pending.append(&mut plain);
                Some(dst)
            }
            None => None,
        };
    }
    if seen.len() != nodes.len() {
        return Err(err(
            path,
            format!(
                "{} of the region's {} blocks cannot be reached from its start",
                nodes.len() - seen.len(),
                nodes.len()
            ),
        ));
    }
    if !replace.is_empty() {
        return Err(unsubstituted(path, &replace, labels));
    }
    if let Some(last) = region.blocks.last_mut() {
        last.transition.assignments.append(&mut pending);
    } else if !pending.is_empty() {
        return Err(err(
            path,
            "assignments on the edges of a region without blocks",
        ));
    }
    Ok(region)
}

/// Data symbols assigned on an edge whose next block does not test them:
/// promoted on the next attempt where their type allows.
fn unsubstituted(path: &str, replace: &[(String, SymExpr)], labels: &mut Labels) -> ImportError {
    for (n, _) in replace {
        if labels.promotable.contains(n) {
            labels.requests.insert(n.clone());
        }
    }
    let n = &replace[0].0;
    data_symbol_refusal(path, n, &labels.data_symbols[n])
}

/// The assignments of an interstate edge, `(symbol, DaCe's text)`, in the
/// IR's order where the export recorded it.
fn interstate(e: &Value, path: &str) -> Result<Vec<(String, String)>, ImportError> {
    let attrs = &e["attributes"];
    if let Some(c) = attrs.get("condition") {
        let text = code_text(c, &join(path, "condition"))?;
        let cond = parse_cond(text).map_err(|x| err(path, x.to_string()))?;
        if cond.as_bool() != Some(true) {
            return Err(err(
                path,
                format!(
                    "an interstate edge with the condition {}: a state machine, outside the supported subset (conditions are read from ConditionalBlocks)",
                    quote(text)
                ),
            ));
        }
    }
    let mut out = Vec::new();
    if let Some(a) = attrs.get("assignments").and_then(Value::as_object) {
        for (symbol, value) in a {
            let text = value
                .as_str()
                .ok_or_else(|| err(path, format!("the assignment to `{symbol}` is not text")))?;
            out.push((symbol.clone(), text.to_owned()));
        }
    }
    if let Some(order) = attrs.get(ORDER_MARK).and_then(Value::as_array) {
        let rank = |a: &(String, String)| order.iter().position(|o| o.as_str() == Some(&a.0));
        out.sort_by_key(|a| rank(a));
    }
    Ok(out)
}

/// A DaCe block, and the blocks to run before it: those computing the
/// conditions it tests that the symbolic layer cannot read (`symbols`).
fn block(
    v: &Value,
    path: &str,
    labels: &mut Labels,
    sdfg: &Sdfg,
) -> Result<(Vec<ControlBlock>, ControlBlock), ImportError> {
    let kind = str_of(v, path, "type")?;
    let label = labels.take(v.get("label").and_then(Value::as_str).unwrap_or(kind));
    let attrs = &v["attributes"];
    let mut before = Vec::new();
    let kind = match kind {
        "SDFGState" => BlockKind::State(state(v, path, sdfg, labels)?),
        "LoopRegion" => {
            let inverted = flag(attrs, "inverted");
            if inverted
                && attrs
                    .get("update_before_condition")
                    .and_then(Value::as_bool)
                    == Some(false)
            {
                return Err(err(
                    path,
                    format!(
                        "the do-while loop `{label}` updates its variable after the test (`update_before_condition` false): outside the supported subset"
                    ),
                ));
            }
            let apath = join(path, "attributes");
            let variable = attrs
                .get("loop_variable")
                .and_then(Value::as_str)
                .filter(|v| !v.is_empty())
                .map(str::to_owned);
            let statement = |key: &str| -> Result<Option<SymExpr>, ImportError> {
                let Some(c) = attrs.get(key).filter(|c| !c.is_null()) else {
                    return Ok(None);
                };
                let spath = join(&apath, key);
                let text = code_text(c, &spath)?;
                let (target, value) = text
                    .split_once('=')
                    .ok_or_else(|| err(&spath, format!("{} is not an assignment", quote(text))))?;
                if Some(target.trim()) != variable.as_deref() {
                    return Err(err(
                        &spath,
                        format!("{} does not assign the loop variable", quote(text)),
                    ));
                }
                parse_expr(value.trim())
                    .map(Some)
                    .map_err(|x| err(&spath, x.to_string()))
            };
            let (init, update) = (statement("init_statement")?, statement("update_statement")?);
            let cpath = join(&apath, "loop_condition");
            let (computed, condition) = match attrs.get("loop_condition").filter(|c| !c.is_null()) {
                Some(c) => {
                    let text = code_text(c, &cpath)?;
                    let (computed, cond) = labels.condition(text, &label, sdfg);
                    (computed.map(|t| (text, t)), cond)
                }
                None => (None, SymCond::TRUE),
            };
            let mut body = region_chain(v, path, labels, sdfg)?;
            if inverted {
                // A do-while loop: the body, the update, then the test,
                // which leaves the loop where the condition fails. A
                // `continue` would skip the test the IR puts at the end.
                if symbols::continues(&body) {
                    return Err(err(
                        path,
                        format!(
                            "the do-while loop `{label}` has a `continue`: outside the supported subset"
                        ),
                    ));
                }
                if body.blocks.is_empty() {
                    body.blocks.push(ControlBlock::new(
                        labels.take(&format!("{label}_body")),
                        BlockKind::State(State::new()),
                    ));
                }
                labels.do_while_variables.extend(variable.clone());
                if let (Some(v), Some(u)) = (&variable, &update)
                    && let Some(last) = body.blocks.last_mut()
                {
                    last.transition.assignments.push(Assignment {
                        symbol: v.clone(),
                        value: u.clone(),
                    });
                }
                if let Some((text, target)) = &computed {
                    body.blocks
                        .push(labels.condition_block(text, target, &label, sdfg, &cpath)?);
                }
                let leave = Region::new(vec![ControlBlock::new(
                    labels.take(&format!("{label}_done")),
                    BlockKind::Break,
                )]);
                body.blocks.push(ControlBlock::new(
                    labels.take(&format!("{label}_test")),
                    BlockKind::Conditional(ConditionalBlock {
                        branches: vec![(condition.not(), leave)],
                        otherwise: None,
                    }),
                ));
                let mut init_block = None;
                if let (Some(v), Some(i)) = (&variable, &init) {
                    // The variable's first value, on a transition before
                    // the loop (the IR's loop would test before the body).
                    let mut b = ControlBlock::new(
                        labels.take(&format!("{label}_init")),
                        BlockKind::State(State::new()),
                    );
                    b.transition.assignments.push(Assignment {
                        symbol: v.clone(),
                        value: i.clone(),
                    });
                    init_block = Some(b);
                }
                before.extend(init_block);
                BlockKind::Loop(LoopBlock {
                    variable: None,
                    init: None,
                    condition: SymCond::TRUE,
                    update: None,
                    body,
                })
            } else {
                if let Some((text, target)) = computed {
                    // Computed before the loop, and again where an iteration
                    // ends: at the end of the body and before its `continue`s.
                    if variable.is_some() || init.is_some() || update.is_some() {
                        return Err(err(
                            &cpath,
                            format!(
                                "the condition {} of the loop `{label}`, which has a loop variable, is outside the symbolic layer (computed conditions are read for `while` loops)",
                                quote(text)
                            ),
                        ));
                    }
                    before.push(labels.condition_block(text, &target, &label, sdfg, &cpath)?);
                    let mut failure = None;
                    symbols::before_continues(&mut body, &mut || match labels
                        .condition_block(text, &target, &label, sdfg, &cpath)
                    {
                        Ok(b) => b,
                        Err(e) => {
                            failure = Some(e);
                            ControlBlock::new(String::new(), BlockKind::Break)
                        }
                    });
                    if let Some(e) = failure {
                        return Err(e);
                    }
                    body.blocks
                        .push(labels.condition_block(text, &target, &label, sdfg, &cpath)?);
                }
                BlockKind::Loop(LoopBlock {
                    variable,
                    init,
                    condition,
                    update,
                    body,
                })
            }
        }
        "ConditionalBlock" => {
            let mut branches = Vec::new();
            let mut otherwise = None;
            let list = array_of(v, path, "branches")?;
            for (k, b) in list.iter().enumerate() {
                let bpath = join(path, &format!("branches[{k}]"));
                let (cond, region) = match b.as_array().map(Vec::as_slice) {
                    Some([c, r]) => (c, r),
                    _ => return Err(err(&bpath, "expected a condition and a region")),
                };
                let region = region_chain(region, &join(&bpath, "[1]"), labels, sdfg)?;
                if cond.is_null() {
                    if k + 1 != list.len() {
                        return Err(err(&bpath, "a branch without condition before the last"));
                    }
                    otherwise = Some(region);
                } else {
                    let cpath = join(&bpath, "[0]");
                    let text = code_text(cond, &cpath)?;
                    let (computed, c) = labels.condition(text, &label, sdfg);
                    if let Some(target) = computed {
                        before.push(labels.condition_block(text, &target, &label, sdfg, &cpath)?);
                    }
                    branches.push((c, region));
                }
            }
            BlockKind::Conditional(ConditionalBlock {
                branches,
                otherwise,
            })
        }
        "ControlFlowRegion" => {
            return Err(err(
                path,
                "a control-flow region nested directly in another (DaCe's simplification inlines them)",
            ));
        }
        "BreakBlock" => BlockKind::Break,
        "ContinueBlock" => BlockKind::Continue,
        "ReturnBlock" => BlockKind::Return,
        other => {
            return Err(err(
                path,
                format!("a {other}, outside the supported subset"),
            ));
        }
    };
    Ok((
        before,
        ControlBlock {
            label,
            kind,
            transition: Transition::default(),
        },
    ))
}

fn connectors(attrs: &Value, key: &str) -> BTreeSet<String> {
    attrs
        .get(key)
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// A parsed state edge before its connectors are renamed.
#[derive(Clone)]
struct RawEdge {
    src: usize,
    dst: usize,
    src_conn: Option<String>,
    dst_conn: Option<String>,
    memlet: Option<Memlet>,
    /// DaCe's `is_data_src` (true where absent).
    data_is_src: bool,
    /// The export's [`IMPLIED_OTHER_MARK`]: the IR left the other subset
    /// of this copy implied.
    other_implied: bool,
    /// A subtracting write-conflict resolution, read as a sum of the
    /// negated value ([`negate_output`]).
    negate: bool,
}

fn state(v: &Value, path: &str, sdfg: &Sdfg, labels: &Labels) -> Result<State, ImportError> {
    let promoted = &labels.promoted;
    let nodes = array_of(v, path, "nodes")?;
    let mut edges = Vec::new();
    for (k, e) in array_of(v, path, "edges")?.iter().enumerate() {
        let epath = join(path, &format!("edges[{k}]"));
        let end = |key: &str| {
            index_of(e, key, nodes.len())
                .ok_or_else(|| err(&epath, format!("`{key}` is not a node of the state")))
        };
        let conn = |key: &str| e.get(key).and_then(Value::as_str).map(str::to_owned);
        let mpath = join(&epath, "attributes.data");
        let (memlet, negate) = memlet(&e["attributes"]["data"], &mpath, sdfg)?;
        let src = end("src")?;
        let source = nodes[src].get("type").and_then(Value::as_str).unwrap_or("");
        if negate && !matches!(source, "Tasklet" | "MapExit") {
            return Err(err(
                &mpath,
                format!(
                    "a subtracting write-conflict resolution (`lambda x, y: x - y`) on an edge out of the {source} `{}`: the import reads it as a sum of the negated value, which only a tasklet's output can negate",
                    nodes[src]
                        .get("label")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                ),
            ));
        }
        edges.push(RawEdge {
            src,
            dst: end("dst")?,
            src_conn: conn("src_connector"),
            dst_conn: conn("dst_connector"),
            memlet,
            data_is_src: e["attributes"]["data"]["attributes"]
                .get("is_data_src")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            other_implied: flag(&e["attributes"]["data"]["attributes"], IMPLIED_OTHER_MARK),
            negate,
        });
    }
    let mut s = State::new();
    // Tasklets' reads of promoted symbols: (tasklet, connector, container).
    let mut symbol_reads = Vec::new();
    for (k, n) in nodes.iter().enumerate() {
        let npath = join(path, &format!("nodes[{k}]"));
        let node = node(n, &npath, k, &edges, sdfg, promoted, &mut symbol_reads)?;
        s.add_node(node);
    }
    // Library connectors by DaCe's names, renamed to the IR's by direction;
    // a tasklet's copied outputs back to the output they copy.
    let mut copies: BTreeMap<usize, BTreeMap<String, String>> = BTreeMap::new();
    for (k, n) in nodes.iter().enumerate() {
        if let Some(m) = n["attributes"].get(COPIES_MARK).and_then(Value::as_object) {
            copies.insert(
                k,
                m.iter()
                    .filter_map(|(c, o)| o.as_str().map(|o| (c.clone(), o.to_owned())))
                    .collect(),
            );
        }
    }
    let renamed: BTreeMap<usize, BTreeMap<String, String>> = nodes
        .iter()
        .enumerate()
        .map(|(k, n)| (k, renames_of(&n["attributes"]).into_iter().collect()))
        .collect();
    name_view_edges(&mut edges, &mut s, sdfg);
    for (k, mut e) in edges.into_iter().enumerate() {
        // DaCe's indices to the IR's, from 0 (`offsets.rs`).
        if let Some(m) = e.memlet.as_mut() {
            let data = |n: usize| match s.node(NodeId::new(n)) {
                Some(Node::Access(a)) => Some(a.data.as_str()),
                _ => None,
            };
            offsets::shift_memlet(m, data(e.src), data(e.dst), &labels.offsets);
            within_bounds(m, sdfg);
        }
        // DaCe passes a nested SDFG's array the outer array from its
        // start (its code generator applies no offset; the inner
        // descriptor's strides and offsets index it), the memlet only
        // bounding what is accessed, while the IR binds the memlet's
        // region: the whole outer array is the region DaCe passes.
        for (end, conn) in [(e.dst, e.dst_conn.clone()), (e.src, e.src_conn.clone())] {
            if let (Some(Node::NestedSdfg(n)), Some(m), Some(c)) =
                (s.node(NodeId::new(end)), e.memlet.as_mut(), conn)
                && let Some(inner) = n.sdfg.containers.get(
                    &renamed
                        .get(&end)
                        .and_then(|r| r.get(&c))
                        .cloned()
                        .unwrap_or_else(|| c.clone()),
                )
                && inner.layout().is_some()
                && let Some(outer) = sdfg.container(&m.data)
                && outer.layout().is_some()
            {
                // DaCe binds a connector to data of its own element type
                // (its validation refuses others); the IR reinterprets
                // nothing.
                if inner.dtype != outer.dtype {
                    return Err(err(
                        &join(path, &format!("edges[{k}]")),
                        format!(
                            "the nested SDFG `{}` binds its connector `{c}` of {} to `{}` of {}",
                            n.label, inner.dtype, m.data, outer.dtype
                        ),
                    ));
                }
                // Where the region starts at the array's start, both
                // readings agree.
                if m.subset.ranges.iter().any(|r| r.begin.as_int() != Some(0)) {
                    // DaCe's older convention (before 2.0): a connector
                    // described the window its memlet selects, and the
                    // memlets inside index from the window's start (GT4Py
                    // 1.1.12 still writes it for scans and `where`). DaCe
                    // 2.0 refuses such a nested SDFG until
                    // `convert_legacy_nested_sdfgs` restates it. It is the
                    // IR's own binding where the connector's dimensions
                    // are the window's and its strides the outer array's
                    // over them: the memlet stays. Otherwise reading it by
                    // the new convention would compute from the array's
                    // start instead of the window's: refused.
                    let mapped: Vec<SymExpr> = inner
                        .shape()
                        .iter()
                        .map(|d| d.subs(&n.symbol_mapping))
                        .collect();
                    if mapped != outer.shape() {
                        if let Err(why) = legacy_window(inner, &n.symbol_mapping, &m.subset, outer)
                        {
                            return Err(err(
                                &join(path, &format!("edges[{k}]")),
                                format!(
                                    "the nested SDFG `{}` describes a window of `{}` through its connector `{c}` (shape {} of {}): DaCe's convention before 2.0, which DaCe 2.0 refuses until `dace.sdfg.dealias.convert_legacy_nested_sdfgs` restates it, and which the IR's binding does not mean here: {why}; call that before saving the SDFG",
                                    n.label,
                                    m.data,
                                    fmt_shape(&mapped),
                                    fmt_shape(&outer.shape())
                                ),
                            ));
                        }
                        continue;
                    }
                    m.subset = Subset::full(&outer.shape());
                    m.volume = m.subset.num_elements();
                }
            }
        }
        // A copy: DaCe's default for the other end's subset is not the
        // IR's (`copies.rs`), so a missing one is written out as DaCe means
        // it, and one the export wrote out for the IR's default is left
        // implied again.
        if let (Some(src), Some(dst), Some(m)) = (
            s.node(NodeId::new(e.src)),
            s.node(NodeId::new(e.dst)),
            e.memlet.as_mut(),
        ) && let Some(end) =
            copies::other_end(src, dst, e.src_conn.as_deref(), e.dst_conn.as_deref(), m)
        {
            if m.other_subset.is_none() {
                let other = copies::dace_other_subset(sdfg, m, end).map_err(|message| {
                    err(&join(path, &format!("edges[{k}].attributes.data")), message)
                })?;
                m.other_subset = Some(other);
            } else if e.other_implied
                && let Some(desc) = sdfg.container(end.container)
            {
                let explicit = m.other_subset.take();
                if explicit.as_ref() != Some(&m.other_end(&desc.shape())) {
                    m.other_subset = explicit;
                }
            }
        }
        // A copy within one container: DaCe says with `is_data_src` which
        // end the memlet's subset is; the IR's is always the source's.
        if let (Some(Node::Access(a)), Some(Node::Access(b)), Some(m)) = (
            s.node(NodeId::new(e.src)),
            s.node(NodeId::new(e.dst)),
            e.memlet.as_mut(),
        ) && a.data == b.data
            && !e.data_is_src
            && let Some(other) = m.other_subset.take()
        {
            m.other_subset = Some(std::mem::replace(&mut m.subset, other));
        }
        let rename = |n: usize, c: Option<String>, input: bool| -> Option<String> {
            match s.node(NodeId::new(n)) {
                Some(Node::Library(l)) => library_connector(&l.op, c.as_deref(), input),
                Some(Node::Tasklet(_)) if !input => {
                    let c = c?;
                    Some(copies.get(&n).and_then(|m| m.get(&c)).cloned().unwrap_or(c))
                }
                Some(Node::NestedSdfg(_)) => {
                    let c = c?;
                    Some(
                        renamed
                            .get(&n)
                            .and_then(|m| m.get(&c))
                            .cloned()
                            .unwrap_or(c),
                    )
                }
                // DaCe finds a view's edge by the graph's shape, whatever
                // its connector is called (the Fortran frontend writes
                // `views2`); the IR by the name `views`.
                Some(Node::Access(_))
                    if c.as_deref().is_some_and(|c| {
                        c.strip_prefix(VIEW_CONNECTOR)
                            .is_some_and(|k| k.chars().all(|d| d.is_ascii_digit()))
                    }) =>
                {
                    Some(VIEW_CONNECTOR.to_owned())
                }
                _ => c,
            }
        };
        let (src_conn, dst_conn) = (
            rename(e.src, e.src_conn, false),
            rename(e.dst, e.dst_conn, true),
        );
        let edge = match e.memlet {
            Some(m) => Edge::new(src_conn.as_deref(), dst_conn.as_deref(), m),
            None => Edge {
                src_conn,
                dst_conn,
                memlet: None,
            },
        };
        s.graph
            .add_edge(NodeId::new(e.src), NodeId::new(e.dst), edge);
    }
    symbols::connect_reads(&mut s, sdfg, &symbol_reads).map_err(|e| {
        err(
            path,
            format!("reading the symbols the IR keeps in containers: {e}"),
        )
    })?;
    device_maps::fold_nested_device_maps(&mut s);
    Ok(s)
}

/// DaCe finds a view's edge by the graph's shape (`get_view_edge`: the
/// one edge of the view's access node whose memlet path leads to the
/// viewed data), whatever its connector; the IR by the connector `views`.
/// Where no edge of a view's access node has that connector and exactly
/// one names other data than the view, that edge is the view's; where it
/// comes from a map's entry or goes to a map's exit (gt4py.next's views
/// inside a map), an access node of the viewed data is put between, which
/// the IR's view edge connects to.
fn name_view_edges(edges: &mut Vec<RawEdge>, s: &mut State, sdfg: &Sdfg) {
    let views: Vec<(NodeId, String)> = s
        .nodes()
        .filter_map(|(id, n)| match n {
            Node::Access(a) if sdfg.container(&a.data).is_some_and(DataDesc::is_view) => {
                Some((id, a.data.clone()))
            }
            _ => None,
        })
        .collect();
    for (id, view) in views {
        let a = AccessNode { data: view };
        let at = id.index();
        let named = |e: &RawEdge| {
            (e.dst == at && e.dst_conn.as_deref() == Some(VIEW_CONNECTOR))
                || (e.src == at && e.src_conn.as_deref() == Some(VIEW_CONNECTOR))
        };
        if edges.iter().any(named) {
            continue;
        }
        let candidates: Vec<usize> = edges
            .iter()
            .enumerate()
            .filter(|(_, e)| {
                (e.src == at || e.dst == at) && e.memlet.as_ref().is_some_and(|m| m.data != a.data)
            })
            .map(|(k, _)| k)
            .collect();
        let [k] = candidates[..] else { continue };
        let into = edges[k].dst == at;
        let (conn, other) = if into {
            (&edges[k].dst_conn, edges[k].src)
        } else {
            (&edges[k].src_conn, edges[k].dst)
        };
        if conn.is_some() {
            continue;
        }
        let other_is_data = matches!(s.node(NodeId::new(other)), Some(Node::Access(_)));
        let through = if other_is_data {
            None
        } else {
            let data = edges[k].memlet.as_ref().map(|m| m.data.clone());
            data.map(|d| s.add_access(d).index())
        };
        let e = &mut edges[k];
        match (through, into) {
            (None, true) => e.dst_conn = Some(VIEW_CONNECTOR.to_owned()),
            (None, false) => e.src_conn = Some(VIEW_CONNECTOR.to_owned()),
            (Some(n), true) => {
                e.dst = n;
                let mut view_edge = RawEdge {
                    src: n,
                    dst: at,
                    ..e.clone()
                };
                view_edge.src_conn = None;
                view_edge.dst_conn = Some(VIEW_CONNECTOR.to_owned());
                edges.push(view_edge);
            }
            (Some(n), false) => {
                e.src = n;
                let mut view_edge = RawEdge {
                    src: at,
                    dst: n,
                    ..e.clone()
                };
                view_edge.src_conn = Some(VIEW_CONNECTOR.to_owned());
                view_edge.dst_conn = None;
                edges.push(view_edge);
            }
        }
    }
}

/// `(a, b)`: a shape for messages.
fn fmt_shape(shape: &[SymExpr]) -> String {
    let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
    format!("({})", dims.join(", "))
}

/// The IR's name of a library node's connector DaCe calls `dace`.
fn library_connector(op: &LibraryOp, dace: Option<&str>, input: bool) -> Option<String> {
    let ours = if input {
        op.in_connectors()
    } else {
        op.out_connectors()
    };
    let lib = names::library(op)?;
    match dace {
        // DaCe's Reduce has unnamed connectors.
        None if ours.len() == 1 && lib.connectors.is_empty() => Some(ours[0].to_owned()),
        None => None,
        Some(d) => ours
            .into_iter()
            .find(|o| lib.dace_connector(o) == Some(d))
            .map(str::to_owned)
            .or_else(|| Some(d.to_owned())),
    }
}

fn range_of(v: &Value, path: &str) -> Result<Subset, ImportError> {
    if v.get("type").and_then(Value::as_str) != Some("Range") {
        return Err(err(
            path,
            "expected a Range (index lists are outside the supported subset)",
        ));
    }
    let mut ranges = Vec::new();
    for (k, r) in array_of(v, path, "ranges")?.iter().enumerate() {
        let rpath = join(path, &format!("ranges[{k}]"));
        let tile = r.get("tile").map(|t| sym(t, &rpath)).transpose()?;
        if tile.is_some_and(|t| t.as_int() != Some(1)) {
            return Err(err(&rpath, "a tiled range"));
        }
        ranges.push(Range {
            begin: sym(&r["start"], &join(&rpath, "start"))?,
            end: sym(&r["end"], &join(&rpath, "end"))?,
            step: match r.get("step") {
                Some(s) => sym(s, &join(&rpath, "step"))?,
                None => SymExpr::int(1),
            },
        });
    }
    Ok(Subset::new(ranges))
}

/// The parameters and the body of DaCe's write-conflict lambda
/// (`(lambda x, y: (x + y))`), without spaces or outer parentheses.
fn wcr_lambda(text: &str) -> Option<(String, String, String)> {
    let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let body = squeezed
        .trim_start_matches('(')
        .trim_end_matches(')')
        .strip_prefix("lambda")?;
    let (params, expr) = body.split_once(':')?;
    let (a, b) = params.split_once(',')?;
    let expr = expr.trim_start_matches('(').trim_end_matches(')');
    Some((a.to_owned(), b.to_owned(), expr.to_owned()))
}

fn wcr_of(text: &str) -> Option<Wcr> {
    let (a, b, expr) = wcr_lambda(text)?;
    [
        (Wcr::Sum, format!("{a}+{b}")),
        (Wcr::Product, format!("{a}*{b}")),
        (Wcr::Min, format!("min({a},{b}")),
        (Wcr::Max, format!("max({a},{b}")),
        (Wcr::BitAnd, format!("{a}&{b}")),
        (Wcr::BitOr, format!("{a}|{b}")),
        (Wcr::BitXor, format!("{a}^{b}")),
    ]
    .into_iter()
    .find(|(_, form)| expr == form.as_str())
    .map(|(w, _)| w)
}

/// DaCe's `(lambda x, y: (x - y))`: the old value minus the new one, which
/// DaCe's frontend writes for `A[...] -= value` broadcast over a map.
fn is_subtraction(text: &str) -> bool {
    wcr_lambda(text).is_some_and(|(a, b, expr)| expr == format!("{a}-{b}"))
}

/// An edge's memlet (none for an empty one), and whether its
/// write-conflict resolution subtracts (read as a sum of the negated
/// value: the edge's writer negates it).
fn memlet(v: &Value, path: &str, sdfg: &Sdfg) -> Result<(Option<Memlet>, bool), ImportError> {
    let attrs = &v["attributes"];
    let Some(data) = attrs.get("data").and_then(Value::as_str) else {
        return Ok((None, false));
    };
    if !sdfg.containers.contains_key(data) {
        return Err(err(
            path,
            format!("the memlet's container `{data}` is not declared"),
        ));
    }
    let subset = range_of(&attrs["subset"], &join(path, "subset"))?;
    let other_subset = match attrs.get("other_subset").filter(|o| !o.is_null()) {
        Some(o) => Some(range_of(o, &join(path, "other_subset"))?),
        None => None,
    };
    let volume = match attrs.get("volume") {
        Some(x) => sym(x, &join(path, "volume"))?,
        None => subset.num_elements(),
    };
    let (wcr, negate) =
        match attrs.get("wcr").and_then(Value::as_str) {
            Some(w) if is_subtraction(w) => (Some(Wcr::Sum), true),
            Some(w) => (
                Some(wcr_of(w).ok_or_else(|| {
                    err(path, format!("the write-conflict resolution {}", quote(w)))
                })?),
                false,
            ),
            None => (None, false),
        };
    Ok((
        Some(Memlet {
            data: data.to_owned(),
            subset,
            other_subset,
            wcr,
            volume,
            dynamic: flag(attrs, "dynamic"),
        }),
        negate,
    ))
}

/// A dynamic memlet's subset intersected with its container's bounds.
///
/// A dynamic memlet bounds what its code may access, and GT4Py's
/// propagation writes bounds wider than the array where a horizontal
/// region's guard keeps the accesses inside (`q[-1:I+3]` of an array of
/// `I+4`; DaCe warns "potential negative out-of-bounds memlet subset" and
/// accepts it). The accesses of a valid program lie inside the array, so
/// the intersection bounds them as well, and the IR's validator, which
/// refuses subsets outside their arrays, accepts it. What the code really
/// reads is checked where it runs (the simulator faults on an index
/// outside its array). A memlet that is not dynamic says it accesses its
/// whole subset: it stays as written, and the validator refuses it.
fn within_bounds(m: &mut Memlet, sdfg: &Sdfg) {
    if !m.dynamic {
        return;
    }
    let Some(shape) = sdfg.container(&m.data).map(DataDesc::shape) else {
        return;
    };
    if shape.len() != m.subset.rank() {
        return;
    }
    for (r, extent) in m.subset.ranges.iter_mut().zip(&shape) {
        if r.step.as_int() != Some(1) {
            continue;
        }
        if r.begin.as_int().is_some_and(|b| b < 0) {
            r.begin = SymExpr::int(0);
        }
        if r.end.const_difference(extent).is_some_and(|d| d >= 0) {
            r.end = extent.clone() - SymExpr::int(1);
        }
    }
}

fn node(
    v: &Value,
    path: &str,
    id: usize,
    edges: &[RawEdge],
    sdfg: &Sdfg,
    promoted: &BTreeSet<String>,
    symbol_reads: &mut Vec<(NodeId, String, String)>,
) -> Result<Node, ImportError> {
    let kind = str_of(v, path, "type")?;
    let attrs = &v["attributes"];
    let apath = join(path, "attributes");
    let label = || -> String {
        attrs
            .get("label")
            .or_else(|| v.get("label"))
            .and_then(Value::as_str)
            .unwrap_or(kind)
            .to_owned()
    };
    Ok(match kind {
        "AccessNode" => Node::Access(AccessNode {
            data: str_of(attrs, &apath, "data")?.to_owned(),
        }),
        "MapEntry" => {
            let schedule_name = attrs
                .get("schedule")
                .and_then(Value::as_str)
                .unwrap_or("Default");
            let schedule = names::schedule_from(schedule_name)
                .ok_or_else(|| err(&apath, format!("the schedule `{schedule_name}`")))?;
            let params = array_of(attrs, &apath, "params")?
                .iter()
                .filter_map(|p| p.as_str().map(str::to_owned))
                .collect::<Vec<_>>();
            let mut ranges = range_of(&attrs["range"], &join(&apath, "range"))?.ranges;
            // The export's descending dimensions, written ascending.
            for d in attrs
                .get(DESCENDING_MARK)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_u64)
            {
                if let Some(r) = usize::try_from(d).ok().and_then(|d| ranges.get_mut(d))
                    && r.step.as_int() == Some(1)
                {
                    std::mem::swap(&mut r.begin, &mut r.end);
                    r.step = SymExpr::int(-1);
                }
            }
            if ranges.len() != params.len() {
                return Err(err(
                    &apath,
                    "a map with as many ranges as parameters expected",
                ));
            }
            Node::MapEntry(MapEntry {
                map: Map {
                    label: label(),
                    params,
                    ranges,
                    schedule,
                },
                in_connectors: connectors(attrs, "in_connectors"),
                out_connectors: connectors(attrs, "out_connectors"),
            })
        }
        "MapExit" => {
            let entry = index_of(v, "scope_entry", u32::MAX as usize)
                .ok_or_else(|| err(path, "a map exit without its entry (`scope_entry`)"))?;
            Node::MapExit(MapExit {
                entry: NodeId::new(entry),
                label: v
                    .get("label")
                    .and_then(Value::as_str)
                    .unwrap_or("map")
                    .to_owned(),
                in_connectors: connectors(attrs, "in_connectors"),
                out_connectors: connectors(attrs, "out_connectors"),
            })
        }
        "Tasklet" => tasklet(v, path, id, edges, sdfg, promoted, symbol_reads)?,
        "NestedSDFG" => {
            let mut inner = sdfg_nested(&attrs["sdfg"], &join(&apath, "sdfg"))?;
            let mut inputs = connectors(attrs, "in_connectors");
            let mut outputs = connectors(attrs, "out_connectors");
            for (new, old) in renames_of(attrs) {
                if !crate::rename::rename_container(&mut inner, &new, &old) {
                    return Err(err(
                        &apath,
                        format!("`{new}` cannot be renamed back to `{old}`"),
                    ));
                }
                for set in [&mut inputs, &mut outputs] {
                    if set.remove(&new) {
                        set.insert(old.clone());
                    }
                }
            }
            let mut symbol_mapping = BTreeMap::new();
            if let Some(m) = attrs.get("symbol_mapping").and_then(Value::as_object) {
                for (k, x) in m {
                    symbol_mapping.insert(
                        k.clone(),
                        sym(x, &join(&apath, &format!("symbol_mapping.{k}")))?,
                    );
                }
            }
            Node::NestedSdfg(NestedSdfg {
                label: label(),
                sdfg: Box::new(inner),
                symbol_mapping,
                inputs,
                outputs,
            })
        }
        "LibraryNode" => library(v, path, id, edges, sdfg)?,
        other => {
            return Err(err(
                path,
                format!("a {other} node, outside the supported subset"),
            ));
        }
    })
}

/// The export's renames of a nested SDFG's containers, `(new, old)`.
fn renames_of(attrs: &Value) -> Vec<(String, String)> {
    attrs
        .get(RENAMED_MARK)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(new, old)| old.as_str().map(|o| (new.clone(), o.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

fn sdfg_nested(v: &Value, path: &str) -> Result<Sdfg, ImportError> {
    sdfg(v, path)
}

fn in_memlet<'a>(edges: &'a [RawEdge], id: usize, conn: Option<&str>) -> Option<&'a Memlet> {
    edges
        .iter()
        .find(|e| e.dst == id && (conn.is_none() || e.dst_conn.as_deref() == conn))
        .and_then(|e| e.memlet.as_ref())
}

fn out_memlet<'a>(edges: &'a [RawEdge], id: usize, conn: Option<&str>) -> Option<&'a Memlet> {
    edges
        .iter()
        .find(|e| e.src == id && (conn.is_none() || e.src_conn.as_deref() == conn))
        .and_then(|e| e.memlet.as_ref())
}

fn tasklet(
    v: &Value,
    path: &str,
    id: usize,
    edges: &[RawEdge],
    sdfg: &Sdfg,
    promoted: &BTreeSet<String>,
    symbol_reads: &mut Vec<(NodeId, String, String)>,
) -> Result<Node, ImportError> {
    let attrs = &v["attributes"];
    let apath = join(path, "attributes");
    let label = attrs
        .get("label")
        .or_else(|| v.get("label"))
        .and_then(Value::as_str)
        .unwrap_or("tasklet")
        .to_owned();
    let copies: BTreeMap<String, String> = attrs
        .get(COPIES_MARK)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(c, o)| o.as_str().map(|o| (c.clone(), o.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    let typed = |m: Option<&Memlet>, conn: &str| -> Result<(DType, usize), ImportError> {
        let m = m.ok_or_else(|| {
            err(
                &apath,
                format!("the connector `{conn}` of `{label}` has no memlet"),
            )
        })?;
        let d = sdfg
            .container(&m.data)
            .ok_or_else(|| err(&apath, format!("`{}` is not declared", m.data)))?;
        Ok((d.dtype, sdfg_ir::validate::squeezed_rank(&m.subset)))
    };
    let mut conns = TaskletConnectors::default();
    for c in connectors(attrs, "in_connectors") {
        let t = typed(in_memlet(edges, id, Some(&c)), &c)?;
        conns.inputs.insert(c, t);
    }
    for c in connectors(attrs, "out_connectors") {
        if copies.contains_key(&c) {
            continue;
        }
        let m = out_memlet(edges, id, Some(&c));
        let t = typed(m, &c)?;
        if m.is_some_and(|m| m.dynamic) {
            conns.dynamic.insert(c.clone());
        }
        conns.outputs.insert(c, t);
    }
    let cpath = join(&apath, "code");
    // GT4Py's timers, the C++ read (`cpp.rs`); other C++ is refused.
    if attrs["code"].get("language").and_then(Value::as_str) == Some("CPP")
        && let Some(code) = attrs["code"].get("string_data").and_then(Value::as_str)
        && copies.is_empty()
    {
        let list = |m: &BTreeMap<String, (DType, usize)>| -> Vec<(String, DType)> {
            m.iter().map(|(n, (t, _))| (n.clone(), *t)).collect()
        };
        if let Some(body) =
            crate::cpp::read_timer(code, &list(&conns.inputs), &list(&conns.outputs))
        {
            let connector = |(name, (dtype, _)): (&String, &(DType, usize))| Connector {
                name: name.clone(),
                dtype: *dtype,
                pointer: false,
            };
            return Ok(Node::Tasklet(Tasklet {
                label,
                inputs: conns.inputs.iter().map(connector).collect(),
                outputs: conns.outputs.iter().map(connector).collect(),
                body,
            }));
        }
        return Err(err(
            &cpath,
            format!("tasklet `{label}`: C++ code other than GT4Py's timers (only Python is read)"),
        ));
    }
    let mut text = code_text(&attrs["code"], &cpath)?.to_owned();
    // The export's copies are its last lines (`copy = output`).
    for _ in 0..copies.len() {
        let trimmed = text.trim_end_matches('\n');
        let cut = trimmed.rfind('\n').map_or(0, |i| i + 1);
        text.truncate(cut);
    }
    // Symbols kept in containers are read through connectors of their
    // own (fed by `symbols::connect_reads`).
    let named = symbols::identifiers(&text);
    let mut renames = BTreeMap::new();
    for &name in &named {
        if promoted.contains(name)
            && !conns.inputs.contains_key(name)
            && !conns.outputs.contains_key(name)
            && let Some(d) = sdfg.container(name)
        {
            let conn = symbols::input_connector(name, |n| {
                sdfg.containers.contains_key(n)
                    || sdfg.symbols.contains_key(n)
                    || named.contains(n)
                    || conns.inputs.contains_key(n)
                    || conns.outputs.contains_key(n)
            });
            conns.inputs.insert(conn.clone(), (d.dtype, 0));
            symbol_reads.push((NodeId::new(id), conn.clone(), name.to_owned()));
            renames.insert(name.to_owned(), conn);
        }
    }
    if !renames.is_empty() {
        text = symbols::rename_identifiers(&text, &renames);
    }
    let (mut body, pointers) = python::read_tasklet(&text, &conns)
        .map_err(|e| err(&cpath, format!("tasklet `{label}`: {e}")))?;
    for out in conns.outputs.keys() {
        let Some(e) = edges
            .iter()
            .find(|e| e.src == id && e.src_conn.as_deref() == Some(out))
        else {
            continue;
        };
        let Some(m) = &e.memlet else { continue };
        // DaCe gives a connector whose memlet has several elements a
        // pointer type; code assigning it a value does not compile there.
        if !pointers.contains(out) && m.subset.num_elements().as_int() != Some(1) && !m.dynamic {
            return Err(err(
                &cpath,
                format!(
                    "the tasklet `{label}` assigns one value to its output `{out}`, whose memlet {} has {} elements: DaCe's code generator makes that connector a pointer, and the assignment does not compile (DaCe cannot build this SDFG either)",
                    quote(&format!("{}[{}]", m.data, m.subset)),
                    quote(&m.subset.num_elements().to_string())
                ),
            ));
        }
        if e.negate {
            let dtype = conns.outputs[out].0;
            if dtype == DType::Bool {
                return Err(err(
                    &cpath,
                    format!(
                        "the tasklet `{label}` writes booleans to `{}` with a subtracting write-conflict resolution",
                        m.data
                    ),
                ));
            }
            negate_output(&mut body, out);
        }
    }
    let connector = |(name, (dtype, _)): (&String, &(DType, usize))| Connector {
        name: name.clone(),
        dtype: *dtype,
        pointer: pointers.contains(name),
    };
    let mut inputs: Vec<Connector> = conns.inputs.iter().map(connector).collect();
    let mut outputs: Vec<Connector> = conns.outputs.iter().map(connector).collect();
    if let Some(order) = attrs.get(ORDER_MARK).and_then(Value::as_array) {
        let rank = |c: &Connector| order.iter().position(|o| o.as_str() == Some(&c.name));
        inputs.sort_by_key(|c| rank(c));
        outputs.sort_by_key(|c| rank(c));
    }
    Ok(Node::Tasklet(Tasklet {
        label,
        inputs,
        outputs,
        body,
    }))
}

/// Negates every value `body` assigns or stores to the output `conn`: a
/// subtracting write-conflict resolution (`old - value`) is the IR's sum
/// of the negated value, exactly (IEEE subtraction is the addition of the
/// negation; integers wrap alike).
fn negate_output(body: &mut [sdfg_ir::code::Stmt], conn: &str) {
    use sdfg_ir::code::{Expr, Stmt, UnaryOp};
    let negated = |v: &mut Expr| {
        let inner = std::mem::replace(v, Expr::Lit(Literal::Bool(false)));
        *v = Expr::Unary {
            op: UnaryOp::Neg,
            arg: Box::new(inner),
        };
    };
    for s in body {
        match s {
            Stmt::Assign { target, value } if target == conn => negated(value),
            Stmt::Store { conn: c, value, .. } if c == conn => negated(value),
            Stmt::If {
                then, otherwise, ..
            } => {
                negate_output(then, conn);
                negate_output(otherwise, conn);
            }
            _ => {}
        }
    }
}

/// A real number of type `dtype`, for alpha and beta.
fn number(v: &Value, dtype: DType) -> Option<Literal> {
    if dtype.is_float() {
        return v.as_f64().map(|value| Literal::Float { value, dtype });
    }
    if dtype.is_signed_integer() {
        return v.as_i64().map(|value| Literal::Int { value, dtype });
    }
    None
}

/// A reduction's identity from its text, as a literal of `dtype`.
fn identity(text: &str, dtype: DType) -> Option<Literal> {
    let t = text.trim();
    if dtype == DType::Bool {
        return match t {
            "True" | "1" => Some(Literal::Bool(true)),
            "False" | "0" => Some(Literal::Bool(false)),
            _ => None,
        };
    }
    if dtype.is_float() {
        let value = match t {
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            "nan" => f64::NAN,
            other => other.parse().ok()?,
        };
        return Some(Literal::Float { value, dtype });
    }
    if dtype.is_signed_integer() {
        return t.parse().ok().map(|value| Literal::Int { value, dtype });
    }
    if dtype.is_unsigned_integer() {
        return t.parse().ok().map(|value| Literal::UInt { value, dtype });
    }
    None
}

fn library(
    v: &Value,
    path: &str,
    id: usize,
    edges: &[RawEdge],
    sdfg: &Sdfg,
) -> Result<Node, ImportError> {
    let attrs = &v["attributes"];
    let apath = join(path, "attributes");
    let classpath = str_of(v, path, "classpath")?;
    let class = classpath.rsplit('.').next().unwrap_or(classpath);
    let label = attrs
        .get("label")
        .or_else(|| attrs.get("name"))
        .or_else(|| v.get("label"))
        .and_then(Value::as_str)
        .unwrap_or(class)
        .to_owned();
    let schedule_name = attrs
        .get("schedule")
        .and_then(Value::as_str)
        .unwrap_or("Default");
    let schedule = names::schedule_from(schedule_name)
        .ok_or_else(|| err(&apath, format!("the schedule `{schedule_name}`")))?;
    let dtype_of = |m: Option<&Memlet>| m.and_then(|m| sdfg.container(&m.data)).map(|d| d.dtype);
    let out_dtype = dtype_of(out_memlet(edges, id, None)).unwrap_or(DType::Float64);
    let scale = |key: &str, default: f64| -> Result<Literal, ImportError> {
        match attrs.get(key) {
            None => number(&serde_json::json!(default), out_dtype),
            Some(x) => number(x, out_dtype),
        }
        .ok_or_else(|| {
            err(
                &apath,
                format!("`{key}` of `{label}` is not a real number of type {out_dtype}"),
            )
        })
    };
    let refuse = |why: &str| err(path, format!("the library node `{label}` ({class}): {why}"));
    let op = match class {
        "MatMul" => {
            let is = |key: &str, want: f64| attrs.get(key).is_none_or(|x| x.as_f64() == Some(want));
            if !is("alpha", 1.0) || !is("beta", 0.0) {
                return Err(refuse("a MatMul with alpha or beta"));
            }
            LibraryOp::MatMul
        }
        "Gemm" => LibraryOp::Gemm {
            alpha: scale("alpha", 1.0)?,
            beta: scale("beta", 0.0)?,
            trans_a: flag(attrs, "transA"),
            trans_b: flag(attrs, "transB"),
            alpha_input: false,
            beta_input: false,
        },
        "Gemv" => LibraryOp::Gemv {
            alpha: scale("alpha", 1.0)?,
            beta: scale("beta", 0.0)?,
            trans_a: flag(attrs, "transA"),
        },
        "Dot" => LibraryOp::Dot,
        "BatchedMatMul" => LibraryOp::BatchedMatMul,
        "Transpose" => LibraryOp::Transpose,
        "TensorTranspose" => LibraryOp::TensorTranspose {
            axes: attrs
                .get("axes")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_u64().map(|n| n as usize))
                        .collect()
                })
                .unwrap_or_default(),
        },
        "Cholesky" => LibraryOp::Cholesky {
            lower: attrs.get("lower").and_then(Value::as_bool).unwrap_or(true),
        },
        "Solve" => LibraryOp::Solve,
        "Reduce" => {
            let wcr_text = attrs.get("wcr").and_then(Value::as_str).unwrap_or("");
            let op = wcr_of(wcr_text)
                .ok_or_else(|| refuse(&format!("the reduction {}", quote(wcr_text))))?;
            let input = in_memlet(edges, id, None);
            // DaCe numbers the axes over all dimensions of the input's
            // subset, the IR without its index dimensions.
            let axes = match attrs.get("axes").and_then(Value::as_array) {
                None => None,
                Some(list) => {
                    let kept = input
                        .map(|m| names::kept_dimensions(&m.subset))
                        .unwrap_or_default();
                    let mut axes: Vec<usize> = list
                        .iter()
                        .filter_map(|x| x.as_u64().map(|n| n as usize))
                        .filter_map(|a| kept.iter().position(|&k| k == a))
                        .collect();
                    axes.sort_unstable();
                    axes.dedup();
                    Some(axes)
                }
            };
            let identity = match attrs.get("identity") {
                None | Some(Value::Null) => None,
                Some(Value::String(t)) => Some(identity(t, out_dtype).ok_or_else(|| {
                    refuse(&format!("the identity {} for type {out_dtype}", quote(t)))
                })?),
                Some(Value::Number(n)) => {
                    Some(identity(&n.to_string(), out_dtype).ok_or_else(|| {
                        refuse(&format!(
                            "the identity {} for type {out_dtype}",
                            quote(&n.to_string())
                        ))
                    })?)
                }
                Some(other) => return Err(refuse(&format!("the identity {other}"))),
            };
            LibraryOp::Reduce { op, axes, identity }
        }
        _ => {
            return Err(err(
                path,
                format!(
                    "the library node `{label}` of class `{classpath}`, outside the supported subset"
                ),
            ));
        }
    };
    Ok(Node::Library(LibraryNode {
        label,
        op,
        schedule,
    }))
}

/// Whether a connector describing the window `subset` of `outer` (DaCe's
/// convention before 2.0) means what the IR's binding of the memlet's
/// region means: the connector's dimensions are the window's (all of them,
/// or those that are not single indices, or none for one element) and
/// its strides the outer array's over them, from the window's start.
fn legacy_window(
    inner: &sdfg_ir::DataDesc,
    mapping: &BTreeMap<String, SymExpr>,
    subset: &Subset,
    outer: &sdfg_ir::DataDesc,
) -> Result<(), String> {
    let ranges = &subset.ranges;
    let rank = inner.dims().len();
    let kept: Vec<usize> = if rank == ranges.len() {
        (0..ranges.len()).collect()
    } else if rank == ranges.iter().filter(|r| !r.is_index()).count() {
        (0..ranges.len())
            .filter(|&d| !ranges[d].is_index())
            .collect()
    } else if inner.dims().iter().all(|e| e.as_int() == Some(1))
        && ranges.iter().all(|r| r.is_index())
    {
        Vec::new()
    } else {
        return Err(format!(
            "its {rank} dimensions are not the window's {}",
            ranges.len()
        ));
    };
    if let (Some(il), Some(ol)) = (inner.layout(), outer.layout()) {
        if !il.offset.subs(mapping).is_zero() {
            return Err(format!("its offset is {}", il.offset));
        }
        for (k, &d) in kept.iter().enumerate() {
            let want = &ol.strides[d] * &ranges[d].step;
            let have = il.strides[k].subs(mapping);
            if have != want {
                return Err(format!(
                    "its stride {have} in dimension {k} is not the window's {want}"
                ));
            }
        }
    }
    Ok(())
}
