//! Tests of the data model's building blocks: memlet text, literals and
//! dtypes, layouts, memlet propagation, the builder, the tasklet type checker
//! and scope trees.

use proptest::prelude::*;
use sdfg_ir::builder::{SdfgBuilder, StateBuilder};
use sdfg_ir::code::{BinaryOp, Binding, Expr, Intrinsic, Stmt, TypeChecker, TypeError};
use sdfg_ir::propagate::{propagate_memlet, propagate_union};
use sdfg_ir::{
    Connector, DType, DataDesc, Layout, Literal, Map, Memlet, Node, Range, Schedule, Subset,
    SymExpr, Wcr,
};
use std::collections::BTreeMap;

fn e(text: &str) -> SymExpr {
    SymExpr::parse(text).unwrap()
}

fn subset(text: &str) -> Subset {
    Subset::parse(text).unwrap()
}

fn map(params: &[(&str, &str)]) -> Map {
    Map {
        label: "m".to_owned(),
        params: params.iter().map(|(p, _)| (*p).to_owned()).collect(),
        ranges: params.iter().map(|(_, r)| r.parse().unwrap()).collect(),
        schedule: Schedule::Default,
    }
}

// -- Memlet text form ---------------------------------------------------------

#[test]
fn ranges_are_inclusive_inside_and_python_slices_outside() {
    let r: Range = "0:N".parse().unwrap();
    assert_eq!(r.begin, e("0"));
    assert_eq!(r.end, e("N - 1"));
    assert_eq!(r.to_string(), "0:N");
    let idx: Range = "i + 1".parse().unwrap();
    assert!(idx.is_index());
    assert_eq!(idx.to_string(), "i + 1");
    let rev: Range = "N - 1:-1:-1".parse().unwrap();
    assert_eq!(rev.end, e("0"), "a reversed slice ends at index 0");
    assert_eq!(rev.to_string(), "N - 1:-1:-1");
    assert_eq!(rev.num_elements(), e("N"));
    let strided: Range = "0:N:2".parse().unwrap();
    assert_eq!(strided.num_elements(), e("(N - 1) // 2 + 1"));
}

#[test]
fn empty_slices_have_no_elements() {
    assert_eq!(subset("i, 0:0").num_elements(), e("0"));
    assert_eq!(subset("k:k").num_elements(), e("0"));
}

#[test]
fn subset_text_with_nested_commas_and_colons() {
    let s = subset("min(i, N - 1), A_row[i]:A_row[i + 1], 0:N:2");
    assert_eq!(s.rank(), 3);
    // Arguments of `min` print in canonical order.
    assert_eq!(s.to_string(), "min(N - 1, i), A_row[i]:A_row[i + 1], 0:N:2");
}

#[test]
fn malformed_subsets_report_the_offset() {
    let err = Subset::parse("i, 0:N +").unwrap_err();
    assert!(
        err.offset >= 3,
        "offset {} should point into the second range",
        err.offset
    );
    assert!(Subset::parse("0:1:2:3").is_err());
}

prop_compose! {
    fn small_expr()(c in -5i64..5, k in -3i64..3, sym in prop::sample::select(vec!["i", "N", "M"])) -> SymExpr {
        SymExpr::symbol(sym) * k + c
    }
}

prop_compose! {
    fn any_range()(b in small_expr(), e in small_expr(), step in prop::sample::select(vec![1i64, 2, 3, -1, -2])) -> Range {
        Range { begin: b, end: e, step: SymExpr::int(step) }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn subset_text_round_trips(ranges in prop::collection::vec(any_range(), 0..4)) {
        let s = Subset::new(ranges);
        let back = Subset::parse(&s.to_string()).unwrap();
        prop_assert_eq!(back, s);
    }
}

// -- Literals, dtypes and layouts ---------------------------------------------

#[test]
fn non_finite_literals_survive_json() {
    for value in [f64::INFINITY, f64::NEG_INFINITY, 1.5e-300, -0.0] {
        let lit = Literal::f64(value);
        let back: Literal = serde_json::from_str(&serde_json::to_string(&lit).unwrap()).unwrap();
        assert_eq!(back, lit);
    }
    let nan: Literal =
        serde_json::from_str(&serde_json::to_string(&Literal::f64(f64::NAN)).unwrap()).unwrap();
    assert!(matches!(nan, Literal::Float { value, .. } if value.is_nan()));
    // The same constant: an SDFG holding `np.nan` equals its round trip.
    assert_eq!(nan, Literal::f64(f64::NAN));
    assert_ne!(nan, Literal::f64(0.0));
    assert_ne!(Literal::f64(1.0), Literal::i64(1));
    assert!(
        serde_json::from_str::<Literal>(r#"{"float": {"value": "lots", "dtype": "float64"}}"#)
            .is_err()
    );
}

#[test]
fn dtypes_use_numpy_names_and_sizes() {
    for d in DType::ALL {
        assert_eq!(DType::from_name(d.name()), Some(d));
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            format!("\"{}\"", d.name())
        );
    }
    assert_eq!(DType::Complex128.size_bytes(), 16);
    assert_eq!(DType::Complex64.real_type(), DType::Float32);
    assert!(DType::UInt16.is_unsigned_integer() && !DType::UInt16.is_signed_integer());
}

#[test]
fn contiguous_layout_is_row_major() {
    let l = Layout::contiguous(vec![e("N"), e("M + 1"), e("4")]);
    assert_eq!(l.strides, vec![e("4*M + 4"), e("4"), e("1")]);
    assert_eq!(l.total_size, e("4*N*M + 4*N"));
    assert!(l.is_contiguous());
    let d = DataDesc::array(DType::Float32, vec![e("N")]);
    assert_eq!(d.total_bytes(), Some(e("4*N")));
    assert_eq!(DataDesc::scalar(DType::Int8).shape(), vec![e("1")]);
}

// -- Propagation ----------------------------------------------------------------

#[test]
fn stencil_accesses_propagate_to_shifted_slices() {
    let m = map(&[("i", "1:N - 1")]);
    let shape = [e("N")];
    let left = propagate_memlet(&Memlet::new("A", subset("i - 1")), &m, &shape);
    assert_eq!(left.subset, subset("0:N - 2"));
    assert_eq!(left.volume, e("N - 2"));
    assert!(!left.dynamic);
    let right = propagate_memlet(&Memlet::new("A", subset("i + 1")), &m, &shape);
    assert_eq!(right.subset, subset("2:N"));
}

#[test]
fn reversed_and_two_dimensional_accesses_propagate() {
    let m = map(&[("i", "0:M"), ("j", "0:K")]);
    let shape = [e("M"), e("K + 1")];
    let p = propagate_memlet(&Memlet::new("A", subset("M - 1 - i, j:j + 2")), &m, &shape);
    assert_eq!(p.subset, subset("0:M, 0:K + 1"));
    assert_eq!(p.volume, e("2*M*K"));
}

#[test]
fn strided_maps_keep_their_stride_and_loop_invariant_ranges_stay() {
    let m = map(&[("i", "0:N:2")]);
    let p = propagate_memlet(&Memlet::new("A", subset("i, 0:K")), &m, &[e("N"), e("K")]);
    assert_eq!(p.subset, subset("0:N:2, 0:K"));
}

#[test]
fn non_affine_accesses_fall_back_to_the_whole_dimension() {
    let m = map(&[("i", "0:N")]);
    let p = propagate_memlet(&Memlet::new("A", subset("i // 2")), &m, &[e("N")]);
    assert_eq!(p.subset, subset("0:N"));
    assert!(p.dynamic, "an over-approximation is marked dynamic");
}

#[test]
fn union_of_several_inner_memlets_is_their_bounding_box() {
    let m = map(&[("i", "1:N - 1")]);
    let a = Memlet::new("A", subset("i - 1"));
    let b = Memlet::new("A", subset("i + 1"));
    let u = propagate_union(&[&a, &b], &m, &[e("N")]).unwrap();
    assert_eq!(u.subset, subset("0:N"));
    assert!(propagate_union(&[], &m, &[e("N")]).is_none());
    let other = Memlet::new("B", subset("i"));
    assert!(propagate_union(&[&a, &other], &m, &[e("N")]).is_none());
}

#[test]
fn boxes_the_points_do_not_fill_are_dynamic() {
    // A diagonal, every other element, a sum of parameters: the box of the
    // dimensions taken one by one holds elements no point touches.
    let m = map(&[("i", "0:N"), ("j", "0:N")]);
    let shape = [e("N"), e("N")];
    for inner in ["j, j", "2*i, j", "i + j, 0", "i, i"] {
        let p = propagate_memlet(&Memlet::new("A", subset(inner)), &m, &shape);
        assert!(
            p.dynamic,
            "`A[{inner}]` propagated to {} must be dynamic",
            p.subset
        );
    }
    for inner in ["i, j", "j, i", "i + 1, j - 1", "0, j", "N - 1 - i, j"] {
        let p = propagate_memlet(&Memlet::new("A", subset(inner)), &m, &shape);
        assert!(!p.dynamic, "`A[{inner}]` fills {}", p.subset);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Propagation is sound and tight: under concrete sizes, every index an
    /// iteration touches lies inside the propagated range, and both of its
    /// ends are touched by some iteration.
    #[test]
    fn propagation_is_sound_and_tight(
        coeff in -2i64..=2, offset in -3i64..=3, width in 0i64..=2,
        begin in 0i64..4, len in 1i64..6, step in prop::sample::select(vec![1i64, 2, 3]),
        n in 8i64..12,
    ) {
        let stop = begin + len;
        let m = map(&[("i", &format!("{begin}:{stop}:{step}"))]);
        let lo = SymExpr::symbol("i") * coeff + offset;
        let inner = Memlet::new("A", Subset::new(vec![Range::inclusive(lo.clone(), &lo + width)]));
        let p = propagate_memlet(&inner, &m, &[SymExpr::int(n)]);
        let env: BTreeMap<String, i64> = BTreeMap::new();
        let r = &p.subset.ranges[0];
        let (pb, end, s) = (r.begin.eval(&env).unwrap(), r.end.eval(&env).unwrap(), r.step.eval(&env).unwrap());
        // The highest index a strided range reaches is its last element, not its end bound.
        let pe = pb + (end - pb) / s * s;
        let (mut seen_lo, mut seen_hi) = (i64::MAX, i64::MIN);
        let mut i = begin;
        while i < stop {
            let a = coeff * i + offset;
            prop_assert!(pb <= a && a + width <= pe, "iteration {} touches {}..={} outside {}..={}", i, a, a + width, pb, pe);
            seen_lo = seen_lo.min(a);
            seen_hi = seen_hi.max(a + width);
            i += step;
        }
        prop_assert_eq!((seen_lo, seen_hi), (pb, pe));
    }

    /// A memlet propagated as not dynamic is touched whole: over a 2-D map,
    /// every element of the propagated box is some point's (the offload
    /// pass skips copying in a container such a write covers).
    #[test]
    fn exact_propagation_fills_its_box(
        dims in prop::collection::vec((0usize..7, 5i64..=7), 2),
        n in 2i64..5, m in 2i64..5,
    ) {
        let forms = ["i", "j", "2*i", "i + j", "3", "-i", "-j"];
        let text: Vec<String> = dims.iter().map(|(f, c)| format!("{} + {c}", forms[*f])).collect();
        let mp = map(&[("i", &format!("0:{n}")), ("j", &format!("0:{m}"))]);
        let inner = Memlet::new("A", subset(&text.join(", ")));
        let p = propagate_memlet(&inner, &mp, &[SymExpr::int(20), SymExpr::int(20)]);
        if !p.dynamic {
            let env: BTreeMap<String, i64> = BTreeMap::new();
            let mut touched = std::collections::BTreeSet::new();
            for i in 0..n {
                for j in 0..m {
                    let env: BTreeMap<String, i64> = [("i".to_owned(), i), ("j".to_owned(), j)].into();
                    let at: Vec<i64> = inner.subset.ranges.iter().map(|r| r.begin.eval(&env).unwrap()).collect();
                    touched.insert(at);
                }
            }
            let r: Vec<(i64, i64, i64)> = p.subset.ranges.iter().map(|r| (r.begin.eval(&env).unwrap(), r.end.eval(&env).unwrap(), r.step.eval(&env).unwrap())).collect();
            let mut a = r[0].0;
            while a <= r[0].1 {
                let mut b = r[1].0;
                while b <= r[1].1 {
                    prop_assert!(touched.contains(&vec![a, b]), "A[{}] exact as {} but [{a}, {b}] untouched", text.join(", "), p.subset);
                    b += r[1].2;
                }
                a += r[0].2;
            }
        }
    }
}

// -- Builder --------------------------------------------------------------------

#[test]
fn memlet_paths_through_nested_maps_get_connectors_and_propagated_memlets() {
    let mut b = SdfgBuilder::new("nested_maps");
    b.symbol("N")
        .symbol("M")
        .array("A", DType::Float64, "N, M")
        .array("B", DType::Float64, "N, M");
    b.state("s", |s| {
        let a = s.access("A");
        let out = s.access("B");
        let (oe, ox) = s.map("rows", "i = 0:N", Schedule::Default);
        let (ie, ix) = s.map("cols", "j = 0:M", Schedule::Default);
        let t = s.tasklet(
            "copy",
            vec![Connector::scalar("x", DType::Float64)],
            vec![Connector::scalar("y", DType::Float64)],
            vec![Stmt::assign("y", Expr::var("x"))],
        );
        let read = s.path(&[a, oe, ie, t], None, Some("x"), "A[i, j]");
        let write = s.path(&[t, ix, ox, out], Some("y"), None, "B[i, j]");
        assert_eq!(read.len(), 3);
        assert_eq!(write.len(), 3);
    });
    let sdfg = b.build().unwrap();
    sdfg_ir::validate(&sdfg).unwrap();
    let (_, state) = sdfg.states()[0];
    let memlets: Vec<(String, String)> = state
        .edges()
        .filter_map(|(_, _, _, e)| {
            e.memlet
                .as_ref()
                .map(|m| (m.subset.to_string(), m.volume.to_string()))
        })
        .collect();
    assert_eq!(
        memlets,
        vec![
            ("0:N, 0:M".to_owned(), "M*N".to_owned()),
            ("i, 0:M".to_owned(), "M".to_owned()),
            ("i, j".to_owned(), "1".to_owned()),
            ("i, j".to_owned(), "1".to_owned()),
            ("i, 0:M".to_owned(), "M".to_owned()),
            ("0:N, 0:M".to_owned(), "M*N".to_owned()),
        ]
    );
    let entry_conns: Vec<Vec<&str>> = state
        .nodes()
        .filter_map(|(_, n)| match n {
            Node::MapEntry(m) => Some(
                m.in_connectors
                    .iter()
                    .chain(&m.out_connectors)
                    .map(String::as_str)
                    .collect(),
            ),
            _ => None,
        })
        .collect();
    assert_eq!(
        entry_conns,
        vec![vec!["IN_A", "OUT_A"], vec!["IN_A", "OUT_A"]]
    );
}

#[test]
fn mapped_tasklets_wire_every_connector_and_order_a_tasklet_without_inputs() {
    let f64c = |n: &str| Connector::scalar(n, DType::Float64);
    let mut b = SdfgBuilder::new("mapped");
    b.symbol("N")
        .array("x", DType::Float64, "N")
        .array("y", DType::Float64, "N")
        .array("s", DType::Float64, "1");
    b.state("sum", |s| {
        let (x, y) = (s.access("x"), s.access("y"));
        s.mapped_tasklet(
            "double",
            "i = 0:N",
            Schedule::Default,
            vec![(x, f64c("a"), "x[i]")],
            vec![Stmt::assign("b", Expr::var("a") * Expr::f64(2.0))],
            vec![(f64c("b"), y, "y[i]")],
        );
        let (y, total) = (s.access("y"), s.access("s"));
        s.mapped_tasklet(
            "total",
            "i = 0:N",
            Schedule::Default,
            vec![(y, f64c("a"), "y[i]")],
            vec![Stmt::assign("b", Expr::var("a"))],
            vec![(f64c("b"), total, ("s[0]", Wcr::Sum))],
        );
    });
    b.state("fill", |s| {
        let y = s.access("y");
        let (entry, t, _) = s.mapped_tasklet(
            "fill",
            "i = 0:N",
            Schedule::Default,
            vec![],
            vec![Stmt::assign("b", Expr::f64(1.0))],
            vec![(f64c("b"), y, "y[i]")],
        );
        // No inputs: an empty memlet keeps the tasklet inside the scope.
        let ordered = s
            .state_mut()
            .edges()
            .any(|(_, src, dst, e)| (src, dst) == (entry, t) && e.memlet.is_none());
        assert!(ordered);
    });
    let sdfg = b.build().unwrap();
    sdfg_ir::validate(&sdfg).unwrap();
    let (_, sum) = sdfg.states()[0];
    let outer: Vec<(String, String)> = sum
        .edges()
        .filter_map(|(_, src, _, e)| {
            let m = e.memlet.as_ref()?;
            matches!(
                sum.node(src),
                Some(Node::Access(_)) | Some(Node::MapExit(_))
            )
            .then(|| (m.to_string(), m.volume.to_string()))
        })
        .collect();
    assert_eq!(
        outer,
        vec![
            ("x[0:N]".to_owned(), "N".to_owned()),
            ("y[0:N]".to_owned(), "N".to_owned()),
            ("y[0:N]".to_owned(), "N".to_owned()),
            ("s[0] (wcr: sum)".to_owned(), "N".to_owned()),
        ]
    );
}

#[test]
fn builder_collects_every_malformed_text_instead_of_panicking() {
    let mut b = SdfgBuilder::new("broken");
    b.symbol("N").array("A", DType::Float64, "N +");
    b.for_loop("l", "i", "0", "N *", 1, |b| {
        b.state("s", |s| {
            let a = s.access("A");
            let (entry, _) = s.map("m", "i 0:N, j = 0:", Schedule::Default);
            s.edge(a, None, entry, Some("IN_A"), "A[i");
            s.path(&[a], None, None, "A[0]");
        });
    });
    b.assign("i", "i +");
    let errors = b.build().unwrap_err().0;
    let contexts: Vec<&str> = errors.iter().map(|e| e.context).collect();
    assert_eq!(
        contexts,
        vec![
            "shape",
            "expression",
            "map parameter",
            "map range",
            "memlet",
            "memlet path",
            "expression"
        ]
    );
    assert_eq!(errors[0].text, "N +");
}

#[test]
fn bare_names_in_memlets_mean_the_whole_container() {
    let mut containers = BTreeMap::new();
    containers.insert(
        "A".to_owned(),
        DataDesc::array(DType::Int32, vec![e("N"), e("3")]),
    );
    let mut errors = Vec::new();
    let mut s = StateBuilder::standalone(&containers, &mut errors);
    let a = s.access("A");
    let b = s.access("A");
    let edge = s.edge(a, None, b, None, "A").unwrap();
    let state = s.finish();
    let m = state.graph[edge].memlet.clone().unwrap();
    assert_eq!(m.subset, subset("0:N, 0:3"));
    let mut s = StateBuilder::standalone(&containers, &mut errors);
    let x = s.access("x");
    assert!(s.edge(x, None, x, None, "unknown").is_none());
    assert_eq!(errors.len(), 1);
}

#[test]
fn wcr_tuples_and_memlet_display() {
    let m = Memlet::new("y", subset("i"))
        .with_wcr(Wcr::Sum)
        .into_dynamic();
    assert_eq!(m.to_string(), "y[i] (wcr: sum) (dynamic)");
    let copy = Memlet::new("x", subset("0:N")).with_other_subset(subset("1:N + 1"));
    assert_eq!(copy.to_string(), "x[0:N] -> [1:N + 1]");
}

// -- Tasklet code ----------------------------------------------------------------

fn check(bindings: &[(&str, Binding)], body: &[Stmt]) -> Result<(), TypeError> {
    let bindings = bindings
        .iter()
        .map(|(n, b)| ((*n).to_owned(), *b))
        .collect();
    let is_symbol = |s: &str| s == "N";
    TypeChecker::new(bindings, &is_symbol).check_body(body)
}

#[test]
fn type_checker_accepts_well_typed_code() {
    let f = DType::Float64;
    let body = vec![
        Stmt::Let {
            name: "t".into(),
            dtype: f,
            value: Expr::var("a") * Expr::f64(2.0),
        },
        Stmt::If {
            cond: Expr::binary(BinaryOp::Lt, Expr::var("t"), Expr::cast(f, Expr::var("N"))),
            then: vec![Stmt::assign(
                "o",
                Expr::call(Intrinsic::Sqrt, vec![Expr::var("t")]),
            )],
            otherwise: vec![Stmt::assign(
                "o",
                Expr::load("p", vec![Expr::var("N") - Expr::i64(1)]),
            )],
        },
    ];
    check(
        &[
            ("a", Binding::Value(f)),
            ("p", Binding::PointerIn { dtype: f, rank: 1 }),
            ("o", Binding::Output(f)),
        ],
        &body,
    )
    .unwrap();
}

#[test]
fn type_checker_rejects_mixed_types_unknown_names_and_misuse() {
    let f = DType::Float64;
    let i = DType::Int32;
    let mixed = check(
        &[("a", Binding::Value(f)), ("o", Binding::Output(f))],
        &[Stmt::assign("o", Expr::var("a") + Expr::i64(1))],
    );
    assert!(
        matches!(
            mixed,
            Err(TypeError::Mismatch {
                found: DType::Int64,
                ..
            })
        ),
        "{mixed:?}"
    );
    let unknown = check(
        &[("o", Binding::Output(f))],
        &[Stmt::assign("o", Expr::var("zz"))],
    );
    assert_eq!(unknown, Err(TypeError::UnknownName { name: "zz".into() }));
    let read_output = check(
        &[("o", Binding::Output(f))],
        &[Stmt::assign("o", Expr::var("o"))],
    );
    assert!(matches!(read_output, Err(TypeError::Misuse { .. })));
    let wrong_rank = check(
        &[
            ("p", Binding::PointerIn { dtype: f, rank: 2 }),
            ("o", Binding::Output(f)),
        ],
        &[Stmt::assign("o", Expr::load("p", vec![Expr::i64(0)]))],
    );
    assert!(matches!(
        wrong_rank,
        Err(TypeError::IndexCount {
            expected: 2,
            found: 1,
            ..
        })
    ));
    let float_shift = check(
        &[("a", Binding::Value(f)), ("o", Binding::Output(f))],
        &[Stmt::assign(
            "o",
            Expr::binary(BinaryOp::Shl, Expr::var("a"), Expr::var("a")),
        )],
    );
    assert!(matches!(float_shift, Err(TypeError::Mismatch { .. })));
    let redeclared = check(
        &[("a", Binding::Value(i))],
        &[Stmt::Let {
            name: "a".into(),
            dtype: i,
            value: Expr::var("a"),
        }],
    );
    assert_eq!(redeclared, Err(TypeError::Redeclared { name: "a".into() }));
    let arity = check(
        &[("o", Binding::Output(f))],
        &[Stmt::assign(
            "o",
            Expr::call(Intrinsic::Atan2, vec![Expr::f64(1.0)]),
        )],
    );
    assert!(matches!(
        arity,
        Err(TypeError::Arity {
            expected: 2,
            found: 1,
            ..
        })
    ));
}

#[test]
fn complex_values_have_real_magnitudes_and_cannot_be_cast_to_reals() {
    let c = DType::Complex128;
    let f = DType::Float64;
    check(
        &[("z", Binding::Value(c)), ("o", Binding::Output(f))],
        &[Stmt::assign(
            "o",
            Expr::call(
                Intrinsic::Abs,
                vec![Expr::call(Intrinsic::Exp, vec![Expr::var("z")])],
            ),
        )],
    )
    .unwrap();
    let cast = check(
        &[("z", Binding::Value(c)), ("o", Binding::Output(f))],
        &[Stmt::assign("o", Expr::cast(f, Expr::var("z")))],
    );
    assert!(matches!(
        cast,
        Err(TypeError::Mismatch {
            found: DType::Complex128,
            ..
        })
    ));
    let bad_literal = check(
        &[("o", Binding::Output(f))],
        &[Stmt::assign(
            "o",
            Expr::Lit(Literal::Float {
                value: 1.0,
                dtype: DType::Int32,
            }),
        )],
    );
    assert!(matches!(bad_literal, Err(TypeError::BadLiteral { .. })));
}

// -- Scope trees ----------------------------------------------------------------

#[test]
fn scope_tree_knows_ancestors_and_children() {
    let sdfg = sdfg_ir::examples::offloaded_scale().unwrap();
    let state = sdfg
        .states()
        .into_iter()
        .find(|(l, _)| *l == "kernel")
        .map(|(_, s)| s.clone())
        .unwrap();
    let tree = state.scope_tree().unwrap();
    let find = |label: &str| {
        state
            .nodes()
            .find(|(_, n)| n.label() == label && n.is_code())
            .unwrap()
            .0
    };
    let kernel = state
        .nodes()
        .find(|(_, n)| matches!(n, Node::MapEntry(m) if m.map.label == "scale"))
        .unwrap()
        .0;
    let block = state
        .nodes()
        .find(|(_, n)| matches!(n, Node::MapEntry(m) if m.map.label == "threads"))
        .unwrap()
        .0;
    assert_eq!(tree.ancestors(find("store")), vec![block, kernel]);
    assert_eq!(tree.parent(kernel), None);
    assert!(tree.children(Some(kernel)).contains(&block));
    assert_eq!(
        state.exit_of(kernel).map(|x| tree.parent(x)),
        Some(Some(kernel))
    );
}

#[test]
fn state_propagation_recomputes_outer_memlets_as_unions() {
    let sdfg = sdfg_ir::examples::jacobi_1d().unwrap();
    let (_, built) = sdfg.states()[0];
    let mut state = built.clone();
    // Clobber every memlet outside the scope, then recompute them.
    let outer: Vec<_> = state
        .edges()
        .filter(|(_, s, d, _)| {
            matches!(state.node(*s), Some(Node::Access(_)))
                || matches!(state.node(*d), Some(Node::Access(_)))
        })
        .map(|(id, ..)| id)
        .collect();
    for id in &outer {
        state.graph[*id].memlet.as_mut().unwrap().subset = subset("0");
    }
    sdfg_ir::propagate::propagate_state(&mut state, &sdfg.containers);
    assert_eq!(
        &state, built,
        "propagation restores what the builder computed"
    );

    // Two inner reads through one connector: the outer memlet is their union.
    let mut b = SdfgBuilder::new("union");
    b.symbol("N")
        .array("A", DType::Float64, "N")
        .array("B", DType::Float64, "N");
    b.state("s", |s| {
        let a = s.access("A");
        let out = s.access("B");
        let (entry, exit) = s.map("m", "i = 1:N - 1", Schedule::Default);
        let t = s.tasklet(
            "avg",
            vec![
                Connector::scalar("l", DType::Float64),
                Connector::scalar("r", DType::Float64),
            ],
            vec![Connector::scalar("o", DType::Float64)],
            vec![Stmt::assign("o", Expr::var("l") + Expr::var("r"))],
        );
        let e = s.path(&[a, entry, t], None, Some("l"), "A[i - 1]");
        let st = s.state_mut();
        // Route the second read through the first read's connector pair.
        let conn = st.graph[e[1]].src_conn.clone();
        st.add_edge(
            entry,
            conn.as_deref(),
            t,
            Some("r"),
            Memlet::new("A", subset("i + 1")),
        );
        s.path(&[t, exit, out], Some("o"), None, "B[i]");
    });
    let mut sdfg = b.build().unwrap();
    let containers = sdfg.containers.clone();
    let sdfg_ir::BlockKind::State(state) = &mut sdfg.body.blocks[0].kind else {
        unreachable!()
    };
    sdfg_ir::propagate::propagate_state(state, &containers);
    let into_map = state
        .edges()
        .find(|(_, s, _, _)| matches!(state.node(*s), Some(Node::Access(a)) if a.data == "A"))
        .and_then(|(.., e)| e.memlet.clone())
        .unwrap();
    assert_eq!(into_map.subset, subset("0:N"));
    sdfg_ir::validate(&sdfg).unwrap();
}

#[test]
fn every_region_is_visited_once_in_program_order() {
    let mut sdfg = sdfg_ir::examples::converge().unwrap();
    let mut firsts = Vec::new();
    sdfg.body.for_each_region_mut(&mut |r| {
        firsts.push(
            r.blocks
                .first()
                .map(|b| b.label.clone())
                .unwrap_or_default(),
        );
    });
    // The root, the loop body, the `limit` branch, both arms of `parity`,
    // and the `early_exit` branch.
    assert_eq!(
        firsts,
        ["init", "reset", "give_up", "skip_odd", "odd", "leave"]
    );
}

#[test]
fn copy_subsets_read_the_other_subset_and_its_defaults() {
    use sdfg_ir::{Memlet, Subset, SymExpr};
    let s = |t: &str| Subset::parse(t).unwrap();
    let shape = |dims: &[i64]| dims.iter().map(|d| SymExpr::int(*d)).collect::<Vec<_>>();
    // Named by the source, with an explicit other subset.
    let m = Memlet::new("a", s("0:4")).with_other_subset(s("2:6"));
    assert_eq!(m.copy_subsets("a", &shape(&[8])), (s("0:4"), s("2:6")));
    // Named by the destination: the other subset is the source's.
    assert_eq!(m.copy_subsets("b", &shape(&[8])), (s("2:6"), s("0:4")));
    // No other subset, same rank: the same subset on both sides.
    let m = Memlet::new("a", s("1:3, 0:2"));
    assert_eq!(
        m.copy_subsets("a", &shape(&[4, 4])),
        (s("1:3, 0:2"), s("1:3, 0:2"))
    );
    // No other subset, other rank: the whole other container.
    let m = Memlet::new("x", s("2, 0:32"));
    assert_eq!(
        m.copy_subsets("x", &shape(&[32])),
        (s("2, 0:32"), s("0:32"))
    );
}
