//! The emitter: an offloaded SDFG to one translation unit.
//!
//! The host code is a state struct and its entry points (`host_code`): the
//! body walks the structured control flow (loops become `for` statements,
//! so `continue` runs the update; conditionals `if` chains) and emits each
//! state in topological order: copies between access nodes, kernel launches
//! for device maps, loops for maps kept on the host, and tasklets at host
//! level inline. Every container is a pointer in the generated code.
//! Transients are allocated once, by init, where their size depends only on
//! argument symbols, and through a grow-only buffer kept in the state
//! otherwise, so no loop allocates device memory on every iteration.
//!
//! The emitter decides on the IR and prints last, through the dialect's
//! parts ([`crate::dialect`]); its methods live in one module per kind of
//! code they emit:
//!
//! - `unit`: the translation unit's layout and its entry points;
//! - `control`: host control flow, states, host nodes, views;
//! - `copies`: copies, top-level ones planned first (`CopyPlan`);
//! - `kernels`: kernels, their launches (`LaunchPlan`), map loops and
//!   scope bodies;
//! - `tasklets`: tasklets, wherever they run;
//! - `reductions`: block and grid reductions, racing updates;
//! - `vendor`: vendor BLAS and solver calls, their workspace;
//! - `persistent`: persistent kernels and their grid barriers;
//! - `thread`: nested SDFGs run by one thread of a kernel.
//!
//! This module keeps the [`Emitter`] and what they share: the public
//! functions, geometry of subsets, and loop headers.

use crate::cpp::{SymPrinter, ident};
use crate::{Dialect, EmitError, Parameter, ParameterKind, TranslationUnit};
use sdfg_ir::{DType, DataDesc, NodeId, Sdfg, Side, Subset, SymExpr, Validated};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

mod control;
mod copies;
mod kernels;
mod persistent;
mod reductions;
mod tasklets;
mod thread;
mod unit;
mod vendor;

/// The prelude every translation unit starts with (after its includes):
/// the semantics of the IR's operations on host and device, the same for
/// every dialect.
pub const PRELUDE: &str = include_str!("prelude.cpp");

/// The parameters of the entry points of `sdfg`'s unit, in order: its
/// arguments (containers and symbols, as `sdfg.arguments` lists them),
/// then its return values (`__return`, `__return_0`, ...). What a caller
/// passes to the unit, and what a runner that does not emit code (the
/// simulator behind the Python package's `device="sim"`) takes the same
/// way. A return value whose shape depends on a symbol that is no argument
/// is refused: the caller could not allocate it.
pub fn signature(sdfg: &Sdfg) -> Result<Vec<Parameter>, EmitError> {
    let mut signature: Vec<Parameter> = Vec::new();
    let shape_of = |desc: &DataDesc| {
        if desc.is_scalar() {
            Vec::new()
        } else {
            desc.shape()
        }
    };
    let home = |desc: &DataDesc| desc.storage.side().unwrap_or(Side::Host);
    let layout_of = |desc: &DataDesc| {
        desc.layout()
            .filter(|l| !desc.is_scalar() && !l.is_contiguous())
            .cloned()
    };
    let returns = return_values(sdfg);
    // Return values follow the arguments, also where the SDFG lists
    // them among its arguments (DaCe's SDFGs do: `__return` is a
    // non-transient array there).
    for a in sdfg.arguments.iter().filter(|a| !returns.contains(a)) {
        let (kind, shape, side, layout) = match sdfg.containers.get(a) {
            Some(desc) => (
                ParameterKind::Container(desc.dtype),
                shape_of(desc),
                home(desc),
                layout_of(desc),
            ),
            None => (
                ParameterKind::Symbol(sdfg.symbols.get(a).copied().unwrap_or(DType::Int64)),
                Vec::new(),
                Side::Host,
                None,
            ),
        };
        signature.push(Parameter {
            name: a.clone(),
            kind,
            shape,
            home: side,
            layout,
        });
    }
    let arg_symbols: BTreeSet<String> = signature
        .iter()
        .filter(|p| matches!(p.kind, ParameterKind::Symbol(_)))
        .map(|p| p.name.clone())
        .collect();
    for r in returns {
        let desc = &sdfg.containers[&r];
        if let Some(s) = desc
            .free_symbols()
            .into_iter()
            .find(|s| !arg_symbols.contains(s))
        {
            return Err(unsupported(
                format!(
                    "the return value `{r}`, whose shape depends on `{s}`, which is not an argument: the caller cannot allocate it"
                ),
                &r,
                "(signature)",
            ));
        }
        signature.push(Parameter {
            name: r,
            kind: ParameterKind::Return(desc.dtype),
            shape: shape_of(desc),
            home: home(desc),
            layout: layout_of(desc),
        });
    }
    Ok(signature)
}

/// Emits `sdfg` (offloaded for `dialect`'s accelerator) as one translation
/// unit, after validating it.
pub fn emit(sdfg: &Sdfg, dialect: &dyn Dialect) -> Result<TranslationUnit, EmitError> {
    let valid = sdfg_ir::validate(sdfg).map_err(|e| EmitError::Invalid(e.to_string()))?;
    emit_validated(valid, dialect)
}

/// [`emit`] for an SDFG already validated, as the pipeline's output is
/// ([`sdfg_ir::ValidSdfg::validated`]): validating it again would cost
/// as much as a pass on a large program.
pub fn emit_validated(
    valid: Validated<'_>,
    dialect: &dyn Dialect,
) -> Result<TranslationUnit, EmitError> {
    Emitter::new(valid.sdfg(), dialect).translation_unit()
}

struct Emitter<'a> {
    sdfg: &'a Sdfg,
    d: &'a dyn Dialect,
    /// (declaration, body) of each kernel.
    kernels: Vec<(String, String)>,
    kernel_names: Vec<String>,
    /// Transients whose size depends on symbols that change during the run.
    growable: BTreeSet<String>,
    /// Whether a vendor BLAS call was emitted (the handle is then created).
    blas_used: bool,
    /// Whether a vendor solver call was emitted (handle, workspace, info).
    solver_used: bool,
    /// What each factorization call site factors, for the message of a
    /// failed one (call site `k + 1` is entry `k`).
    factorizations: Vec<String>,
    /// The entry point's parameters, once the host code is emitted.
    signature: Vec<Parameter>,
    /// Whether a persistent kernel was emitted (cooperative groups and the
    /// cooperative launch are then included).
    cooperative: bool,
    /// Containers a map a persistent kernel's threads share reduces into
    /// one element of: each thread's partial result, by container
    /// (`emit/persistent.rs`); combining writes to them go there.
    partials: BTreeMap<String, String>,
    /// The thread-block map of the kernel being emitted whose reduction
    /// spreads over the grid ([`Emitter::grid_spread`]), by its entry.
    spread: Option<NodeId>,
    /// The buffers of the grid reductions: (kernel, element type); each
    /// kernel's block partials (`{kernel}_parts`) and ticket counter
    /// (`{kernel}_tickets`) live in the state.
    grid_buffers: Vec<(String, String)>,
}

/// Where code being emitted runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Host,
    /// Code of one GPU thread.
    Device,
    /// The body of a kernel of thread-block maps outside those maps: every
    /// thread of a block runs it (so registers it sets are set in each),
    /// and the block's first thread alone writes what others can see.
    Block,
    /// The body of a persistent kernel outside its shared maps: every
    /// thread of the grid runs its control flow, one thread its code, and
    /// its device maps are shared by all (`emit/persistent.rs`).
    Grid,
}

/// Declares a map's parameters from the linear index `sdfg_rest`, the
/// innermost parameter varying fastest: one division per dimension but the
/// outermost, which takes what is left (the index is below the product of
/// the counts).
fn decompose(
    p: &mut SymPrinter<'_>,
    map: &sdfg_ir::Map,
    counts: &[String],
    pad: &str,
    out: &mut String,
) {
    for (k, (param, r)) in map.dims().enumerate().collect::<Vec<_>>().into_iter().rev() {
        if k == 0 {
            let _ = writeln!(
                out,
                "{pad}const int64_t {v} = {b} + sdfg_rest * {s};",
                v = ident(param),
                b = p.expr(&r.begin),
                s = p.expr(&r.step)
            );
            continue;
        }
        let _ = writeln!(
            out,
            "{pad}const int64_t {v} = {b} + (sdfg_rest % {c}) * {s};\n{pad}sdfg_rest /= {c};",
            v = ident(param),
            c = counts[k],
            b = p.expr(&r.begin),
            s = p.expr(&r.step)
        );
    }
}

/// `offset + sum(idx[d] * stride[d])` of container `x`, printed.
fn linear(sdfg: &Sdfg, x: &str, idx: &[String]) -> String {
    let Some(layout) = sdfg.containers.get(x).and_then(|d| d.layout()) else {
        return "0".to_owned();
    };
    let mut p = SymPrinter {
        read: Box::new(|_, _| "0".to_owned()),
        used: BTreeSet::new(),
    };
    let mut parts = vec![p.expr(&layout.offset)];
    for (i, s) in idx.iter().zip(&layout.strides) {
        parts.push(format!("{i} * {}", p.expr(s)));
    }
    parts.join(" + ")
}

/// `for (v = init; cond; v = update) {` of a loop block (a `while` loop has
/// only the condition).
fn for_header(p: &mut SymPrinter<'_>, l: &sdfg_ir::LoopBlock) -> String {
    let (init, cond, update) = for_parts(p, l);
    format!("for ({init}; {cond}; {update}) {{")
}

/// A loop's init, test and update as C++ (`k = 0`, `k < N`, `k = k + 1`;
/// empty where the loop has none).
fn for_parts(p: &mut SymPrinter<'_>, l: &sdfg_ir::LoopBlock) -> (String, String, String) {
    let init = match (&l.variable, &l.init) {
        (Some(v), Some(e)) => format!("{} = {}", ident(v), p.expr(e)),
        _ => String::new(),
    };
    let cond = p.cond(&l.condition);
    let update = match (&l.variable, &l.update) {
        (Some(v), Some(e)) => format!("{} = {}", ident(v), p.expr(e)),
        _ => String::new(),
    };
    (init, cond, update)
}

/// The SDFG's return values in signature order: `__return`, then
/// `__return_0`, `__return_1`, ... by number (`__return_10` after
/// `__return_9`).
pub(crate) fn return_values(sdfg: &Sdfg) -> Vec<String> {
    let mut found: Vec<(Option<u64>, String)> = sdfg
        .containers
        .keys()
        .filter_map(|x| {
            if x == "__return" {
                return Some((None, x.clone()));
            }
            let n = x.strip_prefix("__return_")?.parse::<u64>().ok()?;
            Some((Some(n), x.clone()))
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, x)| x).collect()
}

fn unsupported(what: impl Into<String>, node: &str, state: &str) -> EmitError {
    EmitError::Unsupported {
        what: what.into(),
        node: node.to_owned(),
        state: state.to_owned(),
    }
}

impl<'a> Emitter<'a> {
    /// An emitter of `sdfg`, nothing emitted yet.
    fn new(sdfg: &'a Sdfg, d: &'a dyn Dialect) -> Emitter<'a> {
        Emitter {
            sdfg,
            d,
            kernels: Vec::new(),
            kernel_names: Vec::new(),
            growable: BTreeSet::new(),
            blas_used: false,
            solver_used: false,
            factorizations: Vec::new(),
            signature: Vec::new(),
            cooperative: false,
            partials: BTreeMap::new(),
            spread: None,
            grid_buffers: Vec::new(),
        }
    }

    /// The runtime API's `name` ([`DialectMemory::api`](crate::DialectMemory::api)).
    fn api(&self, name: &str) -> String {
        self.d.api(name)
    }

    fn desc(&self, x: &str) -> Option<&'a DataDesc> {
        self.sdfg.containers.get(x)
    }

    /// A printer of symbolic expressions whose data reads index containers.
    fn sym(&self) -> SymPrinter<'a> {
        let sdfg = self.sdfg;
        SymPrinter {
            read: Box::new(move |data: &str, idx: &[String]| {
                let at = linear(sdfg, data, idx);
                format!("{}[{at}]", ident(data))
            }),
            used: BTreeSet::new(),
        }
    }

    fn linear(&self, x: &str, idx: &[String]) -> String {
        linear(self.sdfg, x, idx)
    }

    /// The shape of container `x` (empty if unknown: validation ran first).
    fn shape(&self, x: &str) -> Vec<SymExpr> {
        self.desc(x).map(DataDesc::shape).unwrap_or_default()
    }

    /// The element offset of a subset's first element, and per
    /// non-degenerate dimension (count, element stride between consecutive
    /// elements), with the symbols used.
    fn subset_geometry(
        &self,
        x: &str,
        subset: &Subset,
        used: &mut BTreeSet<String>,
    ) -> (String, Vec<(String, String)>) {
        let mut p = self.sym();
        let begins: Vec<String> = subset.ranges.iter().map(|r| p.expr(&r.begin)).collect();
        let offset = self.linear(x, &begins);
        let strides: Vec<SymExpr> = self
            .desc(x)
            .and_then(|d| d.layout())
            .map(|l| l.strides.clone())
            .unwrap_or_default();
        let mut dims = Vec::new();
        for (d, r) in subset.ranges.iter().enumerate() {
            if r.is_index() {
                continue;
            }
            let stride = strides.get(d).cloned().unwrap_or(SymExpr::int(1));
            dims.push((p.expr(&r.num_elements()), p.expr(&(&stride * &r.step))));
        }
        if let Some(layout) = self.desc(x).and_then(|d| d.layout()) {
            for s in layout.strides.iter().chain([&layout.offset]) {
                p.expr(s);
            }
        }
        used.extend(p.used);
        (offset, dims)
    }

    /// The elements and the stride (in elements) of each dimension of
    /// `subset` of `x` that is not a single index, symbolically.
    fn subset_extents(&self, x: &str, subset: &Subset) -> Vec<(SymExpr, SymExpr)> {
        let strides: Vec<SymExpr> = self
            .desc(x)
            .and_then(|d| d.layout())
            .map(|l| l.strides.clone())
            .unwrap_or_default();
        subset
            .ranges
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.is_index())
            .map(|(d, r)| {
                let stride = strides.get(d).cloned().unwrap_or(SymExpr::int(1));
                (r.num_elements(), &stride * &r.step)
            })
            .collect()
    }
}
