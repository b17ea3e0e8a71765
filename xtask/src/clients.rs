//! `cargo xtask clients`: the SDFGs DaCe's users' tools write, through
//! every stage (issue #41, `corpus/clients/README.md`).
//!
//! 1. The drivers (`corpus/tools/clients/*.py`, in the virtual environment
//!    with GT4Py and DaCe) turn the programs of `corpus/clients/` into
//!    cases under `target/clients/<client>/`: each the SDFG the tool
//!    wrote, its inputs and the tool's own answer.
//! 2. Each case runs through the corpus's stages for CUDA and for HIP
//!    ([`corpus::run_client`]): import, validate, JSON round trip, host
//!    simulation, offload (valid and idempotent), device simulation,
//!    lowering, emission, compile checks, execution on the emulated GPU,
//!    the comparison with the tool's answer, and the export of the
//!    offloaded SDFG in DaCe's format.
//! 3. DaCe loads, validates and generates code for every export
//!    (`corpus/tools/dace_sdfg_check.py`).
//!
//! A construct the import does not support is refused by name and
//! reported; a wrong answer, an invalid SDFG or a file DaCe refuses fails
//! the command. The summary counts, per client and variant, the cases
//! that pass every stage on both backends.

use sdfg_harness::clients::ClientCase;
use sdfg_harness::corpus::{self, KernelReport, Verdict};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The drivers, by client folder: each writes its cases to the folder.
const DRIVERS: [(&str, &[&str]); 2] = [
    ("gt4py", &["gt4py_cartesian.py", "gt4py_next.py"]),
    ("fortran", &["fortran.py"]),
];

/// The backends every case runs for: every linked code target.
fn all_backends() -> Vec<&'static str> {
    sdfg_codegen::targets().iter().map(|t| t.name).collect()
}

/// The Python with GT4Py and DaCe: `$SDFG_CLIENTS_PYTHON`, else
/// `target/gt4py-venv/bin/python`.
fn clients_python(root: &Path) -> PathBuf {
    std::env::var_os("SDFG_CLIENTS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/gt4py-venv/bin/python"))
}

/// Runs the command.
pub(crate) fn command(args: &[String], root: &Path) -> Result<ExitCode, String> {
    let mut generate = true;
    let mut require = false;
    let mut only: Vec<String> = Vec::new();
    let mut excluded: Vec<String> = Vec::new();
    let mut variants: Vec<String> = Vec::new();
    let mut json = None;
    let mut cases_dir = root.join("target/clients");
    let mut backends: Vec<&'static str> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().cloned().ok_or(format!("`{a}` needs a value"));
        match a.as_str() {
            // Run the cases already written, without the drivers.
            "--no-generate" => generate = false,
            // Without GT4Py and DaCe, fail instead of skipping.
            "--require" => require = true,
            "--case" => only.push(value()?),
            // A case by its whole name (`gt4py/laplacian.next:cpu`), or
            // every case of a program (`gt4py/laplacian`).
            "--exclude" => excluded.push(value()?),
            // Only these variants (`dace:cpu`, `next:gpu-opt-metrics`,
            // `dace-fortran`): the drivers write no others, and only
            // their cases run.
            "--variant" => variants.push(value()?),
            "--cases" => cases_dir = PathBuf::from(value()?),
            "--json" => json = Some(PathBuf::from(value()?)),
            // Only these backends (default: every linked one).
            "--backend" => {
                let name = value()?;
                let known = all_backends()
                    .into_iter()
                    .find(|b| *b == name)
                    .ok_or_else(|| {
                        format!("`--backend {name}`: not one of {:?}", all_backends())
                    })?;
                backends.push(known);
            }
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    if backends.is_empty() {
        backends = all_backends();
    }
    let python = clients_python(root);
    let has_tools = std::process::Command::new(&python)
        .args(["-c", "import dace, gt4py"])
        .output()
        .is_ok_and(|o| o.status.success());
    if generate {
        if !has_tools {
            println!(
                "clients: skipped, not passed: no Python with GT4Py and DaCe at `{}` (python3 -m venv target/gt4py-venv && target/gt4py-venv/bin/pip install --pre gt4py==1.1.12 dace==2.0.0b1 cmake==4.4.5)",
                python.display()
            );
            return Ok(if require {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            });
        }
        for (client, drivers) in DRIVERS {
            for driver in drivers {
                let script = root.join("corpus/tools/clients").join(driver);
                if !script.is_file() {
                    continue;
                }
                let out = cases_dir.join(client);
                let status = std::process::Command::new(&python)
                    .arg(&script)
                    .arg(&out)
                    .env("PATH", venv_path(&python))
                    // GT4Py's build cache, out of the working tree.
                    .env("GT_CACHE_ROOT", root.join("target/gt_cache"))
                    .env("SDFG_CLIENT_VARIANTS", variants.join(","))
                    .status()
                    .map_err(|e| format!("cannot run `{}`: {e}", script.display()))?;
                if !status.success() {
                    return Err(format!("the driver `{driver}` failed"));
                }
            }
        }
    }
    let cases: Vec<ClientCase> = ClientCase::discover(&cases_dir)?
        .into_iter()
        .filter(|c| only.is_empty() || only.iter().any(|o| c.name.contains(o.as_str())))
        .filter(|c| {
            variants.is_empty() || variants.iter().any(|v| c.name.ends_with(&format!(".{v}")))
        })
        .filter(|c| {
            !excluded
                .iter()
                .any(|x| c.name == *x || c.name.starts_with(&format!("{x}.")))
        })
        .collect();
    if cases.is_empty() {
        return Err(format!("no client cases under `{}`", cases_dir.display()));
    }
    // An export of an earlier run is no export of this one.
    for c in &cases {
        for b in all_backends() {
            let _ = std::fs::remove_file(c.offloaded_file(b));
        }
    }
    let runner =
        std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let emulated = sdfg_exec::EmulatedGpu::new(&runner);
    let tools = root.join("corpus/tools");
    let python_ok: Result<(), String> = Ok(());
    let mut reports: Vec<Row> = Vec::new();
    for &backend_name in &backends {
        let backend = sdfg_harness::backend(backend_name)?;
        let options = corpus::RunOptions {
            disabled: &[],
            preset: "client",
            backend,
            tools: &tools,
            python: &python_ok,
            references: None,
            device: Ok(&emulated),
            gpu: Err("the clients' cases run on the emulated GPU"),
            repeat: 1,
            skip: &[corpus::Stage::Gpu],
            dace_sdfgs: None,
            args_on_device: false,
        };
        for (i, case) in cases.iter().enumerate() {
            reports.push((i, backend_name, corpus::run_client(case, &options)));
        }
    }
    // DaCe's check of every export.
    let exports: Vec<(usize, &str, PathBuf)> = cases
        .iter()
        .enumerate()
        .flat_map(|(i, c)| backends.iter().map(move |&b| (i, b, c.offloaded_file(b))))
        .filter(|(_, _, f)| f.is_file())
        .collect();
    let mut dace: BTreeMap<(usize, &str), (String, String)> = BTreeMap::new();
    if has_tools && !exports.is_empty() {
        // Where DaCe refuses an export, DaCe's own GPU pipeline runs on the
        // tool's SDFG too: the same refusal there is DaCe's limitation.
        let args: Vec<String> = exports
            .iter()
            .map(|(i, _, f)| format!("{}={}:gpu", f.display(), cases[*i].sdfg_file().display()))
            .collect();
        let output = std::process::Command::new(&python)
            .arg(root.join("corpus/tools/dace_sdfg_check.py"))
            .args(&args)
            .output()
            .map_err(|e| format!("cannot run `{}`: {e}", python.display()))?;
        let records: Vec<serde_json::Value> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if records.len() != exports.len() {
            eprint!("{}", String::from_utf8_lossy(&output.stderr));
            return Err(format!(
                "DaCe's check reported {} of {} files",
                records.len(),
                exports.len()
            ));
        }
        for ((i, b, _), r) in exports.iter().zip(&records) {
            let status = r["status"].as_str().unwrap_or("?").to_owned();
            let message = r["message"].as_str().unwrap_or("").to_owned();
            dace.insert((*i, *b), (status, message));
        }
    }
    print_table(&cases, &reports, &dace);
    if let Some(path) = &json {
        let rows: Vec<_> = reports
            .iter()
            .map(|(i, b, r)| {
                serde_json::json!({
                    "case": cases[*i].name,
                    "backend": b,
                    "report": r,
                    "dace": dace.get(&(*i, *b)),
                })
            })
            .collect();
        std::fs::write(
            path,
            serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?,
        )
        .map_err(|e| format!("cannot write `{}`: {e}", path.display()))?;
    }
    let failed = summarize(&cases, &reports, &dace);
    Ok(if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// `PATH` with the virtual environment's `bin` first (DaCe's build runs
/// the CMake installed there).
fn venv_path(python: &Path) -> std::ffi::OsString {
    let mut paths: Vec<PathBuf> = python.parent().map(Path::to_path_buf).into_iter().collect();
    if let Some(p) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&p));
    }
    std::env::join_paths(paths).unwrap_or_default()
}

/// One case's report on one backend: the case's index, the backend.
type Row = (usize, &'static str, KernelReport);

/// How one case fared on one backend: `ok`, `refused` (by the tool or the
/// import, by name), or `FAIL` with the first failed stage; an `ok` of an
/// SDFG DaCe's own validation refuses says so.
fn outcome(
    case: &ClientCase,
    r: &KernelReport,
    dace: Option<&(String, String)>,
) -> (String, String) {
    let (what, why) = verdict(r, dace);
    match &case.meta.dace_refused {
        Some(refusal) if what.starts_with("ok") => (
            format!("{what} (an SDFG DaCe refuses)"),
            format!("the tool wrote it, DaCe's validation refuses it: {refusal}\n{why}")
                .trim_end()
                .to_owned(),
        ),
        _ => (what, why),
    }
}

/// [`outcome`] before the case's own remark.
fn verdict(r: &KernelReport, dace: Option<&(String, String)>) -> (String, String) {
    if let Some((stage, Verdict::Fail(why))) = r
        .stages
        .iter()
        .map(|(n, s)| (n, &s.verdict))
        .find(|(_, v)| matches!(v, Verdict::Fail(_)))
    {
        return (format!("FAIL {stage}"), why.clone());
    }
    for (stage, s) in &r.stages {
        if let Verdict::Refused(why) = &s.verdict {
            return (format!("refused ({stage})"), why.clone());
        }
    }
    match dace {
        Some((status, _)) if status == "ok" => ("ok".to_owned(), String::new()),
        Some((status, message)) if status == "dace-limitation" => (
            "ok (DaCe's limitation)".to_owned(),
            format!(
                "DaCe generates no code for the export, nor for the tool's SDFG through DaCe's own GPU pipeline: {message}"
            ),
        ),
        Some((status, message)) => (format!("FAIL dace {status}"), message.clone()),
        None => ("ok (DaCe not run)".to_owned(), String::new()),
    }
}

fn print_table(
    cases: &[ClientCase],
    reports: &[Row],
    dace: &BTreeMap<(usize, &str), (String, String)>,
) {
    println!("{:<48} {:<6} result", "case", "backend");
    for (i, backend, r) in reports {
        let (what, why) = outcome(&cases[*i], r, dace.get(&(*i, *backend)));
        println!("{:<48} {backend:<6} {what}", cases[*i].name);
        if !why.is_empty() {
            for line in why.lines().take(4) {
                println!("    {line}");
            }
        }
    }
}

/// Prints the counts per client and variant; returns how many cases failed.
fn summarize(
    cases: &[ClientCase],
    reports: &[Row],
    dace: &BTreeMap<(usize, &str), (String, String)>,
) -> usize {
    let mut groups: BTreeMap<(String, String), (usize, usize, usize, usize)> = BTreeMap::new();
    let mut failed = 0;
    for (i, case) in cases.iter().enumerate() {
        let outcomes: Vec<String> = reports
            .iter()
            .filter(|(j, _, _)| *j == i)
            .map(|(_, b, r)| outcome(case, r, dace.get(&(i, *b))).0)
            .collect();
        let g = groups
            .entry((case.meta.client.clone(), case.meta.variant.clone()))
            .or_default();
        g.0 += 1;
        if outcomes.iter().all(|o| o.starts_with("ok")) {
            g.1 += 1;
        } else if outcomes.iter().any(|o| o.starts_with("FAIL")) {
            g.3 += 1;
            failed += 1;
        } else {
            g.2 += 1;
        }
    }
    println!();
    println!(
        "{:<10} {:<12} {:>6} {:>7} {:>8} {:>7}",
        "client", "variant", "cases", "passed", "refused", "failed"
    );
    for ((client, variant), (n, ok, refused, bad)) in &groups {
        println!("{client:<10} {variant:<12} {n:>6} {ok:>7} {refused:>8} {bad:>7}");
    }
    failed
}
