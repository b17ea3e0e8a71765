//! Project automation, run as `cargo xtask <command>`.
//!
//! - `bless`: rewrites the golden translation units that
//!   `cargo test -p sdfg-harness --test goldens` checks
//!   (`sdfg_harness::goldens`).
//! - `corpus [--kernel NAME]... [--goldens] [--with-atomics] [--exclude NAME]... [--preset NAME] [--backend sim|cuda|hip] [--require-compilers] [--sanitize address|thread] [--json FILE]`:
//!   runs every kernel of `corpus/npbench/` through the pipeline (parse,
//!   compile, validate, JSON round trip, host simulation, offload for the
//!   backend, device simulation, comparison with NumPy; for `cuda` and `hip`
//!   also emission of the translation unit, compiling it with real
//!   compilers, and executing it on the emulated GPU against NumPy) and
//!   prints one row per kernel. Exits non-zero when any stage fails or no
//!   kernel matches. `--require-compilers` makes a compile check or an
//!   execution skipped for a missing tool a failure; `--sanitize` builds and
//!   runs the emitted code with AddressSanitizer + UBSan or ThreadSanitizer;
//!   `--goldens` selects the golden kernels, `--with-atomics` the kernels
//!   whose emitted code has atomic updates. `--json` also writes the full
//!   report for machines. `--dir DIR` runs another directory of kernels in
//!   the corpus format; `--programs MANIFEST` runs the unmodified DaCe
//!   programs a `programs.json` manifest lists (`docs/corpus.md`). This
//!   executable is also the emulated GPU's runner (`sdfg_exec::child`).
//! - `dace [--require-dace] [PATH]...`: runs DaCe's own frontend
//!   (`to_sdfg` and `validate`) over every program of the corpus files
//!   (`corpus/tools/dace_check.py`), so that the corpus stays made of DaCe
//!   programs as DaCe reads them. The Python is `$SDFG_DACE_PYTHON`, else
//!   `target/dace-venv/bin/python` where it exists, else `python3`; without
//!   an importable `dace` package the check says skipped (a failure with
//!   `--require-dace`).

use sdfg_harness::corpus::{self, Verdict};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str = "usage: cargo xtask <command>\n\ncommands:\n  corpus [--kernel NAME]... [--goldens] [--with-atomics] [--exclude NAME]... [--preset NAME] [--backend sim|cuda|hip] [--require-compilers] [--sanitize address|thread] [--dir DIR | --programs MANIFEST] [--json FILE]\n            run the corpus through the pipeline and print a table\n  bless\n            rewrite the golden CUDA and HIP sources (crates/harness/tests/goldens/)\n  dace [--require-dace] [PATH]...\n            check that DaCe's own frontend accepts every corpus program (default: corpus/npbench)";

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
        Some("dace") => match dace_command(&args[1..]) {
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

fn workspace_root() -> PathBuf {
    // xtask lives in `<root>/xtask`.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The exit status of `dace_check.py` when `dace` cannot be imported.
const DACE_SKIPPED: i32 = 3;

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
    let venv = root.join("target/dace-venv/bin/python");
    let python = std::env::var_os("SDFG_DACE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            if venv.is_file() {
                venv
            } else {
                PathBuf::from("python3")
            }
        });
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
    let mut with_atomics = false;
    let mut dir: Option<PathBuf> = None;
    let mut programs: Option<PathBuf> = None;
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
            "--with-atomics" => with_atomics = true,
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
        .filter(|f| {
            !excluded
                .iter()
                .any(|k| f.name == *k || f.name.rsplit('/').next() == Some(k.as_str()))
        })
        .filter(|f| {
            kernels.is_empty()
                || kernels
                    .iter()
                    .any(|k| f.name == *k || f.name.rsplit('/').next() == Some(k.as_str()))
        })
        .collect();
    if let Some(k) = kernels.iter().find(|k| {
        !files
            .iter()
            .any(|f| f.name == **k || f.name.rsplit('/').next() == Some(k.as_str()))
    }) {
        return Err(format!("no corpus kernel named `{k}`"));
    }
    if files.is_empty() {
        return Err("the corpus is empty".to_owned());
    }
    let backend = sdfg_harness::backend(&backend)?;
    let files: Vec<_> = if with_atomics {
        let sdfg_harness::Backend::Code(target) = backend else {
            return Err(
                "`--with-atomics` needs a code-generating backend (`--backend cuda|hip`)"
                    .to_owned(),
            );
        };
        files
            .into_iter()
            .filter(|f| {
                sdfg_harness::goldens::generate(&root, target, &f.name)
                    .is_ok_and(|source| source.contains("sdfg::atomic_"))
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
    let emulated = sdfg_exec::EmulatedGpu::new(runner).sanitize(sanitize);
    let options = corpus::RunOptions {
        preset: &preset,
        backend,
        tools: &tools,
        python: &python,
        references: Some(&references),
        device: Ok(&emulated),
    };
    if matches!(backend, sdfg_harness::Backend::Code(_)) {
        println!("exec: {}", sdfg_exec::Device::describe(&emulated));
    }
    print!("{:<28}", "kernel");
    for s in corpus::stages(backend) {
        print!(" {s:>9}");
    }
    println!(
        " {:>10} {:>8} {:>12} {:>6}",
        "time", "launches", "h<->d bytes", "ratio"
    );
    let start = Instant::now();
    let mut reports = Vec::new();
    for f in &files {
        let r = match (&manifest, &programs) {
            (Some((m, files_root)), Some(path)) => {
                let entry = m
                    .programs
                    .iter()
                    .find(|e| e.name == f.name)
                    .ok_or_else(|| format!("no entry `{}`", f.name))?;
                corpus::run_program(entry, path, files_root, &options)
            }
            _ => corpus::run_kernel(f, &options),
        };
        print!("{:<28}", r.kernel);
        for (_, stage) in &r.stages {
            let v = match &stage.verdict {
                Verdict::Pass => "ok",
                Verdict::Fail(_) => "FAIL",
                Verdict::Skip(_) => "skip",
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
        println!(
            " {:>8.1}ms {:>8} {:>12} {:>6}",
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
                // A stage skipped for its own reason (a missing tool), not
                // because an earlier one failed.
                Verdict::Skip(why) if !why.starts_with('`') && name != "numpy" => {
                    println!("    {name}: skipped: {why}");
                }
                _ => {}
            }
        }
        reports.push(r);
    }
    let failed = reports
        .iter()
        .filter(|r| {
            !r.passed()
                || (require_compilers
                    && r.stages.iter().any(|(n, s)| {
                        (n == "cc" || n == "exec") && matches!(s.verdict, Verdict::Skip(_))
                    }))
        })
        .count();
    println!(
        "{} kernels, preset `{preset}`: {} passed every stage that ran, {failed} failed ({:.1}s)",
        reports.len(),
        reports.len() - failed,
        start.elapsed().as_secs_f64()
    );
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&reports).map_err(|e| e.to_string())?;
        std::fs::write(&path, text)
            .map_err(|e| format!("cannot write `{}`: {e}", path.display()))?;
    }
    Ok(if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
