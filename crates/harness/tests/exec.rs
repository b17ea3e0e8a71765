//! Corpus programs run on the emulated GPU beyond the presets: sizes whose
//! grids exceed a launch limit, compared with the simulator's host run.

use sdfg_codegen::ParameterKind;
use sdfg_exec::{Argument, Device, EmulatedGpu, ExecError};
use sdfg_sim::{ArrayValue, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

#[test]
fn mandelbrot1_runs_600000_by_2_points_past_the_grid_limit() {
    // 600,000 rows of 2 points: 75,000 blocks of 8 rows on CUDA's y axis
    // (150,000 of 4 on HIP's), over the 65,535 a grid may have there.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let file = root.join("corpus/npbench/misc/mandelbrot1.py");
    let text = std::fs::read_to_string(&file).unwrap();
    let module = sdfg_frontend::Module::parse("mandelbrot1.py", &text).unwrap();
    let sdfg = module.compile("kernel").unwrap();
    let symbols = BTreeMap::from([
        ("XN".to_owned(), 2i64),
        ("YN".to_owned(), 600_000),
        ("L".to_owned(), 2),
    ]);
    let scalars = [
        ("xmin", -1.75),
        ("xmax", 0.25),
        ("ymin", -1.0),
        ("ymax", 1.0),
        ("maxiter", 3.0),
        ("horizon", 2.0),
    ];
    // The simulator's host run is the reference.
    let mut host_args = sdfg_sim::Arguments::default();
    for (name, v) in &symbols {
        if sdfg.arguments.contains(name) {
            host_args.symbols.insert(name.clone(), *v);
        }
    }
    let scalar = |name: &str| {
        let desc = &sdfg.containers[name];
        let v = scalars.iter().find(|(n, _)| *n == name).unwrap().1;
        let mut a = ArrayValue::zeros(desc.dtype, vec![]);
        a.elements.set(0, Value::Float(v).cast(desc.dtype));
        a
    };
    for (name, _) in &scalars {
        host_args.arrays.insert((*name).to_owned(), scalar(name));
    }
    let valid = sdfg_ir::validate(&sdfg).unwrap();
    let reference = sdfg_sim::Simulator::new().run(valid, &host_args).unwrap();
    let device = EmulatedGpu::new(env!("CARGO_BIN_EXE_sdfgc"));
    for name in ["cuda", "hip"] {
        let Ok(sdfg_harness::Backend::Code(target)) = sdfg_harness::backend(name) else {
            panic!("the `{name}` backend is not linked");
        };
        let (mut offloaded, _) =
            sdfg_passes::offload(&sdfg, target.dialect, &sdfg_passes::Options::default()).unwrap();
        sdfg_passes::lower_library_nodes(&mut offloaded, target.dialect).unwrap();
        let unit = sdfg_codegen::emit(&offloaded, target.dialect).unwrap();
        let mut args: Vec<Argument> = unit
            .parameters
            .iter()
            .map(|p| match p.kind {
                ParameterKind::Symbol(_) => Argument::Symbol(symbols[&p.name]),
                ParameterKind::Container(_) => Argument::Array(scalar(&p.name)),
                ParameterKind::Return(t) => {
                    let shape = p
                        .shape
                        .iter()
                        .map(|e| e.eval(&symbols).unwrap() as usize)
                        .collect();
                    Argument::Array(ArrayValue::zeros(t, shape))
                }
            })
            .collect();
        let dir =
            std::env::temp_dir().join(format!("sdfg-mandelbrot-{}-{name}", std::process::id()));
        let result = device
            .compile(&unit, &dir)
            .and_then(|c| device.execute(&c, &mut args));
        let _ = std::fs::remove_dir_all(&dir);
        let execution = match result {
            Err(ExecError::Missing(why)) if std::env::var_os("CI").is_none() => {
                eprintln!("skipped: {why}");
                return;
            }
            other => other.unwrap(),
        };
        assert_eq!(execution.status, 0, "{}", execution.messages);
        for (p, a) in unit.parameters.iter().zip(&args) {
            if let (ParameterKind::Return(_), Argument::Array(v)) = (p.kind, a) {
                // Complex powers round differently in C++ and in the
                // simulator: equal within 1e-9, relatively.
                let r = &reference.outputs[&p.name];
                assert_eq!(v.shape, r.shape);
                for i in 0..r.elements.len() {
                    let (x, y) = (v.get(i).unwrap().to_c64(), r.get(i).unwrap().to_c64());
                    assert!(
                        (x - y).norm() <= 1e-12 + 1e-9 * y.norm(),
                        "{name}: element {i} of `{}` is {x}, the host run's {y}",
                        p.name
                    );
                }
            }
        }
    }
}

#[test]
fn the_exec_stage_compares_with_numpy_and_counts_what_the_simulator_counts() {
    use sdfg_harness::corpus::{self, RunOptions, Verdict};
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let files = corpus::discover(&root.join("corpus/npbench")).unwrap();
    let python = corpus::python_available();
    let device = EmulatedGpu::new(env!("CARGO_BIN_EXE_sdfgc"));
    let tools = root.join("corpus/tools");
    // GEMM: one vendor GEMM, which absorbed the kernels scaling A and
    // adding beta * C; cholesky2: potrf, whose status flag is read back
    // once per run (its result is computed in place: no copy kernel into
    // the return value).
    for (name, launches) in [("polybench/gemm", 1), ("polybench/cholesky2", 4)] {
        let file = files.iter().find(|f| f.name == name).unwrap();
        for backend in ["cuda", "hip"] {
            let options = RunOptions {
                disabled: &[],
                dace_sdfgs: None,
                args_on_device: false,
                preset: "test",
                backend: sdfg_harness::backend(backend).unwrap(),
                tools: &tools,
                python: &python,
                references: None,
                device: Ok(&device),
                gpu: Err("no GPU in this test"),
                repeat: 1,
                skip: &[],
            };
            let report = corpus::run_kernel(file, &options);
            let exec = &report
                .stages
                .iter()
                .find(|(s, _)| *s == corpus::Stage::Exec)
                .unwrap()
                .1;
            match &exec.verdict {
                Verdict::Skip(why) if std::env::var_os("CI").is_none() => {
                    eprintln!("skipped: {why}");
                    return;
                }
                v => assert_eq!(v, &Verdict::Pass, "{name} on {backend}"),
            }
            let counts = report.exec_counts.expect("the emulated GPU counts");
            assert!(counts.agree(), "{name} on {backend}: {counts:?}");
            assert_eq!(counts.launches, launches, "{name} on {backend}");
            assert!(counts.to_device_bytes > 0 && counts.to_host_bytes > 0);
        }
    }
    // Without a device the stage says why, and nothing else changes.
    let options = RunOptions {
        disabled: &[],
        dace_sdfgs: None,
        args_on_device: false,
        preset: "test",
        backend: sdfg_harness::backend("cuda").unwrap(),
        tools: &tools,
        python: &python,
        references: None,
        device: Err("no device in this test"),
        gpu: Err("no GPU in this test"),
        repeat: 1,
        skip: &[],
    };
    let gemm = files.iter().find(|f| f.name == "polybench/gemm").unwrap();
    let report = corpus::run_kernel(gemm, &options);
    let exec = &report
        .stages
        .iter()
        .find(|(s, _)| *s == corpus::Stage::Exec)
        .unwrap()
        .1;
    assert_eq!(
        exec.verdict,
        Verdict::Skip("no device in this test".to_owned())
    );
    assert!(report.passed());
}

/// The `gpu` stage drives any [`Device`] through the same interface: with
/// the emulated GPU standing in for a real one, it compiles, runs one
/// warm-up and three timed calls of `NAME_run`, compares with NumPy, and
/// times NumPy on the same kernel.
#[test]
fn the_gpu_stage_times_the_program_and_numpy_through_the_device_interface() {
    use sdfg_harness::corpus::{self, RunOptions, Verdict};
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let files = corpus::discover(&root.join("corpus/npbench")).unwrap();
    let python = corpus::python_available();
    let exec = EmulatedGpu::new(env!("CARGO_BIN_EXE_sdfgc"));
    let gpu = EmulatedGpu::new(env!("CARGO_BIN_EXE_sdfgc"))
        .warmup(1)
        .runs(3);
    let tools = root.join("corpus/tools");
    let gemm = files.iter().find(|f| f.name == "polybench/gemm").unwrap();
    let skip = [corpus::Stage::Exec];
    let options = RunOptions {
        disabled: &[],
        dace_sdfgs: None,
        args_on_device: false,
        preset: "test",
        backend: sdfg_harness::backend("cuda").unwrap(),
        tools: &tools,
        python: &python,
        references: None,
        device: Ok(&exec),
        gpu: Ok(&gpu),
        repeat: 2,
        skip: &skip,
    };
    let report = corpus::run_kernel(gemm, &options);
    let stage = |name: corpus::Stage| &report.stages.iter().find(|(s, _)| *s == name).unwrap().1;
    assert_eq!(
        stage(corpus::Stage::Exec).verdict,
        Verdict::Skip("--skip exec".to_owned())
    );
    match &stage(corpus::Stage::Gpu).verdict {
        Verdict::Skip(why) if std::env::var_os("CI").is_none() => {
            eprintln!("skipped: {why}");
            return;
        }
        v => assert_eq!(v, &Verdict::Pass),
    }
    let timing = report
        .gpu
        .as_ref()
        .expect("the gpu stage reports its timing");
    assert_eq!(timing.device_runs_ms.len(), 3);
    assert!(timing.device_ms > 0.0);
    assert!(timing.device.starts_with("the emulated GPU"));
    if python.is_ok() {
        let numpy = timing.numpy_ms.expect("NumPy was timed");
        assert!(numpy > 0.0);
        assert_eq!(timing.speedup_vs_numpy, Some(numpy / timing.device_ms));
        // CuPy is not installed here: said, not passed over.
        if timing.cupy_ms.is_none() {
            assert!(
                timing.notes.iter().any(|n| n.starts_with("cupy: ")),
                "{:?}",
                timing.notes
            );
        }
    }
    assert!(report.passed());
}

/// CuPy's timing mode of the reference runner, with a stand-in `cupy`
/// (NumPy behind CuPy's names) on the module path: the kernel runs with it
/// as its `np`, each call ends with a synchronization, and the outputs are
/// brought back and compared with NumPy's.
#[test]
fn the_reference_runner_times_a_kernel_with_cupy_as_its_array_module() {
    if sdfg_harness::corpus::python_available().is_err() {
        assert!(std::env::var_os("CI").is_none(), "CI has NumPy");
        eprintln!("skipped: no python3 with NumPy");
        return;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::temp_dir().join(format!("sdfg-fake-cupy-{}", std::process::id()));
    let package = dir.join("cupy");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::write(
        package.join("__init__.py"),
        "from numpy import *\nimport numpy as _np\nSYNCS = [0]\n\
         def asnumpy(a):\n    return _np.asarray(a)\n\
         class _Device:\n    def synchronize(self):\n        SYNCS[0] += 1\n\
         class cuda:\n    Device = _Device\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let run = |kernel: &str, extra: &[&str]| {
        std::process::Command::new("python3")
            .env("PYTHONPATH", &dir)
            .arg(root.join("corpus/tools/reference.py"))
            .arg(root.join(kernel))
            .args(["--preset", "test", "--out"])
            .arg(&out_dir)
            .args(extra)
            .output()
            .unwrap()
    };
    let out = run(
        "corpus/npbench/polybench/gemm.py",
        &["--time", "3", "--array-module", "cupy"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let timing: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("timing.json")).unwrap())
            .unwrap();
    assert_eq!(timing["module"], "cupy");
    assert_eq!(timing["runs_ms"].as_array().unwrap().len(), 3);
    assert!(timing["median_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(timing["matches_numpy"], true);
    // An array module that does not exist is an error, not a time.
    let out = run(
        "corpus/npbench/polybench/gemm.py",
        &["--time", "1", "--array-module", "jax"],
    );
    assert!(!out.status.success());
    let _ = std::fs::remove_dir_all(&dir);
}
