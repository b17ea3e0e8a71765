//! The `long-chains` target: every reader of text, fed chains of random
//! kinds and lengths (one to a few hundred thousand links), mixed with
//! nesting.
//!
//! A chain is built around an atom, innermost segment first: each segment
//! is one kind of link repeated (`x + a + a ...`, `- - - (x)`,
//! `(x)[0][0]...`, `abs(abs((x)))`, `a if a else ... (x)`), so segments of
//! different kinds nest inside one another. The chain goes where each
//! reader reads text:
//!
//! - program files (the frontend): the right-hand side of a statement of a
//!   program, inside blocks (nested `if`s or an `elif` chain) or a
//!   `dace.map` body, and module-level code;
//! - DaCe's `.sdfg` files (the corpus kernels' SDFGs, exported): tasklet
//!   code (inside nested `if`s or an `elif` chain), interstate
//!   assignments, loop, branch and interstate conditions, and symbolic
//!   strings (ranges);
//! - this project's SDFG JSON: loop conditions, inits and updates,
//!   interstate assignments and branch conditions.
//!
//! Containers' shapes are left out: a shape that overflows 64 bits for the
//! run's symbols (`N**52`) faults the host run when it allocates the
//! container, while a pass may drop the container from the offloaded SDFG,
//! which then runs; the simulator reports that fault as an evaluation
//! error, not as the invalid layout the comparison of runs excuses.
//!
//! Each reader's atom is what the slot held (in parentheses), so short
//! chains often read, lower and run. The properties: no panic, abort,
//! stack overflow or hang (the worker's child process and deadline see
//! those); a clean error, each message at most [`MAX_MESSAGE`] bytes
//! however long the text it quotes; and an SDFG that reads and validates
//! has every property of [`check_sdfg`]. A finding is minimized by halving
//! its segments' lengths, dropping segments and halving its blocks while
//! it persists.

use super::mutate::below;
use super::{Outcome, Worker, check_sdfg, guarded, seed_bytes};
use proptest::prelude::Rng;
use proptest::test_runner::{RngAlgorithm, TestRng};
use sdfg_ir::Sdfg;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Display;
use std::time::{Duration, Instant};

/// The longest an error message may be, whatever text it quotes.
const MAX_MESSAGE: usize = 1024;

/// The most links a chain has, all its segments together.
const MAX_LINKS: usize = 300_000;

/// The most blocks around a statement (nested `if`s: the text grows with
/// the square of their number).
const MAX_BLOCKS: usize = 2_000;

/// Where a chain goes: which reader reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Reader {
    /// A statement of a program (the frontend).
    Program,
    /// Module-level code of a program file.
    ModuleLevel,
    /// Tasklet code in a DaCe file.
    TaskletCode,
    /// An interstate assignment in a DaCe file.
    Assignment,
    /// A loop, branch or interstate condition in a DaCe file.
    Condition,
    /// A symbolic string in a DaCe file (a range, a shape).
    DaceSymbolic,
    /// A symbolic expression or condition in SDFG JSON.
    JsonSymbolic,
}

const READERS: [Reader; 7] = [
    Reader::Program,
    Reader::ModuleLevel,
    Reader::TaskletCode,
    Reader::Assignment,
    Reader::Condition,
    Reader::DaceSymbolic,
    Reader::JsonSymbolic,
];

/// A kind of link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Add,
    Sub,
    Mul,
    Pow,
    Neg,
    Not,
    Less,
    And,
    Or,
    Subscript,
    Attribute,
    Call,
    Paren,
    IfElse,
}

const KINDS: [Kind; 14] = [
    Kind::Add,
    Kind::Sub,
    Kind::Mul,
    Kind::Pow,
    Kind::Neg,
    Kind::Not,
    Kind::Less,
    Kind::And,
    Kind::Or,
    Kind::Subscript,
    Kind::Attribute,
    Kind::Call,
    Kind::Paren,
    Kind::IfElse,
];

/// One kind of link, repeated.
#[derive(Clone, Copy, Debug)]
struct Segment {
    kind: Kind,
    links: usize,
}

/// One input: where its chain goes and what the chain is made of.
#[derive(Clone, Debug)]
struct Input {
    reader: Reader,
    /// The base (program template, DaCe file or JSON SDFG) and its slot.
    base: usize,
    slot: usize,
    /// The chain's segments, innermost first.
    segments: Vec<Segment>,
    /// Blocks around the statement (programs and tasklet code).
    blocks: usize,
    /// Whether the blocks are an `elif` chain rather than nested `if`s.
    elifs: bool,
}

/// A file with places for chains: a JSON document and, per reader, the
/// JSON pointers of its strings that reader reads.
struct Base {
    name: String,
    json: Value,
    slots: BTreeMap<Reader, Vec<String>>,
}

/// The program templates: a statement whose right-hand side is the chain
/// (`{chain}`, in a body indented by `{indent}`), and the chain's atom.
const PROGRAMS: [(&str, &str); 3] = [
    ("{indent}B[:] = {chain}\n", "A"),
    (
        "{indent}for i in dace.map[0:N]:\n{indent}    B[i] = {chain}\n",
        "A[i]",
    ),
    ("{indent}s[0] = {chain}\n", "N"),
];

const PROGRAM_HEAD: &str = "import dace\nimport numpy as np\nN = dace.symbol('N')\n{module}@dace.program\ndef kernel(A: dace.float64[N], B: dace.float64[N], s: dace.int64[1]):\n";

/// `atom` inside the chain of `segments`; `call` is the text around a
/// call's argument in this reader's language.
fn chain(atom: &str, segments: &[Segment], call: (&str, &str)) -> String {
    let mut e = atom.to_owned();
    for s in segments {
        let n = s.links;
        let binary = |op: &str| format!("({e}){}", format!(" {op} {atom}").repeat(n));
        e = match s.kind {
            Kind::Add => binary("+"),
            Kind::Sub => binary("-"),
            Kind::Mul => binary("*"),
            Kind::Pow => binary("**"),
            Kind::Less => binary("<"),
            Kind::And => binary("and"),
            Kind::Or => binary("or"),
            Kind::Neg => format!("{}({e})", "- ".repeat(n)),
            Kind::Not => format!("{}({e})", "not ".repeat(n)),
            Kind::Subscript => format!("({e}){}", "[0]".repeat(n)),
            Kind::Attribute => format!("({e}){}", ".real".repeat(n)),
            Kind::Call => format!("{}{e}{}", call.0.repeat(n), call.1.repeat(n)),
            Kind::Paren => format!("{}{e}{}", "(".repeat(n), ")".repeat(n)),
            Kind::IfElse => format!("{}({e})", format!("{atom} if {atom} else ").repeat(n)),
        };
    }
    e
}

/// `statement` (lines indented by four spaces) inside `blocks` blocks
/// testing `test`: nested `if`s, or an `if` with an `elif` chain whose
/// `else` holds it.
fn in_blocks(statement: &str, indent: &str, blocks: usize, elifs: bool, test: &str) -> String {
    let mut out = String::new();
    let body = |depth: usize| format!("{indent}{}", "    ".repeat(depth));
    if elifs && blocks > 0 {
        out += &format!("{indent}if {test}:\n{indent}    pass\n");
        for _ in 1..blocks {
            out += &format!("{indent}elif {test}:\n{indent}    pass\n");
        }
        out += &format!("{indent}else:\n");
        out += &statement.replace("{indent}", &body(1));
        return out;
    }
    for d in 0..blocks {
        out += &format!("{}if {test}:\n", body(d));
    }
    out + &statement.replace("{indent}", &body(blocks))
}

/// The text of `input`.
fn text_of(input: &Input, bases: &[Base]) -> String {
    let python = ("abs(", ")");
    match input.reader {
        Reader::Program | Reader::ModuleLevel => {
            let (statement, atom) = PROGRAMS[input.base % PROGRAMS.len()];
            if input.reader == Reader::ModuleLevel {
                let module = format!("x = {}\n", chain("1", &input.segments, python));
                let body = statement
                    .replace("{chain}", atom)
                    .replace("{indent}", "    ");
                return PROGRAM_HEAD.replace("{module}", &module) + &body;
            }
            let statement = statement.replace("{chain}", &chain(atom, &input.segments, python));
            PROGRAM_HEAD.replace("{module}", "")
                + &in_blocks(&statement, "    ", input.blocks, input.elifs, "N > 1")
        }
        reader => {
            let base = &bases[input.base % bases.len()];
            let slots = &base.slots[&reader];
            let pointer = &slots[input.slot % slots.len()];
            let mut json = base.json.clone();
            if let Some(Value::String(s)) = json.pointer_mut(pointer) {
                *s = slot_text(reader, s, input);
            }
            json.to_string()
        }
    }
}

/// The chain of `input` in place of `original`, the text of a slot read
/// by `reader`.
fn slot_text(reader: Reader, original: &str, input: &Input) -> String {
    let atom = format!("({original})");
    match reader {
        Reader::TaskletCode => {
            // The first assignment's value becomes the chain's atom; the
            // code around it stays.
            let lines: Vec<&str> = original.lines().collect();
            let Some(k) = lines.iter().position(|l| assignment(l).is_some()) else {
                return original.to_owned();
            };
            let (target, value) = assignment(lines[k]).unwrap_or_default();
            let statement = format!(
                "{{indent}}{target} = {}\n",
                chain(&format!("({value})"), &input.segments, ("abs(", ")"))
            );
            let mut code = String::new();
            for (i, line) in lines.iter().enumerate() {
                if i == k {
                    code += &in_blocks(&statement, "", input.blocks, input.elifs, "1 > 0");
                } else {
                    code += line;
                    code.push('\n');
                }
            }
            code
        }
        Reader::JsonSymbolic => chain(&atom, &input.segments, ("max(", ", 0)")),
        _ => chain(&atom, &input.segments, ("int_floor(", ", 1)")),
    }
}

/// `target = value` of an unindented line of tasklet code.
fn assignment(line: &str) -> Option<(&str, &str)> {
    if line.starts_with(char::is_whitespace) {
        return None;
    }
    let (target, value) = line.split_once(" = ")?;
    let plain = target
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '[' || c == ']' || c == ',');
    plain.then_some((target, value))
}

/// A message: at most [`MAX_MESSAGE`] bytes, or a finding.
fn bounded(message: impl Display) -> Outcome {
    let m = message.to_string();
    if m.len() <= MAX_MESSAGE {
        return Outcome::Refused;
    }
    let head: String = m.chars().take(300).collect();
    Outcome::Finding(format!(
        "a message of {} bytes (at most {MAX_MESSAGE}): {head}…",
        m.len()
    ))
}

/// The properties of an SDFG read from a file: a clean refusal with short
/// messages, or [`check_sdfg`]'s.
fn check_read(sdfg: Sdfg) -> Outcome {
    match sdfg_ir::validate(&sdfg) {
        Ok(_) => check_sdfg(&sdfg),
        Err(errors) => errors
            .0
            .iter()
            .map(bounded)
            .find(|o| matches!(o, Outcome::Finding(_)))
            .unwrap_or(Outcome::Refused),
    }
}

/// Checks the text of an input read by `reader`.
fn check(reader: Reader, text: &str) -> Outcome {
    match reader {
        Reader::Program | Reader::ModuleLevel => {
            let module = match sdfg_frontend::Module::parse("chain.py", text) {
                Ok(m) => m,
                Err(e) => return bounded(e),
            };
            let mut outcome = Outcome::Refused;
            for program in module.programs() {
                match module.compile(&program.name) {
                    Ok(sdfg) => match check_sdfg(&sdfg) {
                        Outcome::Finding(f) => return Outcome::Finding(f),
                        Outcome::Passed => outcome = Outcome::Passed,
                        Outcome::Refused => {}
                    },
                    Err(e) if matches!(e.kind, sdfg_frontend::ErrorKind::Invalid(_)) => {
                        return Outcome::Finding(format!("internal error of the frontend: {e}"));
                    }
                    Err(e) => {
                        if let Outcome::Finding(f) = bounded(e) {
                            return Outcome::Finding(f);
                        }
                    }
                }
            }
            outcome
        }
        Reader::JsonSymbolic => match Sdfg::from_json(text) {
            Ok(sdfg) => check_read(sdfg),
            Err(e) => bounded(e),
        },
        _ => match sdfg_dace_format::from_dace_str(text) {
            Ok(sdfg) => check_read(sdfg),
            Err(e) => bounded(e),
        },
    }
}

/// The JSON pointer of every string in `v` with the keys above it.
fn strings(v: &Value, here: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    let pointer = |path: &[String]| {
        path.iter()
            .map(|k| format!("/{}", k.replace('~', "~0").replace('/', "~1")))
            .collect::<String>()
    };
    match v {
        Value::String(_) => out.push((here.clone(), pointer(here))),
        Value::Object(map) => {
            for (k, x) in map {
                here.push(k.clone());
                strings(x, here, out);
                here.pop();
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                here.push(i.to_string());
                strings(x, here, out);
                here.pop();
            }
        }
        _ => {}
    }
}

/// Which reader of a DaCe file reads the string at `path`, if one this
/// target feeds.
fn dace_reader(json: &Value, path: &[String]) -> Option<Reader> {
    let key = |k: usize| path.len().checked_sub(k).map(|i| path[i].as_str());
    let parent = |k: usize| -> Option<&Value> {
        let p: String = path[..path.len().checked_sub(k)?]
            .iter()
            .map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1")))
            .collect();
        json.pointer(&p)
    };
    match (key(3), key(2), key(1)) {
        // A tasklet's code: `.../attributes/code/string_data` of a node
        // of type `Tasklet`.
        (Some("attributes"), Some("code"), Some("string_data"))
            if parent(3)
                .and_then(|n| n.get("type"))
                .and_then(Value::as_str)
                == Some("Tasklet") =>
        {
            Some(Reader::TaskletCode)
        }
        (_, Some("assignments"), _) => Some(Reader::Assignment),
        (_, Some("loop_condition" | "condition"), Some("string_data")) => Some(Reader::Condition),
        // A branch's condition: `branches/K/0/string_data`.
        (Some(_), Some("0"), Some("string_data")) if key(4) == Some("branches") => {
            Some(Reader::Condition)
        }
        (_, _, Some("start" | "end" | "step")) if path.iter().any(|p| p == "ranges") => {
            Some(Reader::DaceSymbolic)
        }
        _ => None,
    }
}

/// Whether the string at `path` of SDFG JSON is a symbolic expression or
/// condition this target feeds.
fn json_symbolic(path: &[String]) -> bool {
    let key = |k: usize| path.len().checked_sub(k).map(|i| path[i].as_str());
    matches!(key(1), Some("condition" | "init" | "update"))
        || (key(3) == Some("assignments") && key(1) == Some("value"))
        || (key(3) == Some("branches") && key(1) == Some("0"))
}

/// The DaCe files and SDFG JSON of the corpus kernels, with their slots.
fn bases(sources: &[(String, String)]) -> (Vec<Base>, Vec<Base>) {
    let mut dace = Vec::new();
    let mut json = Vec::new();
    for (path, text) in sources {
        let Ok(module) = sdfg_frontend::Module::parse(path, text) else {
            continue;
        };
        let Some(sdfg) =
            sdfg_harness::default_program(&module).and_then(|n| module.compile(&n).ok())
        else {
            continue;
        };
        let add = |out: &mut Vec<Base>,
                   doc: Value,
                   classify: &dyn Fn(&Value, &[String]) -> Option<Reader>| {
            let mut all = Vec::new();
            strings(&doc, &mut Vec::new(), &mut all);
            let mut slots: BTreeMap<Reader, Vec<String>> = BTreeMap::new();
            for (p, pointer) in all {
                if let Some(r) = classify(&doc, &p) {
                    slots.entry(r).or_default().push(pointer);
                }
            }
            out.push(Base {
                name: path.clone(),
                json: doc,
                slots,
            });
        };
        if let Some(doc) = sdfg_dace_format::to_dace_string(&sdfg)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
        {
            add(&mut dace, doc, &dace_reader);
        }
        if let Ok(doc) = serde_json::from_str(&sdfg.to_json()) {
            add(&mut json, doc, &|_, p| {
                json_symbolic(p).then_some(Reader::JsonSymbolic)
            });
        }
    }
    (dace, json)
}

/// A number of links from 1 to `max`, as often below 10 as between 10,000
/// and 100,000 (uniform in its logarithm).
fn links(rng: &mut TestRng, max: usize) -> usize {
    let unit = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    ((max as f64).powf(unit) as usize).clamp(1, max)
}

/// A random input for `reader`, or `None` where no base has a slot for it.
fn input(rng: &mut TestRng, reader: Reader, dace: &[Base], json: &[Base]) -> Option<Input> {
    let bases = match reader {
        Reader::Program | Reader::ModuleLevel => None,
        Reader::JsonSymbolic => Some(json),
        _ => Some(dace),
    };
    let (base, slot) = match bases {
        None => (below(rng, PROGRAMS.len()), 0),
        Some(bases) => {
            let with: Vec<usize> = (0..bases.len())
                .filter(|&i| bases[i].slots.get(&reader).is_some_and(|s| !s.is_empty()))
                .collect();
            if with.is_empty() {
                return None;
            }
            let b = with[below(rng, with.len())];
            (b, below(rng, bases[b].slots[&reader].len()))
        }
    };
    let mut segments = Vec::new();
    let mut left = links(rng, MAX_LINKS);
    for _ in 0..1 + below(rng, 3) {
        if left == 0 {
            break;
        }
        let n = links(rng, left);
        segments.push(Segment {
            kind: KINDS[below(rng, KINDS.len())],
            links: n,
        });
        left -= n;
    }
    let statements = matches!(reader, Reader::Program | Reader::TaskletCode);
    let blocks = if statements && below(rng, 3) == 0 {
        links(rng, MAX_BLOCKS)
    } else {
        0
    };
    Some(Input {
        reader,
        base,
        slot,
        segments,
        blocks,
        elifs: below(rng, 2) == 0,
    })
}

/// Smaller inputs than `input`: each segment's links halved, each segment
/// dropped, the blocks halved.
fn smaller(input: &Input) -> Vec<Input> {
    let mut out = Vec::new();
    for i in 0..input.segments.len() {
        if input.segments[i].links > 1 {
            let mut c = input.clone();
            c.segments[i].links /= 2;
            out.push(c);
        }
        if input.segments.len() > 1 {
            let mut c = input.clone();
            c.segments.remove(i);
            out.push(c);
        }
    }
    if input.blocks > 0 {
        let mut c = input.clone();
        c.blocks /= 2;
        out.push(c);
    }
    out
}

/// A description of `input` for a finding.
fn describe(input: &Input, dace: &[Base], json: &[Base]) -> String {
    let place = match input.reader {
        Reader::Program | Reader::ModuleLevel => {
            format!("program template {}", input.base % PROGRAMS.len())
        }
        reader => {
            let bases = if reader == Reader::JsonSymbolic {
                json
            } else {
                dace
            };
            let b = &bases[input.base % bases.len()];
            let slots = &b.slots[&reader];
            format!("{} at {}", b.name, slots[input.slot % slots.len()])
        }
    };
    let segments: Vec<String> = input
        .segments
        .iter()
        .map(|s| format!("{:?} x {}", s.kind, s.links))
        .collect();
    format!(
        "{:?} ({place}): segments {} (innermost first), {} blocks{}",
        input.reader,
        segments.join(", "),
        input.blocks,
        if input.elifs { " (an elif chain)" } else { "" }
    )
}

impl Worker {
    /// The `long-chains` target (see the module docs).
    pub(super) fn long_chains(
        &mut self,
        seed: u64,
        sources: &[(String, String)],
    ) -> Option<String> {
        let (dace, json) = bases(sources);
        let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes(seed ^ 0xc4a1));
        let mut by_reader: BTreeMap<Reader, (usize, usize)> = BTreeMap::new();
        let mut finding = None;
        while self.running() {
            let reader = READERS[below(&mut rng, READERS.len())];
            let Some(input) = input(&mut rng, reader, &dace, &json) else {
                continue;
            };
            let text = text_of(
                &input,
                if reader == Reader::JsonSymbolic {
                    &json
                } else {
                    &dace
                },
            );
            self.note(&text);
            let outcome = guarded(|| check(reader, &text));
            self.count(&outcome);
            let entry = by_reader.entry(reader).or_default();
            entry.0 += 1;
            if matches!(outcome, Outcome::Passed) {
                entry.1 += 1;
            }
            let Outcome::Finding(first) = outcome else {
                continue;
            };
            // Minimize: the first smaller input that still finds, while
            // there is one.
            let (mut best, mut why) = (input, first);
            let stop = Instant::now() + Duration::from_secs(60);
            'shrink: while Instant::now() < stop {
                for candidate in smaller(&best) {
                    let t = text_of(
                        &candidate,
                        if reader == Reader::JsonSymbolic {
                            &json
                        } else {
                            &dace
                        },
                    );
                    self.note(&t);
                    if let Outcome::Finding(w) = guarded(|| check(reader, &t)) {
                        (best, why) = (candidate, w);
                        continue 'shrink;
                    }
                }
                break;
            }
            let t = text_of(
                &best,
                if reader == Reader::JsonSymbolic {
                    &json
                } else {
                    &dace
                },
            );
            let file = self.dir.join("long-chains.finding.input");
            let _ = std::fs::write(&file, &t);
            let head: String = t.chars().take(2_000).collect();
            finding = Some(format!(
                "{why}\n--- {} (written to {}) ---\n{head}",
                describe(&best, &dace, &json),
                file.display()
            ));
            break;
        }
        let counts: Vec<String> = by_reader
            .iter()
            .map(|(r, (n, passed))| format!("{r:?} {n} ({passed} passed)"))
            .collect();
        println!("long-chains by reader: {}", counts.join(", "));
        finding
    }
}
