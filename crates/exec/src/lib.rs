//! Executing emitted translation units.
//!
//! The translation unit `sdfg-codegen` emits is the product, so it is
//! executed, not only compiled. This crate holds the one interface every way
//! of executing it implements, a [`Device`]: compile the unit into a shared
//! library, then call its entry points (`NAME_init`, `NAME_run`, `NAME_exit`,
//! through their packed variants) with the program's arguments, and report
//! what the program returned, wrote and (where the device can count) did.
//!
//! - [`EmulatedGpu`] runs CUDA and HIP units on the CPU: the unit is compiled
//!   unchanged by g++ against the project's own replacement runtime headers
//!   (`emulation/include/`: `cuda_runtime.h`, `cublas_v2.h`,
//!   `cusolverDn.h`, `hip/hip_runtime.h`, `hipblas/hipblas.h`,
//!   `hipsolver/hipsolver.h`), whose kernels run over every block and
//!   thread, whose device memory is a separate, poisoned heap that host code
//!   cannot touch, whose streams are lazy and whose vendor calls are served
//!   by OpenBLAS and LAPACKE behind the vendors' argument checks. It runs in
//!   a child process, so that a fault of the generated code is reported, not
//!   suffered, and so that the sanitizers (`--sanitize address|thread`) can
//!   be preloaded. `docs/emulation.md` describes what it checks and what it
//!   cannot.
//! - Real GPUs (CUDA through cudarc, HIP through hip-sys) implement the same
//!   trait in the backend crates, with the same [`loader`].
//!
//! The [`loader`] is the only code of the workspace that calls into a
//! loaded library (`unsafe`): it checks every argument against the unit's
//! [`Parameter`]s (kind, dtype, element count for the symbols given) before
//! it passes a pointer.

pub mod child;
mod emulated;
pub mod loader;

pub use emulated::{EmulatedGpu, INCLUDE_DIR, Sanitizer};
use sdfg_codegen::{Parameter, ParameterKind, TranslationUnit};
use sdfg_sim::ArrayValue;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The value passed for one parameter of an entry point.
#[derive(Clone, Debug, PartialEq)]
pub enum Argument {
    /// A container or return value: host memory the program reads and
    /// writes (a return value's initial contents are ignored).
    Array(ArrayValue),
    /// A symbol.
    Symbol(i64),
}

/// What one execution of a unit gave.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Execution {
    /// What `NAME_run` returned (`sdfg_codegen::status`: 0 on success).
    pub status: i32,
    /// What the program and the runtime printed (the failing call, the
    /// emulation's diagnostics).
    pub messages: String,
    /// What the device counted during the run, where it counts.
    pub counts: Option<Counts>,
    /// What was still allocated or created after `NAME_exit`, where the
    /// device can tell (everything should be zero).
    pub live_after_exit: Option<Live>,
}

/// Copies in one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CopyCount {
    /// Copy operations (one per runtime call).
    pub count: u64,
    /// Bytes moved.
    pub bytes: u64,
}

/// What a device counted while a program ran (the emulated GPU's report).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Launches of the program's kernels.
    pub launches: u64,
    /// Launches of the prelude's helper kernels (`sdfg::...`: zeroing a
    /// triangle, transposes for a solve, noting a failed factorization).
    pub helper_launches: u64,
    /// Runtime API calls (every call the runtime counts, launches included).
    pub api_calls: u64,
    /// Host-side waits (stream, event and device synchronizations).
    pub synchronizations: u64,
    /// Host to device copies.
    pub host_to_device: CopyCount,
    /// Device to host copies.
    pub device_to_host: CopyCount,
    /// Copies within device memory.
    pub device_to_device: CopyCount,
    /// Launches per kernel.
    pub kernels: BTreeMap<String, u64>,
    /// Vendor library calls per function.
    pub vendor: BTreeMap<String, u64>,
    /// Runtime API calls per function.
    pub api: BTreeMap<String, u64>,
}

impl Counts {
    /// Vendor calls that are operations of the program: one per library
    /// node a run reaches (GEMM, GEMV, DOT; potrf; getrs, whose getrf and
    /// buffer-size queries are parts of the same solve).
    pub fn library_operations(&self) -> u64 {
        self.vendor
            .iter()
            .filter(|(f, _)| {
                let f = f.to_ascii_lowercase();
                ["gemm", "gemv", "dot", "potrf", "getrs"]
                    .iter()
                    .any(|op| f.ends_with(op))
            })
            .map(|(_, n)| n)
            .sum()
    }
}

/// What was still live after `NAME_exit`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Live {
    /// Device allocations.
    pub device_allocations: u64,
    /// Pinned host allocations.
    pub pinned_allocations: u64,
    /// Streams.
    pub streams: u64,
    /// Events.
    pub events: u64,
    /// BLAS handles.
    pub blas_handles: u64,
    /// Solver handles.
    pub solver_handles: u64,
}

impl Live {
    /// Whether nothing is live.
    pub fn is_empty(&self) -> bool {
        *self == Live::default()
    }
}

/// A unit compiled for a device.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The shared library.
    pub library: PathBuf,
    /// The one-shot entry point's name (the others are derived from it).
    pub entry: String,
    /// The entry points' parameters.
    pub parameters: Vec<Parameter>,
}

/// A way of executing translation units: the emulated GPU, or a real one.
pub trait Device {
    /// One line naming the device and what runs the code.
    fn describe(&self) -> String;

    /// Compiles `unit` into a shared library in `dir`.
    fn compile(&self, unit: &TranslationUnit, dir: &Path) -> Result<Compiled, ExecError>;

    /// Runs the compiled unit once (`init`, `run`, `exit`) with `arguments`
    /// in parameter order; the arrays are updated with what the program
    /// wrote.
    fn execute(
        &self,
        compiled: &Compiled,
        arguments: &mut [Argument],
    ) -> Result<Execution, ExecError>;
}

/// Why a unit could not be executed.
#[derive(Debug, Error)]
pub enum ExecError {
    /// A tool or library the device needs is not installed.
    #[error("{0}")]
    Missing(String),
    /// The compiler rejected the unit.
    #[error("{compiler} rejected `{}`:\n{diagnostics}", file.display())]
    Compile {
        /// The compiler.
        compiler: String,
        /// The unit's source file.
        file: PathBuf,
        /// Its first diagnostics.
        diagnostics: String,
    },
    /// The library could not be loaded or lacks an entry point.
    #[error("cannot load `{}`: {message}", library.display())]
    Load {
        /// The library.
        library: PathBuf,
        /// Why.
        message: String,
    },
    /// The arguments do not match the entry points' parameters.
    #[error("argument `{parameter}`: {message}")]
    Argument {
        /// The parameter.
        parameter: String,
        /// What is wrong.
        message: String,
    },
    /// `NAME_init` gave no state.
    #[error("`{entry}_init` failed:\n{messages}")]
    Init {
        /// The entry point.
        entry: String,
        /// What the program printed.
        messages: String,
        /// What was still live after the failed init, where the device can
        /// tell (a failed init must release what it made).
        live: Option<Live>,
    },
    /// The process running the program died (a fault, a sanitizer's
    /// report, an abort).
    #[error("the program {how}:\n{messages}")]
    Crashed {
        /// How it ended ("was killed by signal 11 (SIGSEGV)", "exited with 66").
        how: String,
        /// What it printed.
        messages: String,
    },
    /// The program ran longer than allowed.
    #[error("the program ran longer than {seconds} s and was stopped")]
    Timeout {
        /// The limit.
        seconds: u64,
    },
    /// A file of the exchange with the child process could not be used.
    #[error("{what}: {message}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        message: String,
    },
}

impl ExecError {
    pub(crate) fn io(what: impl std::fmt::Display, e: impl std::fmt::Display) -> ExecError {
        ExecError::Io {
            what: what.to_string(),
            message: e.to_string(),
        }
    }
}

/// The symbol values among `arguments`, by name.
pub fn symbol_values(parameters: &[Parameter], arguments: &[Argument]) -> BTreeMap<String, i64> {
    parameters
        .iter()
        .zip(arguments)
        .filter_map(|(p, a)| match (p.kind, a) {
            (ParameterKind::Symbol(_), Argument::Symbol(v)) => Some((p.name.clone(), *v)),
            _ => None,
        })
        .collect()
}

/// Checks `arguments` against `parameters`: one per parameter, a symbol for
/// a symbol, an array of the parameter's dtype and of its shape (evaluated
/// with the symbols given) for a container or return value.
pub fn check_arguments(parameters: &[Parameter], arguments: &[Argument]) -> Result<(), ExecError> {
    if parameters.len() != arguments.len() {
        return Err(ExecError::Argument {
            parameter: "(all)".to_owned(),
            message: format!(
                "{} arguments for {} parameters",
                arguments.len(),
                parameters.len()
            ),
        });
    }
    let symbols = symbol_values(parameters, arguments);
    for (p, a) in parameters.iter().zip(arguments) {
        let bad = |message: String| ExecError::Argument {
            parameter: p.name.clone(),
            message,
        };
        match (p.kind, a) {
            (ParameterKind::Symbol(_), Argument::Symbol(_)) => {}
            (ParameterKind::Container(t) | ParameterKind::Return(t), Argument::Array(v)) => {
                if v.dtype() != t {
                    return Err(bad(format!("a {} array for a {t} parameter", v.dtype())));
                }
                let shape = p
                    .shape
                    .iter()
                    .map(|e| {
                        let n = e
                            .eval(&symbols)
                            .map_err(|e| bad(format!("its shape cannot be evaluated: {e}")))?;
                        usize::try_from(n).map_err(|_| bad(format!("an extent is {n}")))
                    })
                    .collect::<Result<Vec<usize>, _>>()?;
                if v.shape != shape {
                    return Err(bad(format!(
                        "shape {:?}, but the program expects {shape:?}",
                        v.shape
                    )));
                }
                if v.elements.len() != shape.iter().product::<usize>() {
                    return Err(bad(format!(
                        "{} elements for shape {shape:?}",
                        v.elements.len()
                    )));
                }
            }
            (ParameterKind::Symbol(_), Argument::Array(_)) => {
                return Err(bad("an array for a symbol".to_owned()));
            }
            (_, Argument::Symbol(_)) => {
                return Err(bad("a symbol for a container".to_owned()));
            }
        }
    }
    Ok(())
}
