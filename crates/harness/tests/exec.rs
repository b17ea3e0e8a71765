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
    // GEMM: a vendor GEMM between two kernels; cholesky2: potrf, whose
    // status flag is read back once per run.
    for (name, launches) in [("polybench/gemm", 3), ("polybench/cholesky2", 5)] {
        let file = files.iter().find(|f| f.name == name).unwrap();
        for backend in ["cuda", "hip"] {
            let options = RunOptions {
                preset: "test",
                backend: sdfg_harness::backend(backend).unwrap(),
                tools: &tools,
                python: &python,
                references: None,
                device: Ok(&device),
            };
            let report = corpus::run_kernel(file, &options);
            let exec = &report.stages.iter().find(|(s, _)| s == "exec").unwrap().1;
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
        preset: "test",
        backend: sdfg_harness::backend("cuda").unwrap(),
        tools: &tools,
        python: &python,
        references: None,
        device: Err("no device in this test"),
    };
    let gemm = files.iter().find(|f| f.name == "polybench/gemm").unwrap();
    let report = corpus::run_kernel(gemm, &options);
    let exec = &report.stages.iter().find(|(s, _)| s == "exec").unwrap().1;
    assert_eq!(
        exec.verdict,
        Verdict::Skip("no device in this test".to_owned())
    );
    assert!(report.passed());
}
