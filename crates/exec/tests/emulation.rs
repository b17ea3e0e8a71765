//! The emulated GPU catches what a real one would show: each test breaks an
//! emitted unit the way a bug in the emitter would (a removed copy or
//! synchronization, a host access to device memory, an off-by-one index, a
//! lost atomic, a wrong leading dimension, a grid over the limit, a failing
//! factorization) and checks the message a user would see. Each has its
//! control: the unbroken unit gives the right answer.
//!
//! The emulation needs g++ (and OpenBLAS / LAPACKE for vendor calls, the
//! sanitizers' runtimes for those tests); `.ci/run` installs them. Where one
//! is missing the test says so and stops, except on CI (`CI` set), where a
//! missing tool is a failure.

use sdfg_backend_cuda::Cuda;
use sdfg_backend_hip::Hip;
use sdfg_codegen::{Dialect, TranslationUnit};
use sdfg_exec::{Argument, Device, EmulatedGpu, ExecError, Execution, Interleaving, Sanitizer};
use sdfg_sim::{ArrayValue, Elements};
use std::path::PathBuf;

/// The unit of program `f` in `source` for `d`: offloaded, library nodes
/// lowered or kept for the vendor libraries, emitted.
fn unit(source: &str, d: &dyn Dialect) -> TranslationUnit {
    let module = sdfg_frontend::Module::parse("test.py", source).unwrap();
    let sdfg = module.compile("f").unwrap();
    let (mut out, _) = sdfg_passes::offload(&sdfg, d, &sdfg_passes::Options::default()).unwrap();
    sdfg_passes::lower_library_nodes(&mut out, d).unwrap();
    sdfg_codegen::emit(&out, d).unwrap()
}

/// `unit` with `from` replaced by `to` (which must occur).
fn broken(unit: &TranslationUnit, from: &str, to: &str) -> TranslationUnit {
    assert!(
        unit.source.contains(from),
        "`{from}` is not in:\n{}",
        unit.source
    );
    let mut u = unit.clone();
    u.source = u.source.replacen(from, to, 1);
    u
}

fn device() -> EmulatedGpu {
    EmulatedGpu::new(env!("CARGO_BIN_EXE_sdfg-exec-child"))
}

fn work_dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("sdfg-exec-test-{}-{name}", std::process::id()))
}

/// Compiles and runs `unit` on `device`; `None` (after saying why) where a
/// tool the test needs is missing off CI.
fn run(
    device: &EmulatedGpu,
    unit: &TranslationUnit,
    name: &str,
    arguments: &mut [Argument],
) -> Option<Result<Execution, ExecError>> {
    let dir = work_dir(name);
    let result = device
        .compile(unit, &dir)
        .and_then(|compiled| device.execute(&compiled, arguments));
    let _ = std::fs::remove_dir_all(&dir);
    match result {
        Err(ExecError::Missing(why)) if std::env::var_os("CI").is_none() => {
            eprintln!("skipped `{name}`: {why}");
            None
        }
        other => Some(other),
    }
}

fn f64s(v: &[f64]) -> Argument {
    Argument::Array(ArrayValue::f64(vec![v.len()], v.to_vec()))
}

fn values(a: &Argument) -> Vec<f64> {
    match a {
        Argument::Array(v) => (0..v.elements.len())
            .map(|i| v.get(i).unwrap().to_f64())
            .collect(),
        Argument::Symbol(s) => vec![*s as f64],
    }
}

const DOUBLE: &str = "import dace as dc\nN = dc.symbol('N')\n\n@dc.program\ndef f(A: dc.float64[N], B: dc.float64[N]):\n    B[:] = A * 2.0\n";

/// The host reads `A[0]` (a branch on device data) between device work.
const BRANCH: &str = "import dace as dc\nN = dc.symbol('N')\n\n@dc.program\ndef f(A: dc.float64[N], B: dc.float64[N]):\n    A[:] = A * 2.0\n    if A[0] > 1.0:\n        B[:] = 1.0\n    else:\n        B[:] = 2.0\n";

#[test]
fn a_removed_copy_back_leaves_a_wrong_answer() {
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let p = d.api_prefix();
        let good = unit(DOUBLE, d);
        let mut args = [f64s(&[1.0, 2.0, 3.0]), f64s(&[0.0; 3]), Argument::Symbol(3)];
        let Some(r) = run(&device(), &good, "copy-good", &mut args) else {
            return;
        };
        assert_eq!(r.unwrap().status, 0);
        assert_eq!(values(&args[1]), [2.0, 4.0, 6.0]);
        // The copy of B back to the host, gone.
        let line = good
            .source
            .lines()
            .find(|l| l.contains(&format!("{p}MemcpyDeviceToHost")) && l.contains("(B + "))
            .unwrap()
            .to_owned();
        let bad = broken(&good, &line, "");
        let mut args = [f64s(&[1.0, 2.0, 3.0]), f64s(&[0.0; 3]), Argument::Symbol(3)];
        let r = run(&device(), &bad, "copy-bad", &mut args)
            .unwrap()
            .unwrap();
        assert_eq!(r.status, 0);
        assert_ne!(
            values(&args[1]),
            [2.0, 4.0, 6.0],
            "{}: the missing copy went unnoticed",
            d.name()
        );
    }
}

#[test]
fn a_removed_synchronization_before_a_host_read_reads_poison() {
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let p = d.api_prefix();
        let good = unit(BRANCH, d);
        // 2 * 0.25 is not above 1: B is 2 everywhere.
        let mut args = [f64s(&[0.25, 1.0]), f64s(&[0.0; 2]), Argument::Symbol(2)];
        let Some(r) = run(&device(), &good, "sync-good", &mut args) else {
            return;
        };
        assert_eq!(r.unwrap().status, 0);
        assert_eq!(values(&args[1]), [2.0, 2.0]);
        // The first wait for the copied condition, gone: the lazy stream has
        // not run the copy when the host branches on its destination.
        let wait = format!("SDFG_CHECK({p}EventSynchronize(sdfg_copied));");
        let bad = broken(&good, &wait, "");
        let mut args = [f64s(&[0.25, 1.0]), f64s(&[0.0; 2]), Argument::Symbol(2)];
        let r = run(&device(), &bad, "sync-bad", &mut args)
            .unwrap()
            .unwrap();
        assert_eq!(r.status, 0);
        assert_eq!(
            values(&args[1]),
            [1.0, 1.0],
            "{}: the branch did not read the poison",
            d.name()
        );
    }
}

#[test]
fn host_code_reading_a_device_pointer_faults_naming_the_allocation() {
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let good = unit(DOUBLE, d);
        // Host code dereferences the device twin of A.
        let bad = broken(
            &good,
            "  // offload_copy_in\n",
            "  { volatile double sdfg_peek = dev_A[1]; (void)sdfg_peek; }\n  // offload_copy_in\n",
        );
        let mut args = [f64s(&[1.0, 2.0]), f64s(&[0.0; 2]), Argument::Symbol(2)];
        let Some(r) = run(&device(), &bad, "peek", &mut args) else {
            return;
        };
        match r {
            Err(ExecError::Crashed { how, messages }) => {
                assert!(how.contains("SIGSEGV"), "{how}");
                assert!(
                    messages.contains("host code accessed device memory at 0x")
                        && messages.contains("byte 8 of device allocation #"),
                    "{messages}"
                );
            }
            other => panic!("{}: expected a fault, got {other:?}", d.name()),
        }
    }
}

#[test]
fn a_kernel_writing_one_element_past_its_array_is_found() {
    let d = &Cuda;
    let good = unit(DOUBLE, d);
    let store = "dev_B[(0LL) + (v__i1) * (1LL)] = t___out;";
    let bad = broken(
        &good,
        store,
        "dev_B[(0LL) + (v__i1 + 1LL) * (1LL)] = t___out;",
    );
    // 32 doubles end at a page end: the guard page after the allocation
    // faults without any sanitizer.
    let mut args = [f64s(&[1.0; 32]), f64s(&[0.0; 32]), Argument::Symbol(32)];
    let Some(r) = run(&device(), &bad, "past-guard", &mut args) else {
        return;
    };
    match r {
        Err(ExecError::Crashed { messages, .. }) => assert!(
            messages.contains("device code accessed 0x")
                && messages.contains("0 bytes past the end of device allocation #"),
            "{messages}"
        ),
        other => panic!("expected a fault, got {other:?}"),
    }
    // 3 doubles leave slack in their 256 bytes: AddressSanitizer's red zone
    // finds the write there.
    let asan = device().sanitize(Some(Sanitizer::Address));
    let mut args = [f64s(&[1.0; 3]), f64s(&[0.0; 3]), Argument::Symbol(3)];
    let Some(r) = run(&asan, &good, "past-asan-good", &mut args) else {
        return;
    };
    assert_eq!(r.unwrap().status, 0);
    assert_eq!(values(&args[1]), [2.0; 3]);
    let mut args = [f64s(&[1.0; 3]), f64s(&[0.0; 3]), Argument::Symbol(3)];
    let r = run(&asan, &bad, "past-asan", &mut args).unwrap();
    match r {
        Err(ExecError::Crashed { messages, .. }) => assert!(
            messages.contains("ERROR: AddressSanitizer: use-after-poison")
                && messages.contains("B_l6_0_k0"),
            "{messages}"
        ),
        other => panic!("expected AddressSanitizer's report, got {other:?}"),
    }
}

#[test]
fn a_write_conflict_without_its_atomic_is_a_race_thread_sanitizer_reports() {
    let src = "import dace as dc\nN = dc.symbol('N')\n\n@dc.program\ndef f(x: dc.float64[N], s: dc.float64[1]):\n    for i in dc.map[0:N]:\n        s[0] += x[i]\n";
    let d = &Hip;
    let good = unit(src, d);
    let atomic = "sdfg::atomic_sum(&dev_s[(0LL) + (0LL) * (1LL)], t___out);";
    let tsan = device().sanitize(Some(Sanitizer::Thread));
    let mut args = [f64s(&[1.0; 64]), f64s(&[0.0]), Argument::Symbol(64)];
    let Some(r) = run(&tsan, &good, "race-good", &mut args) else {
        return;
    };
    assert_eq!(r.unwrap().status, 0);
    assert_eq!(values(&args[1]), [64.0]);
    let bad = broken(
        &good,
        atomic,
        "dev_s[(0LL) + (0LL) * (1LL)] = dev_s[(0LL) + (0LL) * (1LL)] + t___out;",
    );
    let mut args = [f64s(&[1.0; 64]), f64s(&[0.0]), Argument::Symbol(64)];
    match run(&tsan, &bad, "race-bad", &mut args).unwrap() {
        Err(ExecError::Crashed { how, messages }) => {
            assert!(how.contains("66"), "{how}");
            assert!(
                messages.contains("WARNING: ThreadSanitizer: data race"),
                "{messages}"
            );
        }
        other => panic!("expected ThreadSanitizer's report, got {other:?}"),
    }
}

#[test]
fn a_gemm_leading_dimension_off_by_one_fails_the_vendor_check() {
    let src = "import dace as dc\nimport numpy as np\nN = dc.symbol('N')\n\n@dc.program\ndef f(A: dc.float64[N, N], B: dc.float64[N, N], C: dc.float64[N, N]):\n    C[:] = A @ B\n";
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let b = d.blas();
        let good = unit(src, d);
        let a: Vec<f64> = (0..9).map(f64::from).collect();
        let i: Vec<f64> = (0..9).map(|k| if k % 4 == 0 { 1.0 } else { 0.0 }).collect();
        let mat = |v: &[f64]| Argument::Array(ArrayValue::f64(vec![3, 3], v.to_vec()));
        let mut args = [mat(&a), mat(&i), mat(&[0.0; 9]), Argument::Symbol(3)];
        let Some(r) = run(&device(), &good, "gemm-good", &mut args) else {
            return;
        };
        assert_eq!(r.unwrap().status, 0);
        assert_eq!(values(&args[2]), a, "A @ I is A");
        // The first leading dimension of the call one short.
        let call = format!("{}Dgemm(sdfg_blas", b.prefix);
        let at = good.source.find(&call).unwrap();
        let ld = "(int)sdfg::imax(1, (N))";
        let offset = at + good.source[at..].find(ld).unwrap();
        let mut bad = good.clone();
        bad.source
            .replace_range(offset..offset + ld.len(), "(int)sdfg::imax(1, (N) - 1)");
        let mut args = [mat(&a), mat(&i), mat(&[0.0; 9]), Argument::Symbol(3)];
        let r = run(&device(), &bad, "gemm-bad", &mut args)
            .unwrap()
            .unwrap();
        assert_eq!(r.status, sdfg_codegen::status::RUNTIME_ERROR);
        assert!(
            r.messages.contains("lda = 2, but must be at least 3"),
            "{}",
            r.messages
        );
        assert!(
            r.messages.contains(&format!("{}Dgemm(", b.prefix))
                && r.messages.contains("failed: status"),
            "{}",
            r.messages
        );
    }
}

#[test]
fn a_grid_over_the_limit_is_an_invalid_configuration_and_the_clamped_grid_covers_the_map() {
    // 600,000 x 2 points: 75,000 blocks of 8 rows on y, more than 65,535.
    // (The width is a symbol: a constant 2 would shape the block 2 x 128.)
    let src = "import dace as dc\nN = dc.symbol('N')\nM = dc.symbol('M')\n\n@dc.program\ndef f(A: dc.float64[N, M], B: dc.float64[N, M]):\n    B[:] = A + 1.0\n";
    let n = 600_000usize;
    let input: Vec<f64> = (0..2 * n).map(|k| k as f64).collect();
    let arrays = || {
        [
            Argument::Array(ArrayValue::f64(vec![n, 2], input.clone())),
            Argument::Array(ArrayValue::f64(vec![n, 2], vec![0.0; 2 * n])),
            Argument::Symbol(2),
            Argument::Symbol(n as i64),
        ]
    };
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let good = unit(src, d);
        let mut args = arrays();
        let Some(r) = run(&device(), &good, "grid-good", &mut args) else {
            return;
        };
        assert_eq!(r.unwrap().status, 0);
        let out = values(&args[1]);
        assert!(
            out.iter().enumerate().all(|(k, v)| *v == k as f64 + 1.0),
            "{}: the clamped grid missed points",
            d.name()
        );
        // Without the clamp on y, the launch is refused.
        let bad = broken(&good, ", 65535LL))", ", 1000000LL))");
        let mut args = arrays();
        let r = run(&device(), &bad, "grid-bad", &mut args)
            .unwrap()
            .unwrap();
        assert_eq!(r.status, sdfg_codegen::status::RUNTIME_ERROR);
        assert!(
            r.messages.contains("invalid configuration argument"),
            "{}",
            r.messages
        );
        assert!(
            r.messages.contains("SDFG_LAUNCH(B_l7_0_k0"),
            "{}",
            r.messages
        );
        assert!(
            r.messages.contains(&format!(
                "gridDim.y = {} exceeds",
                n / (256 / d.default_block()[0] as usize)
            )),
            "{}",
            r.messages
        );
    }
}

#[test]
fn a_matrix_that_is_not_positive_definite_makes_the_entry_return_the_factorization_status() {
    let src = "import dace as dc\nimport numpy as np\nN = dc.symbol('N')\n\n@dc.program\ndef f(A: dc.float64[N, N], L: dc.float64[N, N]):\n    L[:] = np.linalg.cholesky(A)\n";
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let good = unit(src, d);
        let mat = |v: &[f64]| Argument::Array(ArrayValue::f64(vec![2, 2], v.to_vec()));
        // [[4, 2], [2, 5]] = L L^T with L = [[2, 0], [1, 2]].
        let mut args = [
            mat(&[4.0, 2.0, 2.0, 5.0]),
            mat(&[0.0; 4]),
            Argument::Symbol(2),
        ];
        let Some(r) = run(&device(), &good, "potrf-good", &mut args) else {
            return;
        };
        assert_eq!(r.unwrap().status, 0);
        assert_eq!(values(&args[1]), [2.0, 0.0, 1.0, 2.0]);
        // The second leading minor of [[1, 2], [2, 1]] is -3.
        let mut args = [
            mat(&[1.0, 2.0, 2.0, 1.0]),
            mat(&[0.0; 4]),
            Argument::Symbol(2),
        ];
        let r = run(&device(), &good, "potrf-bad", &mut args)
            .unwrap()
            .unwrap();
        assert_eq!(
            r.status,
            sdfg_codegen::status::LINALG_ERROR,
            "{}",
            r.messages
        );
        assert!(
            r.messages
                .contains("the Cholesky factorization (potrf) of `")
                && r.messages.contains("not positive definite (info = 2)"),
            "{}",
            r.messages
        );
    }
}

#[test]
fn a_failed_setup_releases_everything_it_made() {
    // Each of the unit's allocations in turn fails: init gives no state and
    // nothing stays allocated (the control: no failure, a state, a result).
    let good = unit(DOUBLE, &Cuda);
    let mut args = [f64s(&[1.0]), f64s(&[0.0]), Argument::Symbol(1)];
    let Some(r) = run(&device(), &good, "setup-good", &mut args) else {
        return;
    };
    let r = r.unwrap();
    assert_eq!(r.status, 0);
    assert_eq!(r.live_after_exit.map(|l| l.is_empty()), Some(true));
    for k in 1..=2 {
        let failing = device().env("SDFG_EMULATION_FAIL_ALLOCATION", &k.to_string());
        let mut args = [f64s(&[1.0]), f64s(&[0.0]), Argument::Symbol(1)];
        match run(&failing, &good, "setup-bad", &mut args).unwrap() {
            Err(ExecError::Init { messages, live, .. }) => {
                assert!(
                    messages.contains("cudaMalloc") && messages.contains("out of memory"),
                    "{messages}"
                );
                let live = live.expect("the emulation reports what is live");
                assert!(live.is_empty(), "allocation {k} failing leaves {live:?}");
            }
            other => panic!("expected init to fail, got {other:?}"),
        }
    }
}

#[test]
fn repeated_runs_reuse_the_state_and_allocate_nothing() {
    let good = unit(DOUBLE, &Hip);
    let mut args = [f64s(&[1.0, 5.0]), f64s(&[0.0; 2]), Argument::Symbol(2)];
    let Some(r) = run(&device().runs(3), &good, "runs", &mut args) else {
        return;
    };
    let r = r.unwrap();
    assert_eq!(r.status, 0);
    assert_eq!(values(&args[1]), [2.0, 10.0]);
    let counts = r.counts.unwrap();
    // The last of the three runs: one launch, one copy each way, no allocation.
    assert_eq!(counts.launches, 1);
    assert_eq!(counts.host_to_device.count, 1);
    assert_eq!(counts.device_to_host.count, 1);
    assert_eq!(counts.api.get("hipMalloc"), None, "{:?}", counts.api);
}

#[test]
fn return_values_are_filled_through_their_parameters() {
    let src = "import dace as dc\nN = dc.symbol('N')\n\n@dc.program\ndef f(A: dc.float64[N]):\n    return A * 3.0, A + 1.0\n";
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let u = unit(src, d);
        let names: Vec<&str> = u.parameters.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["A", "N", "__return_0", "__return_1"]);
        let mut args = [
            f64s(&[1.0, 2.0]),
            Argument::Symbol(2),
            f64s(&[0.0; 2]),
            f64s(&[0.0; 2]),
        ];
        let Some(r) = run(&device(), &u, "returns", &mut args) else {
            return;
        };
        assert_eq!(r.unwrap().status, 0);
        assert_eq!(values(&args[2]), [3.0, 6.0]);
        assert_eq!(values(&args[3]), [2.0, 3.0]);
    }
}

#[test]
fn a_thread_block_map_synchronizes_its_threads_through_shared_memory() {
    // The hand-offloaded example: each block stages a 32-element tile in
    // shared memory, waits at __syncthreads, then scales it. The emulation
    // runs its threads as fibers; its answer is the simulator's.
    let sdfg = sdfg_ir::examples::offloaded_scale().unwrap();
    let u = sdfg_codegen::emit(&sdfg, &Cuda).unwrap();
    assert!(u.source.contains("__syncthreads();"));
    let symbols = std::collections::BTreeMap::from([("N".to_owned(), 3i64)]);
    let mut simulated = sdfg_sim::Arguments::default().symbol("N", 3);
    let mut args: Vec<Argument> = Vec::new();
    for p in &u.parameters {
        if matches!(p.kind, sdfg_codegen::ParameterKind::Symbol(_)) {
            args.push(Argument::Symbol(symbols[&p.name]));
            continue;
        }
        let shape: Vec<usize> = p
            .shape
            .iter()
            .map(|e| e.eval(&symbols).unwrap() as usize)
            .collect();
        let count = shape.iter().product::<usize>();
        let v = ArrayValue::f64(shape, (0..count).map(|i| i as f64 * 0.5).collect());
        simulated.arrays.insert(p.name.clone(), v.clone());
        args.push(Argument::Array(v));
    }
    let Some(r) = run(&device(), &u, "tile", &mut args) else {
        return;
    };
    let r = r.unwrap();
    assert_eq!(r.status, 0, "{}", r.messages);
    let valid = sdfg_ir::validate(&sdfg).unwrap();
    let reference = sdfg_sim::Simulator::new().run(valid, &simulated).unwrap();
    for (p, a) in u.parameters.iter().zip(&args) {
        if let Argument::Array(v) = a {
            assert_eq!(Some(v), reference.outputs.get(&p.name), "`{}`", p.name);
        }
    }
}

/// `into[0] = wcr(x[i] for i in 0:N)`: every thread of one map updates the
/// one element, through the write-conflict resolution `wcr`.
fn reduced_into_one(wcr: sdfg_ir::Wcr, into: &str) -> sdfg_ir::Sdfg {
    use sdfg_ir::builder::SdfgBuilder;
    use sdfg_ir::code::{Expr, Stmt};
    use sdfg_ir::{Connector, DType, Schedule};
    let mut b = SdfgBuilder::new("f");
    b.symbol("N")
        .array("x", DType::Float64, "N")
        .array(into, DType::Float64, "1");
    let target = format!("{into}[0]");
    b.state("reduce", |st| {
        let x = st.access("x");
        let m = st.access(into);
        st.mapped_tasklet(
            "update",
            "i = 0:N",
            Schedule::Default,
            vec![(x, Connector::scalar("a", DType::Float64), "x[i]")],
            vec![Stmt::assign("o", Expr::var("a"))],
            vec![(
                Connector::scalar("o", DType::Float64),
                m,
                (target.as_str(), wcr),
            )],
        );
    });
    b.build().unwrap()
}

#[test]
fn compare_and_swap_updates_are_free_of_races() {
    // A maximum over floats has no native atomic: the prelude's
    // compare-and-swap loop, whose every access is atomic, so
    // ThreadSanitizer (each launch on four OS threads) reports nothing.
    let sdfg = reduced_into_one(sdfg_ir::Wcr::Max, "m");
    let (out, _) = sdfg_passes::offload(&sdfg, &Hip, &sdfg_passes::Options::default()).unwrap();
    let u = sdfg_codegen::emit(&out, &Hip).unwrap();
    assert!(
        u.source.contains("sdfg::atomic_max(&dev_m["),
        "{}",
        u.source
    );
    let x: Vec<f64> = (0..96).map(|k| ((k * 37) % 96) as f64).collect();
    let mut args: Vec<Argument> = u
        .parameters
        .iter()
        .map(|p| match p.name.as_str() {
            "N" => Argument::Symbol(96),
            "x" => f64s(&x),
            _ => f64s(&[-1.0]),
        })
        .collect();
    let tsan = device().sanitize(Some(Sanitizer::Thread));
    let Some(r) = run(&tsan, &u, "cas", &mut args) else {
        return;
    };
    let r = r.unwrap();
    assert_eq!(r.status, 0, "{}", r.messages);
    let m = u.parameters.iter().position(|p| p.name == "m").unwrap();
    assert_eq!(values(&args[m]), [95.0]);
}

#[test]
fn a_failed_growth_never_releases_the_old_buffer_twice() {
    // `A[i, :i] * 2.0` lives in a buffer that grows with `i`. Its growth
    // frees the old buffer first; when the new allocation then fails, exit
    // must not free the old one again (the emulation would say so).
    let src = "import dace as dc\nimport numpy as np\nN = dc.symbol('N')\n\n@dc.program\ndef f(A: dc.float64[N, N], s: dc.float64[N]):\n    for i in range(1, N):\n        s[i] = np.sum(A[i, :i] * 2.0)\n";
    let good = unit(src, &Cuda);
    assert!(good.source.contains("sdfg_cap_"), "{}", good.source);
    let args = || {
        [
            Argument::Array(ArrayValue::f64(vec![4, 4], vec![1.0; 16])),
            f64s(&[0.0; 4]),
            Argument::Symbol(4),
        ]
    };
    let mut control = args();
    let Some(r) = run(&device(), &good, "grow-good", &mut control) else {
        return;
    };
    let r = r.unwrap();
    assert_eq!(r.status, 0, "{}", r.messages);
    assert_eq!(values(&control[1])[1..], [2.0, 4.0, 6.0]);
    // How many allocations setup makes: the first run's failure after them
    // is the first growth, the next the second (after a release).
    let setup = good
        .source
        .matches("SDFG_CHECK(cudaMalloc((void**)&sdfg_h->")
        .count();
    for k in [setup + 1, setup + 2] {
        let failing = device().env("SDFG_EMULATION_FAIL_ALLOCATION", &k.to_string());
        let mut a = args();
        let r = run(&failing, &good, "grow-bad", &mut a).unwrap().unwrap();
        assert_eq!(
            r.status,
            sdfg_codegen::status::RUNTIME_ERROR,
            "{}",
            r.messages
        );
        assert!(r.messages.contains("out of memory"), "{}", r.messages);
        assert!(!r.messages.contains("freed before"), "{}", r.messages);
        assert_eq!(r.live_after_exit.map(|l| l.is_empty()), Some(true));
    }
}

#[test]
fn a_kernel_given_a_host_pointer_faults_as_on_a_gpu() {
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let good = unit(DOUBLE, d);
        // The kernel reads the host array instead of its device twin.
        let bad = broken(
            &good,
            "SDFG_KERNEL(B_l6_0_k0, sdfg_grid, sdfg_block, 0, dev_A, dev_B, N);",
            "SDFG_KERNEL(B_l6_0_k0, sdfg_grid, sdfg_block, 0, A, dev_B, N);",
        );
        let mut args = [f64s(&[1.0, 2.0]), f64s(&[0.0; 2]), Argument::Symbol(2)];
        let Some(r) = run(&device(), &bad, "host-arg", &mut args) else {
            return;
        };
        let r = r.unwrap();
        assert_eq!(r.status, sdfg_codegen::status::RUNTIME_ERROR);
        assert!(
            r.messages.contains("kernel `B_l6_0_k0`: argument 0 (0x")
                && r.messages.contains("points to host memory"),
            "{}",
            r.messages
        );
        assert!(
            r.messages
                .contains("an illegal memory access was encountered"),
            "{}",
            r.messages
        );
    }
}

/// The unit of `source` through the whole pipeline (loop-to-map included).
fn pipeline_unit(source: &str, d: &dyn Dialect) -> TranslationUnit {
    let module = sdfg_frontend::Module::parse("test.py", source).unwrap();
    let sdfg = module.compile("f").unwrap();
    let (out, _) = sdfg_passes::pipeline::run(
        &sdfg,
        Some(d),
        &sdfg_passes::PipelineOptions::default(),
        &sdfg_passes::Pass::ALL,
    )
    .unwrap();
    sdfg_codegen::emit(&out, d).unwrap()
}

/// `named` in the order of the unit's parameters.
fn by_name(unit: &TranslationUnit, named: &[(&str, Argument)]) -> Vec<Argument> {
    unit.parameters
        .iter()
        .map(|p| {
            named
                .iter()
                .find(|(n, _)| *n == p.name)
                .map(|(_, a)| a.clone())
                .unwrap_or_else(|| panic!("no argument for `{}`", p.name))
        })
        .collect()
}

/// The position of parameter `name`.
fn at(unit: &TranslationUnit, name: &str) -> usize {
    unit.parameters.iter().position(|p| p.name == name).unwrap()
}

/// Rows independent, an inner loop accumulating, and a scalar private to
/// each row: loop-to-map makes the row loop one kernel whose threads run
/// the rest.
const ROWS: &str = "import dace as dc\nN = dc.symbol('N')\nM = dc.symbol('M')\n\n@dc.program\ndef f(A: dc.float64[N, M], B: dc.float64[N]):\n    for i in range(N):\n        t = A[i, 0] * 2.0\n        B[i] = t\n        for k in range(1, M):\n            B[i] = B[i] + A[i, k] * t\n";

/// A sequential loop of scalar device work (each step reads the previous).
const RECURRENCE: &str = "import dace as dc\nN = dc.symbol('N')\n\n@dc.program\ndef f(A: dc.float64[N], B: dc.float64[N]):\n    B[0] = A[0]\n    for i in range(1, N):\n        if A[i] > B[i - 1]:\n            B[i] = A[i]\n        else:\n            B[i] = B[i - 1] * 0.5\n";

#[test]
fn loops_run_inside_one_kernel() {
    let (n, m) = (5usize, 3usize);
    let a: Vec<f64> = (0..n * m).map(|k| (k as f64) * 0.25 - 1.0).collect();
    let want: Vec<f64> = (0..n)
        .map(|i| {
            let t = a[i * m] * 2.0;
            (1..m).fold(t, |acc, k| acc + a[i * m + k] * t)
        })
        .collect();
    let x: Vec<f64> = vec![3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0];
    let mut prev = x[0];
    let mut rec = vec![x[0]];
    for &v in &x[1..] {
        prev = if v > prev { v } else { prev * 0.5 };
        rec.push(prev);
    }
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let rows = pipeline_unit(ROWS, d);
        assert!(rows.source.contains("nested SDFG"), "{}", rows.source);
        let rows_args = || {
            by_name(
                &rows,
                &[
                    ("A", Argument::Array(ArrayValue::f64(vec![n, m], a.clone()))),
                    ("B", f64s(&[0.0; 5])),
                    ("M", Argument::Symbol(m as i64)),
                    ("N", Argument::Symbol(n as i64)),
                ],
            )
        };
        let mut args = rows_args();
        let Some(r) = run(&device(), &rows, "rows", &mut args) else {
            return;
        };
        let r = r.unwrap();
        assert_eq!(r.status, 0, "{}", r.messages);
        assert_eq!(values(&args[at(&rows, "B")]), want, "{}", d.name());
        assert_eq!(
            r.counts.as_ref().map(|c| c.launches),
            Some(1),
            "{}",
            d.name()
        );
        // The control: a thread that skips its inner loop is caught.
        let bad = broken(&rows, "for (k = (1LL);", "for (k = (2LL);");
        let mut args = rows_args();
        let r = run(&device(), &bad, "rows-bad", &mut args)
            .unwrap()
            .unwrap();
        assert_eq!(r.status, 0);
        assert_ne!(values(&args[at(&rows, "B")]), want);

        let seq = pipeline_unit(RECURRENCE, d);
        let mut args = by_name(
            &seq,
            &[
                ("A", f64s(&x)),
                ("B", f64s(&[0.0; 7])),
                ("N", Argument::Symbol(7)),
            ],
        );
        let r = run(&device(), &seq, "recurrence", &mut args)
            .unwrap()
            .unwrap();
        assert_eq!(r.status, 0, "{}", r.messages);
        assert_eq!(values(&args[at(&seq, "B")]), rec, "{}", d.name());
        // The whole loop, its branch on data included, is one launch
        // (besides the one for `B[0] = A[0]`), and no value goes back to
        // the host per iteration.
        let counts = r.counts.unwrap();
        assert!(counts.launches <= 2, "{counts:?}");
        assert!(counts.device_to_host.count <= 1, "{counts:?}");
    }
}

#[test]
fn block_reductions_combine_every_threads_partial_through_shuffles() {
    // A full sum, row maxima and row minima (one with a NaN, which
    // propagates) over rows longer than a block, so that each thread
    // combines several elements, some lanes none, before the block's
    // shuffles and the warps' combination; run plainly and under
    // ThreadSanitizer (blocks on four OS threads, each block's threads as
    // fibers).
    // The full reductions (a sum, a maximum, a minimum meeting the NaN in
    // a block other than the last) spread over the grid: 900 elements are
    // four blocks of 256 threads, whose partials the last block combines.
    let src = "import dace as dc\nimport numpy as np\nN = dc.symbol('N')\nM = dc.symbol('M')\n\n@dc.program\ndef f(A: dc.float64[N, M], C: dc.float64[N, M], s: dc.float64[1], r: dc.float64[N], m: dc.float64[N], t: dc.float64[2]):\n    s[0] = np.sum(A)\n    r[:] = np.max(A, axis=1)\n    m[:] = np.min(C, axis=1)\n    t[0] = np.max(A)\n    t[1] = np.min(C)\n";
    let (n, cols) = (3usize, 300usize);
    let a: Vec<f64> = (0..n * cols)
        .map(|k| ((k * 37) % 101) as f64 - 50.0)
        .collect();
    let mut c = a.clone();
    c[cols + 7] = f64::NAN;
    let rows = |v: &[f64], f: fn(f64, f64) -> f64| -> Vec<f64> {
        v.chunks(cols)
            .map(|row| row.iter().copied().reduce(f).unwrap())
            .collect()
    };
    let nan_min = |x: f64, y: f64| {
        if x.is_nan() || y.is_nan() {
            f64::NAN
        } else {
            x.min(y)
        }
    };
    let inputs = |u: &TranslationUnit| {
        by_name(
            u,
            &[
                (
                    "A",
                    Argument::Array(ArrayValue::f64(vec![n, cols], a.clone())),
                ),
                (
                    "C",
                    Argument::Array(ArrayValue::f64(vec![n, cols], c.clone())),
                ),
                ("s", f64s(&[0.0])),
                ("r", f64s(&[0.0; 3])),
                ("m", f64s(&[0.0; 3])),
                ("t", f64s(&[0.0; 2])),
                ("N", Argument::Symbol(n as i64)),
                ("M", Argument::Symbol(cols as i64)),
            ],
        )
    };
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let u = pipeline_unit(src, d);
        assert_eq!(
            u.source.matches("sdfg::block_reduce<").count(),
            5,
            "{}",
            u.source
        );
        assert_eq!(
            u.source.matches("if (!sdfg::grid_reduce<").count(),
            3,
            "{}",
            u.source
        );
        for (device, name) in [
            (device(), "reductions"),
            (
                device().sanitize(Some(Sanitizer::Thread)),
                "reductions-tsan",
            ),
        ] {
            let mut args = inputs(&u);
            let Some(r) = run(&device, &u, name, &mut args) else {
                return;
            };
            let r = r.unwrap();
            assert_eq!(r.status, 0, "{}", r.messages);
            assert_eq!(values(&args[at(&u, "s")]), [a.iter().sum::<f64>()]);
            assert_eq!(values(&args[at(&u, "r")]), rows(&a, f64::max));
            let mins = values(&args[at(&u, "m")]);
            let want = rows(&c, nan_min);
            assert_eq!(mins[0], want[0]);
            assert!(mins[1].is_nan(), "{mins:?}");
            assert_eq!(mins[2], want[2]);
            let t = values(&args[at(&u, "t")]);
            assert_eq!(t[0], a.iter().copied().fold(f64::MIN, f64::max));
            assert!(t[1].is_nan(), "{t:?}");
        }
        // The control: without the fence between a block's partial and its
        // ticket, the last block's read of that partial is a race, which
        // ThreadSanitizer reports.
        let unfenced = broken(
            &u,
            "parts[blockIdx.x] = part;\n    __threadfence();",
            "parts[blockIdx.x] = part;",
        );
        let mut args = inputs(&unfenced);
        let tsan = device().sanitize(Some(Sanitizer::Thread));
        let r = run(&tsan, &unfenced, "reductions-unfenced", &mut args).unwrap();
        let Err(e) = r else {
            panic!("{}: no race reported without the fence", d.name());
        };
        let e = e.to_string();
        assert!(
            e.contains("data race") || e.contains("disagree on the kernel's control flow"),
            "{e}"
        );
    }
}

/// Stream compaction in a `while` loop whose test reads the length the
/// device computes: one persistent kernel runs it.
const COMPACT: &str = "import dace as dc\nN = dc.symbol('N')\n\n@dc.program\ndef f(A: dc.float64[N], K: dc.int64[1]):\n    length = N\n    k = 0\n    while length > 0:\n        A[:length] = A[:length] * 0.5\n        count = 0\n        for j in range(length):\n            if A[j] > 0.02:\n                A[count] = A[j]\n                count += 1\n        length = count\n        k += 1\n    K[0] = k\n";

#[test]
fn a_loop_deciding_on_device_data_runs_in_one_persistent_kernel() {
    // More elements than the emulated grid has threads (two blocks), so
    // that every thread strides; the survivors of each halving move to
    // the front until none is left.
    let n = 700usize;
    let a: Vec<f64> = (0..n).map(|i| ((i * 37) % 101) as f64 / 25.0).collect();
    let (mut want, mut length, mut k) = (a.clone(), n, 0i64);
    while length > 0 {
        let mut count = 0;
        want[..length].iter_mut().for_each(|v| *v *= 0.5);
        for j in 0..length {
            if want[j] > 0.02 {
                want[count] = want[j];
                count += 1;
            }
        }
        length = count;
        k += 1;
    }
    assert!(k > 5);
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let u = pipeline_unit(COMPACT, d);
        assert!(
            u.source.contains("SDFG_COOPERATIVE_KERNEL("),
            "{}",
            u.source
        );
        assert!(u.source.contains(d.cooperative_groups_header()));
        let arguments = || {
            by_name(
                &u,
                &[
                    ("A", f64s(&a)),
                    ("K", Argument::Array(ArrayValue::i64(vec![1], vec![0]))),
                    ("N", Argument::Symbol(n as i64)),
                ],
            )
        };
        let mut args = arguments();
        let Some(r) = run(&device(), &u, "persistent", &mut args) else {
            return;
        };
        let r = r.unwrap();
        assert_eq!(r.status, 0, "{}", r.messages);
        assert_eq!(values(&args[at(&u, "A")]), want, "{}", d.name());
        assert_eq!(values(&args[at(&u, "K")]), [k as f64], "{}", d.name());
        // The loop is one launch, and nothing comes back to the host per
        // iteration: `A` once, and the counter `k` the loop hands back.
        let counts = r.counts.unwrap();
        assert_eq!(counts.launches, 1, "{counts:?}");
        assert!(counts.device_to_host.count <= 3, "{counts:?}");
        assert_eq!(
            counts.api.get("LaunchCooperativeKernel"),
            Some(&1),
            "{counts:?}"
        );

        // The controls. Without its grid-wide barriers the threads race
        // ahead of each other: a wrong answer.
        let unsynchronized = broken(
            &u,
            "#define SDFG_GRID_SYNC() cooperative_groups::this_grid().sync()",
            "#define SDFG_GRID_SYNC() ((void)0)",
        );
        let mut args = arguments();
        let r = run(
            &device(),
            &unsynchronized,
            "persistent-unsynchronized",
            &mut args,
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.status, 0, "{}", r.messages);
        assert_ne!(values(&args[at(&u, "A")]), want, "{}", d.name());
        // A grid that waits for itself without a cooperative launch is
        // stopped, as it would hang a GPU.
        let plain = broken(&u, "SDFG_COOPERATIVE_KERNEL(while_", "SDFG_KERNEL(while_");
        let mut args = arguments();
        match run(&device(), &plain, "persistent-plain", &mut args).unwrap() {
            Err(ExecError::Crashed { messages, .. }) => {
                assert!(
                    messages.contains("not launched cooperatively"),
                    "{messages}"
                );
            }
            other => panic!("{other:?}"),
        }
        // A grid larger than the device holds at once is refused.
        let large = broken(
            &u,
            "dim3 sdfg_grid((unsigned)sdfg::imax(1, (int64_t)sdfg_units * sdfg_resident));",
            "dim3 sdfg_grid((unsigned)(sdfg_units * sdfg_resident + 1));",
        );
        let mut args = arguments();
        let r = run(&device(), &large, "persistent-large", &mut args)
            .unwrap()
            .unwrap();
        assert_ne!(r.status, 0);
        assert!(r.messages.contains("cooperative launch"), "{}", r.messages);
    }
}

/// A `while` loop testing a sum the device reduces (channel_flow's
/// shape): the persistent kernel's threads share the reduction.
const HALVING: &str = "import dace as dc\nimport numpy as np\nN = dc.symbol('N')\n\n@dc.program\ndef f(A: dc.float64[N], K: dc.int64[1]):\n    k = 0\n    while np.sum(A) > 1.0:\n        A[:] = A * 0.5\n        k += 1\n    K[0] = k\n";

#[test]
fn a_reduction_in_a_persistent_kernel_combines_a_partial_per_thread() {
    let n = 700usize;
    let a: Vec<f64> = (0..n).map(|i| ((i * 53) % 97) as f64 / 16.0).collect();
    let (mut want, mut k) = (a.clone(), 0i64);
    while want.iter().sum::<f64>() > 1.0 {
        want.iter_mut().for_each(|v| *v *= 0.5);
        k += 1;
    }
    assert!(k > 8);
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let u = pipeline_unit(HALVING, d);
        assert!(u.source.contains("sdfg_partial0"), "{}", u.source);
        let arguments = || {
            by_name(
                &u,
                &[
                    ("A", f64s(&a)),
                    ("K", Argument::Array(ArrayValue::i64(vec![1], vec![0]))),
                    ("N", Argument::Symbol(n as i64)),
                ],
            )
        };
        let mut args = arguments();
        let Some(r) = run(&device(), &u, "persistent-sum", &mut args) else {
            return;
        };
        let r = r.unwrap();
        assert_eq!(r.status, 0, "{}", r.messages);
        assert_eq!(values(&args[at(&u, "A")]), want, "{}", d.name());
        assert_eq!(values(&args[at(&u, "K")]), [k as f64], "{}", d.name());
        assert_eq!(r.counts.unwrap().launches, 1);
        // The control: partials never combined into the sum.
        let dropped = broken(&u, "sdfg::atomic_sum(&", "(void)(&");
        let mut args = arguments();
        let r = run(&device(), &dropped, "persistent-sum-dropped", &mut args)
            .unwrap()
            .unwrap();
        assert_eq!(r.status, 0, "{}", r.messages);
        assert_ne!(values(&args[at(&u, "K")]), [k as f64], "{}", d.name());
    }
}

/// Issue #39's probe: inside a persistent kernel, a condition one thread
/// computes into device memory once per iteration of a loop whose body may
/// run no state (`flags[m] > 0` false), so that without a barrier after
/// every thread's read of it, the first thread writes the next iteration's
/// condition before the others have read this one's.
const PROBE: &str = "import dace as dc\nN = dc.symbol('N')\nM = dc.symbol('M')\n\n@dc.program\ndef f(flags: dc.int32[M], x: dc.float64[N], y: dc.float64[M, N]):\n    for k in range(1, 4):\n        for j in range(N):\n            x[j] = x[j] * 0.5\n        if x[0] > 0.0:\n            for m in range(1, M):\n                if flags[m] > 0:\n                    for j in range(N):\n                        y[m, j] = y[m - 1, j] + x[j] * k\n";

#[test]
fn a_value_every_thread_of_a_persistent_kernel_reads_is_read_before_it_is_written_again() {
    let (m, n) = (9usize, 300usize);
    let flags: Vec<i32> = (0..m).map(|i| i32::from((i * 7) % 3 == 0)).collect();
    let x0: Vec<f64> = (0..n).map(|j| (j + 1) as f64).collect();
    let (mut x, mut y) = (x0.clone(), vec![0.0; m * n]);
    for k in 1..4 {
        x.iter_mut().for_each(|v| *v *= 0.5);
        if x[0] > 0.0 {
            for i in 1..m {
                if flags[i] > 0 {
                    for j in 0..n {
                        y[i * n + j] = y[(i - 1) * n + j] + x[j] * k as f64;
                    }
                }
            }
        }
    }
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let u = pipeline_unit(PROBE, d);
        assert!(
            u.source.contains("SDFG_COOPERATIVE_KERNEL(for_"),
            "{}",
            u.source
        );
        let arguments = || {
            by_name(
                &u,
                &[
                    (
                        "flags",
                        Argument::Array(ArrayValue::new(vec![m], Elements::I32(flags.clone()))),
                    ),
                    ("x", f64s(&x0)),
                    (
                        "y",
                        Argument::Array(ArrayValue::f64(vec![m, n], vec![0.0; m * n])),
                    ),
                    ("M", Argument::Symbol(m as i64)),
                    ("N", Argument::Symbol(n as i64)),
                ],
            )
        };
        // Every interleaving, and ThreadSanitizer with the grid's blocks
        // on OS threads of their own, agree with the loop above.
        let orders = std::iter::once(Interleaving::InOrder).chain(Interleaving::ADVERSARIAL);
        let devices = orders
            .map(|o| (device().interleaving(o), o.variable()))
            .chain([(
                device().sanitize(Some(Sanitizer::Thread)),
                "tsan".to_owned(),
            )]);
        for (device, name) in devices {
            let mut args = arguments();
            let Some(r) = run(&device, &u, &format!("probe-{name}"), &mut args) else {
                return;
            };
            let r = r.unwrap();
            assert_eq!(r.status, 0, "{}", r.messages);
            assert_eq!(values(&args[at(&u, "x")]), x, "{} {name}", d.name());
            assert_eq!(values(&args[at(&u, "y")]), y, "{} {name}", d.name());
            assert_eq!(r.counts.unwrap().launches, 1, "{} {name}", d.name());
        }

        // The controls, without the barriers after the reads. In order,
        // the first thread writes the next condition before the others
        // read this one: they wait at different barriers, which the
        // emulation stops at.
        let unguarded = TranslationUnit {
            source: u.source.replace(
                "SDFG_GRID_SYNC();  // every thread has read it before any writes it again",
                "",
            ),
            ..u.clone()
        };
        assert_ne!(unguarded.source, u.source);
        let mut args = arguments();
        match run(&device(), &unguarded, "probe-unguarded", &mut args).unwrap() {
            Err(ExecError::Crashed { messages, .. }) => assert!(
                messages.contains("disagree on the kernel's control flow"),
                "{messages}"
            ),
            other => panic!("{}: {other:?}", d.name()),
        }
        // Thread 0 last, the threads usually agree by luck, but
        // ThreadSanitizer sees the write of the next condition race with
        // the other block's read of this one. (The blocks run on OS
        // threads here, so on a loaded machine they may disagree first:
        // either way the missing barrier is found.)
        let tsan = device()
            .sanitize(Some(Sanitizer::Thread))
            .interleaving(Interleaving::Reversed);
        let mut args = arguments();
        let r = run(&tsan, &unguarded, "probe-unguarded-tsan", &mut args).unwrap();
        let Err(e) = r else {
            panic!("{}: no race reported without the barriers", d.name());
        };
        let e = e.to_string();
        assert!(
            e.contains("data race") || e.contains("disagree on the kernel's control flow"),
            "{e}"
        );
    }
}

/// Arguments already on the GPU (DaCe's `GPU_Global`): `n` bounds a loop
/// the host runs, `B` is only ever touched by kernels.
const ON_DEVICE: &str = "import dace as dc\nN = dc.symbol('N')\n\n@dc.program\ndef f(n: dc.int64[1] @ dc.StorageType.GPU_Global, A: dc.float64[N] @ dc.StorageType.GPU_Global, B: dc.float64[N] @ dc.StorageType.GPU_Global):\n    for i in range(n[0]):\n        B[:] = B * 0.5 + A\n";

#[test]
fn arguments_whose_home_is_the_device_are_passed_as_device_pointers() {
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let good = pipeline_unit(ON_DEVICE, d);
        assert!(
            good.parameters
                .iter()
                .filter(|p| p.name != "N")
                .all(|p| p.home == sdfg_ir::Side::Device),
            "{:?}",
            good.parameters
        );
        let (a, b0) = ([1.0, 2.0, 3.0], [4.0, 8.0, 16.0]);
        let b: Vec<f64> = b0
            .iter()
            .zip(&a)
            .map(|(b, a)| ((b * 0.5 + a) * 0.5 + a) * 0.5 + a)
            .collect();
        let arguments = || {
            by_name(
                &good,
                &[
                    (
                        "n",
                        Argument::Array(ArrayValue {
                            shape: vec![1],
                            elements: Elements::I64(vec![3]),
                        }),
                    ),
                    ("A", f64s(&a)),
                    ("B", f64s(&b0)),
                    ("N", Argument::Symbol(3)),
                ],
            )
        };
        let mut args = arguments();
        let Some(r) = run(&device(), &good, "on-device", &mut args) else {
            return;
        };
        let r = r.unwrap();
        assert_eq!(r.status, 0, "{}", r.messages);
        assert_eq!(values(&args[at(&good, "B")]), b, "{}", d.name());
        // Nothing goes in; the loop bound's 8 bytes come to the host,
        // which hands the bound to the one kernel (the loop sunk into it).
        let c = r.counts.unwrap();
        assert_eq!(
            (c.host_to_device.bytes, c.device_to_host.bytes, c.launches),
            (0, 8, 1),
            "{}",
            d.name()
        );
        // The kernel works on the caller's device array: given a host
        // copy of it instead, the host code reading the bound faults as
        // on a GPU.
        let p = d.api_prefix();
        let line = good
            .source
            .lines()
            .find(|l| l.contains(&format!("{p}MemcpyDeviceToHost")) && l.contains("host_n"))
            .unwrap_or_else(|| panic!("no copy of `n` to its host twin:\n{}", good.source))
            .to_owned();
        let bad = broken(&good, &line, "host_n[0] = n[0];");
        let mut args = arguments();
        let r = run(&device(), &bad, "on-device-host-read", &mut args).unwrap();
        let Err(ExecError::Crashed { messages, .. }) = r else {
            panic!(
                "{}: host code read device memory unnoticed: {r:?}",
                d.name()
            );
        };
        assert!(
            messages.contains("host code accessed device memory"),
            "{messages}"
        );
    }
}

/// The counting build's metrics of `unit`'s only program kernel, run with
/// `arguments` (`None` where a tool is missing off CI).
fn kernel_metrics(
    unit: &TranslationUnit,
    name: &str,
    arguments: &mut [Argument],
) -> Option<sdfg_exec::metrics::KernelMetrics> {
    let r = run(&device().metrics(true), unit, name, arguments)?.unwrap();
    assert_eq!(r.status, 0, "{}", r.messages);
    let counts = r.counts.expect("the emulation counts");
    let mut program = counts
        .kernel_metrics
        .into_iter()
        .filter(|(k, _)| !k.starts_with("sdfg::"));
    let (_, m) = program.next().expect("a kernel ran");
    assert!(program.next().is_none(), "one kernel");
    Some(m)
}

#[test]
fn the_counting_build_measures_sectors_against_the_ideal_per_warp_wide_access() {
    // Elementwise over 64 doubles: each warp of 32 lanes reads and writes
    // 256 contiguous bytes, 8 whole sectors, the ideal.
    let u = unit(DOUBLE, &Cuda);
    let a: Vec<f64> = (0..64).map(f64::from).collect();
    let mut args = [f64s(&a), f64s(&[0.0; 64]), Argument::Symbol(64)];
    let Some(m) = kernel_metrics(&u, "metrics-elementwise", &mut args) else {
        return;
    };
    assert_eq!(values(&args[1])[63], 126.0, "the counting build computes");
    assert!(m.traced);
    // Two warps, each one load and one store.
    assert_eq!(m.warp_accesses, 4, "{m:?}");
    assert_eq!((m.sectors, m.ideal_sectors), (32, 32), "{m:?}");
    assert_eq!(m.coalescing(), Some(1.0));
    // Every thread loads once and stores once.
    assert_eq!(m.serial_accesses, 2, "{m:?}");
    assert_eq!(m.launches(), 1);
    assert_eq!(m.atomics, 0);

    // A transpose of 32 x 32: the lanes of a warp write one row of B
    // (8 sectors, ideal) but read one column of A, 32 rows apart: 32
    // sectors for the 256 bytes that fit in 8.
    let t = unit(
        "import dace as dc\nN = dc.symbol('N')\n\n@dc.program\ndef f(A: dc.float64[N, N], B: dc.float64[N, N]):\n    B[:] = A.T\n",
        &Cuda,
    );
    let a: Vec<f64> = (0..32 * 32).map(f64::from).collect();
    let mut args: Vec<Argument> = t
        .parameters
        .iter()
        .map(|p| match p.name.as_str() {
            "N" => Argument::Symbol(32),
            "A" => Argument::Array(ArrayValue::f64(vec![32, 32], a.clone())),
            _ => Argument::Array(ArrayValue::f64(vec![32, 32], vec![0.0; 32 * 32])),
        })
        .collect();
    let Some(m) = kernel_metrics(&t, "metrics-transpose", &mut args) else {
        return;
    };
    assert_eq!(m.warp_accesses, 64, "{m:?}\n{}", t.source);
    assert_eq!((m.sectors, m.ideal_sectors), (32 * 40, 32 * 16), "{m:?}");
    assert_eq!(m.coalescing(), Some(0.4));
}

#[test]
fn the_emulation_counts_atomics_and_launch_shapes_in_every_build() {
    // A sum of 96 values into one element: one atomic add per thread.
    let sdfg = reduced_into_one(sdfg_ir::Wcr::Sum, "s");
    let (out, _) = sdfg_passes::offload(&sdfg, &Cuda, &sdfg_passes::Options::default()).unwrap();
    let u = sdfg_codegen::emit(&out, &Cuda).unwrap();
    let arguments = || -> Vec<Argument> {
        u.parameters
            .iter()
            .map(|p| match p.name.as_str() {
                "N" => Argument::Symbol(96),
                "x" => f64s(&[1.0; 96]),
                _ => f64s(&[0.0]),
            })
            .collect()
    };
    // The plain build counts atomics and shapes, not sectors.
    let mut args = arguments();
    let Some(r) = run(&device(), &u, "atomics-plain", &mut args) else {
        return;
    };
    let counts = r.unwrap().counts.unwrap();
    let (_, m) = counts.kernel_metrics.iter().next().unwrap();
    assert_eq!(m.atomics, 96, "{m:?}");
    assert!(!m.traced && m.coalescing().is_none());
    let blocks: u64 = m.shapes.iter().map(|s| s[0] * s[2]).sum();
    let threads: u64 = m.shapes.iter().map(|s| s[0] * s[1] * s[2]).sum();
    assert!(threads >= 96 && blocks >= 1, "{m:?}");
    // The counting build: the same atomics; 96 lanes in 3 warps all add to
    // one element (one sector each, ideal: 8 bytes).
    let mut args = arguments();
    let Some(m) = kernel_metrics(&u, "atomics-counted", &mut args) else {
        return;
    };
    assert_eq!(m.atomics, 96);
    assert!(m.traced);
    let s = u.parameters.iter().position(|p| p.name == "s").unwrap();
    assert_eq!(values(&args[s]), [96.0]);
}
