//! Project automation, run as `cargo xtask <command>`.
//!
//! - `bless`: rewrites the golden translation units that
//!   `cargo test -p sdfg-harness --test goldens` checks
//!   (`sdfg_harness::goldens`).
//! - `corpus [--kernel NAME]... [--goldens] [--concurrent] [--args-on-device] [--exclude NAME]... [--preset NAME] [--backend sim|cuda|hip] [--require-compilers] [--sanitize address|thread] [--json FILE]`:
//!   runs every kernel of `corpus/npbench/` through the pipeline (parse,
//!   compile, validate, JSON round trip, host simulation, offload for the
//!   backend, device simulation, comparison with NumPy; for `cuda` and `hip`
//!   also emission of the translation unit, compiling it with real
//!   compilers, and executing it on the emulated GPU against NumPy) and
//!   prints one row per kernel. Exits non-zero when any stage fails or no
//!   kernel matches. `--require-compilers` makes a compile check or an
//!   execution skipped for a missing tool a failure; `--sanitize` builds and
//!   runs the emitted code with AddressSanitizer + UBSan or ThreadSanitizer;
//!   `--goldens` selects the golden kernels, `--concurrent` the kernels
//!   whose threads meet in memory (atomic updates, or a persistent kernel
//!   whose threads share values between grid-wide barriers). `--json` also writes the full
//!   report for machines. `--dir DIR` runs another directory of kernels in
//!   the corpus format; `--programs MANIFEST` runs the unmodified DaCe
//!   programs a `programs.json` manifest lists (`docs/corpus.md`). This
//!   executable is also the emulated GPU's runner (`sdfg_exec::child`).
//!   The `gpu` stage runs the emitted unit on a real GPU where the
//!   backend's runtime finds one (`docs/gpu.md`), `--repeat K` timed calls
//!   (default 10) after one warm-up, each program stopped after
//!   `--gpu-timeout SECONDS` (default 120); without a GPU it is skipped with
//!   the runtime's reason. `--jobs N` runs N kernels at once (the GPU is
//!   used by one at a time); `--skip STAGE` leaves a stage out (reported as
//!   skipped).
//! - `compare-dace [--preset NAME] [--kernel NAME]... [--json FILE] [--dace-counts FILE]`:
//!   launches and host<->device bytes per run of the offloaded programs
//!   (for the CUDA accelerator; counted from control flow by
//!   `sdfg_sim::count_statically`, or simulated as the `device` stage does
//!   where control flow reads data) beside what DaCe's own
//!   GPU pipeline (`auto_optimize` for the GPU) launches and copies for the
//!   same files at the same preset, counted by `corpus/tools/dace_compare.py`
//!   over DaCe's SDFG; skipped without DaCe (`docs/corpus.md`).
//! - `gpu-info [--backend cuda|hip]`: prints the GPUs the backend's runtime
//!   finds and the compiler it would use, or why there are none (exit 0
//!   either way; 2 for a bad option).
//! - `dace [--require-dace] [PATH]...`: runs DaCe's own frontend
//!   (`to_sdfg` and `validate`) over every program of the corpus files
//!   (`corpus/tools/dace_check.py`), so that the corpus stays made of DaCe
//!   programs as DaCe reads them. The Python is `$SDFG_DACE_PYTHON`, else
//!   `target/dace-venv/bin/python` where it exists, else `python3`; without
//!   an importable `dace` package the check says skipped (a failure with
//!   `--require-dace`).
//! - `dace-sdfg [--require-dace] [--kernel NAME]... [--out DIR]`: writes
//!   every corpus kernel in DaCe's `.sdfg` format, as lowered and offloaded
//!   for CUDA (into `target/dace-sdfg`), and has DaCe load, validate and
//!   generate code for each file (`corpus/tools/dace_sdfg_check.py`); a
//!   refusal DaCe's own pipeline shares on the same program is reported as
//!   DaCe's limitation (`xtask/src/dace_sdfg.rs`).
//! - `clients [--backend cuda|hip]... [--case TEXT]... [--exclude CASE]... [--variant NAME]... [--no-generate] [--cases DIR] [--require] [--json FILE]`:
//!   the SDFGs DaCe's users' tools write (GT4Py's `gt4py.cartesian` and
//!   `gt4py.next` backends, DaCe's Fortran frontend) for the programs of
//!   `corpus/clients/`, through every stage against the tools' own
//!   answers, and DaCe's check of the exports ([`clients`],
//!   `docs/clients.md`). The tools run in `target/gt4py-venv`
//!   (`$SDFG_CLIENTS_PYTHON`); without them the command says skipped (a
//!   failure with `--require`).
//! - `fuzz [--seconds N] [--seed S] [--target NAME]...`: the fuzzing
//!   campaign ([`fuzz`]): generated programs, mutated corpus sources and
//!   mutated corpus SDFGs through the whole pipeline for N seconds (default
//!   60, shared by the targets); exits 1 on any finding, printing a
//!   minimized reproducer (also in `target/fuzz/`).

mod clients;
mod dace_sdfg;
mod fuzz;

use sdfg_harness::corpus::{self, Verdict};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

const USAGE: &str = "usage: cargo xtask <command>\n\ncommands:\n  corpus [--kernel NAME]... [--goldens] [--concurrent] [--args-on-device] [--exclude NAME]... [--preset NAME] [--backend sim|cuda|hip] [--require-compilers] [--sanitize address|thread] [--dir DIR | --programs MANIFEST] [--json FILE] [--repeat K] [--gpu-timeout SECONDS] [--jobs N] [--skip STAGE]... [--no-PASS]...\n            run the corpus through the pipeline and print a table\n  gpu-info [--backend cuda|hip]\n            print the GPUs this machine has for a backend, or why there are none\n  compare-dace [--preset NAME] [--kernel NAME]... [--json FILE] [--require-dace] [--dace-counts FILE] [--no-PASS]...\n            launches and host<->device bytes per run beside DaCe's own GPU pipeline\n  bless\n            rewrite the golden CUDA and HIP sources (crates/harness/tests/goldens/)\n  dace [--require-dace] [PATH]...\n            check that DaCe's own frontend accepts every corpus program (default: corpus/npbench)\n  dace-sdfg [--require-dace] [--kernel NAME]... [--out DIR]\n            write every corpus kernel in DaCe's .sdfg format (as lowered, and offloaded for CUDA) and have DaCe load, validate and generate code for it\n  clients [--backend cuda|hip]... [--case TEXT]... [--exclude CASE]... [--variant NAME]... [--no-generate] [--cases DIR] [--require] [--json FILE]\n            GT4Py's and DaCe's Fortran frontend's SDFGs of corpus/clients through every stage, against the tools' answers\n  fuzz [--seconds N] [--seed S] [--target programs|python-mutants|json-mutants|dace-mutants|long-chains]...\n            fuzz the pipeline for N seconds (default 60); fails on any finding";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // This executable is also the emulated GPU's runner (sdfg_exec::child).
    if let Some(code) = sdfg_exec::child::dispatch(&args) {
        return ExitCode::from(u8::try_from(code).unwrap_or(2));
    }
    match args.first().map(String::as_str) {
        Some("bless") => match sdfg_harness::goldens::bless(&workspace_root()) {
            Ok(paths) => {
                println!("wrote {} golden translation units", paths.len());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(1)
            }
        },
        Some("fuzz") => match fuzz::campaign(&args[1..], &workspace_root()) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {e}\n\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some("fuzz-worker") => match fuzz::worker(&args[1..], &workspace_root()) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        },
        Some("dace") => match dace_command(&args[1..]) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {e}\n\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some("clients") => match clients::command(&args[1..], &workspace_root()) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        },
        Some("dace-sdfg") => match dace_sdfg::command(&args[1..], &workspace_root()) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {e}\n\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some("compare-dace") => match compare_dace(&args[1..]) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {e}\n\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some("gpu-info") => match gpu_info(&args[1..]) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {e}\n\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some("corpus") => match corpus_command(&args[1..]) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {e}\n\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some(other) => {
            eprintln!("unknown xtask command `{other}`\n\n{USAGE}");
            ExitCode::from(2)
        }
        None => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// The workspace: `$SDFG_ROOT`, else where this xtask was built (it lives
/// in `<root>/xtask`) if the corpus is there, else the current directory (a
/// release binary carried to another machine runs from the working tree).
fn workspace_root() -> PathBuf {
    if let Some(root) = std::env::var_os("SDFG_ROOT") {
        return PathBuf::from(root);
    }
    let built = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    if built.join("corpus/npbench").is_dir() {
        built
    } else {
        PathBuf::from(".")
    }
}

/// `gpu-info`: what the backend's runtime sees.
fn gpu_info(args: &[String]) -> Result<ExitCode, String> {
    let mut backend = "cuda".to_owned();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--backend" => backend = it.next().cloned().ok_or("`--backend` needs a value")?,
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    let backend = sdfg_harness::backend(&backend)?;
    let runner =
        std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    match sdfg_harness::gpu(backend, &runner, 1, Duration::from_secs(60)) {
        Ok(gpu) => {
            for d in sdfg_harness::gpu_devices(backend).unwrap_or_default() {
                println!("found: {d}");
            }
            println!("gpu: {}", gpu.describe());
        }
        Err(why) => println!("gpu: none: {why}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// The exit status of `dace_check.py` when `dace` cannot be imported.
const DACE_SKIPPED: i32 = 3;

/// The Python that has DaCe: `$SDFG_DACE_PYTHON`, else
/// `target/dace-venv/bin/python` where it exists, else `python3`.
fn dace_python(root: &Path) -> PathBuf {
    let venv = root.join("target/dace-venv/bin/python");
    std::env::var_os("SDFG_DACE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            if venv.is_file() {
                venv
            } else {
                PathBuf::from("python3")
            }
        })
}

/// `compare-dace`: launches and host<->device bytes per run of this
/// project's offloaded programs (the `device` stage for the CUDA
/// accelerator) beside DaCe's own GPU pipeline on the same files and preset
/// (`corpus/tools/dace_compare.py`).
/// The pass an option `--no-PASS` turns off (`--no-loop-to-map`).
fn turned_off(option: &str) -> Option<sdfg_passes::Pass> {
    option
        .strip_prefix("--no-")
        .and_then(sdfg_passes::Pass::from_name)
}

fn compare_dace(args: &[String]) -> Result<ExitCode, String> {
    let root = workspace_root();
    let mut preset = "test".to_owned();
    let mut kernels: Vec<String> = Vec::new();
    let mut json: Option<PathBuf> = None;
    let mut require = false;
    let mut dace_counts: Option<PathBuf> = None;
    let mut disabled: Vec<sdfg_passes::Pass> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().cloned().ok_or(format!("`{a}` needs a value"));
        match a.as_str() {
            "--preset" => preset = value()?,
            "--kernel" => kernels.push(value()?),
            "--json" => json = Some(PathBuf::from(value()?)),
            "--require-dace" => require = true,
            "--dace-counts" => dace_counts = Some(PathBuf::from(value()?)),
            other if turned_off(other).is_some() => disabled.extend(turned_off(other)),
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    let corpus_dir = root.join("corpus/npbench");
    let files: Vec<_> = corpus::discover(&corpus_dir)
        .map_err(|e| format!("cannot read `{}`: {e}", corpus_dir.display()))?
        .into_iter()
        .filter(|f| kernels.is_empty() || kernels.iter().any(|k| names(&f.name, k)))
        .collect();
    if files.is_empty() {
        return Err("no corpus kernel is selected".to_owned());
    }
    // DaCe's side first: without DaCe there is nothing to compare. Its
    // counts of an earlier run (`dace_compare.py --out FILE`) may be given.
    let text = match &dace_counts {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?,
        None => match run_dace_compare(&root, &preset, &files)? {
            Some(text) => text,
            None => {
                println!(
                    "compare-dace: skipped: DaCe is not installed (`python3 -m venv target/dace-venv && target/dace-venv/bin/pip install --pre dace==2.0.0b1`)"
                );
                return Ok(if require {
                    ExitCode::FAILURE
                } else {
                    ExitCode::SUCCESS
                });
            }
        },
    };
    let dace: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    if dace["preset"].as_str() != Some(preset.as_str()) {
        return Err(format!(
            "DaCe's counts are of the preset {}, not `{preset}`",
            dace["preset"]
        ));
    }
    // Ours: the offloaded program for the CUDA accelerator, counted from
    // its control flow or simulated on the device (launches per run, vendor
    // calls as one each).
    let python = Err("not needed".to_owned());
    let skip = [corpus::Stage::Lower, corpus::Stage::Numpy];
    let tools = root.join("corpus/tools");
    let options = corpus::RunOptions {
        disabled: &disabled,
        preset: &preset,
        backend: sdfg_harness::backend("cuda")?,
        tools: &tools,
        python: &python,
        references: None,
        device: Err("not needed"),
        gpu: Err("not needed"),
        repeat: 1,
        skip: &skip,
        dace_sdfgs: None,
        args_on_device: false,
    };
    println!(
        "{:<28} {:>9} {:>9} {:>7} {:>11} {:>11}  note",
        "kernel", "ours", "DaCe", "ratio", "ours bytes", "DaCe bytes"
    );
    let mut rows = Vec::new();
    let (mut compared, mut at_most, mut logs) = (0usize, 0usize, Vec::new());
    for f in &files {
        let counted = corpus::count_kernel(f, &options);
        let ours = counted
            .as_ref()
            .ok()
            .map(|c| (c.launches, c.transfer_bytes));
        let d = &dace["kernels"][&f.name];
        let theirs = d["launches"].as_u64().zip(d["bytes"].as_u64());
        let exact = d["exact"].as_bool().unwrap_or(false);
        let note = if let Some(e) = d["error"].as_str() {
            format!("DaCe fails: {e}")
        } else if let Err(e) = &counted {
            format!("ours: {e}")
        } else if !exact {
            let notes: Vec<&str> = d["notes"]
                .as_array()
                .map(|a| a.iter().filter_map(|n| n.as_str()).collect())
                .unwrap_or_default();
            format!("DaCe's count is not exact: {}", notes.join("; "))
        } else {
            String::new()
        };
        // Ours is counted from control flow; a program whose control flow
        // reads data is run in the simulator instead.
        let note = match counted.as_ref().ok().and_then(|c| c.simulated.as_ref()) {
            Some(_) if note.is_empty() => "ours: simulated".to_owned(),
            Some(_) => format!("ours: simulated; {note}"),
            None => note,
        };
        let ratio = match (ours, theirs) {
            (Some((o, _)), Some((t, _))) => Some(o.max(1) as f64 / t.max(1) as f64),
            _ => None,
        };
        if let (Some(q), Some((o, _)), Some((t, _))) = (ratio, ours, theirs) {
            compared += 1;
            if o <= t {
                at_most += 1;
            }
            if exact {
                logs.push(q.ln());
            }
        }
        let show = |v: Option<u64>| v.map_or("-".to_owned(), |v| v.to_string());
        println!(
            "{:<28} {:>9} {:>9} {:>7} {:>11} {:>11}  {note}",
            f.name,
            show(ours.map(|o| o.0)),
            show(theirs.map(|t| t.0)),
            ratio.map_or("-".to_owned(), |q| format!("{q:.2}")),
            show(ours.map(|o| o.1)),
            show(theirs.map(|t| t.1)),
        );
        rows.push(serde_json::json!({
            "kernel": f.name,
            "ours": counted.as_ref().ok().map(|c| serde_json::json!({
                "launches": c.launches,
                "bytes": c.transfer_bytes,
                "simulated": c.simulated,
            })),
            "dace": d,
            "ratio": ratio,
        }));
    }
    let mean = (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp());
    println!(
        "preset `{preset}`: launches at most DaCe's on {at_most} of the {compared} kernels both compile; geometric mean ours/DaCe {} over the {} with exact DaCe counts",
        mean.map_or("-".to_owned(), |m| format!("{m:.2}")),
        logs.len()
    );
    if let Some(path) = json {
        let report = serde_json::json!({
            "preset": preset,
            "dace_version": dace["dace"],
            "kernels": rows,
            "at_most_dace": at_most,
            "compared": compared,
            "geometric_mean_ratio": mean,
        });
        std::fs::write(
            &path,
            serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?,
        )
        .map_err(|e| format!("cannot write `{}`: {e}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `corpus/tools/dace_compare.py` over `files` at `preset` and returns
/// its JSON; `None` when DaCe is not installed.
fn run_dace_compare(
    root: &Path,
    preset: &str,
    files: &[corpus::KernelFile],
) -> Result<Option<String>, String> {
    let out = std::env::temp_dir().join(format!("sdfg-dace-compare-{}.json", std::process::id()));
    let status = std::process::Command::new(dace_python(root))
        .arg(root.join("corpus/tools/dace_compare.py"))
        .args(["--preset", preset, "--root"])
        .arg(root)
        .arg("--out")
        .arg(&out)
        .args(files.iter().map(|f| &f.path))
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("cannot run DaCe's Python: {e}"))?;
    if status.code() == Some(DACE_SKIPPED) {
        return Ok(None);
    }
    if !status.success() {
        return Err(format!("dace_compare.py failed ({status})"));
    }
    let text = std::fs::read_to_string(&out).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&out);
    Ok(Some(text))
}

fn dace_command(args: &[String]) -> Result<ExitCode, String> {
    let root = workspace_root();
    let mut require = false;
    let mut paths = Vec::new();
    for a in args {
        match a.as_str() {
            "--require-dace" => require = true,
            flag if flag.starts_with("--") => return Err(format!("unknown option `{flag}`")),
            path => paths.push(path.to_owned()),
        }
    }
    let python = dace_python(&root);
    let script = root.join("corpus/tools/dace_check.py");
    let status = std::process::Command::new(&python)
        .arg(&script)
        .args(&paths)
        .status()
        .map_err(|e| format!("cannot run `{}`: {e}", python.display()))?;
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(DACE_SKIPPED) if !require => {
            println!(
                "(skipped, not passed: install DaCe with `python3 -m venv target/dace-venv && target/dace-venv/bin/pip install --pre dace==2.0.0b1`)"
            );
            ExitCode::SUCCESS
        }
        _ => ExitCode::FAILURE,
    })
}

fn corpus_command(args: &[String]) -> Result<ExitCode, String> {
    let mut kernels: Vec<String> = Vec::new();
    let mut excluded: Vec<String> = Vec::new();
    let mut preset = "test".to_owned();
    let mut json = None;
    let mut backend = "sim".to_owned();
    let mut require_compilers = false;
    let mut sanitize = None;
    let mut concurrent = false;
    let mut args_on_device = false;
    let mut dir: Option<PathBuf> = None;
    let mut programs: Option<PathBuf> = None;
    let mut repeat = 10u32;
    let mut gpu_timeout = 120u64;
    let mut jobs = 1usize;
    let mut skip: Vec<String> = Vec::new();
    let mut disabled: Vec<sdfg_passes::Pass> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().cloned().ok_or(format!("`{a}` needs a value"));
        match a.as_str() {
            "--kernel" => kernels.push(value()?),
            // The kernels whose emitted source is kept as goldens.
            "--goldens" => {
                kernels.extend(sdfg_harness::goldens::KERNELS.iter().map(|k| k.to_string()))
            }
            // Only kernels whose emitted unit updates memory atomically
            // (where ThreadSanitizer has something to check).
            "--concurrent" => concurrent = true,
            // Every array argument's home is the device: inputs already on
            // the GPU, as NPBench's `dace_gpu` and CuPy run.
            "--args-on-device" => args_on_device = true,
            // Another directory of kernels in the corpus format.
            "--dir" => dir = Some(PathBuf::from(value()?)),
            // Unmodified DaCe programs listed in a manifest (programs.json).
            "--programs" => programs = Some(PathBuf::from(value()?)),
            "--exclude" => excluded.push(value()?),
            "--preset" => preset = value()?,
            "--json" => json = Some(PathBuf::from(value()?)),
            "--backend" => backend = value()?,
            // A compile check skipped for a missing compiler fails the run (CI).
            "--require-compilers" => require_compilers = true,
            // The `exec` stage builds and runs the emitted code with a sanitizer.
            "--sanitize" => sanitize = Some(sdfg_exec::Sanitizer::parse(&value()?)?),
            // Timed calls of the program (and of NumPy and CuPy) in `gpu`.
            "--repeat" => repeat = number(&value()?, "--repeat")?,
            "--gpu-timeout" => gpu_timeout = number(&value()?, "--gpu-timeout")?,
            "--jobs" => jobs = number(&value()?, "--jobs")?,
            "--skip" => skip.push(value()?),
            other if turned_off(other).is_some() => disabled.extend(turned_off(other)),
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    let root = workspace_root();
    let manifest = programs
        .as_deref()
        .map(corpus::Manifest::read)
        .transpose()?;
    let files = match &manifest {
        // The entries of the manifest stand where the corpus's files would.
        Some((m, _)) => m
            .programs
            .iter()
            .map(|e| corpus::KernelFile {
                name: e.name.clone(),
                path: PathBuf::from(&e.file),
            })
            .collect(),
        None => {
            let corpus_dir = dir.unwrap_or_else(|| root.join("corpus/npbench"));
            corpus::discover(&corpus_dir)
                .map_err(|e| format!("cannot read `{}`: {e}", corpus_dir.display()))?
        }
    };
    let files: Vec<_> = files
        .into_iter()
        .filter(|f| !excluded.iter().any(|k| names(&f.name, k)))
        .filter(|f| kernels.is_empty() || kernels.iter().any(|k| names(&f.name, k)))
        .collect();
    if let Some(k) = kernels
        .iter()
        .find(|k| !files.iter().any(|f| names(&f.name, k)))
    {
        return Err(format!("no corpus kernel named `{k}`"));
    }
    if files.is_empty() {
        return Err("the corpus is empty".to_owned());
    }
    let backend = sdfg_harness::backend(&backend)?;
    let files: Vec<_> = if concurrent {
        let sdfg_harness::Backend::Code(target) = backend else {
            return Err(
                "`--concurrent` needs a code-generating backend (`--backend cuda|hip`)".to_owned(),
            );
        };
        files
            .into_iter()
            .filter(|f| {
                sdfg_harness::goldens::unit(&root, target, &f.name)
                    .is_ok_and(|u| u.cooperative || u.source.contains("sdfg::atomic_"))
            })
            .collect()
    } else {
        files
    };
    if files.is_empty() {
        return Err("no corpus kernel is selected".to_owned());
    }
    let python = corpus::python_available();
    if let Err(why) = &python {
        println!("note: the NumPy stage is skipped for every kernel: {why}");
    }
    let tools = root.join("corpus/tools");
    let references = root.join("target/sdfg-references");
    let runner =
        std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    // Only the backend's own stages can be skipped.
    let known = corpus::Stage::for_backend(backend);
    let skip = skip
        .iter()
        .map(|s| {
            s.parse::<corpus::Stage>()
                .ok()
                .filter(|stage| known.contains(stage))
                .ok_or_else(|| {
                    let names: Vec<&str> = known.iter().map(|k| k.name()).collect();
                    format!(
                        "`--skip {s}`: no such stage (the stages: {})",
                        names.join(", ")
                    )
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    // The counting build: what decides speed on a GPU is measured as the
    // unit runs (docs/emulation.md, "What it measures").
    let emulated = sdfg_exec::EmulatedGpu::new(&runner)
        .sanitize(sanitize)
        .metrics(true);
    let is_code = matches!(backend, sdfg_harness::Backend::Code(_));
    let gpu = if is_code && !skip.contains(&corpus::Stage::Gpu) {
        sdfg_harness::gpu(backend, &runner, repeat, Duration::from_secs(gpu_timeout))
    } else {
        Err("not asked for".to_owned())
    };
    let own = dace_sdfg::own_dir(&root);
    let options = corpus::RunOptions {
        disabled: &disabled,
        preset: &preset,
        backend,
        tools: &tools,
        python: &python,
        references: Some(&references),
        device: Ok(&emulated),
        gpu: match &gpu {
            Ok(g) => Ok(g.as_ref()),
            Err(why) => Err(why.as_str()),
        },
        repeat,
        skip: &skip,
        // DaCe's own SDFGs where `cargo xtask dace-sdfg` wrote them.
        dace_sdfgs: own.is_dir().then_some(own.as_path()),
        args_on_device,
    };
    if is_code {
        println!("exec: {}", sdfg_exec::Device::describe(&emulated));
        match &gpu {
            Ok(g) => println!("gpu: {}", g.describe()),
            // Said once here, not on every row.
            Err(why) => println!("gpu: skipped for every kernel: {why}"),
        }
    }
    print!("{:<28}", "kernel");
    for s in corpus::Stage::for_backend(backend) {
        print!(" {s:>9}");
    }
    println!(
        " {:>10} {:>8} {:>12} {:>6} {:>6} {:>5} {:>8}",
        "time", "launches", "h<->d bytes", "ratio", "waves", "coal", "serial"
    );
    let start = Instant::now();
    let mut reports = Vec::new();
    let run_one = |f: &corpus::KernelFile| -> Result<corpus::KernelReport, String> {
        Ok(match (&manifest, &programs) {
            (Some((m, files_root)), Some(path)) => {
                let entry = m
                    .programs
                    .iter()
                    .find(|e| e.name == f.name)
                    .ok_or_else(|| format!("no entry `{}`", f.name))?;
                corpus::run_program(entry, path, files_root, &options)
            }
            _ => corpus::run_kernel(f, &options),
        })
    };
    // `--jobs N`: N threads take kernels in order; rows are printed in
    // corpus order as they complete.
    let (sender, receiver) = std::sync::mpsc::channel();
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| -> Result<(), String> {
        for _ in 0..jobs.clamp(1, files.len()) {
            let sender = sender.clone();
            let (next, files, run_one) = (&next, &files, &run_one);
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(f) = files.get(i) else { break };
                    if sender.send((i, run_one(f))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        let mut done: BTreeMap<usize, Result<corpus::KernelReport, String>> = BTreeMap::new();
        for (i, r) in receiver {
            done.insert(i, r);
            while let Some(r) = done.remove(&reports.len()) {
                let r = r?;
                print_row(&r, options.gpu.err());
                reports.push(r);
                // Written after every row: a run stopped from outside (a
                // time limit) keeps what it measured.
                if let Some(path) = &json {
                    write_json(path, &reports)?;
                }
            }
        }
        Ok(())
    })?;
    let failed = reports
        .iter()
        .filter(|r| {
            !r.passed()
                || (require_compilers && r.stages.iter().any(|(n, s)| {
                    matches!(n, corpus::Stage::Cc | corpus::Stage::Exec)
                        && matches!(&s.verdict, Verdict::Skip(why) if !why.starts_with("--skip"))
                }))
        })
        .count();
    println!(
        "{} kernels, preset `{preset}`: {} passed every stage that ran, {failed} failed ({:.1}s)",
        reports.len(),
        reports.len() - failed,
        start.elapsed().as_secs_f64()
    );
    print_uncoalesced(&reports);
    if let Some(path) = &json {
        write_json(path, &reports)?;
    }
    Ok(if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The worklist of coalescing (issue #44): every program kernel whose
/// warp-wide accesses touch more sectors than 1/0.9 of the ideal, worst
/// first, as the emulated GPU's counting build measured them.
fn print_uncoalesced(reports: &[corpus::KernelReport]) {
    let mut below: Vec<(f64, String)> = reports
        .iter()
        .filter_map(|r| Some((r, r.exec_counts.as_ref()?)))
        .flat_map(|(r, c)| {
            c.kernels
                .iter()
                .filter(|(k, _)| !k.starts_with("sdfg::"))
                .filter_map(move |(k, m)| Some((m.coalescing()?, format!("{}:{k}", r.kernel))))
        })
        .filter(|(c, _)| *c < 0.9)
        .collect();
    if below.is_empty() {
        return;
    }
    below.sort_by(|a, b| a.0.total_cmp(&b.0));
    println!(
        "coalescing under 0.9 ({} kernels, worst first):",
        below.len()
    );
    for (c, k) in below {
        println!("    {c:.2} {k}");
    }
}

/// Prints one kernel's row, and under it why each failed stage failed and
/// why a stage was skipped for its own reason (a missing tool), except the
/// reason the `gpu` stage is skipped for every kernel (`gpu_skip`, said once
/// above the table).
fn print_row(r: &corpus::KernelReport, gpu_skip: Option<&str>) {
    print!("{:<28}", r.kernel);
    for (_, stage) in &r.stages {
        let v = match &stage.verdict {
            Verdict::Pass => "ok",
            Verdict::Fail(_) => "FAIL",
            Verdict::Skip(_) => "skip",
            Verdict::Refused(_) => "refused",
        };
        print!(" {v:>9}");
    }
    let total: f64 = r.stages.iter().map(|(_, s)| s.millis).sum();
    let ratio = if r.lower_bound_bytes > 0 {
        format!(
            "{:.2}",
            r.transfer_bytes as f64 / r.lower_bound_bytes as f64
        )
    } else {
        "-".to_owned()
    };
    // What the emulated GPU measured (`exec`): the least-filled kernel's
    // waves on the H200, sectors' coalescing, the serial accesses.
    let metrics = r.exec_counts.as_ref().map(|c| &c.metrics);
    let fixed = |v: Option<f64>| match v {
        None => "-".to_owned(),
        Some(v) if v > 0.0 && v < 0.005 => "<0.01".to_owned(),
        Some(v) => format!("{v:.2}"),
    };
    let waves = fixed(metrics.and_then(|m| m.min_waves_h200));
    let coalescing = fixed(metrics.and_then(|m| m.coalescing));
    let serial = metrics
        .filter(|m| m.traced)
        .map_or_else(|| "-".to_owned(), |m| m.serial_accesses.to_string());
    println!(
        " {:>8.1}ms {:>8} {:>12} {:>6} {waves:>6} {coalescing:>5} {serial:>8}",
        total, r.launches, r.transfer_bytes, ratio
    );
    if let Some(c) = r.exec_counts.as_ref().filter(|c| !c.agree()) {
        println!(
            "    exec: the device counted {} launches, {} bytes in, {} bytes out; the simulator {}, {}, {}",
            c.launches,
            c.to_device_bytes,
            c.to_host_bytes,
            c.simulated_launches,
            c.simulated_to_device_bytes,
            c.simulated_to_host_bytes
        );
    }
    for (name, stage) in &r.stages {
        match &stage.verdict {
            Verdict::Fail(why) => {
                for line in why.lines().take(6) {
                    println!("    {name}: {line}");
                }
            }
            Verdict::Refused(why) => {
                for line in why.lines().take(6) {
                    println!("    {name}: refused: {line}");
                }
            }
            // A stage skipped for its own reason (a missing tool), not
            // because an earlier one failed.
            Verdict::Skip(why)
                if !why.starts_with('`')
                    && *name != corpus::Stage::Numpy
                    && Some(why.as_str()) != gpu_skip =>
            {
                println!("    {name}: skipped: {why}");
            }
            _ => {}
        }
    }
    if let Some(g) = &r.gpu {
        let vs = |other: Option<f64>, name: &str| match other {
            Some(ms) => format!(", {name} {ms:.3} ms ({:.1}x)", ms / g.device_ms),
            None => String::new(),
        };
        println!(
            "    gpu: {:.3} ms (median of {}){}{}",
            g.device_ms,
            g.device_runs_ms.len(),
            vs(g.numpy_ms, "NumPy"),
            vs(g.cupy_ms, "CuPy")
        );
        match &g.estimate {
            Some(e) => println!(
                "    gpu: estimated {:.3} ms on the {} (kernels {:.3}, vendor calls {:.3}, copies {:.3}, waits {:.3}; docs/gpu.md){}",
                e.total_ms,
                e.device,
                e.kernels_ms,
                e.vendor_ms,
                e.copies_ms,
                e.synchronizations_ms,
                if e.untraced.is_empty() {
                    ""
                } else {
                    "; some kernels untraced"
                }
            ),
            None => println!(
                "    gpu: no estimate (no description of this device, or `exec` did not run)"
            ),
        }
        for n in &g.notes {
            println!("    gpu: {n}");
        }
    }
}

/// A non-negative number given to `option`.
fn number<T: std::str::FromStr>(text: &str, option: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("`{option}` takes a number, not `{text}`"))
}

/// Writes the report for machines.
fn write_json(path: &Path, reports: &[corpus::KernelReport]) -> Result<(), String> {
    let text = serde_json::to_string_pretty(reports).map_err(|e| e.to_string())?;
    std::fs::write(path, text).map_err(|e| format!("cannot write `{}`: {e}", path.display()))
}

/// Whether `--kernel NAME` names the kernel `kernel` (`category/name`):
/// by its whole name or by the name alone.
fn names(kernel: &str, name: &str) -> bool {
    kernel == name || kernel.rsplit('/').next() == Some(name)
}
