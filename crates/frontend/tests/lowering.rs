//! Lowering tests of the frontend.
//!
//! Three kinds of tests, one section each:
//!
//! 1. *Shape*: for every supported construct, a small program whose lowered
//!    SDFG is snapshotted as a compact text summary ([`summary`]): blocks with
//!    their loop headers and conditions, transition assignments, and per
//!    state the nodes in id order (maps with params and ranges, tasklets with
//!    their code, library nodes with their op, access nodes) and every memlet.
//! 2. *Semantics*: most of those programs are also run in the simulator on
//!    small inputs and compared with values computed here in plain Rust.
//! 3. *Errors*: every unsupported or wrong construct is an error of the
//!    expected kind at the expected line and column.
//!
//! Every test program is [`HEADER`] followed by the test's text, which starts
//! with a newline: line 4 is blank, so the decorator is on line 5, `def` on
//! line 6 and the first statement of the body on line 7.

use sdfg_frontend::{ErrorKind, FrontendError, Module};
use sdfg_ir::{BlockKind, DType, LibraryOp, Node, Region, Sdfg, State, code};
use sdfg_sim::{Arguments, ArrayValue, Elements, Simulator};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Lines 1-3 of every test program.
const HEADER: &str = "import numpy as np\n\
                      import dace as dc\n\
                      N, M, K = (dc.symbol(s, dtype=dc.int64) for s in ('N', 'M', 'K'))\n";

const FILE: &str = "test.py";

// ---------------------------------------------------------------------------
// Helpers: compiling, summarising, running.

fn source(body: &str) -> String {
    format!("{HEADER}{body}")
}

#[track_caller]
fn module(body: &str) -> Module {
    Module::parse(FILE, &source(body)).unwrap_or_else(|e| panic!("parse failed: {e}"))
}

/// Compiles the program `f` of `HEADER + body`.
#[track_caller]
fn compile(body: &str) -> Sdfg {
    compile_named(body, "f")
}

#[track_caller]
fn compile_named(body: &str, name: &str) -> Sdfg {
    module(body)
        .compile(name)
        .unwrap_or_else(|e| panic!("compile failed: {e}"))
}

/// The error of parsing `HEADER + body` and compiling its program `f`.
#[track_caller]
fn error(body: &str) -> FrontendError {
    match Module::parse(FILE, &source(body)).and_then(|m| m.compile("f")) {
        Ok(sdfg) => panic!("expected an error, got:\n{}", summary(&sdfg)),
        Err(e) => e,
    }
}

/// Checks the position of the error of `body` and returns its kind.
#[track_caller]
fn error_at(body: &str, line: usize, column: usize) -> ErrorKind {
    let e = error(body);
    assert_eq!(e.at.file, FILE, "{e}");
    assert_eq!(
        (e.at.line, e.at.column),
        (line, column),
        "wrong position: {e}"
    );
    e.kind
}

#[track_caller]
fn assert_unsupported(kind: &ErrorKind, needle: &str) {
    assert!(
        matches!(kind, ErrorKind::Unsupported(m) if m.contains(needle)),
        "expected Unsupported(..{needle}..), got {kind:?}"
    );
}

/// A compact, deterministic text form of an SDFG.
fn summary(sdfg: &Sdfg) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "program {}", sdfg.name);
    let _ = writeln!(out, "arguments: {}", sdfg.arguments.join(", "));
    let symbols: Vec<String> = sdfg
        .symbols
        .iter()
        .map(|(s, t)| format!("{s}: {t}"))
        .collect();
    let _ = writeln!(out, "symbols: {}", symbols.join(", "));
    let _ = writeln!(out, "containers:");
    for (name, desc) in &sdfg.containers {
        let shape = if desc.is_scalar() {
            String::new()
        } else {
            let dims: Vec<String> = desc.shape().iter().map(ToString::to_string).collect();
            format!("[{}]", dims.join(", "))
        };
        let transient = if desc.transient { " (transient)" } else { "" };
        let _ = writeln!(out, "  {name}: {}{shape}{transient}", desc.dtype);
    }
    let _ = writeln!(out, "body:");
    region(&mut out, &sdfg.body, 1);
    out
}

fn pad(depth: usize) -> String {
    "  ".repeat(depth)
}

fn region(out: &mut String, r: &Region, depth: usize) {
    let p = pad(depth);
    for b in &r.blocks {
        match &b.kind {
            BlockKind::State(s) => {
                let _ = writeln!(out, "{p}state {}", b.label);
                state(out, s, depth + 1);
            }
            BlockKind::Loop(l) => {
                match (&l.variable, &l.init, &l.update) {
                    (Some(v), Some(init), Some(update)) => {
                        let _ = writeln!(
                            out,
                            "{p}{}: for {v} = {init}; {}; {v} = {update}",
                            b.label, l.condition
                        );
                    }
                    _ => {
                        let _ = writeln!(out, "{p}{}: while {}", b.label, l.condition);
                    }
                }
                region(out, &l.body, depth + 1);
            }
            BlockKind::Conditional(c) => {
                for (k, (cond, body)) in c.branches.iter().enumerate() {
                    let kw = if k == 0 { "if" } else { "elif" };
                    let _ = writeln!(out, "{p}{}: {kw} {cond}", b.label);
                    region(out, body, depth + 1);
                }
                if let Some(body) = &c.otherwise {
                    let _ = writeln!(out, "{p}{}: else", b.label);
                    region(out, body, depth + 1);
                }
            }
            BlockKind::Break => {
                let _ = writeln!(out, "{p}break");
            }
            BlockKind::Continue => {
                let _ = writeln!(out, "{p}continue");
            }
            BlockKind::Return => {
                let _ = writeln!(out, "{p}return");
            }
        }
        for a in &b.transition.assignments {
            let _ = writeln!(out, "{p}=> {} = {}", a.symbol, a.value);
        }
    }
}

fn library_op(op: &LibraryOp) -> String {
    match op {
        LibraryOp::Reduce { op, axes, identity } => {
            let axes = match axes {
                Some(a) => format!("{a:?}"),
                None => "all".to_owned(),
            };
            let identity = identity.map_or("none".to_owned(), |l| l.to_string());
            format!("reduce {op} axes={axes} identity={identity}")
        }
        LibraryOp::Cholesky { lower } => format!("cholesky lower={lower}"),
        other => other.name().to_owned(),
    }
}

/// Nodes in id order, each followed by its outgoing edges in id order.
fn state(out: &mut String, s: &State, depth: usize) {
    let p = pad(depth);
    for (id, node) in s.nodes() {
        let n = id.index();
        match node {
            Node::Access(a) => {
                let _ = writeln!(out, "{p}n{n} access {}", a.data);
            }
            Node::MapEntry(e) => {
                let dims: Vec<String> = e.map.dims().map(|(v, r)| format!("{v}={r}")).collect();
                let _ = writeln!(out, "{p}n{n} map {} [{}]", e.map.label, dims.join(", "));
            }
            Node::MapExit(x) => {
                let _ = writeln!(out, "{p}n{n} end map {}", x.label);
            }
            Node::Tasklet(t) => {
                let conns = |cs: &[sdfg_ir::Connector]| {
                    cs.iter()
                        .map(|c| format!("{}: {}", c.name, c.dtype))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let _ = writeln!(
                    out,
                    "{p}n{n} tasklet {}({}) -> ({})",
                    t.label,
                    conns(&t.inputs),
                    conns(&t.outputs)
                );
                let mut body = String::new();
                let _ = code::write_body(&mut body, &t.body, 0);
                for line in body.lines() {
                    let _ = writeln!(out, "{p}    {line}");
                }
            }
            Node::Library(l) => {
                let _ = writeln!(out, "{p}n{n} library {}", library_op(&l.op));
            }
            other => {
                let _ = writeln!(out, "{p}n{n} {} {}", other.kind_name(), other.label());
            }
        }
        let mut edges: Vec<_> = s.out_edges(id).collect();
        edges.sort_by_key(|(e, _, _)| *e);
        for (_, dst, e) in edges {
            let conn = |c: &Option<String>| match c {
                Some(c) if !c.starts_with("IN_") && !c.starts_with("OUT_") => format!(".{c}"),
                _ => String::new(),
            };
            let memlet = e
                .memlet
                .as_ref()
                .map_or("(empty)".to_owned(), ToString::to_string);
            let _ = writeln!(
                out,
                "{p}  n{n}{} -> n{}{}: {memlet}",
                conn(&e.src_conn),
                dst.index(),
                conn(&e.dst_conn)
            );
        }
    }
}

/// Runs a compiled program in the simulator; returns its outputs.
#[track_caller]
fn run(sdfg: &Sdfg, args: Arguments) -> BTreeMap<String, ArrayValue> {
    let valid = sdfg_ir::validate(sdfg).unwrap_or_else(|e| panic!("invalid SDFG: {e}"));
    Simulator::new()
        .run(valid, &args)
        .unwrap_or_else(|e| panic!("simulation failed: {e}"))
        .outputs
}

fn f64s(v: &ArrayValue) -> Vec<f64> {
    (0..v.elements.len())
        .filter_map(|i| v.get(i))
        .map(|x| x.to_f64())
        .collect()
}

fn i64s(v: &ArrayValue) -> Vec<i64> {
    (0..v.elements.len())
        .filter_map(|i| v.get(i))
        .map(|x| x.to_i64())
        .collect()
}

#[track_caller]
fn assert_close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "lengths differ: {got:?} vs {want:?}");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-12 * w.abs().max(1.0),
            "element {k}: got {g}, want {w}\n got: {got:?}\nwant: {want:?}"
        );
    }
}

/// An output as `f64`s, checking its shape.
#[track_caller]
fn output(outs: &BTreeMap<String, ArrayValue>, name: &str, shape: &[usize]) -> Vec<f64> {
    let v = outs
        .get(name)
        .unwrap_or_else(|| panic!("no output `{name}` in {:?}", outs.keys()));
    assert_eq!(v.shape, shape, "shape of `{name}`");
    f64s(v)
}

fn arr(shape: &[usize], data: Vec<f64>) -> ArrayValue {
    assert_eq!(shape.iter().product::<usize>(), data.len());
    ArrayValue::f64(shape.to_vec(), data)
}

fn scalar(x: f64) -> ArrayValue {
    ArrayValue::f64(vec![], vec![x])
}

/// `n` deterministic values in about `[-1, 1]`, all different.
fn values(n: usize, seed: u64) -> Vec<f64> {
    (0..n as u64)
        .map(|k| (((k * 37 + seed * 11) % 101) as f64 - 50.0) / 49.0)
        .collect()
}

fn zeros(shape: &[usize]) -> ArrayValue {
    ArrayValue::zeros(DType::Float64, shape.to_vec())
}

// ---------------------------------------------------------------------------
// 1 and 2: supported constructs, their shape and their semantics.

#[test]
fn symbols_with_and_without_dtype_and_in_tuple_forms() {
    let text = r#"import numpy as np
import dace as dc
A0 = dc.symbol('A0')
B0 = dc.symbol('B0', dtype=dc.int32)
C0, D0 = (dc.symbol(s, dtype=dc.int64) for s in ('C0', 'D0'))
E0, F0 = dc.symbol('E0', dtype=dc.int32), dc.symbol('F0')
G0, H0 = (dc.symbol(s) for s in ('G0', 'H0'))

@dc.program
def f(X: dc.float64[A0, B0], Y: dc.float64[C0 + D0], Z: dc.float64[E0, F0], W: dc.float64[G0 * H0]):
    X[:] = 1.0
    Y[:] = 2.0
    Z[:] = 3.0
    W[:] = 4.0
"#;
    let m = Module::parse(FILE, text).unwrap();
    let want: BTreeMap<String, DType> = [
        ("A0", DType::Int64),
        ("B0", DType::Int32),
        ("C0", DType::Int64),
        ("D0", DType::Int64),
        ("E0", DType::Int32),
        ("F0", DType::Int64),
        ("G0", DType::Int64),
        ("H0", DType::Int64),
    ]
    .into_iter()
    .map(|(s, t)| (s.to_owned(), t))
    .collect();
    assert_eq!(m.symbols, want);
    let sdfg = m.compile("f").unwrap();
    // The SDFG declares the symbols its shapes use, with their dtypes, and
    // takes them as arguments after the containers.
    assert_eq!(sdfg.symbols.get("B0"), Some(&DType::Int32));
    assert_eq!(sdfg.symbols.get("E0"), Some(&DType::Int32));
    assert_eq!(sdfg.symbols.get("F0"), Some(&DType::Int64));
    insta::assert_snapshot!(summary(&sdfg));
}

#[test]
fn symbols_from_comprehensions_over_their_names_and_array_type_aliases() {
    let text = r#"import dace
import numpy as np
N, M = (dace.symbol(s) for s in 'NM')
K, L = [dace.symbol(s, dtype=dace.int32) for s in ['K', 'L']]
P, Q = (dace.symbol(s) for s in 'QP')
vec = dace.float64[N + M]

@dace.program
def f(A: dace.float64[K, L], v: vec):
    A[:] = 1.0
    v[:] = 4.0
"#;
    let m = Module::parse(FILE, text).unwrap();
    assert_eq!(m.symbols.get("N"), Some(&DType::Int64));
    assert_eq!(m.symbols.get("L"), Some(&DType::Int32));
    // Names bound to other symbols' names (`P` is the symbol `Q`) are not
    // guessed: the module does not declare them.
    assert!(!m.symbols.contains_key("P"), "{:?}", m.symbols);
    let sdfg = m.compile("f").unwrap();
    assert_eq!(sdfg.container("v").unwrap().shape().len(), 1);
    assert_eq!(sdfg.symbols.get("K"), Some(&DType::Int32));
}

#[test]
fn scalar_and_array_parameters() {
    let sdfg = compile(
        r#"
@dc.program
def f(a: dc.float64, n: dc.int32, A: dc.float64[N, M], v: dc.int64[N]):
    A[:] = a
    v[:] = n
    A[0, 0] = a + n
"#,
    );
    insta::assert_snapshot!(summary(&sdfg));
    let outs = run(
        &sdfg,
        Arguments::default()
            .symbol("N", 2)
            .symbol("M", 3)
            .array("a", scalar(1.5))
            .array("n", ArrayValue::new(vec![], Elements::I32(vec![4])))
            .array("A", zeros(&[2, 3]))
            .array("v", ArrayValue::i64(vec![2], vec![0, 0])),
    );
    assert_close(
        &output(&outs, "A", &[2, 3]),
        &[5.5, 1.5, 1.5, 1.5, 1.5, 1.5],
    );
    assert_eq!(i64s(&outs["v"]), [4, 4]);
}

#[test]
fn elementwise_arithmetic_with_broadcasting() {
    let sdfg = compile(
        r#"
@dc.program
def f(alpha: dc.float64, A: dc.float64[N, M], r: dc.float64[N], c: dc.float64[M], B: dc.float64[N, M]):
    B[:] = alpha * A + r[:, np.newaxis] - c[np.newaxis, :]
    A[:] = A * r[:, None]
"#,
    );
    insta::assert_snapshot!(summary(&sdfg));
    let (n, m) = (3, 4);
    let (a, r, c) = (values(n * m, 1), values(n, 2), values(m, 3));
    let outs = run(
        &sdfg,
        Arguments::default()
            .symbol("N", n as i64)
            .symbol("M", m as i64)
            .array("alpha", scalar(2.5))
            .array("A", arr(&[n, m], a.clone()))
            .array("r", arr(&[n], r.clone()))
            .array("c", arr(&[m], c.clone()))
            .array("B", zeros(&[n, m])),
    );
    let mut want_b = vec![0.0; n * m];
    let mut want_a = vec![0.0; n * m];
    for i in 0..n {
        for j in 0..m {
            want_b[i * m + j] = 2.5 * a[i * m + j] + r[i] - c[j];
            want_a[i * m + j] = a[i * m + j] * r[i];
        }
    }
    assert_close(&output(&outs, "B", &[n, m]), &want_b);
    assert_close(&output(&outs, "A", &[n, m]), &want_a);
}

#[test]
fn slicing_with_offsets_negative_indices_steps_and_empty_ranges() {
    let sdfg = compile(
        r#"
@dc.program
def f(A: dc.float64[N], B: dc.float64[N], C: dc.float64[N, M]):
    B[1:N - 1] = A[2:] - A[:-2]
    B[0] = A[-1]
    B[N - 1] = C[-1, -2]
    C[1:N, 0:M - 1:2] = C[0:N - 1, 1:M:2]
    A[2:2] = 7.0
    A[N:] = 7.0
"#,
    );
    insta::assert_snapshot!(summary(&sdfg));
    let (n, m) = (4, 5);
    let (a, c) = (values(n, 1), values(n * m, 2));
    let outs = run(
        &sdfg,
        Arguments::default()
            .symbol("N", n as i64)
            .symbol("M", m as i64)
            .array("A", arr(&[n], a.clone()))
            .array("B", zeros(&[n]))
            .array("C", arr(&[n, m], c.clone())),
    );
    let mut b = vec![0.0; n];
    for i in 1..n - 1 {
        b[i] = a[i + 1] - a[i - 1];
    }
    b[0] = a[n - 1];
    b[n - 1] = c[(n - 1) * m + (m - 2)];
    let mut c2 = c.clone();
    for i in 1..n {
        for (k, j) in (0..m - 1).step_by(2).enumerate() {
            c2[i * m + j] = c[(i - 1) * m + 1 + 2 * k];
        }
    }
    assert_close(&output(&outs, "B", &[n]), &b);
    assert_close(&output(&outs, "C", &[n, m]), &c2);
    // The empty slices write nothing.
    assert_close(&output(&outs, "A", &[n]), &a);
}

#[test]
fn transposes() {
    let sdfg = compile(
        r#"
@dc.program
def f(A: dc.float64[N, M], B: dc.float64[M, N], C: dc.float64[M, N]):
    B[:] = A.T
    C[:] = np.transpose(A) + 2.0 * B
"#,
    );
    insta::assert_snapshot!(summary(&sdfg));
    let (n, m) = (2, 3);
    let a = values(n * m, 4);
    let outs = run(
        &sdfg,
        Arguments::default()
            .symbol("N", n as i64)
            .symbol("M", m as i64)
            .array("A", arr(&[n, m], a.clone()))
            .array("B", zeros(&[m, n]))
            .array("C", zeros(&[m, n])),
    );
    let t: Vec<f64> = (0..m)
        .flat_map(|j| (0..n).map(move |i| (i, j)))
        .map(|(i, j)| a[i * m + j])
        .collect();
    assert_close(&output(&outs, "B", &[m, n]), &t);
    let c: Vec<f64> = t.iter().map(|x| 3.0 * x).collect();
    assert_close(&output(&outs, "C", &[m, n]), &c);
}

#[test]
fn matrix_products_and_dot() {
    let sdfg = compile(
        r#"
@dc.program
def f(A: dc.float64[N, K], B: dc.float64[K, M], x: dc.float64[K], y: dc.float64[K], w: dc.float64[N],
      C: dc.float64[N, M], v: dc.float64[N], u: dc.float64[K], s: dc.float64[2]):
    C[:] = A @ B
    v[:] = A @ x
    u[:] = A.T @ w
    s[0] = x @ y
    s[1] = np.dot(x, 2.0 * y)
"#,
    );
    insta::assert_snapshot!(summary(&sdfg));
    let (n, k, m) = (2, 3, 4);
    let (a, b, x, y, w) = (
        values(n * k, 1),
        values(k * m, 2),
        values(k, 3),
        values(k, 4),
        values(n, 5),
    );
    let outs = run(
        &sdfg,
        Arguments::default()
            .symbol("N", n as i64)
            .symbol("K", k as i64)
            .symbol("M", m as i64)
            .array("A", arr(&[n, k], a.clone()))
            .array("B", arr(&[k, m], b.clone()))
            .array("x", arr(&[k], x.clone()))
            .array("y", arr(&[k], y.clone()))
            .array("w", arr(&[n], w.clone()))
            .array("C", zeros(&[n, m]))
            .array("v", zeros(&[n]))
            .array("u", zeros(&[k]))
            .array("s", zeros(&[2])),
    );
    let c: Vec<f64> = (0..n * m)
        .map(|ij| (0..k).map(|l| a[ij / m * k + l] * b[l * m + ij % m]).sum())
        .collect();
    let v: Vec<f64> = (0..n)
        .map(|i| (0..k).map(|l| a[i * k + l] * x[l]).sum())
        .collect();
    let u: Vec<f64> = (0..k)
        .map(|l| (0..n).map(|i| a[i * k + l] * w[i]).sum())
        .collect();
    let xy: f64 = x.iter().zip(&y).map(|(p, q)| p * q).sum();
    assert_close(&output(&outs, "C", &[n, m]), &c);
    assert_close(&output(&outs, "v", &[n]), &v);
    assert_close(&output(&outs, "u", &[k]), &u);
    assert_close(&output(&outs, "s", &[2]), &[xy, 2.0 * xy]);
}

#[test]
fn reductions() {
    let sdfg = compile(
        r#"
@dc.program
def f(A: dc.float64[N, M], s: dc.float64[3], c: dc.float64[M], r: dc.float64[N, 1], mn: dc.float64[M]):
    s[0] = np.sum(A)
    c[:] = np.sum(A, axis=0)
    r[:] = np.sum(A, axis=1, keepdims=True)
    s[1] = np.max(A)
    mn[:] = np.mean(A, axis=0)
    s[2] = np.std(A)
"#,
    );
    insta::assert_snapshot!(summary(&sdfg));
    let (n, m) = (3, 4);
    let a = values(n * m, 6);
    let outs = run(
        &sdfg,
        Arguments::default()
            .symbol("N", n as i64)
            .symbol("M", m as i64)
            .array("A", arr(&[n, m], a.clone()))
            .array("s", zeros(&[3]))
            .array("c", zeros(&[m]))
            .array("r", zeros(&[n, 1]))
            .array("mn", zeros(&[m])),
    );
    let total: f64 = a.iter().sum();
    let max = a.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = total / (n * m) as f64;
    let std = (a.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n * m) as f64).sqrt();
    let cols: Vec<f64> = (0..m).map(|j| (0..n).map(|i| a[i * m + j]).sum()).collect();
    let rows: Vec<f64> = (0..n).map(|i| (0..m).map(|j| a[i * m + j]).sum()).collect();
    assert_close(&output(&outs, "s", &[3]), &[total, max, std]);
    assert_close(&output(&outs, "c", &[m]), &cols);
    assert_close(&output(&outs, "r", &[n, 1]), &rows);
    let means: Vec<f64> = cols.iter().map(|x| x / n as f64).collect();
    assert_close(&output(&outs, "mn", &[m]), &means);
}

#[test]
fn ufuncs() {
    let sdfg = compile(
        r#"
@dc.program
def f(A: dc.float64[N], B: dc.float64[N], C: dc.float64[N], D: dc.float64[N], E: dc.float64[N], F: dc.float64[N]):
    C[:] = np.sqrt(np.abs(A)) + np.exp(B)
    D[:] = np.maximum(A, B)
    E[:] = np.where(A > B, A, 0.0)
    F[:] = abs(A - B)
"#,
    );
    insta::assert_snapshot!(summary(&sdfg));
    let n = 5;
    let (a, b) = (values(n, 7), values(n, 8));
    let outs = run(
        &sdfg,
        Arguments::default()
            .symbol("N", n as i64)
            .array("A", arr(&[n], a.clone()))
            .array("B", arr(&[n], b.clone()))
            .array("C", zeros(&[n]))
            .array("D", zeros(&[n]))
            .array("E", zeros(&[n]))
            .array("F", zeros(&[n])),
    );
    let each = |f: &dyn Fn(f64, f64) -> f64| -> Vec<f64> {
        a.iter().zip(&b).map(|(x, y)| f(*x, *y)).collect()
    };
    assert_close(
        &output(&outs, "C", &[n]),
        &each(&|x, y| x.abs().sqrt() + y.exp()),
    );
    assert_close(&output(&outs, "D", &[n]), &each(&|x, y| x.max(y)));
    assert_close(
        &output(&outs, "E", &[n]),
        &each(&|x, y| if x > y { x } else { 0.0 }),
    );
    assert_close(&output(&outs, "F", &[n]), &each(&|x, y| (x - y).abs()));
}

#[test]
fn casts_and_integer_division() {
    let sdfg = compile(
        r#"
@dc.program
def f(a: dc.float64[N], i: dc.int64[N], j: dc.int64[N], c: dc.int64[N], q: dc.float64[N], fd: dc.int64[N], md: dc.int64[N]):
    c[:] = dc.int64(a)
    q[:] = i / j
    fd[:] = i // j
    md[:] = i % j
"#,
    );
    insta::assert_snapshot!(summary(&sdfg));
    let a = vec![-1.5, 2.7, -0.2, 3.0];
    let i = vec![-7, 7, -7, 7];
    let j = vec![2, 2, -2, -2];
    let outs = run(
        &sdfg,
        Arguments::default()
            .symbol("N", 4)
            .array("a", arr(&[4], a))
            .array("i", ArrayValue::i64(vec![4], i))
            .array("j", ArrayValue::i64(vec![4], j))
            .array("c", ArrayValue::i64(vec![4], vec![0; 4]))
            .array("q", zeros(&[4]))
            .array("fd", ArrayValue::i64(vec![4], vec![0; 4]))
            .array("md", ArrayValue::i64(vec![4], vec![0; 4])),
    );
    // NumPy: casts truncate toward zero; `//` and `%` round toward -inf.
    assert_eq!(i64s(&outs["c"]), [-1, 2, 0, 3]);
    assert_close(&output(&outs, "q", &[4]), &[-3.5, 3.5, 3.5, -3.5]);
    assert_eq!(outs["q"].dtype(), DType::Float64);
    assert_eq!(i64s(&outs["fd"]), [-4, 3, 3, -4]);
    assert_eq!(i64s(&outs["md"]), [1, 1, -1, -1]);
}

#[test]
fn array_creation() {
    let sdfg = compile(
        r#"
@dc.program
def f(A: dc.float64[N]):
    z = np.zeros((N, M))
    o = np.ones(N, dtype=np.int32)
    e = np.empty_like(A)
    e[:] = 2.0
    zl = np.zeros_like(A)
    c = np.copy(A)
    A[0] = 100.0
    I = np.eye(N)
    r = np.arange(N)
    return z, o, e, zl, c, I, r
"#,
    );
    insta::assert_snapshot!(summary(&sdfg));
    let (n, m) = (3, 2);
    let a = values(n, 9);
    let outs = run(
        &sdfg,
        Arguments::default()
            .symbol("N", n as i64)
            .symbol("M", m as i64)
            .array("A", arr(&[n], a.clone())),
    );
    assert_close(&output(&outs, "__return_0", &[n, m]), &vec![0.0; n * m]);
    assert_eq!(outs["__return_1"].dtype(), DType::Int32);
    assert_close(&output(&outs, "__return_1", &[n]), &vec![1.0; n]);
    assert_close(&output(&outs, "__return_2", &[n]), &vec![2.0; n]);
    assert_close(&output(&outs, "__return_3", &[n]), &vec![0.0; n]);
    // A copy, not a view: the later write to A does not show.
    assert_close(&output(&outs, "__return_4", &[n]), &a);
    let eye: Vec<f64> = (0..n * n)
        .map(|k| if k / n == k % n { 1.0 } else { 0.0 })
        .collect();
    assert_close(&output(&outs, "__return_5", &[n, n]), &eye);
    assert_eq!(outs["__return_6"].dtype(), DType::Int64);
    assert_eq!(i64s(&outs["__return_6"]), [0, 1, 2]);
}

#[test]
fn augmented_assignment() {
    let sdfg = compile(
        r#"
@dc.program
def f(A: dc.float64[N], B: dc.float64[N]):
    A += B
    A[1:] *= 2.0
    k = 1
    k += 2
    A[k] -= 100.0
    for i in dc.map[0:N]:
        t = B[i]
        t += 1.0
        B[i] = t
"#,
    );
    insta::assert_snapshot!(summary(&sdfg));
    let n = 5;
    let (a, b) = (values(n, 1), values(n, 2));
    let outs = run(
        &sdfg,
        Arguments::default()
            .symbol("N", n as i64)
            .array("A", arr(&[n], a.clone()))
            .array("B", arr(&[n], b.clone())),
    );
    let mut want: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    for x in &mut want[1..] {
        *x *= 2.0;
    }
    want[3] -= 100.0;
    assert_close(&output(&outs, "A", &[n]), &want);
    let b1: Vec<f64> = b.iter().map(|x| x + 1.0).collect();
    assert_close(&output(&outs, "B", &[n]), &b1);
}

#[test]
fn for_range_with_negative_step() {
    let sdfg = compile(
        r#"
@dc.program
def f(A: dc.float64[N]):
    for i in range(N - 2, -1, -1):
        A[i] += A[i + 1]
"#,
    );
    insta::assert_snapshot!(summary(&sdfg));
    let n = 5;
    let a = values(n, 3);
    let outs = run(
        &sdfg,
        Arguments::default()
            .symbol("N", n as i64)
            .array("A", arr(&[n], a.clone())),
    );
    // Suffix sums.
    let want: Vec<f64> = (0..n).map(|i| a[i..].iter().sum()).collect();
    assert_close(&output(&outs, "A", &[n]), &want);
}

#[test]
fn while_on_a_symbolic_condition() {
    let sdfg = compile(
        r#"
@dc.program
def f(A: dc.int64[N]):
    i = 0
    while i < N:
        A[i] = i * i
        i += 2
"#,
    );
    insta::assert_snapshot!(summary(&sdfg));
    let outs = run(
        &sdfg,
        Arguments::default()
            .symbol("N", 5)
            .array("A", ArrayValue::i64(vec![5], vec![-1; 5])),
    );
    assert_eq!(i64s(&outs["A"]), [0, -1, 4, -1, 16]);
}

#[test]
fn while_on_data() {
    let sdfg = compile(
        r#"
@dc.program
def f(x: dc.float64[1], n: dc.int64[1]):
    while x[0] < 100.0:
        x[0] = x[0] * 2.0
        n[0] += 1
"#,
    );
    insta::assert_snapshot!(summary(&sdfg));
    let outs = run(
        &sdfg,
        Arguments::default()
            .array("x", arr(&[1], vec![3.0]))
            .array("n", ArrayValue::i64(vec![1], vec![0])),
    );
    // 3, 6, 12, 24, 48, 96, 192.
    assert_close(&output(&outs, "x", &[1]), &[192.0]);
    assert_eq!(i64s(&outs["n"]), [6]);
}

#[test]
fn if_elif_else_on_symbols_and_on_data() {
    let sdfg = compile(
        r#"
@dc.program
def f(A: dc.float64[N], out: dc.float64[N]):
    for i in range(N):
        if i == 0:
            out[i] = 1.0
        elif i < 3:
            out[i] = 2.0
        else:
            if A[i] > 0.5:
                out[i] = A[i]
            elif A[i] > 0.0:
                out[i] = -A[i]
            else:
                out[i] = 0.0
"#,
    );
    insta::assert_snapshot!(summary(&sdfg));
    let a = vec![9.0, 9.0, 9.0, 0.7, 0.2, -0.3, 0.5];
    let n = a.len();
    let outs = run(
        &sdfg,
        Arguments::default()
            .symbol("N", n as i64)
            .array("A", arr(&[n], a.clone()))
            .array("out", zeros(&[n])),
    );
    assert_close(
        &output(&outs, "out", &[n]),
        &[1.0, 2.0, 2.0, 0.7, -0.2, 0.0, -0.5],
    );
}

#[test]
fn elif_on_data_is_evaluated_only_when_reached() {
    // At i = 0 the `elif` would read A[-1]: Python never evaluates it there.
    let sdfg = compile(
        r#"
@dc.program
def f(A: dc.float64[N], out: dc.float64[N]):
    for i in range(N):
        if i == 0:
            out[i] = A[i]
        elif A[i - 1] > 0.0:
            out[i] = A[i - 1]
        elif A[i - 1] > -0.5:
            out[i] = 0.0
        else:
            out[i] = -1.0
"#,
    );
    insta::assert_snapshot!(summary(&sdfg));
    let a = vec![0.25, -0.25, 0.5, -0.75, 1.0];
    let n = a.len();
    let outs = run(
        &sdfg,
        Arguments::default()
            .symbol("N", n as i64)
            .array("A", arr(&[n], a.clone()))
            .array("out", zeros(&[n])),
    );
    assert_close(&output(&outs, "out", &[n]), &[0.25, 0.25, 0.0, 0.5, -1.0]);
}

#[test]
fn a_condition_is_evaluated_once() {
    // The condition calls a program with a side effect and a reduction:
    // each must run once.
    let sdfg = compile(
        r#"
@dc.program
def bump(A: dc.float64[N]):
    A[0] += 1.0
    return A[0]


@dc.program
def f(A: dc.float64[N]):
    if bump(A) > 0.0 and np.sum(A) > 0.0:
        A[1] = 5.0
"#,
    );
    insta::assert_snapshot!(summary(&sdfg));
    let outs = run(
        &sdfg,
        Arguments::default()
            .symbol("N", 3)
            .array("A", arr(&[3], vec![0.0, 0.0, 0.0])),
    );
    assert_close(&output(&outs, "A", &[3]), &[1.0, 5.0, 0.0]);
}

#[test]
fn early_return_from_a_loop() {
    let sdfg = compile(
        r#"
@dc.program
def f(A: dc.float64[N]):
    for i in range(N):
        if A[i] < 0.0:
            return i
    return -1
"#,
    );
    insta::assert_snapshot!(summary(&sdfg));
    for (a, want) in [(vec![1.0, 2.0, -3.0, -4.0], 2), (vec![1.0; 4], -1)] {
        let outs = run(
            &sdfg,
            Arguments::default().symbol("N", 4).array("A", arr(&[4], a)),
        );
        assert_eq!(outs["__return"].dtype(), DType::Int64);
        assert_eq!(i64s(&outs["__return"]), [want]);
    }
}

#[test]
fn break_and_continue() {
    let sdfg = compile(
        r#"
@dc.program
def f(A: dc.float64[N], out: dc.float64[1]):
    out[0] = 0.0
    for i in range(N):
        if i % 2 == 1:
            continue
        if A[i] < 0.0:
            break
        out[0] += A[i]
"#,
    );
    insta::assert_snapshot!(summary(&sdfg));
    // Even indices 0, 2, 4 are added; index 6 is negative and stops the loop.
    let a = vec![1.0, -5.0, 2.0, -5.0, 4.0, 8.0, -1.0, 16.0, 32.0];
    let n = a.len();
    let outs = run(
        &sdfg,
        Arguments::default()
            .symbol("N", n as i64)
            .array("A", arr(&[n], a))
            .array("out", zeros(&[1])),
    );
    assert_close(&output(&outs, "out", &[1]), &[7.0]);
}

#[test]
fn return_of_one_value() {
    let sdfg = compile(
        r#"
@dc.program
def f(A: dc.float64[N]):
    return A * 2.0
"#,
    );
    insta::assert_snapshot!(summary(&sdfg));
    let a = values(3, 1);
    let outs = run(
        &sdfg,
        Arguments::default()
            .symbol("N", 3)
            .array("A", arr(&[3], a.clone())),
    );
    let want: Vec<f64> = a.iter().map(|x| 2.0 * x).collect();
    assert_close(&output(&outs, "__return", &[3]), &want);
}

#[test]
fn return_of_a_tuple() {
    let sdfg = compile(
        r#"
@dc.program
def f(A: dc.float64[N], k: dc.int64):
    if k > 0:
        return A + 1.0, np.sum(A)
    return A - 1.0, np.max(A)
"#,
    );
    insta::assert_snapshot!(summary(&sdfg));
    let a = values(4, 2);
    for (k, shift, total) in [
        (1, 1.0, a.iter().sum::<f64>()),
        (0, -1.0, a.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
    ] {
        let outs = run(
            &sdfg,
            Arguments::default()
                .symbol("N", 4)
                .array("A", arr(&[4], a.clone()))
                .array("k", ArrayValue::i64(vec![], vec![k])),
        );
        let want: Vec<f64> = a.iter().map(|x| x + shift).collect();
        assert_close(&output(&outs, "__return_0", &[4]), &want);
        assert_close(&output(&outs, "__return_1", &[]), &[total]);
    }
}

#[test]
fn dace_maps_triangular_with_locals_and_branches() {
    let sdfg = compile(
        r#"
@dc.program
def f(A: dc.float64[N, N], B: dc.float64[N, N]):
    for i in dc.map[0:N]:
        for j in dc.map[i:N]:
            B[i, j] = A[i, j] + A[j, i]
    for i, j in dc.map[0:N, 0:N]:
        t = A[i, j] * 2.0
        if i < j:
            t = t + 1.0
        elif i == j:
            t = 0.0
        else:
            t = -t
        A[i, j] = t
"#,
    );
    insta::assert_snapshot!(summary(&sdfg));
    let n = 4;
    let a = values(n * n, 5);
    let outs = run(
        &sdfg,
        Arguments::default()
            .symbol("N", n as i64)
            .array("A", arr(&[n, n], a.clone()))
            .array("B", arr(&[n, n], vec![-9.0; n * n])),
    );
    let mut b = vec![-9.0; n * n];
    let mut a2 = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            if j >= i {
                b[i * n + j] = a[i * n + j] + a[j * n + i];
            }
            let t = a[i * n + j] * 2.0;
            a2[i * n + j] = match i.cmp(&j) {
                std::cmp::Ordering::Less => t + 1.0,
                std::cmp::Ordering::Equal => 0.0,
                std::cmp::Ordering::Greater => -t,
            };
        }
    }
    assert_close(&output(&outs, "B", &[n, n]), &b);
    assert_close(&output(&outs, "A", &[n, n]), &a2);
}

#[test]
fn inlined_program_with_a_size_symbol_bound_to_a_loop_variable() {
    let body = r#"
@dc.program
def flip(X: dc.float64[K]):
    Y = np.empty_like(X)
    for i in dc.map[0:K]:
        Y[i] = X[K - 1 - i]
    return Y


@dc.program
def f(r: dc.float64[N], out: dc.float64[N, N]):
    for k in range(1, N + 1):
        out[k - 1, :k] = flip(r[:k])
"#;
    let sdfg = compile(body);
    insta::assert_snapshot!(summary(&sdfg));
    // The callee is a program of its own too.
    assert!(
        compile_named(body, "flip")
            .arguments
            .contains(&"K".to_owned())
    );
    let n = 4;
    let r = values(n, 3);
    let outs = run(
        &sdfg,
        Arguments::default()
            .symbol("N", n as i64)
            .array("r", arr(&[n], r.clone()))
            .array("out", zeros(&[n, n])),
    );
    let mut want = vec![0.0; n * n];
    for k in 1..=n {
        for j in 0..k {
            want[(k - 1) * n + j] = r[k - 1 - j];
        }
    }
    assert_close(&output(&outs, "out", &[n, n]), &want);
}

#[test]
fn linalg_cholesky_and_solve() {
    let sdfg = compile(
        r#"
@dc.program
def f(A: dc.float64[N, N], b: dc.float64[N], L: dc.float64[N, N], x: dc.float64[N]):
    L[:] = np.linalg.cholesky(A)
    x[:] = np.linalg.solve(A, b)
"#,
    );
    insta::assert_snapshot!(summary(&sdfg));
    let a = vec![4.0, 2.0, 0.0, 2.0, 5.0, 1.0, 0.0, 1.0, 3.0];
    let b = vec![1.0, -2.0, 3.0];
    let outs = run(
        &sdfg,
        Arguments::default()
            .symbol("N", 3)
            .array("A", arr(&[3, 3], a.clone()))
            .array("b", arr(&[3], b.clone()))
            .array("L", zeros(&[3, 3]))
            .array("x", zeros(&[3])),
    );
    // Cholesky by hand: L = [[2, 0, 0], [1, 2, 0], [0, 1/2, sqrt(11)/2]].
    let l = output(&outs, "L", &[3, 3]);
    assert_close(
        &l,
        &[2.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 0.5, 11f64.sqrt() / 2.0],
    );
    // The solution satisfies A x = b.
    let x = output(&outs, "x", &[3]);
    let ax: Vec<f64> = (0..3)
        .map(|i| (0..3).map(|j| a[i * 3 + j] * x[j]).sum())
        .collect();
    assert_close(&ax, &b);
}

#[test]
fn benchmark_metadata_is_read_as_json() {
    let m = module(
        r#"
@dc.program
def f(A: dc.float64[N]):
    A[:] = 1.0


def helper(A):
    return A


BENCHMARK = {
    "program": "f",
    "scalars": {"alpha": 1.5, "n": -2, "eps": -1e-3},
    "outputs": ["A", "__return"],
    "presets": {"test": {"N": 4}, "S": {"N": 1000}},
    "flags": (True, False, None),
}
"#,
    );
    assert_eq!(
        m.metadata(),
        Some(&serde_json::json!({
            "program": "f",
            "scalars": {"alpha": 1.5, "n": -2, "eps": -1e-3},
            "outputs": ["A", "__return"],
            "presets": {"test": {"N": 4}, "S": {"N": 1000}},
            "flags": [true, false, null],
        }))
    );
    // Only `@dc.program` functions are programs.
    let programs = m.programs();
    assert_eq!(programs.len(), 1);
    assert_eq!(programs[0].name, "f");
    assert_eq!(programs[0].parameters, ["A"]);
    // No BENCHMARK, no metadata.
    assert_eq!(module("").metadata(), None);
}

#[test]
fn the_python_packages_decorator_marks_programs_as_dace_program_does() {
    let text = "import dace\nimport sdfg_offload\nimport sdfg_offload as so\n\
                from sdfg_offload import program, program as p, compile\n\
                N = dace.symbol('N')\n\n\
                @sdfg_offload.program\ndef a(x: dace.float64[N]):\n    x[:] = 1.0\n\n\
                @so.program(device='emulated')\ndef b(x: dace.float64[N]):\n    x[:] = 2.0\n\n\
                @program\ndef c(x: dace.float64[N]):\n    x[:] = 3.0\n\n\
                @p\ndef d(x: dace.float64[N]):\n    x[:] = 4.0\n\n\
                @compile\ndef e(x: dace.float64[N]):\n    x[:] = 5.0\n";
    let m = Module::parse(FILE, text).unwrap();
    let names: Vec<String> = m.programs().into_iter().map(|p| p.name).collect();
    assert_eq!(
        names,
        ["a", "b", "c", "d"],
        "`compile` is no decorator of programs"
    );
    for n in &names {
        m.compile(n).unwrap();
    }
}

// ---------------------------------------------------------------------------
// 3: errors, with their positions.

#[test]
fn list_comprehension_is_unsupported() {
    let k = error_at(
        r#"
@dc.program
def f(A: dc.float64[N]):
    B = [a for a in A]
"#,
        7,
        9,
    );
    assert_unsupported(&k, "[a for a in A]");
}

#[test]
fn lambda_is_unsupported() {
    let k = error_at(
        r#"
@dc.program
def f(A: dc.float64[N]):
    A[:] = 1.0
    g = lambda x: x + 1
"#,
        8,
        9,
    );
    assert_unsupported(&k, "lambda");
}

#[test]
fn for_else_is_unsupported() {
    let k = error_at(
        r#"
@dc.program
def f(A: dc.float64[N]):
    for i in range(N):
        A[i] = 1.0
    else:
        A[0] = 2.0
"#,
        7,
        5,
    );
    assert_unsupported(&k, "for ... else");
}

#[test]
fn while_else_is_unsupported() {
    let k = error_at(
        r#"
@dc.program
def f(A: dc.float64[N]):
    i = 0
    while i < N:
        i += 1
    else:
        A[0] = 2.0
"#,
        8,
        5,
    );
    assert_unsupported(&k, "while ... else");
}

#[test]
fn chained_comparison_is_unsupported() {
    let k = error_at(
        r#"
@dc.program
def f(A: dc.float64[N]):
    if 0.0 < A[0] < 1.0:
        A[0] = 0.0
"#,
        7,
        8,
    );
    assert_unsupported(&k, "chained comparison");
}

#[test]
fn indirect_access_mixed_with_slices_or_by_floats_is_refused() {
    let k = error_at(
        r#"
@dc.program
def f(A: dc.float64[N, M], idx: dc.int64[N], B: dc.float64[N, M]):
    B[:] = A[idx, :]
"#,
        7,
        19,
    );
    assert_unsupported(&k, "mixed advanced indexing");
    let k = error_at(
        r#"
@dc.program
def f(A: dc.float64[N], x: dc.float64[N], B: dc.float64[N]):
    B[:] = A[x]
"#,
        7,
        14,
    );
    assert_unsupported(&k, "an index of type float64");
}

#[test]
fn gathers_and_scatters_through_index_arrays() {
    // `A[idx]` reads through a pointer connector (negative indices count
    // from the end, as in NumPy); `C[idx] = A` writes through one.
    let sdfg = compile(
        "@dc.program\ndef f(A: dc.float64[N], idx: dc.int64[N], B: dc.float64[N], C: dc.float64[N]):\n    B[:] = A[idx] * 2.0\n    C[idx] = A\n",
    );
    let a = vec![10.0, 20.0, 30.0, 40.0];
    let args = Arguments::default()
        .symbol("N", 4)
        .array("A", arr(&[4], a))
        .array(
            "idx",
            ArrayValue::new(vec![4], Elements::I64(vec![2, -1, 0, 1])),
        )
        .array("B", zeros(&[4]))
        .array("C", zeros(&[4]));
    let out = run(&sdfg, args);
    assert_close(&output(&out, "B", &[4]), &[60.0, 80.0, 20.0, 40.0]);
    // C[2] = 10, C[3] = 20, C[0] = 30, C[1] = 40.
    assert_close(&output(&out, "C", &[4]), &[30.0, 40.0, 10.0, 20.0]);
    // A signed index is tested for a negative value; an unsigned one is not.
    assert!(summary(&sdfg).contains(" if "), "{}", summary(&sdfg));
    let unsigned = compile(
        "@dc.program\ndef f(A: dc.float64[N], idx: dc.uint32[N], B: dc.float64[N]):\n    B[:] = A[idx]\n",
    );
    assert!(
        !summary(&unsigned).contains(" if "),
        "{}",
        summary(&unsigned)
    );
}

#[test]
fn indirect_updates_in_maps_combine_and_inlined_scalars_stay_per_iteration() {
    // A histogram: each point's bin comes from a program inlined in the map
    // body (its result is a value of the iteration, not a shared
    // transient), and `hist[b] += 1` is an indirect sum update.
    let text = "\n@dc.program\ndef bin_of(x: dc.float64, edges: dc.float64[M + 1]):\n    return dc.int64(M * (x - edges[0]) / (edges[M] - edges[0]))\n\n@dc.program\ndef f(a: dc.float64[N], edges: dc.float64[K + 1], hist: dc.int64[K]):\n    for i in dc.map[0:N]:\n        b = min(bin_of(a[i], edges), K - 1)\n        hist[b] += 1\n";
    let sdfg = compile(text);
    let a = vec![0.05, 0.95, 0.5, 0.55, 1.0, 0.0, 0.45];
    let args = Arguments::default()
        .symbol("N", 7)
        .symbol("K", 4)
        .array("a", arr(&[7], a))
        .array("edges", arr(&[5], vec![0.0, 0.25, 0.5, 0.75, 1.0]))
        .array("hist", ArrayValue::zeros(DType::Int64, vec![4]));
    let out = run(&sdfg, args);
    assert_eq!(i64s(&out["hist"]), vec![2, 1, 2, 2]);
}

#[test]
fn integer_data_bounds_slices_through_symbols_the_host_reads() {
    // CSR rows: `row[i]` and `row[i + 1]` bound a slice. Outside map
    // bodies a scalar integer read from data becomes a symbol assigned on a
    // transition (a host read), so the slice stays a region.
    let sdfg = compile(
        "@dc.program\ndef f(row: dc.int64[M + 1], val: dc.float64[K], y: dc.float64[M]):\n    for i in range(M):\n        start = row[i]\n        y[i] = np.sum(val[start:row[i + 1]])\n",
    );
    let reads: Vec<String> = sdfg
        .symbols
        .keys()
        .filter(|s| s.starts_with("__data"))
        .cloned()
        .collect();
    assert_eq!(reads.len(), 2, "{}", summary(&sdfg));
    let args = Arguments::default()
        .symbol("M", 3)
        .symbol("K", 5)
        .array(
            "row",
            ArrayValue::new(vec![4], Elements::I64(vec![0, 2, 2, 5])),
        )
        .array("val", arr(&[5], vec![1.0, 2.0, 3.0, 4.0, 5.0]))
        .array("y", zeros(&[3]));
    let out = run(&sdfg, args);
    assert_close(&output(&out, "y", &[3]), &[3.0, 0.0, 12.0]);
}

#[test]
fn range_with_a_non_constant_step_is_unsupported() {
    let k = error_at(
        r#"
@dc.program
def f(A: dc.float64[N]):
    for i in range(0, N, M):
        A[i] = 1.0
"#,
        7,
        14,
    );
    assert_unsupported(&k, "step");
}

#[test]
fn slice_with_a_zero_step_is_refused() {
    // Python: "slice step cannot be zero" (negative steps are views).
    let k = error_at(
        r#"
@dc.program
def f(A: dc.float64[N], B: dc.float64[N]):
    B[:] = A[::0]
"#,
        7,
        14,
    );
    assert_unsupported(&k, "slice step");
}

#[test]
fn unknown_name() {
    let k = error_at(
        r#"
@dc.program
def f(A: dc.float64[N]):
    A[:] = 2.0 * C
"#,
        7,
        18,
    );
    assert_eq!(k, ErrorKind::UnknownName("C".to_owned()));
}

#[test]
fn shape_mismatch_in_an_assignment() {
    let k = error_at(
        r#"
@dc.program
def f(A: dc.float64[N], B: dc.float64[M]):
    A[:] = B
"#,
        7,
        5,
    );
    assert!(
        matches!(&k, ErrorKind::Shape(m) if m.contains("(M)") && m.contains("(N)")),
        "{k:?}"
    );
}

#[test]
fn operands_that_do_not_broadcast() {
    let k = error_at(
        r#"
@dc.program
def f(A: dc.float64[N], B: dc.float64[M], C: dc.float64[N]):
    C[:] = A + B
"#,
        7,
        12,
    );
    assert!(matches!(k, ErrorKind::Shape(_)), "{k:?}");
}

#[test]
fn parameter_without_annotation() {
    let k = error_at(
        r#"
@dc.program
def f(A: dc.float64[N], B):
    A[:] = 1.0
"#,
        6,
        25,
    );
    assert!(
        matches!(&k, ErrorKind::Annotation(m) if m.contains("`B`")),
        "{k:?}"
    );
}

#[test]
fn bad_annotations() {
    let k = error_at(
        r#"
@dc.program
def f(A: np.ndarray):
    A[:] = 1.0
"#,
        6,
        10,
    );
    assert!(matches!(k, ErrorKind::Annotation(_)), "{k:?}");
    // A dimension that is not an integer expression of symbols.
    let k = error_at(
        r#"
@dc.program
def f(A: dc.float64[N, 2.5]):
    A[:] = 1.0
"#,
        6,
        24,
    );
    assert!(matches!(k, ErrorKind::Annotation(_)), "{k:?}");
    // A symbol dtype that is not a dtype.
    let e = Module::parse(FILE, "import dace as dc\nN = dc.symbol('N', dtype=int)\n")
        .err()
        .unwrap();
    assert!(matches!(e.kind, ErrorKind::Annotation(_)), "{e:?}");
    assert_eq!((e.at.line, e.at.column), (2, 26));
}

#[test]
fn syntax_errors() {
    let e = Module::parse(
        FILE,
        &source(
            r#"
@dc.program
def f(A: dc.float64[N]):
    A[:] = 1.0 +* 2.0
"#,
        ),
    )
    .err()
    .unwrap();
    assert!(matches!(e.kind, ErrorKind::Syntax(_)), "{e:?}");
    // The position of the unexpected `*`.
    assert_eq!((e.at.line, e.at.column), (7, 17), "{e}");
    // An unclosed bracket: reported where the parser gives up (the `=`).
    let e = Module::parse(FILE, "x = (1,\ny = 2\n").err().unwrap();
    assert!(matches!(e.kind, ErrorKind::Syntax(_)), "{e:?}");
    assert_eq!((e.at.line, e.at.column), (2, 3), "{e}");
}

#[test]
fn compiling_something_that_is_not_a_program() {
    let m = module(
        r#"
def g(A):
    return A
"#,
    );
    for name in ["g", "nope"] {
        let e = m.compile(name).err().unwrap();
        assert_eq!(e.kind, ErrorKind::NoSuchProgram(name.to_owned()));
        assert_eq!((e.at.line, e.at.column), (1, 1));
    }
}

#[test]
fn malformed_benchmark_metadata() {
    let cases = [
        // A non-literal value.
        (
            "BENCHMARK = {'presets': {'test': {'N': 2 * 3}}}\n",
            (1, 40),
            "not a literal",
        ),
        // A name.
        (
            "BENCHMARK = {'program': kernel}\n",
            (1, 25),
            "not a literal",
        ),
        // A non-string key.
        ("BENCHMARK = {1: 2}\n", (1, 14), "keys must be strings"),
        // `**` in a dict.
        ("BENCHMARK = {'a': 1, **other}\n", (1, 13), "`**`"),
        // Negation of a string.
        ("BENCHMARK = {'a': -'x'}\n", (1, 19), "negation"),
    ];
    for (text, (line, column), needle) in cases {
        let e = Module::parse(FILE, text).err().unwrap();
        assert!(
            matches!(&e.kind, ErrorKind::Metadata(m) if m.contains(needle)),
            "{text}: {e:?}"
        );
        assert_eq!((e.at.line, e.at.column), (line, column), "{text}: {e}");
    }
}

#[test]
fn early_return_in_a_loop_of_an_inlined_program() {
    let body = r#"
@dc.program
def g(A: dc.float64[N]):
    for i in range(N):
        if A[i] > 0.0:
            return A
    return A


@dc.program
def f(A: dc.float64[N], B: dc.float64[N]):
    B[:] = g(A)
"#;
    let k = error_at(body, 15, 12);
    assert_unsupported(&k, "inlining `g`");
}

#[test]
fn returns_of_different_types() {
    let k = error_at(
        r#"
@dc.program
def f(A: dc.float64[N]):
    if A[0] < 0.0:
        return 1.5
    return A
"#,
        9,
        12,
    );
    assert_unsupported(&k, "earlier `return`");
}

/// `n` nested `if`s on data around `A[0] = 1.0`.
fn nested_ifs(n: usize) -> String {
    let mut body = "\n@dc.program\ndef f(A: dc.float64[N]):\n".to_owned();
    for k in 0..n {
        body += &format!("{}if A[{k}] > 0.0:\n", "    ".repeat(k + 1));
    }
    body + &format!("{}A[0] = 1.0\n", "    ".repeat(n + 1))
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    // Deep but within the limit: compiles (and validates) on a test thread.
    compile(&nested_ifs(56));
    let sum = |n: usize| vec!["A[1]"; n].join(" + ");
    compile(&format!(
        "\n@dc.program\ndef f(A: dc.float64[N]):\n    A[0] = {}\n",
        sum(50)
    ));
    // A 100-term sum is a left-deep tree 100 levels deep: the lowering
    // refuses it where it gets too deep, at its leftmost operand.
    let k = error_at(
        &format!(
            "\n@dc.program\ndef f(A: dc.float64[N]):\n    A[0] = {}\n",
            sum(100)
        ),
        7,
        12,
    );
    assert_unsupported(&k, "nested more than 64 levels");
    // 80 nested `if`s: refused at the condition of the 62nd (line 7 + 61,
    // column 4 * 62 + 1 + 3), where statements and expressions reach 64.
    let k = error_at(&nested_ifs(80), 68, 252);
    assert_unsupported(&k, "nested more than 64 levels");
    // `not not ... N > 0`, 100 times.
    let k = error_at(
        &format!(
            "\n@dc.program\ndef f(A: dc.float64[N]):\n    if {}N > 0:\n        A[0] = 1.0\n",
            "not ".repeat(100)
        ),
        7,
        8 + 4 * 63,
    );
    assert_unsupported(&k, "nested more than 64 levels");
    // Metadata nested 100 lists deep.
    let text = format!("BENCHMARK = {}1{}\n", "[".repeat(100), "]".repeat(100));
    let e = Module::parse(FILE, &text).err().unwrap();
    assert_eq!(e.kind, ErrorKind::Metadata("nested too deeply".to_owned()));
    assert_eq!((e.at.line, e.at.column), (1, 13 + 65));
    // Deeper text is refused before it is parsed into a tree anything
    // walks: a 3000-term sum where its nesting passes 256 levels (the
    // statement in the program's block, `[`, `=`, and then two levels a
    // term), 200 nested `if`s, 5000 `not`s, metadata 1000 lists deep.
    let k = error_at(
        &format!(
            "\n@dc.program\ndef f(A: dc.float64[N]):\n    A[0] = {}\n",
            sum(3000)
        ),
        7,
        885,
    );
    assert_unsupported(&k, "nested more than 256 levels");
    assert_unsupported(&error(&nested_ifs(200)).kind, "nested more than 256 levels");
    let k = error(&format!(
        "\n@dc.program\ndef f(A: dc.float64[N]):\n    if {}N > 0:\n        A[0] = 1.0\n",
        "not ".repeat(5000)
    ))
    .kind;
    assert_unsupported(&k, "nested more than 256 levels");
    let text = format!("BENCHMARK = {}1{}\n", "[".repeat(1000), "]".repeat(1000));
    let e = Module::parse(FILE, &text).err().unwrap();
    assert_unsupported(&e.kind, "nested more than 256 levels");
    // The line, `=` and 254 brackets make 257 levels.
    assert_eq!((e.at.line, e.at.column), (1, 12 + 254));
}

/// The error of `body`, which must come within `seconds` (a lowering that
/// takes exponential time fails the test instead of hanging it).
fn error_within(seconds: u64, body: String) -> FrontendError {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || send.send(error(&body)));
    receive
        .recv_timeout(std::time::Duration::from_secs(seconds))
        .expect("the frontend did not finish in time")
}

#[test]
fn nesting_as_deep_as_the_lowering_takes_compiles_on_a_test_threads_stack() {
    // Nested NumPy calls take the largest frames of the lowering (about
    // 100 KiB a level in debug builds): 60 of them overflowed a test
    // thread's 2 MiB before the lowering got a stack of its own.
    compile(&format!(
        "\n@dc.program\ndef f(A: dc.float64[N], B: dc.float64[N]):\n    B[:] = {}A{}\n",
        "np.sqrt(".repeat(60),
        ")".repeat(60)
    ));
}

#[test]
fn repeated_values_are_bounded_not_exponential() {
    // Each use of a value repeats its expression, so each of these doubles
    // (or triples) the code: 30 times is a billion operations, refused
    // where it passes the bound rather than built.
    let doubling = format!(
        "\n@dc.program\ndef f(A: dc.float64[N], B: dc.float64[N]):\n    for i in dc.map[0:N]:\n        t = A[i]\n{}        B[i] = t\n",
        "        t = t + t\n".repeat(30)
    );
    let or_chain = format!(
        "\n@dc.program\ndef f(A: dc.float64[N], B: dc.float64[N]):\n    for i in dc.map[0:N]:\n        B[i] = {}\n",
        vec!["A[i]"; 30].join(" or ")
    );
    let signs = format!(
        "\n@dc.program\ndef f(A: dc.float64[N], B: dc.float64[N]):\n    B[:] = {}A{}\n",
        "np.sign(".repeat(20),
        ")".repeat(20)
    );
    for body in [doubling, or_chain, signs] {
        let e = error_within(30, body);
        assert_unsupported(&e.kind, "more than 65536 operations");
    }
    // A few repetitions compile.
    compile(&format!(
        "\n@dc.program\ndef f(A: dc.float64[N], B: dc.float64[N]):\n    for i in dc.map[0:N]:\n        t = A[i]\n{}        B[i] = t\n",
        "        t = t + t\n".repeat(8)
    ));
}

#[test]
fn odd_inputs_give_errors_not_panics() {
    let sources = [
        "",
        "\n\n",
        "@dc.program\n",
        "import dace as dc\n@dc.program\ndef f():\n    pass\n",
        "import dace as dc\n@dc.program\ndef f(*args):\n    pass\n",
        "import dace as dc\n@dc.program\ndef f(A: dc.float64[0]):\n    A[:] = 1\n",
        "import dace as dc\n@dc.program\ndef f(A: dc.float64[-1]):\n    A[:] = 1\n",
        "import dace as dc\nN = dc.symbol('N')\n@dc.program\ndef f(A: dc.float64[N]):\n    A[N] = 1\n",
        "import dace as dc\nN = dc.symbol('N')\n@dc.program\ndef f(A: dc.float64[N]):\n    A[0, 0] = 1\n",
        "import dace as dc\nN = dc.symbol('N')\n@dc.program\ndef f(A: dc.float64[N]):\n    A[:] = A @ A @ A\n",
        "import dace as dc\nN = dc.symbol('N')\n@dc.program\ndef f(A: dc.float64[N]):\n    return\n",
        "import dace as dc\nN = dc.symbol('N')\n@dc.program\ndef f(A: dc.float64[N]):\n    f(A)\n",
        "import dace as dc\nimport numpy as np\nN = dc.symbol('N')\n@dc.program\ndef f(A: dc.float64[N]):\n    A[:] = np.sum()\n",
        "import dace as dc\nimport numpy as np\nN = dc.symbol('N')\n@dc.program\ndef f(A: dc.float64[N]):\n    A[:] = np.sum(A, axis=5)\n",
        "import dace as dc\nimport numpy as np\nN = dc.symbol('N')\n@dc.program\ndef f(A: dc.float64[N]):\n    A[:] = np.zeros(A)\n",
        "import dace as dc\nN = dc.symbol('N')\n@dc.program\ndef f(A: dc.float64[N]):\n    A[:] = 99999999999999999999999\n",
        "import dace as dc\nN = dc.symbol('N')\n@dc.program\ndef f(A: dc.float64[N]):\n    for i in range(N, 0, 0):\n        A[i] = 1\n",
        "import dace as dc\nN = dc.symbol('N')\n@dc.program\ndef f(A: dc.float64[N]):\n    for i in dc.map[0:N:0]:\n        A[i] = 1\n",
        "import dace as dc\nN = dc.symbol('N')\n@dc.program\ndef f(A: dc.float64[N]):\n    A[0:N:0] = 1\n",
        "import dace as dc\nN = dc.symbol('N')\n@dc.program\ndef f(A: dc.float64[N]):\n    break\n",
        "BENCHMARK = {'a': 99999999999999999999999}\n",
        "BENCHMARK = {'a': 1j}\n",
        "x = 1\nclass C:\n    pass\n",
        "def f(:\n",
        "\u{feff}é = 'ü'\n",
    ];
    for text in sources {
        if let Ok(m) = Module::parse(FILE, text) {
            for p in m.programs() {
                // Either result is fine; a panic is not.
                let _ = m.compile(&p.name);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// NumPy forms: ufunc names with `out=`, `ufunc.outer`, boolean masks,
// reshape, `arange` with bounds, array methods, calls as statements.

fn f64_array(shape: Vec<usize>, data: Vec<f64>) -> ArrayValue {
    ArrayValue::f64(shape, data)
}

#[test]
fn ufunc_outer_out_masks_reshape_arange_and_methods() {
    let body = "@dc.program\n\
                def f(a: dc.float64[N], b: dc.float64[M], C: dc.float64[N, M], D: dc.float64[N, M],\n\
                      E: dc.float64[M, N], r: dc.int64[N], s: dc.float64[N]):\n    \
                    C[:] = np.subtract.outer(a, b)\n    \
                    np.multiply(C, 2.0, out=D)\n    \
                    D[C > 0.0] = -1.0\n    \
                    E[:] = D.reshape((M, N))\n    \
                    r[:] = np.arange(3, 3 + 2 * N, 2)\n    \
                    s[:] = C.sum(axis=1) + np.add(a, 1.0)\n";
    let sdfg = compile(body);
    insta::assert_snapshot!("numpy_forms", summary(&sdfg));
    let (n, m) = (3usize, 4usize);
    let a: Vec<f64> = (0..n).map(|i| i as f64 * 0.5).collect();
    let b: Vec<f64> = (0..m).map(|j| j as f64 * 0.25 + 0.1).collect();
    let zeros = |r: usize, c: usize| f64_array(vec![r, c], vec![0.0; r * c]);
    let out = run(
        &sdfg,
        Arguments::default()
            .symbol("N", n as i64)
            .symbol("M", m as i64)
            .array("a", f64_array(vec![n], a.clone()))
            .array("b", f64_array(vec![m], b.clone()))
            .array("C", zeros(n, m))
            .array("D", zeros(n, m))
            .array("E", zeros(m, n))
            .array("r", ArrayValue::i64(vec![n], vec![0; n]))
            .array("s", f64_array(vec![n], vec![0.0; n])),
    );
    let c: Vec<f64> = (0..n * m).map(|k| a[k / m] - b[k % m]).collect();
    let d: Vec<f64> = c
        .iter()
        .map(|&x| if x > 0.0 { -1.0 } else { 2.0 * x })
        .collect();
    assert_close(&f64s(&out["C"]), &c);
    assert_close(&f64s(&out["D"]), &d);
    // The reshape keeps row-major order: E's elements are D's.
    assert_close(&f64s(&out["E"]), &d);
    assert_eq!(i64s(&out["r"]), vec![3, 5, 7]);
    let s: Vec<f64> = (0..n)
        .map(|i| c[i * m..(i + 1) * m].iter().sum::<f64>() + a[i] + 1.0)
        .collect();
    assert_close(&f64s(&out["s"]), &s);
}

#[test]
fn selecting_with_a_mask_is_refused_with_its_position() {
    let body = "@dc.program\n\
                def f(A: dc.float64[N], B: dc.float64[N]):\n    \
                    B[:] = A[A > 0.0]\n";
    let kind = error_at(body, 6, 14);
    assert_unsupported(&kind, "boolean mask");
}

#[test]
fn a_mask_of_another_shape_is_a_shape_error() {
    let body = "@dc.program\n\
                def f(A: dc.float64[N], B: dc.float64[M]):\n    \
                    A[B > 0.0] = 1.0\n";
    assert!(matches!(error_at(body, 6, 7), ErrorKind::Shape(_)));
}

#[test]
fn a_reshaped_whole_array_is_a_view_and_a_reshaped_region_a_copy() {
    // As in NumPy, reshaping a whole (contiguous) array gives a view:
    // writing through it writes the array, also with shapes that depend on
    // a loop variable (Stockham's `R ** i`).
    let sdfg = compile(
        "@dc.program\ndef f(A: dc.float64[N, M], B: dc.float64[M * N]):\n    V = A.reshape((M, N))\n    V[0, 1] = 7.0\n    for i in range(2):\n        W = np.reshape(B, (2 ** i, M * N // 2 ** i))\n        W[0, 0] = W[0, 0] + 1.0\n",
    );
    let args = Arguments::default()
        .symbol("N", 2)
        .symbol("M", 2)
        .array("A", zeros(&[2, 2]))
        .array("B", zeros(&[4]));
    let out = run(&sdfg, args);
    assert_close(&output(&out, "A", &[2, 2]), &[0.0, 7.0, 0.0, 0.0]);
    assert_close(&output(&out, "B", &[4]), &[2.0, 0.0, 0.0, 0.0]);
    // A part of an array reshaped is a copy: writing into it is refused
    // rather than lost.
    let body = "@dc.program\n\
                def f(A: dc.float64[N, M]):\n    \
                    B = A[:, 0:2].reshape((2, N))\n    \
                    B[0, 0] = 1.0\n";
    let kind = error_at(body, 7, 5);
    assert_unsupported(&kind, "reshape");
}

#[test]
fn unknown_array_methods_are_errors() {
    let body = "@dc.program\n\
                def f(A: dc.float64[N]):\n    \
                    A[:] = A.searchsorted(0.5)\n";
    let kind = error_at(body, 6, 12);
    assert_unsupported(&kind, "searchsorted");
}

#[test]
fn a_product_of_stacks_of_matrices_is_a_batched_matmul() {
    // NumPy's matmul broadcasts leading batch dimensions; the IR's MatMul
    // takes ranks 1 and 2 only, so a stack times a stack is a batched
    // product, while a stack times a matrix is one product of the
    // flattened stack's rows (control: the 2-D product stays MatMul).
    let sdfg = compile(
        "@dc.program\ndef f(A: dc.float64[3, N, N], B: dc.float64[N, N], C: dc.float64[3, N, N], D: dc.float64[N, N], E: dc.float64[3, N, N]):\n    C[:] = A @ A\n    D[:] = B @ B\n    E[:] = A @ B\n",
    );
    sdfg_ir::validate(&sdfg).unwrap();
    let mut ops: Vec<&str> = sdfg
        .states()
        .iter()
        .flat_map(|(_, s)| {
            s.nodes()
                .filter_map(|(_, n)| match n {
                    sdfg_ir::Node::Library(l) => Some(l.op.name()),
                    _ => None,
                })
                .collect::<Vec<_>>()
        })
        .collect();
    ops.sort();
    assert_eq!(ops, ["batched_matmul", "matmul", "matmul"]);
}

#[test]
fn np_transpose_with_axes_permutes_them_and_without_reverses_them() {
    let sdfg = compile(
        "@dc.program\ndef f(C: dc.float64[N, M, 2], D: dc.float64[M, 2, N], E: dc.float64[2, M, N]):\n    D[:] = np.transpose(C, (1, 2, 0))\n    E[:] = np.transpose(C)\n",
    );
    let (n, m) = (3usize, 4usize);
    let c: Vec<f64> = (0..n * m * 2).map(|k| k as f64).collect();
    let args = Arguments::default()
        .symbol("N", n as i64)
        .symbol("M", m as i64)
        .array("C", ArrayValue::f64(vec![n, m, 2], c.clone()))
        .array("D", ArrayValue::f64(vec![m, 2, n], vec![0.0; n * m * 2]))
        .array("E", ArrayValue::f64(vec![2, m, n], vec![0.0; n * m * 2]));
    let out = Simulator::new()
        .run(sdfg_ir::validate(&sdfg).unwrap(), &args)
        .unwrap()
        .outputs;
    let at = |x: &str, i: usize| out[x].get(i).unwrap().to_f64();
    for i in 0..n {
        for j in 0..m {
            for k in 0..2 {
                let v = c[(i * m + j) * 2 + k];
                assert_eq!(at("D", (j * 2 + k) * n + i), v, "D[{j},{k},{i}]");
                assert_eq!(at("E", (k * m + j) * n + i), v, "E[{k},{j},{i}]");
            }
        }
    }
    // Not a permutation: an error at the axes.
    let kind = error_at(
        "@dc.program\ndef f(C: dc.float64[N, M, 2], D: dc.float64[M, 2, N]):\n    D[:] = np.transpose(C, (1, 1, 0))\n",
        6,
        28,
    );
    assert!(kind.to_string().contains("not a permutation"), "{kind}");
}

#[test]
fn an_integer_counted_inside_a_map_body_is_data_not_a_symbol() {
    // `count = 0` would be a symbol, but iterations of a map cannot assign a
    // symbol: updated inside the map, it is a scalar the map combines into.
    let sdfg = compile(
        "@dc.program\ndef f(data: dc.float64[N], mask: dc.bool[N], out: dc.float64[2]):\n    count = 0\n    total = np.float64(0)\n    for j in dc.map[0:N]:\n        if mask[j]:\n            total += data[j]\n            count += 1\n    out[0] = total\n    out[1] = count\n",
    );
    let args = Arguments::default()
        .symbol("N", 5)
        .array(
            "data",
            ArrayValue::f64(vec![5], vec![1.0, 2.0, 3.0, 4.0, 5.0]),
        )
        .array(
            "mask",
            ArrayValue::new(
                vec![5],
                Elements::Bool(vec![true, false, true, false, true]),
            ),
        )
        .array("out", ArrayValue::f64(vec![2], vec![0.0, 0.0]));
    let out = Simulator::new()
        .run(sdfg_ir::validate(&sdfg).unwrap(), &args)
        .unwrap()
        .outputs;
    assert_eq!(out["out"], ArrayValue::f64(vec![2], vec![9.0, 3.0]));
    // Control: not updated in a map, an integer stays a symbol.
    let sdfg = compile(
        "@dc.program\ndef f(out: dc.float64[N]):\n    k = 2\n    k += 1\n    out[k] = 1.0\n",
    );
    assert!(sdfg.symbols.contains_key("k"), "{:?}", sdfg.symbols);
}

#[test]
fn module_level_numbers_are_literals_and_ndarray_allocates() {
    // `SCALE = 0.5` at module level is read by the program as a literal, as
    // DaCe folds globals; `np.ndarray(shape, dtype=...)` is an uninitialised
    // array like `np.empty`.
    let sdfg = compile(
        "SCALE = 0.5\nSHIFT = -2\n@dc.program\ndef f(x: dc.float64[N], out: dc.float64[N]):\n    t = np.ndarray((N,), dtype=x.dtype)\n    t[:] = x * SCALE\n    out[:] = t + SHIFT\n",
    );
    let args = Arguments::default()
        .symbol("N", 3)
        .array("x", arr(&[3], vec![2.0, 4.0, -6.0]))
        .array("out", zeros(&[3]));
    let out = run(&sdfg, args);
    assert_close(&output(&out, "out", &[3]), &[-1.0, 0.0, -5.0]);
    // Control: a module-level value that is not a number is refused where
    // a program reads it, naming it and where it was bound.
    let kind = error_at(
        "NAME = 'x'\n@dc.program\ndef f(out: dc.float64[N]):\n    out[:] = NAME\n",
        7,
        14,
    );
    assert_unsupported(
        &kind,
        "`NAME`, bound at line 4 of the module to a value the compiler does not evaluate",
    );
    // A name no one binds is unknown.
    let kind = error_at(
        "\n@dc.program\ndef f(out: dc.float64[N]):\n    out[:] = NOWHERE\n",
        7,
        14,
    );
    assert!(
        matches!(&kind, ErrorKind::UnknownName(n) if n == "NOWHERE"),
        "{kind:?}"
    );
}

#[test]
fn reductions_over_arrays_with_axes_of_length_one() {
    // A memlet squeezes axes of length one, so the reduction's axes are
    // renumbered among the others; reducing only such axes is a copy.
    // (`x[:, :, 0:1]` would be squeezed by the subscript, as in DaCe.)
    let sdfg = compile(
        "@dc.program\ndef f(x: dc.float64[N, 1, K], a: dc.float64[N], b: dc.float64[N, K], c: dc.float64[N, 1, 1]):\n    a[:] = np.sum(x, axis=(1, 2))\n    b[:] = np.max(x, axis=1)\n    c[:] = np.sum(np.reshape(x[:, :, 0], (N, 1, 1)), axis=2, keepdims=True)\n",
    );
    let (n, k) = (3, 4);
    let xs = values(n * k, 5);
    let args = Arguments::default()
        .symbol("N", n as i64)
        .symbol("K", k as i64)
        .array("x", arr(&[n, 1, k], xs.clone()))
        .array("a", zeros(&[n]))
        .array("b", zeros(&[n, k]))
        .array("c", zeros(&[n, 1, 1]));
    let out = run(&sdfg, args);
    let rows: Vec<f64> = xs.chunks(k).map(|r| r.iter().sum()).collect();
    assert_close(&output(&out, "a", &[n]), &rows);
    assert_close(&output(&out, "b", &[n, k]), &xs);
    let firsts: Vec<f64> = xs.chunks(k).map(|r| r[0]).collect();
    assert_close(&output(&out, "c", &[n, 1, 1]), &firsts);
}

#[test]
fn reshape_to_a_size_the_algebra_cannot_compare_is_trusted_and_checked_when_run() {
    // `M` is given separately from `N * K` (LeNet's flattened size): the
    // reshape compiles, is right when `M == N * K`, and indexes out of bounds
    // when `M` is larger.
    let sdfg = compile(
        "@dc.program\ndef f(x: dc.float64[N, K], out: dc.float64[M]):\n    out[:] = np.reshape(x, (M,))\n",
    );
    let xs = values(6, 2);
    let args = |m: usize| {
        Arguments::default()
            .symbol("N", 2)
            .symbol("K", 3)
            .symbol("M", m as i64)
            .array("x", arr(&[2, 3], xs.clone()))
            .array("out", zeros(&[m]))
    };
    let out = run(&sdfg, args(6));
    assert_close(&output(&out, "out", &[6]), &xs);
    let valid = sdfg_ir::validate(&sdfg).unwrap();
    let e = Simulator::new().run(valid, &args(7)).unwrap_err();
    // The read past `x`'s last row is out of its shape (the simulator
    // checks every index against its dimension, not only the allocation).
    assert!(
        e.to_string()
            .contains("index 2 is out of bounds for dimension 0 of `x` with extent 2"),
        "{e}"
    );
    // Control: counts that differ by a constant are refused when compiling.
    let kind = error_at(
        "\n@dc.program\ndef f(x: dc.float64[N, K], out: dc.float64[N * K + 1]):\n    out[:] = np.reshape(x, (N * K + 1,))\n",
        7,
        14,
    );
    assert!(matches!(kind, ErrorKind::Shape(_)), "{kind:?}");
}

#[test]
fn annotated_scalars_take_their_declared_type() {
    // `crc: dc.uint16 = ...` is a uint16 scalar: shifts wrap at 16 bits and
    // `~` complements 16 bits; a module-level `POLY: dc.uint16` is a uint16
    // literal; `dc.define_local_scalar(dc.uint32)` declares a scalar.
    let text = "POLY: dc.uint16 = 0x8408\n@dc.program\ndef f(data: dc.uint8[N], out: dc.uint16[3]):\n    crc: dc.uint16 = 0xFFFF\n    crc = (crc << 4) ^ POLY\n    out[0] = crc\n    out[1] = ~crc\n    s = dc.define_local_scalar(dc.uint32)\n    s = data[0]\n    s = s * 300\n    out[2] = s & 0xFFFF\n";
    let sdfg = compile(text);
    let crc = sdfg.containers.iter().find(|(n, _)| n.starts_with("crc_"));
    assert_eq!(
        crc.map(|(_, d)| d.dtype),
        Some(DType::UInt16),
        "{}",
        summary(&sdfg)
    );
    let args = Arguments::default()
        .symbol("N", 1)
        .array("data", ArrayValue::new(vec![1], Elements::U8(vec![250])))
        .array("out", ArrayValue::zeros(DType::UInt16, vec![3]));
    let out = run(&sdfg, args);
    let crc = 0xFFF0u16 ^ 0x8408;
    assert_eq!(
        out["out"],
        ArrayValue::new(
            vec![3],
            Elements::U16(vec![crc, !crc, ((250u32 * 300) & 0xFFFF) as u16])
        )
    );
    // Controls: a value that does not fit the annotated type is refused at
    // module level; an array annotation in a program is refused by name.
    let kind = error_at(
        "POLY: dc.uint8 = 300\n@dc.program\ndef f(out: dc.uint8[N]):\n    out[:] = POLY\n",
        7,
        14,
    );
    assert_unsupported(
        &kind,
        "`POLY`, bound at line 4 of the module to 300, which does not fit in uint8",
    );
    let kind = error_at(
        "\n@dc.program\ndef f(x: dc.float64[N]):\n    y: dc.float64[N] = x\n",
        7,
        8,
    );
    assert_unsupported(&kind, "not a scalar dtype");
}

/// The write-conflict resolutions of the tasklet outputs writing `data`, over all states.
fn wcrs_writing(sdfg: &Sdfg, data: &str) -> Vec<Option<sdfg_ir::Wcr>> {
    let mut out = Vec::new();
    for (_, s) in sdfg.states() {
        for e in s.graph.edge_weights() {
            if let Some(m) = &e.memlet
                && m.data == data
                && e.src_conn.as_deref() == Some("__out")
            {
                out.push(m.wcr);
            }
        }
    }
    out
}

#[test]
fn updates_inside_maps_that_iterations_share_combine_atomically() {
    // `total += x[j]` in a map: every iteration updates the same element, so
    // the write is a sum write-conflict resolution (not a racy read-modify-
    // write); under a condition the other iterations add zero. Control:
    // `y[j] += x[j]` belongs to its iteration and stays a plain write.
    let sdfg = compile(
        "@dc.program\ndef f(x: dc.float64[N], y: dc.float64[N], out: dc.float64[1]):\n    total = np.float64(0)\n    for j in dc.map[0:N]:\n        if x[j] > 0:\n            total += x[j]\n        y[j] += x[j]\n    out[0] = total\n",
    );
    let total = sdfg
        .containers
        .keys()
        .find(|n| n.starts_with("total"))
        .unwrap()
        .clone();
    assert!(
        wcrs_writing(&sdfg, &total).contains(&Some(sdfg_ir::Wcr::Sum)),
        "{}",
        summary(&sdfg)
    );
    assert_eq!(wcrs_writing(&sdfg, "y"), vec![None]);
    let xs = vec![1.5, -2.0, 3.0, -0.5];
    let args = Arguments::default()
        .symbol("N", 4)
        .array("x", arr(&[4], xs.clone()))
        .array("y", arr(&[4], vec![1.0; 4]))
        .array("out", zeros(&[1]));
    let out = run(&sdfg, args);
    assert_close(&output(&out, "out", &[1]), &[4.5]);
    assert_close(&output(&out, "y", &[4]), &[2.5, -1.0, 4.0, 0.5]);
    // Regions: row i belongs to iteration i; row 0 is everybody's.
    let sdfg = compile(
        "@dc.program\ndef f(x: dc.float64[N], A: dc.float64[N, M], B: dc.float64[N, M]):\n    for i in dc.map[0:N]:\n        A[i, :] += x[i]\n        B[0, :] += x[i]\n",
    );
    assert_eq!(wcrs_writing(&sdfg, "A"), vec![None], "{}", summary(&sdfg));
    assert_eq!(wcrs_writing(&sdfg, "B"), vec![Some(sdfg_ir::Wcr::Sum)]);
    let args = Arguments::default()
        .symbol("N", 2)
        .symbol("M", 2)
        .array("x", arr(&[2], vec![1.0, 2.0]))
        .array("A", zeros(&[2, 2]))
        .array("B", zeros(&[2, 2]));
    let out = run(&sdfg, args);
    assert_close(&output(&out, "A", &[2, 2]), &[1.0, 1.0, 2.0, 2.0]);
    assert_close(&output(&out, "B", &[2, 2]), &[3.0, 3.0, 0.0, 0.0]);
}

#[test]
fn ufunc_where_with_out_keeps_the_other_elements() {
    // `np.power(x, -1.0, out=x, where=x > 0)` leaves non-positive elements.
    let sdfg = compile(
        "@dc.program\ndef f(x: dc.float64[N]):\n    np.power(x, -1.0, out=x, where=x > 0)\n",
    );
    let args = Arguments::default()
        .symbol("N", 4)
        .array("x", arr(&[4], vec![2.0, 0.0, -4.0, 0.5]));
    let out = run(&sdfg, args);
    assert_close(&output(&out, "x", &[4]), &[0.5, 0.0, -4.0, 2.0]);
    // Without `out=` NumPy leaves the masked elements uninitialized; here
    // they are zero.
    let sdfg = compile(
        "@dc.program\ndef f(x: dc.float64[N], y: dc.float64[N]):\n    y[:] = np.sqrt(x, where=x > 0)\n",
    );
    let args = Arguments::default()
        .symbol("N", 4)
        .array("x", arr(&[4], vec![4.0, 0.0, -4.0, 0.25]))
        .array("y", arr(&[4], vec![9.0; 4]));
    let out = run(&sdfg, args);
    assert_close(&output(&out, "y", &[4]), &[2.0, 0.0, 0.0, 0.5]);
    // A keyword the frontend does not implement is refused, not dropped.
    let kind = error_at(
        "\n@dc.program\ndef f(x: dc.float64[N], y: dc.float64[1]):\n    y[0] = np.max(x, initial=-1.0)\n",
        7,
        22,
    );
    assert_unsupported(&kind, "the keyword `initial` of `np.max`");
    // A keyword another function takes is still refused where it means
    // nothing, and so is one given to an array method.
    let kind = error_at(
        "\n@dc.program\ndef f(x: dc.float64[N], y: dc.float64[N]):\n    y[:] = np.sqrt(x, axis=0)\n",
        7,
        23,
    );
    assert_unsupported(&kind, "the keyword `axis` of `np.sqrt`");
    let kind = error_at(
        "\n@dc.program\ndef f(x: dc.float64[N], y: dc.float64[1]):\n    y[0] = x.sum(initial=1.0)\n",
        7,
        18,
    );
    assert_unsupported(&kind, "the keyword `initial` of `x.sum`");
}

#[test]
fn programs_returning_tuples_unpack_into_names_and_elements() {
    let text = "\n@dc.program\ndef stats(x: dc.float64[M]):\n    total = np.sum(x)\n    return total, np.max(x)\n\n@dc.program\ndef f(x: dc.float64[N], out: dc.float64[2]):\n    out[0], out[1] = stats(x)\n    s, m = stats(x * 2.0)\n    out[0] = out[0] + s + m\n";
    let sdfg = compile(text);
    let args = Arguments::default()
        .symbol("N", 3)
        .array("x", arr(&[3], vec![1.0, 5.0, 2.0]))
        .array("out", zeros(&[2]));
    let out = run(&sdfg, args);
    assert_close(&output(&out, "out", &[2]), &[8.0 + 16.0 + 10.0, 5.0]);
    // Controls: a tuple used as one value, and too many names.
    let kind = error_at(
        "\n@dc.program\ndef g(x: dc.float64[N]):\n    return x, x\n\n@dc.program\ndef f(x: dc.float64[N]):\n    x[:] = g(x)\n",
        11,
        12,
    );
    assert_unsupported(&kind, "returns a tuple");
    let kind = error_at(
        "\n@dc.program\ndef g(x: dc.float64[N]):\n    return x, x\n\n@dc.program\ndef f(x: dc.float64[N]):\n    a, b, c = g(x)\n",
        11,
        5,
    );
    assert!(
        matches!(kind, ErrorKind::Shape(ref m) if m.contains("3 names for 2 values")),
        "{kind}"
    );
}

#[test]
fn shapes_of_arrays_as_arguments_and_extents() {
    // `np.zeros(x.shape)`, `x.shape[-1]` and `np.logical_not`.
    let sdfg = compile(
        "@dc.program\ndef f(x: dc.float64[N, M], out: dc.float64[N, M]):\n    z = np.zeros(x.shape, dtype=np.int64)\n    z[:] = np.logical_not(x > 0)\n    out[:] = z + x.shape[-1]\n",
    );
    let args = Arguments::default()
        .symbol("N", 2)
        .symbol("M", 3)
        .array("x", arr(&[2, 3], vec![1.0, -1.0, 0.0, 2.0, -3.0, 4.0]))
        .array("out", zeros(&[2, 3]));
    let out = run(&sdfg, args);
    assert_close(
        &output(&out, "out", &[2, 3]),
        &[3.0, 4.0, 4.0, 3.0, 4.0, 3.0],
    );
    let kind = error_at(
        "\n@dc.program\ndef f(x: dc.float64[N], out: dc.float64[N]):\n    out[:] = x.shape[1]\n",
        7,
        22,
    );
    assert!(matches!(kind, ErrorKind::Shape(_)), "{kind:?}");
}

#[test]
fn transients_whose_shape_changes_in_a_loop_are_indexed_with_the_new_shape() {
    // (1, 8), (2, 4), (4, 2): the same size, other strides each iteration
    // (the simulator used to keep the first shape's strides).
    let sdfg = compile(
        "@dc.program\ndef f(x: dc.float64[8], out: dc.float64[3]):\n    for i in range(3):\n        t = np.ndarray((2 ** i, 8 // 2 ** i), dtype=np.float64)\n        t[:] = np.reshape(x, (2 ** i, 8 // 2 ** i))\n        out[i] = t[2 ** i - 1, 0]\n",
    );
    let xs: Vec<f64> = (0..8).map(f64::from).collect();
    let args = Arguments::default()
        .array("x", arr(&[8], xs))
        .array("out", zeros(&[3]));
    let out = run(&sdfg, args);
    assert_close(&output(&out, "out", &[3]), &[0.0, 4.0, 6.0]);
}

#[test]
fn module_level_symbol_expressions_and_numpy_constants() {
    let text =
        "L = N * 2\n@dc.program\ndef f(x: dc.float64[L]):\n    x[:] = np.pi\n    x[0] = np.e\n";
    let sdfg = compile(text);
    let args = Arguments::default().symbol("N", 2).array("x", zeros(&[4]));
    let out = run(&sdfg, args);
    let (pi, e) = (std::f64::consts::PI, std::f64::consts::E);
    assert_close(&output(&out, "x", &[4]), &[e, pi, pi, pi]);
}

#[test]
fn host_reads_of_data_are_reused_until_the_data_changes() {
    // The second statement reuses both host reads of the first; a write to
    // `row` forgets them (by container: both are read again), so 4, not 6.
    let sdfg = compile(
        "@dc.program\ndef f(row: dc.int64[3], val: dc.float64[5], y: dc.float64[3]):\n    y[0] = np.sum(val[row[0]:row[1]])\n    y[1] = np.sum(val[row[0]:row[1]])\n    row[1] = 4\n    y[2] = np.sum(val[row[0]:row[1]])\n",
    );
    let reads = sdfg
        .symbols
        .keys()
        .filter(|s| s.starts_with("__data"))
        .count();
    assert_eq!(reads, 4, "{}", summary(&sdfg));
    let args = Arguments::default()
        .array(
            "row",
            ArrayValue::new(vec![3], Elements::I64(vec![0, 2, 5])),
        )
        .array("val", arr(&[5], vec![1.0, 2.0, 3.0, 4.0, 5.0]))
        .array("y", zeros(&[3]));
    let out = run(&sdfg, args);
    assert_close(&output(&out, "y", &[3]), &[3.0, 3.0, 10.0]);
}

#[test]
fn constructs_around_the_new_features_that_are_refused_by_name() {
    // A declaration without a value.
    let kind = error_at(
        "\n@dc.program\ndef f(x: dc.float64[N]):\n    t: dc.float64\n    x[0] = 1.0\n",
        7,
        5,
    );
    assert_unsupported(&kind, "an annotation without a value");
    // A local scalar declared inside a map body.
    let kind = error_at(
        "\n@dc.program\ndef f(x: dc.float64[N]):\n    for i in dc.map[0:N]:\n        t = dc.define_local_scalar(dc.float64)\n        x[i] = 1.0\n",
        8,
        13,
    );
    assert_unsupported(&kind, "`define_local_scalar` inside a `dace.map` body");
    // An indirect `out=` argument.
    let kind = error_at(
        "\n@dc.program\ndef f(x: dc.float64[N], idx: dc.int64[N]):\n    np.add(x, 1.0, out=x[idx])\n",
        7,
        24,
    );
    assert_unsupported(&kind, "an indirect `out=` argument");
    // Unpacking a program that returns one value.
    let kind = error_at(
        "\n@dc.program\ndef g(x: dc.float64[N]):\n    return x\n\n@dc.program\ndef f(x: dc.float64[N]):\n    a, b = g(x)\n",
        11,
        5,
    );
    assert_unsupported(&kind, "unpacking a value that is not a tuple");
    // A tuple returned by a program inlined in a map body.
    let kind = error_at(
        "\n@dc.program\ndef g(v: dc.float64):\n    return v, v\n\n@dc.program\ndef f(x: dc.float64[N], y: dc.float64[N]):\n    for i in dc.map[0:N]:\n        a, b = g(x[i])\n        y[i] = a + b\n",
        7,
        5,
    );
    assert_unsupported(&kind, "a tuple `return` in a `dace.map` body");
}

#[test]
fn a_view_a_name_rebinds_cannot_be_written_through() {
    // `x` names a view of A's first row, then of its second: which row a
    // write through `x` reaches depends on which binding ran, so the write
    // is refused, naming `x` and the binding.
    let kind = error_at(
        "\n@dc.program\ndef f(A: dc.float64[N, M]):\n    x = A[0]\n    if A[0, 0] > 0.0:\n        x = A[1]\n    x[0] = 1.0\n",
        10,
        5,
    );
    assert_unsupported(&kind, "writing through `x`, which is bound at line");
    // Control: rebinding to a new value (not a view) lets writes through.
    compile(
        "\n@dc.program\ndef f(A: dc.float64[N, M]):\n    x = A[0]\n    x = x * 2.0\n    x[0] = 1.0\n    A[1] = x\n",
    );
    // A name bound once is a view: the write reaches A.
    let sdfg =
        compile("\n@dc.program\ndef f(A: dc.float64[N, M]):\n    x = A[1]\n    x[0] = 1.0\n");
    let args = Arguments::default()
        .symbol("N", 2)
        .symbol("M", 2)
        .array("A", zeros(&[2, 2]));
    let out = run(&sdfg, args);
    assert_close(&output(&out, "A", &[2, 2]), &[0.0, 0.0, 1.0, 0.0]);
}

#[test]
fn ellipsis_and_new_axes_in_subscripts() {
    // `A[..., 0]` is the first column; a view with a new axis indexes it
    // with 0 (any other index is a shape error at its position).
    let sdfg = compile(
        "\n@dc.program\ndef f(A: dc.float64[N, M], c: dc.float64[N]):\n    c[:] = A[..., 0]\n    n = c[np.newaxis, :]\n    n[0, 1] = 5.0\n",
    );
    let args = Arguments::default()
        .symbol("N", 2)
        .symbol("M", 3)
        .array("A", arr(&[2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]))
        .array("c", zeros(&[2]));
    let out = run(&sdfg, args);
    assert_close(&output(&out, "c", &[2]), &[1.0, 5.0]);
    let kind = error_at(
        "\n@dc.program\ndef f(c: dc.float64[N]):\n    n = c[np.newaxis, :]\n    n[1, 0] = 5.0\n",
        8,
        7,
    );
    assert!(
        matches!(kind, ErrorKind::Shape(m) if m.contains("np.newaxis")),
        "shape error"
    );
    let kind = error_at(
        "\n@dc.program\ndef f(A: dc.float64[N, M, K]):\n    A[..., 0, ...] = 1.0\n",
        7,
        7,
    );
    assert_unsupported(&kind, "more than one `...`");
}

#[test]
fn refusals_of_calls_ufunc_methods_and_powers_name_the_construct_at_its_position() {
    let callee = "@dc.program\ndef g(x: dc.float64[N]):\n    x[:] = 1.0\n";
    // A keyword that is no parameter and no module-level symbol.
    let kind = error_at(
        &format!("\n{callee}@dc.program\ndef f(x: dc.float64[N]):\n    g(x, bogus=1)\n"),
        10,
        10,
    );
    assert_unsupported(&kind, "the keyword `bogus=` in a call of `g`");
    // A missing argument, named.
    let kind = error_at(
        &format!("\n{callee}@dc.program\ndef f(x: dc.float64[N]):\n    g()\n"),
        10,
        5,
    );
    assert_unsupported(&kind, "calling `g` without its argument `x`");
    // Too many positional arguments: the first extra one.
    let kind = error_at(
        &format!("\n{callee}@dc.program\ndef f(x: dc.float64[N]):\n    g(x, x)\n"),
        10,
        10,
    );
    assert_unsupported(&kind, "calling `g` with 2 positional arguments; it takes 1");
    // A ufunc without a reduction, and `where=` in a reduction.
    let kind = error_at(
        "\n@dc.program\ndef f(x: dc.float64[N], y: dc.float64[1]):\n    y[0] = np.logaddexp.reduce(x)\n",
        7,
        12,
    );
    assert_unsupported(&kind, "`np.logaddexp.reduce`");
    let kind = error_at(
        "\n@dc.program\ndef f(x: dc.float64[N], y: dc.float64[1]):\n    y[0] = np.add.reduce(x, where=x > 0)\n",
        7,
        35,
    );
    assert_unsupported(&kind, "`where=` in `np.add.reduce`");
    // An integer array to a negative power, as NumPy refuses it.
    let kind = error_at(
        "\n@dc.program\ndef f(a: dc.int64[N], b: dc.float64[N]):\n    b[:] = a ** -2\n",
        7,
        12,
    );
    assert_unsupported(&kind, "an integer array to a negative integer power");
    // A float scalar where a symbol is needed.
    let kind = error_at(
        "\n@dc.program\ndef f(A: dc.float64[N], x: dc.float64):\n    for i in range(x):\n        A[i] = 1.0\n",
        7,
        20,
    );
    assert_unsupported(&kind, "`x` must be an integer expression of symbols");
}

// ---------------------------------------------------------------------------
// User mistakes are user errors: reported at the construct, with the kind
// NumPy or Python would raise, never as an invalid lowered SDFG.

#[test]
fn user_mistakes_are_errors_at_their_construct_not_internal_errors() {
    // Operators on types they are not defined on (NumPy's UFuncTypeError).
    let k = error_at(
        "\n@dc.program\ndef f(A: dc.complex128[N], B: dc.complex128[N]):\n    B[:] = A // A\n",
        7,
        12,
    );
    assert_eq!(
        k,
        ErrorKind::Type("`//` is not defined on complex128 operands".to_owned())
    );
    let k = error_at(
        "\n@dc.program\ndef f(A: dc.float64[N], B: dc.float64[N]):\n    B[:] = A | A\n",
        7,
        12,
    );
    assert_eq!(
        k,
        ErrorKind::Type("`|` is not defined on float64 operands".to_owned())
    );
    let k = error_at(
        "\n@dc.program\ndef f(A: dc.bool[N], B: dc.bool[N]):\n    B[:] = A - A\n",
        7,
        12,
    );
    assert!(
        matches!(&k, ErrorKind::Type(m) if m.contains("`-`")),
        "{k:?}"
    );
    let k = error_at(
        "\n@dc.program\ndef f(A: dc.float64[N], B: dc.float64[N]):\n    B[:] = ~A\n",
        7,
        12,
    );
    assert!(
        matches!(&k, ErrorKind::Type(m) if m.contains("`~`")),
        "{k:?}"
    );
    // A complex value stored into a real array (NumPy's TypeError), in
    // a slice assignment and in a `dace.map` body (a fuzz finding: the
    // lowered tasklet's cast was refused as an invalid SDFG).
    for (src, col) in [
        (
            "\n@dc.program\ndef f(A: dc.float64[N], B: dc.complex128[N]):\n    A[:] = B\n",
            5,
        ),
        (
            "\n@dc.program\ndef f(u: dc.float64[N, N]):\n    for i, j in dc.map[0:N, 0:N]:\n        u[i, j] = (i + N - 10**20j) / N\n",
            9,
        ),
    ] {
        let line = if src.contains("dc.map") { 8 } else { 7 };
        let k = error_at(src, line, col);
        assert!(
            matches!(&k, ErrorKind::Type(m) if m.contains("complex128 value cannot become float64")),
            "{k:?}"
        );
    }
    // A parameter given twice (Python's SyntaxError).
    let k = error_at(
        "\n@dc.program\ndef f(A: dc.float64[N], A: dc.float64[N]):\n    A[0] = 1.0\n",
        6,
        25,
    );
    assert!(matches!(k, ErrorKind::Syntax(m) if m.contains("duplicate argument `A`")));
    // Negative sizes, in annotations and allocations.
    let k = error_at(
        "\n@dc.program\ndef f(A: dc.float64[-3]):\n    A[0] = 1.0\n",
        6,
        21,
    );
    assert!(matches!(k, ErrorKind::Value(m) if m.contains("negative dimensions")));
    let k = error_at(
        "\n@dc.program\ndef f(A: dc.float64[4]):\n    B = np.zeros((2, -3))\n    A[0] = B[0, 0]\n",
        7,
        18,
    );
    assert!(matches!(k, ErrorKind::Value(m) if m.contains("(a dimension of -3)")));
    // A constant index beyond a constant extent (NumPy's IndexError);
    // negative indices within the extent count from the end.
    let k = error_at(
        "\n@dc.program\ndef f(A: dc.float64[4, 3]):\n    A[1, -4] = 1.0\n",
        7,
        10,
    );
    assert_eq!(
        k,
        ErrorKind::Value("index -4 is out of bounds for axis 1 with size 3".to_owned())
    );
    compile("\n@dc.program\ndef f(A: dc.float64[4, 3]):\n    A[-4, -3] = 1.0\n");
    // Indices a map's constant range takes out of bounds (found by the fuzzer).
    let k = error_at(
        "\n@dc.program\ndef f(A: dc.float64[120]):\n    for d in dc.map[-9223372036854775807 - 1:120]:\n        A[d] = 1.0\n",
        8,
        9,
    );
    assert!(
        matches!(&k, ErrorKind::Value(m) if m.contains("indices out of bounds")),
        "{k:?}"
    );
    // Every index of an empty axis is out of bounds (found by the fuzzer).
    let k = error_at(
        "\n@dc.program\ndef f(A: dc.float64[0], B: dc.float64[N]):\n    for i in dc.map[0:N]:\n        B[i] = A[N - 1 - i]\n",
        8,
        18,
    );
    assert!(
        matches!(&k, ErrorKind::Value(m) if m.contains("with size 0")),
        "{k:?}"
    );
    // Names that are not ASCII (they become container names and C++).
    let k = error_at(
        "\n@dc.program\ndef f(A: dc.float64[4]):\n    \u{e9}t\u{e9} = 1.0\n    A[0] = \u{e9}t\u{e9}\n",
        7,
        5,
    );
    assert_unsupported(&k, "the identifier `\u{e9}t\u{e9}`: names must be ASCII");
    // A module-level name that is not ASCII is no program's business.
    compile("\n\u{e9} = 3\n@dc.program\ndef f(A: dc.float64[4]):\n    A[0] = 1.0\n");
}

#[test]
fn python_integers_do_not_wrap_around_64_bits() {
    for (text, column) in [
        ("A: dc.float64[2**64 + 4]", 21),
        ("A: dc.float64[4 * 2**62]", 21),
        ("A: dc.float64[-(-9223372036854775807 - 1)]", 21),
    ] {
        let k = error_at(
            &format!("\n@dc.program\ndef f({text}):\n    A[0] = 1.0\n"),
            6,
            column,
        );
        assert!(
            matches!(&k, ErrorKind::Value(m) if m.contains("does not fit in 64 bits")),
            "{text}: {k:?}"
        );
    }
    let k = error_at(
        "\n@dc.program\ndef f(A: dc.float64[4]):\n    for i in range(2**64 + 3):\n        A[0] = A[0] + 1.0\n",
        7,
        20,
    );
    assert_eq!(
        k,
        ErrorKind::Value("the integer `2**64` does not fit in 64 bits".to_owned())
    );
    let k = error_at(
        "\n@dc.program\ndef f(A: dc.float64[4]):\n    A[0] = 18446744073709551620\n",
        7,
        12,
    );
    assert!(matches!(k, ErrorKind::Value(m) if m.contains("18446744073709551620")));
}

#[test]
fn loops_to_the_ends_of_the_64_bit_range_run_as_python_runs_them() {
    // `range(-2**63)` is empty; its condition `i < -2**63` normalized to
    // `i + 2**63 < 0` would wrap to `i - 2**63 < 0` and never end.
    let sdfg = compile(
        "\n@dc.program\ndef f(A: dc.float64[4], n: dc.int64[1]):\n    for i in range(-9223372036854775807 - 1):\n        A[0] = 1.0\n    for i in range(9223372036854775806, 9223372036854775807):\n        n[0] = n[0] + 1\n    for i in range(-9223372036854775807, -9223372036854775807 - 1, -1):\n        n[0] = n[0] + 10\n",
    );
    let outs = run(
        &sdfg,
        Arguments::default()
            .array("A", ArrayValue::f64(vec![4], vec![0.0; 4]))
            .array("n", ArrayValue::i64(vec![1], vec![0])),
    );
    assert_eq!(f64s(&outs["A"]), [0.0; 4]);
    assert_eq!(i64s(&outs["n"]), [11]);
}

#[test]
fn bool_arithmetic_follows_numpy_on_arrays_and_python_on_scalars() {
    let sdfg = compile(
        "\n@dc.program\ndef f(A: dc.bool[4], B: dc.bool[4], C: dc.bool[4], D: dc.bool[4], n: dc.int64[1]):\n    C[:] = A + B\n    D[:] = A * B\n    n[0] = True + True\n",
    );
    let bools = |v: [bool; 4]| ArrayValue::new(vec![4], Elements::Bool(v.to_vec()));
    let outs = run(
        &sdfg,
        Arguments::default()
            .array("A", bools([true, false, true, false]))
            .array("B", bools([true, true, false, false]))
            .array("C", bools([false; 4]))
            .array("D", bools([false; 4]))
            .array("n", ArrayValue::i64(vec![1], vec![0])),
    );
    let got = |name: &str| -> Vec<bool> {
        (0..4)
            .map(|i| outs[name].get(i).is_some_and(|x| x.to_f64() != 0.0))
            .collect()
    };
    assert_eq!(got("C"), [true, true, true, false]);
    assert_eq!(got("D"), [true, false, false, false]);
    assert_eq!(i64s(&outs["n"]), [2]);
}

#[test]
fn constant_shapes_beyond_a_64_bit_address_space_are_refused_at_their_annotation() {
    for (text, column) in [
        ("A: dc.float64[10**18, 10**18]", 21),
        ("A: dc.float64[2**61]", 21),
    ] {
        let k = error_at(
            &format!("\n@dc.program\ndef f({text}):\n    A[0] = 1.0\n"),
            6,
            column,
        );
        assert!(
            matches!(&k, ErrorKind::Value(m) if m.contains("does not fit in a 64-bit address space")),
            "{text}: {k:?}"
        );
    }
    // 2**60 bytes of uint8 are addressable (the simulator's memory limit
    // refuses to allocate them when run).
    compile("\n@dc.program\ndef f(A: dc.uint8[2**60]):\n    A[0] = 1\n");
}

#[test]
fn a_run_that_does_not_end_stops_at_the_step_limit_naming_where_it_was() {
    let sdfg = compile(
        "\n@dc.program\ndef f(A: dc.float64[4]):\n    while A[0] >= 0.0:\n        A[0] = A[0] + 1.0\n",
    );
    let args = Arguments::default().array("A", ArrayValue::f64(vec![4], vec![0.0; 4]));
    let err = Simulator::new()
        .step_limit(Some(10_000))
        .run(sdfg_ir::validate(&sdfg).unwrap(), &args)
        .expect_err("the loop does not end");
    let text = err.to_string();
    assert!(
        matches!(err, sdfg_sim::SimError::StepLimit { limit: 10_000, .. }),
        "{text}"
    );
    assert!(text.contains("block `assign_l7"), "{text}");
    // Map points count too: a map of 10**12 points stops as soon as it starts.
    let sdfg = compile(
        "\n@dc.program\ndef f(A: dc.float64[4]):\n    for i in dc.map[0:10**12]:\n        A[0] += 1.0\n",
    );
    let err = Simulator::new()
        .step_limit(Some(1_000_000))
        .run(sdfg_ir::validate(&sdfg).unwrap(), &args)
        .expect_err("too many points");
    assert!(matches!(err, sdfg_sim::SimError::StepLimit { .. }), "{err}");
}

#[test]
fn a_loop_variable_named_like_an_earlier_map_parameter_gets_a_name_of_its_own() {
    // Found by `cargo xtask fuzz`: the loop's symbol `i` made the map's
    // parameter `i` shadow a symbol, an invalid SDFG.
    let sdfg = compile(
        "\n@dc.program\ndef f(A: dc.float64[N, M], B: dc.float64[N, M], x: dc.float64[N]):\n    for i, j in dc.map[0:N, 0:M]:\n        B[i, j] = A[i, j]\n    for i in range(N):\n        x[i] = x[i] + 1.0\n",
    );
    let outs = run(
        &sdfg,
        Arguments::default()
            .symbol("N", 2)
            .symbol("M", 2)
            .array("A", ArrayValue::f64(vec![2, 2], vec![1.0, 2.0, 3.0, 4.0]))
            .array("B", zeros(&[2, 2]))
            .array("x", ArrayValue::f64(vec![2], vec![0.5, 1.5])),
    );
    assert_eq!(f64s(&outs["B"]), [1.0, 2.0, 3.0, 4.0]);
    assert_eq!(f64s(&outs["x"]), [1.5, 2.5]);
}

#[test]
fn the_deepest_expressions_the_frontend_accepts_round_trip_through_json() {
    // Found by `cargo xtask fuzz`: 60 nested additions (and `k**53`,
    // once a chain of 53 products) nest deeper than serde_json's default
    // limit of 128 levels.
    let sum = vec!["A"; 60].join(" + ");
    let sdfg = compile(&format!(
        "\n@dc.program\ndef f(A: dc.int64[N], B: dc.int64[N]):\n    B[:] = {sum}\n    for k in dc.map[0:N]:\n        B[k] = B[k] + k**53 % 97\n"
    ));
    let json = sdfg.to_json();
    let back = Sdfg::from_json(&json).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back.to_json(), json);
    // Deeper text than any SDFG is refused, without overflowing the stack.
    let deep = "[".repeat(100_000);
    let err = Sdfg::from_json(&deep).expect_err("too deep");
    assert!(
        err.to_string().contains("nested more than 512 levels"),
        "{err}"
    );
}

/// A scalar a `dace.map` body assigns is one point's value: read after
/// the map, it is the program's mistake (found by the fuzzer, as an
/// internal error: the point's value leaked out of its map, naming the
/// map's parameter), while assigning it anew after the map rebinds it.
#[test]
fn map_locals_do_not_outlive_their_map() {
    let k = error_at(
        "\n@dc.program\ndef f(A: dc.float64[N], B: dc.float64[1]):\n    c = 1.0\n    for i in dc.map[0:N]:\n        c = A[i]\n    B[0] = c\n",
        10,
        12,
    );
    assert!(
        matches!(&k, ErrorKind::Value(m) if m.contains("`c` is assigned in the body of the `dace.map` at line 8")),
        "{k:?}"
    );
    // A declared scalar too: the map's points would race on it.
    let k = error_at(
        "\n@dc.program\ndef f(A: dc.float64[N], B: dc.float64[1]):\n    c: dc.float64 = 1.0\n    for i in dc.map[0:N]:\n        for j in dc.map[0:N]:\n            c = A[j]\n        B[0] = c\n",
        11,
        16,
    );
    assert!(
        matches!(&k, ErrorKind::Value(m) if m.contains("line 9")),
        "{k:?}"
    );
    compile(
        "\n@dc.program\ndef f(A: dc.float64[N], B: dc.float64[N]):\n    for i in dc.map[0:N]:\n        c = A[i] * 2.0\n        B[i] = c\n    c = 3.0\n    B[0] = c\n",
    );
    // A loop in a map body cannot carry a local between iterations: once
    // it silently counted one iteration (found by the fuzzer).
    let k = error_at(
        "\n@dc.program\ndef f(A: dc.float64[N, N]):\n    for i in dc.map[0:N]:\n        acc = 0.0\n        for k in range(N):\n            acc += A[i, k]\n        A[i, 0] = acc\n",
        10,
        13,
    );
    assert_unsupported(&k, "a loop in a map body cannot carry a value");
    // A local the loop binds is that iteration's, and ends with it.
    let k = error_at(
        "\n@dc.program\ndef f(A: dc.float64[N, N]):\n    for i in dc.map[0:N]:\n        for k in range(N):\n            t = A[i, k]\n        A[i, 0] = t\n",
        10,
        19,
    );
    assert!(
        matches!(&k, ErrorKind::Value(m) if m.contains("in the body of the loop at line 8")),
        "{k:?}"
    );
    compile(
        "\n@dc.program\ndef f(A: dc.float64[N, N], B: dc.float64[N, N]):\n    for i in dc.map[0:N]:\n        s = A[i, 0] * 2.0\n        for k in range(N):\n            t = A[i, k] + s\n            B[i, k] = t\n",
    );
    // Nor can its range depend on the point (an internal error once).
    let k = error_at(
        "\n@dc.program\ndef f(A: dc.float64[N, N]):\n    for i in dc.map[0:N]:\n        for k in range(i, N):\n            A[i, k] = 1.0\n",
        8,
        18,
    );
    assert_unsupported(&k, "whose range depends on the map's parameter `i`");
    // A local of the outer body that the inner map only reads stays usable.
    compile(
        "\n@dc.program\ndef f(A: dc.float64[N, N], B: dc.float64[N, N]):\n    for i in dc.map[0:N]:\n        c = A[i, 0]\n        for j in dc.map[0:N]:\n            B[i, j] = c\n        B[i, 0] = c + 1.0\n",
    );
}

/// A one-element array assigned to an element (`x[i] = b[i] - L[i-1:i, 0]`,
/// NumPy converts the size-1 result) goes through a reshape to a 0-d
/// value, a scalar container: found by the fuzzer as an internal error
/// (the fill addressed the scalar with no index).
#[test]
fn a_one_element_result_assigned_to_an_element() {
    compile(
        "\n@dc.program\ndef f(L: dc.float64[N, N], x: dc.float64[N], b: dc.float64[N]):\n    for i in range(1, N):\n        x[i] = b[i] - L[i - 1:i, 0]\n",
    );
    compile(
        "\n@dc.program\ndef f(L: dc.float64[N, N], x: dc.float64[N], b: dc.float64[N]):\n    for i in range(1, N):\n        x[i] = (b[i] - L[i - 1:i] @ x) / L[i, i]\n",
    );
}

// -- NumPy functions built from the lowering's pieces ---------------------------

#[test]
fn numpy_functions_outside_their_domain_are_refused_at_the_call() {
    // Each (body line, expected message): a clean error at the call, never
    // a guess (NumPy's semantics for these are covered against NumPy in
    // sdfg-harness's `numpy` programs).
    let cases = [
        ("B[:] = np.einsum('ii->i', A)", "repeated in one operand"),
        ("B[:] = np.einsum('ij,jk', A)", "one term per operand"),
        ("B[:] = np.einsum('...i->i', A)", "ellipses"),
        ("B[:] = np.reciprocal(K)", "integer reciprocal"),
        ("B[:] = np.real(np.log2(Z))", "of complex numbers"),
        ("B[:] = np.clip(A)", "without a lower or an upper bound"),
        ("B[:] = np.argmax(Z, axis=0)", "complex"),
        ("B[:] = np.diag(T)", "rank 3"),
        ("B[:] = np.concatenate(A)", "a tuple or list of arrays"),
        ("B[:] = np.linspace(A, A)", "between arrays"),
    ];
    for (line, needle) in cases {
        let body = format!(
            "\n@dc.program\ndef f(A: dc.float64[N, N], B: dc.float64[N, N], K: dc.int64[N, N], Z: dc.complex128[N, N], T: dc.float64[N, N, N]):\n    {line}\n"
        );
        let e = error(&body);
        assert_eq!(e.at.line, 7, "{line}: {e}");
        assert_unsupported(&e.kind, needle);
    }
}

#[test]
fn ragged_literals_and_mismatched_joins_are_shape_errors() {
    for line in [
        "B[0, :2] = np.array([[1.0, 2.0], [3.0]])[0]",
        "B[:] = np.concatenate((A, A[:, :1]))",
        "B[:] = np.stack((A, A[1:]))",
    ] {
        let body = format!(
            "\n@dc.program\ndef f(A: dc.float64[4, 4], B: dc.float64[4, 4]):\n    {line}\n"
        );
        let e = error(&body);
        assert!(matches!(e.kind, ErrorKind::Shape(_)), "{line}: {e}");
        assert_eq!(e.at.line, 7, "{line}: {e}");
    }
}

// -- DaCe's explicit dataflow ----------------------------------------------------

#[test]
fn explicit_tasklets_lower_to_the_maps_of_the_implicit_style() {
    // A `@dace.map` with memlets, a WCR output and a top-level tasklet,
    // run here; the corpus manifest (`corpus/programs/explicit/`) compares
    // larger ones with NumPy on host, device and emitted code.
    let sdfg = compile(
        r#"
@dc.program
def f(A: dc.float64[N], B: dc.float64[N], s: dc.float64[2]):
    @dc.map
    def double(i: _[0:N]):
        a << A[i]
        b >> B[i]
        t >> s(1, lambda x, y: x + y)[0]
        b = a * 2.0
        t = a
    with dc.tasklet:
        p << s[0]
        q >> s[1]
        q = p + 1.0
"#,
    );
    let args = Arguments::default()
        .symbol("N", 3)
        .array("A", arr(&[3], vec![1.0, 2.0, 4.0]))
        .array("B", zeros(&[3]))
        .array("s", zeros(&[2]));
    let out = run(&sdfg, args);
    assert_close(&output(&out, "B", &[3]), &[2.0, 4.0, 8.0]);
    assert_close(&output(&out, "s", &[2]), &[7.0, 8.0]);
}

#[test]
fn explicit_constructs_outside_the_subset_are_refused_naming_them() {
    let cases = [
        (
            "@dc.map\n    def g(i: _[0:N]):\n        a << A[i]\n        b >> B(1, lambda x, y: x - y)[0]\n        b = a\n",
            "the write-conflict resolution `lambda x, y: x - y`",
        ),
        ("def g(i):\n        return i\n", "the nested function `g`"),
        (
            "@dc.map\n    def g(i):\n        b >> B[i]\n        b = 1.0\n",
            "the map parameter `i` without a range annotation",
        ),
        (
            "@dc.map\n    def g(i: _[0:N]):\n        b >> B(1, lambda x, y: x + y)[0]\n        b = 1.0\n        b = 2.0\n",
            "assigning the output `b` twice",
        ),
        (
            "a = dc.reduce(lambda x, y: x - y, A)\n",
            "the write-conflict resolution",
        ),
        (
            "with dc.tasklet:\n        a << A(1, lambda x, y: x + y)[0]\n        B[0] = a\n",
            "a write-conflict resolution on an input memlet",
        ),
    ];
    for (body, needle) in cases {
        let text = format!("\n@dc.program\ndef f(A: dc.float64[N], B: dc.float64[N]):\n    {body}");
        let e = error(&text);
        assert_unsupported(&e.kind, needle);
    }
}

#[test]
fn unannotated_parameters_take_their_types_from_a_signature() {
    let text = "import dace\nN = dace.symbol('N')\n\n@dace.program\ndef f(A, alpha, B: dace.float64[N]):\n    B[:] = alpha * A[0]\n";
    let m = Module::parse(FILE, text).unwrap();
    let sig = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    // Without a signature: an error naming the parameter and the remedy.
    let e = m.compile("f").unwrap_err();
    assert!(
        matches!(&e.kind, ErrorKind::Annotation(m) if m.contains("parameter `A` has no annotation") && m.contains("--signature")),
        "{e}"
    );
    // With one: a new extent `M` becomes a symbol argument.
    let sdfg = m
        .compile_with("f", &sig(&[("A", "float64[M, N]"), ("alpha", "float32")]))
        .unwrap();
    assert_eq!(sdfg.container("A").unwrap().shape().len(), 2);
    assert_eq!(sdfg.container("alpha").unwrap().dtype, DType::Float32);
    assert!(
        sdfg.arguments.contains(&"M".to_owned()),
        "{:?}",
        sdfg.arguments
    );
    // A type for an annotated parameter, for no parameter, or one that is
    // no type: errors naming them.
    for (pairs, needle) in [
        (
            sig(&[
                ("A", "float64[N]"),
                ("alpha", "float64"),
                ("B", "float64[N]"),
            ]),
            "annotated and has a type in the signature",
        ),
        (
            sig(&[("A", "float64[N]"), ("alpha", "float64"), ("C", "int32")]),
            "`C`, which is no parameter",
        ),
        (
            sig(&[("A", "float64[N"), ("alpha", "float64")]),
            "the signature's type `float64[N` of `A`",
        ),
        (sig(&[("A", "floaty[N]"), ("alpha", "float64")]), "of `A`"),
    ] {
        let e = m.compile_with("f", &pairs).unwrap_err();
        assert!(
            matches!(&e.kind, ErrorKind::Annotation(m) if m.contains(needle)),
            "{needle}: {e}"
        );
    }
}

#[test]
fn dace_reduce_recognizes_bitwise_and_logical_lambdas() {
    let sdfg = compile(
        r#"
@dc.program
def f(K: dc.int64[N], r: dc.int64[3], t: dc.bool_[2]):
    r[0] = dc.reduce(lambda a, b: a | b, K)
    r[1] = dc.reduce(lambda a, b: b & a, K, identity=15)
    r[2] = dc.reduce(lambda a, b: a ^ b, K)
    t[0] = dc.reduce(lambda a, b: a and b, K)
    t[1] = dc.reduce(lambda a, b: a or b, K - K)
"#,
    );
    let k = [12i64, 14, 6];
    let args = Arguments::default()
        .symbol("N", 3)
        .array("K", ArrayValue::i64(vec![3], k.to_vec()))
        .array("r", ArrayValue::zeros(DType::Int64, vec![3]))
        .array("t", ArrayValue::zeros(DType::Bool, vec![2]));
    let out = run(&sdfg, args);
    let r: Vec<i64> = (0..3).map(|i| out["r"].get(i).unwrap().to_i64()).collect();
    // 0b1100, 0b1110, 0b0110: or 0b1110, and (from 0b1111) 0b0100, xor 0b0100.
    assert_eq!(r, [14, 4, 4]);
    let t: Vec<bool> = (0..2)
        .map(|i| out["t"].get(i).unwrap().to_i64() != 0)
        .collect();
    assert_eq!(t, [true, false]);
}
