//! NumPy's elementwise functions, every one the frontend accepts, against
//! NumPy: result dtypes and values, over every dtype, generated from the
//! frontend's own table ([`sdfg_frontend::functions::ELEMENTWISE`]), so a
//! function added there is tested here without a line of test code.
//!
//! The cases are each function of one operand on an array of each dtype,
//! and each function of two operands on two arrays of each dtype, on an
//! array and a Python scalar (either side), and on arrays of a
//! representative set of mixed dtypes. For each case:
//!
//! 1. NumPy says what it makes of the case (`probe.py`: the result's dtype,
//!    or that it refuses the operands, or that they are outside the
//!    function's domain, which is a mistake of this test);
//! 2. the frontend compiles `return np.<f>(...)` alone: it refuses, or the
//!    returned array has a dtype, which must be NumPy's (where NumPy's is
//!    float16, which the IR lacks, float64, as `docs/frontend.md` says);
//!    accepting what NumPy refuses is a failure;
//! 3. the accepted cases are written into corpus-format programs, one per
//!    precision of NumPy's results (each value a row of an output array of
//!    its type), whose outputs the harness compares with NumPy's on the
//!    simulator and, executed, on the emulated GPU.

use sdfg_frontend::functions::{ELEMENTWISE, ElementwiseFunction};
use sdfg_harness::corpus::{self, KernelFile};
use sdfg_ir::DType;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The length of every input array.
const N: usize = 9;

/// Every dtype of the IR.
const DTYPES: [DType; 13] = DType::ALL;

/// Pairs of different dtypes for the functions of two operands: every
/// kind against every other (booleans, signed and unsigned integers,
/// floats, complex numbers), narrower against wider, both orders of some.
const MIXED: [(DType, DType); 16] = [
    (DType::Bool, DType::Int8),
    (DType::Int8, DType::UInt8),
    (DType::UInt8, DType::Int8),
    (DType::UInt8, DType::Int16),
    (DType::Int16, DType::UInt32),
    (DType::Int64, DType::UInt64),
    (DType::UInt16, DType::Float32),
    (DType::Int32, DType::Float32),
    (DType::Float32, DType::Int32),
    (DType::UInt64, DType::Float32),
    (DType::Int8, DType::Float64),
    (DType::Float32, DType::Float64),
    (DType::Float32, DType::Complex64),
    (DType::Float64, DType::Complex64),
    (DType::Int16, DType::Complex64),
    (DType::Bool, DType::Float32),
];

/// Python scalars as operands: an int, a float and a complex number, weak
/// in NumPy 2's promotion (NEP 50). Each is a valid value of every domain
/// an operand of two-operand functions has (a divisor, a shift, an
/// exponent).
const SCALARS: [&str; 3] = ["2", "0.5", "1j"];

/// The values an operand takes, so that NumPy computes finite values
/// without warnings: the function's domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Domain {
    /// Negative, zero and positive values where the dtype has them.
    Any,
    /// Positive values (logarithms, square roots, bases of powers).
    Positive,
    /// Values in [-1, 1] (arc sine and cosine).
    Unit,
    /// Values in (-1, 1) (the inverse hyperbolic tangent).
    OpenUnit,
    /// Values of at least 1 (the inverse hyperbolic cosine).
    AtLeastOne,
    /// Values other than zero, of either sign (divisors).
    Divisor,
    /// Shift counts 0 to 3.
    Shift,
    /// Exponents: 0 to 2 for integers (no negative integer powers, no
    /// overflow), small of either sign otherwise.
    Exponent,
}

/// The domains of a function's operands, by its name: [`Domain::Any`]
/// where nothing is known, so a function added to the table is tested with
/// values of both signs (and a wrong domain shows up as NumPy's warning).
fn domains(name: &str) -> [Domain; 2] {
    use Domain::*;
    match name {
        "sqrt" | "log" | "log2" | "log10" | "log1p" => [Positive, Any],
        "arcsin" | "arccos" => [Unit, Any],
        "arctanh" => [OpenUnit, Any],
        "arccosh" => [AtLeastOne, Any],
        "reciprocal" => [Divisor, Any],
        "divide" | "true_divide" | "floor_divide" | "mod" | "remainder" => [Any, Divisor],
        "left_shift" | "right_shift" => [Any, Shift],
        "power" => [Positive, Exponent],
        _ => [Any, Any],
    }
}

/// Element `i` of an input array of `dtype` in `domain`, as Python (the
/// generated initializer and the probe both evaluate it).
fn formula(dtype: DType, domain: Domain) -> &'static str {
    use Domain::*;
    enum Kind {
        Bool,
        Signed,
        Unsigned,
        Float,
        Complex,
    }
    let kind = if dtype == DType::Bool {
        Kind::Bool
    } else if dtype.is_signed_integer() {
        Kind::Signed
    } else if dtype.is_integer() {
        Kind::Unsigned
    } else if dtype.is_complex() {
        Kind::Complex
    } else {
        Kind::Float
    };
    match (kind, domain) {
        (Kind::Bool, Any | Shift | Exponent | Unit) => "i % 3 == 1",
        (Kind::Bool, Positive | AtLeastOne | Divisor) => "i >= 0",
        (Kind::Bool, OpenUnit) => "i < 0",
        (Kind::Signed, Any) => "i - 4",
        (Kind::Unsigned, Any) => "i",
        (Kind::Signed | Kind::Unsigned, Positive | AtLeastOne) => "i + 1",
        (Kind::Signed, Unit) => "i % 3 - 1",
        (Kind::Unsigned, Unit) => "i % 2",
        (Kind::Signed | Kind::Unsigned, OpenUnit) => "i * 0",
        (Kind::Signed, Divisor) => "(i % 3 + 1) * (1 - 2 * (i % 2))",
        (Kind::Unsigned, Divisor) => "i % 3 + 1",
        (Kind::Signed | Kind::Unsigned, Shift) => "i % 4",
        (Kind::Signed | Kind::Unsigned, Exponent) => "i % 3",
        (Kind::Float, Any | Shift) => "i * 0.55 - 2.3",
        (Kind::Float, Positive) => "i * 0.45 + 0.2",
        (Kind::Float, Unit | OpenUnit) => "i * 0.2 - 0.8",
        (Kind::Float, AtLeastOne) => "i * 0.5 + 1.0",
        (Kind::Float, Divisor) => "(i % 3 + 1) * (1 - 2 * (i % 2)) * 0.75",
        (Kind::Float, Exponent) => "i * 0.3 - 1.2",
        (Kind::Complex, Any | Shift) => "(i * 0.55 - 2.3) + (0.9 - i * 0.3) * 1j",
        (Kind::Complex, Positive) => "(i * 0.45 + 0.2) + (i % 3 - 1) * 0.4j",
        (Kind::Complex, Unit | OpenUnit) => "(i * 0.2 - 0.8) + 0.3j",
        (Kind::Complex, AtLeastOne) => "(i * 0.5 + 1.0) + 0.25j",
        (Kind::Complex, Divisor) => "(i % 3 + 1) * 0.75 + (i % 2) * 0.5j",
        (Kind::Complex, Exponent) => "(i * 0.3 - 1.2) + 0.2j",
    }
}

/// One operand of a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Operand {
    /// An input array.
    Array(DType, Domain),
    /// A Python number, as written.
    Scalar(&'static str),
}

impl Operand {
    /// The parameter name of an array operand.
    fn parameter(self) -> Option<String> {
        match self {
            Operand::Array(t, d) => {
                Some(format!("{}_{}", t.name(), format!("{d:?}").to_lowercase()))
            }
            Operand::Scalar(_) => None,
        }
    }

    /// The operand in a call.
    fn python(self) -> String {
        match self {
            Operand::Array(..) => self.parameter().unwrap_or_default(),
            Operand::Scalar(s) => s.to_owned(),
        }
    }

    /// The operand for `probe.py`.
    fn json(self) -> serde_json::Value {
        match self {
            Operand::Array(t, d) => {
                serde_json::json!({"dtype": t.name(), "formula": formula(t, d)})
            }
            Operand::Scalar(s) => serde_json::json!({"scalar": s}),
        }
    }
}

/// A function applied to operands.
#[derive(Clone, Debug)]
struct Case {
    function: &'static ElementwiseFunction,
    operands: Vec<Operand>,
}

impl Case {
    /// The call, as the generated programs write it.
    fn call(&self) -> String {
        let args: Vec<String> = self.operands.iter().map(|o| o.python()).collect();
        format!("np.{}({})", self.function.name, args.join(", "))
    }

    /// The call with its operands' dtypes, for messages.
    fn describe(&self) -> String {
        let args: Vec<String> = self
            .operands
            .iter()
            .map(|o| match o {
                Operand::Array(t, _) => format!("{} array", t.name()),
                Operand::Scalar(s) => (*s).to_owned(),
            })
            .collect();
        format!("np.{}({})", self.function.name, args.join(", "))
    }

    /// The arrays the case reads, without repetition.
    fn arrays(&self) -> Vec<Operand> {
        let mut a: Vec<Operand> = self
            .operands
            .iter()
            .copied()
            .filter(|o| matches!(o, Operand::Array(..)))
            .collect();
        a.sort();
        a.dedup();
        a
    }
}

/// Every case: each function on each dtype, with scalars, and on the
/// mixed pairs.
fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for function in ELEMENTWISE {
        let [d0, d1] = domains(function.name);
        let case = |operands: Vec<Operand>| Case { function, operands };
        for t in DTYPES {
            if function.operands == 1 {
                out.push(case(vec![Operand::Array(t, d0)]));
                continue;
            }
            out.push(case(vec![Operand::Array(t, d0), Operand::Array(t, d1)]));
            for s in SCALARS {
                out.push(case(vec![Operand::Array(t, d0), Operand::Scalar(s)]));
                out.push(case(vec![Operand::Scalar(s), Operand::Array(t, d1)]));
            }
        }
        if function.operands == 2 {
            for (a, b) in MIXED {
                out.push(case(vec![Operand::Array(a, d0), Operand::Array(b, d1)]));
            }
        }
    }
    out
}

/// What NumPy makes of a case.
#[derive(Clone, Debug, PartialEq, Eq)]
enum NumPy {
    /// The result's dtype (its name).
    Dtype(String),
    /// NumPy refuses the operands, with its message.
    Refused(String),
    /// The operands are outside the function's domain.
    Warns(String),
}

/// NumPy's answer to every case, from one run of `probe.py`.
fn probe(cases: &[Case]) -> Vec<NumPy> {
    let request = serde_json::json!({
        "n": N,
        "cases": cases.iter().map(|c| serde_json::json!({
            "function": c.function.name,
            "operands": c.operands.iter().map(|o| o.json()).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    });
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/numpy_functions/probe.py");
    let mut child = Command::new("python3")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(request.to_string().as_bytes())
        .expect("the request is written");
    let out = child.wait_with_output().expect("probe.py finishes");
    assert!(
        out.status.success(),
        "probe.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answers: Vec<serde_json::Value> =
        serde_json::from_slice(&out.stdout).expect("probe.py writes JSON");
    assert_eq!(answers.len(), cases.len());
    answers
        .iter()
        .map(|a| {
            let text = |k: &str| a.get(k).and_then(|v| v.as_str()).map(str::to_owned);
            if let Some(d) = text("dtype") {
                NumPy::Dtype(d)
            } else if let Some(why) = text("refused") {
                NumPy::Refused(why)
            } else {
                NumPy::Warns(text("warns").unwrap_or_default())
            }
        })
        .collect()
}

/// The head of every generated file: imports and the symbol.
const HEAD: &str =
    "import numpy as np\nimport dace as dc\n\nN = dc.symbol(\"N\", dtype=dc.int64)\n";

/// The parameters of the arrays `cases` read, sorted, without repetition.
fn inputs<'c>(cases: impl IntoIterator<Item = &'c Case>) -> Vec<(String, DType, Domain)> {
    let mut arrays: Vec<Operand> = cases.into_iter().flat_map(Case::arrays).collect();
    arrays.sort();
    arrays.dedup();
    arrays
        .into_iter()
        .filter_map(|a| match a {
            Operand::Array(t, d) => Some((a.parameter()?, t, d)),
            Operand::Scalar(_) => None,
        })
        .collect()
}

/// The frontend's answer to one case alone: the dtype of the array
/// `return np.<f>(...)` returns, or its refusal.
fn frontend(case: &Case) -> Result<DType, String> {
    let params: Vec<String> = inputs([case])
        .iter()
        .map(|(p, t, _)| format!("{p}: dc.{}[N]", t.name()))
        .collect();
    let text = format!(
        "{HEAD}\n\n@dc.program\ndef kernel({}):\n    return {}\n",
        params.join(", "),
        case.call()
    );
    let module = sdfg_frontend::Module::parse("case.py", &text).map_err(|e| e.to_string())?;
    let sdfg = module.compile("kernel").map_err(|e| e.to_string())?;
    sdfg.containers
        .get("__return")
        .map(|d| d.dtype)
        .ok_or_else(|| "no returned value".to_owned())
}

/// The dtype NumPy's answer is read as: its own, except float16, which
/// the IR lacks; those results are computed in float64, as DaCe computes
/// them (`docs/frontend.md`).
fn expected(numpy: &str) -> &str {
    if numpy == "float16" { "float64" } else { numpy }
}

/// How closely a value can be compared with NumPy's: its result type's
/// precision. NumPy's float16 results are within half a float16 unit of
/// the exact value, float32 ones within a few float32 units.
fn tolerance(numpy: &str) -> (&'static str, f64) {
    match numpy {
        "float16" => ("half", 1e-3),
        "float32" | "complex64" => ("single", 1e-5),
        _ => ("double", 1e-12),
    }
}

/// The most cases one generated program computes (the emulated GPU's
/// compile time grows with the program; fewer, larger programs share the
/// fixed cost of its headers).
const CASES_PER_PROGRAM: usize = 400;

/// One generated corpus-format program: each case's value written into a
/// row of an output array of its result type (`out_float64[3] =
/// np.sqrt(...)`), the same assignment on both sides, so NumPy's value is
/// converted only where its type is float16 (exactly, into float64).
struct Program {
    name: String,
    tolerance: f64,
    /// The cases, by output array, in row order.
    rows: BTreeMap<String, Vec<Case>>,
}

impl Program {
    fn text(&self) -> String {
        let cases = self.rows.values().flatten();
        let inputs = inputs(cases);
        let mut params: Vec<String> = inputs
            .iter()
            .map(|(p, t, _)| format!("{p}: dc.{}[N]", t.name()))
            .collect();
        for (dtype, rows) in &self.rows {
            params.push(format!("out_{dtype}: dc.{dtype}[{}, N]", rows.len()));
        }
        let mut s = format!(
            "\"\"\"Generated by crates/harness/tests/numpy_functions: NumPy's elementwise functions.\"\"\"\n{HEAD}\n\n@dc.program\ndef kernel({}):\n",
            params.join(", ")
        );
        for (dtype, rows) in &self.rows {
            for (k, c) in rows.iter().enumerate() {
                let _ = writeln!(s, "    out_{dtype}[{k}] = {}", c.call());
            }
        }
        let params: Vec<String> = inputs
            .iter()
            .map(|(p, t, _)| format!("{p}: dc.{}[N]", t.name()))
            .collect();
        let _ = write!(
            s,
            "\n\n@dc.program\ndef initialize({}):\n    for i in dc.map[0:N]:\n",
            params.join(", ")
        );
        for (p, t, d) in &inputs {
            let _ = writeln!(s, "        {p}[i] = {}", formula(*t, *d));
        }
        let outputs: Vec<String> = self.rows.keys().map(|d| format!("\"out_{d}\"")).collect();
        let tol = self.tolerance;
        let _ = write!(
            s,
            "\n\nBENCHMARK = {{\n    \"program\": \"kernel\",\n    \"init\": \"initialize\",\n    \"outputs\": [{}],\n    \"presets\": {{\"test\": {{\"N\": {N}}}}},\n    \"tolerance\": {{\"rtol\": {tol:e}, \"atol\": {tol:e}, \"norm_error\": {tol:e}}},\n}}\n",
            outputs.join(", ")
        );
        s
    }

    /// `why` with the case of each differing output's worst element
    /// named (`` `out_float64` differs: worst element 12 `` is row 1).
    fn explain(&self, why: &str) -> String {
        let mut out = String::new();
        for part in why.split("; ") {
            out.push_str(part);
            let row = self.rows.iter().find_map(|(dtype, rows)| {
                let rest = part
                    .split(&format!("`out_{dtype}` differs: worst element "))
                    .nth(1)?;
                let element: usize = rest.split(' ').next()?.parse().ok()?;
                rows.get(element / N)
            });
            if let Some(c) = row {
                let _ = write!(out, " [{}]", c.describe());
            }
            out.push_str("; ");
        }
        out.trim_end_matches("; ").to_owned()
    }
}

/// A case the frontend computes, with the name of NumPy's result type.
type Accepted<'c> = (&'c Case, &'c str);

/// The accepted cases as programs: one kind of precision each, at most
/// [`CASES_PER_PROGRAM`] cases.
fn programs(accepted: &[Accepted<'_>]) -> Vec<Program> {
    let mut by_precision: BTreeMap<&str, Vec<Accepted<'_>>> = BTreeMap::new();
    for &(c, d) in accepted {
        by_precision.entry(tolerance(d).0).or_default().push((c, d));
    }
    let mut out = Vec::new();
    for (kind, cases) in by_precision {
        for (k, chunk) in cases.chunks(CASES_PER_PROGRAM).enumerate() {
            let mut rows: BTreeMap<String, Vec<Case>> = BTreeMap::new();
            let mut tol = 0.0f64;
            for &(c, d) in chunk {
                tol = tol.max(tolerance(d).1);
                rows.entry(expected(d).to_owned())
                    .or_default()
                    .push(c.clone());
            }
            out.push(Program {
                name: format!("{kind}{k}"),
                tolerance: tol,
                rows,
            });
        }
    }
    out
}

/// Runs the whole comparison: the dtype check of every case here, the
/// values of the generated programs through `run` (the harness's run of
/// one file for one backend) on each of `backends`. Returns the failures.
pub(crate) fn check(
    backends: &[&str],
    run: &dyn Fn(&KernelFile, &str) -> corpus::KernelReport,
) -> Vec<String> {
    let all = cases();
    let numpy = probe(&all);
    let mut failures = Vec::new();
    let mut accepted: Vec<Accepted<'_>> = Vec::new();
    let mut refused = 0;
    for (case, answer) in all.iter().zip(&numpy) {
        let ours = frontend(case);
        match (answer, ours) {
            (NumPy::Warns(why), _) => failures.push(format!(
                "{}: the test's operands are outside the function's domain ({why})",
                case.describe()
            )),
            (NumPy::Refused(_), Err(_)) => {}
            (NumPy::Refused(why), Ok(t)) => failures.push(format!(
                "{}: NumPy refuses it ({why}), the frontend computes a {t}",
                case.describe()
            )),
            (NumPy::Dtype(_), Err(e)) => {
                refused += 1;
                if std::env::var_os("SDFG_SHOW_REFUSED").is_some() {
                    eprintln!("REFUSED {}: {e}", case.describe());
                }
            }
            (NumPy::Dtype(d), Ok(t)) => {
                if t.name() == expected(d) {
                    accepted.push((case, d.as_str()));
                } else {
                    failures.push(format!(
                        "{}: NumPy's dtype is {d}, the frontend's {}",
                        case.describe(),
                        t.name()
                    ));
                }
            }
        }
    }
    eprintln!(
        "{} cases: {} computed, {refused} refused by the frontend where NumPy computes them",
        all.len(),
        accepted.len()
    );
    let dir = std::env::temp_dir().join(format!("sdfg-numpy-functions-{}", std::process::id()));
    let category = dir.join("functions");
    std::fs::create_dir_all(&category).expect("a scratch directory");
    let programs = programs(&accepted);
    let mut files = Vec::new();
    for p in &programs {
        let path = category.join(format!("{}.py", p.name));
        std::fs::write(&path, p.text()).expect("the program is written");
        files.push(KernelFile {
            name: format!("functions/{}", p.name),
            path,
        });
    }
    for backend in backends {
        for (file, program) in files.iter().zip(&programs) {
            let start = std::time::Instant::now();
            let report = run(file, backend);
            eprintln!(
                "{} ({backend}): {:.1} s",
                file.name,
                start.elapsed().as_secs_f64()
            );
            for (stage, s) in &report.stages {
                if let Some(why) = super::failure(&s.verdict) {
                    failures.push(format!(
                        "{} ({backend}) {stage}: {}",
                        file.name,
                        program.explain(&why)
                    ));
                }
            }
        }
    }
    if failures.is_empty() {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        eprintln!("the generated programs are kept in {}", dir.display());
    }
    failures
}
