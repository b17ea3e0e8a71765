//! `cargo xtask dace-sdfg`: DaCe's `.sdfg` format both ways on the corpus,
//! checked by the real DaCe (issue #19).
//!
//! For every corpus kernel:
//!
//! - **ours**: this project's SDFG is exported twice, as the frontend
//!   lowers it (`host`) and offloaded for the CUDA accelerator (`cuda`,
//!   every pass up to offloading, as `sdfgc offload` runs them);
//! - **DaCe's**: DaCe's own SDFG of the kernel (`to_sdfg(simplify=True)`,
//!   written by `corpus/tools/dace_to_sdfg.py` into `target/dace-sdfg/own`)
//!   goes through the corpus's `dace-import` stage: imported, validated,
//!   simulated against NumPy, offloaded for CUDA, simulated on the device
//!   against NumPy, and exported again. Three GPU variants are written beside
//!   it (`.dace.gpu.sdfg` after `apply_gpu_transformations()`,
//!   `.dace.auto-gpu.sdfg` after `auto_optimize(..., GPU)`,
//!   `.dace.gpu-storage.sdfg` after `apply_gpu_storage`) for the fuzzer's
//!   `dace-mutants` target; the command says how many import. The third
//!   also goes through the `dace-import` stage with `--args-on-device`
//!   (column "DaCe's, on GPU"): its inputs and outputs stay on the device.
//!
//! `corpus/tools/dace_sdfg_check.py` then has DaCe load every exported
//! file, validate it and generate code from it. A file DaCe refuses where
//! DaCe's own pipeline on the same program fails the same way is reported
//! as DaCe's limitation, with DaCe's message, and does not fail the
//! command; an import that refuses a construct by name is reported and
//! does not fail it either (as DaCe's limitation where DaCe cannot build
//! the refused file itself: `dace_sdfg_check.py --build`). A wrong answer, an invalid import or any other
//! refusal by DaCe does. Without DaCe the check says skipped (a failure
//! with `--require-dace`).

use sdfg_harness::corpus;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The two exports of each kernel: its name in the table and whether it
/// is offloaded for the CUDA accelerator.
const VARIANTS: [(&str, bool); 2] = [("host", false), ("cuda", true)];

/// The column of DaCe's own SDFG, imported and offloaded: the corpus's
/// `dace-import` stage's.
const IMPORTED: &str = corpus::Stage::DaceImport.name();

/// The column of DaCe's own SDFG after `apply_gpu_storage` (its inputs and
/// outputs already on the GPU), imported and offloaded with them there.
const ON_DEVICE: &str = "dace-gpu-storage";

/// Where DaCe's own SDFGs of the corpus are kept.
pub(crate) fn own_dir(root: &Path) -> PathBuf {
    root.join("target/dace-sdfg/own")
}

/// Runs the command.
pub(crate) fn command(args: &[String], root: &Path) -> Result<ExitCode, String> {
    let mut require = false;
    let mut kernels: Vec<String> = Vec::new();
    let mut out = root.join("target/dace-sdfg");
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().cloned().ok_or(format!("`{a}` needs a value"));
        match a.as_str() {
            "--require-dace" => require = true,
            "--kernel" => kernels.push(value()?),
            "--out" => out = PathBuf::from(value()?),
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    let all = corpus::discover(&root.join("corpus/npbench"))
        .map_err(|e| format!("cannot list the corpus: {e}"))?;
    let selected: Vec<&corpus::KernelFile> = all
        .iter()
        .filter(|k| {
            kernels.is_empty()
                || kernels
                    .iter()
                    .any(|n| k.name == *n || k.name.ends_with(&format!("/{n}")))
        })
        .collect();
    if selected.is_empty() {
        return Err("no corpus kernel matches `--kernel`".to_owned());
    }
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create `{}`: {e}", out.display()))?;
    // (kernel, variant) -> status and message.
    let mut results: BTreeMap<(String, &str), (String, String)> = BTreeMap::new();
    let mut files: Vec<(String, &str, String)> = Vec::new();
    for k in &selected {
        for (variant, offload) in VARIANTS {
            let stem = k.name.replace('/', "__");
            let path = out.join(format!("{stem}.{variant}.sdfg"));
            match export(&k.path, offload) {
                Ok(text) => {
                    std::fs::write(&path, text)
                        .map_err(|e| format!("cannot write `{}`: {e}", path.display()))?;
                    let target = if offload { ":gpu" } else { "" };
                    files.push((
                        k.name.clone(),
                        variant,
                        format!("{}={}{target}", path.display(), k.path.display()),
                    ));
                }
                Err(e) => {
                    results.insert((k.name.clone(), variant), ("export".to_owned(), e));
                }
            }
        }
    }
    let python = crate::dace_python(root);
    // DaCe's own SDFGs, through the `dace-import` stage.
    let own = own_dir(root);
    let dumped = std::process::Command::new(&python)
        .arg(root.join("corpus/tools/dace_to_sdfg.py"))
        .arg(&own)
        .args(selected.iter().map(|k| &k.path))
        .output()
        .map_err(|e| format!("cannot run `{}`: {e}", python.display()))?;
    let mut gpu_variants = Vec::new();
    if dumped.status.code() != Some(crate::DACE_SKIPPED) {
        for line in String::from_utf8_lossy(&dumped.stdout).lines() {
            let Ok(record) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            // The GPU variants are for the fuzzer (`dace-mutants`); the
            // `dace-import` stage reads the lowered one.
            let variant = record["variant"].as_str().unwrap_or("lowered");
            if variant != "lowered" {
                gpu_variants.push(record);
                continue;
            }
            if record["status"] != "ok" {
                let program = record["program"].as_str().unwrap_or("?");
                if let Some(k) = selected
                    .iter()
                    .find(|k| k.path.to_string_lossy() == program)
                {
                    let message = record["message"].as_str().unwrap_or("").to_owned();
                    results.insert(
                        (k.name.clone(), IMPORTED),
                        (
                            "dace-failed".to_owned(),
                            format!("DaCe's to_sdfg: {message}"),
                        ),
                    );
                }
            }
        }
        let numpy = corpus::python_available();
        let tools = root.join("corpus/tools");
        let references = root.join("target/sdfg-references");
        let backend = sdfg_harness::backend("cuda")?;
        use corpus::Stage;
        let skip: Vec<Stage> = Stage::for_backend(backend)
            .iter()
            .copied()
            .filter(|s| {
                ![
                    Stage::Parse,
                    Stage::Compile,
                    Stage::Validate,
                    Stage::DaceImport,
                ]
                .contains(s)
            })
            .collect();
        let options = corpus::RunOptions {
            preset: "test",
            backend,
            tools: &tools,
            python: &numpy,
            references: Some(&references),
            device: Err("not needed"),
            gpu: Err("not needed"),
            repeat: 1,
            skip: &skip,
            disabled: &[],
            dace_sdfgs: Some(&own),
            args_on_device: false,
        };
        // DaCe's lowered SDFG, and the same after `apply_gpu_storage` with
        // every argument's home the device.
        for (column, args_on_device) in [(IMPORTED, false), (ON_DEVICE, true)] {
            let options = corpus::RunOptions {
                args_on_device,
                ..options
            };
            for k in &selected {
                let lowered = results.get(&(k.name.clone(), IMPORTED));
                if lowered.is_some_and(|(status, _)| status == "dace-failed") {
                    continue; // DaCe could not lower it
                }
                let report = corpus::run_kernel(k, &options);
                let verdict = report
                    .stages
                    .iter()
                    .find(|(s, _)| *s == Stage::DaceImport)
                    .map(|(_, st)| st.verdict.clone());
                let offloaded = if args_on_device {
                    corpus::dace_gpu_storage_offloaded_file(&own, &k.name)
                } else {
                    corpus::dace_offloaded_file(&own, &k.name)
                };
                match verdict {
                    Some(corpus::Verdict::Pass) => files.push((
                        k.name.clone(),
                        column,
                        format!("{}={}:gpu", offloaded.display(), k.path.display()),
                    )),
                    Some(corpus::Verdict::Fail(why)) => {
                        results.insert((k.name.clone(), column), ("failed".to_owned(), why));
                    }
                    Some(corpus::Verdict::Refused(why)) => {
                        results.insert((k.name.clone(), column), ("refused".to_owned(), why));
                    }
                    Some(corpus::Verdict::Skip(why)) => {
                        results.insert((k.name.clone(), column), ("skipped".to_owned(), why));
                    }
                    None => {}
                }
            }
        }
    }
    let script = root.join("corpus/tools/dace_sdfg_check.py");
    refusals_daces_build_fails(&python, &script, &own, &mut results)?;
    let output = std::process::Command::new(&python)
        .arg(&script)
        .args(files.iter().map(|(_, _, arg)| arg))
        .output()
        .map_err(|e| format!("cannot run `{}`: {e}", python.display()))?;
    if output.status.code() == Some(crate::DACE_SKIPPED) {
        print!("{}", String::from_utf8_lossy(&output.stdout));
        println!(
            "({} files exported to {}; DaCe's check skipped, not passed)",
            files.len(),
            out.display()
        );
        return Ok(if require {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        });
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let records: Vec<serde_json::Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    for ((kernel, variant, _), record) in files.iter().zip(&records) {
        let status = record["status"].as_str().unwrap_or("?").to_owned();
        let mut message = record["message"].as_str().unwrap_or("").to_owned();
        if let Some(own) = record["dace_own"].as_str() {
            message = format!("{message}; DaCe's own pipeline: {own}");
        }
        results.insert((kernel.clone(), variant), (status, message));
    }
    if records.len() != files.len() {
        eprint!("{}", String::from_utf8_lossy(&output.stderr));
        return Err(format!(
            "the check reported {} of {} files",
            records.len(),
            files.len()
        ));
    }
    without_persistent_kernels(&python, &script, &selected, &out, &mut results)?;
    let code = report(&selected, &results);
    report_gpu_variants(&gpu_variants);
    Ok(code)
}

/// Says what became of DaCe's GPU variants of the kernels
/// (`apply_gpu_transformations()`, `auto_optimize(..., GPU)`, written by
/// `dace_to_sdfg.py` beside the lowered SDFGs for the fuzzer's
/// `dace-mutants` target): how many DaCe wrote, and how many of those the
/// import reads and the validator accepts. A refusal is reported, not a
/// failure of the command (the values they compute are checked by
/// `crates/harness/tests/dace_corpus_fixtures.rs` on the kept ones, and
/// by the fuzzer).
fn report_gpu_variants(records: &[serde_json::Value]) {
    if records.is_empty() {
        return;
    }
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut notes = Vec::new();
    for record in records {
        let file = record["file"].as_str().unwrap_or("?");
        let status = if record["status"] != "ok" {
            notes.push(format!(
                "{file}: DaCe failed: {}",
                record["message"].as_str().unwrap_or("")
            ));
            "dace-failed"
        } else {
            match sdfg_harness::load_sdfg(Path::new(file)) {
                Err(e) => {
                    notes.push(format!("refused: {e}"));
                    "refused"
                }
                Ok(sdfg) => match sdfg_ir::validate(&sdfg) {
                    Ok(_) => "ok",
                    Err(e) => {
                        notes.push(format!("{file}: invalid: {e}"));
                        "invalid"
                    }
                },
            }
        };
        *counts.entry(status).or_default() += 1;
    }
    let summary: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
    println!(
        "
DaCe's GPU variants (apply_gpu_transformations, auto_optimize for the GPU; for `cargo xtask fuzz --target dace-mutants`): {}",
        summary.join(", ")
    );
    for n in &notes {
        println!("- {n}");
    }
}

/// DaCe's code generator takes a persistent kernel only where its device
/// maps share a dimensionality (`NotImplementedError` otherwise, which the
/// check reports as DaCe's limitation). For a DaCe user the way on is
/// `sdfgc offload --no-persistent`: each such kernel of ours is offloaded
/// so again and checked, and the note says how that went; DaCe refusing
/// that file too is a failure.
fn without_persistent_kernels(
    python: &Path,
    script: &Path,
    kernels: &[&corpus::KernelFile],
    out: &Path,
    results: &mut BTreeMap<(String, &str), (String, String)>,
) -> Result<(), String> {
    let mut files = Vec::new();
    for k in kernels {
        let Some((status, message)) = results.get(&(k.name.clone(), "cuda")) else {
            continue;
        };
        if status != "dace-limitation" || !message.starts_with("NotImplementedError") {
            continue;
        }
        let path = out.join(format!(
            "{}.cuda-no-persistent.sdfg",
            k.name.replace('/', "__")
        ));
        let text = export_with(&k.path, true, false)?;
        std::fs::write(&path, text)
            .map_err(|e| format!("cannot write `{}`: {e}", path.display()))?;
        files.push((k.name.clone(), path));
    }
    if files.is_empty() {
        return Ok(());
    }
    let output = std::process::Command::new(python)
        .arg(script)
        .args(files.iter().map(|(_, p)| p))
        .output()
        .map_err(|e| format!("cannot run `{}`: {e}", python.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let records = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok());
    for ((kernel, _), record) in files.iter().zip(records) {
        let status = record["status"].as_str().unwrap_or("?");
        if let Some(entry) = results.get_mut(&(kernel.clone(), "cuda")) {
            if status == "ok" {
                entry.1 = format!("{}; offloaded with --no-persistent: ok", entry.1);
            } else {
                let message = record["message"].as_str().unwrap_or("");
                *entry = (
                    "failed".to_owned(),
                    format!(
                        "{}; offloaded with --no-persistent: {status}: {message}",
                        entry.1
                    ),
                );
            }
        }
    }
    Ok(())
}

/// The import refuses some of DaCe's own SDFGs because DaCe cannot build
/// them either (a tasklet assigning one value through a memlet of many
/// elements, which DaCe's code generator makes a pointer assignment): each
/// refused file is built by DaCe (`dace_sdfg_check.py --build`), and where
/// DaCe's build fails too, the refusal is DaCe's limitation, reported with
/// both messages. A refusal of a file DaCe builds stays a refusal.
fn refusals_daces_build_fails(
    python: &Path,
    script: &Path,
    own: &Path,
    results: &mut BTreeMap<(String, &str), (String, String)>,
) -> Result<(), String> {
    let refused: Vec<(String, &str)> = results
        .iter()
        .filter(|((_, variant), (status, _))| {
            [IMPORTED, ON_DEVICE].contains(variant) && status == "refused"
        })
        .map(|((kernel, variant), _)| (kernel.clone(), *variant))
        .collect();
    if refused.is_empty() {
        return Ok(());
    }
    let files: Vec<PathBuf> = refused
        .iter()
        .map(|(k, variant)| {
            if *variant == ON_DEVICE {
                corpus::dace_gpu_storage_file(own, k)
            } else {
                corpus::dace_sdfg_file(own, k)
            }
        })
        .collect();
    let output = std::process::Command::new(python)
        .arg(script)
        .arg("--build")
        .args(&files)
        .output()
        .map_err(|e| format!("cannot run `{}`: {e}", python.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let records = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok());
    for ((kernel, variant), record) in refused.iter().zip(records) {
        let status = record["status"].as_str().unwrap_or("?");
        let message = record["message"].as_str().unwrap_or("");
        if let Some(entry) = results.get_mut(&(kernel.clone(), *variant)) {
            // Only the compiler's refusal is DaCe's limitation; DaCe
            // refusing the file earlier, or a missing CMake, is noted.
            let verdict = if status == "build" {
                "dace-limitation"
            } else {
                "refused"
            };
            *entry = (
                verdict.to_owned(),
                format!(
                    "{}; DaCe's own build of the file: {status}: {message}",
                    entry.1
                ),
            );
        }
    }
    Ok(())
}

/// Prints the table and the notes; fails where DaCe refused a file its own
/// pipeline does not refuse the same way.
fn report(
    kernels: &[&corpus::KernelFile],
    results: &BTreeMap<(String, &str), (String, String)>,
) -> ExitCode {
    println!(
        "{:<32} {:<16} {:<16} {:<18} {:<16}",
        "kernel", "ours, host", "ours, cuda", "DaCe's, offloaded", "DaCe's, on GPU"
    );
    let mut notes = Vec::new();
    let mut failed = 0;
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for k in kernels {
        let cell = |variant: &'static str| -> String {
            results
                .get(&(k.name.clone(), variant))
                .map_or_else(|| "?".to_owned(), |(s, _)| s.clone())
        };
        println!(
            "{:<32} {:<16} {:<16} {:<18} {:<16}",
            k.name,
            cell("host"),
            cell("cuda"),
            cell(IMPORTED),
            cell(ON_DEVICE)
        );
        for variant in ["host", "cuda", IMPORTED, ON_DEVICE] {
            if let Some((status, message)) = results.get(&(k.name.clone(), variant)) {
                *counts.entry(status.as_str()).or_default() += 1;
                if status != "ok" {
                    notes.push(format!("{} ({variant}): {status}: {message}", k.name));
                }
                if !["ok", "dace-limitation", "refused", "dace-failed"].contains(&status.as_str()) {
                    failed += 1;
                }
            }
        }
    }
    let summary: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
    println!("\n{}", summary.join(", "));
    for n in &notes {
        println!("- {n}");
    }
    if failed > 0 {
        println!("\n{failed} failures (wrong answers, invalid imports, or files DaCe refuses)");
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The DaCe text of the kernel in `path`: lowered, and offloaded for CUDA
/// where `offload`.
fn export(path: &Path, offload: bool) -> Result<String, String> {
    export_with(path, offload, true)
}

/// [`export`], with persistent kernels where `persistent`.
fn export_with(path: &Path, offload: bool, persistent: bool) -> Result<String, String> {
    let text = sdfg_harness::read_text(path).map_err(|e| e.to_string())?;
    let module = sdfg_frontend::Module::parse(&path.display().to_string(), &text)
        .map_err(|e| e.to_string())?;
    let name = sdfg_harness::default_program(&module)
        .ok_or_else(|| format!("`{}` names no program", path.display()))?;
    let mut sdfg = module
        .compile_with(&name, &BTreeMap::new())
        .map_err(|e| e.to_string())?;
    if offload {
        let backend = sdfg_harness::backend("cuda")?;
        let mut options = sdfg_passes::PipelineOptions::default();
        options.offload.no_persistent = !persistent;
        sdfg = sdfg_passes::pipeline::run_owned(
            sdfg,
            Some(backend.accelerator()),
            &options,
            &sdfg_passes::Pass::TO_OFFLOAD,
        )
        .map_err(|e| e.to_string())?
        .0
        .into_inner();
    }
    sdfg_dace_format::to_dace_string(&sdfg).map_err(|e| e.to_string())
}
