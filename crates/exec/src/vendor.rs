//! What a vendor's GPU runtime does like every other: one [`Device`] for
//! CUDA and HIP alike.
//!
//! A real GPU differs from the emulated one in three things only: the
//! vendor's compiler builds the unit for the detected device, the child
//! process is shown only that device, and `NAME_run` is timed with the
//! vendor's events. A backend crate describes those in a [`Vendor`]
//! (its detected device, its compiler command, its device-selection
//! variable and timer); [`VendorGpu`] does the rest: writing the source,
//! running the compiler with its diagnostics kept, and running every
//! execution in a child process of its own (a fault leaves a GPU context
//! unusable for the rest of the process: CUDA's errors are sticky).

use crate::{Argument, Compiled, Device, ExecError, Execution, Runner, Timing};
use sdfg_codegen::TranslationUnit;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// What one vendor's runtime supplies to [`VendorGpu`].
pub trait Vendor: Send + Sync {
    /// One line naming the device and the compiler (`"NVIDIA H100 (sm_90,
    /// ...) with /usr/local/cuda/bin/nvcc (-arch=sm_90)"`).
    fn describe(&self) -> String;
    /// The timer the vendor's crate registered (a [`crate::TimerFactory`]
    /// name), which the child times `NAME_run` with.
    fn timer(&self) -> &'static str;
    /// The environment variable that shows the child only the detected
    /// device, and its value (`CUDA_VISIBLE_DEVICES=0`).
    fn visible_device(&self) -> (&'static str, String);
    /// The compiler command that builds `source` (`unit`'s text) into the
    /// shared library `library` for the detected device, linked with the
    /// vendor libraries the unit calls; and the compiler's name for
    /// messages (`"nvcc (-arch=sm_90)"`).
    fn compile_command(
        &self,
        unit: &TranslationUnit,
        source: &Path,
        library: &Path,
    ) -> (Command, String);
}

/// A real GPU of vendor `V` as a [`Device`].
#[derive(Clone, Debug)]
pub struct VendorGpu<V> {
    vendor: V,
    runner: Runner,
    timing: Timing,
}

impl<V: Vendor> VendorGpu<V> {
    /// The GPU `vendor` describes, its programs run in `runner` (a binary
    /// that passes its arguments to [`crate::child::dispatch`] and links
    /// the vendor's crate, so that the child has its timer): one untimed
    /// and ten timed calls of `NAME_run` unless told otherwise.
    pub fn new(vendor: V, runner: impl Into<PathBuf>) -> VendorGpu<V> {
        let timer = vendor.timer();
        VendorGpu {
            vendor,
            runner: Runner::new(runner),
            timing: Timing {
                warmup: 1,
                runs: 10,
                timer: Some(timer),
            },
        }
    }

    /// The vendor's description (its detected device, its compiler).
    pub fn vendor(&self) -> &V {
        &self.vendor
    }

    /// Calls `NAME_run` `warmup` times untimed, then `runs` times timed.
    #[must_use]
    pub fn timing(mut self, warmup: u32, runs: u32) -> VendorGpu<V> {
        self.timing.warmup = warmup;
        self.timing.runs = runs.max(1);
        self
    }

    /// Stops a program that runs longer than `timeout`.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> VendorGpu<V> {
        self.runner.timeout = timeout;
        self
    }
}

impl<V: Vendor> Device for VendorGpu<V> {
    fn describe(&self) -> String {
        self.vendor.describe()
    }

    fn compile(&self, unit: &TranslationUnit, dir: &Path) -> Result<Compiled, ExecError> {
        let (source, library) = crate::write_source(unit, dir)?;
        let (mut cmd, compiler) = self.vendor.compile_command(unit, &source, &library);
        crate::run_compiler(&mut cmd, &compiler, &source)?;
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
        let (var, value) = self.vendor.visible_device();
        let env = vec![(var.to_owned(), value)];
        self.runner.execute(compiled, arguments, &self.timing, &env)
    }
}
