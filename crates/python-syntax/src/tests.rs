use super::*;
use ruff_python_ast::AnyNodeRef;
use ruff_python_ast::visitor::source_order::{SourceOrderVisitor, TraversalSignal};

/// A chain of `n` links of one kind, as an expression of `x`.
fn chain(kind: &str, n: usize) -> String {
    let rep = |s: &str| s.repeat(n);
    match kind {
        "add" => format!("x{}", rep(" + x")),
        "neg" => format!("{}x", rep("- ")),
        "not" => format!("{}x", rep("not ")),
        "pow" => format!("x{}", rep(" ** x")),
        "lt" => format!("x{}", rep(" < x")),
        "and" => format!("x{}", rep(" and x")),
        "subscript" => format!("x{}", rep("[0]")),
        "attribute" => format!("x{}", rep(".real")),
        "call" => format!("{}x{}", rep("f("), rep(")")),
        "paren" => format!("{}x{}", rep("("), rep(")")),
        "list" => format!("{}x{}", rep("["), rep("]")),
        "dict" => format!("{}x{}", rep("{0: "), rep("}")),
        "ifelse" => format!("{}x", rep("x if x else ")),
        "lambda" => format!("{}x", rep("lambda a, b: ")),
        "await" => format!("{}x", rep("await ")),
        "fstring" => format!("{}x{}", rep("f'{"), rep("}'")),
        "comprehension" => format!("{}x{}", rep("[y for y in "), rep("]")),
        other => panic!("no chain `{other}`"),
    }
}

const KINDS: [&str; 17] = [
    "add",
    "neg",
    "not",
    "pow",
    "lt",
    "and",
    "subscript",
    "attribute",
    "call",
    "paren",
    "list",
    "dict",
    "ifelse",
    "lambda",
    "await",
    "fstring",
    "comprehension",
];

/// Statements nested `n` deep, of one kind.
fn blocks(kind: &str, n: usize) -> String {
    let mut out = String::new();
    for d in 0..n {
        let indent = " ".repeat(d);
        match kind {
            "if" => out.push_str(&format!("{indent}if x:\n")),
            "else" => out.push_str(&format!("{indent}if x:\n{indent} pass\n{indent}else:\n")),
            "try" => out.push_str(&format!("{indent}try:\n{indent} pass\n{indent}except E:\n")),
            other => panic!("no block `{other}`"),
        }
    }
    out.push_str(&format!("{}x = 1\n", " ".repeat(n)));
    out
}

fn elifs(n: usize) -> String {
    let mut out = "if x:\n    pass\n".to_owned();
    for _ in 0..n {
        out.push_str("elif x:\n    pass\n");
    }
    out.push_str("else:\n    y = 1\n");
    out
}

/// The depth of a module's syntax tree, every node counted (recursive: for
/// shallow trees only).
fn tree_depth(parsed: &Parsed<ModModule>) -> usize {
    #[derive(Default)]
    struct Depth {
        now: usize,
        max: usize,
    }
    impl<'a> SourceOrderVisitor<'a> for Depth {
        fn enter_node(&mut self, _: AnyNodeRef<'a>) -> TraversalSignal {
            self.now += 1;
            self.max = self.max.max(self.now);
            TraversalSignal::Traverse
        }
        fn leave_node(&mut self, _: AnyNodeRef<'a>) {
            self.now -= 1;
        }
    }
    let mut d = Depth::default();
    for s in &parsed.syntax().body {
        d.visit_stmt(s);
    }
    d.max
}

fn bound(text: &str) -> usize {
    let parsed = ruff_python_parser::parse_unchecked(text, ParseOptions::from(Mode::Module));
    nesting(tokens_at(parsed.tokens()), usize::MAX).depth
}

#[test]
fn the_bound_is_at_least_the_depth_of_the_tree_for_every_kind_of_nesting() {
    let mut texts: Vec<String> = Vec::new();
    for n in [1, 5, 20, 60] {
        for kind in KINDS {
            // `await` is only valid in an `async def`; the tree is built all
            // the same.
            texts.push(format!("y = {}\n", chain(kind, n)));
        }
        for kind in ["if", "else", "try"] {
            texts.push(blocks(kind, n));
        }
        texts.push(elifs(n));
    }
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/npbench");
    let mut files = vec![corpus];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).expect("read the corpus").flatten() {
                files.push(entry.path());
            }
        } else if path.extension().is_some_and(|e| e == "py") {
            texts.push(std::fs::read_to_string(&path).expect("read a corpus file"));
        }
    }
    assert!(texts.len() > 100, "the corpus is missing");
    let mut deepest_corpus_bound = 0;
    for text in &texts {
        let parsed = ruff_python_parser::parse_unchecked(text, ParseOptions::from(Mode::Module));
        let module = parsed.try_into_module().expect("a module");
        let depth = tree_depth(&module);
        let estimate = bound(text);
        // The tree's module and statement wrappers are a constant the
        // bound leaves out.
        assert!(
            depth <= estimate + 2,
            "the bound {estimate} is below the tree's depth {depth} for:\n{}",
            &text[..text.len().min(400)]
        );
        if text.contains("BENCHMARK") {
            deepest_corpus_bound = deepest_corpus_bound.max(estimate);
        }
    }
    // Real programs stay far below the limit.
    assert!(
        deepest_corpus_bound < MAX_NESTING / 4,
        "a corpus program nests {deepest_corpus_bound} levels"
    );
}

#[test]
fn long_flat_text_is_accepted() {
    let numbers: Vec<String> = (0..20_000).map(|i| format!("-{i}")).collect();
    let fields: String = (0..5_000).map(|i| format!("{{x{i} + 1}} and ")).collect();
    let statements: String = (0..5_000).map(|i| format!("x{i} = x + 1\n")).collect();
    let texts = [
        format!("a = [{}]\n", numbers.join(", ")),
        format!("f({})\n", numbers.join(", ")),
        format!("d = {{{}}}\n", numbers.join(": 1, ") + ": 1"),
        format!("s = f\"{fields}\"\n"),
        format!("s = '{}'\n", "-".repeat(100_000)),
        format!("# {}\nx = 1\n", "(".repeat(100_000)),
        format!("s = \"\"\"\n{}\n\"\"\"\n", "[".repeat(100_000)),
        statements,
    ];
    for text in &texts {
        if let Err(e) = parse_module(text) {
            panic!("refused ({e}): {}", &text[..200.min(text.len())]);
        }
    }
}

#[test]
fn every_long_chain_is_refused_at_the_token_that_passes_the_bound() {
    for kind in KINDS {
        for n in [MAX_NESTING + 10, 100_000] {
            let text = format!("y = {}\n", chain(kind, n));
            match parse_module(&text) {
                Err(SyntaxError::TooDeep { offset }) => {
                    // Within the first links past the bound.
                    let near = format!("y = {}", chain(kind, MAX_NESTING + 2)).len();
                    assert!(offset <= near, "{kind} x {n}: refused at byte {offset}");
                }
                other => panic!("{kind} x {n}: {other:?}"),
            }
        }
    }
    // A sum: the statement, the line, `=` and 254 `+` reach 257 levels at
    // the last of them.
    let text = format!("y = {}\n", chain("add", 300));
    let at = "y = x".len() + 253 * " + x".len() + 1;
    assert_eq!(
        parse_module(&text).err(),
        Some(SyntaxError::TooDeep { offset: at })
    );
    for n in [MAX_NESTING, 2_000] {
        for kind in ["if", "else", "try"] {
            let text = blocks(kind, n);
            assert!(
                matches!(parse_module(&text), Err(SyntaxError::TooDeep { .. })),
                "{kind} blocks x {n}"
            );
        }
    }
    for n in [MAX_NESTING, 100_000] {
        assert!(
            matches!(parse_module(&elifs(n)), Err(SyntaxError::TooDeep { .. })),
            "elif x {n}"
        );
    }
}

#[test]
fn chains_within_the_bound_parse() {
    for kind in KINDS {
        let text = format!("y = {}\n", chain(kind, 60));
        let parsed = ruff_python_parser::parse_unchecked(&text, ParseOptions::from(Mode::Module));
        assert!(
            nesting(tokens_at(parsed.tokens()), MAX_NESTING)
                .first_over
                .is_none(),
            "{kind}"
        );
    }
    assert!(parse_module(&format!("y = {}\n", chain("add", 250))).is_ok());
    assert!(parse_module(&blocks("if", 60)).is_ok());
    assert!(parse_module(&elifs(200)).is_ok());
}

#[test]
fn a_refused_text_never_grows_a_tree_on_the_callers_stack() {
    // A thread with a small stack: dropping a tree 400,000 levels deep
    // here would overflow it.
    let text = format!("y = {}\n", chain("add", 400_000));
    let refused = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || matches!(parse_module(&text), Err(SyntaxError::TooDeep { .. })))
        .expect("spawn")
        .join()
        .expect("no panic");
    assert!(refused);
}

#[test]
fn deep_trees_drop_on_a_thread_sized_from_the_bound() {
    // What the parser's own tokens refuse is dropped by `drop_deep`, which
    // must size its thread for every kind of tree (nested f-strings are
    // slow to parse, so fewer of them).
    let mut texts: Vec<String> = KINDS
        .iter()
        .map(|kind| {
            let n = if *kind == "fstring" { 3_000 } else { 100_000 };
            format!("y = {}\n", chain(kind, n))
        })
        .collect();
    for kind in ["if", "else", "try"] {
        texts.push(blocks(kind, 3_000));
    }
    for text in texts {
        std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(move || {
                let parsed =
                    ruff_python_parser::parse_unchecked(&text, ParseOptions::from(Mode::Module));
                let bound = nesting(tokens_at(parsed.tokens()), MAX_NESTING);
                assert!(bound.first_over.is_some());
                drop_deep(parsed, bound.depth);
            })
            .expect("spawn")
            .join()
            .expect("no panic");
    }
}

#[test]
fn syntax_errors_name_their_offset() {
    let e = parse_module("x = (1 +\n").unwrap_err();
    assert!(matches!(e, SyntaxError::Invalid { .. }), "{e:?}");
    // A syntax error in a deep text is reported as too deep: the tree ruff
    // recovered is refused before its errors are read.
    let text = format!("y = {} +\n", chain("neg", 100_000));
    assert!(matches!(
        parse_module(&text),
        Err(SyntaxError::TooDeep { .. })
    ));
    assert!(parse_expression("float64[N, M]").is_ok());
    assert!(matches!(
        parse_expression(&chain("subscript", 100_000)),
        Err(SyntaxError::TooDeep { .. })
    ));
}
