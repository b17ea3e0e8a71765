//! Long chains through the whole pipeline: `sdfgc` on program files, DaCe
//! files and SDFG JSON whose code, conditions, assignments and ranges are
//! chains of hundreds of thousands of operators must end with a clean error
//! (or a result), never a stack overflow or an abort; and every message
//! stays short, however long the text it quotes (`docs/robustness.md`).

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

/// The most bytes an error message may take, whatever text it quotes.
const MAX_MESSAGE: usize = 1024;

fn sdfgc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sdfgc"))
        .args(args)
        .output()
        .expect("run sdfgc")
}

/// A scratch file unique to this test process and name.
fn scratch(name: &str, contents: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sdfgc-chains-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    let path = dir.join(name);
    std::fs::write(&path, contents).expect("write scratch file");
    path
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `sdfgc args` and checks it ended by itself (a result, or an error
/// with exit status 2), not by a signal or a panic, with a short message;
/// the message.
#[track_caller]
fn clean(what: &str, args: &[&str]) -> String {
    let out = sdfgc(args);
    let err = text(&out.stderr);
    let head: String = err.chars().take(400).collect();
    assert!(
        matches!(out.status.code(), Some(0 | 2)),
        "{what}: sdfgc ended with {:?}:\n{head}",
        out.status
    );
    assert!(!err.contains("panicked"), "{what}: {head}");
    assert!(
        err.len() <= MAX_MESSAGE,
        "{what}: a message of {} bytes:\n{head}",
        err.len()
    );
    err
}

/// A chain of `n` links of one kind, as an expression of `x`.
fn chain(kind: &str, x: &str, n: usize) -> String {
    let rep = |s: &str| s.repeat(n);
    match kind {
        "add" => format!("{x}{}", rep(&format!(" + {x}"))),
        "neg" => format!("{}{x}", rep("- ")),
        "not" => format!("{}{x}", rep("not ")),
        "pow" => format!("{x}{}", rep(&format!(" ** {x}"))),
        "lt" => format!("{x}{}", rep(&format!(" < {x}"))),
        "and" => format!("{x}{}", rep(&format!(" and {x}"))),
        "subscript" => format!("{x}{}", rep("[0]")),
        "attribute" => format!("{x}{}", rep(".real")),
        "call" => format!("{}{x}{}", rep("abs("), rep(")")),
        "paren" => format!("{}{x}{}", rep("("), rep(")")),
        "ifelse" => format!("{}{x}", rep(&format!("{x} if {x} else "))),
        other => panic!("no chain `{other}`"),
    }
}

const KINDS: [&str; 11] = [
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
    "ifelse",
];

const PROGRAM: &str = "import dace\nN = dace.symbol('N')\n@dace.program\ndef k(A: dace.float64[N], B: dace.float64[N]):\n";

#[test]
fn programs_with_long_chains_are_clean_errors_at_their_line() {
    let mut cases: Vec<(String, String)> = KINDS
        .iter()
        .map(|kind| {
            let body = format!("    B[:] = {}\n", chain(kind, "A", 140_000));
            (kind.to_string(), format!("{PROGRAM}{body}"))
        })
        .collect();
    // The sum, deeper than a debug build's main stack held.
    cases.push((
        "add x 400000".to_owned(),
        format!("{PROGRAM}    B[:] = {}\n", chain("add", "A", 400_000)),
    ));
    // Module-level code, which the compiler otherwise ignores.
    cases.push((
        "module level".to_owned(),
        format!(
            "import dace\nN = dace.symbol('N')\nx = {}\n@dace.program\ndef k(A: dace.float64[N]):\n    A[:] = 1.0\n",
            chain("neg", "1", 140_000)
        ),
    ));
    // Blocks: nested `if`s, and an `elif` chain.
    let mut nested = PROGRAM.to_owned();
    for d in 0..2_000 {
        nested += &format!("    {}if N > {d}:\n", " ".repeat(d));
    }
    nested += &format!("    {}B[:] = A\n", " ".repeat(2_000));
    cases.push(("nested ifs".to_owned(), nested));
    let mut elifs = format!("{PROGRAM}    if N > 0:\n        B[:] = A\n");
    for d in 0..100_000 {
        elifs += &format!("    elif N > {d}:\n        B[:] = A\n");
    }
    cases.push(("elifs".to_owned(), elifs));
    for (what, source) in cases {
        let path = scratch("chain.py", &source);
        let err = clean(&what, &["compile", path.to_str().unwrap()]);
        assert!(err.starts_with("error: "), "{what}: {err}");
        assert!(err.contains("chain.py:"), "{what}: no position: {err}");
        assert!(err.contains("nested more than 256 levels"), "{what}: {err}");
    }
}

/// A DaCe file of the program `t = 0; for i in range(N): B[i] = A[i] + 1.0;
/// t = i + 1; if s[0] > t: B[0] = 2.0`, as `sdfgc` writes it.
fn dace_base() -> Value {
    let source = format!(
        "{}    t = 0\n    for i in range(N):\n        B[i] = A[i] + 1.0\n        t = i + 1\n    if s[0] > t:\n        B[0] = 2.0\n",
        PROGRAM.replace(
            "B: dace.float64[N]):",
            "B: dace.float64[N], s: dace.int64[1]):"
        )
    );
    let path = scratch("base.py", &source);
    let out = sdfgc(&["compile", path.to_str().unwrap(), "--emit", "dace-sdfg"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("a DaCe file is JSON")
}

/// The first string in `v` (depth first) for which `pick` (given the key
/// it is under and the string) holds, replaced by `with`.
fn replace_first(v: &mut Value, pick: &dyn Fn(&str, &str) -> bool, with: &str) -> bool {
    match v {
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                if let Value::String(s) = item
                    && pick(key, s)
                {
                    *s = with.to_owned();
                    return true;
                }
                if replace_first(item, pick, with) {
                    return true;
                }
            }
            false
        }
        Value::Array(items) => items.iter_mut().any(|i| replace_first(i, pick, with)),
        _ => false,
    }
}

/// Which string of a file to replace: by the key it is under and its text.
type Slot = Box<dyn Fn(&str, &str) -> bool>;

/// The places of the DaCe file that hold text: the tasklet's code, the
/// interstate assignment `t = i + 1`, the loop's condition, the branch's
/// condition and a memlet's range.
fn dace_slot(slot: &str) -> Slot {
    match slot {
        "tasklet code" => Box::new(|k, s| k == "string_data" && s.contains("__in0 + 1.0")),
        "interstate assignment" => Box::new(|k, s| k == "t" && s == "i + 1"),
        "loop condition" => Box::new(|k, s| k == "string_data" && s.contains("(i) < (N)")),
        "branch condition" => Box::new(|k, s| k == "string_data" && s.contains("cond_")),
        "range" => Box::new(|k, s| k == "end" && s == "$i"),
        other => panic!("no slot `{other}`"),
    }
}

#[test]
fn dace_files_with_long_chains_are_clean_errors() {
    let base = dace_base();
    let slots = [
        "tasklet code",
        "interstate assignment",
        "loop condition",
        "branch condition",
        "range",
    ];
    for slot in slots {
        let pick = dace_slot(slot);
        let mut texts: Vec<(String, String)> = Vec::new();
        for kind in KINDS {
            let t = if slot == "tasklet code" {
                format!("__out = {}\n", chain(kind, "__in0", 100_000))
            } else {
                chain(kind, "i", 100_000)
            };
            texts.push((kind.to_owned(), t));
        }
        if slot == "tasklet code" {
            let mut nested = String::new();
            for d in 0..2_000 {
                nested += &format!("{}if __in0 > {d}:\n", " ".repeat(d));
            }
            nested += &format!("{}__out = __in0\n", " ".repeat(2_000));
            texts.push(("nested ifs".to_owned(), nested));
            let mut elifs = "if __in0 > 0:\n    __out = __in0\n".to_owned();
            for d in 0..100_000 {
                elifs += &format!("elif __in0 > {d}:\n    __out = __in0\n");
            }
            elifs += "else:\n    __out = __in0\n";
            texts.push(("elifs".to_owned(), elifs));
        }
        for (kind, t) in texts {
            let mut sdfg = base.clone();
            assert!(
                replace_first(&mut sdfg, &*pick, &t),
                "no {slot} in the file"
            );
            let path = scratch("chain.sdfg", &sdfg.to_string());
            let what = format!("{slot}, {kind}");
            let err = clean(&what, &["compile", path.to_str().unwrap()]);
            if slot == "tasklet code" {
                assert!(err.contains("nested more than"), "{what}: {err}");
                assert!(err.contains("attributes.code"), "{what}: no path: {err}");
            }
        }
    }
}

#[test]
fn sdfg_json_with_long_chains_is_clean() {
    let source = format!(
        "{}    for i in range(N):\n        B[i] = A[i] + 1.0\n",
        PROGRAM
    );
    let path = scratch("json_base.py", &source);
    let out = sdfgc(&["compile", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let base: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let slots: [(&str, Slot); 3] = [
        (
            "loop condition",
            Box::new(|k, s| k == "condition" && s == "i < N"),
        ),
        (
            "loop update",
            Box::new(|k, s| k == "update" && s == "i + 1"),
        ),
        ("subset", Box::new(|k, s| k == "subset" && s == "i")),
    ];
    for (slot, pick) in &slots {
        for kind in KINDS {
            let mut sdfg = base.clone();
            assert!(replace_first(
                &mut sdfg,
                &**pick,
                &chain(kind, "i", 100_000)
            ));
            let path = scratch("chain.json", &sdfg.to_string());
            clean(
                &format!("{slot}, {kind}"),
                &["compile", path.to_str().unwrap()],
            );
        }
    }
    // A tasklet expression nested deeper than the JSON bound, written as
    // text (`serde_json` writes and drops nested values recursively).
    let mut sdfg = base;
    fn set_value(v: &mut Value, with: &Value) -> bool {
        match v {
            Value::Object(map) => {
                if map.contains_key("target") && map.contains_key("value") {
                    map.insert("value".to_owned(), with.clone());
                    return true;
                }
                map.values_mut().any(|i| set_value(i, with))
            }
            Value::Array(items) => items.iter_mut().any(|i| set_value(i, with)),
            _ => false,
        }
    }
    let marker = serde_json::json!({"var": "__deep__"});
    assert!(set_value(&mut sdfg, &marker));
    let deep = format!(
        "{}{{\"var\": \"__in0\"}}{}",
        "{\"binary\": {\"op\": \"add\", \"rhs\": {\"var\": \"__in0\"}, \"lhs\": ".repeat(100_000),
        "}}".repeat(100_000)
    );
    let too_deep = sdfg.to_string().replace(&marker.to_string(), &deep);
    // As deep as SDFG JSON's bound lets a tasklet expression be (each
    // level takes two of its 512 levels), through every pass, the CUDA
    // emitter and a run.
    let deepest = format!(
        "{}{{\"var\": \"__in0\"}}{}",
        "{\"binary\": {\"op\": \"add\", \"rhs\": {\"var\": \"__in0\"}, \"lhs\": ".repeat(240),
        "}}".repeat(240)
    );
    let path = scratch(
        "deepest.json",
        &sdfg.to_string().replace(&marker.to_string(), &deepest),
    );
    for args in [
        vec![
            "compile",
            path.to_str().unwrap(),
            "--backend",
            "cuda",
            "--emit",
            "source",
        ],
        vec!["run", path.to_str().unwrap(), "--symbols", "N=5"],
    ] {
        let out = sdfgc(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    let path = scratch("deep.json", &too_deep);
    let err = clean("deep tasklet", &["compile", path.to_str().unwrap()]);
    assert!(err.contains("nested more than 512 levels"), "{err}");
}

#[test]
fn messages_quoting_long_text_are_short_and_name_the_place() {
    // A program statement the frontend does not take, 60,000 characters
    // long (flat, so it parses).
    let long_tuple = vec!["1"; 20_000].join(", ");
    let source = format!("{PROGRAM}    assert ({long_tuple})\n");
    let path = scratch("long.py", &source);
    let err = clean("python", &["compile", path.to_str().unwrap()]);
    assert!(err.contains("long.py:5:5"), "{err}");
    assert!(err.contains("characters, at line 5 column 5"), "{err}");
    // A DaCe interstate edge whose long condition makes it a state
    // machine.
    let mut sdfg = dace_base();
    let condition = vec!["i < 1"; 10_000].join(" or ");
    fn add_condition(v: &mut Value, text: &str) -> bool {
        match v {
            Value::Object(map) => {
                if map.get("type").and_then(Value::as_str) == Some("InterstateEdge")
                    && let Some(Value::Object(attrs)) = map.get_mut("attributes")
                {
                    attrs.insert(
                        "condition".to_owned(),
                        serde_json::json!({"string_data": text, "language": "Python"}),
                    );
                    return true;
                }
                map.values_mut().any(|i| add_condition(i, text))
            }
            Value::Array(items) => items.iter_mut().any(|i| add_condition(i, text)),
            _ => false,
        }
    }
    assert!(add_condition(&mut sdfg, &condition), "no interstate edge");
    let path = scratch("long.sdfg", &sdfg.to_string());
    let err = clean("dace", &["compile", path.to_str().unwrap()]);
    assert!(err.contains("(89996 characters)"), "{err}");
    assert!(err.contains("edges[0]"), "{err}");
    // SDFG JSON with a long subset that does not parse.
    let long_subset = format!("{} + ]", vec!["i"; 20_000].join(" + "));
    let json = sdfg_ir::examples::all()
        .into_iter()
        .find(|(n, _)| *n == "axpy")
        .map(|(_, make)| make().expect("builds").to_json())
        .expect("axpy");
    let (before, after) = json.split_once("\"subset\": \"").expect("a subset");
    let rest = &after[after.find('"').expect("its end")..];
    let path = scratch(
        "long.json",
        &format!("{before}\"subset\": \"{long_subset}{rest}"),
    );
    let err = clean("json", &["compile", path.to_str().unwrap()]);
    assert!(err.contains("characters; at line 1 column"), "{err}");
    // SDFG JSON with a long value where a name is expected (serde's
    // message), and a long container name (the validator's).
    let long = "x".repeat(60_000);
    let wrong_dtype = json.replacen("\"float64\"", &format!("\"{long}\""), 1);
    let path = scratch("long_dtype.json", &wrong_dtype);
    let err = clean("json dtype", &["compile", path.to_str().unwrap()]);
    assert!(err.contains("(60000 characters)"), "{err}");
    let long_name = json.replacen("\"x\": {", &format!("\"{long}\": {{"), 1);
    assert_ne!(long_name, json, "no container `x`");
    let path = scratch("long_name.json", &long_name);
    let err = clean("json name", &["compile", path.to_str().unwrap()]);
    assert!(err.contains("(60000 characters)"), "{err}");
    // A long `--symbols` list.
    let symbols = vec!["N=1"; 20_000].join(",");
    let golden =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ir/tests/out/offloaded_scale.json");
    let err = clean(
        "symbols",
        &["run", golden.to_str().unwrap(), "--symbols", &symbols],
    );
    assert!(err.contains("(79999 characters)"), "{err}");
    // An `.npy` input whose header is a type nested 60,000 lists deep: the
    // reader's error shows the header whole.
    let header = format!(
        "{{'descr': {}'<f8'{}, 'fortran_order': False, 'shape': (5,), }}",
        "[".repeat(60_000),
        "]".repeat(60_000)
    );
    let mut npy = b"\x93NUMPY\x02\x00".to_vec();
    let padded = header.len() + 1 + (64 - (12 + header.len() + 1) % 64) % 64;
    npy.extend_from_slice(&(padded as u32).to_le_bytes());
    npy.extend_from_slice(header.as_bytes());
    npy.resize(12 + padded - 1, b' ');
    npy.push(b'\n');
    npy.extend_from_slice(&[0; 40]);
    let inputs = std::env::temp_dir().join(format!("sdfgc-chains-npy-{}", std::process::id()));
    std::fs::create_dir_all(&inputs).expect("create the input directory");
    std::fs::write(inputs.join("x.npy"), &npy).expect("write x.npy");
    let err = clean(
        "npy",
        &[
            "run",
            golden.to_str().unwrap(),
            "--symbols",
            "N=5",
            "--inputs",
            inputs.to_str().unwrap(),
        ],
    );
    assert!(err.contains("x.npy"), "{err}");
    assert!(err.contains("characters, "), "{err}");
}
