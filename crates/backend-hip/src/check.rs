//! The HIP compile check: `hipcc` (Debian's `hipcc libamdhip64-dev
//! rocm-device-libs`) compiles the whole translation unit for `gfx90a`,
//! no GPU needed. hipBLAS and hipSOLVER are not in Debian: their
//! declarations come from `corpus/tools/declaration-only-headers/`
//! (searched after the system's headers).

use sdfg_exec::{Check, Toolchain, on_path};
use std::path::Path;
use std::process::Command;

/// Compiles a HIP translation unit with `hipcc` for `gfx90a`.
pub fn check(source: &Path, tools: &Path) -> Check {
    let Some(hipcc) = on_path("hipcc") else {
        return Check::Missing("hipcc not found".to_owned());
    };
    let object = source.with_extension("o");
    let check = Check::run(
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

inventory::submit! {
    Toolchain { backend: "hip", check }
}
