//! Interpreter throughput: an elementwise map over 10^6 elements and a
//! 200x200x200 GEMM written as one map with a sum-WCR tasklet.
//!
//! Divide the reported time by the number of tasklet executions (10^6 and
//! 8 * 10^6) for the cost of one simple tasklet execution.

use criterion::{Criterion, criterion_group, criterion_main};
use sdfg_ir::builder::SdfgBuilder;
use sdfg_ir::code::{Expr, Stmt};
use sdfg_ir::{Connector, DType, Schedule, Sdfg, Wcr};
use sdfg_sim::{Arguments, ArrayValue, Simulator};
use std::hint::black_box;

fn f64c(name: &str) -> Connector {
    Connector::scalar(name, DType::Float64)
}

fn gemm_map() -> Sdfg {
    let mut b = SdfgBuilder::new("gemm_map");
    b.symbol("N")
        .array("A", DType::Float64, "N, N")
        .array("B", DType::Float64, "N, N")
        .array("C", DType::Float64, "N, N");
    b.state("gemm", |s| {
        let (a, bb, c) = (s.access("A"), s.access("B"), s.access("C"));
        s.mapped_tasklet(
            "gemm",
            "i = 0:N, j = 0:N, k = 0:N",
            Schedule::Default,
            vec![(a, f64c("x"), "A[i, k]"), (bb, f64c("y"), "B[k, j]")],
            vec![Stmt::assign("z", Expr::var("x") * Expr::var("y"))],
            vec![(f64c("z"), c, ("C[i, j]", Wcr::Sum))],
        );
    });
    b.build().expect("gemm builds")
}

/// `axpy`'s arguments, but a map over one element: what a run costs besides
/// its tasklets (copying the arguments in, reading the outputs back).
fn axpy_one_element() -> Sdfg {
    let mut b = SdfgBuilder::new("axpy_one");
    b.symbol("N")
        .scalar("a", DType::Float64)
        .array("x", DType::Float64, "N")
        .array("y", DType::Float64, "N");
    b.state("compute", |s| {
        let (a, x, y_in, y) = (s.access("a"), s.access("x"), s.access("y"), s.access("y"));
        s.mapped_tasklet(
            "one",
            "i = 0:1",
            Schedule::Default,
            vec![
                (a, f64c("alpha"), "a[0]"),
                (x, f64c("xi"), "x[i]"),
                (y_in, f64c("yi"), "y[i]"),
            ],
            vec![Stmt::assign(
                "out",
                Expr::var("alpha") * Expr::var("xi") + Expr::var("yi"),
            )],
            vec![(f64c("out"), y, "y[i]")],
        );
    });
    b.build().expect("axpy_one builds")
}

fn bench(c: &mut Criterion) {
    let sim = Simulator::new();

    let axpy = sdfg_ir::examples::axpy().expect("axpy builds");
    let valid = sdfg_ir::validate(&axpy).expect("axpy is valid");
    let n = 1_000_000;
    let args = Arguments::default()
        .symbol("N", n as i64)
        .array("a", ArrayValue::f64(vec![], vec![2.0]))
        .array("x", ArrayValue::f64(vec![n], vec![1.0; n]))
        .array("y", ArrayValue::f64(vec![n], vec![0.5; n]));
    c.bench_function("elementwise map, 10^6 tasklets", |b| {
        b.iter(|| black_box(sim.run(valid, &args).expect("axpy runs")))
    });
    let one = axpy_one_element();
    let valid_one = sdfg_ir::validate(&one).expect("axpy_one is valid");
    c.bench_function("same arguments, 1 tasklet (run overhead)", |b| {
        b.iter(|| black_box(sim.run(valid_one, &args).expect("axpy_one runs")))
    });

    let gemm = gemm_map();
    let valid = sdfg_ir::validate(&gemm).expect("gemm is valid");
    let n = 200;
    let args = Arguments::default()
        .symbol("N", n as i64)
        .array("A", ArrayValue::f64(vec![n, n], vec![1.0; n * n]))
        .array("B", ArrayValue::f64(vec![n, n], vec![0.5; n * n]))
        .array("C", ArrayValue::f64(vec![n, n], vec![0.0; n * n]));
    let mut group = c.benchmark_group("gemm");
    group.sample_size(10);
    group.bench_function("200^3 map with sum-WCR, 8*10^6 tasklets", |b| {
        b.iter(|| black_box(sim.run(valid, &args).expect("gemm runs")))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
