//! Compile time of the whole pipeline per kernel: parse the Python file,
//! lower the kernel, validate it, offload it and validate the result
//! (group `pipeline`, for the simulated accelerator); and the same for the
//! CUDA backend followed by library lowering and emission of the CUDA
//! translation unit (group `to_cuda`). The goal is milliseconds per kernel.

use criterion::{Criterion, criterion_group, criterion_main};
// Linked for its registration: `sdfg_codegen::target("cuda")` finds it.
use sdfg_backend_cuda as _;
use std::hint::black_box;
use std::path::PathBuf;

fn pipeline(text: &str, file: &str, program: &str) -> sdfg_ir::Sdfg {
    let module = sdfg_frontend::Module::parse(file, text).expect("parses");
    let sdfg = module.compile(program).expect("compiles");
    sdfg_ir::validate(&sdfg).expect("valid");
    let (out, _) = sdfg_passes::offload(
        &sdfg,
        &sdfg_sim::SimAccelerator,
        &sdfg_passes::Options::default(),
    )
    .expect("offloads");
    sdfg_ir::validate(&out).expect("valid after offload");
    out
}

fn to_cuda(text: &str, file: &str) -> String {
    let module = sdfg_frontend::Module::parse(file, text).expect("parses");
    let sdfg = module.compile("kernel").expect("compiles");
    let target = sdfg_codegen::target("cuda").expect("the cuda backend is linked");
    let (mut out, _) =
        sdfg_passes::offload(&sdfg, target.dialect, &sdfg_passes::Options::default())
            .expect("offloads");
    sdfg_passes::lower_library_nodes(&mut out, target.dialect).expect("lowers");
    sdfg_codegen::emit(&out, target.dialect)
        .expect("emits")
        .source
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
}

criterion_group!(benches, bench);
criterion_main!(benches);
