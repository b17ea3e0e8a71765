//! Conformance tests of the simulator: every node kind, every control-flow
//! construct, every dtype family, every write-conflict resolution and the
//! faults and errors of the API, each on a small SDFG whose result is
//! computed independently here (plain loops or numbers worked by hand).

use num_complex::Complex;
use sdfg_ir::builder::SdfgBuilder;
use sdfg_ir::code::{BinaryOp, Expr, Intrinsic, Stmt, UnaryOp};
use sdfg_ir::{
    BlockKind, Connector, DType, DataDesc, Layout, LibraryOp, Literal, Memlet, Schedule, Sdfg,
    Storage, Subset, SymExpr, VIEW_CONNECTOR, Wcr,
};
use sdfg_sim::value::C64;
use sdfg_sim::{Arguments, ArrayValue, Elements, RunResult, SimError, Simulator};
use std::cell::RefCell;
use std::rc::Rc;

const F64: DType = DType::Float64;
const I64: DType = DType::Int64;

// ---------------------------------------------------------------------------
// Helpers

fn run(sdfg: &Sdfg, args: &Arguments) -> Result<RunResult, SimError> {
    let valid = sdfg_ir::validate(sdfg).unwrap_or_else(|e| panic!("invalid test SDFG:\n{e}"));
    Simulator::new().run(valid, args)
}

fn run_ok(sdfg: &Sdfg, args: &Arguments) -> RunResult {
    run(sdfg, args).unwrap_or_else(|e| panic!("the run failed: {e}"))
}

fn sc(name: &str, dtype: DType) -> Connector {
    Connector::scalar(name, dtype)
}

fn fc(name: &str) -> Connector {
    Connector::scalar(name, F64)
}

fn v(name: &str) -> Expr {
    Expr::var(name)
}

fn bin(op: BinaryOp, lhs: Expr, rhs: Expr) -> Expr {
    Expr::binary(op, lhs, rhs)
}

fn call(func: Intrinsic, args: Vec<Expr>) -> Expr {
    Expr::call(func, args)
}

fn int(value: i64, dtype: DType) -> Expr {
    Expr::Lit(Literal::Int { value, dtype })
}

fn uint(value: u64, dtype: DType) -> Expr {
    Expr::Lit(Literal::UInt { value, dtype })
}

fn assign(target: &str, value: Expr) -> Stmt {
    Stmt::assign(target, value)
}

fn b(label: &str) -> SdfgBuilder {
    SdfgBuilder::new(label)
}

fn build(b: SdfgBuilder) -> Sdfg {
    b.build().unwrap_or_else(|e| panic!("build failed: {e}"))
}

fn scalar_f64(x: f64) -> ArrayValue {
    ArrayValue::f64(vec![], vec![x])
}

fn scalar_i64(x: i64) -> ArrayValue {
    ArrayValue::i64(vec![], vec![x])
}

fn f64s(r: &RunResult, name: &str) -> Vec<f64> {
    match &r.outputs[name].elements {
        Elements::F64(v) => v.clone(),
        other => panic!("`{name}` is not float64: {other:?}"),
    }
}

fn i64s(r: &RunResult, name: &str) -> Vec<i64> {
    match &r.outputs[name].elements {
        Elements::I64(v) => v.clone(),
        other => panic!("`{name}` is not int64: {other:?}"),
    }
}

/// Equal within 1e-12 relative (absolute near zero); NaN equals NaN.
fn close(a: f64, e: f64) -> bool {
    (a.is_nan() && e.is_nan()) || a == e || (a - e).abs() <= 1e-12 * e.abs().max(1.0)
}

fn assert_close(actual: &[f64], expected: &[f64]) {
    assert_eq!(actual.len(), expected.len(), "{actual:?} vs {expected:?}");
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert!(close(*a, *e), "element {i}: got {a}, expected {e}");
    }
}

/// NaN-aware exact comparison.
fn assert_same_f64(actual: &[f64], expected: &[f64]) {
    assert_eq!(actual.len(), expected.len(), "{actual:?} vs {expected:?}");
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert!(
            (a.is_nan() && e.is_nan()) || a == e,
            "element {i}: got {a}, expected {e}"
        );
    }
}

/// Runs `z = body(x, y)` elementwise over `a` and `b` into an array of `out`,
/// twice: reading the arguments directly (the fused map path) and reading
/// transient copies of them (the general path, with initialisation checks).
/// Both must agree; returns the result.
fn elementwise(a: Elements, b: Elements, out: DType, body: Vec<Stmt>) -> Elements {
    let direct = elementwise_run(&a, &b, out, &body, false)
        .unwrap_or_else(|e| panic!("direct run failed: {e}"));
    let staged = elementwise_run(&a, &b, out, &body, true)
        .unwrap_or_else(|e| panic!("staged run failed: {e}"));
    assert_eq!(
        format!("{direct:?}"),
        format!("{staged:?}"),
        "fused and general paths disagree"
    );
    direct
}

fn elementwise_run(
    a: &Elements,
    b: &Elements,
    out: DType,
    body: &[Stmt],
    staged: bool,
) -> Result<Elements, SimError> {
    let n = a.len();
    let (da, db) = (a.dtype(), b.dtype());
    let mut bl = SdfgBuilder::new("elementwise");
    bl.symbol("N")
        .array("a", da, "N")
        .array("b", db, "N")
        .array("o", out, "N");
    let (sa, sb) = if staged {
        bl.transient("ta", da, "N").transient("tb", db, "N");
        bl.state("stage", |s| {
            let (a, ta, b, tb) = (s.access("a"), s.access("ta"), s.access("b"), s.access("tb"));
            s.edge(a, None, ta, None, "a");
            s.edge(b, None, tb, None, "b");
        });
        ("ta", "tb")
    } else {
        ("a", "b")
    };
    let body = body.to_vec();
    bl.state("compute", move |s| {
        let (xa, xb, o) = (s.access(sa), s.access(sb), s.access("o"));
        let (entry, exit) = s.map("each", "i = 0:N", Schedule::Sequential);
        let t = s.tasklet(
            "op",
            vec![sc("x", da), sc("y", db)],
            vec![sc("z", out)],
            body,
        );
        s.path(&[xa, entry, t], None, Some("x"), &*format!("{sa}[i]"));
        s.path(&[xb, entry, t], None, Some("y"), &*format!("{sb}[i]"));
        s.path(&[t, exit, o], Some("z"), None, "o[i]");
    });
    let sdfg = build(bl);
    let args = Arguments::default()
        .symbol("N", n as i64)
        .array("a", ArrayValue::new(vec![n], a.clone()))
        .array("b", ArrayValue::new(vec![n], b.clone()))
        .array("o", ArrayValue::zeros(out, vec![n]));
    run(&sdfg, &args).map(|r| r.outputs["o"].elements.clone())
}

/// `z = body(x, y)` on float64 arrays.
fn f64_op(a: &[f64], b: &[f64], body: Expr) -> Vec<f64> {
    match elementwise(
        Elements::F64(a.to_vec()),
        Elements::F64(b.to_vec()),
        F64,
        vec![assign("z", body)],
    ) {
        Elements::F64(v) => v,
        other => panic!("{other:?}"),
    }
}

/// An SDFG with one state copying between `x` (shape `xs`) and `y` (shape
/// `ys`) along one edge carrying `m`.
fn copy_sdfg(xs: &str, ys: &str, m: Memlet) -> Sdfg {
    let mut bl = b("copy");
    bl.array("x", F64, xs).array("y", F64, ys);
    bl.state("copy", move |s| {
        let (x, y) = (s.access("x"), s.access("y"));
        s.edge(x, None, y, None, m);
    });
    build(bl)
}

fn memlet(data: &str, subset: &str) -> Memlet {
    Memlet::parse(data, subset).unwrap()
}

fn subset(text: &str) -> Subset {
    Subset::parse(text).unwrap()
}

fn iota(n: usize) -> Vec<f64> {
    (0..n).map(|i| i as f64).collect()
}

fn run_copy(m: Memlet, x: ArrayValue, y: ArrayValue) -> Vec<f64> {
    let shape = |a: &ArrayValue| {
        a.shape
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let sdfg = copy_sdfg(&shape(&x), &shape(&y), m);
    let args = Arguments::default().array("x", x).array("y", y);
    f64s(&run_ok(&sdfg, &args), "y")
}

// ---------------------------------------------------------------------------
// Access nodes: copies

#[test]
fn access_node_copy_of_a_whole_array() {
    let y = run_copy(
        memlet("x", "0:4"),
        ArrayValue::f64(vec![4], vec![1.5, -2.0, 3.25, 4.0]),
        ArrayValue::f64(vec![4], vec![0.0; 4]),
    );
    assert_eq!(y, vec![1.5, -2.0, 3.25, 4.0]);
}

#[test]
fn access_node_copy_of_a_partial_subset_leaves_the_rest() {
    let y = run_copy(
        memlet("x", "2:5"),
        ArrayValue::f64(vec![6], iota(6)),
        ArrayValue::f64(vec![6], vec![-1.0; 6]),
    );
    assert_eq!(y, vec![-1.0, -1.0, 2.0, 3.0, 4.0, -1.0]);
}

#[test]
fn access_node_copy_with_other_subset_in_either_direction() {
    // Memlet on the source, other subset in the destination's coordinates.
    let y = run_copy(
        memlet("x", "1:3").with_other_subset(subset("3:5")),
        ArrayValue::f64(vec![4], vec![10.0, 11.0, 12.0, 13.0]),
        ArrayValue::f64(vec![6], vec![0.0; 6]),
    );
    assert_eq!(y, vec![0.0, 0.0, 0.0, 11.0, 12.0, 0.0]);
    // Memlet on the destination, other subset in the source's coordinates.
    let y = run_copy(
        memlet("y", "0:2").with_other_subset(subset("2:4")),
        ArrayValue::f64(vec![4], vec![10.0, 11.0, 12.0, 13.0]),
        ArrayValue::f64(vec![6], vec![0.0; 6]),
    );
    assert_eq!(y, vec![12.0, 13.0, 0.0, 0.0, 0.0, 0.0]);
    // A 2-D block moved to another place of another matrix.
    let x: Vec<f64> = iota(12); // 3 x 4
    let y = run_copy(
        memlet("x", "1:3, 0:2").with_other_subset(subset("0:2, 1:3")),
        ArrayValue::f64(vec![3, 4], x),
        ArrayValue::f64(vec![2, 3], vec![0.0; 6]),
    );
    // x[1, 0:2] = 4, 5; x[2, 0:2] = 8, 9.
    assert_eq!(y, vec![0.0, 4.0, 5.0, 0.0, 8.0, 9.0]);
}

#[test]
fn access_node_copy_of_a_row_into_a_vector_of_lower_rank() {
    // Ranks differ and there is no other subset: the whole destination.
    let y = run_copy(
        memlet("x", "1, 0:3"),
        ArrayValue::f64(vec![2, 3], iota(6)),
        ArrayValue::f64(vec![3], vec![0.0; 3]),
    );
    assert_eq!(y, vec![3.0, 4.0, 5.0]);
    // A column, into a vector.
    let y = run_copy(
        memlet("x", "0:2, 2"),
        ArrayValue::f64(vec![2, 3], iota(6)),
        ArrayValue::f64(vec![2], vec![0.0; 2]),
    );
    assert_eq!(y, vec![2.0, 5.0]);
}

#[test]
fn access_node_copy_with_strided_and_reversed_subsets() {
    let x = ArrayValue::f64(vec![8], iota(8));
    // Every second element.
    let y = run_copy(
        memlet("x", "0:8:2").with_other_subset(subset("0:4")),
        x.clone(),
        ArrayValue::f64(vec![4], vec![0.0; 4]),
    );
    assert_eq!(y, vec![0.0, 2.0, 4.0, 6.0]);
    // Every third element from 1: 1, 4, 7.
    let y = run_copy(
        memlet("x", "1:8:3").with_other_subset(subset("0:3")),
        x.clone(),
        ArrayValue::f64(vec![3], vec![0.0; 3]),
    );
    assert_eq!(y, vec![1.0, 4.0, 7.0]);
    // Reversed: x[7:0:-3] is 7, 4, 1 (Python slice semantics).
    let y = run_copy(
        memlet("x", "7:0:-3").with_other_subset(subset("0:3")),
        x.clone(),
        ArrayValue::f64(vec![3], vec![0.0; 3]),
    );
    assert_eq!(y, vec![7.0, 4.0, 1.0]);
    // Reversed with a step that does not divide the distance: x[6:1:-2] is
    // 6, 4, 2 (the last index reached, 2, is above the stop 1).
    let y = run_copy(
        memlet("x", "6:1:-2").with_other_subset(subset("0:3")),
        x.clone(),
        ArrayValue::f64(vec![3], vec![0.0; 3]),
    );
    assert_eq!(y, vec![6.0, 4.0, 2.0]);
    // x[6:0:-4] is 6, 2: the inclusive end 1 is not reached by the step.
    let y = run_copy(
        memlet("x", "6:0:-4").with_other_subset(subset("0:2")),
        x.clone(),
        ArrayValue::f64(vec![2], vec![0.0; 2]),
    );
    assert_eq!(y, vec![6.0, 2.0]);
    // x[4:0:-3] is 4, 1 only.
    let y = run_copy(
        memlet("x", "4:0:-3").with_other_subset(subset("0:2")),
        x,
        ArrayValue::f64(vec![2], vec![0.0; 2]),
    );
    assert_eq!(y, vec![4.0, 1.0]);
}

#[test]
fn wcr_on_copies_combines_with_the_destination() {
    let x = ArrayValue::f64(vec![4], vec![1.0, -2.0, 30.0, 0.5]);
    let y0 = ArrayValue::f64(vec![4], vec![10.0, 10.0, 10.0, 10.0]);
    let sum = run_copy(memlet("x", "0:4").with_wcr(Wcr::Sum), x.clone(), y0.clone());
    assert_eq!(sum, vec![11.0, 8.0, 40.0, 10.5]);
    let prod = run_copy(
        memlet("x", "0:4").with_wcr(Wcr::Product),
        x.clone(),
        y0.clone(),
    );
    assert_eq!(prod, vec![10.0, -20.0, 300.0, 5.0]);
    let min = run_copy(memlet("x", "0:4").with_wcr(Wcr::Min), x.clone(), y0.clone());
    assert_eq!(min, vec![1.0, -2.0, 10.0, 0.5]);
    let max = run_copy(memlet("x", "0:4").with_wcr(Wcr::Max), x.clone(), y0.clone());
    assert_eq!(max, vec![10.0, 10.0, 30.0, 10.0]);
    // With other subsets: x[0:2] summed into y[2:4].
    let part = run_copy(
        memlet("x", "0:2")
            .with_other_subset(subset("2:4"))
            .with_wcr(Wcr::Sum),
        x,
        y0,
    );
    assert_eq!(part, vec![10.0, 10.0, 11.0, 8.0]);
}

// ---------------------------------------------------------------------------
// Maps

#[test]
fn map_1d_over_a_symbolic_range() {
    let mut bl = b("map1");
    bl.symbol("N").array("x", F64, "N").array("y", F64, "N");
    bl.state("s", |s| {
        let (x, y) = (s.access("x"), s.access("y"));
        let (en, ex) = s.map("m", "i = 0:N", Schedule::Default);
        let t = s.tasklet(
            "t",
            vec![fc("a")],
            vec![fc("o")],
            vec![assign("o", v("a") * v("a") + Expr::f64(1.0))],
        );
        s.path(&[x, en, t], None, Some("a"), "x[i]");
        s.path(&[t, ex, y], Some("o"), None, "y[i]");
    });
    let sdfg = build(bl);
    let x = vec![0.5, -3.0, 2.0, 7.0, 1.25];
    let args = Arguments::default()
        .symbol("N", 5)
        .array("x", ArrayValue::f64(vec![5], x.clone()))
        .array("y", ArrayValue::f64(vec![5], vec![0.0; 5]));
    let expected: Vec<f64> = x.iter().map(|a| a * a + 1.0).collect();
    assert_eq!(f64s(&run_ok(&sdfg, &args), "y"), expected);
}

#[test]
fn map_2d_transposes_a_matrix() {
    let mut bl = b("map2");
    bl.symbol("N")
        .symbol("M")
        .array("A", F64, "N, M")
        .array("B", F64, "M, N");
    bl.state("s", |s| {
        let (a, bb) = (s.access("A"), s.access("B"));
        let (en, ex) = s.map("m", "i = 0:N, j = 0:M", Schedule::Default);
        let t = s.tasklet("t", vec![fc("a")], vec![fc("o")], vec![assign("o", v("a"))]);
        s.path(&[a, en, t], None, Some("a"), "A[i, j]");
        s.path(&[t, ex, bb], Some("o"), None, "B[j, i]");
    });
    let sdfg = build(bl);
    let (n, m) = (3, 4);
    let a: Vec<f64> = (0..n * m).map(|k| k as f64 * 1.5 - 2.0).collect();
    let args = Arguments::default()
        .symbol("N", n as i64)
        .symbol("M", m as i64)
        .array("A", ArrayValue::f64(vec![n, m], a.clone()))
        .array("B", ArrayValue::f64(vec![m, n], vec![0.0; n * m]));
    let mut expected = vec![0.0; n * m];
    for i in 0..n {
        for j in 0..m {
            expected[j * n + i] = a[i * m + j];
        }
    }
    assert_eq!(f64s(&run_ok(&sdfg, &args), "B"), expected);
}

#[test]
fn map_3d_tasklet_reads_map_parameters_and_sdfg_symbols() {
    let mut bl = b("map3");
    bl.symbol("N").array("T", I64, "N, 3, 2");
    bl.state("s", |s| {
        let t_out = s.access("T");
        let (en, ex) = s.map("m", "i = 0:N, j = 0:3, k = 0:2", Schedule::Default);
        let t = s.tasklet(
            "t",
            vec![],
            vec![sc("o", I64)],
            vec![assign(
                "o",
                v("i") * Expr::i64(100)
                    + v("j") * Expr::i64(10)
                    + v("k")
                    + v("N") * Expr::i64(1000),
            )],
        );
        s.empty_edge(en, t);
        s.path(&[t, ex, t_out], Some("o"), None, "T[i, j, k]");
    });
    let sdfg = build(bl);
    let n = 2;
    let args = Arguments::default()
        .symbol("N", n)
        .array("T", ArrayValue::i64(vec![2, 3, 2], vec![0; 12]));
    let mut expected = Vec::new();
    for i in 0..n {
        for j in 0..3 {
            for k in 0..2 {
                expected.push(i * 100 + j * 10 + k + n * 1000);
            }
        }
    }
    assert_eq!(i64s(&run_ok(&sdfg, &args), "T"), expected);
}

/// `y[i] = i` over the map range `range`, and `last = i` (the last iteration
/// run wins, which shows the order).
fn indices_of_map(range: &str, n: usize) -> (Vec<i64>, i64) {
    let mut bl = b("ranges");
    bl.symbol("N").array("y", I64, "N").scalar("last", I64);
    let range = range.to_owned();
    bl.state("s", move |s| {
        let (y, last) = (s.access("y"), s.access("last"));
        let (en, ex) = s.map("m", &format!("i = {range}"), Schedule::Default);
        let t = s.tasklet(
            "t",
            vec![],
            vec![sc("o", I64), sc("l", I64)],
            vec![assign("o", v("i")), assign("l", v("i"))],
        );
        s.empty_edge(en, t);
        s.path(&[t, ex, y], Some("o"), None, "y[i]");
        s.path(&[t, ex, last], Some("l"), None, "last[0]");
    });
    let sdfg = build(bl);
    let args = Arguments::default()
        .symbol("N", n as i64)
        .array("y", ArrayValue::i64(vec![n], vec![-1; n]))
        .array("last", scalar_i64(-1));
    let r = run_ok(&sdfg, &args);
    (i64s(&r, "y"), i64s(&r, "last")[0])
}

#[test]
fn map_with_strided_and_negative_step_ranges() {
    assert_eq!(
        indices_of_map("1:N:3", 8),
        (vec![-1, 1, -1, -1, 4, -1, -1, 7], 7)
    );
    assert_eq!(
        indices_of_map("N - 1:0:-3", 8),
        (vec![-1, 1, -1, -1, 4, -1, -1, 7], 1)
    );
    // A negative step that does not divide the distance: 6, 4, 2.
    assert_eq!(
        indices_of_map("6:1:-2", 8),
        (vec![-1, -1, 2, -1, 4, -1, 6, -1], 2)
    );
    // A step of -4 from 7 with stop 0: 7, 3.
    assert_eq!(
        indices_of_map("N - 1:0:-4", 8),
        (vec![-1, -1, -1, 3, -1, -1, -1, 7], 3)
    );
    // The whole range backwards, down to 0.
    assert_eq!(indices_of_map("N - 1:-1:-1", 4), (vec![0, 1, 2, 3], 0));
}

#[test]
fn empty_map_ranges_do_nothing() {
    assert_eq!(indices_of_map("0:N", 0), (vec![], -1));
    assert_eq!(indices_of_map("3:3", 4), (vec![-1; 4], -1));
    // A 2-D map with one empty dimension, whose body would fault if it ran
    // (it reads a transient nothing wrote).
    let mut bl = b("empty2");
    bl.symbol("N")
        .symbol("M")
        .array("y", F64, "N")
        .transient("t", F64, "N");
    bl.state("s", |s| {
        let (t, y) = (s.access("t"), s.access("y"));
        let (en, ex) = s.map("m", "i = 0:N, j = 0:M", Schedule::Default);
        let k = s.tasklet("k", vec![fc("a")], vec![fc("o")], vec![assign("o", v("a"))]);
        s.path(&[t, en, k], None, Some("a"), "t[i]");
        s.path(&[k, ex, y], Some("o"), None, "y[i]");
    });
    let sdfg = build(bl);
    let args = |m: i64| {
        Arguments::default()
            .symbol("N", 3)
            .symbol("M", m)
            .array("y", ArrayValue::f64(vec![3], vec![7.0; 3]))
    };
    assert_eq!(f64s(&run_ok(&sdfg, &args(0)), "y"), vec![7.0; 3]);
    // The same map with a non-empty range does run, and faults.
    assert!(matches!(
        run(&sdfg, &args(1)),
        Err(SimError::Uninitialized { .. })
    ));
}

#[test]
fn nested_maps_with_a_triangular_inner_range() {
    let mut bl = b("tri");
    bl.symbol("N")
        .array("A", F64, "N, N")
        .array("L", F64, "N, N")
        .scalar("count", I64);
    bl.state("s", |s| {
        let (a, l, count) = (s.access("A"), s.access("L"), s.access("count"));
        let (oe, ox) = s.map("rows", "i = 0:N", Schedule::Default);
        let (ie, ix) = s.map("cols", "j = 0:i + 1", Schedule::Sequential);
        let t = s.tasklet(
            "t",
            vec![fc("a")],
            vec![fc("o"), sc("c", I64)],
            vec![
                assign("o", v("a") * Expr::f64(2.0)),
                assign("c", Expr::i64(1)),
            ],
        );
        let read = s.path(&[a, oe, ie, t], None, Some("a"), "A[i, j]");
        let write = s.path(&[t, ix, ox, l], Some("o"), None, "L[i, j]");
        let wcr = s.path(&[t, ix, ox, count], Some("c"), None, ("count[0]", Wcr::Sum));
        // The builder's propagation gives the outermost edges the volume
        // `N*i + N`, which names the inner parameter `i` (the subsets are
        // right); the validator rightly rejects it. Use the bound N*N.
        for e in [read[0], write[2], wcr[2]] {
            let m = s.state_mut().graph[e].memlet.as_mut().unwrap();
            m.volume = SymExpr::parse("N * N").unwrap();
            m.dynamic = true;
        }
    });
    let sdfg = build(bl);
    let n = 4;
    let a: Vec<f64> = (0..n * n).map(|k| k as f64 + 1.0).collect();
    let args = Arguments::default()
        .symbol("N", n as i64)
        .array("A", ArrayValue::f64(vec![n, n], a.clone()))
        .array("L", ArrayValue::f64(vec![n, n], vec![-1.0; n * n]))
        .array("count", scalar_i64(0));
    let r = run_ok(&sdfg, &args);
    let mut expected = vec![-1.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            expected[i * n + j] = 2.0 * a[i * n + j];
        }
    }
    assert_eq!(f64s(&r, "L"), expected);
    assert_eq!(i64s(&r, "count"), vec![10]); // 1 + 2 + 3 + 4
}

// ---------------------------------------------------------------------------
// Tasklets

#[test]
fn tasklet_with_multiple_inputs_and_outputs() {
    let mut bl = b("multi");
    bl.symbol("N")
        .array("x", F64, "N")
        .array("y", F64, "N")
        .array("s", F64, "N")
        .array("d", F64, "N")
        .array("p", F64, "N");
    bl.state("s", |s| {
        let (x, y) = (s.access("x"), s.access("y"));
        let (so, d, p) = (s.access("s"), s.access("d"), s.access("p"));
        let (en, ex) = s.map("m", "i = 0:N", Schedule::Default);
        let t = s.tasklet(
            "t",
            vec![fc("a"), fc("b")],
            vec![fc("sum"), fc("diff"), fc("prod")],
            vec![
                assign("sum", v("a") + v("b")),
                assign("diff", v("a") - v("b")),
                assign("prod", v("a") * v("b")),
            ],
        );
        s.path(&[x, en, t], None, Some("a"), "x[i]");
        s.path(&[y, en, t], None, Some("b"), "y[i]");
        s.path(&[t, ex, so], Some("sum"), None, "s[i]");
        s.path(&[t, ex, d], Some("diff"), None, "d[i]");
        s.path(&[t, ex, p], Some("prod"), None, "p[i]");
    });
    let sdfg = build(bl);
    let (x, y) = (vec![1.0, 2.5, -4.0], vec![0.5, 4.0, -0.25]);
    let args = Arguments::default()
        .symbol("N", 3)
        .array("x", ArrayValue::f64(vec![3], x))
        .array("y", ArrayValue::f64(vec![3], y))
        .array("s", ArrayValue::f64(vec![3], vec![0.0; 3]))
        .array("d", ArrayValue::f64(vec![3], vec![0.0; 3]))
        .array("p", ArrayValue::f64(vec![3], vec![0.0; 3]));
    let r = run_ok(&sdfg, &args);
    assert_eq!(f64s(&r, "s"), vec![1.5, 6.5, -4.25]);
    assert_eq!(f64s(&r, "d"), vec![0.5, -1.5, -3.75]);
    assert_eq!(f64s(&r, "p"), vec![0.5, 10.0, 1.0]);
}

#[test]
fn tasklet_locals_if_select_and_casts() {
    // let t: int64 = int64(x)            (truncation toward zero)
    // if t < 0: if t < -5: z = -100 else: z = f64(t) * 10
    // else: z = x > 2.5 ? f64(t) + 0.5 : -x
    let body = vec![
        Stmt::Let {
            name: "t".to_owned(),
            dtype: I64,
            value: Expr::cast(I64, v("x")),
        },
        Stmt::If {
            cond: bin(BinaryOp::Lt, v("t"), Expr::i64(0)),
            then: vec![Stmt::If {
                cond: bin(BinaryOp::Lt, v("t"), Expr::i64(-5)),
                then: vec![assign("z", Expr::f64(-100.0))],
                otherwise: vec![assign("z", Expr::cast(F64, v("t")) * Expr::f64(10.0))],
            }],
            otherwise: vec![
                Stmt::Let {
                    name: "big".to_owned(),
                    dtype: DType::Bool,
                    value: bin(BinaryOp::Gt, v("x"), Expr::f64(2.5)),
                },
                assign(
                    "z",
                    Expr::select(v("big"), Expr::cast(F64, v("t")) + Expr::f64(0.5), -v("x")),
                ),
            ],
        },
    ];
    let x = vec![-7.9, -2.7, -0.5, 0.0, 2.4, 3.99, 10.0];
    let out = match elementwise(
        Elements::F64(x.clone()),
        Elements::F64(x.clone()),
        F64,
        body,
    ) {
        Elements::F64(v) => v,
        other => panic!("{other:?}"),
    };
    let expected: Vec<f64> = x
        .iter()
        .map(|&x| {
            let t = x.trunc() as i64;
            if t < 0 {
                if t < -5 { -100.0 } else { t as f64 * 10.0 }
            } else if x > 2.5 {
                t as f64 + 0.5
            } else {
                -x
            }
        })
        .collect();
    assert_eq!(out, expected);
    assert_eq!(out, vec![-100.0, -20.0, 0.5, -0.0, -2.4, 3.5, 10.5]);
}

// ---------------------------------------------------------------------------
// Nested SDFGs

/// `dst[i] = src[M - 1 - i]`.
fn reverse_sdfg() -> Sdfg {
    let mut bl = b("rev");
    bl.symbol("M").array("src", F64, "M").array("dst", F64, "M");
    bl.state("reverse", |s| {
        let (src, dst) = (s.access("src"), s.access("dst"));
        let (en, ex) = s.map("r", "i = 0:M", Schedule::Default);
        let t = s.tasklet("c", vec![fc("a")], vec![fc("o")], vec![assign("o", v("a"))]);
        s.path(&[src, en, t], None, Some("a"), "src[M - 1 - i]");
        s.path(&[t, ex, dst], Some("o"), None, "dst[i]");
    });
    build(bl)
}

#[test]
fn nested_flip_example_with_n_5() {
    let n = 5;
    let y0 = vec![1.0, 2.0, 3.0, 4.0, 5.0];
    let a: Vec<f64> = (0..n * n).map(|k| (k as f64) * 0.5 - 3.0).collect();
    let row_sum = |k: usize| -> f64 { (0..n).map(|j| a[k * n + j]).sum() };
    // y[k] += sum(A[k, :]) for k = 1..N-1, through the view `row`.
    let mut y = y0.clone();
    for k in 1..n {
        y[k] += (0..n).fold(0.0, |acc, j| acc + a[k * n + j]);
    }
    assert_close(
        &y,
        &[
            1.0,
            2.0 + row_sum(1),
            3.0 + row_sum(2),
            4.0 + row_sum(3),
            5.0 + row_sum(4),
        ],
    );
    let args = |z: bool| {
        let args = Arguments::default()
            .symbol("N", n as i64)
            .array("y", ArrayValue::f64(vec![n], y0.clone()))
            .array("A", ArrayValue::f64(vec![n, n], a.clone()));
        if z {
            args.array("z", ArrayValue::f64(vec![n], vec![-9.0; n]))
        } else {
            args
        }
    };
    let sdfg = sdfg_ir::examples::nested_flip().unwrap();
    let r = run_ok(&sdfg, &args(false));
    assert_eq!(f64s(&r, "y"), y);
    assert_eq!(f64s(&r, "A"), a);
    // The same program with `z` made an argument shows the nested SDFG's
    // work: the last iteration (k = 4) flipped y[0:4] as it was then, with
    // y[1..3] already updated.
    let mut sdfg = sdfg;
    sdfg.containers.get_mut("z").unwrap().transient = false;
    sdfg.arguments.push("z".to_owned());
    let r = run_ok(&sdfg, &args(true));
    assert_eq!(f64s(&r, "z"), vec![y[3], y[2], y[1], y[0], -9.0]);
}

#[test]
fn nested_sdfg_symbol_mapped_to_an_expression_of_the_loop_variable() {
    // for k in range(N): out[k, 0:k+1] = rev(y[0:k+1]) with M = k + 1.
    let inner = reverse_sdfg();
    let mut bl = b("outer");
    bl.symbol("N")
        .array("y", F64, "N")
        .array("out", F64, "N, N");
    bl.for_loop("rows", "k", "0", "N", 1, move |bl| {
        bl.state("call", move |s| {
            let (y, out) = (s.access("y"), s.access("out"));
            let n = s.nested("rev", inner, &["src"], &["dst"], &[("M", "k + 1")]);
            s.edge(y, None, n, Some("src"), "y[0:k + 1]");
            s.edge(n, Some("dst"), out, None, "out[k, 0:k + 1]");
        });
    });
    let sdfg = build(bl);
    let n = 4;
    let y = vec![1.0, 2.0, 3.0, 4.0];
    let args = Arguments::default()
        .symbol("N", n as i64)
        .array("y", ArrayValue::f64(vec![n], y.clone()))
        .array("out", ArrayValue::f64(vec![n, n], vec![0.0; n * n]));
    let r = run_ok(&sdfg, &args);
    #[rustfmt::skip]
    let expected = vec![
        1.0, 0.0, 0.0, 0.0,
        2.0, 1.0, 0.0, 0.0,
        3.0, 2.0, 1.0, 0.0,
        4.0, 3.0, 2.0, 1.0,
    ];
    assert_eq!(f64s(&r, "out"), expected);
}

/// `dst[i] = 2 * src[i] + i` over `L` elements.
fn affine_sdfg() -> Sdfg {
    let mut bl = b("affine");
    bl.symbol("L").array("src", F64, "L").array("dst", F64, "L");
    bl.state("apply", |s| {
        let (src, dst) = (s.access("src"), s.access("dst"));
        let (en, ex) = s.map("a", "i = 0:L", Schedule::Default);
        let t = s.tasklet(
            "f",
            vec![fc("a")],
            vec![fc("o")],
            vec![assign(
                "o",
                Expr::f64(2.0) * v("a") + Expr::cast(F64, v("i")),
            )],
        );
        s.path(&[src, en, t], None, Some("a"), "src[i]");
        s.path(&[t, ex, dst], Some("o"), None, "dst[i]");
    });
    build(bl)
}

#[test]
fn nested_sdfg_bound_to_a_column_and_to_a_row_of_a_matrix() {
    let mut bl = b("cols_rows");
    bl.symbol("N")
        .symbol("M")
        .array("A", F64, "N, M")
        .array("B", F64, "N, M")
        .array("C", F64, "N, M");
    bl.state("columns", |s| {
        let (a, bb) = (s.access("A"), s.access("B"));
        let (en, ex) = s.map("cols", "j = 0:M", Schedule::Default);
        let n = s.nested("col", affine_sdfg(), &["src"], &["dst"], &[("L", "N")]);
        s.path(&[a, en, n], None, Some("src"), "A[0:N, j]");
        s.path(&[n, ex, bb], Some("dst"), None, "B[0:N, j]");
    });
    bl.state("rows", |s| {
        let (a, c) = (s.access("A"), s.access("C"));
        let (en, ex) = s.map("rows", "i = 0:N", Schedule::Default);
        let n = s.nested("row", affine_sdfg(), &["src"], &["dst"], &[("L", "M")]);
        s.path(&[a, en, n], None, Some("src"), "A[i, 0:M]");
        s.path(&[n, ex, c], Some("dst"), None, "C[i, 0:M]");
    });
    let sdfg = build(bl);
    let (n, m) = (3, 4);
    let a: Vec<f64> = (0..n * m).map(|k| k as f64 * 10.0).collect();
    let args = Arguments::default()
        .symbol("N", n as i64)
        .symbol("M", m as i64)
        .array("A", ArrayValue::f64(vec![n, m], a.clone()))
        .array("B", ArrayValue::f64(vec![n, m], vec![0.0; n * m]))
        .array("C", ArrayValue::f64(vec![n, m], vec![0.0; n * m]));
    let r = run_ok(&sdfg, &args);
    let mut bx = vec![0.0; n * m];
    let mut cx = vec![0.0; n * m];
    for i in 0..n {
        for j in 0..m {
            bx[i * m + j] = 2.0 * a[i * m + j] + i as f64; // inner index runs down the column
            cx[i * m + j] = 2.0 * a[i * m + j] + j as f64; // inner index runs along the row
        }
    }
    assert_eq!(f64s(&r, "B"), bx);
    assert_eq!(f64s(&r, "C"), cx);
}

#[test]
fn return_in_a_nested_sdfg_leaves_only_the_nested_sdfg() {
    // Inner: for i in range(10): acc[0] += 1; if i == 2: return
    //        acc[0] = -1000 (never reached)
    let mut ib = b("inner");
    ib.array("acc", F64, "1");
    ib.for_loop("count", "i", "0", "10", 1, |bl| {
        bl.state("inc", |s| {
            let (a_in, a_out) = (s.access("acc"), s.access("acc"));
            let t = s.tasklet(
                "t",
                vec![fc("a")],
                vec![fc("o")],
                vec![assign("o", v("a") + Expr::f64(1.0))],
            );
            s.edge(a_in, None, t, Some("a"), "acc[0]");
            s.edge(t, Some("o"), a_out, None, "acc[0]");
        });
        bl.if_else(
            "stop",
            "i == 2",
            |bl| {
                bl.return_("leave");
            },
            None,
        );
    });
    ib.state("unreachable", |s| {
        let a = s.access("acc");
        let t = s.tasklet(
            "t",
            vec![],
            vec![fc("o")],
            vec![assign("o", Expr::f64(-1000.0))],
        );
        s.edge(t, Some("o"), a, None, "acc[0]");
    });
    let inner = build(ib);
    let mut bl = b("outer");
    bl.array("x", F64, "4").scalar("flag", F64);
    bl.state("call", move |s| {
        let (x_in, x_out) = (s.access("x"), s.access("x"));
        let n = s.nested("inner", inner, &["acc"], &["acc"], &[]);
        s.edge(x_in, None, n, Some("acc"), "x[2:3]");
        s.edge(n, Some("acc"), x_out, None, "x[2:3]");
    });
    bl.state("after", |s| {
        let f = s.access("flag");
        let t = s.tasklet(
            "t",
            vec![],
            vec![fc("o")],
            vec![assign("o", Expr::f64(7.0))],
        );
        s.edge(t, Some("o"), f, None, "flag[0]");
    });
    let sdfg = build(bl);
    let args = Arguments::default()
        .array("x", ArrayValue::f64(vec![4], vec![0.0, 10.0, 20.0, 30.0]))
        .array("flag", scalar_f64(0.0));
    let r = run_ok(&sdfg, &args);
    assert_eq!(f64s(&r, "x"), vec![0.0, 10.0, 23.0, 30.0]);
    assert_eq!(f64s(&r, "flag"), vec![7.0]);
}

// ---------------------------------------------------------------------------
// Library nodes

/// One state of the `linear_algebra` example, with every container made an
/// argument so that each operation's result is observable.
fn linear_algebra_state(label: &str) -> Sdfg {
    let mut sdfg = sdfg_ir::examples::linear_algebra().unwrap();
    sdfg.body.blocks.retain(|b| b.label == label);
    assert_eq!(sdfg.body.blocks.len(), 1, "no state `{label}`");
    let Sdfg {
        containers,
        arguments,
        ..
    } = &mut sdfg;
    for (name, desc) in containers.iter_mut() {
        if desc.transient {
            desc.transient = false;
            arguments.push(name.clone());
        }
    }
    sdfg
}

/// Zeros for every container of the `linear_algebra` example.
fn linear_algebra_args(n: usize, k: usize) -> Arguments {
    let z = |shape: Vec<usize>| ArrayValue::zeros(F64, shape);
    let mut args = Arguments::default()
        .symbol("N", n as i64)
        .symbol("K", k as i64)
        .array("r", scalar_f64(0.0));
    for name in ["A", "B", "C", "P", "At", "L"] {
        args = args.array(name, z(vec![n, n]));
    }
    for name in ["x", "y", "colsum", "sol", "Ax"] {
        args = args.array(name, z(vec![n]));
    }
    args.array("T3", z(vec![k, n, n]))
        .array("batched", z(vec![k, n, n]))
        .array("T3p", z(vec![n, k, n]))
}

fn mat(n: usize, m: usize, f: impl Fn(usize, usize) -> f64) -> Vec<f64> {
    (0..n * m).map(|k| f(k / m, k % m)).collect()
}

/// Plain triple-loop product of an n x k and a k x m matrix.
fn matmul_ref(a: &[f64], b: &[f64], n: usize, k: usize, m: usize) -> Vec<f64> {
    let mut c = vec![0.0; n * m];
    for i in 0..n {
        for j in 0..m {
            let mut s = 0.0;
            for p in 0..k {
                s += a[i * k + p] * b[p * m + j];
            }
            c[i * m + j] = s;
        }
    }
    c
}

#[test]
fn library_matmul_from_the_linear_algebra_example() {
    let n = 3;
    let a = mat(n, n, |i, j| (i * 3 + j) as f64 - 4.0);
    let bm = mat(n, n, |i, j| (i as f64) * 0.5 + (j as f64) * 2.0);
    let args = linear_algebra_args(n, 1)
        .array("A", ArrayValue::f64(vec![n, n], a.clone()))
        .array("B", ArrayValue::f64(vec![n, n], bm.clone()));
    let r = run_ok(&linear_algebra_state("matmul"), &args);
    assert_eq!(f64s(&r, "P"), matmul_ref(&a, &bm, n, n, n));
    // Hand-worked entry: P[0][0] = -4*0 + -3*0.5 + -2*1 = -3.5.
    assert_eq!(f64s(&r, "P")[0], -3.5);
}

#[test]
fn library_gemm_with_alpha_beta_and_transposed_b_from_the_example() {
    // C = 1.5 * A @ B^T + 1.2 * C
    let n = 2;
    let args = linear_algebra_args(n, 1)
        .array("A", ArrayValue::f64(vec![2, 2], vec![4.0, 2.0, 2.0, 3.0]))
        .array("B", ArrayValue::f64(vec![2, 2], vec![1.0, 2.0, 3.0, 4.0]))
        .array("C", ArrayValue::f64(vec![2, 2], vec![1.0, 0.0, 0.0, 1.0]));
    let r = run_ok(&linear_algebra_state("gemm"), &args);
    // A @ B^T = [[8, 20], [8, 18]].
    assert_close(&f64s(&r, "C"), &[12.0 + 1.2, 30.0, 12.0, 27.0 + 1.2]);
}

#[test]
fn library_gemm_with_transposed_a_and_zero_beta() {
    let mut bl = b("gemm_ta");
    bl.array("A", F64, "2, 3")
        .array("B", F64, "2, 2")
        .array("C", F64, "3, 2");
    bl.state("gemm", |s| {
        let (a, bb, c) = (s.access("A"), s.access("B"), s.access("C"));
        let g = s.library(
            "gemm",
            LibraryOp::Gemm {
                alpha: Literal::f64(2.0),
                beta: Literal::f64(0.0),
                trans_a: true,
                trans_b: false,
                alpha_input: false,
                beta_input: false,
            },
        );
        s.edge(a, None, g, Some("_a"), "A");
        s.edge(bb, None, g, Some("_b"), "B");
        s.edge(g, Some("_c"), c, None, "C");
    });
    let sdfg = build(bl);
    let a = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let bm = vec![1.0, -1.0, 0.5, 2.0];
    let args = Arguments::default()
        .array("A", ArrayValue::f64(vec![2, 3], a))
        .array("B", ArrayValue::f64(vec![2, 2], bm))
        .array("C", ArrayValue::f64(vec![3, 2], vec![99.0; 6]));
    // A^T = [[1, 4], [2, 5], [3, 6]]; A^T @ B = [[3, 7], [4.5, 8], [6, 9]].
    let r = run_ok(&sdfg, &args);
    assert_eq!(f64s(&r, "C"), vec![6.0, 14.0, 9.0, 16.0, 12.0, 18.0]);
}

#[test]
fn library_gemv_transposed_from_the_example_and_with_beta() {
    let args = linear_algebra_args(2, 1)
        .array("A", ArrayValue::f64(vec![2, 2], vec![1.0, 2.0, 3.0, 4.0]))
        .array("x", ArrayValue::f64(vec![2], vec![10.0, 100.0]));
    let r = run_ok(&linear_algebra_state("gemv"), &args);
    // A^T x = [1*10 + 3*100, 2*10 + 4*100].
    assert_eq!(f64s(&r, "Ax"), vec![310.0, 420.0]);

    // y = 0.5 * A @ x + 2 * y
    let mut bl = b("gemv_beta");
    bl.array("A", F64, "2, 3")
        .array("x", F64, "3")
        .array("y", F64, "2");
    bl.state("gemv", |s| {
        let (a, x, y_in, y) = (s.access("A"), s.access("x"), s.access("y"), s.access("y"));
        let g = s.library(
            "gemv",
            LibraryOp::Gemv {
                alpha: Literal::f64(0.5),
                beta: Literal::f64(2.0),
                trans_a: false,
            },
        );
        s.edge(a, None, g, Some("_a"), "A");
        s.edge(x, None, g, Some("_x"), "x");
        s.edge(y_in, None, g, Some("_y_in"), "y");
        s.edge(g, Some("_y"), y, None, "y");
    });
    let sdfg = build(bl);
    let args = Arguments::default()
        .array(
            "A",
            ArrayValue::f64(vec![2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
        )
        .array("x", ArrayValue::f64(vec![3], vec![1.0, 0.0, -1.0]))
        .array("y", ArrayValue::f64(vec![2], vec![1.0, -3.0]));
    // A x = [-2, -2]; 0.5 * [-2, -2] + 2 * [1, -3] = [1, -7].
    assert_eq!(f64s(&run_ok(&sdfg, &args), "y"), vec![1.0, -7.0]);
}

#[test]
fn library_dot_from_the_example_and_on_a_column() {
    let args = linear_algebra_args(3, 1)
        .array("x", ArrayValue::f64(vec![3], vec![1.0, 2.0, 3.0]))
        .array("y", ArrayValue::f64(vec![3], vec![4.0, -5.0, 6.0]))
        .array("r", scalar_f64(100.0));
    let r = run_ok(&linear_algebra_state("dot"), &args);
    assert_eq!(f64s(&r, "r"), vec![12.0]); // 4 - 10 + 18, replacing the old value

    // The dot product of a row slice and a column of a matrix (a strided operand).
    let mut bl = b("dot_col");
    bl.array("A", F64, "3, 3").scalar("r", F64);
    bl.state("dot", |s| {
        let (a1, a2, r) = (s.access("A"), s.access("A"), s.access("r"));
        let d = s.library("dot", LibraryOp::Dot);
        s.edge(a1, None, d, Some("_x"), "A[0, 0:3]");
        s.edge(a2, None, d, Some("_y"), "A[0:3, 2]");
        s.edge(d, Some("_result"), r, None, "r[0]");
    });
    let sdfg = build(bl);
    let a = iota(9);
    let args = Arguments::default()
        .array("A", ArrayValue::f64(vec![3, 3], a))
        .array("r", scalar_f64(0.0));
    // [0, 1, 2] . [2, 5, 8] = 0 + 5 + 16.
    assert_eq!(f64s(&run_ok(&sdfg, &args), "r"), vec![21.0]);
}

#[test]
fn library_batched_matmul_and_tensor_transpose_from_the_example() {
    let (n, k) = (2, 2);
    let t3: Vec<f64> = (0..k * n * n).map(|x| x as f64 + 1.0).collect();
    let args = linear_algebra_args(n, k).array("T3", ArrayValue::f64(vec![k, n, n], t3.clone()));
    let r = run_ok(&linear_algebra_state("batched"), &args);
    let mut expected = Vec::new();
    for b in 0..k {
        let m = &t3[b * n * n..(b + 1) * n * n];
        expected.extend(matmul_ref(m, m, n, n, n));
    }
    // First batch: [[1, 2], [3, 4]]^2 = [[7, 10], [15, 22]].
    assert_eq!(&expected[..4], &[7.0, 10.0, 15.0, 22.0]);
    assert_eq!(f64s(&r, "batched"), expected);

    let r = run_ok(&linear_algebra_state("permute"), &args);
    let mut expected = vec![0.0; n * k * n];
    for a in 0..k {
        for bb in 0..n {
            for c in 0..n {
                expected[(bb * k + a) * n + c] = t3[(a * n + bb) * n + c];
            }
        }
    }
    assert_eq!(f64s(&r, "T3p"), expected);
}

#[test]
fn library_reduce_and_transpose_from_the_example() {
    let n = 3;
    let p = mat(n, n, |i, j| (i * 10 + j) as f64);
    let args = linear_algebra_args(n, 1)
        .array("P", ArrayValue::f64(vec![n, n], p.clone()))
        .array("colsum", ArrayValue::f64(vec![n], vec![1000.0; n]))
        .array("A", ArrayValue::f64(vec![n, n], p.clone()));
    // Reduce over axis 0 with identity 0: column sums, the old contents ignored.
    let r = run_ok(&linear_algebra_state("reduce"), &args);
    assert_eq!(f64s(&r, "colsum"), vec![30.0, 33.0, 36.0]);
    let r = run_ok(&linear_algebra_state("transpose"), &args);
    assert_eq!(f64s(&r, "At"), mat(n, n, |i, j| (j * 10 + i) as f64));
}

#[test]
fn library_reduce_with_axes_identity_and_without_identity() {
    let mut bl = b("reductions");
    bl.array("A", F64, "2, 3")
        .array("rowmax", F64, "2")
        .scalar("total", F64)
        .array("colmin", F64, "3");
    bl.state("reduce", |s| {
        let a = s.access("A");
        let (rm, tot, cm) = (s.access("rowmax"), s.access("total"), s.access("colmin"));
        let r1 = s.library(
            "rowmax",
            LibraryOp::Reduce {
                op: Wcr::Max,
                axes: Some(vec![1]),
                identity: Some(Literal::f64(-100.0)),
            },
        );
        let r2 = s.library(
            "total",
            LibraryOp::Reduce {
                op: Wcr::Sum,
                axes: None,
                identity: None,
            },
        );
        let r3 = s.library(
            "colmin",
            LibraryOp::Reduce {
                op: Wcr::Min,
                axes: Some(vec![0]),
                identity: None,
            },
        );
        s.edge(a, None, r1, Some("_in"), "A");
        s.edge(a, None, r2, Some("_in"), "A");
        s.edge(a, None, r3, Some("_in"), "A");
        s.edge(r1, Some("_out"), rm, None, "rowmax");
        s.edge(r2, Some("_out"), tot, None, "total[0]");
        s.edge(r3, Some("_out"), cm, None, "colmin");
    });
    let sdfg = build(bl);
    let args = Arguments::default()
        .array(
            "A",
            ArrayValue::f64(vec![2, 3], vec![-300.0, -200.0, -500.0, 1.0, 7.0, -2.0]),
        )
        .array("rowmax", ArrayValue::f64(vec![2], vec![50.0, 50.0]))
        .array("total", scalar_f64(1000.0))
        .array(
            "colmin",
            ArrayValue::f64(vec![3], vec![0.0, -250.0, -1000.0]),
        );
    let r = run_ok(&sdfg, &args);
    // With identity -100 the first row's maximum is the identity itself, and
    // the destination's old contents do not matter.
    assert_eq!(f64s(&r, "rowmax"), vec![-100.0, 7.0]);
    // Without identity the reduction combines into the destination.
    assert_eq!(f64s(&r, "total"), vec![1000.0 - 994.0]);
    assert_eq!(f64s(&r, "colmin"), vec![-300.0, -250.0, -1000.0]);
}

#[test]
fn library_cholesky_and_solve_from_the_example() {
    // A = L L^T with L = [[2, 0, 0], [1, 3, 0], [-1, 2, 1]].
    let a = vec![4.0, 2.0, -2.0, 2.0, 10.0, 5.0, -2.0, 5.0, 6.0];
    let l = vec![2.0, 0.0, 0.0, 1.0, 3.0, 0.0, -1.0, 2.0, 1.0];
    let args = linear_algebra_args(3, 1)
        .array("A", ArrayValue::f64(vec![3, 3], a))
        .array("L", ArrayValue::f64(vec![3, 3], vec![9.0; 9]));
    let r = run_ok(&linear_algebra_state("cholesky"), &args);
    assert_close(&f64s(&r, "L"), &l);
    // L sol = y with sol = [1, -2, 3]: y = [2, 1 - 6, -1 - 4 + 3].
    let args = linear_algebra_args(3, 1)
        .array("L", ArrayValue::f64(vec![3, 3], l))
        .array("y", ArrayValue::f64(vec![3], vec![2.0, -5.0, -2.0]));
    let r = run_ok(&linear_algebra_state("solve"), &args);
    assert_close(&f64s(&r, "sol"), &[1.0, -2.0, 3.0]);
}

#[test]
fn linear_algebra_example_runs_end_to_end() {
    let (n, k) = (3, 2);
    let a = vec![4.0, 2.0, -2.0, 2.0, 10.0, 5.0, -2.0, 5.0, 6.0];
    let bm = mat(n, n, |i, j| (i + 2 * j) as f64);
    let c0 = mat(n, n, |i, j| if i == j { 1.0 } else { 0.5 });
    let x = vec![1.0, -1.0, 2.0];
    let y = vec![2.0, -5.0, -2.0];
    let args = Arguments::default()
        .symbol("N", n as i64)
        .symbol("K", k as i64)
        .array("A", ArrayValue::f64(vec![n, n], a.clone()))
        .array("B", ArrayValue::f64(vec![n, n], bm.clone()))
        .array("C", ArrayValue::f64(vec![n, n], c0.clone()))
        .array("x", ArrayValue::f64(vec![n], x.clone()))
        .array("y", ArrayValue::f64(vec![n], y.clone()))
        .array("T3", ArrayValue::f64(vec![k, n, n], iota(k * n * n)))
        .array("r", scalar_f64(0.0));
    let r = run_ok(&sdfg_ir::examples::linear_algebra().unwrap(), &args);
    let mut c = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            let s: f64 = (0..n).map(|p| a[i * n + p] * bm[j * n + p]).sum();
            c[i * n + j] = 1.5 * s + 1.2 * c0[i * n + j];
        }
    }
    assert_close(&f64s(&r, "C"), &c);
    assert_eq!(f64s(&r, "r"), vec![2.0 + 5.0 - 4.0]);
    // Inputs are left as they were.
    assert_eq!(f64s(&r, "A"), a);
    assert_eq!(f64s(&r, "y"), y);
}

// ---------------------------------------------------------------------------
// Views

#[test]
fn view_of_a_column_with_a_strided_layout_and_a_written_row_view() {
    let mut bl = b("views");
    bl.symbol("N")
        .symbol("M")
        .array("A", F64, "N, M")
        .array("y", F64, "N")
        .array("B", F64, "N, M");
    let n = SymExpr::symbol("N");
    let m = SymExpr::symbol("M");
    bl.container(
        "col",
        DataDesc::view(
            F64,
            Layout {
                shape: vec![n.clone()],
                strides: vec![m.clone()],
                offset: SymExpr::int(0),
                total_size: &n * &m,
            },
        ),
    );
    bl.container("row", DataDesc::view(F64, Layout::contiguous(vec![m])));
    bl.state("read_column", |s| {
        let (a, col, y) = (s.access("A"), s.access("col"), s.access("y"));
        s.edge(a, None, col, Some(VIEW_CONNECTOR), "A[0:N, 1]");
        let (en, ex) = s.map("copy", "i = 0:N", Schedule::Default);
        let t = s.tasklet("t", vec![fc("a")], vec![fc("o")], vec![assign("o", v("a"))]);
        s.path(&[col, en, t], None, Some("a"), "col[i]");
        s.path(&[t, ex, y], Some("o"), None, "y[i]");
    });
    bl.state("write_row", |s| {
        let (row, bb) = (s.access("row"), s.access("B"));
        s.edge(row, Some(VIEW_CONNECTOR), bb, None, "B[2, 0:M]");
        let (en, ex) = s.map("fill", "j = 0:M", Schedule::Default);
        let t = s.tasklet(
            "t",
            vec![],
            vec![fc("o")],
            vec![assign("o", Expr::cast(F64, v("j")) + Expr::f64(0.5))],
        );
        s.empty_edge(en, t);
        s.path(&[t, ex, row], Some("o"), None, "row[j]");
    });
    let sdfg = build(bl);
    let (nv, mv) = (3, 4);
    let a: Vec<f64> = iota(nv * mv);
    let args = Arguments::default()
        .symbol("N", nv as i64)
        .symbol("M", mv as i64)
        .array("A", ArrayValue::f64(vec![nv, mv], a))
        .array("y", ArrayValue::f64(vec![nv], vec![0.0; nv]))
        .array("B", ArrayValue::f64(vec![nv, mv], vec![0.0; nv * mv]));
    let r = run_ok(&sdfg, &args);
    assert_eq!(f64s(&r, "y"), vec![1.0, 5.0, 9.0]);
    let mut bx = vec![0.0; nv * mv];
    for j in 0..mv {
        bx[2 * mv + j] = j as f64 + 0.5;
    }
    assert_eq!(f64s(&r, "B"), bx);
}

// ---------------------------------------------------------------------------
// Host callbacks and empty memlets

/// `sum, diff = combine(y, x)` followed, through an empty memlet, by a
/// tasklet that marks `done`.
fn callback_sdfg() -> Sdfg {
    let mut bl = b("callbacks");
    bl.symbol("N")
        .array("x", F64, "N")
        .array("y", F64, "N")
        .array("sum", F64, "N")
        .array("diff", F64, "N")
        .scalar("done", F64);
    bl.state("call", |s| {
        let (x, y) = (s.access("x"), s.access("y"));
        let (sum, diff, done) = (s.access("sum"), s.access("diff"), s.access("done"));
        // Connectors declared in non-alphabetical order on purpose.
        let cb = s.callback(
            "cb",
            "combine",
            vec![Connector::pointer("y", F64), Connector::pointer("x", F64)],
            vec![
                Connector::pointer("sum", F64),
                Connector::pointer("diff", F64),
            ],
        );
        s.edge(y, None, cb, Some("y"), "y");
        s.edge(x, None, cb, Some("x"), "x");
        s.edge(cb, Some("sum"), sum, None, "sum");
        s.edge(cb, Some("diff"), diff, None, "diff");
        let after = s.tasklet(
            "after",
            vec![],
            vec![fc("o")],
            vec![assign("o", Expr::f64(1.0))],
        );
        s.empty_edge(cb, after);
        s.edge(after, Some("o"), done, None, "done[0]");
    });
    build(bl)
}

fn callback_args() -> Arguments {
    Arguments::default()
        .symbol("N", 3)
        .array("x", ArrayValue::f64(vec![3], vec![1.0, 2.0, 3.0]))
        .array("y", ArrayValue::f64(vec![3], vec![10.0, 20.0, 30.0]))
        .array("sum", ArrayValue::f64(vec![3], vec![0.0; 3]))
        .array("diff", ArrayValue::f64(vec![3], vec![0.0; 3]))
        .array("done", scalar_f64(0.0))
}

#[test]
fn host_callback_receives_its_inputs_in_connector_order_and_its_outputs_land() {
    let sdfg = callback_sdfg();
    let calls: Rc<RefCell<Vec<Vec<ArrayValue>>>> = Rc::default();
    let log = calls.clone();
    let mut sim = Simulator::new();
    sim.register("combine", move |args: &[ArrayValue]| {
        log.borrow_mut().push(args.to_vec());
        let (Elements::F64(y), Elements::F64(x)) = (&args[0].elements, &args[1].elements) else {
            return Err("expected float64 arrays".to_owned());
        };
        let sum = y.iter().zip(x).map(|(a, b)| a + b).collect();
        let diff = y.iter().zip(x).map(|(a, b)| a - b).collect();
        Ok(vec![
            ArrayValue::f64(vec![x.len()], sum),
            ArrayValue::f64(vec![x.len()], diff),
        ])
    });
    let r = sim
        .run(sdfg_ir::validate(&sdfg).unwrap(), &callback_args())
        .unwrap();
    let calls = calls.borrow();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0],
        vec![
            ArrayValue::f64(vec![3], vec![10.0, 20.0, 30.0]),
            ArrayValue::f64(vec![3], vec![1.0, 2.0, 3.0]),
        ]
    );
    assert_eq!(f64s(&r, "sum"), vec![11.0, 22.0, 33.0]);
    assert_eq!(f64s(&r, "diff"), vec![9.0, 18.0, 27.0]);
    assert_eq!(f64s(&r, "done"), vec![1.0]);
}

#[test]
fn host_callback_failures_and_unregistered_callbacks_are_callback_errors() {
    let sdfg = callback_sdfg();
    match run(&sdfg, &callback_args()) {
        Err(SimError::Callback { callee, at, .. }) => {
            assert_eq!(callee, "combine");
            assert_eq!(&*at.node, "cb");
        }
        other => panic!("expected a callback error, got {other:?}"),
    }
    let mut sim = Simulator::new();
    sim.register("combine", |_: &[ArrayValue]| Err("no".to_owned()));
    match sim.run(sdfg_ir::validate(&sdfg).unwrap(), &callback_args()) {
        Err(SimError::Callback { message, .. }) => assert_eq!(message, "no"),
        other => panic!("expected a callback error, got {other:?}"),
    }
}

#[test]
fn empty_memlets_order_otherwise_unordered_writes() {
    // Two tasklets write x[0]; the empty memlet decides which one is last.
    let program = |first_wins: bool| {
        let mut bl = b("order");
        bl.array("x", F64, "1");
        bl.state("s", move |s| {
            let (x1, x2) = (s.access("x"), s.access("x"));
            let one = s.tasklet(
                "one",
                vec![],
                vec![fc("o")],
                vec![assign("o", Expr::f64(1.0))],
            );
            let two = s.tasklet(
                "two",
                vec![],
                vec![fc("o")],
                vec![assign("o", Expr::f64(2.0))],
            );
            s.edge(one, Some("o"), x1, None, "x[0]");
            s.edge(two, Some("o"), x2, None, "x[0]");
            if first_wins {
                s.empty_edge(two, one);
            } else {
                s.empty_edge(one, two);
            }
        });
        build(bl)
    };
    let args = Arguments::default().array("x", ArrayValue::f64(vec![1], vec![0.0]));
    assert_eq!(f64s(&run_ok(&program(true), &args), "x"), vec![1.0]);
    assert_eq!(f64s(&run_ok(&program(false), &args), "x"), vec![2.0]);
}

// ---------------------------------------------------------------------------
// Control flow

/// A state adding `value` (int64 code) to `acc[0]`.
fn add_state(value: Expr) -> impl FnOnce(&mut sdfg_ir::builder::StateBuilder<'_>) {
    move |s| {
        let (a_in, a_out) = (s.access("acc"), s.access("acc"));
        let t = s.tasklet(
            "add",
            vec![sc("a", I64)],
            vec![sc("o", I64)],
            vec![assign("o", v("a") + value)],
        );
        s.edge(a_in, None, t, Some("a"), "acc[0]");
        s.edge(t, Some("o"), a_out, None, "acc[0]");
    }
}

/// A state setting `name[0]` to `value` (int64 code).
fn set_state(
    name: &'static str,
    value: Expr,
) -> impl FnOnce(&mut sdfg_ir::builder::StateBuilder<'_>) {
    move |s| {
        let a = s.access(name);
        let t = s.tasklet("set", vec![], vec![sc("o", I64)], vec![assign("o", value)]);
        s.edge(t, Some("o"), a, None, &*format!("{name}[0]"));
    }
}

#[test]
fn for_loops_with_positive_steps_and_loop_dependent_subsets() {
    // for i in range(1, N): x[i] = x[i] + x[i - 1]   (prefix sums)
    // for i in range(0, N, 2): y[i] = -y[i]
    let mut bl = b("forward");
    bl.symbol("N").array("x", F64, "N").array("y", F64, "N");
    bl.for_loop("scan", "i", "1", "N", 1, |bl| {
        bl.state("step", |s| {
            let (x_in, x_out) = (s.access("x"), s.access("x"));
            let t = s.tasklet(
                "t",
                vec![fc("prev"), fc("cur")],
                vec![fc("o")],
                vec![assign("o", v("prev") + v("cur"))],
            );
            s.edge(x_in, None, t, Some("prev"), "x[i - 1]");
            s.edge(x_in, None, t, Some("cur"), "x[i]");
            s.edge(t, Some("o"), x_out, None, "x[i]");
        });
    });
    bl.for_loop("negate", "k", "0", "N", 2, |bl| {
        bl.state("neg", |s| {
            let (y_in, y_out) = (s.access("y"), s.access("y"));
            let t = s.tasklet(
                "t",
                vec![fc("a")],
                vec![fc("o")],
                vec![assign("o", -v("a"))],
            );
            s.edge(y_in, None, t, Some("a"), "y[k]");
            s.edge(t, Some("o"), y_out, None, "y[k]");
        });
    });
    let sdfg = build(bl);
    let x = vec![1.0, 2.0, 3.0, 4.0, 5.0];
    let args = Arguments::default()
        .symbol("N", 5)
        .array("x", ArrayValue::f64(vec![5], x))
        .array("y", ArrayValue::f64(vec![5], vec![1.0; 5]));
    let r = run_ok(&sdfg, &args);
    assert_eq!(f64s(&r, "x"), vec![1.0, 3.0, 6.0, 10.0, 15.0]);
    assert_eq!(f64s(&r, "y"), vec![-1.0, 1.0, -1.0, 1.0, -1.0]);
}

#[test]
fn for_loops_with_negative_steps() {
    // for i in range(N - 2, -1, -1): x[i] = x[i] + x[i + 1]   (suffix sums)
    // for k in range(N - 1, 0, -3): acc += k
    let mut bl = b("backward");
    bl.symbol("N").array("x", F64, "N").scalar("acc", I64);
    bl.for_loop("scan", "i", "N - 2", "-1", -1, |bl| {
        bl.state("step", |s| {
            let (x_in, x_out) = (s.access("x"), s.access("x"));
            let t = s.tasklet(
                "t",
                vec![fc("next"), fc("cur")],
                vec![fc("o")],
                vec![assign("o", v("next") + v("cur"))],
            );
            s.edge(x_in, None, t, Some("next"), "x[i + 1]");
            s.edge(x_in, None, t, Some("cur"), "x[i]");
            s.edge(t, Some("o"), x_out, None, "x[i]");
        });
    });
    bl.for_loop("down", "k", "N - 1", "0", -3, |bl| {
        bl.state("add", add_state(v("k")));
    });
    let sdfg = build(bl);
    let args = Arguments::default()
        .symbol("N", 5)
        .array("x", ArrayValue::f64(vec![5], vec![1.0, 2.0, 3.0, 4.0, 5.0]))
        .array("acc", scalar_i64(0));
    let r = run_ok(&sdfg, &args);
    assert_eq!(f64s(&r, "x"), vec![15.0, 14.0, 12.0, 9.0, 5.0]);
    assert_eq!(i64s(&r, "acc"), vec![4 + 1]);
}

#[test]
fn while_loop_on_a_counter_scalar_with_transition_counting() {
    // n = 0; while c < 10: c += 3; n = n + 1
    // count = n
    let mut bl = b("while");
    bl.local_symbol("n").scalar("acc", I64).scalar("count", I64);
    bl.state("init", |_| {}).assign("n", "0");
    bl.while_loop("loop", "acc[0] < 10", |bl| {
        bl.state("inc", add_state(Expr::i64(3)))
            .assign("n", "n + 1");
    });
    bl.state("report", set_state("count", v("n")));
    let sdfg = build(bl);
    let run_from = |c0: i64| {
        let args = Arguments::default()
            .array("acc", scalar_i64(c0))
            .array("count", scalar_i64(-1));
        let r = run_ok(&sdfg, &args);
        (i64s(&r, "acc")[0], i64s(&r, "count")[0])
    };
    assert_eq!(run_from(0), (12, 4));
    assert_eq!(run_from(8), (11, 1));
    // The condition is checked before the first iteration.
    assert_eq!(run_from(10), (10, 0));
}

/// `if sel > 0: a = 1 else: a = 2`, then `if sel == 5: b = 9` (no else).
fn if_else_program() -> Sdfg {
    let mut bl = b("ifs");
    bl.symbol("sel").scalar("a", I64).scalar("bb", I64);
    bl.if_else(
        "first",
        "sel > 0",
        |bl| {
            bl.state("one", set_state("a", Expr::i64(1)));
        },
        Some(&|bl: &mut SdfgBuilder| {
            bl.state("two", set_state("a", Expr::i64(2)));
        }),
    );
    bl.if_else(
        "second",
        "sel == 5",
        |bl| {
            bl.state("nine", set_state("bb", Expr::i64(9)));
        },
        None,
    );
    build(bl)
}

#[test]
fn conditionals_with_and_without_else() {
    let sdfg = if_else_program();
    let outcome = |sel: i64| {
        let args = Arguments::default()
            .symbol("sel", sel)
            .array("a", scalar_i64(0))
            .array("bb", scalar_i64(0));
        let r = run_ok(&sdfg, &args);
        (i64s(&r, "a")[0], i64s(&r, "bb")[0])
    };
    assert_eq!(outcome(5), (1, 9));
    assert_eq!(outcome(3), (1, 0));
    assert_eq!(outcome(0), (2, 0));
    assert_eq!(outcome(-4), (2, 0));
}

#[test]
fn conditional_with_elif_branches_runs_the_first_that_holds() {
    // if sel < 1: a = 10 elif sel < 2: a = 20 elif sel < 3: a = 30 else: a = 40
    let mut bl = b("elif");
    bl.symbol("sel").scalar("a", I64).scalar("bb", I64);
    bl.if_else(
        "choose",
        "sel < 1",
        |bl| {
            bl.state("ten", set_state("a", Expr::i64(10)));
        },
        Some(&|bl: &mut SdfgBuilder| {
            bl.if_else(
                "choose_2",
                "sel < 2",
                |bl| {
                    bl.state("twenty", set_state("a", Expr::i64(20)));
                },
                Some(&|bl: &mut SdfgBuilder| {
                    bl.if_else(
                        "choose_3",
                        "sel < 3",
                        |bl| {
                            bl.state("thirty", set_state("a", Expr::i64(30)));
                        },
                        Some(&|bl: &mut SdfgBuilder| {
                            bl.state("forty", set_state("a", Expr::i64(40)));
                        }),
                    );
                }),
            );
        }),
    );
    bl.state("after", set_state("bb", Expr::i64(1)));
    let mut sdfg = build(bl);
    // Flatten the else-if chain into one conditional block with three
    // branches and an else.
    let block = &mut sdfg.body.blocks[0];
    let BlockKind::Conditional(c) = &mut block.kind else {
        panic!("expected a conditional");
    };
    while let Some(mut otherwise) = c.otherwise.take() {
        match otherwise.blocks.as_mut_slice() {
            [only] if matches!(only.kind, BlockKind::Conditional(_)) => {
                let BlockKind::Conditional(inner) =
                    std::mem::replace(&mut only.kind, BlockKind::Break)
                else {
                    unreachable!()
                };
                c.branches.extend(inner.branches);
                c.otherwise = inner.otherwise;
            }
            _ => {
                c.otherwise = Some(otherwise);
                break;
            }
        }
    }
    assert_eq!(c.branches.len(), 3);
    assert!(c.otherwise.is_some());
    let outcome = |sel: i64| {
        let args = Arguments::default()
            .symbol("sel", sel)
            .array("a", scalar_i64(0))
            .array("bb", scalar_i64(0));
        let r = run_ok(&sdfg, &args);
        assert_eq!(i64s(&r, "bb"), vec![1]);
        i64s(&r, "a")[0]
    };
    assert_eq!([-5, 0, 1, 2, 3, 100].map(outcome), [10, 10, 20, 30, 40, 40]);
}

#[test]
fn break_leaves_only_the_innermost_loop() {
    // for i in range(10): acc += i; if i == 4: break; acc += 1000
    // last = i
    let mut bl = b("brk");
    bl.scalar("acc", I64).scalar("last", I64);
    bl.for_loop("outer", "i", "0", "10", 1, |bl| {
        bl.state("add", add_state(v("i")));
        bl.if_else(
            "stop",
            "i == 4",
            |bl| {
                bl.break_("out");
            },
            None,
        );
        bl.state("add_more", add_state(Expr::i64(1000)));
    });
    bl.state("report", set_state("last", v("i")));
    let sdfg = build(bl);
    let args = Arguments::default()
        .array("acc", scalar_i64(0))
        .array("last", scalar_i64(-1));
    let r = run_ok(&sdfg, &args);
    // 0+1+2+3+4, plus 1000 for each of i = 0..3; the update is not run on break.
    assert_eq!(i64s(&r, "acc"), vec![10 + 4000]);
    assert_eq!(i64s(&r, "last"), vec![4]);

    // for i in range(3): for j in range(10): if j == i + 1: break; acc += 1
    let mut bl = b("brk2");
    bl.scalar("acc", I64).scalar("last", I64);
    bl.for_loop("outer", "i", "0", "3", 1, |bl| {
        bl.for_loop("inner", "j", "0", "10", 1, |bl| {
            bl.if_else(
                "stop",
                "j == i + 1",
                |bl| {
                    bl.break_("out");
                },
                None,
            );
            bl.state("add", add_state(Expr::i64(1)));
        });
    });
    bl.state(
        "report",
        set_state("last", v("i") * Expr::i64(100) + v("j")),
    );
    let sdfg = build(bl);
    let r = run_ok(&sdfg, &args);
    assert_eq!(i64s(&r, "acc"), vec![1 + 2 + 3]);
    // The outer loop ran to its end (i = 3); the last inner loop broke at j = 3.
    assert_eq!(i64s(&r, "last"), vec![303]);
}

#[test]
fn continue_skips_the_rest_of_the_body_and_runs_the_update() {
    // for i in range(10): if i % 2 == 1: continue; acc += i
    let mut bl = b("cont");
    bl.scalar("acc", I64).scalar("last", I64);
    bl.for_loop("loop", "i", "0", "10", 1, |bl| {
        bl.if_else(
            "odd",
            "i % 2 == 1",
            |bl| {
                bl.continue_("skip");
            },
            None,
        );
        bl.state("add", add_state(v("i")));
    });
    bl.state("report", set_state("last", v("i")));
    let sdfg = build(bl);
    let args = Arguments::default()
        .array("acc", scalar_i64(0))
        .array("last", scalar_i64(-1));
    let r = run_ok(&sdfg, &args);
    assert_eq!(i64s(&r, "acc"), vec![2 + 4 + 6 + 8]);
    assert_eq!(i64s(&r, "last"), vec![10]);
}

#[test]
fn return_inside_a_loop_and_inside_a_conditional_ends_the_program() {
    // for i in range(10): acc += i; if i == 3: return
    // flag = 1
    let mut bl = b("ret");
    bl.symbol("sel").scalar("acc", I64).scalar("flag", I64);
    bl.if_else(
        "early",
        "sel < 0",
        |bl| {
            bl.return_("leave_now");
        },
        None,
    );
    bl.for_loop("loop", "i", "0", "10", 1, |bl| {
        bl.state("add", add_state(v("i")));
        bl.if_else(
            "stop",
            "i == sel",
            |bl| {
                bl.return_("leave");
            },
            None,
        );
    });
    bl.state("finish", set_state("flag", Expr::i64(1)));
    let sdfg = build(bl);
    let outcome = |sel: i64| {
        let args = Arguments::default()
            .symbol("sel", sel)
            .array("acc", scalar_i64(0))
            .array("flag", scalar_i64(0));
        let r = run_ok(&sdfg, &args);
        (i64s(&r, "acc")[0], i64s(&r, "flag")[0])
    };
    assert_eq!(outcome(3), (6, 0));
    assert_eq!(outcome(20), (45, 1));
    assert_eq!(outcome(-1), (0, 0));
}

#[test]
fn transition_assignments_run_in_order_and_read_containers() {
    // a = 3; b = a * 2; c = idx[a - 2] + b   (on one transition)
    let mut bl = b("assign");
    bl.local_symbol("a")
        .local_symbol("b")
        .local_symbol("c")
        .array("idx", DType::Int32, "4")
        .scalar("out", I64);
    bl.state("start", |_| {})
        .assign("a", "3")
        .assign("b", "a * 2")
        .assign("c", "idx[a - 2] + b");
    bl.state(
        "report",
        set_state(
            "out",
            v("a") * Expr::i64(10000) + v("b") * Expr::i64(100) + v("c"),
        ),
    );
    let sdfg = build(bl);
    let args = Arguments::default()
        .array(
            "idx",
            ArrayValue::new(vec![4], Elements::I32(vec![5, 40, 7, 8])),
        )
        .array("out", scalar_i64(0));
    // a = 3, b = 6, c = idx[1] + 6 = 46.
    assert_eq!(i64s(&run_ok(&sdfg, &args), "out"), vec![30646]);
}

/// A CSR matrix: 3 x 4, rows `[(0, 1), (2, 2)]`, `[]`, `[(1, 3), (2, 4), (3, 5)]`.
fn csr_args(cols: Vec<u32>, m: usize) -> Arguments {
    let nnz = cols.len();
    let row: Vec<u32> = [0, 2, 2, 5][..=m].to_vec();
    Arguments::default()
        .symbol("M", m as i64)
        .symbol("N", 4)
        .symbol("nnz", nnz as i64)
        .array("A_row", ArrayValue::new(vec![m + 1], Elements::U32(row)))
        .array("A_col", ArrayValue::new(vec![nnz], Elements::U32(cols)))
        .array(
            "A_val",
            ArrayValue::f64(vec![nnz], (1..=nnz).map(|v| v as f64).collect()),
        )
        .array(
            "x",
            ArrayValue::f64(vec![4], vec![1.0, 10.0, 100.0, 1000.0]),
        )
        .array(
            "y",
            ArrayValue::f64(vec![m], vec![0.5, 0.25, -1.0][..m].to_vec()),
        )
        .array(
            "hist",
            ArrayValue::f64(vec![4], vec![10.0, 20.0, 30.0, 40.0]),
        )
}

#[test]
fn spmv_indirect_example_with_data_dependent_row_bounds() {
    let sdfg = sdfg_ir::examples::spmv_indirect().unwrap();
    let cols = vec![0, 2, 1, 2, 3];
    let r = run_ok(&sdfg, &csr_args(cols.clone(), 3));
    // y += A x, by hand:
    // row 0: 0.5 + 1*x[0] + 2*x[2] = 0.5 + 1 + 200
    // row 1: empty, stays 0.25
    // row 2: -1 + 3*x[1] + 4*x[2] + 5*x[3] = -1 + 30 + 400 + 5000
    assert_eq!(f64s(&r, "y"), vec![201.5, 0.25, 5429.0]);
    // hist[c] += 1 for every column index.
    let mut hist = vec![10.0, 20.0, 30.0, 40.0];
    for c in cols {
        hist[c as usize] += 1.0;
    }
    assert_eq!(hist, vec![11.0, 21.0, 32.0, 41.0]);
    assert_eq!(f64s(&r, "hist"), hist);
}

#[test]
fn converge_example_against_a_hand_trace() {
    // The norm `err` is reset at the top of every iteration, then
    // sum-accumulated; the loop ends when it drops below 1e-3 or after 50
    // iterations, and a non-zero `flag` returns before `finish`.
    let sdfg = sdfg_ir::examples::converge().unwrap();
    let outcome = |x: Vec<f64>, flag: i32| {
        let n = x.len();
        let args = Arguments::default()
            .symbol("N", n as i64)
            .array("x", ArrayValue::f64(vec![n], x))
            .array("flag", ArrayValue::new(vec![], Elements::I32(vec![flag])));
        let r = run_ok(&sdfg, &args);
        let Elements::I32(f) = &r.outputs["flag"].elements else {
            panic!("flag is not int32")
        };
        (f64s(&r, "x"), f[0])
    };
    // Reference: the same program as plain Rust.
    let reference = |mut x: Vec<f64>, mut flag: i32| {
        let mut it = 0;
        let mut done = false;
        while !done {
            for xi in x.iter_mut() {
                *xi *= 0.5;
            }
            let err = x.iter().fold(0.0, |acc, xi| acc + xi.abs());
            done = err < 1e-3;
            it += 1;
            if it >= 50 {
                break;
            }
        }
        if flag == 0 {
            flag = 1;
        }
        (x, flag)
    };
    for (x, flag) in [
        (vec![0.0, 0.0], 0),
        (vec![1e-4, -2e-4, 3e-4], 0),
        (vec![1.0, -2.0], 0),
        (vec![1e-4], 5),
        (vec![3.0e30], 0),
    ] {
        assert_eq!(outcome(x.clone(), flag), reference(x, flag));
    }
    // Hand-worked: zeros are done after one iteration; flag 0 becomes 1.
    assert_eq!(outcome(vec![0.0], 0), (vec![0.0], 1));
    // 1.0 halves 10 times before dropping below 1e-3 (2^-10 < 1e-3 < 2^-9).
    assert_eq!(outcome(vec![1.0], 0).0, vec![0.5f64.powi(10)]);
    // A value too large to converge in 50 halvings stops at the `break`.
    assert_eq!(outcome(vec![3.0e30], 0).0, vec![3.0e30 * 0.5f64.powi(50)]);
    // A non-zero flag returns before `finish`.
    assert_eq!(outcome(vec![0.0], 5).1, 5);
}

#[test]
fn jacobi_1d_example_against_plain_loops() {
    let sdfg = sdfg_ir::examples::jacobi_1d().unwrap();
    let (n, tsteps) = (6usize, 4i64);
    let a0: Vec<f64> = (0..n).map(|i| (i * i) as f64 + 1.0).collect();
    let b0: Vec<f64> = (0..n).map(|i| 10.0 - i as f64).collect();
    let args = Arguments::default()
        .symbol("N", n as i64)
        .symbol("TSTEPS", tsteps)
        .array("A", ArrayValue::f64(vec![n], a0.clone()))
        .array("B", ArrayValue::f64(vec![n], b0.clone()))
        .array("total", scalar_f64(0.25));
    let r = run_ok(&sdfg, &args);
    let (mut a, mut bv) = (a0, b0);
    for _t in 1..tsteps {
        for i in 1..n - 1 {
            bv[i] = 0.33333 * (a[i - 1] + a[i] + a[i + 1]);
        }
        for i in 1..n - 1 {
            a[i] = 0.33333 * (bv[i - 1] + bv[i] + bv[i + 1]);
        }
    }
    let mut total = 0.25;
    for k in (0..n).rev() {
        total += a[k];
    }
    assert_eq!(f64s(&r, "A"), a);
    assert_eq!(f64s(&r, "B"), bv);
    assert_eq!(f64s(&r, "total"), vec![total]);
}

// ---------------------------------------------------------------------------
// Data types

fn i64_elements(e: Elements) -> Vec<i64> {
    match e {
        Elements::I64(v) => v,
        other => panic!("{other:?}"),
    }
}

#[test]
fn bool_logic_comparisons_and_conversions() {
    let a = Elements::Bool(vec![false, false, true, true]);
    let bv = Elements::Bool(vec![false, true, false, true]);
    let op = |e: Expr| elementwise(a.clone(), bv.clone(), DType::Bool, vec![assign("z", e)]);
    assert_eq!(
        op(bin(BinaryOp::And, v("x"), v("y"))),
        Elements::Bool(vec![false, false, false, true])
    );
    assert_eq!(
        op(bin(BinaryOp::Or, v("x"), v("y"))),
        Elements::Bool(vec![false, true, true, true])
    );
    assert_eq!(
        op(bin(BinaryOp::BitXor, v("x"), v("y"))),
        Elements::Bool(vec![false, true, true, false])
    );
    assert_eq!(
        op(bin(BinaryOp::Eq, v("x"), v("y"))),
        Elements::Bool(vec![true, false, false, true])
    );
    assert_eq!(
        op(Expr::unary(UnaryOp::Not, v("x"))),
        Elements::Bool(vec![true, true, false, false])
    );
    // Comparisons of numbers give bool; bool converts to 0/1 and numbers to "not zero".
    let cmp = elementwise(
        Elements::F64(vec![1.0, 2.0, f64::NAN, -0.0]),
        Elements::F64(vec![2.0, 2.0, 1.0, 0.0]),
        DType::Bool,
        vec![assign("z", bin(BinaryOp::Lt, v("x"), v("y")))],
    );
    assert_eq!(cmp, Elements::Bool(vec![true, false, false, false]));
    let to_int = elementwise(
        a.clone(),
        bv.clone(),
        DType::Int32,
        vec![assign(
            "z",
            Expr::cast(DType::Int32, v("x"))
                + Expr::cast(DType::Int32, v("y")) * int(10, DType::Int32),
        )],
    );
    assert_eq!(to_int, Elements::I32(vec![0, 10, 1, 11]));
    let to_bool = elementwise(
        Elements::I64(vec![0, 5, -1, 0]),
        Elements::F64(vec![0.0, 0.0, 0.5, f64::NAN]),
        DType::Bool,
        vec![assign(
            "z",
            bin(
                BinaryOp::Or,
                Expr::cast(DType::Bool, v("x")),
                Expr::cast(DType::Bool, v("y")),
            ),
        )],
    );
    assert_eq!(to_bool, Elements::Bool(vec![false, true, true, true]));
}

#[test]
fn int8_arithmetic_wraps_around() {
    let i8s = |v: Vec<i8>| Elements::I8(v);
    let op = |a: Vec<i8>, b: Vec<i8>, e: Expr| {
        elementwise(i8s(a), i8s(b), DType::Int8, vec![assign("z", e)])
    };
    assert_eq!(
        op(
            vec![100, -100, 127, 5],
            vec![100, -100, 1, -6],
            v("x") + v("y")
        ),
        i8s(vec![-56, 56, -128, -1])
    );
    assert_eq!(
        op(
            vec![16, -128, 11, -128],
            vec![16, 1, 12, -1],
            v("x") * v("y")
        ),
        i8s(vec![0, -128, -124, -128])
    );
    assert_eq!(
        op(vec![-128, 0, 1, 100], vec![1, 1, 7, 28], v("x") - v("y")),
        i8s(vec![127, -1, -6, 72])
    );
    // Negation of the minimum, shifts and a literal of the type.
    assert_eq!(
        op(vec![-128, 1, -64, 3], vec![0; 4], -v("x")),
        i8s(vec![-128, -1, 64, -3])
    );
    assert_eq!(
        op(
            vec![1, 3, -1, 64],
            vec![7, 6, 1, 1],
            bin(BinaryOp::Shl, v("x"), v("y"))
        ),
        i8s(vec![-128, -64, -2, -128])
    );
    assert_eq!(
        op(
            vec![-128, 127, -1, 64],
            vec![7, 6, 3, 1],
            bin(BinaryOp::Shr, v("x"), v("y"))
        ),
        i8s(vec![-1, 1, -1, 32])
    );
    assert_eq!(
        op(
            vec![27, -27, 0, 1],
            vec![0; 4],
            v("x") + int(120, DType::Int8)
        ),
        i8s(vec![-109, 93, 120, 121])
    );
}

#[test]
fn int32_and_int64_arithmetic_wraps_around() {
    let r = elementwise(
        Elements::I32(vec![i32::MAX, i32::MIN, 65536, -7]),
        Elements::I32(vec![1, 1, 65536, 3]),
        DType::Int32,
        vec![assign("z", v("x") + v("y"))],
    );
    assert_eq!(r, Elements::I32(vec![i32::MIN, i32::MIN + 1, 131072, -4]));
    let r = elementwise(
        Elements::I32(vec![65536, i32::MAX, -3, 46341]),
        Elements::I32(vec![65536, 2, 5, 46341]),
        DType::Int32,
        vec![assign("z", v("x") * v("y"))],
    );
    assert_eq!(
        r,
        Elements::I32(vec![0, -2, -15, -2_147_479_015 /* 46341^2 - 2^32 */])
    );
    let r = elementwise(
        Elements::I64(vec![i64::MAX, i64::MIN, 1 << 62, 12345678901]),
        Elements::I64(vec![1, -1, 4, 1000]),
        I64,
        vec![assign("z", v("x") * v("y") + v("y"))],
    );
    assert_eq!(
        i64_elements(r),
        vec![
            i64::MIN, // MAX + 1
            i64::MAX, // -MIN wraps to MIN, minus 1
            4,        // 2^64 wraps to 0
            12345678901000 + 1000,
        ]
    );
    // Bitwise operations on int64.
    let r = elementwise(
        Elements::I64(vec![0b1100, -1, 0x0F0F]),
        Elements::I64(vec![0b1010, 0x55, 0x00FF]),
        I64,
        vec![assign(
            "z",
            bin(
                BinaryOp::BitOr,
                bin(BinaryOp::BitAnd, v("x"), v("y")),
                bin(
                    BinaryOp::Shl,
                    bin(BinaryOp::BitXor, v("x"), v("y")),
                    Expr::i64(16),
                ),
            ),
        )],
    );
    assert_eq!(
        i64_elements(r),
        vec![
            0b1000 | (0b0110 << 16),
            0x55 | (!0x55i64 << 16),
            0x000F | (0x0FF0 << 16)
        ]
    );
}

#[test]
fn unsigned_arithmetic_wraps_around() {
    let r = elementwise(
        Elements::U16(vec![65535, 0, 300, 40000]),
        Elements::U16(vec![1, 1, 300, 30000]),
        DType::UInt16,
        vec![assign("z", v("x") + v("y"))],
    );
    // 40000 + 30000 = 70000 = 65536 + 4464.
    assert_eq!(r, Elements::U16(vec![0, 1, 600, 4464]));
    let r = elementwise(
        Elements::U16(vec![0, 5, 256, 65535]),
        Elements::U16(vec![1, 7, 256, 65535]),
        DType::UInt16,
        vec![assign(
            "z",
            v("x") - v("y") + v("x") * v("y") - v("x") * v("y") + v("x") * v("y"),
        )],
    );
    // x - y + x*y (mod 2^16)
    let expected: Vec<u16> = [(0u16, 1u16), (5, 7), (256, 256), (65535, 65535)]
        .iter()
        .map(|&(x, y)| x.wrapping_sub(y).wrapping_add(x.wrapping_mul(y)))
        .collect();
    assert_eq!(r, Elements::U16(expected));
    let r = elementwise(
        Elements::U8(vec![200, 0, 255, 17]),
        Elements::U8(vec![100, 1, 255, 3]),
        DType::UInt8,
        vec![assign(
            "z",
            v("x") + v("y") - Expr::unary(UnaryOp::BitNot, v("y")),
        )],
    );
    // x + y - ~y (mod 256) = x + 2y + 1
    assert_eq!(r, Elements::U8(vec![145, 3, 254, 24]));
    let r = elementwise(
        Elements::U8(vec![7, 200, 3, 255]),
        Elements::U8(vec![2, 7, 5, 16]),
        DType::UInt8,
        vec![assign(
            "z",
            bin(BinaryOp::FloorDiv, v("x"), v("y"))
                + bin(BinaryOp::Mod, v("x"), v("y")) * uint(16, DType::UInt8),
        )],
    );
    assert_eq!(r, Elements::U8(vec![3 + 16, 28 + 64, 48, 15 + 240]));
}

#[test]
fn uint16_crc16_ccitt_of_the_standard_check_string() {
    // CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF) of "123456789" is 0x29B1.
    //   for byte in data: crc ^= byte << 8
    //                     for bit in range(8): crc = (crc << 1) ^ 0x1021 if crc & 0x8000 else crc << 1
    let u16t = DType::UInt16;
    let mut bl = b("crc");
    bl.symbol("N")
        .array("data", DType::UInt8, "N")
        .scalar("crc", u16t);
    bl.for_loop("bytes", "k", "0", "N", 1, |bl| {
        bl.state("mix", |s| {
            let (c_in, d, c_out) = (s.access("crc"), s.access("data"), s.access("crc"));
            let t = s.tasklet(
                "mix",
                vec![sc("c", u16t), sc("d", DType::UInt8)],
                vec![sc("o", u16t)],
                vec![assign(
                    "o",
                    bin(
                        BinaryOp::BitXor,
                        v("c"),
                        bin(BinaryOp::Shl, Expr::cast(u16t, v("d")), uint(8, u16t)),
                    ),
                )],
            );
            s.edge(c_in, None, t, Some("c"), "crc[0]");
            s.edge(d, None, t, Some("d"), "data[k]");
            s.edge(t, Some("o"), c_out, None, "crc[0]");
        });
        bl.for_loop("bits", "bit", "0", "8", 1, |bl| {
            bl.state("shift", |s| {
                let (c_in, c_out) = (s.access("crc"), s.access("crc"));
                let shifted = bin(BinaryOp::Shl, v("c"), uint(1, u16t));
                let t = s.tasklet(
                    "shift",
                    vec![sc("c", u16t)],
                    vec![sc("o", u16t)],
                    vec![Stmt::If {
                        cond: bin(
                            BinaryOp::Ne,
                            bin(BinaryOp::BitAnd, v("c"), uint(0x8000, u16t)),
                            uint(0, u16t),
                        ),
                        then: vec![assign(
                            "o",
                            bin(BinaryOp::BitXor, shifted.clone(), uint(0x1021, u16t)),
                        )],
                        otherwise: vec![assign("o", shifted)],
                    }],
                );
                s.edge(c_in, None, t, Some("c"), "crc[0]");
                s.edge(t, Some("o"), c_out, None, "crc[0]");
            });
        });
    });
    let sdfg = build(bl);
    let data = b"123456789".to_vec();
    let args = Arguments::default()
        .symbol("N", data.len() as i64)
        .array(
            "data",
            ArrayValue::new(vec![data.len()], Elements::U8(data)),
        )
        .array("crc", ArrayValue::new(vec![], Elements::U16(vec![0xFFFF])));
    let r = run_ok(&sdfg, &args);
    assert_eq!(r.outputs["crc"].elements, Elements::U16(vec![0x29B1]));
}

#[test]
fn float32_rounds_every_operation_to_single_precision() {
    let f32s = |v: &[f32]| Elements::F32(v.to_vec());
    let one_plus = 1.0 + 2f32.powi(-12);
    let a = [one_plus, 0.1, 3.0, 1e30, 16_777_216.0];
    let bv = [one_plus, 0.2, 7.0, 1e30, 1.0];
    let op = |e: Expr| match elementwise(f32s(&a), f32s(&bv), DType::Float32, vec![assign("z", e)])
    {
        Elements::F32(v) => v,
        other => panic!("{other:?}"),
    };
    // The product is rounded before the subtraction: (1 + 2^-12)^2 - 1 is
    // 2^-11 in single precision, not 2^-11 + 2^-24.
    let r = op(v("x") * v("y") - Expr::Lit(Literal::f32(1.0)));
    let expected: Vec<f32> = a.iter().zip(&bv).map(|(x, y)| x * y - 1.0).collect();
    assert_eq!(r, expected);
    assert_eq!(r[0], 2f32.powi(-11));
    assert_eq!(r[3], f32::INFINITY);
    let r = op(v("x") / v("y") + v("x"));
    let expected: Vec<f32> = a.iter().zip(&bv).map(|(x, y)| x / y + x).collect();
    assert_eq!(r, expected);
    // 2^24 + 1 is not a float32.
    let r = op(v("x") + v("y") - v("x"));
    let expected: Vec<f32> = a.iter().zip(&bv).map(|(x, y)| x + y - x).collect();
    assert_eq!(r, expected);
    assert_eq!(r[4], 0.0);
    let r = op(call(Intrinsic::Sqrt, vec![v("x")]));
    let expected: Vec<f32> = a.iter().map(|x| x.sqrt()).collect();
    assert_eq!(r, expected);
    // Transcendental functions: within float32 precision of the exact value.
    let r = op(call(
        Intrinsic::Exp,
        vec![v("y") * Expr::Lit(Literal::f32(0.01))],
    ));
    for (got, y) in r.iter().zip(&bv) {
        let exact = (f64::from(*y) * f64::from(0.01f32)).exp();
        if exact.is_finite() {
            assert!(
                (f64::from(*got) - exact).abs() <= exact * 1.2e-7,
                "{got} vs {exact}"
            );
        }
    }
}

#[test]
fn float64_arithmetic() {
    let a = [0.1, 1e308, -3.5, 2.0, 1.0];
    let bv = [0.2, 10.0, 0.0, -0.0, 3.0];
    assert_same_f64(
        &f64_op(&a, &bv, v("x") + v("y")),
        &a.iter().zip(&bv).map(|(x, y)| x + y).collect::<Vec<_>>(),
    );
    let r = f64_op(&a, &bv, v("x") * v("y") / v("y"));
    assert_same_f64(
        &r,
        &a.iter()
            .zip(&bv)
            .map(|(x, y)| x * y / y)
            .collect::<Vec<_>>(),
    );
    assert_eq!(r[1], f64::INFINITY); // overflowed
    assert!(r[2].is_nan() && r[3].is_nan());
    let r = f64_op(&a, &bv, v("x") / v("y"));
    assert_eq!(&r[2..], &[f64::NEG_INFINITY, f64::NEG_INFINITY, 1.0 / 3.0]);
    assert_eq!(
        f64_op(&[0.1], &[0.2], v("x") + v("y")),
        vec![0.30000000000000004]
    );
    assert_same_f64(
        &f64_op(
            &[2.0, 2.0, -8.0, 0.0],
            &[10.0, -1.0, 1.0 / 3.0, 0.0],
            bin(BinaryOp::Pow, v("x"), v("y")),
        ),
        &[1024.0, 0.5, f64::NAN, 1.0],
    );
}

#[test]
fn complex128_multiplication_conjugate_abs_and_exp() {
    let c = |re: f64, im: f64| C64::new(re, im);
    let a = vec![c(1.0, 2.0), c(3.0, 4.0), c(0.0, 1.0), c(1.0, 1.0)];
    let bv = vec![c(3.0, -1.0), c(0.5, 0.0), c(0.0, 1.0), c(1.0, -1.0)];
    let op = |out: DType, e: Expr| {
        elementwise(
            Elements::C128(a.clone()),
            Elements::C128(bv.clone()),
            out,
            vec![assign("z", e)],
        )
    };
    assert_eq!(
        op(DType::Complex128, v("x") * v("y")),
        Elements::C128(vec![c(5.0, 5.0), c(1.5, 2.0), c(-1.0, 0.0), c(2.0, 0.0)])
    );
    assert_eq!(
        op(DType::Complex128, v("x") * v("y") / v("y")),
        Elements::C128(vec![c(1.0, 2.0), c(3.0, 4.0), c(0.0, 1.0), c(1.0, 1.0)])
    );
    assert_eq!(
        op(
            DType::Complex128,
            call(Intrinsic::Conj, vec![v("x")]) + v("y")
        ),
        Elements::C128(vec![c(4.0, -3.0), c(3.5, -4.0), c(0.0, 0.0), c(2.0, -2.0)])
    );
    assert_eq!(
        op(F64, call(Intrinsic::Abs, vec![v("x")])),
        Elements::F64(vec![5f64.sqrt(), 5.0, 1.0, std::f64::consts::SQRT_2])
    );
    assert_eq!(
        op(
            F64,
            call(Intrinsic::Real, vec![v("x") * v("y")]) + call(Intrinsic::Imag, vec![v("x")])
        ),
        Elements::F64(vec![7.0, 5.5, 0.0, 3.0])
    );
    let Elements::C128(e) = op(DType::Complex128, call(Intrinsic::Exp, vec![v("x")])) else {
        panic!()
    };
    // exp(a + bi) = e^a (cos b + i sin b); exp(i) = cos 1 + i sin 1.
    let expected: Vec<C64> = a
        .iter()
        .map(|z| c(z.re.exp() * z.im.cos(), z.re.exp() * z.im.sin()))
        .collect();
    for (got, want) in e.iter().zip(&expected) {
        assert!(
            close(got.re, want.re) && close(got.im, want.im),
            "{got} vs {want}"
        );
    }
    assert!(close(e[2].re, 1f64.cos()) && close(e[2].im, 1f64.sin()));
    // complex(re, im) builds a value from two floats.
    let z = elementwise(
        Elements::F64(vec![1.5, -2.0]),
        Elements::F64(vec![0.25, 8.0]),
        DType::Complex128,
        vec![assign("z", call(Intrinsic::Complex, vec![v("x"), v("y")]))],
    );
    assert_eq!(z, Elements::C128(vec![c(1.5, 0.25), c(-2.0, 8.0)]));
}

#[test]
fn complex64_keeps_both_parts_in_single_precision() {
    let c = |re: f32, im: f32| Complex::new(re, im);
    let a = vec![c(1.5, 2.0), c(3.0, 4.0), c(3.0, 0.0)];
    let bv = vec![c(0.5, -4.0), c(1.0, 0.0), c(1.0, 0.0)];
    let third = Expr::Lit(Literal::Complex {
        re: 1.0 / 3.0,
        im: 0.1,
        dtype: DType::Complex64,
    });
    let prod = elementwise(
        Elements::C64(a.clone()),
        Elements::C64(bv.clone()),
        DType::Complex64,
        vec![assign("z", v("x") * v("y"))],
    );
    assert_eq!(
        prod,
        Elements::C64(vec![c(8.75, -5.0), c(3.0, 4.0), c(3.0, 0.0)])
    );
    // A literal of the type is rounded to single precision: 3 * (1/3 as f32)
    // and 3 * (0.1 as f32), each rounded once.
    let scaled = elementwise(
        Elements::C64(a.clone()),
        Elements::C64(bv.clone()),
        DType::Complex64,
        vec![assign("z", v("y") * third)],
    );
    let (t, d) = (1.0f32 / 3.0, 0.1f32);
    let Elements::C64(s) = scaled else { panic!() };
    assert_eq!(s[1], c(t, d));
    assert_eq!(s[0], c(0.5 * t + 4.0 * d, 0.5 * d - 4.0 * t));
    let conj = elementwise(
        Elements::C64(a.clone()),
        Elements::C64(bv.clone()),
        DType::Complex64,
        vec![assign("z", call(Intrinsic::Conj, vec![v("x")]) * v("y"))],
    );
    // (1.5 - 2i)(0.5 - 4i) = 0.75 - 6i - i - 8 = -7.25 - 7i.
    assert_eq!(
        conj,
        Elements::C64(vec![c(-7.25, -7.0), c(3.0, -4.0), c(3.0, 0.0)])
    );
    let Elements::C64(e) = elementwise(
        Elements::C64(a.clone()),
        Elements::C64(bv.clone()),
        DType::Complex64,
        vec![assign("z", call(Intrinsic::Exp, vec![v("x")]))],
    ) else {
        panic!()
    };
    for (got, z) in e.iter().zip(&a) {
        // e^a (cos b + i sin b), to single precision.
        let (re, im) = (f64::from(z.re), f64::from(z.im));
        let (wr, wi) = (re.exp() * im.cos(), re.exp() * im.sin());
        let tol = 1.2e-7 * re.exp();
        assert!(
            (f64::from(got.re) - wr).abs() <= tol && (f64::from(got.im) - wi).abs() <= tol,
            "{got} vs {wr} + {wi}i"
        );
    }
    let abs = elementwise(
        Elements::C64(a),
        Elements::C64(bv),
        DType::Float32,
        vec![assign("z", call(Intrinsic::Abs, vec![v("x")]))],
    );
    assert_eq!(abs, Elements::F32(vec![2.5, 5.0, 3.0]));
}

#[test]
fn integer_floor_division_and_modulo_follow_python_and_division_truncates() {
    let a = vec![7, -7, 7, -7, 6, -6, 0, i64::MAX];
    let bv = vec![2, 2, -2, -2, 3, 3, -5, -1];
    let op = |e: Expr| {
        i64_elements(elementwise(
            Elements::I64(a.clone()),
            Elements::I64(bv.clone()),
            I64,
            vec![assign("z", e)],
        ))
    };
    assert_eq!(
        op(bin(BinaryOp::FloorDiv, v("x"), v("y"))),
        vec![3, -4, -4, 3, 2, -2, 0, -i64::MAX]
    );
    assert_eq!(
        op(bin(BinaryOp::Mod, v("x"), v("y"))),
        vec![1, 1, -1, -1, 0, 0, 0, 0]
    );
    assert_eq!(
        op(bin(BinaryOp::Div, v("x"), v("y"))),
        vec![3, -3, -3, 3, 2, -2, 0, -i64::MAX]
    );
    // On int8 the result wraps: -128 // -1 is 128, which is -128.
    let r = elementwise(
        Elements::I8(vec![-128, -7, 7]),
        Elements::I8(vec![-1, 2, -3]),
        DType::Int8,
        vec![assign(
            "z",
            bin(BinaryOp::FloorDiv, v("x"), v("y")) * int(10, DType::Int8)
                + bin(BinaryOp::Mod, v("x"), v("y")),
        )],
    );
    // -128 * 10 wraps to 0; -4 * 10 + 1; -3 * 10 + -2.
    assert_eq!(r, Elements::I8(vec![0, -39, -32]));
}

#[test]
fn float_floor_division_and_modulo_follow_python() {
    let a = [7.5, -7.5, 7.5, -7.5, 1.0, -4.0, 4.0, 0.5];
    let bv = [2.0, 2.0, -2.0, -2.0, 0.1, 2.0, -2.0, 0.0];
    let fdiv = f64_op(&a, &bv, bin(BinaryOp::FloorDiv, v("x"), v("y")));
    // Python: 1.0 // 0.1 == 9.0 (1.0 is slightly less than 10 * 0.1 as a double).
    assert_eq!(&fdiv[..7], &[3.0, -4.0, -4.0, 3.0, 9.0, -2.0, -2.0]);
    assert_eq!(fdiv[7], f64::INFINITY);
    let fmod = f64_op(&a, &bv, bin(BinaryOp::Mod, v("x"), v("y")));
    // Python: 1.0 % 0.1 == 0.09999999999999995.
    assert_eq!(
        &fmod[..7],
        &[1.5, 0.5, -0.5, -1.5, 0.09999999999999995, 0.0, 0.0]
    );
    assert!(fmod[7].is_nan());
    // A zero remainder has the sign of the divisor, as in Python.
    assert!(fmod[5].is_sign_positive() && fmod[6].is_sign_negative());
    // x == (x // y) * y + x % y where the quotient is exact.
    for k in 0..4 {
        assert_eq!(fdiv[k] * bv[k] + fmod[k], a[k]);
    }
}

#[test]
fn min_and_max_propagate_nan_like_numpy() {
    let nan = f64::NAN;
    let a = [nan, 1.0, 2.0, nan, -0.5];
    let bv = [1.0, nan, 3.0, nan, -1.5];
    assert_same_f64(
        &f64_op(&a, &bv, call(Intrinsic::Min, vec![v("x"), v("y")])),
        &[nan, nan, 2.0, nan, -1.5],
    );
    assert_same_f64(
        &f64_op(&a, &bv, call(Intrinsic::Max, vec![v("x"), v("y")])),
        &[nan, nan, 3.0, nan, -0.5],
    );
    let r = elementwise(
        Elements::I64(vec![3, -4, i64::MIN]),
        Elements::I64(vec![-5, 2, 0]),
        I64,
        vec![assign(
            "z",
            call(Intrinsic::Min, vec![v("x"), v("y")]) * Expr::i64(1000)
                + call(Intrinsic::Max, vec![v("x"), v("y")]),
        )],
    );
    assert_eq!(
        i64_elements(r),
        vec![-5000 + 3, -4000 + 2, i64::MIN.wrapping_mul(1000)]
    );
}

#[test]
fn math_intrinsics() {
    use std::f64::consts::{E, FRAC_PI_4, LN_10, SQRT_2};
    let x = [-2.5, -0.5, 0.0, 0.7, 2.0, 10.0];
    let y = [1.0, -1.0, 3.0, 0.5, -2.0, 0.25];
    let unary = |f: Intrinsic, reference: fn(f64) -> f64| {
        let got = f64_op(&x, &y, call(f, vec![v("x")]));
        let want: Vec<f64> = x.iter().map(|&a| reference(a)).collect();
        assert_close(&got, &want);
        got
    };
    let sqrt = unary(Intrinsic::Sqrt, f64::sqrt);
    assert!(sqrt[0].is_nan());
    assert!(close(sqrt[4], SQRT_2));
    let exp = unary(Intrinsic::Exp, f64::exp);
    assert_eq!(exp[2], 1.0);
    let log = unary(Intrinsic::Log, f64::ln);
    assert!(close(log[5], LN_10));
    assert_eq!(log[2], f64::NEG_INFINITY);
    unary(Intrinsic::Sin, f64::sin);
    unary(Intrinsic::Cos, f64::cos);
    unary(Intrinsic::Tan, f64::tan);
    let tanh = unary(Intrinsic::Tanh, f64::tanh);
    assert!(close(tanh[4], (E.powi(4) - 1.0) / (E.powi(4) + 1.0)));
    unary(Intrinsic::Atan, f64::atan);
    // The rest of C's real functions, against Rust's (NaN outside the domain).
    unary(Intrinsic::Log2, f64::log2);
    unary(Intrinsic::Log10, f64::log10);
    let log1p = unary(Intrinsic::Log1p, f64::ln_1p);
    assert!(log1p[0].is_nan());
    unary(Intrinsic::Expm1, f64::exp_m1);
    assert_eq!(unary(Intrinsic::Exp2, f64::exp2)[4], 4.0);
    unary(Intrinsic::Sinh, f64::sinh);
    unary(Intrinsic::Cosh, f64::cosh);
    assert!(unary(Intrinsic::Asin, f64::asin)[4].is_nan());
    unary(Intrinsic::Acos, f64::acos);
    unary(Intrinsic::Asinh, f64::asinh);
    assert!(unary(Intrinsic::Acosh, f64::acosh)[3].is_nan());
    unary(Intrinsic::Atanh, f64::atanh);
    assert_eq!(unary(Intrinsic::Cbrt, f64::cbrt)[5], 10f64.cbrt());
    assert_eq!(
        unary(Intrinsic::Trunc, f64::trunc),
        vec![-2.0, -0.0, 0.0, 0.0, 2.0, 10.0]
    );
    assert_eq!(
        unary(Intrinsic::Rint, f64::round_ties_even),
        vec![-2.0, -0.0, 0.0, 1.0, 2.0, 10.0]
    );
    // frexp: x = m * 2**e with 0.5 <= |m| < 1.
    let m = unary(Intrinsic::FrexpMantissa, |x| {
        if x == 0.0 {
            0.0
        } else {
            x / 2f64.powi(x.abs().log2().floor() as i32 + 1)
        }
    });
    assert_eq!(m, vec![-0.625, -0.5, 0.0, 0.7, 0.5, 0.625]);
    assert_eq!(
        unary(Intrinsic::Floor, f64::floor),
        vec![-3.0, -1.0, 0.0, 0.0, 2.0, 10.0]
    );
    assert_eq!(
        unary(Intrinsic::Ceil, f64::ceil),
        vec![-2.0, -0.0, 0.0, 1.0, 2.0, 10.0]
    );
    assert_eq!(
        unary(Intrinsic::Abs, f64::abs),
        vec![2.5, 0.5, 0.0, 0.7, 2.0, 10.0]
    );
    let atan2 = f64_op(&x, &y, call(Intrinsic::Atan2, vec![v("y"), v("x")]));
    assert_close(
        &atan2,
        &x.iter()
            .zip(&y)
            .map(|(a, b)| b.atan2(*a))
            .collect::<Vec<_>>(),
    );
    // atan2(1, -2.5) is in the second quadrant; atan2(-1, -0.5) in the third.
    assert!(atan2[0] > 2.0 * FRAC_PI_4 && atan2[1] < -2.0 * FRAC_PI_4);
    assert!(close(
        f64_op(
            &[-1.0],
            &[1.0],
            call(Intrinsic::Atan2, vec![v("y"), v("x")])
        )[0],
        3.0 * FRAC_PI_4
    ));
    let pow = f64_op(&x, &y, call(Intrinsic::Pow, vec![v("x"), v("y")]));
    assert_close(
        &pow,
        &x.iter()
            .zip(&y)
            .map(|(a, b)| a.powf(*b))
            .collect::<Vec<_>>(),
    );
    assert_eq!(&pow[4..], &[0.25, 10f64.sqrt().sqrt()]);
    // Integer abs, and isnan.
    let r = elementwise(
        Elements::I32(vec![-5, 7, i32::MIN]),
        Elements::I32(vec![0; 3]),
        DType::Int32,
        vec![assign("z", call(Intrinsic::Abs, vec![v("x")]))],
    );
    assert_eq!(r, Elements::I32(vec![5, 7, i32::MIN]));
    let r = elementwise(
        Elements::F64(vec![f64::NAN, 1.0, f64::INFINITY]),
        Elements::F64(vec![0.0; 3]),
        DType::Bool,
        vec![assign("z", call(Intrinsic::IsNan, vec![v("x")]))],
    );
    assert_eq!(r, Elements::Bool(vec![true, false, false]));
}

#[test]
fn casts_truncate_toward_zero_wrap_integers_and_round_once() {
    let x = vec![2.7, -2.7, -0.5, 300.7, -300.0, f64::NAN, 1e20, 127.9];
    let cast = |to: DType| {
        elementwise(
            Elements::F64(x.clone()),
            Elements::F64(x.clone()),
            to,
            vec![assign("z", Expr::cast(to, v("x")))],
        )
    };
    // In range: truncation toward zero.
    let Elements::I64(r) = cast(I64) else {
        panic!()
    };
    assert_eq!(&r[..5], &[2, -2, 0, 300, -300]);
    // Out of range: saturation at the target's limits, NaN to 0 (the
    // documented conversion, and what a GPU's cvt.rzi does).
    assert_eq!(r[5], 0);
    assert_eq!(r[6], i64::MAX);
    assert_eq!(
        cast(DType::Int8),
        Elements::I8(vec![2, -2, 0, 127, -128, 0, 127, 127])
    );
    assert_eq!(
        cast(DType::UInt8),
        Elements::U8(vec![2, 0, 0, 255, 0, 0, 255, 127])
    );
    assert_eq!(
        cast(DType::Int32),
        Elements::I32(vec![2, -2, 0, 300, -300, 0, i32::MAX, 127])
    );
    let Elements::F32(r) = cast(DType::Float32) else {
        panic!()
    };
    let expected: Vec<f64> = x.iter().map(|&a| f64::from(a as f32)).collect();
    assert_same_f64(
        &r.iter().map(|&a| f64::from(a)).collect::<Vec<_>>(),
        &expected,
    );
    // Integer to integer wraps.
    let r = elementwise(
        Elements::I64(vec![300, -129, 65535, -1]),
        Elements::U16(vec![65535, 32768, 1, 0]),
        DType::Int16,
        vec![assign(
            "z",
            Expr::cast(DType::Int16, Expr::cast(DType::Int8, v("x")))
                + Expr::cast(DType::Int16, v("y")),
        )],
    );
    // i8(300) = 44, i8(-129) = 127, i8(65535) = -1, i8(-1) = -1; i16(65535) = -1, i16(32768) = -32768.
    assert_eq!(r, Elements::I16(vec![43, 127 + i16::MIN, 0, -1]));
    // Integer to float32 rounds once, directly: 2^60 + 2^36 + 1 is just above
    // the midpoint between two float32 values and rounds up (rounding to
    // float64 first would land on the midpoint and round down to even).
    let big = (1i64 << 60) + (1 << 36) + 1;
    let r = elementwise(
        Elements::I64(vec![big, 16_777_217, -3]),
        Elements::I64(vec![0; 3]),
        DType::Float32,
        vec![assign("z", Expr::cast(DType::Float32, v("x")))],
    );
    assert_eq!(
        r,
        Elements::F32(vec![2f32.powi(60) + 2f32.powi(37), 16_777_216.0, -3.0])
    );
    assert_eq!(big as f32, 2f32.powi(60) + 2f32.powi(37));
}

// ---------------------------------------------------------------------------
// Write-conflict resolution

#[test]
fn wcr_sum_product_min_max_into_scalars_from_a_map() {
    let mut bl = b("reduce_scalars");
    bl.symbol("N")
        .array("x", F64, "N")
        .scalar("s", F64)
        .scalar("p", F64)
        .scalar("lo", F64)
        .scalar("hi", F64)
        .scalar("count", DType::Int8)
        .scalar("iprod", DType::Int8);
    bl.state("reduce", |s| {
        let x = s.access("x");
        let outs = ["s", "p", "lo", "hi", "count", "iprod"].map(|n| s.access(n));
        let (en, ex) = s.map("m", "i = 0:N", Schedule::Default);
        let t = s.tasklet(
            "t",
            vec![fc("a")],
            vec![
                fc("o1"),
                fc("o2"),
                fc("o3"),
                fc("o4"),
                sc("o5", DType::Int8),
                sc("o6", DType::Int8),
            ],
            vec![
                assign("o1", v("a")),
                assign("o2", v("a")),
                assign("o3", v("a")),
                assign("o4", v("a")),
                assign("o5", int(100, DType::Int8)),
                assign("o6", Expr::cast(DType::Int8, v("i") + Expr::i64(2))),
            ],
        );
        s.path(&[x, en, t], None, Some("a"), "x[i]");
        s.path(&[t, ex, outs[0]], Some("o1"), None, ("s[0]", Wcr::Sum));
        s.path(&[t, ex, outs[1]], Some("o2"), None, ("p[0]", Wcr::Product));
        s.path(&[t, ex, outs[2]], Some("o3"), None, ("lo[0]", Wcr::Min));
        s.path(&[t, ex, outs[3]], Some("o4"), None, ("hi[0]", Wcr::Max));
        s.path(&[t, ex, outs[4]], Some("o5"), None, ("count[0]", Wcr::Sum));
        s.path(
            &[t, ex, outs[5]],
            Some("o6"),
            None,
            ("iprod[0]", Wcr::Product),
        );
    });
    let sdfg = build(bl);
    let x = vec![3.0, -1.0, 4.0, 1.5, -9.0, 2.5];
    let n = x.len();
    let i8v = |v: i8| ArrayValue::new(vec![], Elements::I8(vec![v]));
    let args = Arguments::default()
        .symbol("N", n as i64)
        .array("x", ArrayValue::f64(vec![n], x.clone()))
        .array("s", scalar_f64(100.0))
        .array("p", scalar_f64(2.0))
        .array("lo", scalar_f64(-5.0))
        .array("hi", scalar_f64(3.5))
        .array("count", i8v(0))
        .array("iprod", i8v(1));
    let r = run_ok(&sdfg, &args);
    let (mut s, mut p, mut lo, mut hi) = (100.0, 2.0, -5.0f64, 3.5f64);
    let (mut count, mut iprod) = (0i8, 1i8);
    for (i, &a) in x.iter().enumerate() {
        s += a;
        p *= a;
        lo = lo.min(a);
        hi = hi.max(a);
        count = count.wrapping_add(100);
        iprod = iprod.wrapping_mul(i as i8 + 2);
    }
    assert_eq!(f64s(&r, "s"), vec![s]);
    assert_eq!(f64s(&r, "p"), vec![p]);
    assert_eq!(f64s(&r, "lo"), vec![-9.0]);
    assert_eq!(lo, -9.0);
    assert_eq!(f64s(&r, "hi"), vec![hi]);
    assert_eq!(hi, 4.0);
    // 600 wraps to 88; 2*3*4*5*6*7 = 5040 wraps to -80.
    assert_eq!(r.outputs["count"].elements, Elements::I8(vec![count]));
    assert_eq!(count, 88);
    assert_eq!(r.outputs["iprod"].elements, Elements::I8(vec![iprod]));
    assert_eq!(iprod, -80);
}

#[test]
fn wcr_into_arrays_from_a_2d_map() {
    let mut bl = b("reduce_arrays");
    bl.symbol("N")
        .symbol("M")
        .array("A", F64, "N, M")
        .array("rowsum", F64, "N")
        .array("rowprod", F64, "N")
        .array("colmin", F64, "M")
        .array("colmax", I64, "M");
    bl.state("reduce", |s| {
        let a = s.access("A");
        let (rs, rp, cmin, cmax) = (
            s.access("rowsum"),
            s.access("rowprod"),
            s.access("colmin"),
            s.access("colmax"),
        );
        let (en, ex) = s.map("m", "i = 0:N, j = 0:M", Schedule::Default);
        let t = s.tasklet(
            "t",
            vec![fc("a")],
            vec![fc("o1"), fc("o2"), fc("o3"), sc("o4", I64)],
            vec![
                assign("o1", v("a")),
                assign("o2", v("a")),
                assign("o3", v("a")),
                assign("o4", Expr::cast(I64, v("a")) * v("i")),
            ],
        );
        s.path(&[a, en, t], None, Some("a"), "A[i, j]");
        s.path(&[t, ex, rs], Some("o1"), None, ("rowsum[i]", Wcr::Sum));
        s.path(&[t, ex, rp], Some("o2"), None, ("rowprod[i]", Wcr::Product));
        s.path(&[t, ex, cmin], Some("o3"), None, ("colmin[j]", Wcr::Min));
        s.path(&[t, ex, cmax], Some("o4"), None, ("colmax[j]", Wcr::Max));
    });
    let sdfg = build(bl);
    let (n, m) = (3, 4);
    let a = mat(n, m, |i, j| ((i * 7 + j * 3) % 5) as f64 - 2.0);
    let args = Arguments::default()
        .symbol("N", n as i64)
        .symbol("M", m as i64)
        .array("A", ArrayValue::f64(vec![n, m], a.clone()))
        .array("rowsum", ArrayValue::f64(vec![n], vec![0.5; n]))
        .array("rowprod", ArrayValue::f64(vec![n], vec![1.0; n]))
        .array("colmin", ArrayValue::f64(vec![m], vec![0.0; m]))
        .array("colmax", ArrayValue::i64(vec![m], vec![-100; m]));
    let r = run_ok(&sdfg, &args);
    let (mut rs, mut rp) = (vec![0.5; n], vec![1.0; n]);
    let (mut cmin, mut cmax) = (vec![0.0f64; m], vec![-100i64; m]);
    for i in 0..n {
        for j in 0..m {
            let x = a[i * m + j];
            rs[i] += x;
            rp[i] *= x;
            cmin[j] = cmin[j].min(x);
            cmax[j] = cmax[j].max(x as i64 * i as i64);
        }
    }
    assert_eq!(f64s(&r, "rowsum"), rs);
    assert_eq!(f64s(&r, "rowprod"), rp);
    assert_eq!(f64s(&r, "colmin"), cmin);
    assert_eq!(i64s(&r, "colmax"), cmax);
}

// ---------------------------------------------------------------------------
// Faults and errors

#[test]
fn integer_division_by_zero_in_a_tasklet_is_a_fault() {
    for staged in [false, true] {
        for op in [BinaryOp::Div, BinaryOp::FloorDiv, BinaryOp::Mod] {
            let err = elementwise_run(
                &Elements::I32(vec![1, 2, 3]),
                &Elements::I32(vec![1, 0, 1]),
                DType::Int32,
                &[assign("z", bin(op, v("x"), v("y")))],
                staged,
            )
            .unwrap_err();
            match err {
                SimError::DivisionByZero { at } => {
                    assert_eq!((&*at.block, &*at.node), ("compute", "op"));
                }
                other => panic!("expected a division by zero, got {other}"),
            }
        }
    }
    // Float division by zero is not a fault.
    assert_eq!(f64_op(&[1.0], &[0.0], v("x") / v("y")), vec![f64::INFINITY]);
}

#[test]
fn reading_an_uninitialised_transient_names_it() {
    let mut bl = b("uninit");
    bl.symbol("N").array("y", F64, "N").transient("t", F64, "N");
    bl.state("write_first", |s| {
        let t = s.access("t");
        let k = s.tasklet(
            "k",
            vec![],
            vec![fc("o")],
            vec![assign("o", Expr::f64(1.0))],
        );
        s.edge(k, Some("o"), t, None, "t[0]");
    });
    bl.state("read_all", |s| {
        let (t, y) = (s.access("t"), s.access("y"));
        let (en, ex) = s.map("m", "i = 0:N", Schedule::Default);
        let k = s.tasklet(
            "copy",
            vec![fc("a")],
            vec![fc("o")],
            vec![assign("o", v("a"))],
        );
        s.path(&[t, en, k], None, Some("a"), "t[i]");
        s.path(&[k, ex, y], Some("o"), None, "y[i]");
    });
    let sdfg = build(bl);
    let args = |n: usize| {
        Arguments::default()
            .symbol("N", n as i64)
            .array("y", ArrayValue::f64(vec![n], vec![0.0; n]))
    };
    // t[0] was written: N = 1 runs.
    assert_eq!(f64s(&run_ok(&sdfg, &args(1)), "y"), vec![1.0]);
    let err = run(&sdfg, &args(3)).unwrap_err();
    match &err {
        SimError::Uninitialized {
            container,
            index,
            at,
        } => {
            assert_eq!(container, "t");
            assert_eq!(*index, 1);
            assert_eq!((&*at.block, &*at.node), ("read_all", "copy"));
        }
        other => panic!("expected an uninitialised read, got {other}"),
    }
    assert!(err.to_string().contains("`t`"), "{err}");
}

#[test]
fn an_unwritten_element_copied_into_an_argument_is_still_unwritten() {
    // Found by `cargo xtask fuzz --target dace-mutants`: a map writing all
    // but column 0 of a transient, copied whole into an argument read by
    // the next iteration. The host run read the garbage silently (an
    // argument's elements were all taken as written); the offloaded run,
    // whose copy lands in a tracked device twin, faulted.
    let mut bl = b("copied_uninit");
    bl.symbol("N")
        .array("y", F64, "N")
        .array("z", F64, "N")
        .transient("t", F64, "N");
    bl.state("write_first", |s| {
        let t = s.access("t");
        let k = s.tasklet(
            "k",
            vec![],
            vec![fc("o")],
            vec![assign("o", Expr::f64(1.0))],
        );
        s.edge(k, Some("o"), t, None, "t[0]");
    });
    bl.state("copy_all", |s| {
        let (t, y) = (s.access("t"), s.access("y"));
        s.edge(t, None, y, None, "y[0:N]");
    });
    bl.state("read_all", |s| {
        let (y, z) = (s.access("y"), s.access("z"));
        let (en, ex) = s.map("m", "i = 0:N", Schedule::Default);
        let k = s.tasklet(
            "use",
            vec![fc("a")],
            vec![fc("o")],
            vec![assign("o", v("a"))],
        );
        s.path(&[y, en, k], None, Some("a"), "y[i]");
        s.path(&[k, ex, z], Some("o"), None, "z[i]");
    });
    let sdfg = build(bl);
    let args = |n: usize| {
        Arguments::default()
            .symbol("N", n as i64)
            .array("y", ArrayValue::f64(vec![n], vec![5.0; n]))
            .array("z", ArrayValue::f64(vec![n], vec![0.0; n]))
    };
    // Only t[0] was written: N = 1 runs.
    assert_eq!(f64s(&run_ok(&sdfg, &args(1)), "z"), vec![1.0]);
    match run(&sdfg, &args(3)).unwrap_err() {
        SimError::Uninitialized {
            container,
            index,
            at,
        } => {
            assert_eq!((container.as_str(), index), ("y", 1));
            assert_eq!((&*at.block, &*at.node), ("read_all", "use"));
        }
        other => panic!("expected an uninitialised read, got {other}"),
    }
}

#[test]
fn missing_arguments_are_reported_by_name() {
    let sdfg = sdfg_ir::examples::axpy().unwrap();
    let full = Arguments::default()
        .symbol("N", 2)
        .array("a", scalar_f64(2.0))
        .array("x", ArrayValue::f64(vec![2], vec![1.0, 2.0]))
        .array("y", ArrayValue::f64(vec![2], vec![0.0, 0.0]));
    assert_eq!(f64s(&run_ok(&sdfg, &full), "y"), vec![2.0, 4.0]);
    let mut no_x = full.clone();
    no_x.arrays.remove("x");
    assert_eq!(
        run(&sdfg, &no_x).unwrap_err(),
        SimError::MissingArgument {
            name: "x".to_owned()
        }
    );
    let mut no_n = full.clone();
    no_n.symbols.remove("N");
    assert_eq!(
        run(&sdfg, &no_n).unwrap_err(),
        SimError::MissingArgument {
            name: "N".to_owned()
        }
    );
    let mut no_a = full;
    no_a.arrays.remove("a");
    assert_eq!(
        run(&sdfg, &no_a).unwrap_err(),
        SimError::MissingArgument {
            name: "a".to_owned()
        }
    );
}

#[test]
fn arguments_of_the_wrong_dtype_or_shape_are_bad_arguments() {
    let sdfg = sdfg_ir::examples::axpy().unwrap();
    let args = |x: ArrayValue| {
        Arguments::default()
            .symbol("N", 2)
            .array("a", scalar_f64(2.0))
            .array("x", x)
            .array("y", ArrayValue::f64(vec![2], vec![0.0, 0.0]))
    };
    for bad in [
        ArrayValue::new(vec![2], Elements::F32(vec![1.0, 2.0])),
        ArrayValue::i64(vec![2], vec![1, 2]),
        ArrayValue::f64(vec![3], vec![1.0, 2.0, 3.0]),
        ArrayValue::f64(vec![1, 2], vec![1.0, 2.0]),
        ArrayValue::f64(vec![], vec![1.0]),
    ] {
        match run(&sdfg, &args(bad.clone())) {
            Err(SimError::BadArgument { name, .. }) => assert_eq!(name, "x"),
            other => panic!("expected a bad argument for {bad:?}, got {other:?}"),
        }
    }
    // A scalar given as an array of one element is accepted.
    let one = args(ArrayValue::f64(vec![2], vec![1.0, 2.0]))
        .array("a", ArrayValue::f64(vec![1], vec![3.0]));
    assert_eq!(f64s(&run_ok(&sdfg, &one), "y"), vec![3.0, 6.0]);
}

#[test]
fn a_kernel_map_counts_one_launch_per_execution() {
    let mut bl = b("launches");
    bl.symbol("N").symbol("R").array("x", F64, "N").container(
        "x_dev",
        DataDesc::array(F64, vec![SymExpr::symbol("N")])
            .into_transient()
            .with_storage(Storage::DeviceGlobal),
    );
    bl.state("copy_in", |s| {
        let (x, xd) = (s.access("x"), s.access("x_dev"));
        s.edge(x, None, xd, None, "x");
    });
    bl.for_loop("repeat", "r", "0", "R", 1, |bl| {
        bl.state("kernel", |s| {
            let (xi, xo) = (s.access("x_dev"), s.access("x_dev"));
            let (en, ex) = s.map("inc", "i = 0:N", Schedule::DeviceKernel);
            let t = s.tasklet(
                "inc",
                vec![fc("a")],
                vec![fc("o")],
                vec![assign("o", v("a") + Expr::f64(1.0))],
            );
            s.path(&[xi, en, t], None, Some("a"), "x_dev[i]");
            s.path(&[t, ex, xo], Some("o"), None, "x_dev[i]");
        });
    });
    bl.state("copy_out", |s| {
        let (xd, x) = (s.access("x_dev"), s.access("x"));
        s.edge(xd, None, x, None, "x_dev");
    });
    bl.state("host_map", |s| {
        let (xi, xo) = (s.access("x"), s.access("x"));
        let (en, ex) = s.map("double", "i = 0:N", Schedule::Sequential);
        let t = s.tasklet(
            "double",
            vec![fc("a")],
            vec![fc("o")],
            vec![assign("o", v("a") * Expr::f64(2.0))],
        );
        s.path(&[xi, en, t], None, Some("a"), "x[i]");
        s.path(&[t, ex, xo], Some("o"), None, "x[i]");
    });
    let sdfg = build(bl);
    let result = |repeats: i64| {
        let args = Arguments::default()
            .symbol("N", 3)
            .symbol("R", repeats)
            .array("x", ArrayValue::f64(vec![3], vec![0.0, 1.0, 2.0]));
        run_ok(&sdfg, &args)
    };
    let r = result(3);
    assert_eq!(r.report.launches, 3);
    assert_eq!(f64s(&r, "x"), vec![6.0, 8.0, 10.0]);
    let r = result(0);
    assert_eq!(r.report.launches, 0);
    assert_eq!(f64s(&r, "x"), vec![0.0, 2.0, 4.0]);
}

#[test]
fn indirect_accesses_out_of_bounds_name_the_container() {
    let sdfg = sdfg_ir::examples::spmv_indirect().unwrap();
    // Column index 9 in a row: the load from `x` (4 elements) is out of bounds.
    match run(&sdfg, &csr_args(vec![0, 2, 1, 9, 3], 3)).unwrap_err() {
        SimError::OutOfBounds {
            container,
            index,
            len,
            at,
        } => {
            assert_eq!(container, "x");
            assert_eq!((index, len), (9, 4));
            assert_eq!((&*at.block, &*at.node), ("row", "gather"));
        }
        other => panic!("expected an out-of-bounds access, got {other}"),
    }
    // No rows (M = 0): the histogram's indirect store into `hist` is out of bounds.
    match run(&sdfg, &csr_args(vec![0, 2, 1, 2, 4], 0)).unwrap_err() {
        SimError::OutOfBounds {
            container,
            index,
            at,
            ..
        } => {
            assert_eq!(container, "hist");
            assert_eq!(index, 4);
            assert_eq!((&*at.block, &*at.node), ("histogram", "scatter"));
        }
        other => panic!("expected an out-of-bounds access, got {other}"),
    }
}

#[test]
fn allocations_beyond_the_memory_limit_are_errors_naming_the_container() {
    let (n, k) = (4, 2);
    let args = Arguments::default()
        .symbol("N", n as i64)
        .symbol("K", k as i64)
        // Positive definite, for the Cholesky factorization of the example.
        .array(
            "A",
            ArrayValue::f64(vec![n, n], mat(n, n, |i, j| if i == j { 4.0 } else { 0.5 })),
        )
        .array("B", ArrayValue::f64(vec![n, n], iota(n * n)))
        .array("C", ArrayValue::f64(vec![n, n], iota(n * n)))
        .array("x", ArrayValue::f64(vec![n], iota(n)))
        .array("y", ArrayValue::f64(vec![n], iota(n)))
        .array("T3", ArrayValue::f64(vec![k, n, n], iota(k * n * n)))
        .array("r", scalar_f64(0.0));
    let sdfg = sdfg_ir::examples::linear_algebra().unwrap();
    // The arguments take 712 bytes; the first transient does not fit in 800.
    let err = Simulator::new()
        .max_memory(Some(800))
        .run(sdfg_ir::validate(&sdfg).unwrap(), &args)
        .expect_err("beyond the limit");
    match &err {
        SimError::OutOfMemory {
            container,
            used,
            limit,
            ..
        } => {
            assert!(sdfg.containers[container].transient, "{err}");
            assert_eq!((*used, *limit), (712, 800), "{err}");
        }
        other => panic!("expected OutOfMemory, got {other}"),
    }
    // Without a limit, or with enough, it runs.
    for limit in [None, Some(1 << 20)] {
        let run = Simulator::new()
            .max_memory(limit)
            .run(sdfg_ir::validate(&sdfg).unwrap(), &args);
        assert!(run.is_ok(), "{limit:?}: {:?}", run.err());
    }
}

#[test]
fn layouts_are_checked_again_with_the_symbols_of_the_run() {
    // `y` is allocated `M` elements for its `N`: the validator cannot
    // compare them, the run can.
    let mut sdfg = sdfg_ir::examples::axpy().unwrap();
    sdfg.symbols.insert("M".into(), DType::Int64);
    sdfg.arguments.push("M".into());
    let Some(sdfg_ir::DataKind::Array(layout)) = sdfg.containers.get_mut("y").map(|d| &mut d.kind)
    else {
        panic!("axpy's y is an array");
    };
    layout.total_size = sdfg_ir::SymExpr::symbol("M");
    let args = |m: i64| {
        Arguments::default()
            .symbol("N", 4)
            .symbol("M", m)
            .array("a", scalar_f64(2.0))
            .array("x", ArrayValue::f64(vec![4], iota(4)))
            .array("y", ArrayValue::f64(vec![4], iota(4)))
    };
    let err = run(&sdfg, &args(3)).expect_err("y is one element short");
    assert_eq!(
        err.to_string(),
        "container `y`: its elements lie at 0..=3, outside its allocation of 3 elements"
    );
    assert!(run(&sdfg, &args(4)).is_ok());
}

#[test]
fn sizes_beyond_one_allocation_are_errors_naming_the_container_whatever_the_limit() {
    // `sdfgc run gemm.json --symbols NI=9223372036854775807,NJ=1,NK=1
    // --max-memory none` panicked with "capacity overflow": without a limit
    // nothing checked the bytes before the allocation.
    let axpy = sdfg_ir::examples::axpy().unwrap();
    let symbols = [("N".to_owned(), i64::MAX)].into_iter().collect();
    for limit in [None, Some(sdfg_sim::DEFAULT_MAX_MEMORY)] {
        match sdfg_sim::argument_shapes(&axpy, &symbols, limit) {
            Err(SimError::SizeOverflow {
                container, shape, ..
            }) => {
                assert_eq!(container, "x", "{limit:?}");
                assert_eq!(shape, [i64::MAX as u64], "{limit:?}");
            }
            other => panic!("{limit:?}: expected SizeOverflow, got {other:?}"),
        }
    }
    // Elements that fit in 64 bits of bytes but not in one allocation.
    let big = 1usize << 61;
    let err = sdfg_sim::deterministic_fill("x", DType::Float64, vec![big]).unwrap_err();
    assert!(
        matches!(&err, SimError::SizeOverflow { container, .. } if container == "x"),
        "{err}"
    );
    let err = ArrayValue::try_zeros("x", DType::Float64, vec![big, big]).unwrap_err();
    assert!(matches!(&err, SimError::SizeOverflow { .. }), "{err}");
    // A run: `y` of axpy allocated `M` elements, 2^59 of 8 bytes (a layout
    // the run's checks accept, and memory no machine has), with no memory
    // limit: the allocator's refusal is an error, not an abort.
    let mut sdfg = axpy.clone();
    sdfg.symbols.insert("M".into(), DType::Int64);
    sdfg.arguments.push("M".into());
    let Some(sdfg_ir::DataKind::Array(layout)) = sdfg.containers.get_mut("y").map(|d| &mut d.kind)
    else {
        panic!("axpy's y is an array");
    };
    layout.total_size = sdfg_ir::SymExpr::symbol("M");
    let args = Arguments::default()
        .symbol("N", 4)
        .symbol("M", 1 << 59)
        .array("a", scalar_f64(2.0))
        .array("x", ArrayValue::f64(vec![4], iota(4)))
        .array("y", ArrayValue::f64(vec![4], iota(4)));
    let err = Simulator::new()
        .max_memory(None)
        .run(sdfg_ir::validate(&sdfg).unwrap(), &args)
        .expect_err("beyond the machine");
    assert!(
        matches!(&err, SimError::AllocationFailed { container, bytes } if container == "y" && *bytes == 1 << 62),
        "{err}"
    );
    assert!(err.to_string().contains("container `y`"), "{err}");
}

#[test]
fn subsets_whose_span_overflows_64_bits_are_errors() {
    // Found by `cargo xtask fuzz --target dace-mutants`: a memlet ending at
    // `i64::MAX` (from a DaCe file) overflowed counting its elements. The
    // validator cannot compare these symbolic bounds with `N`; the run
    // must refuse them, not panic or wrap.
    let sym = |t: &str| sdfg_ir::SymExpr::parse(t).unwrap();
    let mut ran = 0;
    for (begin, end) in [
        ("N - N", "9223372036854775807"),
        ("N - 9223372036854775807 - 1", "9223372036854775806"),
        ("N - 9223372036854775807 - 1", "N - 1"),
    ] {
        let mut x = Memlet::new(
            "x",
            Subset::new(vec![sdfg_ir::Range::inclusive(sym(begin), sym(end))]),
        );
        x.other_subset = Some(subset("0:N"));
        x.volume = sym("N");
        let mut bl = b("overflowing_copy");
        bl.symbol("N").array("x", F64, "N").array("y", F64, "N");
        bl.state("copy", move |s| {
            let (xa, ya) = (s.access("x"), s.access("y"));
            s.edge(xa, None, ya, None, x);
        });
        let sdfg = build(bl);
        let n = 4;
        let args = Arguments::default()
            .symbol("N", n as i64)
            .array("x", ArrayValue::f64(vec![n], iota(n)))
            .array("y", ArrayValue::f64(vec![n], iota(n)));
        let valid = match sdfg_ir::validate(&sdfg) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("{begin}:{end}: {e}");
                continue;
            }
        };
        ran += 1;
        let err = Simulator::new().run(valid, &args).unwrap_err();
        assert!(
            matches!(
                err,
                SimError::AddressOverflow { .. } | SimError::OutOfShape { .. }
            ),
            "{begin}:{end}: {err}"
        );
    }
    assert_eq!(ran, 3, "the validator refused some");
}
