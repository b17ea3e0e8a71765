//! The stages of a corpus run, typed: their names in reports, the order
//! each backend runs them in, and which stage each one needs to have
//! passed.
//!
//! The names are what the table's header, the JSON report and `--skip`
//! use; they are fixed ([`Stage::name`]), so that reports of different
//! versions compare.

use serde::{Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// One stage of the corpus runner ([`super::run_kernel`]).
///
/// Each variant checks one step of the pipeline, from the Python source to
/// the emitted program on a GPU; a failed stage stops the stages that need
/// it ([`Stage::prerequisite`]), which report why they were skipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// The kernel's Python file parses (a client case: its SDFG file is
    /// there, or the tool's refusal to write one is reported). The first
    /// step of every case; nothing else can run without it.
    Parse,
    /// The frontend compiles the kernel and its initializer to SDFGs (a
    /// client case: the tool's SDFG is imported, a construct outside the
    /// supported subset refused by name), and the case's metadata is read:
    /// the preset's symbols, the compared outputs, the tolerance.
    Compile,
    /// Both SDFGs pass the IR's validation: what every later pass and the
    /// simulator assume of their input.
    Validate,
    /// Both SDFGs survive a JSON round trip unchanged: JSON is how SDFGs
    /// travel between tools, so a lossy round trip would corrupt them.
    Json,
    /// The initializer and then the kernel run on the host in the
    /// simulator: the host run, whose outputs the device runs are compared
    /// with, and whose inputs the emitted code is run on.
    Simulate,
    /// The offload pass for the backend's accelerator runs, and its output
    /// round-trips through JSON and is left unchanged by a second run
    /// (idempotence): the offloaded SDFG every device stage starts from.
    Offload,
    /// The offloaded kernel runs on the simulated accelerator (separate
    /// memories, every transfer counted; kernels checked for data races at
    /// preset `test`) and matches the host run; the static count of
    /// launches and bytes must agree with the run's wherever it applies,
    /// because `compare-dace` relies on it at large presets.
    Device,
    /// Library nodes are expanded (or kept for vendor calls) for the
    /// backend's dialect, and the result simulated on the device against
    /// the host run: the SDFG the emitted code is generated from. Code
    /// backends only.
    Lower,
    /// The lowered SDFG is emitted as a translation unit. Code backends
    /// only.
    Emit,
    /// The real compilers for the backend accept the emitted unit (the
    /// backend's registered [`sdfg_exec::Toolchain`]); skipped where they
    /// are not installed. Code backends only.
    Cc,
    /// The emitted unit is compiled and run on the emulated GPU
    /// (`docs/emulation.md`) with the initializer's inputs, every output
    /// compared with NumPy, nothing left allocated, and what the device
    /// counted recorded beside the simulator's counts. Code backends only.
    Exec,
    /// The emitted unit runs on a real GPU (`docs/gpu.md`), compared with
    /// NumPy as in [`Stage::Exec`], and is timed beside NumPy and CuPy;
    /// skipped without a GPU. Code backends only.
    Gpu,
    /// The same file runs under CPython and NumPy and every output of the
    /// host run matches NumPy's within the kernel's tolerance: the check
    /// that the frontend's meaning is the program's.
    Numpy,
    /// DaCe's own SDFG of the kernel is imported, validated, simulated,
    /// offloaded and compared with NumPy (with a code backend also emitted
    /// and executed), then written back in DaCe's format for DaCe to check
    /// (a client case: the offloaded SDFG is written back). It shows that
    /// SDFGs this project did not write go through the same pipeline.
    DaceImport,
}

impl Stage {
    /// Every stage a code-generating backend runs, in order.
    const CODE: [Stage; 14] = [
        Stage::Parse,
        Stage::Compile,
        Stage::Validate,
        Stage::Json,
        Stage::Simulate,
        Stage::Offload,
        Stage::Device,
        Stage::Lower,
        Stage::Emit,
        Stage::Cc,
        Stage::Exec,
        Stage::Gpu,
        Stage::Numpy,
        Stage::DaceImport,
    ];

    /// The stages of the simulated accelerator, in order: no code.
    const SIM: [Stage; 9] = [
        Stage::Parse,
        Stage::Compile,
        Stage::Validate,
        Stage::Json,
        Stage::Simulate,
        Stage::Offload,
        Stage::Device,
        Stage::Numpy,
        Stage::DaceImport,
    ];

    /// Every stage, in the order a code-generating backend runs them.
    pub const ALL: &'static [Stage] = &Stage::CODE;

    /// The stage's name in the table, the JSON report and `--skip`.
    pub const fn name(self) -> &'static str {
        match self {
            Stage::Parse => "parse",
            Stage::Compile => "compile",
            Stage::Validate => "validate",
            Stage::Json => "json",
            Stage::Simulate => "simulate",
            Stage::Offload => "offload",
            Stage::Device => "device",
            Stage::Lower => "lower",
            Stage::Emit => "emit",
            Stage::Cc => "cc",
            Stage::Exec => "exec",
            Stage::Gpu => "gpu",
            Stage::Numpy => "numpy",
            Stage::DaceImport => "dace-import",
        }
    }

    /// The stages run for `backend`, in order: a code-generating backend
    /// adds **lower**, **emit**, **cc**, **exec** and **gpu** before the
    /// NumPy comparison; `dace-import` is last for every backend.
    pub fn for_backend(backend: crate::Backend) -> &'static [Stage] {
        match backend {
            crate::Backend::Sim => &Stage::SIM,
            crate::Backend::Code(_) => &Stage::CODE,
        }
    }

    /// The stage this one needs to have passed, so that what it reads
    /// exists: the main chain, except that the NumPy comparison needs only
    /// the host run, the runs of the emitted unit only the unit, and the
    /// import of DaCe's SDFG only the validated SDFGs (for the metadata
    /// and the initializer).
    pub const fn prerequisite(self) -> Option<Stage> {
        Some(match self {
            Stage::Parse => return None,
            Stage::Compile => Stage::Parse,
            Stage::Validate => Stage::Compile,
            Stage::Json => Stage::Validate,
            Stage::Simulate => Stage::Json,
            Stage::Offload => Stage::Simulate,
            Stage::Device => Stage::Offload,
            Stage::Lower => Stage::Device,
            Stage::Emit => Stage::Lower,
            Stage::Cc | Stage::Exec | Stage::Gpu => Stage::Emit,
            Stage::Numpy => Stage::Simulate,
            Stage::DaceImport => Stage::Validate,
        })
    }
}

/// Pads like a string, so that tables can align stage names.
impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// A name that is no stage's ([`Stage::from_str`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownStage(pub String);

impl fmt::Display for UnknownStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no stage is named `{}`", self.0)
    }
}

impl std::error::Error for UnknownStage {}

/// Parses a stage's [`Stage::name`] (as `--skip STAGE` gives it).
impl FromStr for Stage {
    type Err = UnknownStage;

    fn from_str(s: &str) -> Result<Stage, UnknownStage> {
        Stage::ALL
            .iter()
            .copied()
            .find(|stage| stage.name() == s)
            .ok_or_else(|| UnknownStage(s.to_owned()))
    }
}

/// Serialized as its name: reports keep the strings they always had.
impl Serialize for Stage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::Stage;

    #[test]
    fn names_parse_back_and_every_prerequisite_runs_earlier() {
        for (i, stage) in Stage::ALL.iter().enumerate() {
            assert_eq!(stage.name().parse::<Stage>(), Ok(*stage));
            if let Some(p) = stage.prerequisite() {
                assert!(Stage::ALL[..i].contains(&p), "{stage} needs {p}");
            }
        }
        assert!("DaCe".parse::<Stage>().is_err());
        // Every backend's stages run in the one order, prerequisites first.
        for stages in [Stage::SIM.as_slice(), Stage::CODE.as_slice()] {
            for (i, stage) in stages.iter().enumerate() {
                if let Some(p) = stage.prerequisite() {
                    assert!(stages[..i].contains(&p), "{stage} needs {p}");
                }
            }
        }
        assert_eq!(format!("{:>6}|", Stage::Cc), "    cc|");
        assert_eq!(
            serde_json::to_string(&Stage::DaceImport).unwrap(),
            "\"dace-import\""
        );
    }
}
