//! The CUDA compile check, without `nvcc` or a GPU: NVIDIA's compiler
//! pieces from PyPI.
//!
//! Debian has no `nvcc`, but NVIDIA publishes its compiler pieces as Python
//! wheels. The kernels are compiled by NVRTC (`nvidia-cuda-nvrtc-cu12`,
//! driven by `corpus/tools/nvrtc_check.py` through ctypes) for `sm_90`,
//! which also runs NVIDIA's assembler; the host part is compiled by the
//! system C++ compiler against NVIDIA's real headers
//! (`nvidia-cuda-runtime-cu12`, `nvidia-cuda-nvcc-cu12` for `crt/`,
//! `nvidia-cuda-cccl-cu12`, `nvidia-cublas-cu12`, `nvidia-cusolver-cu12`
//! for the vendor calls). The wheels' `nvidia/` directory is
//! `$SDFG_NVIDIA_WHEELS`, or found by asking `python3` where the `nvidia`
//! package is ([`sdfg_exec::nvidia_wheels`]).

use sdfg_exec::{Check, Toolchain, nvidia_wheels, on_path};
use std::path::Path;
use std::process::Command;

/// Compiles a CUDA translation unit: its kernels with NVRTC for `sm_90`,
/// its host part with the system C++ compiler against NVIDIA's headers.
pub fn check(source: &Path, tools: &Path) -> Check {
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
    let device = Check::run(
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
    Check::run(
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

inventory::submit! {
    Toolchain { backend: "cuda", check }
}
