//! Unit tests for the canonical form, printing, parsing and evaluation.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use super::*;

fn e(src: &str) -> SymExpr {
    SymExpr::parse(src).unwrap_or_else(|err| panic!("{src}: {err}"))
}

fn c(src: &str) -> SymCond {
    SymCond::parse(src).unwrap_or_else(|err| panic!("{src}: {err}"))
}

fn sym(name: &str) -> SymExpr {
    SymExpr::symbol(name)
}

fn int(v: i64) -> SymExpr {
    SymExpr::int(v)
}

/// Asserts that `src` canonicalizes to something printing as `printed`, and round-trips.
fn canon(src: &str, printed: &str) {
    let x = e(src);
    assert_eq!(x.to_string(), printed, "canonical form of {src}");
    assert_eq!(e(printed), x, "reparse of {printed}");
}

fn env(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn polynomial_normalization() {
    let (k, i, m, a, b) = (sym("k"), sym("i"), sym("M"), sym("a"), sym("b"));
    assert_eq!(&k - &k, SymExpr::ZERO);
    assert_eq!(&i + &(&m - &i - 1), &m - 1);
    assert_eq!((&a + &b) * 2 - &a, &a + &(&b * 2));
    assert_eq!(&a * &b, &b * &a);
    assert_eq!(int(3) * int(4) + 5, int(17));
    assert_eq!(SymExpr::from(7) - 7, SymExpr::ZERO);
    assert_eq!(-(-&a), a);
    canon("i + (M - i - 1)", "M - 1");
    canon("2*(a + b) - a", "a + 2*b");
    canon("(a + 1)*(a - 1)", "a**2 - 1");
    canon("N*M + 3", "M*N + 3");
    canon("-i + N - 1", "N - i - 1");
    canon("0*x + 5 - 5", "0");
    canon("a*b*a", "a**2*b");
}

#[test]
fn floor_div_and_mod() {
    canon("x // 1", "x");
    canon("x % 1", "0");
    canon("x // -1", "-x");
    canon("x % -1", "0");
    canon("0 // x", "0");
    canon("0 % x", "0");
    canon("(4*a + 8) // 4", "a + 2");
    canon("(4*a + 9) // 4", "a + 2");
    canon("(4*a + 9) % 4", "1");
    canon("(i + 5) // 4", "(i + 1) // 4 + 1");
    canon("(i + 5) % 4", "(i + 1) % 4");
    canon("(2*i + 2) // 4", "(i + 1) // 2");
    canon("(2*i) % 4", "2*(i % 2)");
    canon("a // -2", "-a // 2");
    canon("a % -2", "-(-a % 2)");
    canon("(2*a) // (2*b)", "a // b");
    canon("a // (-b)", "-a // b");
    canon("a // (b + 1)", "a // (b + 1)");
    canon("(a + b) // c * 2", "2*((a + b) // c)");
    canon("-(a // 2)", "-(a // 2)");
    canon("x // 0", "x // 0");
    // Python semantics of constants.
    for (n, d, q, r) in [
        (7, 2, 3, 1),
        (-7, 2, -4, 1),
        (7, -2, -4, -1),
        (-7, -2, 3, -1),
    ] {
        assert_eq!(int(n).floor_div(&int(d)), int(q));
        assert_eq!(int(n).modulo(&int(d)), int(r));
        let vars = env(&[("n", n), ("d", d)]);
        assert_eq!(e("n // d").eval(&vars), Ok(q));
        assert_eq!(e("n % d").eval(&vars), Ok(r));
    }
    // Wrapping folding, checked evaluation.
    assert_eq!(int(i64::MIN).floor_div(&int(-1)), int(i64::MIN));
    assert_eq!(int(i64::MIN).modulo(&int(-1)), int(0));
    let x = e("n // d");
    let err = x.eval(&env(&[("n", i64::MIN), ("d", -1)]));
    assert!(matches!(err, Err(EvalError::Overflow { .. })));
}

#[test]
fn quotient_times_divisor_plus_remainder_is_the_dividend() {
    // The flat index of a reshape (`i // M * M + i % M`) is the index.
    canon("i // M * M + i % M", "i");
    canon("i % M + M * (i // M)", "i");
    canon("(i // 4) * 4 + i % 4", "i");
    canon("3*((i + j) // N)*N + 3*((i + j) % N) + 1", "3*i + 3*j + 1");
    // Nested: the index of a 3-D reshape of a flat array.
    canon("i // M // R * R * M + i // M % R * M + i % M", "i");
    canon("i // R**(K - 1) * R**(K - 1) + i % R**(K - 1)", "i");
    // Anything else stays: the identity needs the divisor's multiple.
    canon("i // M * N + i % M", "N*(i // M) + i % M");
    canon("i // M * M + 2*(i % M)", "M*(i // M) + 2*(i % M)");
    canon("i // M * M - i % M", "M*(i // M) - i % M");
    // The fold agrees with evaluation on signs Python's division sees.
    let folded = e("i // M * M + i % M");
    for (i, m) in [(7, 3), (-7, 3), (7, -3), (-7, -3), (0, 5)] {
        let vars = env(&[("i", i), ("M", m)]);
        assert_eq!(folded.eval(&vars), Ok(i));
        assert_eq!(
            e("i // M").eval(&vars).unwrap() * m + e("i % M").eval(&vars).unwrap(),
            i
        );
    }
}

#[test]
fn powers_of_one_symbol_join() {
    let j = |src: &str| e(src).joined_powers();
    // A reshape's shape `(R, R**(K - 1))` has `R**K` elements.
    assert_eq!(j("R * R**(K - 1)"), j("R**K"));
    assert_eq!(j("R**i * R**j"), j("R**(i + j)"));
    assert_eq!(j("R**2 * R**(K - 2) * N + 1"), j("N * R**K + 1"));
    // A constant joined exponent is left alone, as is another base.
    assert_eq!(
        j("R**(K - 1) * R**(1 - K)").to_string(),
        "R**(-K + 1)*R**(K - 1)"
    );
    assert_ne!(j("S * R**(K - 1)"), j("R**K"));
    // The canonical form keeps the factors the dependence test reads.
    assert_ne!(e("R * R**(K - 1)"), e("R**K"));
    let vars = env(&[("R", 3), ("K", 4)]);
    assert_eq!(j("R * R**(K - 1)").eval(&vars), Ok(81));
}

#[test]
fn powers() {
    canon("x**0", "1");
    canon("x**1", "x");
    canon("(a + b)**2", "a**2 + 2*a*b + b**2");
    canon("(2*a*b)**3", "8*a**3*b**3");
    canon("a**20", "a**20");
    canon("(a + 1)**17", "(a + 1)**17");
    canon("R**K", "R**K");
    canon("a**-1", "a**-1");
    canon("2**10", "1024");
    canon("-2**2", "-4");
    canon("2**3**2", "512");
    canon("(-2)**a", "(-2)**a");
    canon("a**b**c", "a**b**c");
    canon("(a**b)**c", "(a**b)**c");
    canon("(a**b)**2", "(a**b)**2");
    canon("2*a**b", "2*a**b");
    canon("-a**2", "-a**2");
    assert_eq!(e("(a + b)**2"), e("a**2 + 2*a*b + b**2"));
    assert_eq!(
        e("a**20"),
        (0..20).fold(SymExpr::ONE, |acc, _| acc * sym("a"))
    );
    assert_eq!(int(2).pow(&int(64)), int(0)); // wrapping fold
}

#[test]
fn min_max() {
    canon("min(N, N + 1)", "N");
    canon("max(N, N + 1)", "N + 1");
    canon("min(b, a)", "min(a, b)");
    canon("min(a, min(b, c))", "min(a, b, c)");
    canon("min(a, max(b, c))", "min(a, max(b, c))");
    canon("min(3, 5, a)", "min(3, a)");
    canon("max(3, 5)", "5");
    canon("min(a, a, a)", "a");
    canon("min(a)", "a");
    canon("min(N - 1, N + 2, M)", "min(M, N - 1)");
    assert_eq!(SymExpr::min_all([]), None);
    assert_eq!(SymExpr::max_all([sym("a"), int(1)]), Some(e("max(1, a)")));
    assert_eq!(sym("b").min(sym("a")), e("min(a, b)"));
    assert_eq!(e("min(a, b)").eval(&env(&[("a", 3), ("b", -2)])), Ok(-2));
}

#[test]
fn reads_symbols_and_substitution() {
    let x = e("A_row[i + 1] + B[A_row[j], 2*k] - N");
    assert_eq!(x.reads(), ["A_row", "B"].map(String::from).into());
    assert_eq!(
        x.free_symbols(),
        ["N", "i", "j", "k"].map(String::from).into()
    );
    assert_eq!(x.to_string(), "A_row[i + 1] + B[A_row[j], 2*k] - N");
    assert_eq!(sym("N").is_symbol(), Some("N"));
    assert_eq!(e("2*N").is_symbol(), None);

    let swap: BTreeMap<_, _> = [("a".to_string(), sym("b")), ("b".to_string(), sym("a"))].into();
    assert_eq!(e("a - 2*b + A[a]").subs(&swap), e("b - 2*a + A[b]"));
    let fold: BTreeMap<_, _> = [("i".to_string(), e("N - 1"))].into();
    assert_eq!(
        e("(i + 1) // N + min(i, N)").subs(&fold),
        e("N // N + N - 1")
    );
    assert!(x.subs(&BTreeMap::new()) == x);
}

#[test]
fn linear_and_comparisons() {
    let (cf, rest) = e("3*i*N + 2*i - j + 4").linear_in("i").unwrap_or_default();
    assert_eq!((cf, rest), (e("3*N + 2"), e("4 - j")));
    assert_eq!(e("j + 1").linear_in("i"), Some((int(0), e("j + 1"))));
    for nonlinear in ["i**2", "min(i, 3)", "i // 2", "A[i]", "i*i*j"] {
        assert_eq!(e(nonlinear).linear_in("i"), None, "{nonlinear}");
    }
    assert_eq!(e("N + 1").try_compare(&sym("N")), Some(Ordering::Greater));
    assert_eq!(e("N").try_compare(&sym("M")), None);
    assert_eq!(int(-3).const_sign(), Some(Ordering::Less));
    assert_eq!(sym("N").const_sign(), None);
}

#[test]
fn conditions() {
    let (a, b) = (sym("a"), sym("b"));
    assert_eq!(SymCond::cmp(a.clone(), CmpOp::Eq, b.clone()), c("b == a"));
    assert_eq!(SymCond::cmp(a.clone(), CmpOp::Ne, b.clone()), c("b != a"));
    assert_eq!(c("a > b"), c("b < a"));
    assert_eq!(c("a >= b"), c("b <= a"));
    assert_eq!(c("not (a < b)"), c("b <= a"));
    assert_eq!(c("not not (a < b)"), c("a < b"));
    assert_eq!(c("not (a < b and a == 1)"), c("b <= a or a != 1"));
    assert_eq!(c("2*a < 2*b"), c("a < b"));
    assert_eq!(c("2*a == 1"), SymCond::FALSE);
    assert_eq!(c("2*a != 1"), SymCond::TRUE);
    assert_eq!(c("1 < 2 and True"), SymCond::TRUE);
    assert_eq!(c("a < b and False"), SymCond::FALSE);
    assert_eq!(c("a < b or True"), SymCond::TRUE);
    assert_eq!(c("a < b and (c < d and a < b)"), c("c < d and a < b"));
    assert_eq!(c("i < N and N <= i"), SymCond::FALSE);
    assert_eq!(c("i < N or not i < N"), SymCond::TRUE);
    assert_eq!(c("0 <= i < N"), c("i >= 0 and i < N"));
    assert_eq!(c("true").as_bool(), Some(true));
    assert_eq!(!c("a < b"), c("a >= b"));
    assert_eq!(c("A[i] < N").reads(), ["A"].map(String::from).into());
    assert_eq!(
        c("A[i] < N").free_symbols(),
        ["N", "i"].map(String::from).into()
    );
    let fold: BTreeMap<_, _> = [("i".to_string(), int(3))].into();
    assert_eq!(c("i < 5 and j < i").subs(&fold), c("j < 3"));
    let vars = env(&[("i", 2), ("N", 4)]);
    assert_eq!(c("i < N and i % 2 == 0").eval(&vars), Ok(true));
    // A deciding operand wins over an error elsewhere.
    assert_eq!(c("i > N and undefined < 1").eval(&vars), Ok(false));
    assert!(c("i < N and undefined < 1").eval(&vars).is_err());
}

#[test]
fn condition_printing() {
    for (src, printed) in [
        ("i - N < 0", "i < N"),
        ("i - 5 < 0", "i < 5"),
        ("i >= 0", "0 <= i"),
        ("i + 1 <= N", "i + 1 <= N"),
        ("a == b", "a == b"),
        ("N - i == 1", "N == i + 1"),
        ("i < N and (j < M or k < 2)", "i < N and (j < M or k < 2)"),
        ("(i < N and j < M) or k < 2", "k < 2 or (j < M and i < N)"),
        ("not a == 0", "a != 0"),
        ("True", "True"),
        ("1 > 2", "False"),
    ] {
        let x = c(src);
        assert_eq!(x.to_string(), printed, "{src}");
        assert_eq!(c(printed), x, "{printed}");
    }
}

#[test]
fn printing_round_trips_extremes() {
    for v in [i64::MIN, i64::MIN + 1, -1, 0, i64::MAX] {
        let x = int(v) * sym("a") + v;
        assert_eq!(e(&x.to_string()), x, "{x}");
        let cond = SymCond::cmp(x.clone(), CmpOp::Lt, int(v));
        assert_eq!(c(&cond.to_string()), cond, "{cond}");
    }
    canon("-9223372036854775807 - 1", "-9223372036854775808");
    canon("-9223372036854775808", "-9223372036854775808");
    canon("a - 9223372036854775807 - 1", "a - 9223372036854775807 - 1");
    // Text whose arithmetic wraps around 64 bits means another number: refused.
    for wraps in [
        "9223372036854775807 + 1",
        "-(-9223372036854775807 - 1)",
        "3037000500 * 3037000500",
        "2**63",
        "a - 9223372036854775808",
        "9223372036854775808",
    ] {
        assert!(SymExpr::parse(wraps).is_err(), "{wraps}");
    }
}

#[test]
fn parse_errors() {
    let err = |src: &str| SymExpr::parse(src).err().map(|e| (e.offset, e.expected));
    assert_eq!(err("a +"), Some((3, "a number, name, `(`, `-` or `not`")));
    assert_eq!(err("(a + 1"), Some((6, "`)`")));
    assert_eq!(
        err("a $ b"),
        Some((2, "a number, name, operator or bracket"))
    );
    assert_eq!(
        err("99999999999999999999"),
        Some((0, "an integer literal of at most 2**63"))
    );
    assert_eq!(err("  a < b"), Some((2, "an integer expression")));
    assert_eq!(err("a + (b < 1)"), Some((4, "an integer expression")));
    assert_eq!(err("a b"), Some((2, "an operator or the end of input")));
    assert_eq!(err("min()"), Some((4, "at least one argument")));
    assert_eq!(err("A[i j]"), Some((4, "`,` or `]`")));
    assert_eq!(err(""), Some((0, "a number, name, `(`, `-` or `not`")));
    assert!(err(&"(".repeat(1000)).is_some_and(|(_, what)| what.contains("nesting")));
    let cond_err = SymCond::parse("a + 1").err();
    assert_eq!(
        cond_err.map(|e| (e.offset, e.expected)),
        Some((0, "a condition"))
    );
    let msg = SymExpr::parse("a +").err().map(|e| e.to_string());
    assert_eq!(
        msg.as_deref(),
        Some("expected a number, name, `(`, `-` or `not` at byte 3, found end of input")
    );
}

#[test]
fn the_deepest_nesting_parses_on_a_small_stack() {
    // 64 levels of each kind, on a thread of 1.5 MiB (a test thread has 2).
    let kinds: [(&str, &str); 6] = [
        ("(", ")"),
        ("-", ""),
        ("not ", ""),
        ("min(1, ", ")"),
        ("A[", "]"),
        ("2**", ""),
    ];
    for (open, close) in kinds {
        let text = format!("{}i{}", open.repeat(63), close.repeat(63));
        let deeper = format!("{}i{}", open.repeat(200), close.repeat(200));
        let (ok, refused) = std::thread::Builder::new()
            .stack_size(1536 << 10)
            .spawn(move || {
                let parse = |t: &str| {
                    SymExpr::parse(t)
                        .map(drop)
                        .or_else(|_| SymCond::parse(t).map(drop))
                };
                (parse(&text), parse(&deeper))
            })
            .expect("spawn")
            .join()
            .expect("no panic");
        // A power tower may overflow 64 bits, and a condition nested in
        // `min` is a type error: what matters is an answer, not a crash.
        let _ = ok;
        let err = refused.expect_err("too deep");
        assert!(
            err.expected.contains("64 levels") || open == "2**",
            "{open}: {err}"
        );
    }
}

#[test]
fn sizes_are_bounded_while_reading() {
    // A sum of distinct symbols costs time quadratic in its length, a
    // product of sums of distinct symbols has exponentially many terms:
    // refused once they pass the bound, quickly.
    let sum: Vec<String> = (0..20_000).map(|k| format!("a{k}")).collect();
    let sum = sum.join(" + ");
    let products: Vec<String> = (0..40).map(|k| format!("(a{k} + 1)")).collect();
    let products = products.join(" * ");
    for text in [sum, products, "(i + j + k + l + 1)**16".to_owned()] {
        let err = SymExpr::parse(&text).expect_err("too large");
        assert_eq!(
            err.expected,
            "an expression of at most 4096 terms and factors"
        );
    }
    // Long chains that stay small are read.
    assert_eq!(
        SymExpr::parse(&vec!["i"; 100_000].join(" + ")),
        Ok(SymExpr::symbol("i") * SymExpr::int(100_000))
    );
    assert!(SymExpr::parse("(i + 1)**16").is_ok());
}

#[test]
fn evaluation() {
    let vars = env(&[("N", 10), ("i", 3)]);
    assert_eq!(
        e("N*i - N // 4 + (N - i) % 4 + min(N, i)**2").eval(&vars),
        Ok(30 - 2 + 3 + 9)
    );
    let hash: HashMap<String, i64> = vars.clone().into_iter().collect();
    assert_eq!(e("N - i").eval(&hash), Ok(7));
    assert_eq!(
        e("N + M").eval(&vars),
        Err(EvalError::UndefinedSymbol { name: "M".into() })
    );
    assert_eq!(
        e("N // (i - 3)").eval(&vars),
        Err(EvalError::DivisionByZero {
            expr: "N // (i - 3)".into()
        })
    );
    assert!(matches!(
        e("N % (i - 3)").eval(&vars),
        Err(EvalError::DivisionByZero { .. })
    ));
    assert_eq!(
        e("N**i**N").eval(&vars),
        Err(EvalError::Overflow {
            expr: "N**i**N".into()
        })
    );
    assert!(matches!(
        e("N**(i - 4)").eval(&vars),
        Err(EvalError::NegativeExponent { .. })
    ));
    let big = env(&[("N", i64::MAX)]);
    assert!(matches!(
        e("N + 1").eval(&big),
        Err(EvalError::Overflow { .. })
    ));
    assert!(matches!(
        e("N*N").eval(&big),
        Err(EvalError::Overflow { .. })
    ));
    assert_eq!(
        e("A[i + 1]").eval(&vars),
        Err(EvalError::UnreadableData {
            data: "A".into(),
            index: vec![4]
        })
    );

    struct Table;
    impl SymEnv for Table {
        fn symbol(&self, name: &str) -> Option<i64> {
            (name == "i").then_some(2)
        }
        fn read(&self, data: &str, index: &[i64]) -> Option<i64> {
            (data == "A").then(|| index.iter().sum::<i64>() * 10)
        }
    }
    assert_eq!(e("A[i, 1] + i").eval(&Table), Ok(32));
    assert_eq!(e("A[i, 1] + i").eval(&&Table), Ok(32));
}

#[test]
fn serde_uses_the_text_form() {
    let x = e("A_row[i + 1] - 1");
    let json = serde_json::to_string(&x).unwrap_or_default();
    assert_eq!(json, r#""A_row[i + 1] - 1""#);
    assert_eq!(serde_json::from_str::<SymExpr>(&json).ok(), Some(x));
    let cond = c("i < N and j != 0");
    let json = serde_json::to_string(&cond).unwrap_or_default();
    assert_eq!(serde_json::from_str::<SymCond>(&json).ok(), Some(cond));
    assert!(serde_json::from_str::<SymExpr>(r#""a +""#).is_err());
    assert!(serde_json::from_str::<SymExpr>("3").is_err());
}

#[test]
fn exact_arithmetic_reports_wraparound_and_comparisons_never_wrap() {
    assert_eq!(SymExpr::exact(|| int(i64::MAX) + 1), None);
    assert_eq!(SymExpr::exact(|| int(i64::MIN) * -1), None);
    assert_eq!(SymExpr::exact(|| sym("a") * (1 << 62) * 2), None);
    assert_eq!(
        SymExpr::exact(|| int(i64::MIN) - int(i64::MIN)),
        Some(int(0))
    );
    assert_eq!(SymExpr::exact(|| sym("a") + 1), Some(e("a + 1")));
    // An overflow is reported to the innermost call only.
    assert_eq!(
        SymExpr::exact(|| (SymExpr::exact(|| int(i64::MAX) + 1), int(i64::MAX) + 1)),
        None
    );
    assert_eq!(
        SymExpr::exact(|| SymExpr::exact(|| int(i64::MAX) + 1)),
        Some(None)
    );
    let at = |i: i64| HashMap::from([("i".to_owned(), i)]);
    // `i < -2**63` holds for no 64-bit `i`: kept as a pair, not `i + 2**63 < 0`.
    let never = SymCond::cmp(sym("i"), CmpOp::Lt, int(i64::MIN));
    assert!(matches!(never.view(), CondView::Pair(..)), "{never}");
    for i in [i64::MIN, -1, 0, i64::MAX] {
        assert_eq!(never.eval(&at(i)), Ok(false), "{never} at {i}");
        assert_eq!(never.clone().not().eval(&at(i)), Ok(true));
    }
    assert_eq!(c(&never.to_string()), never);
    // Substituting can make a difference unrepresentable: compared apart.
    let lt_n = SymCond::cmp(sym("i"), CmpOp::Lt, sym("N"));
    let subs = BTreeMap::from([("N".to_owned(), int(i64::MIN))]);
    assert_eq!(lt_n.subs(&subs).eval(&at(0)), Ok(false));
    // `-2**63 < i`, normalized to `-i - 2**63 < 0`, evaluates at
    // `i = -2**63` although `-i` overflows there.
    let above_min = SymCond::cmp(int(i64::MIN), CmpOp::Lt, sym("i"));
    assert_eq!(above_min.eval(&at(i64::MIN)), Ok(false));
    assert_eq!(above_min.eval(&at(i64::MIN + 1)), Ok(true));
}
