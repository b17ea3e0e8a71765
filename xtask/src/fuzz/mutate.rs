//! Mutations of corpus inputs: token and line edits of Python sources, and
//! structural edits of SDFG JSON aimed at what the validator and the
//! simulator must survive (extreme integers in expressions, dangling
//! names, missing or repeated fields).

use proptest::prelude::Rng;
use proptest::test_runner::TestRng;
use serde_json::Value;

/// A number below `n` (`n > 0`).
pub(super) fn below(rng: &mut TestRng, n: usize) -> usize {
    (rng.next_u64() % n.max(1) as u64) as usize
}

pub(super) fn pick<'a, T>(rng: &mut TestRng, items: &'a [T]) -> &'a T {
    &items[below(rng, items.len())]
}

/// Integers at the edges: zero, signs, the 64-bit limits and beyond.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "3",
    "0.5",
    "-0.0",
    "1e308",
    "2**63",
    "2**64 + 3",
    "-9223372036854775807 - 1",
    "9223372036854775807",
    "10**20",
];

const OPERATORS: &[&str] = &[
    "+", "-", "*", "/", "//", "%", "**", "@", "<", ">", "==", "&", "|", "^", "<<",
];

/// Splits Python text into tokens: names, numbers, runs of whitespace and
/// single punctuation characters (good enough to mutate, not to parse).
fn tokens(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let run = |pred: &dyn Fn(u8) -> bool| {
            let mut j = i + 1;
            while j < bytes.len() && pred(bytes[j]) {
                j += 1;
            }
            j
        };
        let j = if c.is_ascii_alphabetic() || c == b'_' {
            run(&|b| b.is_ascii_alphanumeric() || b == b'_')
        } else if c.is_ascii_digit() {
            run(&|b| b.is_ascii_alphanumeric() || b == b'.')
        } else if c == b' ' || c == b'\n' {
            run(&|b| b == c)
        } else {
            // One character, whole (the text is UTF-8).
            i + text[i..].chars().next().map_or(1, char::len_utf8)
        };
        out.push(&text[i..j]);
        i = j;
    }
    out
}

/// One to three mutations of a Python source.
pub(super) fn python(rng: &mut TestRng, text: &str) -> String {
    let mut text = text.to_owned();
    for _ in 0..1 + below(rng, 3) {
        text = if below(rng, 3) == 0 {
            line_mutation(rng, &text)
        } else {
            token_mutation(rng, &text)
        };
    }
    text
}

fn token_mutation(rng: &mut TestRng, text: &str) -> String {
    let toks = tokens(text);
    // Mutate inside the programs, where the compiler looks.
    let start = text
        .find("@dace.program")
        .or_else(|| text.find("@dc.program"))
        .unwrap_or(0);
    let mut offset = 0;
    let first = toks
        .iter()
        .position(|t| {
            offset += t.len();
            offset > start
        })
        .unwrap_or(0);
    if first >= toks.len() {
        return text.to_owned();
    }
    let k = first + below(rng, toks.len() - first);
    let names: Vec<&str> = toks
        .iter()
        .copied()
        .filter(|t| t.starts_with(|c: char| c.is_ascii_alphabetic()))
        .collect();
    let t = toks[k];
    let replacement: String = match below(rng, 6) {
        _ if t.starts_with(|c: char| c.is_ascii_digit()) => (*pick(rng, NUMBERS)).to_owned(),
        0 => String::new(),
        1 => format!("{t}{t}"),
        2 if !names.is_empty() && t.starts_with(|c: char| c.is_ascii_alphabetic()) => {
            (*pick(rng, &names)).to_owned()
        }
        3 => (*pick(rng, OPERATORS)).to_owned(),
        4 => (*pick(rng, NUMBERS)).to_owned(),
        _ => format!("({t})"),
    };
    let mut out = String::with_capacity(text.len() + 16);
    for (i, tok) in toks.iter().enumerate() {
        out.push_str(if i == k { &replacement } else { tok });
    }
    out
}

fn line_mutation(rng: &mut TestRng, text: &str) -> String {
    let mut lines: Vec<&str> = text.lines().collect();
    if lines.len() < 2 {
        return text.to_owned();
    }
    let i = below(rng, lines.len());
    let j = below(rng, lines.len());
    match below(rng, 3) {
        0 => {
            lines.remove(i);
        }
        1 => {
            let line = lines[i];
            lines.insert(j, line);
        }
        _ => lines.swap(i, j),
    }
    lines.join("\n") + "\n"
}

/// One step of a path into a JSON value.
#[derive(Clone, Debug)]
pub(super) enum Step {
    Key(String),
    Index(usize),
}

/// An edit of the JSON value at a path.
#[derive(Clone, Debug)]
pub(super) struct Mutation {
    pub(super) path: Vec<Step>,
    pub(super) edit: Edit,
}

#[derive(Clone, Debug)]
pub(super) enum Edit {
    /// Replace the value.
    Set(Value),
    /// Remove the value from its object or array.
    Remove,
    /// Repeat an array element.
    Duplicate,
}

impl std::fmt::Display for Mutation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut path = String::new();
        for s in &self.path {
            match s {
                Step::Key(k) => path.push_str(&format!(".{k}")),
                Step::Index(i) => path.push_str(&format!("[{i}]")),
            }
        }
        match &self.edit {
            Edit::Set(v) => write!(f, "set {path} = {v}"),
            Edit::Remove => write!(f, "remove {path}"),
            Edit::Duplicate => write!(f, "duplicate {path}"),
        }
    }
}

/// Every path in `v`, with the value there.
pub(super) fn paths<'a>(v: &'a Value, here: &mut Vec<Step>, out: &mut Vec<(Vec<Step>, &'a Value)>) {
    out.push((here.clone(), v));
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                here.push(Step::Key(k.clone()));
                paths(x, here, out);
                here.pop();
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                here.push(Step::Index(i));
                paths(x, here, out);
                here.pop();
            }
        }
        _ => {}
    }
}

/// Expressions to put where an expression was: extremes, dangling names,
/// divisions by zero, and the original with an offset.
fn expression_for(rng: &mut TestRng, original: &str, strings: &[&str]) -> String {
    match below(rng, 4) {
        0 => format!("{original} + 1"),
        1 => (*pick(rng, strings)).to_owned(),
        _ => (*pick(
            rng,
            &[
                "0",
                "-1",
                "N",
                "N - 1",
                "2*N",
                "9223372036854775807",
                "-9223372036854775808",
                "N*N*N*N*N*N*N*N",
                "N // 0",
                "N % 0",
                "1000000000000",
                "",
                "undefined_symbol",
            ][..],
        ))
        .to_owned(),
    }
}

/// One to three mutations of an SDFG's JSON.
pub(super) fn json_mutations(rng: &mut TestRng, base: &Value) -> Vec<Mutation> {
    let mut all = Vec::new();
    paths(base, &mut Vec::new(), &mut all);
    let strings: Vec<&str> = all.iter().filter_map(|(_, v)| v.as_str()).collect();
    let mut out = Vec::new();
    for _ in 0..1 + below(rng, 3) {
        let (path, v) = &all[below(rng, all.len())];
        let edit = match v {
            Value::String(s) => Edit::Set(Value::String(expression_for(rng, s, &strings))),
            Value::Number(_) => Edit::Set(serde_json::json!(*pick(
                rng,
                &[0i64, -1, 1, i64::MAX, i64::MIN, 1 << 40][..]
            ))),
            Value::Bool(b) => Edit::Set(Value::Bool(!b)),
            _ if path.is_empty() => continue,
            _ => match below(rng, 3) {
                0 if matches!(path.last(), Some(Step::Index(_))) => Edit::Duplicate,
                1 => Edit::Set(Value::Null),
                _ => Edit::Remove,
            },
        };
        out.push(Mutation {
            path: path.clone(),
            edit,
        });
    }
    out
}

/// `base` with `mutations` applied in order (a path that an earlier
/// mutation removed is skipped), as JSON text.
pub(super) fn apply(base: &Value, mutations: &[Mutation]) -> String {
    let mut v = base.clone();
    for m in mutations {
        let Some((last, parent_path)) = m.path.split_last() else {
            continue;
        };
        // A JSON pointer (RFC 6901) to the parent.
        let pointer: String = parent_path
            .iter()
            .map(|s| match s {
                Step::Key(k) => format!("/{}", k.replace('~', "~0").replace('/', "~1")),
                Step::Index(i) => format!("/{i}"),
            })
            .collect();
        let Some(parent) = v.pointer_mut(&pointer) else {
            continue;
        };
        match (last, parent, &m.edit) {
            (Step::Key(k), Value::Object(map), Edit::Set(x)) => {
                if let Some(slot) = map.get_mut(k) {
                    *slot = x.clone();
                }
            }
            (Step::Key(k), Value::Object(map), _) => {
                map.remove(k);
            }
            (Step::Index(i), Value::Array(items), edit) if *i < items.len() => match edit {
                Edit::Set(x) => items[*i] = x.clone(),
                Edit::Remove => {
                    items.remove(*i);
                }
                Edit::Duplicate => {
                    let x = items[*i].clone();
                    items.insert(*i, x);
                }
            },
            _ => {}
        }
    }
    serde_json::to_string_pretty(&v).unwrap_or_default()
}
