//! The emulated GPU: CUDA and HIP units compiled unchanged by g++ against the
//! project's replacement runtime headers and run on the CPU.

use crate::child::{self, CHILD_FLAG, Request};
use crate::{Argument, Compiled, Device, ExecError, Execution, check_arguments};
use sdfg_codegen::TranslationUnit;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The emulation's headers: `cuda_runtime.h`, `hip/hip_runtime.h`, the
/// vendor libraries' headers and `sdfg_emulation/`.
pub const INCLUDE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/emulation/include");

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
    runner: Vec<String>,
    env: Vec<(String, String)>,
    runs: u32,
    sanitizer: Option<Sanitizer>,
    threads: u32,
    timeout: Duration,
    optimization: &'static str,
}

impl EmulatedGpu {
    /// An emulated GPU whose programs run in `runner`: a binary, and the
    /// arguments before [`CHILD_FLAG`], that passes its arguments to
    /// [`child::dispatch`] (`cargo xtask`'s and `sdfgc`'s executables do, and
    /// so does `sdfg-exec-child`).
    pub fn new(runner: impl Into<PathBuf>) -> EmulatedGpu {
        EmulatedGpu {
            runner: vec![runner.into().display().to_string()],
            env: Vec::new(),
            runs: 1,
            sanitizer: None,
            threads: 1,
            timeout: Duration::from_secs(900),
            optimization: "-O1",
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

    /// Runs each launch on `n` OS threads (`SDFG_EMULATION_THREADS`).
    #[must_use]
    pub fn threads(mut self, n: u32) -> EmulatedGpu {
        self.threads = n.max(1);
        self
    }

    /// Sets an environment variable of the runner: the emulation reads
    /// `SDFG_EMULATION_FAIL_ALLOCATION=N` (the N-th device allocation
    /// fails), for example.
    #[must_use]
    pub fn env(mut self, key: &str, value: &str) -> EmulatedGpu {
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Calls `NAME_run` `runs` times on one state (a benchmark's repeated
    /// runs); the outputs and counts are the last run's.
    #[must_use]
    pub fn runs(mut self, runs: u32) -> EmulatedGpu {
        self.runs = runs.max(1);
        self
    }

    /// Stops a program that runs longer than `timeout`.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> EmulatedGpu {
        self.timeout = timeout;
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

pub(crate) fn on_path(tool: &str) -> Option<PathBuf> {
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

/// First diagnostics of a compiler's output.
fn first_errors(text: &str) -> String {
    let errors: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("error"))
        .take(6)
        .collect();
    if errors.is_empty() {
        text.lines().take(6).collect::<Vec<_>>().join("\n")
    } else {
        errors.join("\n")
    }
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
        s.push(')');
        s
    }

    fn compile(&self, unit: &TranslationUnit, dir: &Path) -> Result<Compiled, ExecError> {
        let compiler = Self::compiler()?;
        let vendor = unit.source.contains("#include <cublas_v2.h>")
            || unit.source.contains("#include <hipblas/hipblas.h>")
            || unit.source.contains("#include <cusolverDn.h>")
            || unit.source.contains("#include <hipsolver/hipsolver.h>");
        if vendor {
            vendor_libraries()?;
        }
        std::fs::create_dir_all(dir).map_err(|e| ExecError::io(dir.display(), e))?;
        let source = dir.join(&unit.file_name);
        std::fs::write(&source, &unit.source).map_err(|e| ExecError::io(source.display(), e))?;
        let library = dir.join(format!("lib{}.so", unit.entry));
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
        .arg(INCLUDE_DIR);
        if let Some(s) = self.sanitizer {
            cmd.args(s.flags());
        }
        cmd.arg(&source).arg("-o").arg(&library);
        if vendor {
            cmd.args(["-lopenblas", "-llapacke"]);
        }
        let out = cmd.output().map_err(|e| ExecError::io("running g++", e))?;
        if !out.status.success() {
            return Err(ExecError::Compile {
                compiler: "g++ (emulated GPU)".to_owned(),
                file: source,
                diagnostics: first_errors(&String::from_utf8_lossy(&out.stderr)),
            });
        }
        Ok(Compiled {
            library,
            entry: unit.entry.clone(),
            parameters: unit.parameters.clone(),
        })
    }

    fn execute(
        &self,
        compiled: &Compiled,
        arguments: &mut [Argument],
    ) -> Result<Execution, ExecError> {
        check_arguments(&compiled.parameters, arguments)?;
        static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let base = compiled.library.parent().unwrap_or(Path::new("."));
        let dir = base.join(format!("run-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| ExecError::io(dir.display(), e))?;
        let mut request = Request::new(compiled, arguments);
        request.runs = self.runs;
        child::write_request(&dir, &request, arguments)?;
        let (program, leading) = self
            .runner
            .split_first()
            .ok_or_else(|| ExecError::Missing("no runner for the emulated GPU".to_owned()))?;
        let mut cmd = Command::new(program);
        cmd.args(leading).arg(CHILD_FLAG).arg(&dir);
        cmd.env("SDFG_EMULATION_THREADS", self.threads.to_string());
        // One BLAS thread: the emulated vendor calls run inside launches' order.
        cmd.env("OPENBLAS_NUM_THREADS", "1");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        if let Some(s) = self.sanitizer {
            cmd.env("LD_PRELOAD", Self::sanitizer_runtime(s)?);
            match s {
                // Leaks of the runner itself (a Rust process) are not the
                // unit's; the unit's own are checked through the live counts.
                Sanitizer::Address => cmd.env(
                    "ASAN_OPTIONS",
                    "detect_leaks=0:abort_on_error=0:exitcode=66",
                ),
                Sanitizer::Thread => cmd.env(
                    "TSAN_OPTIONS",
                    "halt_on_error=1:exitcode=66:report_signal_unsafe=0",
                ),
            };
            cmd.env(
                "UBSAN_OPTIONS",
                "print_stacktrace=1:halt_on_error=1:exitcode=66",
            );
        }
        let stderr_path = dir.join("stderr.txt");
        let stderr = std::fs::File::create(&stderr_path)
            .map_err(|e| ExecError::io(stderr_path.display(), e))?;
        let stdout = stderr
            .try_clone()
            .map_err(|e| ExecError::io(stderr_path.display(), e))?;
        cmd.stdin(Stdio::null()).stdout(stdout).stderr(stderr);
        let mut process = cmd
            .spawn()
            .map_err(|e| ExecError::io(format!("starting `{program}`"), e))?;
        let start = Instant::now();
        let status = loop {
            match process.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if start.elapsed() > self.timeout => {
                    let _ = process.kill();
                    let _ = process.wait();
                    return Err(ExecError::Timeout {
                        seconds: self.timeout.as_secs(),
                    });
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                Err(e) => return Err(ExecError::io("waiting for the runner", e)),
            }
        };
        let messages = std::fs::read_to_string(&stderr_path).unwrap_or_default();
        if !status.success() {
            use std::os::unix::process::ExitStatusExt;
            let how = match (status.code(), status.signal()) {
                (_, Some(sig)) => format!("was killed by signal {sig} ({})", signal_name(sig)),
                (Some(code), _) => format!("exited with status {code}"),
                _ => "ended abnormally".to_owned(),
            };
            return Err(ExecError::Crashed { how, messages });
        }
        let response = child::read_response(&dir, arguments)?;
        if response.init_failed {
            return Err(ExecError::Init {
                entry: compiled.entry.clone(),
                messages,
                live: response.live_after_exit,
            });
        }
        let _ = std::fs::remove_dir_all(&dir);
        Ok(Execution {
            status: if response.status != 0 {
                response.status
            } else {
                response.exit_status
            },
            messages,
            counts: response.counts,
            live_after_exit: response.live_after_exit,
        })
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        _ => "a signal",
    }
}
