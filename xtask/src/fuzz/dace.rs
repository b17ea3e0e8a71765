//! The `dace-mutants` target: DaCe's own SDFGs of the corpus kernels,
//! mutated, read as `sdfgc` reads a `.sdfg` file
//! ([`sdfg_dace_format::from_dace_str`]).
//!
//! The files are the ones kept in `crates/dace-format/tests/fixtures`
//! (every `.sdfg` and `.sdfgz` there: DaCe's SDFGs of a few corpus kernels
//! as lowered, after `apply_gpu_transformations()` and after
//! `auto_optimize(..., GPU)`, and DaCe's SDFGs of programs outside the
//! corpus), and, where `cargo xtask dace-sdfg` ran with DaCe installed,
//! the same three variants of every corpus kernel in
//! `target/dace-sdfg/own`. CI fuzzes before DaCe is installed, so the kept
//! files are what it fuzzes.
//!
//! Each input is one file with one to three mutations: the structural ones
//! of every JSON target ([`mutate::json_mutations`]) and ones aimed at what
//! DaCe writes ([`dace_mutation`]): a region's `start_block` past the end,
//! negative, null, a string, or another block; blocks, dataflow nodes and
//! edges removed, repeated or rewired; symbolic strings and code (tasklets,
//! conditions, loop statements, interstate assignments) replaced by
//! extreme or malformed text; storage, schedule, type and lifetime names
//! replaced by other or unknown ones.
//!
//! The import may refuse an input, by name, and the validator may refuse
//! what it makes; what validates goes through [`check_sdfg`] like every
//! other target, and its export must import back valid. Before mutating,
//! each file is checked unchanged, and each GPU variant of a kernel that
//! runs must compute the lowered variant's outputs on the same arguments
//! (a file read wrongly is found there, not only a crash). A finding is
//! minimized by dropping mutations, as for `json-mutants`, and the mutant
//! written to `target/fuzz/dace-mutants.finding.sdfg`.

use super::mutate::{self, Edit, Mutation, Step, below, pick};
use super::{Outcome, Worker, arguments, check_sdfg, differ, guarded, run_once, seed_bytes};
use proptest::test_runner::{RngAlgorithm, TestRng};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where the kept DaCe files are, under the repository's root.
const FIXTURES: &str = "crates/dace-format/tests/fixtures";

/// The suffixes of DaCe's variants of one kernel (`dace_to_sdfg.py`),
/// the lowered one first; `.sdfgz` for the kept, compressed files.
const VARIANTS: [&str; 3] = [".dace", ".dace.gpu", ".dace.auto-gpu"];

/// One DaCe file and the places in it that DaCe-specific mutations aim at.
struct Base {
    /// The file's name (relative to the root where it is below it).
    name: String,
    value: Value,
    sites: Sites,
}

/// Paths into a file's JSON, by what they hold.
#[derive(Default)]
struct Sites {
    /// Graphs: control-flow regions (the SDFG, loops, branches) and
    /// states.
    graphs: Vec<Graph>,
    /// Symbolic strings: shapes, strides, offsets, subsets, volumes,
    /// symbol mappings, interstate assignments.
    symbolic: Vec<Vec<Step>>,
    /// The text of code blocks (`string_data`).
    code: Vec<Vec<Step>>,
    /// Names of kinds: (path, the property).
    names: Vec<(Vec<Step>, &'static str)>,
}

/// An object with `nodes` and `edges`.
#[derive(Clone)]
struct Graph {
    path: Vec<Step>,
    nodes: usize,
    edges: usize,
    /// A control-flow region (it has a `start_block`), not a state.
    region: bool,
}

/// Keys whose string values (or whose lists' strings) are symbolic.
const SYMBOLIC_KEYS: &[&str] = &[
    "shape",
    "strides",
    "offset",
    "total_size",
    "start",
    "end",
    "step",
    "tile",
    "volume",
    "num_accesses",
    "start_offset",
    "alignment",
];

/// Keys whose object's string values are symbolic: `{symbol: expression}`.
const SYMBOLIC_MAPS: &[&str] = &["assignments", "symbol_mapping"];

/// Keys naming a kind, with the names to put there (DaCe's, and unknown).
const NAMES: &[(&str, &[&str])] = &[
    (
        "storage",
        &[
            "Default",
            "Register",
            "CPU_Heap",
            "CPU_Pinned",
            "CPU_ThreadLocal",
            "GPU_Global",
            "GPU_Shared",
            "FPGA_Global",
            "SoftHier_HBM",
            "",
            "Bogus",
        ],
    ),
    (
        "schedule",
        &[
            "Default",
            "Sequential",
            "CPU_Multicore",
            "CPU_Persistent",
            "GPU_Device",
            "GPU_ThreadBlock",
            "GPU_ThreadBlock_Dynamic",
            "GPU_Persistent",
            "GPU_Warp",
            "MPI",
            "FPGA_Device",
            "Unrolled",
            "",
            "Bogus",
        ],
    ),
    (
        "dtype",
        &[
            "bool",
            "int8",
            "int32",
            "int64",
            "uint8",
            "uint64",
            "float16",
            "float32",
            "float64",
            "complex64",
            "complex128",
            "void",
            "string",
            "",
            "Bogus",
        ],
    ),
    (
        "lifetime",
        &[
            "Scope",
            "State",
            "Persistent",
            "Global",
            "External",
            "Allocated",
            "",
            "Bogus",
        ],
    ),
];

/// Symbolic text at the edges: 64-bit limits and beyond, divisions by
/// zero, DaCe's spellings, malformed text, names nothing defines.
const SYMBOLIC: &[&str] = &[
    "0",
    "-1",
    "1",
    "N",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "2**63",
    "2**64",
    "N**N",
    "N**64",
    "1/0",
    "N/0",
    "N//0",
    "Mod(N, 0)",
    "int_floor(N, 0)",
    "int_ceil(1, 0)",
    "ceiling(N/0)",
    "Min()",
    "Max(N)",
    "Abs(-9223372036854775807 - 1)",
    "(",
    ")",
    "",
    " ",
    "N +",
    "N N",
    "symbol($N, dtype=dace.int64)",
    "$N",
    "$",
    "1.5",
    "1e308",
    "nan",
    "oo",
    "-oo",
    "zoo",
    "True",
    "None",
    "N[0]",
    "a.b",
    "lambda: 1",
    "__import__('os')",
    "\u{e9}",
    "\u{0}",
    "undefined_symbol",
];

/// Code at the edges: malformed, unsupported, overflowing, dividing by
/// zero, reading names nothing defines, never ending.
const CODE: &[&str] = &[
    "",
    "__out = ",
    "__out = 1 / 0",
    "__out = __in1 // 0",
    "__out = __in1 % 0",
    "__out = 9223372036854775807 + 1",
    "__out = -9223372036854775808 // -1",
    "__out = abs(-9223372036854775807 - 1)",
    "__out = 2 ** 64",
    "__out = 2 ** -1",
    "__out = 1e308 * 10",
    "__out = (",
    "while True:\n    pass",
    "import os",
    "__out = __in1[99999999999]",
    "__out = __in1[-1]",
    "__out = -(-(-1))",
    "for i in range(10**18):\n    __out = i",
    "__out = __nonexistent",
    "def f():\n    return 1",
    "__out = __in1 if __in1 else",
    "\t__out = 1",
    "__out = 'text'",
    "__out = [1, 2]",
    "__out = 1j",
    "__out = None",
    "__out = dace.float128(1)",
    "__out = math.nan",
    "__out = __out",
    "__out += 1",
    "pass",
    "return 1",
    "break",
    "__out = min()",
    "__out = max(1)",
    "__out = __in1 @ __in1",
    "__out = 1 < 2 < 3",
    "__out = not",
    "\u{e9} = 1",
    "\u{0}",
    "N",
    "True",
    "N >",
    "i < N and",
    "i <= 9223372036854775807",
    "1/0 > 0",
    "i = i + 9223372036854775807",
];

/// Every `.sdfg` and `.sdfgz` file under `dir`, recursively.
fn dace_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            dace_files(&path, out);
        } else if path
            .extension()
            .is_some_and(|e| e == "sdfg" || e == "sdfgz")
        {
            out.push(path);
        }
    }
}

/// The JSON text of a DaCe file, compressed or not.
fn read_dace(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("`{}`: {e}", path.display()))?;
    if path.extension().is_some_and(|e| e == "sdfgz") {
        sdfg_dace_format::dace_text_from_gz(&bytes)
            .map_err(|e| format!("`{}`: {e}", path.display()))
    } else {
        String::from_utf8(bytes).map_err(|e| format!("`{}`: {e}", path.display()))
    }
}

/// The files to mutate: the kept ones, and DaCe's variants of every
/// corpus kernel that `cargo xtask dace-sdfg` wrote (not this project's
/// offloaded exports, which are in the same folder).
fn bases(root: &Path) -> Result<Vec<Base>, String> {
    let mut files = Vec::new();
    dace_files(&root.join(FIXTURES), &mut files);
    let own = crate::dace_sdfg::own_dir(root);
    let mut written = Vec::new();
    dace_files(&own, &mut written);
    written.retain(|p| {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        VARIANTS
            .iter()
            .any(|v| name.ends_with(&format!("{v}.sdfg")))
    });
    files.extend(written);
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let value: Value = serde_json::from_str(&read_dace(&path)?)
            .map_err(|e| format!("`{}` is not JSON: {e}", path.display()))?;
        let name = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .display()
            .to_string();
        let mut sites = Sites::default();
        find_sites(&value, &mut Vec::new(), None, &mut sites);
        out.push(Base { name, value, sites });
    }
    if out.is_empty() {
        return Err(format!("no DaCe files under `{FIXTURES}`"));
    }
    Ok(out)
}

/// Records the sites of `v` at `path` (`key`: the key that led there).
fn find_sites(v: &Value, path: &mut Vec<Step>, key: Option<&str>, sites: &mut Sites) {
    match v {
        Value::Object(map) => {
            let nodes = map.get("nodes").and_then(Value::as_array);
            let edges = map.get("edges").and_then(Value::as_array);
            if let (Some(nodes), Some(edges)) = (nodes, edges) {
                sites.graphs.push(Graph {
                    path: path.clone(),
                    nodes: nodes.len(),
                    edges: edges.len(),
                    region: map.get("type").and_then(Value::as_str) != Some("SDFGState"),
                });
            }
            if map.contains_key("string_data") {
                let mut p = path.clone();
                p.push(Step::Key("string_data".to_owned()));
                sites.code.push(p);
            }
            for (k, x) in map {
                path.push(Step::Key(k.clone()));
                if x.is_string() {
                    if SYMBOLIC_KEYS.contains(&k.as_str())
                        || key.is_some_and(|parent| SYMBOLIC_MAPS.contains(&parent))
                    {
                        sites.symbolic.push(path.clone());
                    }
                    if let Some((name, _)) = NAMES.iter().find(|(n, _)| n == k) {
                        sites.names.push((path.clone(), name));
                    }
                }
                find_sites(x, path, Some(k), sites);
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                path.push(Step::Index(i));
                if x.is_string() && key.is_some_and(|k| SYMBOLIC_KEYS.contains(&k)) {
                    sites.symbolic.push(path.clone());
                }
                // A list's elements are reached with the list's key.
                find_sites(x, path, key, sites);
                path.pop();
            }
        }
        _ => {}
    }
}

fn at(path: &[Step], more: Step) -> Vec<Step> {
    let mut p = path.to_vec();
    p.push(more);
    p
}

fn set(path: Vec<Step>, value: Value) -> Mutation {
    Mutation {
        path,
        edit: Edit::Set(value),
    }
}

/// The string at `path` in `v`, if any.
fn string_at<'a>(v: &'a Value, path: &[Step]) -> Option<&'a str> {
    let mut x = v;
    for s in path {
        x = match s {
            Step::Key(k) => x.get(k)?,
            Step::Index(i) => x.get(*i)?,
        };
    }
    x.as_str()
}

/// A chain of `n` copies of `term` joined by `op`: long, but far below the
/// lengths that test the parsers' depth limits (another target's work).
fn chain(term: &str, op: &str, n: usize) -> String {
    vec![term; n].join(op)
}

/// One of `items`, if there are any.
fn choose<'a, T>(rng: &mut TestRng, items: &'a [T]) -> Option<&'a T> {
    (!items.is_empty()).then(|| pick(rng, items))
}

/// One mutation aimed at what DaCe writes (`None` where the file has no
/// site of the kind drawn).
fn dace_mutation(rng: &mut TestRng, base: &Base) -> Option<Mutation> {
    let s = &base.sites;
    let index = |rng: &mut TestRng, len: usize| -> Value {
        match below(rng, 6) {
            0 => json!(len.to_string()),
            1 => json!("-1"),
            2 => json!("x"),
            3 => json!(len),
            _ => json!(below(rng, len.max(1)).to_string()),
        }
    };
    let graph = choose(rng, &s.graphs)?.clone();
    Some(match below(rng, 8) {
        // A region's start.
        0 | 1 => {
            let regions: Vec<&Graph> = s.graphs.iter().filter(|g| g.region).collect();
            let region = *choose(rng, &regions)?;
            let len = region.nodes;
            let field = at(&region.path, Step::Key("start_block".to_owned()));
            match below(rng, 11) {
                0 => Mutation {
                    path: field,
                    edit: Edit::Remove,
                },
                1 => set(field, json!(len)),
                2 => set(field, json!(len + 1)),
                3 => set(field, json!(-1)),
                4 => set(field, Value::Null),
                5 => set(field, json!("0")),
                6 => set(field, json!(1.5)),
                7 => set(field, json!(u64::MAX)),
                8 => set(field, json!(i64::MIN)),
                _ => set(field, json!(below(rng, len.max(1)))),
            }
        }
        // A block, a dataflow node or an edge removed or repeated.
        2 => {
            let (list, len) = if below(rng, 2) == 0 {
                ("nodes", graph.nodes)
            } else {
                ("edges", graph.edges)
            };
            if len == 0 {
                return None;
            }
            let list = at(&graph.path, Step::Key(list.to_owned()));
            let item = at(&list, Step::Index(below(rng, len)));
            Mutation {
                path: item,
                edit: if below(rng, 2) == 0 {
                    Edit::Remove
                } else {
                    Edit::Duplicate
                },
            }
        }
        // An edge's end moved.
        3 => {
            if graph.edges == 0 {
                return None;
            }
            let end = if below(rng, 2) == 0 { "src" } else { "dst" };
            let edges = at(&graph.path, Step::Key("edges".to_owned()));
            let edge = at(&edges, Step::Index(below(rng, graph.edges)));
            set(
                at(&edge, Step::Key(end.to_owned())),
                index(rng, graph.nodes),
            )
        }
        // Symbolic text.
        4 | 5 => {
            let path = choose(rng, &s.symbolic)?.clone();
            let original = string_at(&base.value, &path).unwrap_or("N").to_owned();
            let text = match below(rng, 8) {
                0 => format!("{original} + 1"),
                1 => format!("-({original})"),
                2 => format!("({original}) * 9223372036854775807"),
                3 => format!("{original}{original}"),
                4 => chain(&original, " + ", 50),
                _ => (*pick(rng, SYMBOLIC)).to_owned(),
            };
            set(path, json!(text))
        }
        // Code.
        6 => {
            let path = choose(rng, &s.code)?.clone();
            let original = string_at(&base.value, &path).unwrap_or("").to_owned();
            let text = match below(rng, 7) {
                0 => format!("{original}\n{original}"),
                1 => original.replacen('=', "==", 1),
                2 => original
                    .chars()
                    .take(original.chars().count() / 2)
                    .collect(),
                3 => original.replace(|c: char| c.is_ascii_digit(), "9223372036854775807"),
                4 => format!("__out = {}", chain("1", " + ", 100)),
                _ => (*pick(rng, CODE)).to_owned(),
            };
            set(path, json!(text))
        }
        // A kind's name.
        _ => {
            let (path, kind) = choose(rng, &s.names)?.clone();
            let choices = NAMES
                .iter()
                .find(|(n, _)| *n == kind)
                .map_or(&[][..], |(_, c)| *c);
            set(path, json!(*pick(rng, choices)))
        }
    })
}

/// One to three mutations of `base`, DaCe-specific ones two times in three.
fn mutations(rng: &mut TestRng, base: &Base) -> Vec<Mutation> {
    let mut out = Vec::new();
    for _ in 0..1 + below(rng, 3) {
        if below(rng, 3) == 0 {
            out.extend(mutate::json_mutations(rng, &base.value).into_iter().take(1));
        } else if let Some(m) = dace_mutation(rng, base) {
            out.push(m);
        }
    }
    if out.is_empty() {
        out = mutate::json_mutations(rng, &base.value);
    }
    out
}

/// Imports a DaCe file's text as `sdfgc` does and checks what validates:
/// the outcome, and the stage that decided it (for the counts).
fn check(text: &str) -> (Outcome, &'static str) {
    let sdfg = match sdfg_dace_format::from_dace_str(text) {
        Ok(s) => s,
        Err(_) => return (Outcome::Refused, "refused by the import"),
    };
    if sdfg_ir::validate(&sdfg).is_err() {
        return (Outcome::Refused, "refused by the validator");
    }
    // The export of what was read must read back valid (or be refused by
    // name: the export refuses what DaCe cannot hold).
    if let Ok(again) = sdfg_dace_format::to_dace_string(&sdfg) {
        match sdfg_dace_format::from_dace_str(&again) {
            Ok(back) if sdfg_ir::validate(&back).is_ok() => {}
            Ok(_) => {
                return (
                    Outcome::Finding("the export of the import imports back invalid".to_owned()),
                    "findings",
                );
            }
            Err(e) => {
                return (
                    Outcome::Finding(format!("the export of the import does not import: {e}")),
                    "findings",
                );
            }
        }
    }
    match check_sdfg(&sdfg) {
        Outcome::Passed => (Outcome::Passed, "passed"),
        Outcome::Refused => (
            Outcome::Refused,
            "refused later (a pass, or a run's limits or faults)",
        ),
        finding => (finding, "findings"),
    }
}

/// The kernel and variant of a file named as `dace_to_sdfg.py` names it
/// (`polybench__gemm.dace.gpu.sdfg`); `None` for other files.
fn kernel_of(name: &str) -> Option<(&str, usize)> {
    let stem = name
        .strip_suffix(".sdfgz")
        .or_else(|| name.strip_suffix(".sdfg"))?;
    // The longest suffix first: `.dace` ends the others' stems too.
    let mut order: Vec<usize> = (0..VARIANTS.len()).collect();
    order.sort_by_key(|&k| std::cmp::Reverse(VARIANTS[k].len()));
    order
        .into_iter()
        .find_map(|k| stem.strip_suffix(VARIANTS[k]).map(|kernel| (kernel, k)))
}

impl Worker {
    /// The target's loop: the files unchanged, then mutants of them.
    pub(super) fn dace_mutants(
        &mut self,
        seed: u64,
        root: &Path,
    ) -> Result<Option<String>, String> {
        let bases = bases(root)?;
        let own = bases
            .iter()
            .filter(|b| !b.name.starts_with(FIXTURES))
            .count();
        println!(
            "dace-mutants: {} DaCe files ({} kept in the repository, {own} written by `cargo xtask dace-sdfg`)",
            bases.len(),
            bases.len() - own
        );
        if let Some(finding) = self.dace_bases(&bases) {
            return Ok(Some(finding));
        }
        let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes(seed ^ 0xdace));
        while self.running() {
            let base = &bases[below(&mut rng, bases.len())];
            let kept = mutations(&mut rng, base);
            let text = mutate::apply(&base.value, &kept);
            self.note(&text);
            let (outcome, stage) = guarded_check(&text);
            *self.counts.entry(stage).or_default() += 1;
            if let Outcome::Finding(why) = outcome {
                return Ok(Some(self.minimize_dace(base, kept, why)));
            }
        }
        Ok(None)
    }

    /// Every file unchanged: its checks, and each GPU variant of a kernel
    /// against the lowered variant where both run.
    fn dace_bases(&mut self, bases: &[Base]) -> Option<String> {
        let mut lowered: BTreeMap<String, sdfg_ir::Sdfg> = BTreeMap::new();
        for base in bases {
            let text = base.value.to_string();
            self.note(&text);
            let (outcome, stage) = guarded_check(&text);
            *self.counts.entry(stage).or_default() += 1;
            if let Outcome::Finding(why) = outcome {
                return Some(format!("{why}\n--- the unchanged file {} ---", base.name));
            }
            let Some((kernel, variant)) = kernel_of(&base.name) else {
                continue;
            };
            let Ok(sdfg) = sdfg_dace_format::from_dace_str(&text) else {
                continue;
            };
            if sdfg_ir::validate(&sdfg).is_err() {
                continue;
            }
            if variant == 0 {
                lowered.insert(kernel.to_owned(), sdfg);
                continue;
            }
            let Some(host) = lowered.get(kernel) else {
                continue;
            };
            let args = arguments(host);
            let compared = guarded(|| match (run_once(host, &args), run_once(&sdfg, &args)) {
                (Some(Ok(h)), Some(Ok(d))) => match differ(&h.outputs, &d.outputs) {
                    None => Outcome::Passed,
                    Some(what) => Outcome::Finding(format!(
                        "DaCe's variant computes another result than the lowered SDFG: {what}"
                    )),
                },
                _ => Outcome::Refused,
            });
            if let Outcome::Finding(why) = compared {
                return Some(format!("{why}\n--- {} ---", base.name));
            }
        }
        None
    }

    /// Keeps only the mutations a finding needs; writes the mutant.
    fn minimize_dace(&self, base: &Base, mutations: Vec<Mutation>, why: String) -> String {
        let (mut kept, mut why) = (mutations, why);
        let mut i = 0;
        while i < kept.len() {
            let mut fewer = kept.clone();
            fewer.remove(i);
            let text = mutate::apply(&base.value, &fewer);
            self.note(&text);
            match guarded_check(&text).0 {
                Outcome::Finding(w) => {
                    kept = fewer;
                    why = w;
                }
                _ => i += 1,
            }
        }
        let text = mutate::apply(&base.value, &kept);
        let file = self.dir.join("dace-mutants.finding.sdfg");
        let _ = std::fs::write(&file, &text);
        let list: Vec<String> = kept.iter().map(ToString::to_string).collect();
        format!(
            "{why}\n--- {} with these mutations (written to {}) ---\n{}",
            base.name,
            file.display(),
            list.join("\n")
        )
    }
}

/// [`check`] with a panic turned into a finding.
fn guarded_check(text: &str) -> (Outcome, &'static str) {
    let mut stage = "findings";
    let outcome = guarded(|| {
        let (o, s) = check(text);
        stage = s;
        o
    });
    if matches!(outcome, Outcome::Finding(_)) {
        stage = "findings";
    }
    (outcome, stage)
}

#[cfg(test)]
mod tests {
    use super::kernel_of;

    #[test]
    fn files_are_named_by_kernel_and_variant() {
        assert_eq!(
            kernel_of("x/polybench__gemm.dace.sdfgz"),
            Some(("x/polybench__gemm", 0))
        );
        assert_eq!(
            kernel_of("polybench__gemm.dace.gpu.sdfg"),
            Some(("polybench__gemm", 1))
        );
        assert_eq!(
            kernel_of("polybench__gemm.dace.auto-gpu.sdfgz"),
            Some(("polybench__gemm", 2))
        );
        assert_eq!(kernel_of("smooth_and_project.sdfg"), None);
    }
}
