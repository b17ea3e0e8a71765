//! Compile time of the whole pipeline per kernel: parse the Python file,
//! lower the kernel, validate it, run every pass up to offloading
//! (`sdfg_passes::pipeline`, validated after each; group `pipeline`, for
//! the simulated accelerator); the same for the CUDA backend followed by
//! library lowering and emission of the CUDA translation unit (group
//! `to_cuda`); and generated programs of 1,000 and 10,000 statements of six
//! shapes through the CUDA pipeline (group `generated`), whose time per
//! statement must not grow. The goal is milliseconds per kernel.

use criterion::{Criterion, criterion_group, criterion_main};

// The allocator `sdfgc` uses, so that the figures are the command's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
// Linked for its registration: `sdfg_codegen::target("cuda")` finds it.
use sdfg_backend_cuda as _;
use std::hint::black_box;
use std::path::PathBuf;

fn pipeline(text: &str, file: &str, program: &str) -> sdfg_ir::ValidSdfg {
    let module = sdfg_frontend::Module::parse(file, text).expect("parses");
    let sdfg = module.compile(program).expect("compiles");
    sdfg_ir::validate(&sdfg).expect("valid");
    use sdfg_passes::Pass;
    // Every pass up to offloading; the pipeline validates after each.
    let (out, _) = sdfg_passes::pipeline::run_owned(
        sdfg,
        Some(&sdfg_sim::SimAccelerator),
        &sdfg_passes::PipelineOptions::default(),
        &Pass::TO_OFFLOAD,
    )
    .expect("offloads");
    out
}

fn to_cuda(text: &str, file: &str) -> String {
    let module = sdfg_frontend::Module::parse(file, text).expect("parses");
    let sdfg = module.compile("kernel").expect("compiles");
    let target = sdfg_codegen::target("cuda").expect("the cuda backend is linked");
    let (out, _) = sdfg_passes::pipeline::run_owned(
        sdfg,
        Some(target.dialect),
        &sdfg_passes::PipelineOptions::default(),
        &sdfg_passes::Pass::ALL,
    )
    .expect("offloads and lowers");
    // The pipeline's output carries its proof: emission does not validate again.
    sdfg_codegen::emit_validated(out.validated(), target.dialect)
        .expect("emits")
        .source
}

/// Generated programs of `k` statements, to see compile time grow
/// linearly, one per shape that once grew faster (issue 17): a chain of
/// element-wise statements (fusion's worst case, one growing kernel), a
/// loop of independent statements (loop-to-map), a sequential loop of
/// scalar recurrences (a single-thread kernel), `k` loop nests one after
/// the other (each a map nest; validation once copied every symbol per
/// node), `k` arguments (one statement each), and an `if` with `k - 1`
/// `elif` arms.
fn generated(kind: &str, k: usize) -> String {
    let mut params = "A: dc.float64[N], B: dc.float64[N]".to_owned();
    let mut body = String::new();
    match kind {
        "chain" => {
            body.push_str("    T0 = A * 1.0\n");
            for s in 1..k {
                body.push_str(&format!("    T{s} = T{} + {s}.0\n", s - 1));
            }
            body.push_str(&format!("    B[:] = T{}\n", k - 1));
        }
        "loop" => {
            body.push_str("    for i in range(N):\n");
            for s in 0..k {
                body.push_str(&format!("        B[i] = B[i] + A[i] * {s}.0\n"));
            }
        }
        "nests" => {
            params = "A: dc.float64[N, N], B: dc.float64[N, N]".to_owned();
            for s in 0..k {
                body.push_str(&format!(
                    "    for i in range(N):\n        for j in range(N):\n            B[i, j] = B[i, j] + A[i, j] * {s}.0\n"
                ));
            }
        }
        "args" => {
            params = (0..k)
                .map(|s| format!("A{s}: dc.float64[N]"))
                .collect::<Vec<_>>()
                .join(", ");
            for s in 0..k {
                body.push_str(&format!("    A{s}[:] = A{s} + 1.0\n"));
            }
        }
        "elif" => {
            body.push_str("    if N == 0:\n        B[0] = 0.0\n");
            for s in 1..k {
                body.push_str(&format!("    elif N == {s}:\n        B[0] = {s}.0\n"));
            }
        }
        _ => {
            body.push_str("    for i in range(1, N):\n");
            for s in 0..k {
                body.push_str(&format!("        B[i] = B[i - 1] * 0.5 + {s}.0\n"));
            }
        }
    }
    format!("import dace as dc\nN = dc.symbol('N')\n\n@dc.program\ndef kernel({params}):\n{body}")
}

/// The kernels measured, by path in `corpus/npbench/`: PolyBench products,
/// stencils, recurrences and a solver, and kernels of the other categories
/// with gathers (spmv), a vendor solve (contour_integral), reshaped views
/// (stockham_fft), a deep network (lenet) and tuple-returning programs
/// (nbody).
const KERNELS: [&str; 11] = [
    "polybench/gemm",
    "polybench/jacobi_2d",
    "polybench/durbin",
    "polybench/cholesky",
    "polybench/correlation",
    "polybench/adi",
    "misc/spmv",
    "misc/contour_integral",
    "misc/stockham_fft",
    "misc/nbody",
    "deep_learning/lenet",
];

fn bench(c: &mut Criterion) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../corpus/npbench");
    let sources: Vec<(&str, String, String)> = KERNELS
        .iter()
        .map(|kernel| {
            let path = root.join(format!("{kernel}.py"));
            let text = std::fs::read_to_string(&path).expect("corpus file");
            (*kernel, text, path.display().to_string())
        })
        .collect();
    let mut group = c.benchmark_group("pipeline");
    for (kernel, text, file) in &sources {
        group.bench_function(*kernel, |b| {
            b.iter(|| black_box(pipeline(text, file, "kernel")))
        });
    }
    group.finish();
    let mut group = c.benchmark_group("to_cuda");
    for (kernel, text, file) in &sources {
        group.bench_function(*kernel, |b| b.iter(|| black_box(to_cuda(text, file))));
    }
    group.finish();
    // Parse to the CUDA translation unit for programs of 1,000 and 10,000
    // statements: the time per statement should not grow.
    let mut group = c.benchmark_group("generated");
    group.sample_size(10);
    for kind in ["chain", "loop", "recurrence", "nests", "args", "elif"] {
        for k in [1_000, 10_000] {
            let text = generated(kind, k);
            group.bench_function(format!("{kind}/{k}"), |b| {
                b.iter(|| black_box(to_cuda(&text, "generated.py")))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
