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
        let (entry, exit) = s.map("gemm", "i = 0:N, j = 0:N, k = 0:N", Schedule::Default);
        let t = s.tasklet(
            "mul",
            vec![f64c("x"), f64c("y")],
            vec![f64c("z")],
            vec![Stmt::assign("z", Expr::var("x") * Expr::var("y"))],
        );
        s.path(&[a, entry, t], None, Some("x"), "A[i, k]");
        s.path(&[bb, entry, t], None, Some("y"), "B[k, j]");
        s.path(&[t, exit, c], Some("z"), None, ("C[i, j]", Wcr::Sum));
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
        let (entry, exit) = s.map("one", "i = 0:1", Schedule::Default);
        let t = s.tasklet(
            "fma",
            vec![f64c("alpha"), f64c("xi"), f64c("yi")],
            vec![f64c("out")],
            vec![Stmt::assign(
                "out",
                Expr::var("alpha") * Expr::var("xi") + Expr::var("yi"),
            )],
        );
        s.path(&[a, entry, t], None, Some("alpha"), "a[0]");
        s.path(&[x, entry, t], None, Some("xi"), "x[i]");
        s.path(&[y_in, entry, t], None, Some("yi"), "y[i]");
        s.path(&[t, exit, y], Some("out"), None, "y[i]");
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
