//! End-to-end tests of the `sdfgc` binary.

use std::path::PathBuf;
use std::process::{Command, Output};

fn sdfgc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sdfgc"))
        .args(args)
        .output()
        .expect("run sdfgc")
}

/// A scratch file unique to this test process and name.
fn scratch(name: &str, contents: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sdfgc-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    let path = dir.join(name);
    std::fs::write(&path, contents).expect("write scratch file");
    path
}

fn example_json(name: &str) -> String {
    let (_, make) = sdfg_ir::examples::all()
        .into_iter()
        .find(|(n, _)| *n == name)
        .expect("example exists");
    make().expect("example builds").to_json()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn validate_accepts_every_example_silently() {
    for (name, make) in sdfg_ir::examples::all() {
        let json = make().expect("example builds").to_json();
        let path = scratch(&format!("{name}.json"), &json);
        let out = sdfgc(&["validate", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out.stdout));
        assert!(
            out.stdout.is_empty(),
            "{name} printed: {}",
            text(&out.stdout)
        );
    }
}

#[test]
fn validate_accepts_the_committed_golden_file() {
    let golden =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ir/tests/out/offloaded_scale.json");
    let out = sdfgc(&["validate", golden.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(out.stdout.is_empty());
}

#[test]
fn validate_reports_a_kernel_reading_host_memory() {
    // Hand edit: move the device twin to host memory, so the kernel map
    // `scale` now reads a host array.
    let json = example_json("offloaded_scale");
    let needle = "\"x_dev\": {\n      \"dtype\": \"float64\",\n      \"transient\": true,\n      \"storage\": \"device_global\"";
    assert!(json.contains(needle), "fixture layout changed");
    let edited = json.replace(needle, &needle.replace("device_global", "host"));
    let path = scratch("kernel_reads_host.json", &edited);
    let out = sdfgc(&["validate", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let report = text(&out.stdout);
    let line = report
        .lines()
        .find(|l| l.contains("device code in `scale`"))
        .unwrap_or_else(|| panic!("no error names the map:\n{report}"));
    assert!(line.contains("container `x_dev`"), "{line}");
    assert!(line.contains("host storage"), "{line}");
}

#[test]
fn validate_prints_every_error() {
    let json = example_json("axpy").replace("\"N\": \"int64\"", "\"N\": \"float64\"");
    let json = json.replace("\"data\": \"x\"", "\"data\": \"missing\"");
    let path = scratch("two_errors.json", &json);
    let out = sdfgc(&["validate", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let report = text(&out.stdout);
    assert!(report.contains("symbol `N` has type float64"), "{report}");
    assert!(
        report.contains("container `missing` does not exist"),
        "{report}"
    );
    assert!(report.lines().count() >= 2, "{report}");
}

#[test]
fn unreadable_file_is_a_clear_error() {
    let out = sdfgc(&["validate", "/nonexistent/dir/sdfg.json"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("cannot read `/nonexistent/dir/sdfg.json`"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn malformed_json_names_line_and_column() {
    let path = scratch("broken.json", "{\n  \"name\": \"x\",\n  oops\n}");
    let out = sdfgc(&["validate", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("line 3"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn json_that_is_not_an_sdfg_is_a_clear_error() {
    let path = scratch("not_sdfg.json", "{\"name\": 3}");
    let out = sdfgc(&["dot", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("is not a valid SDFG"));
}

#[test]
fn malformed_expression_inside_json_is_a_clear_error() {
    let json = example_json("axpy").replace("\"0:N\"", "\"0:N +\"");
    let path = scratch("bad_range.json", &json);
    let out = sdfgc(&["validate", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("range `0:N +`"), "{err}");
}

#[test]
fn dot_draws_storage_colours_and_copies() {
    let path = scratch("scale.json", &example_json("offloaded_scale"));
    let out = sdfgc(&["dot", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let dot = text(&out.stdout);
    assert!(dot.starts_with("digraph \"offloaded_scale\""));
    assert!(
        dot.contains("fillcolor=palegreen"),
        "device storage colour missing"
    );
    assert!(
        dot.contains("color=red"),
        "host-device copy not highlighted"
    );
    assert!(
        dot.contains("map scale [device_kernel]"),
        "kernel cluster missing"
    );
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir()
        .join(format!("sdfgc-test-{}", std::process::id()))
        .join(name);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

#[test]
fn run_reads_inputs_writes_outputs_and_reports_transfers() {
    let path = scratch("run_scale.json", &example_json("offloaded_scale"));
    let inputs = scratch_dir("run_in");
    let outputs = scratch_dir("run_out");
    let x: Vec<f64> = (0..64).map(|i| i as f64 * 0.25).collect();
    sdfg_sim::npy::write(
        &inputs.join("x.npy"),
        &sdfg_sim::ArrayValue::f64(vec![2, 32], x.clone()),
    )
    .unwrap();
    let out = sdfgc(&[
        "run",
        path.to_str().unwrap(),
        "--symbols",
        "N=2",
        "--inputs",
        inputs.to_str().unwrap(),
        "--outputs",
        outputs.to_str().unwrap(),
    ]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{report}{}", text(&out.stderr));
    assert!(report.contains("kernel launches:   1"), "{report}");
    assert!(
        report.contains("host -> device:    512 bytes in 1 copies"),
        "{report}"
    );
    assert!(
        report.contains("device -> host:    512 bytes in 1 copies"),
        "{report}"
    );
    assert!(report.contains("transfer ratio:    1.00"), "{report}");
    let result = sdfg_sim::npy::read(&outputs.join("x.npy")).unwrap();
    let doubled: Vec<f64> = x.iter().map(|v| v * 2.0).collect();
    assert_eq!(result, sdfg_sim::ArrayValue::f64(vec![2, 32], doubled));
}

#[test]
fn run_fills_missing_inputs_deterministically() {
    let path = scratch("run_axpy.json", &example_json("axpy"));
    let outputs = scratch_dir("fill_out");
    let out = sdfgc(&[
        "run",
        path.to_str().unwrap(),
        "--symbols",
        "N=3",
        "--outputs",
        outputs.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("filling `x` deterministically (float64, shape [3])"));
    let fill =
        |name: &str| sdfg_sim::deterministic_fill(name, sdfg_ir::DType::Float64, vec![3]).unwrap();
    let (a, x, y) = (fill("a"), fill("x"), fill("y"));
    let a0 = sdfg_sim::deterministic_fill("a", sdfg_ir::DType::Float64, vec![])
        .unwrap()
        .get(0)
        .unwrap()
        .to_f64();
    let expected: Vec<f64> = (0..3)
        .map(|i| a0 * x.get(i).unwrap().to_f64() + y.get(i).unwrap().to_f64())
        .collect();
    assert_eq!(a.shape, vec![3]);
    assert_eq!(
        sdfg_sim::npy::read(&outputs.join("y.npy")).unwrap(),
        sdfg_sim::ArrayValue::f64(vec![3], expected)
    );
}

#[test]
fn run_rejects_malformed_and_missing_symbols() {
    let path = scratch("run_axpy2.json", &example_json("axpy"));
    let out = sdfgc(&["run", path.to_str().unwrap(), "--symbols", "N=ten"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("symbol list `N=ten`"),
        "{}",
        text(&out.stderr)
    );
    let out = sdfgc(&["run", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("`N`"), "{}", text(&out.stderr));
    // A symbol given twice, or one the SDFG does not have (a typo), is an
    // error, not a silent choice.
    let out = sdfgc(&["run", path.to_str().unwrap(), "--symbols", "N=3,N=4"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("`N` is given twice"),
        "{}",
        text(&out.stderr)
    );
    let out = sdfgc(&["run", path.to_str().unwrap(), "--symbols", "N=3,Q=4"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("`Q` is not a symbol of SDFG `axpy` (its symbols: N)"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn run_reports_faults_with_exit_status_one() {
    use sdfg_ir::builder::SdfgBuilder;
    use sdfg_ir::code::{BinaryOp, Expr, Stmt};
    let mut b = SdfgBuilder::new("divide");
    b.scalar("n", sdfg_ir::DType::Int64)
        .scalar("d", sdfg_ir::DType::Int64);
    b.state("s", |s| {
        let (n_in, d, n_out) = (s.access("n"), s.access("d"), s.access("n"));
        let i64c = |c: &str| sdfg_ir::Connector::scalar(c, sdfg_ir::DType::Int64);
        let t = s.tasklet(
            "div",
            vec![i64c("a"), i64c("b")],
            vec![i64c("c")],
            vec![Stmt::assign(
                "c",
                Expr::binary(BinaryOp::FloorDiv, Expr::var("a"), Expr::var("b")),
            )],
        );
        s.edge(n_in, None, t, Some("a"), "n[0]");
        s.edge(d, None, t, Some("b"), "d[0]");
        s.edge(t, Some("c"), n_out, None, "n[0]");
    });
    let path = scratch("divide.json", &b.build().unwrap().to_json());
    let inputs = scratch_dir("divide_in");
    sdfg_sim::npy::write(
        &inputs.join("d.npy"),
        &sdfg_sim::ArrayValue::i64(vec![], vec![0]),
    )
    .unwrap();
    let out = sdfgc(&[
        "run",
        path.to_str().unwrap(),
        "--inputs",
        inputs.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let report = text(&out.stdout);
    assert!(
        report.contains("fault:")
            && report.contains("division by zero")
            && report.contains("`div`"),
        "{report}"
    );
}

#[test]
fn compile_offloads_and_reports_every_copy_with_its_reason() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let durbin = root.join("corpus/npbench/polybench/durbin.py");
    let out = sdfgc(&[
        "compile",
        durbin.to_str().unwrap(),
        "--backend",
        "sim",
        "--emit",
        "report",
    ]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The pipeline's passes report in order, the offload pass last.
    assert!(report.contains("\noffload report (sim)\n"), "{report}");
    assert!(report.contains("loop-to-map report"), "{report}");
    let copies: Vec<&str> = report
        .lines()
        .filter(|l| l.trim_start().starts_with("copy "))
        .collect();
    assert!(
        copies
            .iter()
            .any(|l| l.contains("r -> dev_r (host -> device, 8*N bytes)")),
        "{report}"
    );
    assert!(
        copies
            .iter()
            .any(|l| l.contains("-> __return (device -> host")),
        "{report}"
    );
    assert!(
        copies.iter().all(|l| l.contains(": ")),
        "every copy has a reason: {report}"
    );
    // The offloaded SDFG itself validates.
    let json = sdfgc(&["compile", durbin.to_str().unwrap(), "--backend", "sim"]);
    let path = scratch("durbin_offloaded.json", &text(&json.stdout));
    assert_eq!(
        sdfgc(&["validate", path.to_str().unwrap()]).status.code(),
        Some(0)
    );
}

#[test]
fn unknown_backends_are_clear_errors() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let gemm = root.join("corpus/npbench/polybench/gemm.py");
    let out = sdfgc(&["compile", gemm.to_str().unwrap(), "--backend", "tpu"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("unknown backend `tpu`"), "{err}");
    // The known ones are listed, found through the registry.
    assert!(err.contains("sim, cuda, hip"), "{err}");
    let out = sdfgc(&["compile", gemm.to_str().unwrap(), "--emit", "report"]);
    assert!(text(&out.stderr).contains("needs `--backend`"));
    let out = sdfgc(&[
        "compile",
        gemm.to_str().unwrap(),
        "--backend",
        "sim",
        "--emit",
        "source",
    ]);
    assert!(text(&out.stderr).contains("needs a code-generating backend"));
}

#[test]
fn compile_writes_the_translation_unit_of_each_gpu_backend() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let jacobi = root.join("corpus/npbench/polybench/jacobi_1d.py");
    let dir = std::env::temp_dir().join(format!("sdfgc-source-{}", std::process::id()));
    for (backend, ext, api) in [
        ("cuda", "cu", "cudaLaunchKernel"),
        ("hip", "hip", "hipLaunchKernel"),
    ] {
        let out = sdfgc(&[
            "compile",
            jacobi.to_str().unwrap(),
            "--backend",
            backend,
            "--emit",
            "source",
            "-o",
            dir.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let path = dir.join(format!("jacobi_1d.{ext}"));
        assert_eq!(text(&out.stdout).trim(), path.display().to_string());
        let source = std::fs::read_to_string(&path).unwrap();
        assert!(source.contains(api), "{source}");
        assert!(
            source.contains(
                "extern \"C\" int kernel(double* A, double* B, int64_t N, int64_t TSTEPS) {"
            ),
            "{source}"
        );
    }
    // A returned value is a parameter after the arguments, which the
    // entry point fills and neither allocates nor frees.
    let softmax = root.join("corpus/npbench/deep_learning/softmax.py");
    let out = sdfgc(&[
        "compile",
        softmax.to_str().unwrap(),
        "--backend",
        "cuda",
        "--emit",
        "source",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let source = text(&out.stdout);
    for entry in [
        "extern \"C\" int kernel(float* x, int64_t H, int64_t N, int64_t SM, float* v__return) {",
        "extern \"C\" int kernel_run(kernel_state_t* sdfg_h, float* x, int64_t H, int64_t N, int64_t SM, float* v__return) {",
        "extern \"C\" kernel_state_t* kernel_init(int64_t H, int64_t N, int64_t SM) {",
        "extern \"C\" int kernel_exit(kernel_state_t* sdfg_h) {",
    ] {
        assert!(source.contains(entry), "{entry}\n{source}");
    }
    assert!(!source.contains("sdfg_h->v__return"), "{source}");
    assert!(!source.contains("free(v__return"), "{source}");
    let _ = std::fs::remove_dir_all(&dir);
    // A library node without an expansion is an error naming it.
    let solve = dir.with_extension("py");
    std::fs::write(
        &solve,
        "import dace as dc\nimport numpy as np\nN = dc.symbol('N')\n\n@dc.program\ndef f(A: dc.complex128[N, N], L: dc.complex128[N, N]):\n    L[:] = np.linalg.cholesky(A)\n",
    )
    .unwrap();
    let out = sdfgc(&[
        "compile",
        solve.to_str().unwrap(),
        "--backend",
        "hip",
        "--emit",
        "source",
    ]);
    let _ = std::fs::remove_file(&solve);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("cannot lower a Cholesky factorization"),
        "{err}"
    );
    assert!(err.contains("library node `"), "{err}");
}

#[test]
fn broken_sources_never_pass_the_compile_checks() {
    // Where the compilers are installed (CI installs them) a broken source
    // must fail; where they are not, the check says which tool is missing.
    // It never passes.
    use sdfg_exec::Check;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::temp_dir().join(format!("sdfg-broken-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let jacobi = root.join("corpus/npbench/polybench/jacobi_1d.py");
    for (backend, ext) in [("cuda", "cu"), ("hip", "hip")] {
        let out = sdfgc(&[
            "compile",
            jacobi.to_str().unwrap(),
            "--backend",
            backend,
            "--emit",
            "source",
        ]);
        let good = text(&out.stdout);
        // A device-side error, and a host-side one.
        for (k, broken) in [
            good.replacen("t___out = ", "t___out = undeclared_x + ", 1),
            good.replacen(
                "StreamCreate(&sdfg_h->stream)",
                "StreamCreate(&sdfg_h->stream, nope)",
                1,
            ),
        ]
        .into_iter()
        .enumerate()
        {
            assert_ne!(broken, good);
            let path = dir.join(format!("broken{k}.{ext}"));
            std::fs::write(&path, broken).unwrap();
            let toolchain = sdfg_exec::toolchain(backend)
                .unwrap_or_else(|| panic!("`{backend}` registered no compile check"));
            let check = (toolchain.check)(&path, &root.join("corpus/tools"));
            assert!(
                matches!(check, Check::Failed(_) | Check::Missing(_)),
                "{backend}: a broken source passed"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compile_names_selects_and_turns_off_passes() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let trmm = root.join("corpus/npbench/polybench/trmm.py");
    let trmm = trmm.to_str().unwrap();
    // The pipeline, in order.
    let out = sdfgc(&["compile", trmm, "--passes", "list"]);
    assert_eq!(out.status.code(), Some(0));
    let names: Vec<String> = text(&out.stdout)
        .lines()
        .map(|l| l.split_whitespace().next().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        names,
        [
            "inline-nested",
            "elide-copies",
            "map-fusion",
            "loop-to-map",
            "sink-loop",
            "map-to-copy",
            "horizontal-fusion",
            "offload",
            "lower-library"
        ]
    );
    // With loop-to-map, trmm's inner `j` loop is a map; without, it is not.
    let on = sdfgc(&["compile", trmm, "--backend", "sim", "--emit", "report"]);
    let on = text(&on.stdout);
    assert!(on.contains("map: loop `for_l13_4` over j"), "{on}");
    let off = sdfgc(&[
        "compile",
        trmm,
        "--backend",
        "sim",
        "--no-loop-to-map",
        "--emit",
        "report",
    ]);
    let off = text(&off.stdout);
    assert!(!off.contains("loop-to-map report"), "{off}");
    // Only the named passes run; an unknown one is an error naming it.
    let only = sdfgc(&[
        "compile",
        trmm,
        "--passes",
        "loop-to-map",
        "--emit",
        "report",
    ]);
    assert_eq!(only.status.code(), Some(0));
    assert!(!text(&only.stdout).contains("offload report"));
    let bad = sdfgc(&["compile", trmm, "--passes", "loop-to-mop"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("unknown pass `loop-to-mop`"));
    // Offloading needs a backend.
    let none = sdfgc(&["compile", trmm, "--passes", "offload"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(
        text(&none.stderr).contains("needs an accelerator"),
        "{}",
        text(&none.stderr)
    );
}

#[test]
fn run_refuses_what_does_not_fit_in_its_memory_limit_naming_the_container() {
    let path = scratch("run_axpy_memory.json", &example_json("axpy"));
    let path = path.to_str().unwrap();
    // 8 TB of arguments: refused before anything is allocated.
    let out = sdfgc(&["run", path, "--symbols", "N=1000000000000"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(
        err.contains(
            "container `x` needs 8000000000000 bytes, beyond the memory limit of 8589934592 bytes"
        ),
        "{err}"
    );
    // A lower limit, in any unit; the second argument is the one past it.
    let out = sdfgc(&["run", path, "--symbols", "N=100", "--max-memory", "1K"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("container `y` needs 800 bytes"), "{err}");
    // 808 bytes already allocated: the scalar `a` and `x`.
    assert!(err.contains("(808 bytes already allocated)"), "{err}");
    let out = sdfgc(&["run", path, "--symbols", "N=100", "--max-memory", "2K"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = sdfgc(&["run", path, "--symbols", "N=100", "--max-memory", "1.5G"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("is not a size in bytes"));
}

#[test]
fn run_refuses_sizes_beyond_one_allocation_whatever_the_memory_limit() {
    // Issue #39: `--max-memory none` skipped the only check of the bytes,
    // and filling `C` panicked with "capacity overflow" (exit 101).
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let gemm = root.join("corpus/npbench/polybench/gemm.py");
    let out = sdfgc(&["compile", gemm.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let path = scratch("run_gemm_overflow.json", &text(&out.stdout));
    let path = path.to_str().unwrap();
    let symbols = "NI=9223372036854775807,NJ=1,NK=1";
    for limit in [&["--max-memory", "none"][..], &[]] {
        let mut args = vec!["run", path, "--symbols", symbols];
        args.extend(limit);
        let out = sdfgc(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{limit:?}: {}",
            text(&out.stderr)
        );
        let err = text(&out.stderr);
        assert!(
            err.contains("container `C` (float64, shape [9223372036854775807, 1]) needs more than"),
            "{limit:?}: {err}"
        );
        assert!(err.contains("beyond what one allocation can hold"), "{err}");
    }
}

#[test]
fn sources_that_are_not_text_or_hold_no_program_are_clear_errors() {
    let dir = scratch_dir("sources");
    let bad = dir.join("latin1.py");
    std::fs::write(
        &bad,
        b"import dace\n@dace.program\ndef f(A: dace.float64[4]):\n    A[0] = 1.0  # caf\xe9\n",
    )
    .unwrap();
    let out = sdfgc(&["compile", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("is not UTF-8 text: invalid byte at line 4, column 22"),
        "{err}"
    );
    for (name, source) in [("empty.py", ""), ("imports.py", "import dace\n")] {
        let path = scratch(name, source);
        let out = sdfgc(&["compile", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2));
        let err = text(&out.stderr);
        assert!(err.contains("has no `@dace.program`"), "{name}: {err}");
    }
}

#[test]
fn npy_inputs_shorter_than_their_header_declares_are_refused_before_allocating() {
    let path = scratch("run_axpy_npy.json", &example_json("axpy"));
    let inputs = scratch_dir("npy_truncated");
    // A version 2 header declaring a 4 GiB header, in 14 bytes.
    let mut header = b"\x93NUMPY\x02\x00".to_vec();
    header.extend_from_slice(&u32::MAX.to_le_bytes());
    header.extend_from_slice(b"{}");
    std::fs::write(inputs.join("x.npy"), &header).unwrap();
    let out = sdfgc(&[
        "run",
        path.to_str().unwrap(),
        "--symbols",
        "N=4",
        "--inputs",
        inputs.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("the file has 14 bytes but declares 4294967307"),
        "{err}"
    );
    // A header declaring 10**12 float64 elements with 16 bytes of data.
    let dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }";
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    let padded = format!("{dict:<117}\n");
    npy.extend_from_slice(&(padded.len() as u16).to_le_bytes());
    npy.extend_from_slice(padded.as_bytes());
    npy.extend_from_slice(&[0; 16]);
    std::fs::write(inputs.join("x.npy"), &npy).unwrap();
    let out = sdfgc(&[
        "run",
        path.to_str().unwrap(),
        "--symbols",
        "N=4",
        "--inputs",
        inputs.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("but declares 8000000000128"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn every_corpus_kernel_round_trips_through_json_exactly_and_offloads_idempotently() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let kernels = sdfg_harness::corpus::discover(&root.join("corpus/npbench")).unwrap();
    assert!(kernels.len() >= 50, "found {} kernels", kernels.len());
    let dir = scratch_dir("round_trips");
    for kernel in &kernels {
        let kernel = &kernel.path;
        let name = kernel.file_stem().unwrap().to_string_lossy().into_owned();
        let host = dir.join(format!("{name}.json"));
        let out = sdfgc(&["compile", kernel.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out.stderr));
        std::fs::write(&host, &out.stdout).unwrap();
        // Load and save: byte-identical.
        let again = sdfgc(&["compile", host.to_str().unwrap()]);
        assert_eq!(
            again.status.code(),
            Some(0),
            "{name}: {}",
            text(&again.stderr)
        );
        assert!(
            again.stdout == out.stdout,
            "{name}: the JSON round trip changed it"
        );
        // Offloading the offloaded SDFG again changes nothing.
        for backend in ["sim", "cuda"] {
            let once = dir.join(format!("{name}.{backend}.json"));
            let twice = dir.join(format!("{name}.{backend}.again.json"));
            for (from, to) in [(&host, &once), (&once, &twice)] {
                let out = sdfgc(&[
                    "offload",
                    from.to_str().unwrap(),
                    "--backend",
                    backend,
                    "-o",
                    to.to_str().unwrap(),
                ]);
                assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out.stderr));
            }
            let (a, b) = (
                std::fs::read(&once).unwrap(),
                std::fs::read(&twice).unwrap(),
            );
            assert!(a == b, "{name}: offloading for {backend} is not idempotent");
        }
    }
}

#[test]
fn offload_refuses_invalid_sdfgs_and_program_selection_of_json() {
    let json = example_json("axpy").replace("\"N\": \"int64\"", "\"N\": \"float64\"");
    let path = scratch("offload_invalid.json", &json);
    let out = sdfgc(&["offload", path.to_str().unwrap(), "--backend", "sim"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("is an invalid SDFG"),
        "{}",
        text(&out.stderr)
    );
    let path = scratch("offload_valid.json", &example_json("axpy"));
    let out = sdfgc(&["compile", path.to_str().unwrap(), "--program", "axpy"]);
    assert_eq!(out.status.code(), Some(2));
    let out = sdfgc(&["offload", path.to_str().unwrap(), "--backend", "tpu"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn compile_types_unannotated_parameters_from_signature_options() {
    let file = scratch(
        "jit.py",
        "import dace\n\n@dace.program\ndef scale(A, alpha):\n    A[:] = alpha * A\n",
    );
    let f = file.to_str().unwrap();
    let out = sdfgc(&["compile", f]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("parameter `A` has no annotation"),
        "{}",
        text(&out.stderr)
    );
    let out = sdfgc(&[
        "compile",
        f,
        "--signature",
        "A=float64[N, M]",
        "--signature",
        "alpha=float64",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sdfg = sdfg_ir::Sdfg::from_json(&text(&out.stdout)).unwrap();
    assert_eq!(sdfg.arguments, ["A", "alpha", "M", "N"]);
    // The same parameter twice, or not NAME=TYPE: errors.
    for bad in [
        ["--signature", "A=float64[N]", "--signature", "A=float32[N]"],
        ["--signature", "A", "--signature", "alpha=float64"],
    ] {
        let mut args = vec!["compile", f];
        args.extend(bad);
        let out = sdfgc(&args);
        assert!(!out.status.success());
        assert!(
            text(&out.stderr).contains("--signature"),
            "{}",
            text(&out.stderr)
        );
    }
}

#[test]
fn dace_format_is_written_by_compile_and_by_offload_to_a_dot_sdfg_file() {
    let file = scratch(
        "dace_out.py",
        "import dace\nN = dace.symbol('N')\n\n@dace.program\ndef scale(A: dace.float64[N], alpha: dace.float64):\n    A[:] = alpha * A\n",
    );
    let f = file.to_str().unwrap();
    let out = sdfgc(&["compile", f, "--emit", "dace-sdfg"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let host: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(host["type"], "SDFG");
    assert_eq!(
        host["attributes"]["arg_names"],
        serde_json::json!(["A", "alpha"])
    );
    // `-o X.sdfg` writes DaCe's format; `-o X.json` this project's.
    let dace = file.with_extension("sdfg");
    let ours = file.with_extension("json");
    for path in [&dace, &ours] {
        let out = sdfgc(&[
            "offload",
            f,
            "--backend",
            "cuda",
            "-o",
            path.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    // `.sdfgz`: DaCe's compressed format, read back by every command.
    let compressed = file.with_extension("sdfgz");
    let out = sdfgc(&[
        "offload",
        f,
        "--backend",
        "cuda",
        "-o",
        compressed.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = sdfgc(&["validate", compressed.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stdout));
    let offloaded: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&dace).unwrap()).unwrap();
    let text_of = offloaded.to_string();
    assert!(text_of.contains("GPU_Global") && text_of.contains("GPU_Device"));
    assert!(sdfg_ir::Sdfg::from_json(&std::fs::read_to_string(&ours).unwrap()).is_ok());
}

#[test]
fn dace_format_refusals_name_the_element() {
    let path = scratch(
        "dace_refused.json",
        &example_json("containers_and_callbacks"),
    );
    let out = sdfgc(&["compile", path.to_str().unwrap(), "--emit", "dace-sdfg"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("cannot be written in DaCe's format"), "{err}");
}

#[test]
fn no_persistent_keeps_a_loop_testing_device_data_on_the_host() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mandelbrot2 = root.join("corpus/npbench/misc/mandelbrot2.py");
    let dir = scratch_dir("no-persistent");
    for (flag, persistent) in [(None, true), (Some("--no-persistent"), false)] {
        let out_file = dir.join(format!("{persistent}.json"));
        let mut args = vec![
            "offload",
            mandelbrot2.to_str().unwrap(),
            "--backend",
            "cuda",
            "-o",
            out_file.to_str().unwrap(),
        ];
        args.extend(flag);
        let out = sdfgc(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let json = std::fs::read_to_string(&out_file).unwrap();
        assert_eq!(
            json.contains("\"device_persistent\""),
            persistent,
            "{flag:?}"
        );
    }
}

#[test]
fn args_on_device_makes_the_entry_point_take_device_pointers() {
    // `B[:] = A * 2.0 + 1.0`, as DaCe's `apply_gpu_storage` hands it over:
    // one kernel on the caller's device arrays, no copy, and the unit
    // exports what a caller without a runtime stages them with.
    let program = scratch(
        "axpb.py",
        "import dace\nN = dace.symbol('N')\n\n@dace.program\ndef axpb(A: dace.float64[N], B: dace.float64[N]):\n    B[:] = A * 2.0 + 1.0\n",
    );
    let p = program.to_str().unwrap();
    let report = sdfgc(&[
        "compile",
        p,
        "--backend",
        "cuda",
        "--args-on-device",
        "--emit",
        "report",
    ]);
    let report = text(&report.stdout);
    assert!(
        report.contains("A: device_global (its home is the device"),
        "{report}"
    );
    assert!(!report.contains("copy "), "{report}");
    let source = sdfgc(&[
        "compile",
        p,
        "--backend",
        "cuda",
        "--args-on-device",
        "--emit",
        "source",
    ]);
    assert_eq!(source.status.code(), Some(0), "{}", text(&source.stderr));
    let source = text(&source.stdout);
    assert!(source.contains("extern \"C\" void* axpb_device_alloc(size_t bytes)"));
    assert!(
        !source.contains("cudaMemcpyHostToDevice, stream"),
        "{source}"
    );
    // Without the flag: twins and copies, no device helpers.
    let plain = text(&sdfgc(&["compile", p, "--backend", "cuda", "--emit", "source"]).stdout);
    assert!(!plain.contains("_device_alloc"));
    assert!(plain.contains("dev_A"));
}
