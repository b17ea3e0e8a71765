//! Golden translation units: the emitted source of a fixed set of corpus
//! kernels per GPU backend, committed under `crates/harness/tests/goldens/`.
//!
//! As in naga's snapshot tests, `cargo test -p sdfg-harness --test goldens`
//! regenerates each one and fails on any difference, printing the first
//! differing line; `cargo xtask bless` rewrites them after an intended
//! change, so every change to generated code shows up in review as a diff.
//!
//! The prelude every unit starts with ([`sdfg_codegen::PRELUDE`], itself a
//! reviewed source file) is replaced by one marker line in the goldens, so
//! they hold only what the emitter generates for the kernel.

use std::path::{Path, PathBuf};

/// The corpus kernels whose emitted source is kept, by path in
/// `corpus/npbench/` without `.py`: products (GEMM, GEMV, DOT shapes),
/// reductions (softmax's rows, one block each), stencils in 1-D to 3-D, sequential recurrences, a dynamic
/// programme and in-place updates; gathers through data-dependent slices
/// (spmv), indirect atomic updates (azimint_hist), a complex linear solve
/// through the vendor solver (contour_integral), reshaped views whose
/// shapes change from one stage to the next (stockham_fft), and a loop
/// testing what the device computes, one persistent kernel (mandelbrot2).
pub const KERNELS: [&str; 20] = [
    "polybench/atax",
    "polybench/bicg",
    "polybench/covariance",
    "polybench/doitgen",
    "polybench/durbin",
    "polybench/floyd_warshall",
    "polybench/gemm",
    "polybench/heat_3d",
    "polybench/jacobi_1d",
    "polybench/jacobi_2d",
    "polybench/mvt",
    "polybench/nussinov",
    "polybench/syrk",
    "polybench/trisolv",
    "misc/spmv",
    "misc/azimint_hist",
    "misc/contour_integral",
    "misc/stockham_fft",
    "misc/mandelbrot2",
    "deep_learning/softmax",
];

/// Where the golden of `kernel` for `backend` lives.
pub fn path(root: &Path, backend: &crate::Backend, kernel: &str) -> PathBuf {
    let ext = match backend {
        crate::Backend::Code(t) => t.dialect.source_extension(),
        crate::Backend::Sim => "sdfg",
    };
    let name = kernel.rsplit('/').next().unwrap_or(kernel);
    root.join("crates/harness/tests/goldens")
        .join(backend.name())
        .join(format!("{name}.{ext}"))
}

/// The unit `sdfgc compile --backend B --emit source` writes for corpus
/// kernel `kernel` (frontend, the whole pipeline of
/// `sdfg_passes::pipeline`, emission).
pub fn unit(
    root: &Path,
    target: &sdfg_codegen::Target,
    kernel: &str,
) -> Result<sdfg_codegen::TranslationUnit, String> {
    let file = root.join(format!("corpus/npbench/{kernel}.py"));
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    let module = sdfg_frontend::Module::parse(&file.display().to_string(), &text)
        .map_err(|e| e.to_string())?;
    let program =
        crate::default_program(&module).ok_or_else(|| format!("`{kernel}` names no program"))?;
    let sdfg = module.compile(&program).map_err(|e| e.to_string())?;
    let (sdfg, _) = sdfg_passes::pipeline::run(
        &sdfg,
        Some(target.dialect),
        &sdfg_passes::PipelineOptions::default(),
        &sdfg_passes::Pass::ALL,
    )
    .map_err(|e| e.to_string())?;
    sdfg_codegen::emit(&sdfg, target.dialect).map_err(|e| e.to_string())
}

/// The source `sdfgc compile --backend B --emit source` writes for `kernel`
/// ([`unit()`]), with the prelude replaced by [`PRELUDE_MARKER`].
pub fn generate(
    root: &Path,
    target: &sdfg_codegen::Target,
    kernel: &str,
) -> Result<String, String> {
    let source = unit(root, target, kernel)?.source;
    if !source.contains(sdfg_codegen::PRELUDE) {
        return Err(format!("the `{kernel}` unit does not contain the prelude"));
    }
    Ok(source.replacen(sdfg_codegen::PRELUDE, PRELUDE_MARKER, 1))
}

/// What stands for [`sdfg_codegen::PRELUDE`] in a golden.
pub const PRELUDE_MARKER: &str = "// [the sdfg prelude: crates/codegen/src/prelude.cpp]\n";

/// Rewrites every golden; returns the paths written.
pub fn bless(root: &Path) -> Result<Vec<PathBuf>, String> {
    let mut written = Vec::new();
    for target in sdfg_codegen::targets() {
        let backend = crate::Backend::Code(target);
        for kernel in KERNELS {
            let source = generate(root, target, kernel)?;
            let p = path(root, &backend, kernel);
            if let Some(dir) = p.parent() {
                std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            }
            std::fs::write(&p, source).map_err(|e| format!("{}: {e}", p.display()))?;
            written.push(p);
        }
    }
    Ok(written)
}
