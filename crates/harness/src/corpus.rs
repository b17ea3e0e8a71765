//! The corpus runner: every kernel of `corpus/npbench/` through every stage.
//!
//! For one kernel and one preset the stages are: **parse** the Python file;
//! **compile** the kernel and its initializer with the frontend; **validate**
//! both SDFGs; **json**: round-trip them through JSON exactly; **simulate**:
//! run the initializer and then the kernel on the host in the simulator;
//! **numpy**: run the same file under CPython and NumPy
//! (`corpus/tools/reference.py`) and compare every output within the
//! kernel's tolerance. A stage that cannot run says why ("skipped: python3
//! with NumPy not found"); it never passes silently. A failed stage stops the
//! stages that depend on it, which are reported as skipped with the reason
//! (the NumPy comparison depends only on the host simulation).
//!
//! The offload stages: **offload** runs the offload pass for the simulated
//! accelerator and checks that its output validates, round-trips through
//! JSON and is left unchanged by a second run; **device** runs the
//! initializer on the host and the offloaded kernel on the simulated
//! accelerator (separate memories, every transfer counted) and compares its
//! outputs with the host run's, recording launches, bytes moved between
//! host and device, and the transfer ratio. For the `test` preset the
//! device run also checks every kernel launch for data races
//! ([`Simulator::check_races`]).

use sdfg_ir::{DType, Sdfg};
use sdfg_sim::{Arguments, ArrayValue, RunReport, Simulator, Value};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The stages of every backend, in order.
pub const STAGES: [&str; 8] = [
    "parse", "compile", "validate", "json", "simulate", "offload", "device", "numpy",
];

/// The stages run for `backend`, in order: a code-generating backend adds
/// **lower** (library nodes expanded; the result simulated on the device
/// and compared with the host run), **emit** (the translation unit) and
/// **cc** (compiling it with real compilers) before the NumPy comparison.
pub fn stages(backend: crate::Backend) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = STAGES[..7].to_vec();
    if matches!(backend, crate::Backend::Code(_)) {
        out.extend(["lower", "emit", "cc"]);
    }
    out.push("numpy");
    out
}

/// The outcome of one stage.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "verdict", content = "reason", rename_all = "snake_case")]
pub enum Verdict {
    /// The stage ran and succeeded.
    Pass,
    /// The stage ran and failed, with why.
    Fail(String),
    /// The stage did not run, with why.
    Skip(String),
}

/// One stage's verdict and time.
#[derive(Clone, Debug, Serialize)]
pub struct Stage {
    /// The outcome.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// Wall time in milliseconds.
    pub millis: f64,
}

/// Everything measured for one kernel.
#[derive(Clone, Debug, Serialize)]
pub struct KernelReport {
    /// `category/name`.
    pub kernel: String,
    /// The preset run.
    pub preset: String,
    /// Per stage, in [`STAGES`] order.
    pub stages: Vec<(String, Stage)>,
    /// Kernel launches of the simulated run.
    pub launches: u64,
    /// Bytes moved between host and device.
    pub transfer_bytes: u64,
    /// The lower bound of those bytes.
    pub lower_bound_bytes: u64,
}

impl KernelReport {
    /// Whether no stage failed.
    pub fn passed(&self) -> bool {
        !self
            .stages
            .iter()
            .any(|(_, s)| matches!(s.verdict, Verdict::Fail(_)))
    }
}

/// A kernel file of the corpus.
#[derive(Clone, Debug)]
pub struct KernelFile {
    /// `category/name`.
    pub name: String,
    /// The file.
    pub path: PathBuf,
}

/// Every `corpus/npbench/<category>/<kernel>.py`, sorted by name.
pub fn discover(root: &Path) -> std::io::Result<Vec<KernelFile>> {
    let mut out = Vec::new();
    for category in std::fs::read_dir(root)? {
        let category = category?.path();
        if !category.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&category)? {
            let path = file?.path();
            if path.extension().is_some_and(|e| e == "py") {
                let cat = category.file_name().unwrap_or_default().to_string_lossy();
                let stem = path.file_stem().unwrap_or_default().to_string_lossy();
                out.push(KernelFile {
                    name: format!("{cat}/{stem}"),
                    path,
                });
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Whether `python3` with NumPy can run references: `Ok(())` or why not.
pub fn python_available() -> Result<(), String> {
    match Command::new("python3")
        .args(["-c", "import numpy"])
        .output()
    {
        Ok(o) if o.status.success() => Ok(()),
        Ok(_) => Err("python3 is installed but NumPy is not".to_owned()),
        Err(_) => Err("python3 not found".to_owned()),
    }
}

/// Runs every stage for one kernel, offloading for `backend`'s accelerator
/// (the device stage runs on the simulated accelerator whatever placed the
/// data); `tools` is `corpus/tools`.
pub fn run_kernel(
    kernel: &KernelFile,
    preset: &str,
    backend: crate::Backend,
    tools: &Path,
    python: &Result<(), String>,
) -> KernelReport {
    let accelerator = backend.accelerator();
    let reference_script = &tools.join("reference.py");
    let mut report = KernelReport {
        kernel: kernel.name.clone(),
        preset: preset.to_owned(),
        stages: Vec::new(),
        launches: 0,
        transfer_bytes: 0,
        lower_bound_bytes: 0,
    };
    let mut blocked: Option<String> = None;
    let mut simulate_passed = false;
    let mut stage =
        |report: &mut KernelReport, name: &str, f: &mut dyn FnMut() -> Result<(), Verdict>| {
            let start = Instant::now();
            // The NumPy comparison needs only the host run, not the offload stages.
            let gate = if name == "numpy" && simulate_passed {
                None
            } else {
                blocked.clone()
            };
            let verdict = match gate {
                Some(why) => Verdict::Skip(why),
                None => match f() {
                    Ok(()) => Verdict::Pass,
                    Err(v) => v,
                },
            };
            if name == "simulate" {
                simulate_passed = verdict == Verdict::Pass;
            }
            if blocked.is_none() && !matches!(verdict, Verdict::Pass) {
                blocked = Some(format!("`{name}` did not pass"));
            }
            report.stages.push((
                name.to_owned(),
                Stage {
                    verdict,
                    millis: start.elapsed().as_secs_f64() * 1e3,
                },
            ));
        };
    let fail = |e: &dyn std::fmt::Display| Verdict::Fail(e.to_string());

    let mut module = None;
    stage(&mut report, "parse", &mut || {
        let text = std::fs::read_to_string(&kernel.path).map_err(|e| fail(&e))?;
        module = Some(
            sdfg_frontend::Module::parse(&kernel.path.display().to_string(), &text)
                .map_err(|e| fail(&e))?,
        );
        Ok(())
    });
    let mut meta = None;
    let mut sdfgs: Option<(Sdfg, Option<Sdfg>)> = None;
    stage(&mut report, "compile", &mut || {
        let m = module
            .as_ref()
            .ok_or_else(|| Verdict::Skip("no module".to_owned()))?;
        let md = Metadata::read(m, preset).map_err(Verdict::Fail)?;
        let kernel = m.compile(&md.program).map_err(|e| fail(&e))?;
        let init = match &md.init {
            Some(i) => Some(m.compile(i).map_err(|e| fail(&e))?),
            None => None,
        };
        sdfgs = Some((kernel, init));
        meta = Some(md);
        Ok(())
    });
    stage(&mut report, "validate", &mut || {
        let (k, i) = sdfgs
            .as_ref()
            .ok_or_else(|| Verdict::Skip("nothing compiled".to_owned()))?;
        for s in std::iter::once(k).chain(i) {
            sdfg_ir::validate(s).map_err(|e| fail(&e))?;
        }
        Ok(())
    });
    stage(&mut report, "json", &mut || {
        let (k, i) = sdfgs
            .as_ref()
            .ok_or_else(|| Verdict::Skip("nothing compiled".to_owned()))?;
        for s in std::iter::once(k).chain(i) {
            let text = s.to_json();
            let back = Sdfg::from_json(&text).map_err(|e| fail(&e))?;
            if &back != s || back.to_json() != text {
                return Err(Verdict::Fail(format!(
                    "`{}` changed in a JSON round trip",
                    s.name
                )));
            }
        }
        Ok(())
    });
    let mut outputs = BTreeMap::new();
    let mut run_report = RunReport::default();
    stage(&mut report, "simulate", &mut || {
        let (k, i) = sdfgs
            .as_ref()
            .ok_or_else(|| Verdict::Skip("nothing compiled".to_owned()))?;
        let md = meta
            .as_ref()
            .ok_or_else(|| Verdict::Skip("no metadata".to_owned()))?;
        let (outs, r) = simulate(k, i.as_ref(), md, false).map_err(Verdict::Fail)?;
        outputs = outs;
        run_report = r;
        Ok(())
    });
    let mut offloaded: Option<Sdfg> = None;
    stage(&mut report, "offload", &mut || {
        let (k, _) = sdfgs
            .as_ref()
            .ok_or_else(|| Verdict::Skip("nothing compiled".to_owned()))?;
        let acc = accelerator;
        let options = sdfg_passes::Options::default();
        let (out, _) = sdfg_passes::offload(k, acc, &options).map_err(|e| fail(&e))?;
        sdfg_ir::validate(&out).map_err(|e| fail(&e))?;
        let text = out.to_json();
        let back = Sdfg::from_json(&text).map_err(|e| fail(&e))?;
        if back != out {
            return Err(Verdict::Fail(
                "the offloaded SDFG changed in a JSON round trip".to_owned(),
            ));
        }
        let (again, _) = sdfg_passes::offload(&out, acc, &options).map_err(|e| fail(&e))?;
        if again != out {
            return Err(Verdict::Fail(
                "a second offload changed the SDFG (not idempotent)".to_owned(),
            ));
        }
        offloaded = Some(out);
        Ok(())
    });
    // Device runs of the small `test` preset are checked for data races
    // (the check logs every access, too slow for the large presets).
    let races = preset == "test";
    let mut device_report = RunReport::default();
    stage(&mut report, "device", &mut || {
        let (_, i) = sdfgs
            .as_ref()
            .ok_or_else(|| Verdict::Skip("nothing compiled".to_owned()))?;
        let k = offloaded
            .as_ref()
            .ok_or_else(|| Verdict::Skip("nothing offloaded".to_owned()))?;
        let md = meta
            .as_ref()
            .ok_or_else(|| Verdict::Skip("no metadata".to_owned()))?;
        let (outs, r) = simulate(k, i.as_ref(), md, races).map_err(Verdict::Fail)?;
        for name in &md.outputs {
            let host = outputs
                .get(name)
                .ok_or_else(|| Verdict::Fail(format!("the host run has no output `{name}`")))?;
            let device = outs
                .get(name)
                .ok_or_else(|| Verdict::Fail(format!("the device run has no output `{name}`")))?;
            compare(name, device, host, &md.tolerance).map_err(Verdict::Fail)?;
        }
        device_report = r;
        Ok(())
    });
    if let crate::Backend::Code(target) = backend {
        let mut lowered: Option<Sdfg> = None;
        stage(&mut report, "lower", &mut || {
            let (_, i) = sdfgs
                .as_ref()
                .ok_or_else(|| Verdict::Skip("nothing compiled".to_owned()))?;
            let mut k = offloaded
                .clone()
                .ok_or_else(|| Verdict::Skip("nothing offloaded".to_owned()))?;
            let md = meta
                .as_ref()
                .ok_or_else(|| Verdict::Skip("no metadata".to_owned()))?;
            sdfg_passes::lower_library_nodes(&mut k, target.dialect).map_err(|e| fail(&e))?;
            let (outs, _) = simulate(&k, i.as_ref(), md, races).map_err(Verdict::Fail)?;
            for name in &md.outputs {
                let host = outputs
                    .get(name)
                    .ok_or_else(|| Verdict::Fail(format!("the host run has no output `{name}`")))?;
                let device = outs.get(name).ok_or_else(|| {
                    Verdict::Fail(format!("the lowered run has no output `{name}`"))
                })?;
                compare(name, device, host, &md.tolerance).map_err(Verdict::Fail)?;
            }
            lowered = Some(k);
            Ok(())
        });
        let mut source_path: Option<PathBuf> = None;
        stage(&mut report, "emit", &mut || {
            let k = lowered
                .as_ref()
                .ok_or_else(|| Verdict::Skip("nothing lowered".to_owned()))?;
            let unit = sdfg_codegen::emit(k, target.dialect).map_err(|e| fail(&e))?;
            let dir = std::env::temp_dir().join(format!(
                "sdfg-emit-{}-{}",
                std::process::id(),
                target.name
            ));
            std::fs::create_dir_all(&dir).map_err(|e| fail(&e))?;
            let path = dir.join(format!(
                "{}.{}",
                kernel.name.replace('/', "_"),
                target.dialect.source_extension()
            ));
            std::fs::write(&path, &unit.source).map_err(|e| fail(&e))?;
            source_path = Some(path);
            Ok(())
        });
        stage(&mut report, "cc", &mut || {
            let path = source_path
                .as_ref()
                .ok_or_else(|| Verdict::Skip("nothing emitted".to_owned()))?;
            let check = match target.name {
                "hip" => crate::toolchain::check_hip(path, tools),
                "cuda" => crate::toolchain::check_cuda(path, tools),
                other => crate::toolchain::Check::Missing(format!(
                    "no compile check is known for the `{other}` backend"
                )),
            };
            match check {
                crate::toolchain::Check::Passed => {
                    let _ = std::fs::remove_file(path);
                    Ok(())
                }
                crate::toolchain::Check::Failed(why) => Err(Verdict::Fail(why)),
                crate::toolchain::Check::Missing(why) => Err(Verdict::Skip(why)),
            }
        });
    }
    report.launches = device_report.launches;
    report.transfer_bytes = device_report.transfer_bytes();
    report.lower_bound_bytes = device_report.lower_bound_bytes;
    stage(&mut report, "numpy", &mut || {
        python
            .clone()
            .map_err(|why| Verdict::Skip(format!("NumPy reference not run: {why}")))?;
        let md = meta
            .as_ref()
            .ok_or_else(|| Verdict::Skip("no metadata".to_owned()))?;
        let dir = std::env::temp_dir().join(format!(
            "sdfg-corpus-{}-{}",
            std::process::id(),
            kernel.name.replace('/', "_")
        ));
        let out = Command::new("python3")
            .arg(reference_script)
            .arg(&kernel.path)
            .args(["--preset", preset, "--out"])
            .arg(&dir)
            .output()
            .map_err(|e| fail(&e))?;
        if !out.status.success() {
            return Err(Verdict::Fail(format!(
                "reference run failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        for name in &md.outputs {
            let reference =
                sdfg_sim::npy::read(&dir.join(format!("{name}.npy"))).map_err(|e| fail(&e))?;
            let ours = outputs.get(name).ok_or_else(|| {
                Verdict::Fail(format!("the simulated run has no output `{name}`"))
            })?;
            compare(name, ours, &reference, &md.tolerance).map_err(Verdict::Fail)?;
        }
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    });
    report
}

/// The `BENCHMARK` metadata of a kernel file, for one preset.
#[derive(Clone, Debug)]
pub struct Metadata {
    /// The kernel program.
    pub program: String,
    /// The initializer program.
    pub init: Option<String>,
    /// Scalar argument values.
    pub scalars: BTreeMap<String, f64>,
    /// Compared outputs.
    pub outputs: Vec<String>,
    /// Symbol values of the preset.
    pub symbols: BTreeMap<String, i64>,
    /// Comparison tolerance.
    pub tolerance: Tolerance,
}

/// NPBench's comparison rule.
#[derive(Clone, Copy, Debug)]
pub struct Tolerance {
    /// Relative tolerance of `allclose`.
    pub rtol: f64,
    /// Absolute tolerance of `allclose`.
    pub atol: f64,
    /// Bound on the relative Frobenius error.
    pub norm_error: f64,
}

impl Metadata {
    /// Reads the metadata of `module` for `preset`.
    pub fn read(module: &sdfg_frontend::Module, preset: &str) -> Result<Metadata, String> {
        let m = module.metadata().ok_or("the file has no BENCHMARK dict")?;
        let string = |key: &str| m.get(key).and_then(|v| v.as_str()).map(str::to_owned);
        let program = string("program").ok_or("BENCHMARK has no \"program\"")?;
        let presets = m
            .get("presets")
            .and_then(|p| p.as_object())
            .ok_or("BENCHMARK has no \"presets\"")?;
        let chosen = presets
            .get(preset)
            .and_then(|p| p.as_object())
            .ok_or_else(|| format!("BENCHMARK has no preset \"{preset}\""))?;
        // A preset gives symbol values, and may give scalar values of its
        // own (`"scalars": {...}`) over BENCHMARK's (a grid spacing that
        // follows from the grid size, say).
        let symbols = chosen
            .iter()
            .filter(|(k, _)| k.as_str() != "scalars")
            .map(|(k, v)| {
                v.as_i64()
                    .map(|v| (k.clone(), v))
                    .ok_or_else(|| format!("preset value `{k}` is not an integer"))
            })
            .collect::<Result<_, _>>()?;
        let numbers = |o: Option<&serde_json::Value>| -> Vec<(String, f64)> {
            o.and_then(|s| s.as_object())
                .map(|o| {
                    o.iter()
                        .filter_map(|(k, v)| v.as_f64().map(|v| (k.clone(), v)))
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut scalars: BTreeMap<String, f64> = numbers(m.get("scalars")).into_iter().collect();
        scalars.extend(numbers(chosen.get("scalars")));
        let outputs = m
            .get("outputs")
            .and_then(|o| o.as_array())
            .ok_or("BENCHMARK has no \"outputs\"")?
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        let tol = m.get("tolerance");
        let get = |k: &str, d: f64| {
            tol.and_then(|t| t.get(k))
                .and_then(|v| v.as_f64())
                .unwrap_or(d)
        };
        Ok(Metadata {
            program,
            init: string("init"),
            scalars,
            outputs,
            symbols,
            tolerance: Tolerance {
                rtol: get("rtol", 1e-5),
                atol: get("atol", 1e-8),
                norm_error: get("norm_error", 1e-5),
            },
        })
    }
}

/// Runs the initializer on the host, then the kernel (on the host, or on
/// the simulated accelerator where it was offloaded, checking its kernels
/// for data races when `races` is set).
fn simulate(
    kernel: &Sdfg,
    init: Option<&Sdfg>,
    md: &Metadata,
    races: bool,
) -> Result<(BTreeMap<String, ArrayValue>, RunReport), String> {
    let mut sim = Simulator::new();
    sim.check_races(races);
    let shapes = sdfg_sim::argument_shapes(kernel, &md.symbols).map_err(|e| e.to_string())?;
    let mut arrays: BTreeMap<String, ArrayValue> = BTreeMap::new();
    for (name, (dtype, shape)) in &shapes {
        let value = match md.scalars.get(name) {
            Some(v) if shape.is_empty() => {
                let mut a = ArrayValue::zeros(*dtype, vec![]);
                a.elements.set(0, Value::Float(*v).cast(*dtype));
                a
            }
            _ => ArrayValue::zeros(*dtype, shape.clone()),
        };
        arrays.insert(name.clone(), value);
    }
    if let Some(init) = init {
        let valid = sdfg_ir::validate(init).map_err(|e| e.to_string())?;
        let args = arguments(init, &arrays, &md.symbols);
        let result = sim
            .run(valid, &args)
            .map_err(|e| format!("initializer: {e}"))?;
        for (name, v) in result.outputs {
            if arrays.contains_key(&name) {
                arrays.insert(name, v);
            }
        }
    }
    let valid = sdfg_ir::validate(kernel).map_err(|e| e.to_string())?;
    let args = arguments(kernel, &arrays, &md.symbols);
    let result = sim.run(valid, &args).map_err(|e| e.to_string())?;
    Ok((result.outputs, result.report))
}

fn arguments(
    sdfg: &Sdfg,
    arrays: &BTreeMap<String, ArrayValue>,
    symbols: &BTreeMap<String, i64>,
) -> Arguments {
    let mut args = Arguments::default();
    for name in &sdfg.arguments {
        if let Some(v) = symbols.get(name) {
            args.symbols.insert(name.clone(), *v);
        } else if let Some(a) = arrays.get(name) {
            args.arrays.insert(name.clone(), a.clone());
        }
    }
    args
}

/// NPBench's rule: `allclose(ref, val, rtol, atol)` or a relative Frobenius
/// error below `norm_error`.
fn compare(
    name: &str,
    ours: &ArrayValue,
    reference: &ArrayValue,
    tol: &Tolerance,
) -> Result<(), String> {
    let n = reference.elements.len();
    if ours.elements.len() != n {
        return Err(format!(
            "`{name}`: shape {:?} differs from the reference's {:?}",
            ours.shape, reference.shape
        ));
    }
    let complex = |a: &ArrayValue, i: usize| {
        a.get(i)
            .map_or(sdfg_sim::value::C64::new(f64::NAN, 0.0), Value::to_c64)
    };
    let (mut close, mut diff2, mut ref2) = (true, 0.0, 0.0);
    let mut worst = (0usize, 0.0f64);
    for i in 0..n {
        let (a, b) = (complex(ours, i), complex(reference, i));
        let d = (a - b).norm();
        let both_nan = a.re.is_nan() && b.re.is_nan();
        // NaN differences count as not close (`is_some_and` on the ordering).
        let within = d
            .partial_cmp(&(tol.atol + tol.rtol * b.norm()))
            .is_some_and(|o| o.is_le());
        if !both_nan && !within {
            close = false;
            if d.partial_cmp(&worst.1).is_none_or(|o| o.is_gt()) {
                worst = (i, d);
            }
        }
        diff2 += d * d;
        ref2 += b.norm_sqr();
    }
    if close {
        return Ok(());
    }
    let rel = if ref2 > 0.0 {
        (diff2 / ref2).sqrt()
    } else {
        diff2.sqrt()
    };
    if rel < tol.norm_error {
        return Ok(());
    }
    Err(format!(
        "`{name}` differs from NumPy: worst element {} off by {:.3e}, relative error {rel:.3e}",
        worst.0, worst.1
    ))
}

/// The dtype and shape of every kernel argument (for reports).
pub fn describe(shapes: &BTreeMap<String, (DType, Vec<usize>)>) -> String {
    shapes
        .iter()
        .map(|(n, (d, s))| format!("{n}: {d}{s:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::Metadata;

    #[test]
    fn a_preset_gives_scalar_values_over_the_benchmarks() {
        let src = "import dace as dc\nN = dc.symbol('N')\n\n@dc.program\ndef kernel(a: dc.float64[N], h: dc.float64, c: dc.float64):\n    a[:] = h * c\n\nBENCHMARK = {\n    'program': 'kernel',\n    'scalars': {'h': 1.0, 'c': 3.0},\n    'outputs': ['a'],\n    'presets': {\n        'test': {'N': 4, 'scalars': {'h': 0.25}},\n        'S': {'N': 8},\n    },\n}\n";
        let module = sdfg_frontend::Module::parse("k.py", src).unwrap();
        let test = Metadata::read(&module, "test").unwrap();
        assert_eq!(test.symbols.get("N"), Some(&4));
        assert!(!test.symbols.contains_key("scalars"));
        assert_eq!(test.scalars.get("h"), Some(&0.25));
        assert_eq!(test.scalars.get("c"), Some(&3.0));
        // Control: a preset without its own keeps BENCHMARK's.
        let s = Metadata::read(&module, "S").unwrap();
        assert_eq!(s.scalars.get("h"), Some(&1.0));
    }
}
