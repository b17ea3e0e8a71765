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

use crate::cpp::{self, PointerCoeffs, SymPrinter, TaskletPrinter, ctype, ident};
use crate::{Dialect, EmitError, Parameter, ParameterKind, TranslationUnit};
use sdfg_ir::code::Binding;
use sdfg_ir::{
    BlockKind, DType, DataDesc, LibraryOp, Memlet, Node, NodeId, Range, Region, Schedule,
    ScopeTree, Sdfg, Side, State, Storage, Subset, SymExpr, VIEW_CONNECTOR, Validated, Wcr,
};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

mod persistent;
mod thread;

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
    let sdfg = valid.sdfg();
    let mut e = Emitter::new(sdfg, dialect);
    let entry = ident(&sdfg.name);
    let host = e.host_code(&entry)?;
    let p = dialect.api_prefix();
    let mut src = String::new();
    let _ = writeln!(
        src,
        "// {} for SDFG `{}`, generated by sdfg-codegen for the `{}` accelerator.",
        dialect.source_extension(),
        sdfg.name,
        dialect.name()
    );
    let _ = writeln!(src, "#include <{}>", dialect.runtime_header());
    if e.cooperative {
        let _ = writeln!(
            src,
            "#include <{}>\n#define SDFG_GRID_SYNC() cooperative_groups::this_grid().sync()",
            dialect.cooperative_groups_header()
        );
    }
    if e.blas_used {
        let _ = writeln!(
            src,
            "#if !defined(__CUDACC_RTC__)\n#include <{}>\n#endif",
            dialect.blas().header
        );
    }
    if e.solver_used {
        let _ = writeln!(
            src,
            "#if !defined(__CUDACC_RTC__)\n#include <{}>\n#endif",
            dialect.solver().header
        );
    }
    let _ = writeln!(
        src,
        "#define SDFG_SHFL_DOWN(v, d) {}",
        dialect.shuffle_down()
    );
    src.push_str(PRELUDE);
    src.push('\n');
    for (name, (decl, body)) in e.kernel_names.iter().zip(&e.kernels) {
        let _ = writeln!(
            src,
            "#if !defined(SDFG_HOST_ONLY)\n{decl} {{\n{body}}}\n#else\n{decl};\n#endif  // {name}\n"
        );
    }
    let _ = writeln!(src, "#if !defined(__CUDACC_RTC__)");
    let _ = writeln!(
        src,
        "#define SDFG_CHECK(call) do {{ {p}Error_t sdfg_e = (call); if (sdfg_e != {p}Success) {{ \
         std::fprintf(stderr, \"{entry}: %s failed: %s\\n\", #call, {p}GetErrorString(sdfg_e)); return 1; }} }} while (0)"
    );
    // Launches pass their arguments converted to the kernel's parameter
    // types; a runtime that executes kernels itself (the emulated GPU)
    // defines SDFG_LAUNCH before this point and launches them typed.
    let _ = writeln!(
        src,
        "#if !defined(SDFG_LAUNCH)\n#include <tuple>\n#include <utility>\nnamespace sdfg {{\n\
         template <class... P, class... A>\n\
         inline {p}Error_t launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t shared, {p}Stream_t stream, A&&... args) {{\n  \
         std::tuple<P...> typed(std::forward<A>(args)...);\n  \
         return std::apply([&](P&... p) {{ void* ptrs[] = {{(void*)&p..., nullptr}}; \
         return {p}LaunchKernel((const void*)kernel, grid, block, ptrs, shared, stream); }}, typed);\n\
         }}\n}}  // namespace sdfg\n\
         #define SDFG_LAUNCH(kernel, grid, block, shared, stream, ...) sdfg::launch(kernel, grid, block, shared, stream, ##__VA_ARGS__)\n\
         #endif"
    );
    if e.cooperative {
        // A persistent kernel's launch: cooperative, so that its grid may
        // wait for itself; a runtime that executes kernels itself defines
        // SDFG_LAUNCH_COOPERATIVE before this point.
        let _ = writeln!(
            src,
            "#if !defined(SDFG_LAUNCH_COOPERATIVE)\n#include <tuple>\n#include <utility>\nnamespace sdfg {{\n\
             template <class... P, class... A>\n\
             inline {p}Error_t launch_cooperative(void (*kernel)(P...), dim3 grid, dim3 block, size_t shared, {p}Stream_t stream, A&&... args) {{\n  \
             std::tuple<P...> typed(std::forward<A>(args)...);\n  \
             return std::apply([&](P&... p) {{ void* ptrs[] = {{(void*)&p..., nullptr}}; \
             return {p}LaunchCooperativeKernel((const void*)kernel, grid, block, ptrs, shared, stream); }}, typed);\n\
             }}\n}}  // namespace sdfg\n\
             #define SDFG_LAUNCH_COOPERATIVE(kernel, grid, block, shared, stream, ...) sdfg::launch_cooperative(kernel, grid, block, shared, stream, ##__VA_ARGS__)\n\
             #endif"
        );
        let _ = writeln!(
            src,
            "#define SDFG_COOPERATIVE_KERNEL(kernel, grid, block, shared, ...) do {{ \
             SDFG_CHECK(SDFG_LAUNCH_COOPERATIVE(kernel, grid, block, shared, stream, ##__VA_ARGS__)); \
             {p}Error_t sdfg_l = {p}GetLastError(); if (sdfg_l != {p}Success) {{ \
             std::fprintf(stderr, \"{entry}: kernel %s: %s\\n\", #kernel, {p}GetErrorString(sdfg_l)); return 1; }} }} while (0)"
        );
    }
    // A kernel whose threads synchronize is declared so before its launch;
    // only a runtime that runs the threads itself needs to know.
    let _ = writeln!(
        src,
        "#if !defined(SDFG_SYNCHRONIZING)\n#define SDFG_SYNCHRONIZING(kernel) ((void)0)\n#endif"
    );
    // Every launch is followed by a check that names the kernel, so that a
    // launch error is never reported under the next runtime call.
    let _ = writeln!(
        src,
        "#define SDFG_KERNEL(kernel, grid, block, shared, ...) do {{ \
         SDFG_CHECK(SDFG_LAUNCH(kernel, grid, block, shared, stream, ##__VA_ARGS__)); \
         {p}Error_t sdfg_l = {p}GetLastError(); if (sdfg_l != {p}Success) {{ \
         std::fprintf(stderr, \"{entry}: kernel %s: %s\\n\", #kernel, {p}GetErrorString(sdfg_l)); return 1; }} }} while (0)"
    );
    if e.blas_used {
        let b = dialect.blas();
        let _ = writeln!(
            src,
            "#define SDFG_BLAS_CHECK(call) do {{ {p}Status_t sdfg_s = (call); if (sdfg_s != {c}_STATUS_SUCCESS) {{ \
             std::fprintf(stderr, \"{entry}: %s failed: status %d\\n\", #call, (int)sdfg_s); return 1; }} }} while (0)",
            p = b.prefix,
            c = b.constants
        );
    }
    if e.solver_used {
        let sv = dialect.solver();
        let _ = writeln!(
            src,
            "#define SDFG_SOLVER_CHECK(call) do {{ {st} sdfg_v = (call); if (sdfg_v != {ok}) {{ \
             std::fprintf(stderr, \"{entry}: %s failed: status %d\\n\", #call, (int)sdfg_v); return 1; }} }} while (0)",
            st = sv.status,
            ok = sv.success
        );
    }
    src.push_str(&host);
    let _ = writeln!(src, "#endif  // !__CUDACC_RTC__");
    Ok(TranslationUnit {
        file_name: format!("{}.{}", sdfg.name, dialect.source_extension()),
        source: src,
        kernels: e.kernel_names,
        entry,
        parameters: e.signature,
        factorizations: e.factorizations.len(),
        cooperative: e.cooperative,
    })
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

/// The most blocks a reduction spread over the grid launches: enough to
/// fill any current GPU several times over (an H100 has 132 SMs), few
/// enough for the last block to combine their partials in one pass.
const GRID_REDUCTION_BLOCKS: i64 = 1024;

/// A reduction spread over the grid ([`Emitter::grid_spread`]).
struct GridSpread {
    /// The thread-block map's entry.
    entry: NodeId,
    /// The type of what it combines.
    dtype: DType,
    /// Its iterations, which the blocks share.
    iterations: SymExpr,
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

/// A BLAS operand: its pointer, (count, element stride) per squeezed
/// dimension, and its dtype.
type BlasOperand = (String, Vec<(String, String)>, DType);

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

/// `, a, b, c` for parameters after the state handle (nothing for none).
fn after_handle(items: &[String]) -> String {
    items.iter().map(|i| format!(", {i}")).collect()
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

/// The elements of a box that is one run of consecutive elements (each
/// dimension's stride the elements of those inside it), from its
/// `(elements, stride)` per dimension; `None` when it is not one run.
fn contiguous_run(extents: &[(SymExpr, SymExpr)]) -> Option<SymExpr> {
    let mut run = SymExpr::int(1);
    for (count, stride) in extents.iter().rev() {
        if *stride != run {
            return None;
        }
        run = &run * count;
    }
    Some(run)
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

    fn api(&self, name: &str) -> String {
        format!("{}{name}", self.d.api_prefix())
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

    // -----------------------------------------------------------------
    // The host code: the state, init, run, exit and the one-shot entry.

    /// The entry points of the unit (see `docs/codegen.md`, "The entry
    /// points"): a state struct holding everything that outlives one call
    /// (stream, event, vendor handles, allocations sized by symbols alone,
    /// grow-only buffers), `NAME_init` making it, `NAME_run` running the
    /// program on it, `NAME_exit` releasing it, `NAME` doing all three, and
    /// packed variants of init and run for loaders that learn the signature
    /// at run time.
    fn host_code(&mut self, entry: &str) -> Result<String, EmitError> {
        let sdfg = self.sdfg;
        let p = self.d.api_prefix();
        let state_t = format!("{entry}_state_t");

        let signature = signature(sdfg)?;
        let arg_symbols: BTreeSet<String> = signature
            .iter()
            .filter(|p| matches!(p.kind, ParameterKind::Symbol(_)))
            .map(|p| p.name.clone())
            .collect();
        let params: Vec<String> = signature
            .iter()
            .map(|q| match q.kind {
                ParameterKind::Container(t) | ParameterKind::Return(t) => {
                    format!("{}* {}", ctype(t), ident(&q.name))
                }
                ParameterKind::Symbol(t) => format!("{} {}", ctype(t), ident(&q.name)),
            })
            .collect();
        let names: Vec<String> = signature.iter().map(|q| ident(&q.name)).collect();
        // (IR name, C++ name, C++ type) of each symbol init takes.
        let init_params: Vec<(&str, String, &'static str)> = signature
            .iter()
            .filter_map(|q| match q.kind {
                ParameterKind::Symbol(t) => Some((q.name.as_str(), ident(&q.name), ctype(t))),
                _ => None,
            })
            .collect();

        // Members of the state, what init does, what exit undoes (in
        // reverse), and how the program's body names the members.
        let mut members = String::new();
        let mut setup = String::new();
        let mut releases: Vec<String> = Vec::new();
        let mut prologue = String::new();
        let mut setup_used = BTreeSet::new();
        for (_, name, t) in &init_params {
            let _ = writeln!(members, "  {t} {name};");
        }
        let _ = writeln!(
            members,
            "  {} stream;\n  {} sdfg_copied;",
            self.api("Stream_t"),
            self.api("Event_t")
        );
        let _ = writeln!(
            setup,
            "  SDFG_CHECK({}(&sdfg_h->stream));\n  SDFG_CHECK({}(&sdfg_h->sdfg_copied, {}));",
            self.api("StreamCreate"),
            self.api("EventCreateWithFlags"),
            self.api("EventDisableTiming")
        );
        releases.push(format!(
            "  if (sdfg_h->stream) SDFG_RELEASE({}(sdfg_h->stream));",
            self.api("StreamDestroy")
        ));
        releases.push(format!(
            "  if (sdfg_h->sdfg_copied) SDFG_RELEASE({}(sdfg_h->sdfg_copied));",
            self.api("EventDestroy")
        ));
        let _ = writeln!(
            prologue,
            "  {} stream = sdfg_h->stream;\n  {} sdfg_copied = sdfg_h->sdfg_copied;\n  (void)sdfg_copied;",
            self.api("Stream_t"),
            self.api("Event_t")
        );
        for (x, desc) in &sdfg.containers {
            if !desc.transient || desc.is_view() || x.starts_with("__return") {
                continue;
            }
            let on_host = matches!(
                desc.storage,
                Storage::Default | Storage::Host | Storage::HostPinned | Storage::Register
            );
            if !on_host && desc.storage != Storage::DeviceGlobal {
                continue; // shared memory and registers live inside kernels
            }
            let Some(count) = desc.total_elements() else {
                return Err(unsupported(
                    format!("the {} `{x}`", desc.kind_name()),
                    x,
                    "(allocation)",
                ));
            };
            let t = ctype(desc.dtype);
            let name = ident(x);
            let _ = writeln!(members, "  {t}* {name};");
            releases.push(match desc.storage {
                Storage::DeviceGlobal => format!(
                    "  if (sdfg_h->{name}) SDFG_RELEASE({}(sdfg_h->{name}));",
                    self.api("Free")
                ),
                Storage::HostPinned => format!(
                    "  if (sdfg_h->{name}) SDFG_RELEASE({}(sdfg_h->{name}));",
                    self.api("FreeHost")
                ),
                _ => format!("  std::free(sdfg_h->{name});"),
            });
            let loop_invariant = desc.free_symbols().iter().all(|s| arg_symbols.contains(s));
            if !loop_invariant {
                // Sized by symbols that change during a run: a grow-only
                // buffer, reserved where used, kept from one run to the next.
                self.growable.insert(x.clone());
                let _ = writeln!(members, "  size_t sdfg_cap_{name};");
                let _ = writeln!(
                    prologue,
                    "  {t}*& {name} = sdfg_h->{name};\n  size_t& sdfg_cap_{name} = sdfg_h->sdfg_cap_{name};"
                );
                continue;
            }
            let _ = writeln!(prologue, "  {t}* const {name} = sdfg_h->{name};");
            let mut printer = self.sym();
            let n = printer.expr(&count);
            setup_used.extend(printer.used);
            let _ = match desc.storage {
                Storage::DeviceGlobal | Storage::HostPinned => writeln!(
                    setup,
                    "  SDFG_CHECK({}((void**)&sdfg_h->{name}, sizeof({t}) * (size_t)sdfg::imax({n}, 1)));",
                    self.api(if desc.storage == Storage::DeviceGlobal {
                        "Malloc"
                    } else {
                        "MallocHost"
                    })
                ),
                _ => writeln!(
                    setup,
                    "  sdfg_h->{name} = ({t}*)std::calloc((size_t)sdfg::imax({n}, 1), sizeof({t}));\n  \
                     if (!sdfg_h->{name}) {{ std::fprintf(stderr, \"{entry}_init: out of host memory for `{x}`\\n\"); return 1; }}"
                ),
            };
        }
        for (s, t) in &sdfg.symbols {
            if !arg_symbols.contains(s) {
                let _ = writeln!(prologue, "  {} {} = 0;", ctype(*t), ident(s));
            }
        }

        // The body: emitted first, as it decides which vendor handles exist.
        let mut body = String::new();
        self.region(&sdfg.body, 1, &mut body)?;
        if self.blas_used {
            let b = self.d.blas();
            let _ = writeln!(members, "  {}Handle_t sdfg_blas;", b.prefix);
            let _ = writeln!(
                setup,
                "  SDFG_BLAS_CHECK({p}Create(&sdfg_h->sdfg_blas));\n  SDFG_BLAS_CHECK({p}SetStream(sdfg_h->sdfg_blas, sdfg_h->stream));",
                p = b.prefix
            );
            releases.push(format!(
                "  if (sdfg_h->sdfg_blas && {p}Destroy(sdfg_h->sdfg_blas) != {c}_STATUS_SUCCESS) {{ std::fprintf(stderr, \"{entry}: {p}Destroy failed\\n\"); status = 1; }}",
                p = b.prefix,
                c = b.constants
            ));
            let _ = writeln!(
                prologue,
                "  {}Handle_t sdfg_blas = sdfg_h->sdfg_blas;",
                b.prefix
            );
        }
        if self.solver_used {
            let sv = self.d.solver();
            let malloc = self.api("Malloc");
            let _ = writeln!(
                members,
                "  {p}Handle_t sdfg_solver;\n  void* sdfg_work;\n  size_t sdfg_work_cap;\n  int* sdfg_info;\n  int* sdfg_failed;",
                p = sv.prefix
            );
            let _ = writeln!(
                setup,
                "  SDFG_SOLVER_CHECK({p}Create(&sdfg_h->sdfg_solver));\n  SDFG_SOLVER_CHECK({p}SetStream(sdfg_h->sdfg_solver, sdfg_h->stream));\n  \
                 // `info` of the last factorization, and the first failure of a run\n  \
                 // (call site, info), both on the device.\n  \
                 SDFG_CHECK({malloc}((void**)&sdfg_h->sdfg_info, sizeof(int)));\n  \
                 SDFG_CHECK({malloc}((void**)&sdfg_h->sdfg_failed, 2 * sizeof(int)));",
                p = sv.prefix
            );
            for member in ["sdfg_work", "sdfg_info", "sdfg_failed"] {
                releases.push(format!(
                    "  if (sdfg_h->{member}) SDFG_RELEASE({}(sdfg_h->{member}));",
                    self.api("Free")
                ));
            }
            releases.push(format!(
                "  if (sdfg_h->sdfg_solver && {p}Destroy(sdfg_h->sdfg_solver) != {ok}) {{ std::fprintf(stderr, \"{entry}: {p}Destroy failed\\n\"); status = 1; }}",
                p = sv.prefix,
                ok = sv.success
            ));
            let _ = writeln!(
                prologue,
                "  {p}Handle_t sdfg_solver = sdfg_h->sdfg_solver;\n  void*& sdfg_work = sdfg_h->sdfg_work;\n  size_t& sdfg_work_cap = sdfg_h->sdfg_work_cap;\n  \
                 int* const sdfg_info = sdfg_h->sdfg_info;\n  int* const sdfg_failed = sdfg_h->sdfg_failed;\n  \
                 SDFG_CHECK({}(sdfg_failed, 0, 2 * sizeof(int), stream));",
                self.api("MemsetAsync"),
                p = sv.prefix
            );
        }

        for (kernel, t) in std::mem::take(&mut self.grid_buffers) {
            let (parts, tickets) = (format!("{kernel}_parts"), format!("{kernel}_tickets"));
            let _ = writeln!(members, "  {t}* {parts};\n  unsigned int* {tickets};");
            let _ = writeln!(
                setup,
                "  // The block partials and ticket counter of `{kernel}`'s grid reduction\n  \
                 // (the last block resets the counter for the next launch).\n  \
                 SDFG_CHECK({malloc}((void**)&sdfg_h->{parts}, sizeof({t}) * {GRID_REDUCTION_BLOCKS}));\n  \
                 SDFG_CHECK({malloc}((void**)&sdfg_h->{tickets}, sizeof(unsigned int)));\n  \
                 SDFG_CHECK({memset}(sdfg_h->{tickets}, 0, sizeof(unsigned int), sdfg_h->stream));",
                malloc = self.api("Malloc"),
                memset = self.api("MemsetAsync")
            );
            for member in [&parts, &tickets] {
                releases.push(format!(
                    "  if (sdfg_h->{member}) SDFG_RELEASE({}(sdfg_h->{member}));",
                    self.api("Free")
                ));
            }
            let _ = writeln!(
                prologue,
                "  {t}* const {parts} = sdfg_h->{parts};\n  unsigned int* const {tickets} = sdfg_h->{tickets};"
            );
        }

        let mut out = String::new();
        // The state.
        let _ = writeln!(
            out,
            "// Everything that outlives one run: made by {entry}_init, released by {entry}_exit.\nstruct {state_t} {{\n{members}}};\n"
        );
        // Exit: releases whatever exists, in reverse order of creation; a
        // failing release is reported and turns success into an error
        // without skipping the others.
        let _ = writeln!(out, "extern \"C\" int {entry}_exit({state_t}* sdfg_h) {{");
        let _ = writeln!(out, "  if (!sdfg_h) return 0;\n  int status = 0;");
        let _ = writeln!(
            out,
            "#define SDFG_RELEASE(call) do {{ if ((call) != {p}Success) {{ std::fprintf(stderr, \"{entry}: %s failed\\n\", #call); status = 1; }} }} while (0)"
        );
        for r in releases.iter().rev() {
            let _ = writeln!(out, "{r}");
        }
        let _ = writeln!(
            out,
            "#undef SDFG_RELEASE\n  std::free(sdfg_h);\n  return status;\n}}\n"
        );
        // Setup and init: a failed setup releases what it made.
        let _ = writeln!(out, "static int {entry}_setup({state_t}* sdfg_h) {{");
        for (ir, name, t) in &init_params {
            if setup_used.contains(*ir) {
                let _ = writeln!(out, "  const {t} {name} = sdfg_h->{name};");
            }
        }
        let _ = writeln!(out, "{setup}  return 0;\n}}\n");
        let init_sig = if init_params.is_empty() {
            "void".to_owned()
        } else {
            init_params
                .iter()
                .map(|(_, n, t)| format!("{t} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            out,
            "extern \"C\" {state_t}* {entry}_init({init_sig}) {{\n  \
             {state_t}* sdfg_h = ({state_t}*)std::calloc(1, sizeof({state_t}));\n  \
             if (!sdfg_h) {{ std::fprintf(stderr, \"{entry}_init: out of host memory\\n\"); return nullptr; }}"
        );
        for (_, name, _) in &init_params {
            let _ = writeln!(out, "  sdfg_h->{name} = {name};");
        }
        let _ = writeln!(
            out,
            "  if ({entry}_setup(sdfg_h) != 0) {{ {entry}_exit(sdfg_h); return nullptr; }}\n  return sdfg_h;\n}}\n"
        );
        // The program's body.
        let _ = writeln!(
            out,
            "static int {entry}_body({state_t}* sdfg_h{}) {{",
            after_handle(&params)
        );
        out.push_str(&prologue);
        out.push_str(&body);
        // A body ending in its `return` has waited and returned already.
        let returned = sdfg
            .body
            .blocks
            .last()
            .is_some_and(|b| matches!(b.kind, BlockKind::Return));
        if returned {
            out.push_str("}\n\n");
        } else {
            let _ = writeln!(
                out,
                "  SDFG_CHECK({}(stream));\n  return 0;\n}}\n",
                self.api("StreamSynchronize")
            );
        }
        // Run: the symbols must be those init allocated for.
        let _ = writeln!(
            out,
            "extern \"C\" int {entry}_run({state_t}* sdfg_h{}) {{\n  \
             if (!sdfg_h) {{ std::fprintf(stderr, \"{entry}_run: no state ({entry}_init failed or was not called)\\n\"); return 1; }}",
            after_handle(&params)
        );
        for (_, name, _) in &init_params {
            let _ = writeln!(
                out,
                "  if ({name} != sdfg_h->{name}) {{ std::fprintf(stderr, \"{entry}_run: `{name}` is %lld, but {entry}_init was given %lld\\n\", (long long){name}, (long long)sdfg_h->{name}); return {}; }}",
                crate::status::ARGUMENT_ERROR
            );
        }
        let _ = writeln!(
            out,
            "  int sdfg_status = {entry}_body(sdfg_h{});",
            after_handle(&names)
        );
        if !self.factorizations.is_empty() {
            // The first failed factorization of the run, read once at its end.
            let sites: Vec<String> = std::iter::once("\"\"".to_owned())
                .chain(self.factorizations.iter().map(|f| format!("{f:?}")))
                .collect();
            let _ = writeln!(
                out,
                "  if (sdfg_status != 0) return sdfg_status;\n  \
                 static const char* const sdfg_sites[] = {{{}}};\n  \
                 int sdfg_failed[2] = {{0, 0}};\n  \
                 {{\n    {}Stream_t stream = sdfg_h->stream;\n    \
                 SDFG_CHECK({}(sdfg_failed, sdfg_h->sdfg_failed, sizeof(sdfg_failed), {}, stream));\n    \
                 SDFG_CHECK({}(stream));\n  }}\n  \
                 if (sdfg_failed[0] > 0 && sdfg_failed[0] <= {}) {{\n    \
                 std::fprintf(stderr, \"{entry}: %s (info = %d)\\n\", sdfg_sites[sdfg_failed[0]], sdfg_failed[1]);\n    \
                 return {};\n  }}",
                sites.join(", "),
                p,
                self.api("MemcpyAsync"),
                self.api("MemcpyDeviceToHost"),
                self.api("StreamSynchronize"),
                self.factorizations.len(),
                crate::status::LINALG_ERROR
            );
        }
        let _ = writeln!(out, "  return sdfg_status;\n}}\n");
        // The one-shot entry.
        let init_args: Vec<&str> = init_params.iter().map(|(_, n, _)| n.as_str()).collect();
        let _ = writeln!(
            out,
            "extern \"C\" int {entry}({}) {{\n  \
             {state_t}* sdfg_h = {entry}_init({});\n  \
             if (!sdfg_h) return 1;\n  \
             int status = {entry}_run(sdfg_h{});\n  \
             int released = {entry}_exit(sdfg_h);\n  \
             return status != 0 ? status : released;\n}}\n",
            if params.is_empty() {
                "void".to_owned()
            } else {
                params.join(", ")
            },
            init_args.join(", "),
            after_handle(&names)
        );
        // Packed variants: argument k is at `args[k]` (the address of the
        // value, as the runtimes' LaunchKernel takes kernel arguments).
        let unpack = |k: usize, q: &Parameter| match q.kind {
            ParameterKind::Container(t) | ParameterKind::Return(t) => {
                format!("*({}* const*)sdfg_args[{k}]", ctype(t))
            }
            ParameterKind::Symbol(t) => format!("*(const {}*)sdfg_args[{k}]", ctype(t)),
        };
        let symbols_unpacked: Vec<String> = signature
            .iter()
            .filter(|q| matches!(q.kind, ParameterKind::Symbol(_)))
            .enumerate()
            .map(|(k, q)| unpack(k, q))
            .collect();
        let args_unpacked: Vec<String> = signature
            .iter()
            .enumerate()
            .map(|(k, q)| unpack(k, q))
            .collect();
        let _ = writeln!(
            out,
            "extern \"C\" {state_t}* {entry}_init_packed(void* const* sdfg_args) {{\n  (void)sdfg_args;\n  return {entry}_init({});\n}}\n",
            symbols_unpacked.join(", ")
        );
        let _ = writeln!(
            out,
            "extern \"C\" int {entry}_run_packed({state_t}* sdfg_h, void* const* sdfg_args) {{\n  (void)sdfg_args;\n  return {entry}_run(sdfg_h{});\n}}",
            after_handle(&args_unpacked)
        );
        if signature.iter().any(|q| q.home == Side::Device) {
            // Arguments whose home is the device are device pointers the
            // caller allocated. A caller with no runtime of its own (the
            // loader of `sdfg-exec`, on the emulated GPU and on real ones)
            // allocates and fills them through the unit's.
            let _ = writeln!(
                out,
                "\n// Device memory for the arguments whose home is the device, for callers\n\
                 // without a runtime of their own.\n\
                 extern \"C\" void* {entry}_device_alloc(size_t bytes) {{\n  \
                 void* sdfg_p = nullptr;\n  \
                 return {p}Malloc(&sdfg_p, bytes > 0 ? bytes : 1) == {p}Success ? sdfg_p : nullptr;\n}}\n\
                 extern \"C\" int {entry}_device_copy(void* dst, const void* src, size_t bytes, int to_device) {{\n  \
                 return {p}Memcpy(dst, src, bytes, to_device ? {p}MemcpyHostToDevice : {p}MemcpyDeviceToHost) == {p}Success ? 0 : 1;\n}}\n\
                 extern \"C\" int {entry}_device_free(void* ptr) {{\n  \
                 return {p}Free(ptr) == {p}Success ? 0 : 1;\n}}"
            );
        }
        self.signature = signature;
        Ok(out)
    }

    fn region(
        &mut self,
        region: &Region,
        indent: usize,
        out: &mut String,
    ) -> Result<(), EmitError> {
        let pad = "  ".repeat(indent);
        for block in &region.blocks {
            let _ = writeln!(out, "{pad}// {}", block.label);
            match &block.kind {
                BlockKind::State(state) => {
                    let _ = writeln!(out, "{pad}{{");
                    self.state(&block.label, state, indent + 1, out)?;
                    let _ = writeln!(out, "{pad}}}");
                }
                BlockKind::Loop(l) => {
                    let _ = writeln!(out, "{pad}{}", for_header(&mut self.sym(), l));
                    self.region(&l.body, indent + 1, out)?;
                    let _ = writeln!(out, "{pad}}}");
                }
                BlockKind::Conditional(c) => {
                    for (k, (cond, r)) in c.branches.iter().enumerate() {
                        let cond = self.sym().cond(cond);
                        let kw = if k == 0 { "if" } else { "} else if" };
                        let _ = writeln!(out, "{pad}{kw} ({cond}) {{");
                        self.region(r, indent + 1, out)?;
                    }
                    if let Some(r) = &c.otherwise {
                        let _ = writeln!(out, "{pad}}} else {{");
                        self.region(r, indent + 1, out)?;
                    }
                    let _ = writeln!(out, "{pad}}}");
                }
                BlockKind::Break => {
                    let _ = writeln!(out, "{pad}break;");
                }
                BlockKind::Continue => {
                    let _ = writeln!(out, "{pad}continue;");
                }
                BlockKind::Return => {
                    let _ = writeln!(
                        out,
                        "{pad}SDFG_CHECK({}(stream));\n{pad}return 0;",
                        self.api("StreamSynchronize")
                    );
                }
            }
            for a in &block.transition.assignments {
                let v = self.sym().expr(&a.value);
                let _ = writeln!(out, "{pad}{} = {v};", ident(&a.symbol));
            }
        }
        Ok(())
    }

    // -----------------------------------------------------------------
    // States.

    fn state(
        &mut self,
        label: &str,
        state: &State,
        indent: usize,
        out: &mut String,
    ) -> Result<(), EmitError> {
        let pad = "  ".repeat(indent);
        let tree = state
            .scope_tree()
            .map_err(|e| EmitError::Invalid(format!("state `{label}`: {e}")))?;
        let order = state
            .topological_order()
            .ok_or_else(|| EmitError::Invalid(format!("state `{label}` has a cycle")))?;
        // Grow-only buffers this state uses.
        for x in state.accessed_containers() {
            if self.growable.contains(x) {
                self.reserve(x, indent, out);
            }
        }
        // Host code waits for the stream only where a queued copy may
        // still use what it touches: pinned host memory, which copies read
        // and write asynchronously. A copy from pageable memory reads it
        // when issued; what a copy back writes the host reads after the
        // event its state ends with (below).
        let host_code: Vec<NodeId> = order
            .iter()
            .copied()
            .filter(|n| {
                tree.parent(*n).is_none()
                    && (matches!(state.node(*n), Some(Node::Tasklet(_)))
                        || matches!(state.node(*n), Some(Node::MapEntry(m))
                            if !m.map.schedule.is_device() && !self.launches_only(state, &tree, *n)))
            })
            .collect();
        let pinned = host_code.iter().any(|&n| {
            let scope: Vec<NodeId> = state
                .nodes()
                .map(|(id, _)| id)
                .filter(|&id| id == n || tree.ancestors(id).contains(&n))
                .collect();
            scope.iter().any(|&id| {
                state
                    .in_edges(id)
                    .chain(state.out_edges(id))
                    .filter_map(|(_, _, e)| e.memlet.as_ref())
                    .any(|m| {
                        self.desc(&m.data)
                            .is_some_and(|d| d.storage == Storage::HostPinned)
                    })
            })
        });
        if pinned {
            let _ = writeln!(
                out,
                "{pad}SDFG_CHECK({}(stream));",
                self.api("StreamSynchronize")
            );
        }
        // The host's symbols are in scope: what the views read needs no
        // passing.
        let _ = self.views(label, state, &tree, None, indent, out)?;
        let mut device_to_host = false;
        for &n in order.iter().filter(|n| tree.parent(**n).is_none()) {
            device_to_host |= self.host_node(label, state, &tree, n, indent, out)?;
        }
        if device_to_host {
            // The host reads what was copied back only once the copies are
            // done: an event after them, waited for.
            let _ = writeln!(
                out,
                "{pad}SDFG_CHECK({}(sdfg_copied, stream));\n{pad}SDFG_CHECK({}(sdfg_copied));",
                self.api("EventRecord"),
                self.api("EventSynchronize")
            );
        }
        Ok(())
    }

    /// Whether a host map's scope holds nothing but maps that become kernels.
    fn launches_only(&self, state: &State, tree: &ScopeTree, entry: NodeId) -> bool {
        tree.children(Some(entry))
            .iter()
            .all(|c| match state.node(*c) {
                Some(Node::MapEntry(m)) => m.map.schedule.is_device(),
                Some(Node::MapExit(_)) => true,
                _ => false,
            })
    }

    /// Grows the buffer of `x` to its current size where it is smaller. The
    /// pointer and capacity are reset before the old buffer is released,
    /// so a failing release or allocation never leaves a freed pointer for
    /// `exit` to release again.
    fn reserve(&self, x: &str, indent: usize, out: &mut String) {
        let pad = "  ".repeat(indent);
        let Some(desc) = self.desc(x) else { return };
        let Some(count) = desc.total_elements() else {
            return;
        };
        let n = self.sym().expr(&count);
        let t = ctype(desc.dtype);
        let name = ident(x);
        let cap = format!("sdfg_cap_{name}");
        let _ = writeln!(out, "{pad}if ((size_t)sdfg::imax({n}, 1) > {cap}) {{");
        let _ = writeln!(
            out,
            "{pad}  {t}* sdfg_old = {name};\n{pad}  {name} = nullptr;\n{pad}  {cap} = 0;"
        );
        let device_api = match desc.storage {
            Storage::DeviceGlobal => Some(("Free", "Malloc")),
            Storage::HostPinned => Some(("FreeHost", "MallocHost")),
            _ => None,
        };
        match device_api {
            Some((free, malloc)) => {
                let _ = writeln!(
                    out,
                    "{pad}  if (sdfg_old) SDFG_CHECK({}(sdfg_old));\n{pad}  SDFG_CHECK({}((void**)&{name}, sizeof({t}) * (size_t)sdfg::imax({n}, 1)));",
                    self.api(free),
                    self.api(malloc)
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "{pad}  std::free(sdfg_old);\n{pad}  {name} = ({t}*)std::calloc((size_t)sdfg::imax({n}, 1), sizeof({t}));\n\
                     {pad}  if (!{name}) {{ std::fprintf(stderr, \"{}: out of host memory for `{x}`\\n\"); return 1; }}",
                    ident(&self.sdfg.name)
                );
            }
        }
        let _ = writeln!(out, "{pad}  {cap} = (size_t)sdfg::imax({n}, 1);\n{pad}}}");
    }

    /// Declares the view pointers of a scope (`None`: the state's top
    /// level); returns the symbols their offsets read (a kernel takes them
    /// as parameters).
    #[allow(clippy::too_many_arguments)]
    fn views(
        &self,
        label: &str,
        state: &State,
        tree: &ScopeTree,
        scope: Option<NodeId>,
        indent: usize,
        out: &mut String,
    ) -> Result<BTreeSet<String>, EmitError> {
        let pad = "  ".repeat(indent);
        let mut used = BTreeSet::new();
        for (_, src, dst, e) in state.edges() {
            let view = if e.dst_conn.as_deref() == Some(VIEW_CONNECTOR) {
                dst
            } else if e.src_conn.as_deref() == Some(VIEW_CONNECTOR) {
                src
            } else {
                continue;
            };
            if tree.parent(view) != scope {
                continue;
            }
            let origin = if view == dst { src } else { dst };
            let (Some(v), Some(o), Some(m)) = (
                state.node(view).and_then(Node::as_access),
                state.node(origin).and_then(Node::as_access),
                e.memlet.as_ref(),
            ) else {
                continue;
            };
            let (subset, _) = m.copy_subsets(o, &self.shape(v));
            let (offset, _) = self.subset_geometry(o, &subset, &mut used);
            let desc = self
                .desc(v)
                .ok_or_else(|| EmitError::Invalid(format!("unknown view `{v}` in `{label}`")))?;
            let _ = writeln!(
                out,
                "{pad}{}* {} = {} + ({offset});",
                ctype(desc.dtype),
                ident(v),
                ident(o)
            );
        }
        Ok(used)
    }

    /// Emits one node at the top level of a state; returns whether it
    /// copied from the device to the host.
    fn host_node(
        &mut self,
        label: &str,
        state: &State,
        tree: &ScopeTree,
        n: NodeId,
        indent: usize,
        out: &mut String,
    ) -> Result<bool, EmitError> {
        let Some(node) = state.node(n) else {
            return Ok(false);
        };
        match node {
            Node::Access(_) => {
                let mut d2h = false;
                for (_, src, e) in state.in_edges(n) {
                    let view_edge = e.dst_conn.as_deref() == Some(VIEW_CONNECTOR)
                        || e.src_conn.as_deref() == Some(VIEW_CONNECTOR);
                    if view_edge || state.node(src).and_then(Node::as_access).is_none() {
                        continue;
                    }
                    if let Some(m) = &e.memlet {
                        d2h |= self.copy(label, state, src, n, m, indent, out)?;
                    }
                }
                Ok(d2h)
            }
            Node::MapEntry(m) if m.map.schedule.is_device() => {
                self.kernel(label, state, tree, n, indent, out)?;
                Ok(false)
            }
            Node::MapEntry(_) => {
                self.map_loops(label, state, tree, n, Ctx::Host, indent, out)?;
                Ok(false)
            }
            Node::MapExit(_) => Ok(false),
            Node::Tasklet(t) => {
                if t.host_only() {
                    // The host's clock times the device's work issued
                    // before it (GT4Py's timers): that work ends first.
                    let _ = writeln!(
                        out,
                        "{}SDFG_CHECK({}(stream));",
                        "  ".repeat(indent),
                        self.api("StreamSynchronize")
                    );
                }
                self.tasklet(
                    label,
                    state,
                    n,
                    Ctx::Host,
                    indent,
                    out,
                    &mut BTreeSet::new(),
                )?;
                Ok(false)
            }
            Node::Library(l) if l.schedule.is_device() => {
                self.vendor_call(label, state, n, indent, out)?;
                Ok(false)
            }
            Node::Library(l) => Err(unsupported(
                format!(
                    "the library node `{}` ({}) on the host: lower it first (sdfg_passes::lower_library_nodes)",
                    l.label,
                    l.op.name()
                ),
                &l.label,
                label,
            )),
            Node::NestedSdfg(nested) => Err(unsupported(
                "a nested SDFG (not emitted yet)",
                &nested.label,
                label,
            )),
            Node::Callback(c) => Err(unsupported(
                "a host callback (not emitted yet)",
                &c.label,
                label,
            )),
        }
    }

    /// A copy between two access nodes, as one, two-dimensional or nested
    /// two-dimensional runtime copies; returns whether it is device to host.
    #[allow(clippy::too_many_arguments)]
    fn copy(
        &self,
        label: &str,
        state: &State,
        src: NodeId,
        dst: NodeId,
        m: &Memlet,
        indent: usize,
        out: &mut String,
    ) -> Result<bool, EmitError> {
        let pad = "  ".repeat(indent);
        let (Some(a), Some(b)) = (
            state.node(src).and_then(Node::as_access),
            state.node(dst).and_then(Node::as_access),
        ) else {
            return Ok(false);
        };
        let (sa, sb) = m.copy_subsets(a, &self.shape(if m.data == a { b } else { a }));
        let (sa, sb) = (&sa, &sb);
        let (Some(da), Some(db)) = (self.desc(a), self.desc(b)) else {
            return Err(EmitError::Invalid(format!(
                "copy `{a}` -> `{b}` in `{label}`"
            )));
        };
        let side = |d: &DataDesc| d.storage.side().unwrap_or(Side::Host);
        let kind = match (side(da), side(db)) {
            (Side::Host, Side::Device) => "MemcpyHostToDevice",
            (Side::Device, Side::Host) => "MemcpyDeviceToHost",
            (Side::Device, Side::Device) => "MemcpyDeviceToDevice",
            (Side::Host, Side::Host) => "MemcpyHostToHost",
        };
        let mut used = BTreeSet::new();
        let (oa, dims_a) = self.subset_geometry(a, sa, &mut used);
        let (ob, dims_b) = self.subset_geometry(b, sb, &mut used);
        let t = ctype(da.dtype);
        let api = self.api("MemcpyAsync");
        let (ext_a, ext_b) = (self.subset_extents(a, sa), self.subset_extents(b, sb));
        // Both sides one run of consecutive elements, each coalesced on its
        // own (a reshape: `(R, M)` into `(R * M,)`): one call, whatever the
        // shapes, decided on the canonical symbolic forms.
        if let (Some(run), Some(other)) = (contiguous_run(&ext_a), contiguous_run(&ext_b))
            && run.joined_powers() == other.joined_powers()
        {
            let mut p = self.sym();
            let count = p.expr(&run);
            let kind = self.api(kind);
            let _ = writeln!(
                out,
                "{pad}SDFG_CHECK({api}({} + ({ob}), {} + ({oa}), sizeof({t}) * {count}, {kind}, stream));",
                ident(b),
                ident(a)
            );
            return Ok(kind.ends_with("DeviceToHost"));
        }
        if dims_a.len() != dims_b.len() {
            return Err(unsupported(
                format!("a copy `{a}` -> `{b}` between subsets of different shapes"),
                a,
                label,
            ));
        }
        // Innermost dimensions, contiguous on both sides, coalesce into one
        // run: a dimension whose stride is the elements of the run so far,
        // on both sides, decided on the canonical symbolic forms (a whole
        // array of any rank is one copy).
        let mut dims: Vec<(String, String, String)> = dims_a
            .into_iter()
            .zip(dims_b)
            .map(|((c, s1), (_, s2))| (c, s1, s2))
            .collect();
        let (mut ext_a, mut ext_b) = (ext_a, ext_b);
        let mut run = "1LL".to_owned();
        let mut run_elements = SymExpr::int(1);
        while let (Some((c, _, _)), Some((count_a, stride_a)), Some((count_b, stride_b))) =
            (dims.last().cloned(), ext_a.last(), ext_b.last())
        {
            if !(*stride_a == run_elements && *stride_b == run_elements && count_a == count_b) {
                break;
            }
            run_elements = &run_elements * count_a;
            run = format!("{run} * {c}");
            dims.pop();
            ext_a.pop();
            ext_b.pop();
        }
        let api2 = self.api("Memcpy2DAsync");
        let kind = self.api(kind);
        let mut loops = String::new();
        let mut close = String::new();
        let (mut off_a, mut off_b) = (format!("({oa})"), format!("({ob})"));
        let height = dims.pop();
        for (k, (c, s1, s2)) in dims.iter().enumerate() {
            let v = format!("sdfg_c{k}");
            let _ = writeln!(loops, "{pad}for (int64_t {v} = 0; {v} < {c}; ++{v}) {{");
            close.push_str(&format!("{pad}}}\n"));
            off_a = format!("{off_a} + {v} * {s1}");
            off_b = format!("{off_b} + {v} * {s2}");
        }
        out.push_str(&loops);
        match height {
            None => {
                let _ = writeln!(
                    out,
                    "{pad}SDFG_CHECK({api}({} + {off_b}, {} + {off_a}, sizeof({t}) * ({run}), {kind}, stream));",
                    ident(b),
                    ident(a)
                );
            }
            Some((c, s1, s2)) => {
                let _ = writeln!(
                    out,
                    "{pad}SDFG_CHECK({api2}({} + {off_b}, sizeof({t}) * {s2}, {} + {off_a}, sizeof({t}) * {s1}, sizeof({t}) * ({run}), {c}, {kind}, stream));",
                    ident(b),
                    ident(a)
                );
            }
        }
        out.push_str(&close);
        Ok(kind.ends_with("DeviceToHost"))
    }

    /// A device-wide GEMM, GEMV or DOT as a call to the dialect's BLAS, a
    /// Cholesky factorization or a linear solve as calls to its dense
    /// solver. BLAS and LAPACK are column-major and our arrays row-major: a
    /// row-major `M x K` matrix with row stride `ld` is the column-major
    /// `K x M` matrix with leading dimension `ld`, so `C = A B` is computed as
    /// `C^T = B^T A^T`, and a solve factors `A^T` and solves with its
    /// transpose.
    fn vendor_call(
        &mut self,
        label: &str,
        state: &State,
        n: NodeId,
        indent: usize,
        out: &mut String,
    ) -> Result<(), EmitError> {
        let pad = "  ".repeat(indent);
        let Some(Node::Library(l)) = state.node(n) else {
            return Ok(());
        };
        let refuse = |what: String| unsupported(what, &l.label, label);
        let memlet = |conn: &str, incoming: bool| -> Result<&Memlet, EmitError> {
            if incoming {
                state
                    .in_edges(n)
                    .find(|(_, _, e)| e.dst_conn.as_deref() == Some(conn))
                    .and_then(|(_, _, e)| e.memlet.as_ref())
            } else {
                state
                    .out_edges(n)
                    .find(|(_, _, e)| e.src_conn.as_deref() == Some(conn))
                    .and_then(|(_, _, e)| e.memlet.as_ref())
            }
            .ok_or_else(|| {
                refuse(format!(
                    "a `{}` without its `{conn}` connector",
                    l.op.name()
                ))
            })
        };
        let mut used = BTreeSet::new();
        let mut operand = |conn: &str, incoming: bool| -> Result<BlasOperand, EmitError> {
            let m = memlet(conn, incoming)?;
            let (offset, dims) = self.subset_geometry(&m.data, &m.subset, &mut used);
            let dtype = self.desc(&m.data).map_or(DType::Float64, |d| d.dtype);
            Ok((format!("{} + ({offset})", ident(&m.data)), dims, dtype))
        };
        let b = self.d.blas();
        let (p, c) = (b.prefix, b.constants);
        let letter = |t: DType| match t {
            DType::Float32 => Ok("S"),
            DType::Float64 => Ok("D"),
            other => Err(refuse(format!(
                "a vendor `{}` call on {other}",
                l.op.name()
            ))),
        };
        let scalar = |lit: &sdfg_ir::Literal| cpp::literal(lit);
        // Leading dimensions: BLAS and LAPACK require at least 1, also for
        // empty matrices.
        let ld = |e: &str| format!("(int)sdfg::imax(1, {e})");
        // The runtime calls the solver calls are wrapped in.
        let (m2d, d2d) = (self.api("Memcpy2DAsync"), self.api("MemcpyDeviceToDevice"));
        let grow = self.workspace_growth(&format!("{pad}  "));
        let call = match &l.op {
            LibraryOp::Gemm {
                alpha,
                beta,
                trans_a: false,
                trans_b: false,
                ..
            } => {
                // BLAS updates C in place: an accumulated input must be the
                // output itself.
                let connectors = l.op.in_connectors();
                if connectors.contains(&"_cin") {
                    let (cin, c) = (memlet("_cin", true)?, memlet("_c", false)?);
                    if cin.data != c.data || cin.subset != c.subset {
                        return Err(refuse(format!(
                            "a GEMM accumulating `{}[{}]` into another array, `{}[{}]` (BLAS updates C in place)",
                            cin.data, cin.subset, c.data, c.subset
                        )));
                    }
                }
                // A scale read through a connector: the host reads it when
                // it issues the call.
                let scale = |lit: &sdfg_ir::Literal, conn: &str| -> Result<String, EmitError> {
                    let literal = scalar(lit);
                    if !connectors.contains(&conn) {
                        return Ok(literal);
                    }
                    let m = memlet(conn, true)?;
                    if self.desc(&m.data).and_then(|d| d.storage.side()) == Some(Side::Device) {
                        return Err(refuse(format!(
                            "a GEMM scaled by `{}`, which is in device memory (the host reads the scale)",
                            m.data
                        )));
                    }
                    let (offset, _) =
                        self.subset_geometry(&m.data, &m.subset, &mut BTreeSet::new());
                    Ok(format!("{literal} * {}[{offset}]", ident(&m.data)))
                };
                let al = scale(alpha, "_alpha")?;
                let be = scale(beta, "_beta")?;
                let (a, da, t) = operand("_a", true)?;
                let (bm, db, _) = operand("_b", true)?;
                let (cm, dc, _) = operand("_c", false)?;
                let (Some((m, lda)), Some((k, _)), Some((_, ldb)), Some((nn, _)), Some((_, ldc))) =
                    (da.first(), da.get(1), db.first(), db.get(1), dc.first())
                else {
                    return Err(refuse("a GEMM whose operands are not matrices".to_owned()));
                };
                // An empty C is no call; an empty inner dimension (k = 0)
                // is, as BLAS defines it: C = beta C.
                format!(
                    "{{\n{pad}  const {ty} sdfg_alpha = {al}, sdfg_beta = {be};\n\
                     {pad}  if ({nn} > 0 && {m} > 0) SDFG_BLAS_CHECK({p}{x}gemm(sdfg_blas, {c}_OP_N, {c}_OP_N, (int)({nn}), (int)({m}), (int)({k}), &sdfg_alpha, {bm}, {ldb}, {a}, {lda}, &sdfg_beta, {cm}, {ldc}));\n{pad}}}",
                    ty = ctype(t),
                    x = letter(t)?,
                    ldb = ld(ldb),
                    lda = ld(lda),
                    ldc = ld(ldc),
                )
            }
            LibraryOp::Gemv {
                alpha,
                beta,
                trans_a,
            } => {
                let (a, da, t) = operand("_a", true)?;
                let (x, dx, _) = operand("_x", true)?;
                let (y, dy, _) = operand("_y", false)?;
                let (Some((rows, lda)), Some((cols, _)), Some((_, incx)), Some((ylen, incy))) =
                    (da.first(), da.get(1), dx.first(), dy.first())
                else {
                    return Err(refuse("a GEMV of the wrong shapes".to_owned()));
                };
                // Row-major `rows x cols` is column-major `cols x rows`:
                // `A x` transposes it back, `x A` (trans_a) does not.
                let op = if *trans_a { "N" } else { "T" };
                let ty = ctype(t);
                // BLAS returns at once when A is empty, leaving y as it was;
                // the product's meaning over an empty inner dimension is
                // y = beta y, which a prelude kernel computes.
                format!(
                    "{{\n{pad}  const {ty} sdfg_alpha = {al}, sdfg_beta = {be};\n\
                     {pad}  if ({cols} > 0 && {rows} > 0) {{\n\
                     {pad}    SDFG_BLAS_CHECK({p}{xl}gemv(sdfg_blas, {c}_OP_{op}, (int)({cols}), (int)({rows}), &sdfg_alpha, {a}, {lda}, {x}, (int)({incx}), &sdfg_beta, {y}, (int)({incy})));\n\
                     {pad}  }} else if ({ylen} > 0) {{\n\
                     {pad}    {ty}* sdfg_y = {y};\n\
                     {pad}    int64_t sdfg_len = {ylen}, sdfg_inc = {incy};\n\
                     {pad}    dim3 sdfg_grid((unsigned)sdfg::imin(sdfg::ifloordiv(sdfg_len + 255, 256), 65535));\n\
                     {pad}    dim3 sdfg_block(256);\n\
                     {pad}    SDFG_KERNEL(sdfg::scale<{ty}>, sdfg_grid, sdfg_block, 0, sdfg_y, sdfg_len, sdfg_inc, sdfg_beta);\n\
                     {pad}  }}\n{pad}}}",
                    xl = letter(t)?,
                    al = scalar(alpha),
                    be = scalar(beta),
                    lda = ld(lda),
                )
            }
            LibraryOp::Dot => {
                let (x, dx, t) = operand("_x", true)?;
                let (y, dy, _) = operand("_y", true)?;
                let (r, _, _) = operand("_result", false)?;
                let (Some((len, incx)), Some((_, incy))) = (dx.first(), dy.first()) else {
                    return Err(refuse("a DOT of operands that are not vectors".to_owned()));
                };
                // An empty DOT is a call too: BLAS gives 0.
                format!(
                    "{{\n{pad}  // The result stays on the device.\n{pad}  SDFG_BLAS_CHECK({p}SetPointerMode(sdfg_blas, {c}_POINTER_MODE_DEVICE));\n{pad}  SDFG_BLAS_CHECK({p}{xl}dot(sdfg_blas, (int)({len}), {x}, (int)({incx}), {y}, (int)({incy}), {r}));\n{pad}  SDFG_BLAS_CHECK({p}SetPointerMode(sdfg_blas, {c}_POINTER_MODE_HOST));\n{pad}}}",
                    xl = letter(t)?,
                )
            }
            LibraryOp::Cholesky { lower } => {
                let source = memlet("_a", true)?.data.clone();
                let (a, da, t) = operand("_a", true)?;
                let (bm, db, _) = operand("_b", false)?;
                let (Some((nrows, lda)), Some((_, ldb))) = (da.first(), db.first()) else {
                    return Err(refuse(
                        "a Cholesky factorization of non-matrices".to_owned(),
                    ));
                };
                let sv = self.d.solver();
                // The row-major lower factor L is the column-major upper U
                // (and the other way round): factor the other triangle.
                let (fill, zero_upper) = if *lower {
                    (sv.fill[0], 1)
                } else {
                    (sv.fill[1], 0)
                };
                let x = letter(t)?;
                let ty = ctype(t);
                let sp = sv.prefix;
                self.solver_used = true;
                let site = self.factorization_site(format!(
                    "the Cholesky factorization (potrf) of `{source}` (node `{}`) failed: the matrix is not positive definite",
                    l.label
                ));
                format!(
                    "{{\n{pad}  {ty}* sdfg_a = {a};\n{pad}  {ty}* sdfg_b = {bm};\n{pad}  int64_t sdfg_n = {nrows}, sdfg_lda = {lda}, sdfg_ldb = {ldb};\n\
                     {pad}  // potrf works in place: factor a copy of `_a` in `_b`.\n\
                     {pad}  if (sdfg_b != sdfg_a && sdfg_n > 0) SDFG_CHECK({m2d}(sdfg_b, sizeof({ty}) * sdfg_ldb, sdfg_a, sizeof({ty}) * sdfg_lda, sizeof({ty}) * sdfg_n, sdfg_n, {d2d}, stream));\n\
                     {pad}  int sdfg_lwork = 0;\n\
                     {pad}  SDFG_SOLVER_CHECK({sp}{x}potrf_bufferSize(sdfg_solver, {fill}, (int)sdfg_n, sdfg_b, (int)sdfg::imax(1, sdfg_ldb), &sdfg_lwork));\n\
                     {pad}  size_t sdfg_need = sizeof({ty}) * (size_t)sdfg_lwork;\n\
                     {grow}\
                     {pad}  SDFG_SOLVER_CHECK({sp}{x}potrf(sdfg_solver, {fill}, (int)sdfg_n, sdfg_b, (int)sdfg::imax(1, sdfg_ldb), ({ty}*)sdfg_work, sdfg_lwork, sdfg_info));\n\
                     {pad}  SDFG_KERNEL(sdfg::note_failure, dim3(1), dim3(1), 0, sdfg_info, sdfg_failed, {site});\n\
                     {pad}  // The other triangle is zero, as in np.linalg.cholesky.\n\
                     {pad}  int sdfg_upper = {zero_upper};\n\
                     {pad}  if (sdfg_n > 0) {{\n\
                     {pad}    dim3 sdfg_grid((unsigned)sdfg::imin(sdfg::ifloordiv(sdfg_n + 31, 32), 65535), (unsigned)sdfg::imin(sdfg::ifloordiv(sdfg_n + 7, 8), 65535));\n\
                     {pad}    dim3 sdfg_block(32, 8);\n\
                     {pad}    SDFG_KERNEL(sdfg::zero_triangle<{ty}>, sdfg_grid, sdfg_block, 0, sdfg_b, sdfg_n, sdfg_ldb, sdfg_upper);\n\
                     {pad}  }}\n{pad}}}"
                )
            }
            LibraryOp::Solve => {
                let source = memlet("_a", true)?.data.clone();
                let (a, da, t) = operand("_a", true)?;
                let (bm, db, _) = operand("_b", true)?;
                let (xm, dx, _) = operand("_x", false)?;
                let (Some((nrows, lda)), Some((_, ldb)), Some((_, ldx))) =
                    (da.first(), db.first(), dx.first())
                else {
                    return Err(refuse("a solve of the wrong shapes".to_owned()));
                };
                // A vector right-hand side is one column; a matrix has `m`.
                let (nrhs, matrix) = match db.get(1) {
                    Some((m, _)) => (m.clone(), true),
                    None => ("1".to_owned(), false),
                };
                let sv = self.d.solver();
                let (x, vt) = match t {
                    DType::Float32 => ("S", "float"),
                    DType::Float64 => ("D", "double"),
                    DType::Complex64 => ("C", sv.complex[0]),
                    DType::Complex128 => ("Z", sv.complex[1]),
                    other => return Err(refuse(format!("a vendor solve on {other}"))),
                };
                let ty = ctype(t);
                let (sp, op_t) = (sv.prefix, sv.transpose);
                self.solver_used = true;
                let site = self.factorization_site(format!(
                    "the LU factorization (getrf) of `{source}` for the solve `{}` failed: the matrix is singular",
                    l.label
                ));
                // Row-major A is column-major A^T: getrf factors A^T, and
                // getrs with the transpose solves A X = B. The right-hand
                // sides must be column-major: a vector is; a matrix is
                // transposed into the workspace and back.
                // dst = src^T on the stream, for src `rows x cols` (row
                // strides as named).
                let transpose = |dst: &str,
                                 ldd: &str,
                                 src: &str,
                                 lds: &str,
                                 rows: &str,
                                 cols: &str| {
                    format!(
                        "{pad}  if ({rows} > 0 && {cols} > 0) {{\n\
                         {pad}    int64_t sdfg_rows = {rows}, sdfg_cols = {cols}, sdfg_ldd = {ldd}, sdfg_lds = {lds};\n\
                         {pad}    const {ty}* sdfg_src = {src};\n\
                         {pad}    dim3 sdfg_grid((unsigned)sdfg::imin(sdfg::ifloordiv(sdfg_cols + 31, 32), 65535), (unsigned)sdfg::imin(sdfg::ifloordiv(sdfg_rows + 7, 8), 65535));\n\
                         {pad}    dim3 sdfg_block(32, 8);\n\
                         {pad}    SDFG_KERNEL(sdfg::transpose<{ty}>, sdfg_grid, sdfg_block, 0, {dst}, sdfg_ldd, sdfg_src, sdfg_lds, sdfg_rows, sdfg_cols);\n\
                         {pad}  }}\n"
                    )
                };
                // A strided vector copied (element strides as named).
                let column = |dst: &str, dstride: &str, src: &str, sstride: &str| {
                    format!(
                        "{pad}  if (sdfg_n > 0) SDFG_CHECK({m2d}({dst}, sizeof({ty}) * {dstride}, {src}, sizeof({ty}) * {sstride}, sizeof({ty}), sdfg_n, {d2d}, stream));\n"
                    )
                };
                let (to_rhs, from_rhs) = if matrix {
                    (
                        transpose(
                            "sdfg_rhs", "sdfg_n", "sdfg_b", "sdfg_ldb", "sdfg_n", "sdfg_m",
                        ),
                        transpose(
                            "sdfg_x", "sdfg_ldx", "sdfg_rhs", "sdfg_n", "sdfg_m", "sdfg_n",
                        ),
                    )
                } else {
                    (
                        column("sdfg_rhs", "1", "sdfg_b", "sdfg_ldb"),
                        column("sdfg_x", "sdfg_ldx", "sdfg_rhs", "1"),
                    )
                };
                format!(
                    "{{\n{pad}  {ty}* sdfg_a = {a};\n{pad}  {ty}* sdfg_b = {bm};\n{pad}  {ty}* sdfg_x = {xm};\n\
                     {pad}  int64_t sdfg_n = {nrows}, sdfg_m = {nrhs}, sdfg_lda = {lda}, sdfg_ldb = {ldb}, sdfg_ldx = {ldx};\n\
                     {pad}  int sdfg_ldn = (int)sdfg::imax(1, sdfg_n);\n\
                     {pad}  // One workspace: getrf's scratch, the factors, the right-hand\n\
                     {pad}  // sides (column-major) and the pivots.\n\
                     {pad}  int sdfg_lwork = 0;\n\
                     {pad}  SDFG_SOLVER_CHECK({sp}{x}getrf_bufferSize(sdfg_solver, (int)sdfg_n, (int)sdfg_n, ({vt}*)sdfg_a, (int)sdfg::imax(1, sdfg_lda), &sdfg_lwork));\n\
                     {pad}  size_t sdfg_need = sizeof({ty}) * ((size_t)sdfg_lwork + (size_t)(sdfg_n * sdfg_n) + (size_t)(sdfg_n * sdfg_m)) + sizeof(int) * (size_t)sdfg_n;\n\
                     {grow}\
                     {pad}  {ty}* sdfg_scratch = ({ty}*)sdfg_work;\n\
                     {pad}  {ty}* sdfg_lu = sdfg_scratch + sdfg_lwork;\n\
                     {pad}  {ty}* sdfg_rhs = sdfg_lu + sdfg_n * sdfg_n;\n\
                     {pad}  int* sdfg_pivots = (int*)(sdfg_rhs + sdfg_n * sdfg_m);\n\
                     {pad}  if (sdfg_n > 0) SDFG_CHECK({m2d}(sdfg_lu, sizeof({ty}) * sdfg_n, sdfg_a, sizeof({ty}) * sdfg_lda, sizeof({ty}) * sdfg_n, sdfg_n, {d2d}, stream));\n\
                     {to_rhs}\
                     {pad}  SDFG_SOLVER_CHECK({sp}{x}getrf(sdfg_solver, (int)sdfg_n, (int)sdfg_n, ({vt}*)sdfg_lu, sdfg_ldn, ({vt}*)sdfg_scratch, sdfg_pivots, sdfg_info));\n\
                     {pad}  SDFG_KERNEL(sdfg::note_failure, dim3(1), dim3(1), 0, sdfg_info, sdfg_failed, {site});\n\
                     {pad}  SDFG_SOLVER_CHECK({sp}{x}getrs(sdfg_solver, {op_t}, (int)sdfg_n, (int)sdfg_m, ({vt}*)sdfg_lu, sdfg_ldn, sdfg_pivots, ({vt}*)sdfg_rhs, sdfg_ldn, sdfg_info));\n\
                     {from_rhs}\
                     {pad}}}"
                )
            }
            other => {
                return Err(refuse(format!(
                    "the device-wide library node `{}` ({}): only GEMM, GEMV, DOT, Cholesky and Solve are vendor calls; lower the others first (sdfg_passes::lower_library_nodes)",
                    l.label,
                    other.name()
                )));
            }
        };
        let library = if matches!(l.op, LibraryOp::Cholesky { .. } | LibraryOp::Solve) {
            self.d.solver().prefix
        } else {
            self.blas_used = true;
            p
        };
        let _ = writeln!(out, "{pad}// {} `{}`: {library}", l.op.name(), l.label);
        let _ = writeln!(out, "{pad}{call}");
        Ok(())
    }

    /// Grows the solver workspace to `sdfg_need` bytes where it is smaller
    /// (reset before the old one is released, as in [`Self::reserve`]).
    fn workspace_growth(&self, pad: &str) -> String {
        format!(
            "{pad}if (sdfg_need > sdfg_work_cap) {{\n\
             {pad}  void* sdfg_old = sdfg_work;\n\
             {pad}  sdfg_work = nullptr;\n\
             {pad}  sdfg_work_cap = 0;\n\
             {pad}  if (sdfg_old) SDFG_CHECK({}(sdfg_old));\n\
             {pad}  SDFG_CHECK({}(&sdfg_work, sdfg_need));\n\
             {pad}  sdfg_work_cap = sdfg_need;\n\
             {pad}}}\n",
            self.api("Free"),
            self.api("Malloc")
        )
    }

    /// Registers a factorization call site (1-based) with the message a
    /// failure of it gives.
    fn factorization_site(&mut self, message: String) -> usize {
        self.factorizations.push(message);
        self.factorizations.len()
    }

    // -----------------------------------------------------------------
    // Maps.

    /// A map's iterations as nested sequential loops (on the host, or per
    /// thread inside a kernel), its scope inside.
    #[allow(clippy::too_many_arguments)]
    fn map_loops(
        &mut self,
        label: &str,
        state: &State,
        tree: &ScopeTree,
        entry: NodeId,
        ctx: Ctx,
        indent: usize,
        out: &mut String,
    ) -> Result<BTreeSet<String>, EmitError> {
        let Some(Node::MapEntry(m)) = state.node(entry) else {
            return Ok(BTreeSet::new());
        };
        let mut used = BTreeSet::new();
        let mut p = self.sym();
        let mut pad = "  ".repeat(indent);
        let mut depth = 0;
        for (param, r) in m.map.dims() {
            let (b, e, s) = (p.expr(&r.begin), p.expr(&r.end), p.expr(&r.step));
            let v = ident(param);
            let cmp = if r.step.as_int().is_some_and(|s| s < 0) {
                ">="
            } else {
                "<="
            };
            let _ = writeln!(
                out,
                "{pad}for (int64_t {v} = {b}; {v} {cmp} {e}; {v} += {s}) {{"
            );
            depth += 1;
            pad = "  ".repeat(indent + depth);
        }
        used.extend(p.used);
        used.extend(self.scope_body(label, state, tree, Some(entry), ctx, indent + depth, out)?);
        for k in (0..depth).rev() {
            let _ = writeln!(out, "{}}}", "  ".repeat(indent + k));
        }
        for param in &m.map.params {
            used.remove(param);
        }
        Ok(used)
    }

    /// The nodes of a scope in topological order; returns the symbols used.
    #[allow(clippy::too_many_arguments)]
    fn scope_body(
        &mut self,
        label: &str,
        state: &State,
        tree: &ScopeTree,
        scope: Option<NodeId>,
        ctx: Ctx,
        indent: usize,
        out: &mut String,
    ) -> Result<BTreeSet<String>, EmitError> {
        let mut used = BTreeSet::new();
        let order = state
            .topological_order()
            .ok_or_else(|| EmitError::Invalid(format!("state `{label}` has a cycle")))?;
        used.extend(self.views(label, state, tree, scope, indent, out)?);
        if ctx == Ctx::Grid && scope.is_none() {
            // A state of a persistent kernel's body.
            let mut grid = self.grid_state(label, state, tree, &order, indent, out)?;
            grid.extend(used);
            return Ok(grid);
        }
        for n in order.into_iter().filter(|n| tree.parent(*n) == scope) {
            match state.node(n) {
                Some(Node::Tasklet(_)) => {
                    self.tasklet(label, state, n, ctx, indent, out, &mut used)?;
                }
                Some(Node::MapEntry(m)) if m.map.schedule.is_device() && ctx == Ctx::Host => {
                    // A kernel launched by a map kept on the host.
                    used.extend(self.kernel(label, state, tree, n, indent, out)?);
                }
                Some(Node::MapEntry(m)) if m.map.schedule == Schedule::DeviceThreadBlock => {
                    used.extend(self.thread_block_map(label, state, tree, n, indent, out)?);
                }
                Some(Node::MapEntry(_)) => {
                    used.extend(self.map_loops(label, state, tree, n, ctx, indent, out)?);
                }
                Some(Node::Access(a)) => {
                    used.extend(self.scope_copies(label, state, n, &a.data, indent, out)?);
                }
                Some(Node::NestedSdfg(nested)) if ctx != Ctx::Host => {
                    used.extend(self.nested_in_kernel(
                        label,
                        state,
                        n,
                        nested,
                        ctx == Ctx::Grid,
                        indent,
                        out,
                    )?);
                }
                Some(Node::MapExit(_)) | None => {}
                Some(other) => {
                    return Err(unsupported(
                        format!("a {} inside a map (not emitted yet)", other.kind_name()),
                        other.label(),
                        label,
                    ));
                }
            }
        }
        Ok(used)
    }

    /// A copy inside a scope, element by element, from `a[sa]` to `b[sb]`.
    #[allow(clippy::too_many_arguments)]
    fn element_copy(
        &self,
        label: &str,
        (a, sa): (&str, &Subset),
        (b, sb): (&str, &Subset),
        indent: usize,
        out: &mut String,
    ) -> Result<BTreeSet<String>, EmitError> {
        let pad = "  ".repeat(indent);
        let mut used = BTreeSet::new();
        let (oa, da) = self.subset_geometry(a, sa, &mut used);
        let (ob, db) = self.subset_geometry(b, sb, &mut used);
        if da.len() != db.len() {
            return Err(unsupported(
                format!("a copy `{a}` -> `{b}` between subsets of different shapes"),
                a,
                label,
            ));
        }
        let (mut ia, mut ib) = (format!("({oa})"), format!("({ob})"));
        let mut close = String::new();
        for (k, ((c, s1), (_, s2))) in da.iter().zip(&db).enumerate() {
            let v = format!("sdfg_e{k}");
            let _ = writeln!(out, "{pad}for (int64_t {v} = 0; {v} < {c}; ++{v}) {{");
            close.push_str(&format!("{pad}}}\n"));
            ia = format!("{ia} + {v} * {s1}");
            ib = format!("{ib} + {v} * {s2}");
        }
        let _ = writeln!(out, "{pad}  {}[{ib}] = {}[{ia}];", ident(b), ident(a));
        out.push_str(&close);
        Ok(used)
    }

    /// The copies an access node inside a scope stands for: from another
    /// access node, from data entering the scope (a tile staged into shared
    /// memory), and back out through the scope's exit.
    #[allow(clippy::too_many_arguments)]
    fn scope_copies(
        &self,
        label: &str,
        state: &State,
        n: NodeId,
        x: &str,
        indent: usize,
        out: &mut String,
    ) -> Result<BTreeSet<String>, EmitError> {
        let mut used = BTreeSet::new();
        let view_edge = |e: &sdfg_ir::Edge| {
            e.dst_conn.as_deref() == Some(VIEW_CONNECTOR)
                || e.src_conn.as_deref() == Some(VIEW_CONNECTOR)
        };
        for (_, src, e) in state.in_edges(n) {
            let Some(m) = e.memlet.as_ref().filter(|_| !view_edge(e)) else {
                continue;
            };
            match state.node(src) {
                Some(Node::Access(a)) => {
                    let other = if m.data == a.data { x } else { &a.data };
                    let (sa, sb) = m.copy_subsets(&a.data, &self.shape(other));
                    used.extend(self.element_copy(label, (&a.data, &sa), (x, &sb), indent, out)?);
                }
                Some(Node::MapEntry(_)) if m.data != x => {
                    let (sa, sb) = m.copy_subsets(&m.data, &self.shape(x));
                    used.extend(self.element_copy(label, (&m.data, &sa), (x, &sb), indent, out)?);
                }
                _ => {}
            }
        }
        for (_, dst, e) in state.out_edges(n) {
            let Some(m) = e.memlet.as_ref().filter(|_| !view_edge(e)) else {
                continue;
            };
            if matches!(state.node(dst), Some(Node::MapExit(_))) && m.data != x {
                let (sa, sb) = m.copy_subsets(x, &self.shape(x));
                used.extend(self.element_copy(label, (x, &sa), (&m.data, &sb), indent, out)?);
            }
        }
        Ok(used)
    }

    // -----------------------------------------------------------------
    // Tasklets.

    #[allow(clippy::too_many_arguments)]
    fn tasklet(
        &self,
        _label: &str,
        state: &State,
        n: NodeId,
        ctx: Ctx,
        indent: usize,
        out: &mut String,
        used: &mut BTreeSet<String>,
    ) -> Result<(), EmitError> {
        let Some(Node::Tasklet(t)) = state.node(n) else {
            return Ok(());
        };
        let pad = "  ".repeat(indent);
        // Code every thread of a block runs stores to memory others see
        // from the block's first thread only: once, as the SDFG says.
        let leader = ctx == Ctx::Block
            && state.out_edges(n).any(|(_, _, e)| {
                e.memlet.as_ref().is_some_and(|m| {
                    self.desc(&m.data).is_some_and(|d| {
                        !matches!(d.storage, Storage::Register | Storage::DeviceShared)
                    })
                })
            });
        if leader {
            let _ = writeln!(
                out,
                "{pad}if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0)"
            );
        }
        let _ = writeln!(out, "{pad}{{  // tasklet {}", t.label);
        let inner = "  ".repeat(indent + 1);
        let mut bindings = BTreeMap::new();
        let mut coeffs = PointerCoeffs::new();
        for (_, _, e) in state.in_edges(n) {
            let (Some(conn), Some(m)) = (e.dst_conn.as_deref(), e.memlet.as_ref()) else {
                continue;
            };
            let Some(c) = t.inputs.iter().find(|c| c.name == conn) else {
                continue;
            };
            let (offset, dims) = self.subset_geometry(&m.data, &m.subset, used);
            let ty = ctype(c.dtype);
            if c.pointer {
                coeffs.insert(
                    conn.to_owned(),
                    dims.iter().map(|(_, s)| s.clone()).collect(),
                );
                let _ = writeln!(
                    out,
                    "{inner}const {ty}* {} = {} + ({offset});",
                    cpp::local(conn),
                    ident(&m.data)
                );
                bindings.insert(
                    conn.to_owned(),
                    Binding::PointerIn {
                        dtype: c.dtype,
                        rank: dims.len(),
                    },
                );
            } else {
                let _ = writeln!(
                    out,
                    "{inner}const {ty} {} = {}[{offset}];",
                    cpp::local(conn),
                    ident(&m.data)
                );
                bindings.insert(conn.to_owned(), Binding::Value(c.dtype));
            }
        }
        let mut updates = BTreeMap::new();
        let outs: Vec<(&str, &Memlet)> = state
            .out_edges(n)
            .filter_map(|(_, _, e)| Some((e.src_conn.as_deref()?, e.memlet.as_ref()?)))
            .collect();
        for c in &t.outputs {
            let ty = ctype(c.dtype);
            if c.pointer {
                let Some((_, m)) = outs.iter().find(|(k, _)| *k == c.name) else {
                    continue;
                };
                let (offset, dims) = self.subset_geometry(&m.data, &m.subset, used);
                coeffs.insert(
                    c.name.clone(),
                    dims.iter().map(|(_, s)| s.clone()).collect(),
                );
                if let Some(w) = m.wcr {
                    updates.insert(c.name.clone(), (w, self.shared_update(&m.data, ctx)));
                }
                let _ = writeln!(
                    out,
                    "{inner}{ty}* {} = {} + ({offset});",
                    cpp::local(&c.name),
                    ident(&m.data)
                );
                bindings.insert(
                    c.name.clone(),
                    Binding::PointerOut {
                        dtype: c.dtype,
                        rank: dims.len(),
                    },
                );
            } else {
                let _ = writeln!(out, "{inner}{ty} {};", cpp::local(&c.name));
                bindings.insert(c.name.clone(), Binding::Output(c.dtype));
            }
        }
        let symbols: BTreeSet<String> = self.sdfg.symbols.keys().cloned().collect();
        let is_symbol =
            |s: &str| !bindings.contains_key(s) && (symbols.contains(s) || !s.is_empty());
        let mut printer = TaskletPrinter {
            bindings: bindings.clone(),
            is_symbol: &is_symbol,
            coeffs: &coeffs,
            used: BTreeSet::new(),
            updates,
        };
        printer.body(&t.body, indent + 1, out);
        used.extend(printer.used);
        for (conn, m) in &outs {
            let Some(c) = t.outputs.iter().find(|c| c.name == *conn) else {
                continue;
            };
            if c.pointer {
                continue;
            }
            let (offset, _) = self.subset_geometry(&m.data, &m.subset, used);
            let target = format!("{}[{offset}]", ident(&m.data));
            let v = cpp::local(conn);
            let line = match m.wcr {
                None => format!("{target} = {v};"),
                Some(w) if self.partials.contains_key(&m.data) => {
                    let p = &self.partials[&m.data];
                    format!("{p} = {};", cpp::combine(w, p, &v))
                }
                Some(w) if self.shared_update(&m.data, ctx) => {
                    format!("sdfg::{}(&{target}, {v});", cpp::atomic_update(w))
                }
                Some(w) => format!("{target} = {};", cpp::combine(w, &target, &v)),
            };
            let _ = writeln!(out, "{inner}{line}");
        }
        let _ = writeln!(out, "{pad}}}");
        Ok(())
    }

    /// Whether a combining write to `data` from code running in `ctx` may
    /// race with other threads (then it is atomic). Registers are private to
    /// a thread: no other thread can write them, and atomics on them are
    /// illegal; host code is sequential.
    fn shared_update(&self, data: &str, ctx: Ctx) -> bool {
        let private = self
            .desc(data)
            .is_some_and(|d| d.storage == Storage::Register);
        ctx != Ctx::Host && !private
    }

    // -----------------------------------------------------------------
    // Kernels.

    /// Emits the kernel of device map `entry` and its launch; returns the
    /// symbols the launch uses.
    fn kernel(
        &mut self,
        label: &str,
        state: &State,
        tree: &ScopeTree,
        entry: NodeId,
        indent: usize,
        out: &mut String,
    ) -> Result<BTreeSet<String>, EmitError> {
        let Some(Node::MapEntry(m)) = state.node(entry) else {
            return Ok(BTreeSet::new());
        };
        let map = m.map.clone();
        let pad = "  ".repeat(indent);
        let mut name = format!("{}_k{}", ident(&map.label), self.kernels.len());
        name.retain(|c| c.is_ascii_alphanumeric() || c == '_');
        let blocks_only = self.has_thread_block_map(state, tree, entry);
        let persistent = map.schedule == Schedule::DevicePersistent;
        let spread = if blocks_only && !persistent {
            self.grid_spread(state, tree, entry, &map)
        } else {
            None
        };

        // The kernel body first: it tells which containers and symbols the
        // kernel takes. Every map dimension is a grid-stride loop, so a
        // grid clamped to the accelerator's limits still covers the map.
        let mut body = String::new();
        let mut p = self.sym();
        let counts: Vec<String> = map
            .ranges
            .iter()
            .map(|r| p.expr(&r.num_elements()))
            .collect();
        let mut index = String::new();
        let dims = map.params.len();
        let thread = |axis: &str| {
            if spread.is_some() {
                // The one point, in every block: the blocks share the
                // thread-block map's iterations instead.
                ("(int64_t)0".to_owned(), "(int64_t)1".to_owned())
            } else if blocks_only {
                (
                    format!("(int64_t)blockIdx.{axis}"),
                    format!("(int64_t)gridDim.{axis}"),
                )
            } else {
                (
                    format!("(int64_t)blockIdx.{axis} * blockDim.{axis} + threadIdx.{axis}"),
                    format!("(int64_t)gridDim.{axis} * blockDim.{axis}"),
                )
            }
        };
        // The grid's axes, outermost first: a map dimension each, or for a
        // map of more than three dimensions its innermost two and the
        // others folded into the outermost axis (decoded with a division
        // per folded dimension but one).
        let groups: Vec<Vec<usize>> = if dims <= 3 {
            (0..dims).map(|k| vec![k]).collect()
        } else {
            vec![(0..dims - 2).collect(), vec![dims - 2], vec![dims - 1]]
        };
        let axis_counts: Vec<String> = groups
            .iter()
            .map(|g| {
                g.iter()
                    .map(|&k| counts[k].clone())
                    .collect::<Vec<_>>()
                    .join(" * ")
            })
            .collect();
        let axes = groups.len();
        let mut depth = 1;
        if persistent {
            self.persistent_index(&mut p, &map, label, &mut index)?;
        } else {
            for (a, group) in groups.iter().enumerate() {
                let axis = ["x", "y", "z"][axes - 1 - a];
                let (first, stride) = thread(axis);
                let pad = "  ".repeat(depth);
                if let [k] = group[..] {
                    let (param, r) = (&map.params[k], &map.ranges[k]);
                    let _ = writeln!(
                        index,
                        "{pad}for (int64_t {v}_i = {first}; {v}_i < {c}; {v}_i += {stride}) {{\n{pad}  const int64_t {v} = {b} + {v}_i * {s};",
                        v = ident(param),
                        c = counts[k],
                        b = p.expr(&r.begin),
                        s = p.expr(&r.step)
                    );
                } else {
                    let folded = sdfg_ir::Map {
                        label: map.label.clone(),
                        params: group.iter().map(|&k| map.params[k].clone()).collect(),
                        ranges: group.iter().map(|&k| map.ranges[k].clone()).collect(),
                        schedule: map.schedule,
                    };
                    let folded_counts: Vec<String> =
                        group.iter().map(|&k| counts[k].clone()).collect();
                    let _ = writeln!(
                        index,
                        "{pad}for (int64_t sdfg_t = {first}; sdfg_t < {}; sdfg_t += {stride}) {{\n{pad}  int64_t sdfg_rest = sdfg_t;",
                        axis_counts[a]
                    );
                    decompose(
                        &mut p,
                        &folded,
                        &folded_counts,
                        &format!("{pad}  "),
                        &mut index,
                    );
                }
                depth += 1;
            }
        }
        let mut used = p.used;
        let mut inner = String::new();
        let ctx = if persistent {
            Ctx::Grid
        } else if blocks_only {
            Ctx::Block
        } else {
            Ctx::Device
        };
        self.spread = spread.as_ref().map(|g| g.entry);
        let emitted = self.scope_body(label, state, tree, Some(entry), ctx, depth, &mut inner);
        self.spread = None;
        used.extend(emitted?);
        for k in (1..depth).rev() {
            let _ = writeln!(inner, "{}}}", "  ".repeat(k));
        }
        // Containers the kernel touches: registers and shared memory are its own.
        let mut containers: BTreeSet<String> = BTreeSet::new();
        let mut locals = String::new();
        let scope_nodes: Vec<NodeId> = state
            .nodes()
            .map(|(id, _)| id)
            .filter(|id| *id == entry || tree.ancestors(*id).contains(&entry))
            .collect();
        for &id in &scope_nodes {
            if let Some(x) = state.node(id).and_then(Node::as_access) {
                containers.insert(x.to_owned());
            }
            for (_, _, e) in state.in_edges(id).chain(state.out_edges(id)) {
                if let Some(m) = &e.memlet {
                    containers.insert(m.data.clone());
                }
            }
        }
        // (C++ type, parameter name, the host's launch argument) of each
        // kernel parameter.
        let mut params: Vec<(String, String, String)> = Vec::new();
        for x in &containers {
            let Some(desc) = self.desc(x) else { continue };
            let t = ctype(desc.dtype);
            match desc.storage {
                Storage::Register | Storage::DeviceShared if !desc.is_view() => {
                    let count =
                        desc.total_elements()
                            .and_then(|c| c.as_int())
                            .ok_or_else(|| {
                                unsupported(
                                    format!(
                                        "`{x}` in {} with a size not known at compile time",
                                        desc.storage
                                    ),
                                    &map.label,
                                    label,
                                )
                            })?;
                    let shared = if desc.storage == Storage::DeviceShared {
                        "__shared__ "
                    } else {
                        ""
                    };
                    let _ = writeln!(
                        locals,
                        "  {shared}{t} {n}_s[{c}];\n  {t}* {n} = {n}_s;",
                        n = ident(x),
                        c = count.max(1)
                    );
                }
                _ if desc.is_view() => {
                    // Declared where its view edge is, inside the kernel, or
                    // passed in when declared by the host.
                    let inside = scope_nodes.iter().any(|id| {
                        state.node(*id).and_then(Node::as_access) == Some(x.as_str())
                            && tree.parent(*id).is_some()
                    });
                    if !inside {
                        params.push((format!("{t}* __restrict__"), ident(x), ident(x)));
                    }
                }
                _ if desc.is_scalar() && desc.storage.side() != Some(sdfg_ir::Side::Device) => {
                    // A host scalar the kernel only reads, taken by value at
                    // the launch (`docs/ir.md`, "Scalars by value"); the
                    // body reads it through a pointer like any container.
                    // (`sdfg` names are the emitter's own: no collision.)
                    let n = ident(x);
                    let _ = writeln!(locals, "  {t}* {n} = &sdfg_value_{n};");
                    params.push((t.to_owned(), format!("sdfg_value_{n}"), format!("{n}[0]")));
                }
                // A persistent kernel's threads read what others wrote
                // before a barrier: no `__restrict__`, which lets a
                // compiler read through the non-coherent read-only cache.
                _ if persistent => params.push((format!("{t}*"), ident(x), ident(x))),
                _ => params.push((format!("{t}* __restrict__"), ident(x), ident(x))),
            }
        }
        if let Some(g) = &spread {
            let t = ctype(g.dtype);
            params.push((
                format!("{t}* __restrict__"),
                "sdfg_parts".to_owned(),
                format!("{name}_parts"),
            ));
            params.push((
                "unsigned int*".to_owned(),
                "sdfg_tickets".to_owned(),
                format!("{name}_tickets"),
            ));
            self.grid_buffers.push((name.clone(), t.to_owned()));
        }
        let mut scope_params: BTreeSet<String> = BTreeSet::new();
        for &id in &scope_nodes {
            if let Some(Node::MapEntry(inner_map)) = state.node(id) {
                scope_params.extend(inner_map.map.params.iter().cloned());
            }
        }
        let symbols: Vec<String> = used
            .iter()
            .filter(|s| !scope_params.contains(*s) && !self.sdfg.containers.contains_key(*s))
            .cloned()
            .collect();
        for s in &symbols {
            let t = self
                .sdfg
                .symbols
                .get(s)
                .copied()
                .unwrap_or(sdfg_ir::DType::Int64);
            params.push((ctype(t).to_owned(), ident(s), ident(s)));
        }
        let decl = format!(
            "__global__ void {name}({})",
            params
                .iter()
                .map(|(t, n, _)| format!("{t} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        body.push_str(&locals);
        body.push_str(&index);
        body.push_str(&inner);
        self.kernels.push((decl, body));
        self.kernel_names.push(name.clone());

        if persistent {
            self.cooperative = true;
            let args: String = params.iter().map(|(_, _, a)| format!(", {a}")).collect();
            self.persistent_launch(&name, &args, indent, out);
            let mut launch_used: BTreeSet<String> = symbols.into_iter().collect();
            launch_used.retain(|s| !map.params.contains(s));
            return Ok(launch_used);
        }
        // Symbols the grid of a spread reduction names (its iterations).
        let mut symbols_used_by_grid: BTreeSet<String> = BTreeSet::new();
        // The launch: blocks to cover the map, at most the accelerator's
        // grid limit per axis (the grid-stride loops do the rest).
        let block = self.d.default_block();
        let limits = self.d.max_grid();
        let threads: u32 = block.iter().product();
        // A block no wider than a constant extent needs (rounded up to a
        // power of two): a single-point kernel is one thread, nbody's
        // `(N, 3)` maps 4 x 64 threads instead of 32 x 8 with 29 lanes idle.
        let extents: Vec<Option<i64>> = groups
            .iter()
            .map(|g| SymExpr::constant_product(g.iter().map(|&k| map.ranges[k].num_elements())))
            .collect();
        let fit = |limit: u32, extent: Option<i64>| match extent.and_then(|c| u32::try_from(c).ok())
        {
            Some(c) if c >= 1 => limit.min(c.next_power_of_two()),
            _ => limit,
        };
        let (grid, blockdim) = if blocks_only {
            // Whole warps (the block reductions shuffle within warps), no
            // more than the widest thread-block map needs.
            let warp = self.d.warp_size().max(1);
            let widest = self.thread_block_extent(state, tree, entry);
            let threads = fit(threads, widest).max(warp).div_ceil(warp) * warp;
            let g: Vec<String> = match &spread {
                // As many blocks as the iterations fill, at least one.
                Some(g) => {
                    let mut printer = self.sym();
                    let n = printer.expr(&g.iterations);
                    symbols_used_by_grid.extend(printer.used);
                    vec![format!(
                        "sdfg::imin(sdfg::imax(sdfg::ifloordiv({n} + {threads} - 1, {threads}), 1LL), {GRID_REDUCTION_BLOCKS}LL)"
                    )]
                }
                None => axis_counts.iter().rev().cloned().collect(),
            };
            (g, vec![threads.to_string()])
        } else if axes == 1 {
            let total = counts.join(" * ");
            let product = SymExpr::constant_product(map.ranges.iter().map(Range::num_elements));
            let threads = fit(threads, product);
            (
                vec![format!(
                    "sdfg::ifloordiv({total} + {threads} - 1, {threads})"
                )],
                vec![threads.to_string()],
            )
        } else {
            // Extents innermost first, as the block's axes x, y, z.
            let inner = |k: usize| extents[axes - 1 - k];
            let bx = fit(block[0].max(1), inner(0));
            let by = if axes == 2 {
                (threads / bx).max(1)
            } else {
                block[1].max(1)
            };
            let by = fit(by, inner(1));
            let bz = if axes == 3 {
                fit(block[2].max(1), inner(2))
            } else {
                1
            };
            let b = [bx, by, bz];
            let g = axis_counts
                .iter()
                .rev()
                .enumerate()
                .map(|(k, c)| format!("sdfg::ifloordiv({c} + {} - 1, {})", b[k], b[k]))
                .collect();
            (g, b[..axes].iter().map(u32::to_string).collect())
        };
        let nonempty: Vec<String> = counts.iter().map(|c| format!("{c} > 0")).collect();
        let _ = writeln!(out, "{pad}if ({}) {{", nonempty.join(" && "));
        let _ = writeln!(
            out,
            "{pad}  dim3 sdfg_grid({});\n{pad}  dim3 sdfg_block({});",
            grid.iter()
                .enumerate()
                .map(|(axis, g)| format!("(unsigned)sdfg::imin({g}, {}LL)", limits[axis]))
                .collect::<Vec<_>>()
                .join(", "),
            blockdim.join(", ")
        );
        let args: String = params.iter().map(|(_, _, a)| format!(", {a}")).collect();
        if blocks_only {
            // Its threads wait for each other: a runtime that runs threads
            // itself (the emulated GPU) needs to know before the launch.
            let _ = writeln!(out, "{pad}  SDFG_SYNCHRONIZING({name});");
        }
        let _ = writeln!(
            out,
            "{pad}  SDFG_KERNEL({name}, sdfg_grid, sdfg_block, 0{args});"
        );
        let _ = writeln!(out, "{pad}}}");
        let mut launch_used: BTreeSet<String> = symbols.into_iter().collect();
        launch_used.extend(symbols_used_by_grid);
        launch_used.retain(|s| !map.params.contains(s));
        Ok(launch_used)
    }

    /// The reduction of kernel `entry` that spreads over the grid, where it
    /// can: a kernel of one point (a full reduction: `np.sum(a)`, a dot)
    /// whose one thread-block map combines into one register, by a sum,
    /// product, minimum or maximum. One block would run all of it on one
    /// multiprocessor; instead every block takes a share of the
    /// iterations, and the last block to finish combines the blocks'
    /// partials (`sdfg::grid_reduce`) and runs the rest of the kernel
    /// alone. So the kernel must hold nothing else that other blocks would
    /// repeat: before the thread-block map only code writing registers
    /// (each block's own), everything else after it.
    fn grid_spread(
        &self,
        state: &State,
        tree: &ScopeTree,
        entry: NodeId,
        map: &sdfg_ir::Map,
    ) -> Option<GridSpread> {
        if SymExpr::constant_product(map.ranges.iter().map(Range::num_elements)) != Some(1) {
            return None;
        }
        let in_scope: Vec<NodeId> = state
            .nodes()
            .map(|(id, _)| id)
            .filter(|id| tree.ancestors(*id).contains(&entry))
            .collect();
        let blocks: Vec<NodeId> = in_scope
            .iter()
            .copied()
            .filter(|id| {
                matches!(state.node(*id), Some(Node::MapEntry(m)) if m.map.schedule == Schedule::DeviceThreadBlock)
            })
            .collect();
        let [tb] = blocks.as_slice() else {
            return None;
        };
        let Some(Node::MapEntry(tb_map)) = state.node(*tb) else {
            return None;
        };
        if tree.parent(*tb) != Some(entry) {
            return None;
        }
        let tb_exit = state.exit_of(*tb)?;
        let register = |x: &str| self.desc(x).is_some_and(|d| d.storage == Storage::Register);
        // The one register the map combines into.
        let mut partials = state
            .out_edges(tb_exit)
            .filter_map(|(_, _, e)| e.memlet.as_ref());
        let m = partials.next()?;
        if partials.next().is_some()
            || !register(&m.data)
            || !matches!(m.wcr, Some(Wcr::Sum | Wcr::Product | Wcr::Min | Wcr::Max))
        {
            return None;
        }
        let dtype = self.desc(&m.data)?.dtype;
        // What runs after the map: everything reachable from its exit.
        let mut after: BTreeSet<NodeId> = BTreeSet::new();
        let mut stack = vec![tb_exit];
        while let Some(n) = stack.pop() {
            for (_, d, _) in state.out_edges(n) {
                if after.insert(d) {
                    stack.push(d);
                }
            }
        }
        let inside_tb = |id: NodeId| id == *tb || tree.ancestors(id).contains(tb);
        let repeated = in_scope.iter().any(|&id| {
            if inside_tb(id) || after.contains(&id) {
                return false;
            }
            // Before the map (or beside it): each block runs it; only
            // registers may be written there.
            state
                .in_edges(id)
                .filter_map(|(_, _, e)| e.memlet.as_ref())
                .chain(
                    state
                        .out_edges(id)
                        .filter_map(|(_, _, e)| e.memlet.as_ref()),
                )
                .any(|m| {
                    let written = state.node(id).is_some_and(|n| n.as_access().is_some())
                        && state.in_edges(id).next().is_some();
                    (written || m.wcr.is_some()) && !register(&m.data)
                })
        });
        if repeated {
            return None;
        }
        Some(GridSpread {
            entry: *tb,
            dtype,
            iterations: tb_map.map.num_iterations(),
        })
    }

    /// The most iterations a thread-block map inside kernel `entry` has,
    /// where every such map's count is a constant (`None` otherwise).
    fn thread_block_extent(&self, state: &State, tree: &ScopeTree, entry: NodeId) -> Option<i64> {
        state
            .nodes()
            .filter(|(id, _)| tree.ancestors(*id).contains(&entry))
            .filter_map(|(_, n)| match n {
                Node::MapEntry(m) if m.map.schedule == Schedule::DeviceThreadBlock => Some(
                    SymExpr::constant_product(m.map.ranges.iter().map(Range::num_elements)),
                ),
                _ => None,
            })
            .try_fold(1i64, |a, c| c.map(|c| a.max(c)))
    }

    fn has_thread_block_map(&self, state: &State, tree: &ScopeTree, entry: NodeId) -> bool {
        state.nodes().any(|(id, n)| {
            matches!(n, Node::MapEntry(m) if m.map.schedule == Schedule::DeviceThreadBlock)
                && tree.ancestors(id).contains(&entry)
        })
    }

    /// A thread-block map: the block's threads share its iterations, then
    /// wait for each other.
    fn thread_block_map(
        &mut self,
        label: &str,
        state: &State,
        tree: &ScopeTree,
        entry: NodeId,
        indent: usize,
        out: &mut String,
    ) -> Result<BTreeSet<String>, EmitError> {
        let Some(Node::MapEntry(m)) = state.node(entry) else {
            return Ok(BTreeSet::new());
        };
        let pad = "  ".repeat(indent);
        let mut p = self.sym();
        let counts: Vec<String> = m
            .map
            .ranges
            .iter()
            .map(|r| p.expr(&r.num_elements()))
            .collect();
        // Registers the map's iterations combine into (a reduction's
        // accumulator): each thread combines its share into a partial
        // started from the identity, then the block's partials are combined
        // (`sdfg::block_reduce`) into the value the register had.
        let mut partials: Vec<(String, Wcr, DType)> = Vec::new();
        let exit = state.exit_of(entry);
        for (_, _, e) in exit.into_iter().flat_map(|x| state.out_edges(x)) {
            let Some(m) = e.memlet.as_ref() else { continue };
            let (Some(w), Some(desc)) = (m.wcr, self.desc(&m.data)) else {
                continue;
            };
            if desc.storage != Storage::Register {
                continue;
            }
            if !m.subset.ranges.iter().all(Range::is_index) {
                return Err(unsupported(
                    format!(
                        "a combining write from a thread-block map to several elements of register `{}`",
                        m.data
                    ),
                    &m.data,
                    label,
                ));
            }
            let (offset, _) = self.subset_geometry(&m.data, &m.subset, &mut p.used);
            let target = format!("{}[{offset}]", ident(&m.data));
            if !partials.iter().any(|(t, _, _)| *t == target) {
                partials.push((target, w, desc.dtype));
            }
        }
        // Named after the map: several thread-block maps share a kernel.
        let before = |k: usize| format!("sdfg_before{}_{k}", entry.index());
        for (k, (target, w, dtype)) in partials.iter().enumerate() {
            let _ = writeln!(
                out,
                "{pad}const {t} {b} = {target};\n{pad}{target} = {};",
                cpp::literal(&w.identity(*dtype)),
                b = before(k),
                t = ctype(*dtype)
            );
        }
        let spread = self.spread == Some(entry);
        let (first, stride) = if spread {
            (
                "(int64_t)blockIdx.x * blockDim.x + threadIdx.x",
                "(int64_t)gridDim.x * blockDim.x",
            )
        } else {
            ("threadIdx.x", "blockDim.x")
        };
        let _ = writeln!(
            out,
            "{pad}for (int64_t sdfg_t = {first}; sdfg_t < {}; sdfg_t += {stride}) {{",
            counts.join(" * ")
        );
        let _ = writeln!(out, "{pad}  int64_t sdfg_rest = sdfg_t;");
        decompose(&mut p, &m.map, &counts, &format!("{pad}  "), out);
        let mut used = p.used;
        used.extend(self.scope_body(
            label,
            state,
            tree,
            Some(entry),
            Ctx::Device,
            indent + 1,
            out,
        )?);
        let _ = writeln!(out, "{pad}}}");
        for (k, (target, w, dtype)) in partials.iter().enumerate() {
            let op = format!("sdfg::op_{w}<{}>", ctype(*dtype));
            let total = format!("sdfg::block_reduce<{op}>({target})");
            if spread {
                // The blocks' totals combined by the last block to finish;
                // the others are done.
                let _ = writeln!(
                    out,
                    "{pad}{t} sdfg_part = {total};\n{pad}if (!sdfg::grid_reduce<{op}>(sdfg_part, {}, sdfg_parts, sdfg_tickets)) return;",
                    cpp::literal(&w.identity(*dtype)),
                    t = ctype(*dtype)
                );
                let _ = writeln!(
                    out,
                    "{pad}{target} = {};",
                    cpp::combine(*w, &before(k), "sdfg_part")
                );
            } else {
                let _ = writeln!(
                    out,
                    "{pad}{target} = {};",
                    cpp::combine(*w, &before(k), &total)
                );
            }
        }
        let _ = writeln!(out, "{pad}__syncthreads();");
        for param in &m.map.params {
            used.remove(param);
        }
        Ok(used)
    }
}
