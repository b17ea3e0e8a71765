//! The pipeline as the front doors run it: `sdfgc` and the Python package
//! (`python/`) call these functions, so that offloading in a Python process
//! gives exactly the bytes `sdfgc offload` writes, and every way in reports
//! the same typed errors.
//!
//! Each stage's failure is its own [`enum@Error`] variant, carrying the stage's
//! own error with its location (the JSON path of a DaCe element, the line
//! and column of a Python statement, the pass, the node): the Python
//! package raises one exception class per variant.

use crate::{Backend, LoadError};
use sdfg_codegen::TranslationUnit;
use sdfg_ir::{Sdfg, ValidSdfg};
use sdfg_passes::{Pass, PipelineReport};
use std::collections::BTreeMap;
use thiserror::Error;

/// How to offload: what `sdfgc offload`'s options say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The accelerator (`sim`, `cuda`, `hip`).
    pub backend: String,
    /// Maps that stay on the host: `none`, `auto`, or labels separated by
    /// commas (`--host-maps`).
    pub host_maps: String,
    /// Whether loops whose tests read device data may become persistent
    /// kernels (`--no-persistent` turns it off).
    pub persistent: bool,
    /// Whether every array argument's home is the device
    /// (`--args-on-device`: the caller passes device memory).
    pub args_on_device: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            backend: "cuda".to_owned(),
            host_maps: "none".to_owned(),
            persistent: true,
            args_on_device: false,
        }
    }
}

/// Why a front door could not do what it was asked, by stage.
#[derive(Debug, Error)]
pub enum Error {
    /// The input is not an SDFG at all: not JSON, not UTF-8, unreadable.
    #[error("{0}")]
    Parse(String),
    /// A DaCe SDFG with an element this project refuses, at its JSON path.
    #[error("{0}")]
    Import(#[from] sdfg_dace_format::ImportError),
    /// A Python program outside the supported subset, or wrong, at its
    /// line and column.
    #[error("{0}")]
    Frontend(#[from] sdfg_frontend::FrontendError),
    /// The SDFG as given breaks the IR's rules; every violation, each
    /// naming its element.
    #[error("the SDFG `{name}` is invalid:\n{errors}")]
    Invalid {
        /// The SDFG's name.
        name: String,
        /// The violations.
        errors: sdfg_ir::ValidationErrors,
    },
    /// No such backend, or one this build lacks.
    #[error("{0}")]
    Backend(String),
    /// A pass refused the SDFG (an unsupported construct) or broke it.
    #[error("{0}")]
    Pass(#[from] sdfg_passes::PipelineError),
    /// The offloaded SDFG cannot be written in DaCe's format.
    #[error("{0}")]
    Export(#[from] sdfg_dace_format::ExportError),
    /// The code generator cannot emit a construct, at its node.
    #[error("{0}")]
    Emit(#[from] sdfg_codegen::EmitError),
    /// Compiling, loading or running the emitted unit failed.
    #[error("{0}")]
    Exec(#[from] sdfg_exec::ExecError),
    /// A request that cannot be met as asked (a program name for an SDFG,
    /// a file with several programs and none chosen).
    #[error("{0}")]
    Usage(String),
}

impl From<LoadError> for Error {
    fn from(e: LoadError) -> Error {
        match e {
            LoadError::Dace { source, .. } => Error::Import(source),
            other => Error::Parse(other.to_string()),
        }
    }
}

/// The pipeline's options for `options` (and `verbose`, which prints
/// every offload decision to standard error).
pub fn pipeline_options(options: &Options, verbose: bool) -> sdfg_passes::PipelineOptions {
    sdfg_passes::PipelineOptions {
        offload: sdfg_passes::Options {
            host_maps: crate::parse_host_maps(&options.host_maps),
            verbose,
            no_persistent: !options.persistent,
        },
        ..Default::default()
    }
}

/// `sdfg` validated, or every violation.
pub fn validated(sdfg: Sdfg) -> Result<ValidSdfg, Error> {
    let name = sdfg.name.clone();
    ValidSdfg::new(sdfg).map_err(|errors| Error::Invalid { name, errors })
}

/// Every pass up to offloading, for `options`' backend: what `sdfgc
/// offload` and `sdfgc compile --backend` run. `sdfg` must be valid (the
/// frontend's output is; a file's is once [`validated`] or [`parse_sdfg`]
/// accepts it): validating again would cost as much as a pass.
pub fn offload(sdfg: Sdfg, options: &Options) -> Result<(ValidSdfg, PipelineReport), Error> {
    run(sdfg, options, &Pass::TO_OFFLOAD).map(|(s, r, _)| (s, r))
}

/// The passes `passes` for `options`' backend on the valid `sdfg` (its
/// arguments moved to the device first where the options say so).
fn run(
    sdfg: Sdfg,
    options: &Options,
    passes: &[Pass],
) -> Result<(ValidSdfg, PipelineReport, Backend), Error> {
    let mut sdfg = sdfg;
    if options.args_on_device {
        crate::arguments_on_device(&mut sdfg);
    }
    let backend = crate::backend(&options.backend).map_err(Error::Backend)?;
    let (sdfg, report) = sdfg_passes::pipeline::run_owned(
        sdfg,
        Some(backend.accelerator()),
        &pipeline_options(options, false),
        passes,
    )?;
    Ok((sdfg, report, backend))
}

/// DaCe's `.sdfg` text offloaded, in DaCe's format: exactly what `sdfgc
/// offload FILE.sdfg` prints (without its final newline).
pub fn offload_dace(text: &str, options: &Options) -> Result<(String, PipelineReport), Error> {
    let sdfg = parse_sdfg(text, true)?;
    let (sdfg, report) = offload(sdfg, options)?;
    Ok((sdfg_dace_format::to_dace_string(&sdfg)?, report))
}

/// Reads and validates an SDFG from text: DaCe's format where `dace`,
/// this project's JSON otherwise.
pub fn parse_sdfg(text: &str, dace: bool) -> Result<Sdfg, Error> {
    let sdfg = if dace {
        sdfg_dace_format::from_dace_str(text)?
    } else {
        Sdfg::from_json(text).map_err(|e| {
            Error::Parse(format!(
                "not a valid SDFG (line {}, column {}): {e}",
                e.line(),
                e.column()
            ))
        })?
    };
    Ok(validated(sdfg)?.into_inner())
}

/// A Python program and its parameters' names, in order.
pub struct Program {
    /// Its SDFG, as the frontend lowers it.
    pub sdfg: Sdfg,
    /// The program's name.
    pub name: String,
    /// The Python function's parameters, in order (what positional
    /// arguments of a call bind to).
    pub parameters: Vec<String>,
}

/// The program `program` of the Python module `text` (named `file` in
/// errors): by default the module's only program, or the one its
/// `BENCHMARK` names. `signature` types parameters the program leaves
/// unannotated (`A` -> `float64[N, M]`).
pub fn python_program(
    file: &str,
    text: &str,
    program: Option<&str>,
    signature: &BTreeMap<String, String>,
) -> Result<Program, Error> {
    let module = sdfg_frontend::Module::parse(file, text)?;
    let name = match program {
        Some(p) => p.to_owned(),
        None => crate::default_program(&module).ok_or_else(|| {
            Error::Usage(if module.programs().is_empty() {
                format!("`{file}` has no `@dace.program`")
            } else {
                format!("`{file}` has several programs; choose one by name")
            })
        })?,
    };
    let sdfg = module.compile_with(&name, signature)?;
    let parameters = module
        .programs()
        .into_iter()
        .find(|p| p.name == name)
        .map(|p| p.parameters)
        .unwrap_or_default();
    Ok(Program {
        sdfg,
        name,
        parameters,
    })
}

/// The valid `sdfg` as a unit of `options`' backend (a code-generating
/// one) is emitted from: every pass up to offloading, then library
/// lowering. The simulator runs this SDFG for the Python package's
/// `device="sim"`.
pub fn lowered(
    sdfg: Sdfg,
    options: &Options,
) -> Result<(ValidSdfg, PipelineReport, &'static sdfg_codegen::Target), Error> {
    let mut passes = Pass::TO_OFFLOAD.to_vec();
    passes.push(Pass::LowerLibrary);
    let (sdfg, report, backend) = run(sdfg, options, &passes)?;
    let Backend::Code(target) = backend else {
        return Err(Error::Backend(format!(
            "the `{}` backend generates no code (choose `cuda` or `hip`)",
            backend.name()
        )));
    };
    Ok((sdfg, report, target))
}

/// The translation unit of the valid `sdfg` for `options`' backend (a
/// code-generating one): [`lowered`], then emitted: what `sdfgc compile
/// --emit source` writes.
pub fn translation_unit(
    sdfg: Sdfg,
    options: &Options,
) -> Result<(TranslationUnit, PipelineReport), Error> {
    let (sdfg, report, target) = lowered(sdfg, options)?;
    let unit = sdfg_codegen::emit_validated(sdfg.validated(), target.dialect)?;
    Ok((unit, report))
}

/// The report as data (for the Python package's `Report`): the passes that
/// ran, and the offload pass's decisions, each list as the text report
/// words its lines.
pub fn report_json(report: &PipelineReport) -> serde_json::Value {
    let offload = report.offload.as_ref().map(|o| {
        serde_json::json!({
            "accelerator": o.accelerator,
            "already_offloaded": o.already_offloaded,
            "kernels": o.kernels,
            "host_maps": o.host_maps,
            "host_states": o.host_states,
            "sequential_loops": o.sequential_loops,
            "persistent_loops": o.persistent_loops,
            "split_states": o.split_states,
            "library_calls": o.library_calls,
            "placements": o.placements.iter().map(|p| serde_json::json!({
                "container": p.container,
                "twin": p.twin,
                "storage": p.storage.to_string(),
                "reason": p.reason,
            })).collect::<Vec<_>>(),
            "copies": o.copies.iter().map(|c| serde_json::json!({
                "from": c.from,
                "to": c.to,
                "direction": c.kind.direction(),
                "bytes": c.bytes.to_string(),
                "block": c.block,
                "reason": c.reason,
            })).collect::<Vec<_>>(),
        })
    });
    serde_json::json!({
        "passes": report.ran.iter().map(|p| p.name()).collect::<Vec<_>>(),
        "inlined": report.inlined.inlined,
        "fused": report.fused,
        "elided": report.elided,
        "offload": offload,
        "library": report.library,
        "text": report.to_string(),
    })
}
