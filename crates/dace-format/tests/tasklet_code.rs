//! Tasklet code written as DaCe Python and read back is the code: a
//! property over random well-typed bodies (operators, intrinsics, casts,
//! selects, locals, branches, NaN-propagating min/max, special values).
//!
//! Two spellings are normalizations by design and are not generated: a
//! cast of a literal reads back as a literal of the cast's type, and a
//! cast to an operand's own type is dropped.

use proptest::prelude::*;
use sdfg_dace_format::python::{TaskletConnectors, read_tasklet, write_tasklet};
use sdfg_ir::code::{BinaryOp, Binding, Expr, Intrinsic, Stmt, UnaryOp};
use sdfg_ir::{DType, Literal};
use std::collections::BTreeMap;

fn f64_leaf() -> impl Strategy<Value = Expr> {
    prop_oneof![
        Just(Expr::var("a")),
        Just(Expr::var("b")),
        prop_oneof![
            (-1e6f64..1e6).prop_map(Expr::f64),
            Just(Expr::f64(f64::INFINITY)),
            Just(Expr::f64(f64::NEG_INFINITY)),
            Just(Expr::f64(-0.0)),
        ],
    ]
}

fn i64_leaf() -> impl Strategy<Value = Expr> {
    prop_oneof![
        Just(Expr::var("i")),
        Just(Expr::var("N")),
        (-1000i64..1000).prop_map(Expr::i64),
        Just(Expr::i64(i64::MIN)),
    ]
}

/// Expressions of type `float64` and `int64`, and conditions, to a depth.
fn exprs() -> (
    BoxedStrategy<Expr>,
    BoxedStrategy<Expr>,
    BoxedStrategy<Expr>,
) {
    let float = f64_leaf().boxed();
    let int = i64_leaf().boxed();
    let mut f = float.clone();
    let mut i = int.clone();
    let mut c = (f.clone(), f.clone())
        .prop_map(|(x, y)| Expr::binary(BinaryOp::Lt, x, y))
        .boxed();
    for _ in 0..3 {
        let (pf, pi, pc) = (f.clone(), i.clone(), c.clone());
        let fop = prop_oneof![
            Just(BinaryOp::Add),
            Just(BinaryOp::Sub),
            Just(BinaryOp::Mul),
            Just(BinaryOp::Div),
            Just(BinaryOp::Pow),
            Just(BinaryOp::FloorDiv),
            Just(BinaryOp::Mod),
        ];
        let iop = prop_oneof![
            Just(BinaryOp::Add),
            Just(BinaryOp::Mul),
            Just(BinaryOp::FloorDiv),
            Just(BinaryOp::Mod),
            Just(BinaryOp::BitAnd),
            Just(BinaryOp::Shl),
        ];
        let ffun = prop_oneof![
            Just(Intrinsic::Sqrt),
            Just(Intrinsic::Exp),
            Just(Intrinsic::Abs),
            Just(Intrinsic::Tanh),
            Just(Intrinsic::Floor),
        ];
        let cmp = prop_oneof![
            Just(BinaryOp::Lt),
            Just(BinaryOp::Ge),
            Just(BinaryOp::Eq),
            Just(BinaryOp::Ne)
        ];
        f = prop_oneof![
            pf.clone(),
            (fop, pf.clone(), pf.clone()).prop_map(|(op, x, y)| Expr::binary(op, x, y)),
            pf.clone().prop_map(|x| Expr::unary(UnaryOp::Neg, x)),
            (ffun, pf.clone()).prop_map(|(g, x)| Expr::call(g, vec![x])),
            (pf.clone(), pf.clone()).prop_map(|(x, y)| Expr::call(Intrinsic::Max, vec![x, y])),
            (pf.clone(), pf.clone()).prop_map(|(x, y)| Expr::call(Intrinsic::Min, vec![x, y])),
            (pc.clone(), pf.clone(), pf.clone()).prop_map(|(c, x, y)| Expr::select(c, x, y)),
            pi.clone()
                .prop_filter("a cast of a literal reads as a literal", |x| !matches!(
                    x,
                    Expr::Lit(_)
                ))
                .prop_map(|x| Expr::cast(DType::Float64, x)),
        ]
        .boxed();
        i = prop_oneof![
            pi.clone(),
            (iop, pi.clone(), pi.clone()).prop_map(|(op, x, y)| Expr::binary(op, x, y)),
            pi.clone().prop_map(|x| Expr::unary(UnaryOp::Neg, x)),
            (pi.clone(), pi.clone()).prop_map(|(x, y)| Expr::call(Intrinsic::Min, vec![x, y])),
            pf.clone()
                .prop_filter("a cast of a literal reads as a literal", |x| !matches!(
                    x,
                    Expr::Lit(_)
                ))
                .prop_map(|x| Expr::cast(DType::Int64, x)),
        ]
        .boxed();
        c = prop_oneof![
            pc.clone(),
            (cmp.clone(), pf.clone(), pf.clone()).prop_map(|(op, x, y)| Expr::binary(op, x, y)),
            (cmp, pi.clone(), pi.clone()).prop_map(|(op, x, y)| Expr::binary(op, x, y)),
            (pc.clone(), pc.clone()).prop_map(|(x, y)| Expr::binary(BinaryOp::And, x, y)),
            (pc.clone(), pc.clone()).prop_map(|(x, y)| Expr::binary(BinaryOp::Or, x, y)),
            pc.clone().prop_map(|x| Expr::unary(UnaryOp::Not, x)),
            pf.prop_map(|x| Expr::call(Intrinsic::IsNan, vec![x])),
        ]
        .boxed();
    }
    (f, i, c)
}

fn bodies() -> impl Strategy<Value = Vec<Stmt>> {
    let (f, i, c) = exprs();
    (f.clone(), i, c, f.clone(), f).prop_map(|(x, n, cond, y, z)| {
        vec![
            Stmt::Let {
                name: "t".into(),
                dtype: DType::Float64,
                value: x,
            },
            Stmt::assign("k", n),
            Stmt::If {
                cond,
                then: vec![Stmt::assign(
                    "o",
                    Expr::binary(BinaryOp::Add, Expr::var("t"), y),
                )],
                otherwise: vec![Stmt::assign("o", z)],
            },
        ]
    })
}

fn connectors() -> (TaskletConnectors, BTreeMap<String, Binding>) {
    let mut c = TaskletConnectors::default();
    c.inputs.insert("a".into(), (DType::Float64, 0));
    c.inputs.insert("b".into(), (DType::Float64, 0));
    c.inputs.insert("i".into(), (DType::Int64, 0));
    c.outputs.insert("o".into(), (DType::Float64, 0));
    c.outputs.insert("k".into(), (DType::Int64, 0));
    let mut b = BTreeMap::new();
    for n in ["a", "b"] {
        b.insert(n.to_owned(), Binding::Value(DType::Float64));
    }
    b.insert("i".into(), Binding::Value(DType::Int64));
    b.insert("o".into(), Binding::Output(DType::Float64));
    b.insert("k".into(), Binding::Output(DType::Int64));
    (c, b)
}

/// The IR's equality treats NaN literals as equal, as the round trip needs.
fn same(a: &[Stmt], b: &[Stmt]) -> bool {
    a == b
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn written_tasklet_code_reads_back_equal(body in bodies()) {
        let (conns, bindings) = connectors();
        let text = write_tasklet(&body, bindings).unwrap();
        let (back, pointers) = read_tasklet(&text, &conns)
            .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert!(pointers.is_empty());
        prop_assert!(same(&back, &body), "{text}\n{back:#?}\n!=\n{body:#?}");
    }
}

#[test]
fn a_literal_of_a_narrow_type_and_an_indexed_store_read_back() {
    let mut conns = TaskletConnectors::default();
    conns.inputs.insert("p".into(), (DType::Int8, 2));
    conns.outputs.insert("q".into(), (DType::Int8, 1));
    let body = vec![Stmt::Store {
        conn: "q".into(),
        index: vec![Expr::var("i")],
        value: Expr::binary(
            BinaryOp::Add,
            Expr::load("p", vec![Expr::var("i"), Expr::i64(0)]),
            Expr::Lit(Literal::Int {
                value: -3,
                dtype: DType::Int8,
            }),
        ),
    }];
    let mut b = BTreeMap::new();
    b.insert(
        "p".to_owned(),
        Binding::PointerIn {
            dtype: DType::Int8,
            rank: 2,
        },
    );
    b.insert(
        "q".to_owned(),
        Binding::PointerOut {
            dtype: DType::Int8,
            rank: 1,
        },
    );
    let text = write_tasklet(&body, b).unwrap();
    let (back, pointers) = read_tasklet(&text, &conns).unwrap();
    assert_eq!(back, body, "{text}");
    assert_eq!(pointers.into_iter().collect::<Vec<_>>(), ["p", "q"]);
}

#[test]
fn code_outside_the_subset_is_refused_with_its_line() {
    let (conns, _) = connectors();
    for (code, what) in [
        ("o = a % b\n", "the operator `%`"),
        ("o = a\nfor x in range(3):\n    o = b\n", "a `for` loop"),
        ("o = frobnicate(a)\n", "the function `frobnicate`"),
        ("a = b\n", "an assignment to the input `a`"),
    ] {
        let err = read_tasklet(code, &conns).unwrap_err().to_string();
        assert!(err.contains(what), "{code:?}: {err}");
        assert!(err.contains("line "), "{code:?}: {err}");
    }
    assert!(read_tasklet("o = (", &conns).is_err());
    // Nesting deep enough to overflow a recursive parser is refused first.
    let deep = format!("o = {}a{}\n", "(".repeat(200_000), ")".repeat(200_000));
    let err = read_tasklet(&deep, &conns).unwrap_err().to_string();
    assert!(err.contains("nested more than"), "{err}");
    // As deep as the reader takes still parses (on a test thread's stack).
    let nested = format!("o = {}a{}\n", "(".repeat(250), ")".repeat(250));
    assert!(read_tasklet(&nested, &conns).is_ok());
}

/// `f` on another thread, which must end within `seconds` (a reader that
/// takes exponential time fails the test instead of hanging it).
fn within<T: Send + 'static>(seconds: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || send.send(f()));
    receive
        .recv_timeout(std::time::Duration::from_secs(seconds))
        .expect("the reader did not finish in time")
}

#[test]
fn chains_are_read_in_linear_time_and_bounded_as_the_ir_nests_them() {
    // A chain of subtractions: the reader once read each left operand
    // twice (looking for the smallest int64's spelling), in time
    // exponential in the chain's length.
    let long = within(30, || {
        let (conns, _) = connectors();
        let code = format!("o = a{}\n", " - a".repeat(100));
        read_tasklet(&code, &conns).map(|_| ())
    });
    assert_eq!(long, Ok(()));
    // The smallest int64, as the writer spells it, is still read.
    let (conns, _) = connectors();
    let (body, _) = read_tasklet("k = -9223372036854775807 - 1\n", &conns).unwrap();
    assert!(
        format!("{body:?}").contains("-9223372036854775808"),
        "{body:?}"
    );
    // A chained comparison or boolean operation is one node of Python's
    // tree, and a chain as deep in the IR (`a < b < c` is `a < b and b <
    // c`): counted as deep as the IR nests it.
    for (code, deep) in [
        (format!("o = a{}\n", " < a".repeat(100)), false),
        (format!("o = a{}\n", " < a".repeat(200)), true),
        (format!("o = a{}\n", " and a".repeat(200)), true),
    ] {
        let result = read_tasklet(&code, &conns);
        if deep {
            let err = result.unwrap_err().to_string();
            assert!(err.contains("nested more than 128 levels"), "{err}");
        } else {
            assert!(result.is_ok(), "{result:?}");
        }
    }
    // So is an `elif` chain, whose clauses nest in the IR.
    let mut code = "if a > 0.0:\n    o = a\n".to_owned();
    for _ in 0..200 {
        code += "elif a > 1.0:\n    o = b\n";
    }
    code += "else:\n    o = b\n";
    let err = read_tasklet(&code, &conns).unwrap_err().to_string();
    assert!(err.contains("nested more than 128 levels"), "{err}");
}
