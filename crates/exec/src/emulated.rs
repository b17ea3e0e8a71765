//! The emulated GPU: CUDA and HIP units compiled unchanged by g++ against the
//! project's replacement runtime headers and run on the CPU.

use crate::child::Runner;
use crate::{Argument, Compiled, Device, ExecError, Execution, Interleaving, Timing};
use sdfg_codegen::TranslationUnit;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// The emulation's headers: `cuda_runtime.h`, `hip/hip_runtime.h`, the
/// vendor libraries' headers and `sdfg_emulation/`.
pub const INCLUDE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/emulation/include");

/// The replacement headers, embedded in the binary as (path under the
/// include directory, text): a program that runs units on the emulated GPU
/// away from this source tree (the Python package's wheel) writes them out
/// with [`install_headers`] and compiles against them there.
pub const HEADERS: &[(&str, &str)] = &[
    (
        "cooperative_groups.h",
        include_str!("../emulation/include/cooperative_groups.h"),
    ),
    (
        "cublas_v2.h",
        include_str!("../emulation/include/cublas_v2.h"),
    ),
    (
        "cuda_runtime.h",
        include_str!("../emulation/include/cuda_runtime.h"),
    ),
    (
        "cusolverDn.h",
        include_str!("../emulation/include/cusolverDn.h"),
    ),
    (
        "hip/hip_cooperative_groups.h",
        include_str!("../emulation/include/hip/hip_cooperative_groups.h"),
    ),
    (
        "hip/hip_runtime.h",
        include_str!("../emulation/include/hip/hip_runtime.h"),
    ),
    (
        "hipblas/hipblas.h",
        include_str!("../emulation/include/hipblas/hipblas.h"),
    ),
    (
        "hipsolver/hipsolver.h",
        include_str!("../emulation/include/hipsolver/hipsolver.h"),
    ),
    (
        "sdfg_emulation/blas.h",
        include_str!("../emulation/include/sdfg_emulation/blas.h"),
    ),
    (
        "sdfg_emulation/cooperative_groups.h",
        include_str!("../emulation/include/sdfg_emulation/cooperative_groups.h"),
    ),
    (
        "sdfg_emulation/library.h",
        include_str!("../emulation/include/sdfg_emulation/library.h"),
    ),
    (
        "sdfg_emulation/metrics.h",
        include_str!("../emulation/include/sdfg_emulation/metrics.h"),
    ),
    (
        "sdfg_emulation/runtime.h",
        include_str!("../emulation/include/sdfg_emulation/runtime.h"),
    ),
    (
        "sdfg_emulation/runtime_api.h",
        include_str!("../emulation/include/sdfg_emulation/runtime_api.h"),
    ),
    (
        "sdfg_emulation/solver.h",
        include_str!("../emulation/include/sdfg_emulation/solver.h"),
    ),
];

/// Writes [`HEADERS`] into `dir/include` (skipping files that already hold
/// the same text) and returns that include directory.
pub fn install_headers(dir: &Path) -> Result<PathBuf, ExecError> {
    let include = dir.join("include");
    for (name, text) in HEADERS {
        let path = include.join(name);
        if std::fs::read_to_string(&path).is_ok_and(|t| t == *text) {
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| ExecError::io(parent.display(), e))?;
        }
        // Written beside and renamed: another process compiling at the same
        // time sees the old file or the whole new one.
        let partial = path.with_extension(format!("partial-{}", std::process::id()));
        std::fs::write(&partial, text).map_err(|e| ExecError::io(partial.display(), e))?;
        std::fs::rename(&partial, &path).map_err(|e| ExecError::io(path.display(), e))?;
    }
    Ok(include)
}

/// A sanitizer to build and run the unit with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sanitizer {
    /// AddressSanitizer and UndefinedBehaviorSanitizer: out-of-bounds
    /// accesses (the device heap's red zones are poisoned), use after free,
    /// undefined behaviour (any report stops the program).
    Address,
    /// ThreadSanitizer, with each launch run on several OS threads: data
    /// races between GPU threads.
    Thread,
}

impl Sanitizer {
    /// The name `--sanitize` takes.
    pub fn name(self) -> &'static str {
        match self {
            Sanitizer::Address => "address",
            Sanitizer::Thread => "thread",
        }
    }

    /// The sanitizer named `name` (`address`, `thread`).
    pub fn parse(name: &str) -> Result<Sanitizer, String> {
        match name {
            "address" => Ok(Sanitizer::Address),
            "thread" => Ok(Sanitizer::Thread),
            other => Err(format!(
                "unknown sanitizer `{other}` (known: address, thread)"
            )),
        }
    }

    fn flags(self) -> &'static [&'static str] {
        match self {
            Sanitizer::Address => &[
                "-fsanitize=address,undefined",
                "-fno-sanitize-recover=undefined",
                "-fno-omit-frame-pointer",
                "-g",
            ],
            Sanitizer::Thread => &["-fsanitize=thread", "-g"],
        }
    }

    /// The runtime the runner must preload (it is not instrumented itself).
    fn runtime(self) -> &'static str {
        match self {
            Sanitizer::Address => "libasan.so",
            Sanitizer::Thread => "libtsan.so",
        }
    }
}

/// The emulated GPU.
#[derive(Clone, Debug)]
pub struct EmulatedGpu {
    runner: Runner,
    timing: Timing,
    sanitizer: Option<Sanitizer>,
    threads: u32,
    interleaving: Interleaving,
    optimization: &'static str,
    include: PathBuf,
    metrics: bool,
}

impl EmulatedGpu {
    /// An emulated GPU whose programs run in `runner`: a binary, and the
    /// arguments before [`CHILD_FLAG`](crate::child::CHILD_FLAG), that passes its arguments to
    /// [`child::dispatch`](crate::child::dispatch) (`cargo xtask`'s and
    /// `sdfgc`'s executables do, and so does `sdfg-exec-child`).
    pub fn new(runner: impl Into<PathBuf>) -> EmulatedGpu {
        EmulatedGpu {
            runner: Runner::new(runner),
            timing: Timing::default(),
            sanitizer: None,
            threads: 1,
            interleaving: Interleaving::InOrder,
            optimization: "-O1",
            include: PathBuf::from(INCLUDE_DIR),
            metrics: false,
        }
    }

    /// Builds and runs with `sanitizer` (ThreadSanitizer runs each launch
    /// on four OS threads unless [`threads`](Self::threads) says otherwise).
    #[must_use]
    pub fn sanitize(mut self, sanitizer: Option<Sanitizer>) -> EmulatedGpu {
        self.sanitizer = sanitizer;
        if sanitizer == Some(Sanitizer::Thread) && self.threads == 1 {
            self.threads = 4;
        }
        self
    }

    /// Builds the counting build, which measures what decides a kernel's
    /// speed on a GPU (coalescing and serial work: [`crate::metrics`]):
    /// the unit compiled unchanged with GCC's call-based kernel
    /// AddressSanitizer, whose hooks the emulation defines. Ignored under
    /// a sanitizer, which instruments the same accesses for its own ends;
    /// launch shapes and atomics are counted by every build.
    #[must_use]
    pub fn metrics(mut self, on: bool) -> EmulatedGpu {
        self.metrics = on;
        self
    }

    /// Compiles against the replacement headers in `dir` instead of this
    /// source tree's (`dir` as [`install_headers`] returns it).
    #[must_use]
    pub fn include_dir(mut self, dir: impl Into<PathBuf>) -> EmulatedGpu {
        self.include = dir.into();
        self
    }

    /// Runs each launch on `n` OS threads (`SDFG_EMULATION_THREADS`).
    #[must_use]
    pub fn threads(mut self, n: u32) -> EmulatedGpu {
        self.threads = n.max(1);
        self
    }

    /// Resumes the threads run as fibers in the order `interleaving` gives.
    #[must_use]
    pub fn interleaving(mut self, interleaving: Interleaving) -> EmulatedGpu {
        self.interleaving = interleaving;
        self
    }

    /// Sets an environment variable of the runner: the emulation reads
    /// `SDFG_EMULATION_FAIL_ALLOCATION=N` (the N-th device allocation
    /// fails), for example.
    #[must_use]
    pub fn env(mut self, key: &str, value: &str) -> EmulatedGpu {
        self.runner.env.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Calls `NAME_run` `runs` times on one state (a benchmark's repeated
    /// runs), each timed by the host's clock; the outputs and counts are
    /// the last run's.
    #[must_use]
    pub fn runs(mut self, runs: u32) -> EmulatedGpu {
        self.timing.runs = runs.max(1);
        self
    }

    /// Calls `NAME_run` `warmup` times, untimed, before the timed runs.
    #[must_use]
    pub fn warmup(mut self, warmup: u32) -> EmulatedGpu {
        self.timing.warmup = warmup;
        self
    }

    /// Stops a program that runs longer than `timeout`.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> EmulatedGpu {
        self.runner.timeout = timeout;
        self
    }

    fn compiler() -> Result<PathBuf, ExecError> {
        crate::emulated::on_path("g++").ok_or_else(|| {
            ExecError::Missing("g++ not found (the emulated GPU compiles with it)".to_owned())
        })
    }

    /// The path of a sanitizer's runtime, from the compiler.
    fn sanitizer_runtime(s: Sanitizer) -> Result<PathBuf, ExecError> {
        let out = Command::new(Self::compiler()?)
            .arg(format!("-print-file-name={}", s.runtime()))
            .output()
            .map_err(|e| ExecError::io("g++ -print-file-name", e))?;
        let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if path.is_absolute() && path.exists() {
            Ok(path)
        } else {
            Err(ExecError::Missing(format!(
                "the {} runtime `{}` was not found (Debian: libasan8 / libtsan2)",
                s.name(),
                s.runtime()
            )))
        }
    }
}

/// The `nvidia/` directory of NVIDIA's Python wheels: `$SDFG_NVIDIA_WHEELS`,
/// else where `python3` finds the `nvidia` package; `None` if neither.
pub fn nvidia_wheels() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("SDFG_NVIDIA_WHEELS") {
        return Some(PathBuf::from(dir)).filter(|d| d.is_dir());
    }
    let out = Command::new("python3")
        .args([
            "-c",
            "import nvidia, sys; sys.stdout.write(list(nvidia.__path__)[0])",
        ])
        .output()
        .ok()?;
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).into_owned());
    (out.status.success() && dir.is_dir()).then_some(dir)
}

/// The first `tool` on `PATH`.
pub fn on_path(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(tool))
            .find(|p| p.is_file())
    })
}

/// Whether OpenBLAS and LAPACKE can be compiled and linked against (checked
/// once per process).
fn vendor_libraries() -> Result<(), ExecError> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            let compiler = EmulatedGpu::compiler().map_err(|e| e.to_string())?;
            let dir = std::env::temp_dir().join(format!("sdfg-exec-probe-{}", std::process::id()));
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            let source = dir.join("probe.cpp");
            std::fs::write(
                &source,
                "#include <cblas.h>\n#include <lapacke.h>\nint main() { return cblas_ddot(0, 0, 1, 0, 1) == 0.0 ? 0 : 1; }\n",
            )
            .map_err(|e| e.to_string())?;
            let out = Command::new(compiler)
                .arg(&source)
                .arg("-o")
                .arg(dir.join("probe"))
                .args(["-lopenblas", "-llapacke"])
                .output()
                .map_err(|e| e.to_string())?;
            let _ = std::fs::remove_dir_all(&dir);
            if out.status.success() {
                Ok(())
            } else {
                Err("OpenBLAS and LAPACKE not found (Debian: libopenblas-dev liblapacke-dev); the emulated vendor calls use them".to_owned())
            }
        })
        .clone()
        .map_err(ExecError::Missing)
}

impl Device for EmulatedGpu {
    fn describe(&self) -> String {
        let mut s = "the emulated GPU (g++ against sdfg-exec's runtime headers".to_owned();
        if let Some(z) = self.sanitizer {
            s.push_str(&format!(", {} sanitizer", z.name()));
        }
        if self.threads > 1 {
            s.push_str(&format!(", {} OS threads per launch", self.threads));
        }
        if self.metrics && self.sanitizer.is_none() {
            s.push_str(", the counting build");
        }
        s.push(')');
        s
    }

    fn compile(&self, unit: &TranslationUnit, dir: &Path) -> Result<Compiled, ExecError> {
        let compiler = Self::compiler()?;
        // Every vendor library the unit lists is served by OpenBLAS and
        // LAPACKE behind the emulated vendor headers.
        let vendor = !unit.libraries.is_empty();
        if vendor {
            vendor_libraries()?;
        }
        let (source, library) = crate::write_source(unit, dir)?;
        let mut cmd = Command::new(&compiler);
        cmd.args([
            "-std=c++17",
            "-x",
            "c++",
            "-shared",
            "-fPIC",
            self.optimization,
        ])
        .arg("-I")
        .arg(&self.include);
        match self.sanitizer {
            Some(s) => {
                cmd.args(s.flags());
            }
            None if self.metrics => {
                cmd.args(crate::metrics::COUNTING_FLAGS);
            }
            None => {}
        }
        cmd.arg(&source).arg("-o").arg(&library);
        if vendor {
            cmd.args(["-lopenblas", "-llapacke"]);
        }
        crate::run_compiler(&mut cmd, "g++ (emulated GPU)", &source)?;
        Ok(Compiled {
            library,
            entry: unit.entry.clone(),
            parameters: unit.parameters.clone(),
        })
    }

    fn execute_interleaved(
        &self,
        compiled: &Compiled,
        arguments: &mut [Argument],
        interleaving: Interleaving,
    ) -> Option<Result<Execution, ExecError>> {
        // A sanitized run checks what its sanitizer checks, and the plain
        // runs explore the orders: under ThreadSanitizer the blocks of a
        // cooperative launch run on OS threads of their own, and what
        // threads of different blocks do between two barriers is a race
        // whatever the order, so other orders would only multiply the
        // cost (each fiber switch is a synchronization it tracks).
        if self.sanitizer.is_some() {
            return None;
        }
        Some(
            self.clone()
                .interleaving(interleaving)
                .execute(compiled, arguments),
        )
    }

    fn execute(
        &self,
        compiled: &Compiled,
        arguments: &mut [Argument],
    ) -> Result<Execution, ExecError> {
        let mut env = vec![
            (
                "SDFG_EMULATION_THREADS".to_owned(),
                self.threads.to_string(),
            ),
            (
                "SDFG_EMULATION_INTERLEAVING".to_owned(),
                self.interleaving.variable(),
            ),
            // One BLAS thread: the emulated vendor calls run inside launches' order.
            ("OPENBLAS_NUM_THREADS".to_owned(), "1".to_owned()),
        ];
        if let Some(s) = self.sanitizer {
            let runtime = Self::sanitizer_runtime(s)?;
            env.push(("LD_PRELOAD".to_owned(), runtime.display().to_string()));
            let (key, value) = match s {
                // Leaks of the runner itself (a Rust process) are not the
                // unit's; the unit's own are checked through the live counts.
                Sanitizer::Address => (
                    "ASAN_OPTIONS",
                    "detect_leaks=0:abort_on_error=0:exitcode=66",
                ),
                Sanitizer::Thread => (
                    "TSAN_OPTIONS",
                    "halt_on_error=1:exitcode=66:report_signal_unsafe=0",
                ),
            };
            env.push((key.to_owned(), value.to_owned()));
            env.push((
                "UBSAN_OPTIONS".to_owned(),
                "print_stacktrace=1:halt_on_error=1:exitcode=66".to_owned(),
            ));
        }
        self.runner.execute(compiled, arguments, &self.timing, &env)
    }
}
