//! Real compilers for the emitted sources, found on the machine.
//!
//! - HIP: `hipcc` (Debian's `hipcc libamdhip64-dev rocm-device-libs`)
//!   compiles the whole translation unit for `gfx90a`. hipBLAS and hipSOLVER
//!   are not in Debian: their declarations come from
//!   `corpus/tools/declaration-only-headers/` (after the system's headers).
//! - CUDA: no `nvcc` in Debian, but NVIDIA's compiler pieces are on PyPI.
//!   The kernels are compiled by NVRTC (`nvidia-cuda-nvrtc-cu12`, driven by
//!   `corpus/tools/nvrtc_check.py` through ctypes) for `sm_90`, which also
//!   runs NVIDIA's assembler; the host part is compiled by the system C++
//!   compiler against NVIDIA's real headers (`nvidia-cuda-runtime-cu12`,
//!   `nvidia-cuda-nvcc-cu12` for `crt/`, `nvidia-cuda-cccl-cu12`,
//!   `nvidia-cublas-cu12`, `nvidia-cusolver-cu12` for the vendor calls). The
//!   wheels' `nvidia/` directory is `$SDFG_NVIDIA_WHEELS`, or found by
//!   asking `python3` where the `nvidia` package is.
//!
//! A missing tool is a [`Check::Missing`] naming it: the corpus reports the
//! stage as skipped, never as passed.

use sdfg_exec::on_path;
use std::path::Path;
use std::process::Command;

/// The outcome of a compile check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// Every compiler involved accepted the source.
    Passed,
    /// A compiler rejected it, with its first diagnostics.
    Failed(String),
    /// A tool is not installed.
    Missing(String),
}

fn run(cmd: &mut Command, what: &str) -> Check {
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

/// Compiles a HIP translation unit with `hipcc` for `gfx90a`; vendor
/// headers Debian lacks come from `tools/declaration-only-headers`.
pub fn check_hip(source: &Path, tools: &Path) -> Check {
    let Some(hipcc) = on_path("hipcc") else {
        return Check::Missing("hipcc not found".to_owned());
    };
    let object = source.with_extension("o");
    let check = run(
        Command::new(hipcc)
            .env("HIP_PLATFORM", "amd")
            .args(["--offload-arch=gfx90a", "-std=c++17", "-c"])
            .arg("-idirafter")
            .arg(tools.join("declaration-only-headers"))
            .arg(source)
            .arg("-o")
            .arg(&object),
        "hipcc",
    );
    let _ = std::fs::remove_file(object);
    check
}

/// The `nvidia/` directory of NVIDIA's Python wheels, if installed
/// (`sdfg_exec::nvidia_wheels`, which the CUDA runtime's search for `nvcc`
/// shares).
pub use sdfg_exec::nvidia_wheels;

/// Compiles a CUDA translation unit: its kernels with NVRTC for `sm_90`,
/// its host part with the system C++ compiler against NVIDIA's headers.
pub fn check_cuda(source: &Path, tools: &Path) -> Check {
    let Some(nv) = nvidia_wheels() else {
        return Check::Missing(
            "NVIDIA's CUDA wheels not found (set SDFG_NVIDIA_WHEELS or pip-install nvidia-cuda-nvrtc-cu12)"
                .to_owned(),
        );
    };
    let include = |d: &str| nv.join(d).join("include");
    for needed in [
        "cuda_nvrtc/lib",
        "cuda_runtime/include",
        "cuda_nvcc/include",
        "cuda_cccl/include",
    ] {
        if !nv.join(needed).is_dir() {
            return Check::Missing(format!("`{}` not found", nv.join(needed).display()));
        }
    }
    let device = run(
        Command::new("python3")
            .arg(tools.join("nvrtc_check.py"))
            .arg(source)
            .arg("--arch=sm_90")
            .env("SDFG_NVIDIA_WHEELS", &nv),
        "NVRTC",
    );
    if device != Check::Passed {
        return device;
    }
    let Some(cxx) = on_path("g++").or_else(|| on_path("c++")) else {
        return Check::Missing("g++ not found".to_owned());
    };
    run(
        Command::new(cxx)
            .args([
                "-std=c++17",
                "-fsyntax-only",
                "-x",
                "c++",
                "-DSDFG_HOST_ONLY",
            ])
            .arg("-I")
            .arg(include("cuda_runtime"))
            .arg("-I")
            .arg(include("cuda_nvcc"))
            .arg("-I")
            .arg(include("cuda_cccl"))
            .arg("-I")
            .arg(include("cublas"))
            .arg("-I")
            .arg(include("cusolver"))
            .arg(source),
        "g++ (host part)",
    )
}
