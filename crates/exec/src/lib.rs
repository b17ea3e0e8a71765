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
//! - Real GPUs (CUDA through cudarc in `sdfg-backend-cuda`, HIP through
//!   hip-sys in `sdfg-backend-hip`, each behind its crate's `runtime`
//!   feature) implement the same trait with the same [`loader`] and the same
//!   child process: a fault on a real device leaves the context unusable for
//!   the rest of the process (CUDA's errors are sticky), so every execution
//!   gets a process of its own there too.
//!
//! Timing: the child can call `NAME_run` several times on one state
//! (warm-up runs, then timed ones) and time each call with a [`RunTimer`]:
//! the host's clock by default, or a device's events, registered by name
//! with [`inventory`] ([`TimerFactory`]) by the crate that knows the device.
//! Only `NAME_run` is timed: `NAME_init` (allocations, handles, streams) is
//! not part of a program's run time.
//!
//! In process: a [`Session`] opens the same library once, runs `NAME_init`
//! once per set of symbol values and `NAME_run` on the caller's own
//! buffers (the Python package's calls, `docs/python.md`).
//!
//! The [`loader`] and the [`session`] are the only code of the workspace
//! that calls into a loaded library (`unsafe`): they check every argument
//! against the unit's [`Parameter`]s (kind, dtype, element count or shape
//! and strides for the symbols given) before they pass a pointer.

pub mod child;
mod emulated;
pub mod loader;
pub mod metrics;
pub mod registry;
pub mod session;
pub mod vendor;

pub use child::Runner;
pub use emulated::{
    EmulatedGpu, HEADERS, INCLUDE_DIR, Sanitizer, install_headers, nvidia_wheels, on_path,
};
pub use registry::{Check, GpuRuntime, RuntimeOptions, Toolchain, gpu_runtime, toolchain};
use sdfg_codegen::{Parameter, ParameterKind, TranslationUnit};
use sdfg_sim::ArrayValue;
use serde::{Deserialize, Serialize};
pub use session::{Buffer, Session, SimSession, Value};
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
    /// The time of each timed call of `NAME_run`, in milliseconds, after
    /// the warm-up calls ([`Timing`]).
    pub run_millis: Vec<f64>,
}

/// How often `NAME_run` is called on one state, and what times it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timing {
    /// Calls before the timed ones (the first call of a CUDA program loads
    /// its module and creates the vendor libraries' kernels lazily).
    pub warmup: u32,
    /// Timed calls (at least one); outputs and counts are the last call's.
    pub runs: u32,
    /// The [`TimerFactory`] that times them, by name; `None` is the host's
    /// monotonic clock.
    pub timer: Option<&'static str>,
}

impl Default for Timing {
    fn default() -> Timing {
        Timing {
            warmup: 0,
            runs: 1,
            timer: None,
        }
    }
}

/// Times one call of `NAME_run`: [`start`](RunTimer::start) right before
/// the call, [`stop`](RunTimer::stop) right after it returns. A device's
/// timer records events on its default stream; since `NAME_run` waits for
/// its own work before it returns, the time covers everything the run did.
pub trait RunTimer {
    /// Marks the start of a call.
    fn start(&mut self) -> Result<(), ExecError>;
    /// Marks its end; returns the milliseconds since [`start`](Self::start).
    fn stop(&mut self) -> Result<f64, ExecError>;
}

/// A named way of making a [`RunTimer`] in the child process, registered
/// with `inventory::submit!` by the crate that knows the device (the child
/// is another process: it can be told *which* timer, by name, not how).
pub struct TimerFactory {
    /// The name a [`Timing`] gives.
    pub name: &'static str,
    /// Makes the timer (opens the device's context, creates its events).
    pub make: fn() -> Result<Box<dyn RunTimer>, ExecError>,
}

inventory::collect!(TimerFactory);

/// The host's monotonic clock.
struct HostClock(Option<std::time::Instant>);

impl RunTimer for HostClock {
    fn start(&mut self) -> Result<(), ExecError> {
        self.0 = Some(std::time::Instant::now());
        Ok(())
    }

    fn stop(&mut self) -> Result<f64, ExecError> {
        let start = self.0.take().ok_or_else(|| ExecError::Device {
            call: "the host clock".to_owned(),
            message: "stopped before it was started".to_owned(),
        })?;
        Ok(start.elapsed().as_secs_f64() * 1e3)
    }
}

/// The timer named `name` (`None`: the host's clock), made in this process.
pub fn make_timer(name: Option<&str>) -> Result<Box<dyn RunTimer>, ExecError> {
    let Some(name) = name else {
        return Ok(Box::new(HostClock(None)));
    };
    let factory = inventory::iter::<TimerFactory>
        .into_iter()
        .find(|f| f.name == name)
        .ok_or_else(|| {
            ExecError::Missing(format!(
                "this runner has no `{name}` timer (it was built without that backend's runtime feature)"
            ))
        })?;
    (factory.make)()
}

/// Writes `unit`'s source into `dir` (created if missing); returns the
/// source's path and the path its shared library gets (`libENTRY.so`).
pub fn write_source(unit: &TranslationUnit, dir: &Path) -> Result<(PathBuf, PathBuf), ExecError> {
    std::fs::create_dir_all(dir).map_err(|e| ExecError::io(dir.display(), e))?;
    let source = dir.join(&unit.file_name);
    std::fs::write(&source, &unit.source).map_err(|e| ExecError::io(source.display(), e))?;
    Ok((source, dir.join(format!("lib{}.so", unit.entry))))
}

/// Runs a compiler on `source`: a compiler that cannot be started is an
/// I/O error, one that rejects the source an [`ExecError::Compile`] with
/// its first diagnostics (the lines that say "error", else the first six).
pub fn run_compiler(
    cmd: &mut std::process::Command,
    compiler: &str,
    source: &Path,
) -> Result<(), ExecError> {
    let out = cmd
        .output()
        .map_err(|e| ExecError::io(format!("running {compiler}"), e))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("error"))
        .take(6)
        .collect();
    Err(ExecError::Compile {
        compiler: compiler.to_owned(),
        file: source.to_path_buf(),
        diagnostics: if errors.is_empty() {
            text.lines().take(6).collect::<Vec<_>>().join("\n")
        } else {
            errors.join("\n")
        },
    })
}

/// The median of `values` (the mean of the middle two for an even count);
/// `None` for none. Timings are reported as medians: one slow run (a page
/// fault, another process) moves a mean, not a median.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
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
    /// What decides each kernel's speed on a GPU: launch shapes, atomics,
    /// and in the counting build coalescing and serial work
    /// ([`metrics`]).
    #[serde(default)]
    pub kernel_metrics: BTreeMap<String, metrics::KernelMetrics>,
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

/// The order in which the emulation resumes the threads it runs as fibers
/// (`SDFG_EMULATION_INTERLEAVING`): each round of a block that synchronizes,
/// and of a cooperative launch's grid, resumes every waiting thread once,
/// and each runs until its next barrier.
///
/// A correct kernel gives the same answer under every order. One that
/// lets a thread read what another writes between the same two barriers
/// gives different answers under different orders: the thread that runs
/// first decides. The corpus runs every unit with a persistent kernel
/// under [`Interleaving::ADVERSARIAL`] as well as in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Interleaving {
    /// By thread index: thread 0, the one that runs a persistent kernel's
    /// single-thread code, first.
    #[default]
    InOrder,
    /// By thread index, backwards: thread 0 last.
    Reversed,
    /// A fresh permutation per round, reproducible from the seed.
    Shuffled(u64),
}

impl Interleaving {
    /// The orders besides [`Interleaving::InOrder`] the corpus runs persistent
    /// kernels under: each of the two extremes, and permutations.
    pub const ADVERSARIAL: [Interleaving; 3] = [
        Interleaving::Reversed,
        Interleaving::Shuffled(1),
        Interleaving::Shuffled(2),
    ];

    /// The value of `SDFG_EMULATION_INTERLEAVING`.
    pub fn variable(self) -> String {
        match self {
            Interleaving::InOrder => "in-order".to_owned(),
            Interleaving::Reversed => "reversed".to_owned(),
            Interleaving::Shuffled(seed) => format!("shuffled:{seed}"),
        }
    }
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

    /// Runs the compiled unit as [`execute`](Self::execute) does, with the
    /// threads it runs in turn resumed in the order `interleaving` says;
    /// `None` on a device whose hardware decides the order (a GPU), or
    /// where the run checks something else (the emulated GPU under a
    /// sanitizer: ThreadSanitizer sees races between blocks in any order). The corpus runs units with persistent kernels this
    /// way too.
    fn execute_interleaved(
        &self,
        compiled: &Compiled,
        arguments: &mut [Argument],
        interleaving: Interleaving,
    ) -> Option<Result<Execution, ExecError>> {
        let _ = (compiled, arguments, interleaving);
        None
    }
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
    /// A call of a device's driver or runtime failed (outside the program:
    /// detecting the device, its timer's events).
    #[error("{call} failed: {message}")]
    Device {
        /// The call, with what it was for ("cuEventRecord (the timer's end)").
        call: String,
        /// The driver's error name and description.
        message: String,
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
                // A laid-out buffer holds its layout's total size.
                let extents = match &p.layout {
                    Some(l) => std::slice::from_ref(&l.total_size),
                    None => &p.shape[..],
                };
                let shape = extents
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_timings_ignores_order_and_non_finite_values() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[f64::NAN, 5.0]), Some(5.0));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn the_host_clock_times_and_an_unknown_timer_is_missing_not_a_failure() {
        let mut clock = make_timer(None).unwrap();
        assert!(clock.stop().is_err(), "stopped before started");
        clock.start().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(clock.stop().unwrap() >= 2.0);
        let e = make_timer(Some("no-such-device")).err().unwrap();
        assert!(matches!(e, ExecError::Missing(_)));
        assert!(e.to_string().contains("no `no-such-device` timer"), "{e}");
    }
}
