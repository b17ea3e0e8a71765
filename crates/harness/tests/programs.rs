//! Programs whose meaning Python and NumPy define, each a corpus-format file
//! in `tests/programs/<category>/`: run through every stage, the simulated
//! host run (and the offloaded one, simulated) compared with what CPython
//! and NumPy compute for the same file. The `views` programs also run on
//! the emulated GPU for both backends, so that a view written on the device
//! and read by host code afterwards is checked in the emitted code too.
//!
//! On CI (`CI` set) NumPy must be there; elsewhere its absence skips the
//! comparison with a message.

use sdfg_exec::EmulatedGpu;
use sdfg_harness::corpus::{self, RunOptions, Stage, Verdict};
use std::path::PathBuf;

mod numpy_functions;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether NumPy can run the references (on CI it must be there).
fn numpy() -> Result<(), String> {
    let python = corpus::python_available();
    if let Err(why) = &python {
        assert!(
            std::env::var_os("CI").is_none(),
            "NumPy is needed on CI: {why}"
        );
        eprintln!("the NumPy comparisons are skipped: {why}");
    }
    python
}

/// Why a stage's verdict fails the test: a failure, or a skip on CI (off
/// CI a missing tool may skip a stage).
fn failure(verdict: &Verdict) -> Option<String> {
    match verdict {
        Verdict::Pass => None,
        Verdict::Fail(why) => Some(why.clone()),
        // These programs are in the supported subset: a refusal fails.
        Verdict::Refused(why) => Some(format!("refused: {why}")),
        // A stage these tests leave out (`--skip`) is not a missing tool.
        Verdict::Skip(why) if why.starts_with("--skip ") => None,
        Verdict::Skip(why) if std::env::var_os("CI").is_some() => Some(format!("skipped: {why}")),
        Verdict::Skip(_) => None,
    }
}

/// The options of one run: the `test` preset, no kept references.
fn options<'a>(
    backend: &str,
    tools: &'a std::path::Path,
    python: &'a Result<(), String>,
    device: &'a EmulatedGpu,
) -> RunOptions<'a> {
    RunOptions {
        disabled: &[],
        dace_sdfgs: None,
        args_on_device: false,
        preset: "test",
        backend: sdfg_harness::backend(backend).unwrap(),
        tools,
        python,
        references: None,
        device: Ok(device),
        gpu: Err("no GPU in this test"),
        repeat: 1,
        // The emulated GPU runs the programs (`exec`); a real one is not
        // asked for.
        // DaCe writes no SDFGs of these programs (`dace-import`).
        skip: &[Stage::Gpu, Stage::DaceImport],
    }
}

fn run(category: &str, backends: &[&str]) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/programs");
    let files: Vec<_> = corpus::discover(&dir)
        .unwrap()
        .into_iter()
        .filter(|f| f.name.starts_with(&format!("{category}/")))
        .collect();
    assert!(!files.is_empty(), "no programs in {category}/");
    let python = numpy();
    let tools = root().join("corpus/tools");
    let device = EmulatedGpu::new(env!("CARGO_BIN_EXE_sdfgc"));
    let mut failures = Vec::new();
    for backend in backends {
        for f in &files {
            let report = corpus::run_kernel(f, &options(backend, &tools, &python, &device));
            for (stage, s) in &report.stages {
                if let Some(why) = failure(&s.verdict) {
                    failures.push(format!("{} ({backend}) {stage}: {why}", f.name));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn python_semantics_of_powers_and_boolean_operators() {
    run("python", &["sim", "cuda", "hip"]);
}

#[test]
fn numpy_dtypes_and_functions() {
    run("numpy", &["sim", "cuda", "hip"]);
}

#[test]
fn persistent_kernels_read_shared_values_before_they_are_written_again() {
    run("persistent", &["sim", "cuda", "hip"]);
}

#[test]
fn numpy_elementwise_functions_match_numpy_for_every_dtype() {
    // The frontend's table of NumPy's functions of one and two operands,
    // every case against NumPy (`numpy_functions/mod.rs`).
    let python = numpy();
    if python.is_err() {
        return;
    }
    let tools = root().join("corpus/tools");
    let device = EmulatedGpu::new(env!("CARGO_BIN_EXE_sdfgc"));
    let failures = numpy_functions::check(&["sim", "cuda", "hip"], &|file, backend| {
        let mut o = options(backend, &tools, &python, &device);
        if backend == "hip" {
            // The device code of the HIP unit is the CUDA unit's, which
            // the emulated GPU executes: `hipcc` compiles it (`cc`), and
            // executing it again would only repeat the CUDA run.
            o.skip = &[Stage::Gpu, Stage::DaceImport, Stage::Exec];
        }
        corpus::run_kernel(file, &o)
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn module_level_code_is_not_the_program() {
    run("module", &["sim"]);
}

#[test]
fn basic_slices_bound_to_names_are_views() {
    run("views", &["sim", "cuda", "hip"]);
}

#[test]
fn unmodified_programs_of_a_manifest_match_their_numpy_versions() {
    // `corpus/programs/programs.json`: DaCe programs as users write them
    // (module-level test code, a dtype alias), their NumPy versions and
    // initializers, run as `cargo xtask corpus --programs` runs them.
    let manifest = root().join("corpus/programs/programs.json");
    let (m, files_root) = corpus::Manifest::read(&manifest).unwrap();
    assert!(m.programs.len() >= 2);
    let python = numpy();
    if python.is_err() {
        return;
    }
    let tools = root().join("corpus/tools");
    let device = EmulatedGpu::new(env!("CARGO_BIN_EXE_sdfgc"));
    for backend in ["sim", "cuda"] {
        for entry in &m.programs {
            let options = options(backend, &tools, &python, &device);
            let r = corpus::run_program(entry, &manifest, &files_root, &options);
            for (stage, s) in &r.stages {
                let bad = failure(&s.verdict);
                assert!(bad.is_none(), "{} ({backend}) {stage}: {bad:?}", entry.name);
            }
        }
    }
    // A manifest that is not one says why.
    let bad = std::env::temp_dir().join(format!("sdfg-bad-manifest-{}.json", std::process::id()));
    std::fs::write(&bad, r#"{"programs": [{"name": "x"}]}"#).unwrap();
    let e = corpus::Manifest::read(&bad).err().unwrap();
    let _ = std::fs::remove_file(&bad);
    assert!(
        e.contains("is not a programs manifest") && e.contains("missing field"),
        "{e}"
    );
}
