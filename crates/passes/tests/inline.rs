//! Inlining SDFGs nested at host level: the caller computes what it did
//! with the call, in its own names, through every window a connector can
//! be bound to; what cannot be inlined stays nested, with the reason.

mod common;

use sdfg_ir::builder::SdfgBuilder;
use sdfg_ir::code::{BinaryOp, Expr, Stmt};
use sdfg_ir::{
    BlockKind, Connector, DataDesc, Layout, Node, Schedule, Sdfg, SymExpr, VIEW_CONNECTOR,
};
use sdfg_passes::inline_nested::inline_nested_sdfgs;
use sdfg_passes::pipeline::{self, Pass, PipelineOptions};

const F64: sdfg_ir::DType = sdfg_ir::DType::Float64;

fn f64c(name: &str) -> Connector {
    Connector::scalar(name, F64)
}

fn v(name: &str) -> Expr {
    Expr::var(name)
}

/// The pass as [`common::rewritten`] takes it: the labels inlined.
fn inline(sdfg: &mut Sdfg) -> Vec<String> {
    inline_nested_sdfgs(sdfg).inlined
}

/// The nested SDFG nodes left anywhere outside maps' bodies.
fn nested_labels(sdfg: &Sdfg) -> Vec<String> {
    let mut out = Vec::new();
    for b in &sdfg.body.blocks {
        b.walk(&mut |b| {
            if let BlockKind::State(s) = &b.kind {
                out.extend(s.nodes().filter_map(|(_, n)| match n {
                    Node::NestedSdfg(n) => Some(n.label.clone()),
                    _ => None,
                }));
            }
        });
    }
    out
}

#[test]
fn a_call_in_a_loop_becomes_the_callers_code() {
    let sdfg = sdfg_ir::examples::nested_flip().unwrap();
    let (out, lines, _) = common::rewritten(&sdfg, inline);
    assert_eq!(lines, ["flip"]);
    assert!(nested_labels(&out).is_empty());
    // The callee's size `M` is the caller's loop counter `k`, not a new symbol.
    assert!(!out.symbols.contains_key("M"), "{:?}", out.symbols);
}

/// `for i in 0..2: col(c = A[1:N, i], e = x[i], M = N - 1)`, where `col`
/// is `for i in 0..M: x[i] = c[i] * e[0] + i` then `c[j] = x[j]` over a
/// map: a window that drops a dimension and starts at 1, a window of one
/// element, a symbol mapped to an expression, and a loop variable and a
/// transient named as the caller's.
fn column_call() -> Sdfg {
    let mut inner = SdfgBuilder::new("col");
    inner
        .symbol("M")
        .array("c", F64, "M")
        .array("e", F64, "1")
        .transient("x", F64, "M");
    inner.for_loop("rows", "i", "0", "M", 1, |b| {
        b.state("mul", |s| {
            let (c, e, x) = (s.access("c"), s.access("e"), s.access("x"));
            let t = s.tasklet(
                "mul",
                vec![f64c("a"), f64c("b")],
                vec![f64c("o")],
                vec![Stmt::assign(
                    "o",
                    Expr::binary(
                        BinaryOp::Add,
                        Expr::binary(BinaryOp::Mul, v("a"), v("b")),
                        Expr::cast(F64, v("i")),
                    ),
                )],
            );
            s.edge(c, None, t, Some("a"), "c[i]");
            s.edge(e, None, t, Some("b"), "e[0]");
            s.edge(t, Some("o"), x, None, "x[i]");
        });
    });
    inner.state("back", |s| {
        let (x, c) = (s.access("x"), s.access("c"));
        let (entry, exit) = s.map("back", "j = 0:M", Schedule::Default);
        let t = s.tasklet(
            "copy",
            vec![f64c("a")],
            vec![f64c("o")],
            vec![Stmt::assign("o", v("a"))],
        );
        s.path(&[x, entry, t], None, Some("a"), "x[j]");
        s.path(&[t, exit, c], Some("o"), None, "c[j]");
    });
    let inner = inner.build().unwrap();
    let mut b = SdfgBuilder::new("columns");
    b.symbol("N").array("A", F64, "N, N").array("x", F64, "N");
    b.for_loop("cols", "i", "0", "2", 1, move |b| {
        b.state("call", move |s| {
            let (a, x, a_out) = (s.access("A"), s.access("x"), s.access("A"));
            let n = s.nested("col", inner, &["c", "e"], &["c"], &[("M", "N - 1")]);
            s.edge(a, None, n, Some("c"), "A[1:N, i]");
            s.edge(x, None, n, Some("e"), "x[i]");
            s.edge(n, Some("c"), a_out, None, "A[1:N, i]");
        });
    });
    b.build().unwrap()
}

#[test]
fn windows_symbols_and_clashing_names_are_the_callers() {
    let sdfg = column_call();
    sdfg_ir::validate(&sdfg).unwrap();
    let (out, lines, _) = common::rewritten(&sdfg, inline);
    assert_eq!(lines, ["col"]);
    assert!(nested_labels(&out).is_empty());
    // `M` is bound on entry; the callee's `i` and `x` got fresh names.
    assert!(out.symbols.contains_key("M"));
    assert!(out.symbols.contains_key("i_1"), "{:?}", out.symbols);
    assert!(out.containers.contains_key("col_x"), "{:?}", out.containers);
    // `M`, mapped to `N - 1` and never assigned inside, is that expression
    // wherever the callee's expressions read it (as DaCe's InlineSDFG
    // substitutes the mapping): the transient's shape, its maps' ranges.
    // A stride mapped to the caller's array's stride is that stride, which
    // the emitter compares with the array's.
    assert_eq!(
        out.containers["col_x"].shape(),
        [SymExpr::parse("N - 1").unwrap()]
    );
}

#[test]
fn the_pipeline_inlines_before_it_offloads() {
    let sdfg = column_call();
    let (device, report) = pipeline::run(
        &sdfg,
        Some(&sdfg_sim::SimAccelerator),
        &PipelineOptions::default(),
        &Pass::TO_OFFLOAD,
    )
    .unwrap();
    assert_eq!(report.inlined.inlined, ["col"]);
    assert!(report.to_string().contains("inlined: nested SDFG `col`"));
    let device = device.into_inner();
    assert!(nested_labels(&device).is_empty());
    let a = common::args(&sdfg);
    common::same(&common::run(&sdfg, &a), &common::run(&device, &a));
}

/// `y = col(A[0:N, 1])` through a view of the column (strides `N`), or
/// through a view that reshapes the whole of `A` (which stays nested).
fn view_call(reshape: bool) -> Sdfg {
    let mut inner = SdfgBuilder::new("twice");
    inner.symbol("M").array("c", F64, "M").array("o", F64, "M");
    inner.state("twice", |s| {
        let (c, o) = (s.access("c"), s.access("o"));
        let (entry, exit) = s.map("twice", "j = 0:M", Schedule::Default);
        let t = s.tasklet(
            "twice",
            vec![f64c("a")],
            vec![f64c("r")],
            vec![Stmt::assign(
                "r",
                Expr::binary(BinaryOp::Add, v("a"), v("a")),
            )],
        );
        s.path(&[c, entry, t], None, Some("a"), "c[j]");
        s.path(&[t, exit, o], Some("r"), None, "o[j]");
    });
    let inner = inner.build().unwrap();
    let mut b = SdfgBuilder::new("viewed");
    b.symbol("N")
        .array("A", F64, "N, N")
        .array("y", F64, "N * N");
    let (shape, strides, window, size) = if reshape {
        ("N * N", "1", "A[0:N, 0:N]", "N * N")
    } else {
        ("N", "N", "A[0:N, 1]", "N")
    };
    let layout = Layout {
        shape: vec![SymExpr::parse(shape).unwrap()],
        strides: vec![SymExpr::parse(strides).unwrap()],
        offset: SymExpr::int(0),
        total_size: SymExpr::parse(size).unwrap(),
    };
    b.container("col", DataDesc::view(F64, layout));
    let out = if reshape { "y[0:N * N]" } else { "y[0:N]" };
    let view = window.to_owned();
    b.state("call", move |s| {
        let (a, col, y) = (s.access("A"), s.access("col"), s.access("y"));
        s.edge(a, None, col, Some(VIEW_CONNECTOR), view.as_str());
        let inner_size = if reshape { "N * N" } else { "N" };
        let n = s.nested("twice", inner, &["c"], &["o"], &[("M", inner_size)]);
        let full = format!("col[0:{inner_size}]");
        s.edge(col, None, n, Some("c"), full.as_str());
        s.edge(n, Some("o"), y, None, out);
    });
    b.build().unwrap()
}

#[test]
fn a_connector_bound_through_a_view_is_the_viewed_window() {
    let sdfg = view_call(false);
    sdfg_ir::validate(&sdfg).unwrap();
    let (out, lines, _) = common::rewritten(&sdfg, inline);
    assert_eq!(lines, ["twice"]);
    assert!(nested_labels(&out).is_empty());
}

#[test]
fn a_view_that_reshapes_keeps_the_call_nested_and_says_why() {
    let sdfg = view_call(true);
    sdfg_ir::validate(&sdfg).unwrap();
    let mut out = sdfg.clone();
    let report = inline_nested_sdfgs(&mut out);
    assert!(report.inlined.is_empty());
    assert_eq!(out, sdfg);
    assert_eq!(report.kept.len(), 1);
    assert!(
        report.kept[0].starts_with("`twice`: its connector `c` is bound to the view `col`"),
        "{:?}",
        report.kept
    );
}

#[test]
fn a_callee_returning_early_stays_nested() {
    let mut inner = SdfgBuilder::new("early");
    inner.symbol("M").array("o", F64, "M");
    inner.if_else(
        "done",
        "M > 3",
        |b| {
            b.return_("leave");
        },
        None,
    );
    inner.state("fill", |s| {
        let o = s.access("o");
        s.mapped_tasklet(
            "fill",
            "j = 0:M",
            Schedule::Default,
            vec![],
            vec![Stmt::assign("r", Expr::f64(1.0))],
            vec![(f64c("r"), o, "o[j]")],
        );
    });
    let inner = inner.build().unwrap();
    let mut b = SdfgBuilder::new("caller");
    b.symbol("N").array("y", F64, "N");
    b.state("call", move |s| {
        let y = s.access("y");
        let n = s.nested("early", inner, &[], &["o"], &[("M", "N")]);
        s.edge(n, Some("o"), y, None, "y[0:N]");
    });
    let sdfg = b.build().unwrap();
    sdfg_ir::validate(&sdfg).unwrap();
    let mut out = sdfg.clone();
    let report = inline_nested_sdfgs(&mut out);
    assert_eq!(out, sdfg);
    assert_eq!(report.kept, ["`early`: it returns before its end"]);
}
