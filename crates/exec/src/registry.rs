//! What each backend crate registers about running and compiling its code,
//! so that the harness, `sdfgc` and the Python package find it by the
//! backend's name and name no backend themselves.
//!
//! A backend crate registers, with `inventory::submit!`:
//!
//! - its [`Toolchain`]: how the vendor's real compiler is asked whether it
//!   accepts an emitted unit, on a machine without the device (the
//!   corpus's `cc` stage);
//! - behind its `runtime` feature, its [`GpuRuntime`]: how its GPUs are
//!   detected and opened as a [`Device`].
//!
//! The emitter's target (`sdfg_codegen::Target`) is the third registration,
//! in the crate below this one. Adding a backend touches its own crate, a
//! feature line of the crates that link it, and the docs.

use crate::Device;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The outcome of a compile check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// Every compiler involved accepted the source.
    Passed,
    /// A compiler rejected it, with its first diagnostics.
    Failed(String),
    /// A tool is not installed: the corpus reports the stage as skipped,
    /// never as passed.
    Missing(String),
}

impl Check {
    /// Runs one compiler command: passed on success, its first error
    /// lines otherwise (prefixed by `what`), missing if it cannot start.
    pub fn run(cmd: &mut Command, what: &str) -> Check {
        match cmd.output() {
            Ok(o) if o.status.success() => Check::Passed,
            Ok(o) => {
                let mut text = String::from_utf8_lossy(&o.stderr).into_owned();
                text.push_str(&String::from_utf8_lossy(&o.stdout));
                let first: Vec<&str> = text
                    .lines()
                    .filter(|l| l.contains("error"))
                    .take(4)
                    .collect();
                Check::Failed(format!(
                    "{what}: {}",
                    if first.is_empty() {
                        text.lines().take(4).collect::<Vec<_>>().join("\n")
                    } else {
                        first.join("\n")
                    }
                ))
            }
            Err(e) => Check::Missing(format!("{what}: {e}")),
        }
    }
}

/// A backend's compile check: the vendor's own compiler (or its pieces)
/// given an emitted unit, with no device needed.
pub struct Toolchain {
    /// The backend's name, as `--backend` spells it.
    pub backend: &'static str,
    /// Checks the unit written at `source`; `tools` is the corpus's
    /// `corpus/tools/` (helper scripts, declaration-only headers of vendor
    /// libraries a distribution lacks).
    pub check: fn(source: &Path, tools: &Path) -> Check,
}

inventory::collect!(Toolchain);

/// The compile check registered for `backend`, if its crate is linked.
pub fn toolchain(backend: &str) -> Option<&'static Toolchain> {
    inventory::iter::<Toolchain>
        .into_iter()
        .find(|t| t.backend == backend)
}

/// How a GPU runtime is opened: where its programs run, and how they are
/// timed.
#[derive(Clone, Debug)]
pub struct RuntimeOptions {
    /// The binary that dispatches `sdfg_exec::child` requests (`cargo
    /// xtask`'s, `sdfgc`'s): every execution gets a process of its own.
    pub runner: PathBuf,
    /// Untimed calls of `NAME_run` before the timed ones.
    pub warmup: u32,
    /// Timed calls of `NAME_run`.
    pub runs: u32,
    /// The longest a program may run.
    pub timeout: Duration,
}

/// A backend's real GPUs, registered by its crate's `runtime` feature.
pub struct GpuRuntime {
    /// The backend's name, as `--backend` spells it.
    pub backend: &'static str,
    /// The first GPU found, as a [`Device`], or why there is none, in one
    /// line ("no CUDA device (driver not found ...)").
    pub open: fn(&RuntimeOptions) -> Result<Box<dyn Device + Sync>, String>,
    /// Every GPU found, one line each, or why there are none.
    pub detect: fn() -> Result<Vec<String>, String>,
}

inventory::collect!(GpuRuntime);

/// The GPU runtime registered for `backend`, if its crate is linked with
/// its `runtime` feature.
pub fn gpu_runtime(backend: &str) -> Option<&'static GpuRuntime> {
    inventory::iter::<GpuRuntime>
        .into_iter()
        .find(|r| r.backend == backend)
}
