//! Compile time of the whole pipeline per kernel: parse the Python file,
//! lower the kernel, validate it, offload it for the simulated accelerator
//! and validate the result. The goal is milliseconds per kernel.

use criterion::{Criterion, criterion_group, criterion_main};
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

fn bench(c: &mut Criterion) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../corpus/npbench/polybench");
    let mut group = c.benchmark_group("pipeline");
    for kernel in [
        "gemm",
        "jacobi_2d",
        "durbin",
        "cholesky",
        "correlation",
        "adi",
    ] {
        let path = root.join(format!("{kernel}.py"));
        let text = std::fs::read_to_string(&path).expect("corpus file");
        let file = path.display().to_string();
        group.bench_function(kernel, |b| {
            b.iter(|| black_box(pipeline(&text, &file, "kernel")))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
