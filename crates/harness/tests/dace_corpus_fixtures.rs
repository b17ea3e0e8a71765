//! DaCe's own SDFGs of a few corpus kernels, kept in
//! `crates/dace-format/tests/fixtures/corpus/` (see the README there): as
//! DaCe lowers them (`.dace.sdfgz`), after `apply_gpu_transformations()`
//! (`.dace.gpu.sdfgz`) and after `auto_optimize(..., GPU)`
//! (`.dace.auto-gpu.sdfgz`). The GPU variants start at a copy-in state
//! that DaCe put in front of the old start while leaving `start_block: 0`
//! behind (issue #39); they import, and compute what the lowered SDFG
//! computes, on the host and offloaded. The fuzzer's `dace-mutants` target
//! mutates the same files.

use sdfg_sim::{Arguments, ArrayValue, Simulator};
use std::collections::BTreeMap;
use std::path::PathBuf;

const VARIANTS: [&str; 3] = ["dace", "dace.gpu", "dace.auto-gpu"];

fn fixture(kernel: &str, variant: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../dace-format/tests/fixtures/corpus")
        .join(format!("{kernel}.{variant}.sdfgz"))
}

fn load(kernel: &str, variant: &str) -> Result<sdfg_ir::Sdfg, String> {
    let sdfg = sdfg_harness::load_sdfg(&fixture(kernel, variant)).map_err(|e| e.to_string())?;
    sdfg_ir::validate(&sdfg).map_err(|e| e.to_string())?;
    Ok(sdfg)
}

/// The arguments of `sdfg`: `symbols`, and every array filled as `sdfgc
/// run` fills it (the names are the same in every variant).
fn arguments(sdfg: &sdfg_ir::Sdfg, symbols: &[(&str, i64)]) -> Arguments {
    let symbols: BTreeMap<String, i64> = symbols.iter().map(|&(n, v)| (n.to_owned(), v)).collect();
    let mut args = Arguments {
        symbols: symbols.clone(),
        ..Arguments::default()
    };
    for (name, (dtype, shape)) in sdfg_sim::argument_shapes(sdfg, &symbols, None).unwrap() {
        let value = sdfg_sim::deterministic_fill(&name, dtype, shape).unwrap();
        args.arrays.insert(name, value);
    }
    args
}

fn run(sdfg: &sdfg_ir::Sdfg, args: &Arguments) -> BTreeMap<String, ArrayValue> {
    let valid = sdfg_ir::validate(sdfg).expect("valid");
    Simulator::new().run(valid, args).expect("runs").outputs
}

/// `sdfg` offloaded for CUDA, every pass up to offloading.
fn offloaded(sdfg: &sdfg_ir::Sdfg) -> sdfg_ir::Sdfg {
    let backend = sdfg_harness::backend("cuda").unwrap();
    sdfg_passes::pipeline::run_owned(
        sdfg.clone(),
        Some(backend.accelerator()),
        &sdfg_passes::PipelineOptions::default(),
        &sdfg_passes::Pass::TO_OFFLOAD,
    )
    .unwrap()
    .0
    .into_inner()
}

fn values(v: &ArrayValue) -> Vec<f64> {
    (0..v.elements.len())
        .map(|k| v.get(k).unwrap().to_f64())
        .collect()
}

fn close(what: &str, ours: &[f64], want: &[f64]) {
    assert_eq!(ours.len(), want.len(), "{what}");
    for (k, (o, w)) in ours.iter().zip(want).enumerate() {
        assert!(
            (o - w).abs() <= 1e-12 * w.abs().max(1.0),
            "{what}[{k}]: {o} != {w}"
        );
    }
}

/// Jacobi-1D as the corpus program writes it, in Rust.
fn jacobi_1d(steps: usize, mut a: Vec<f64>, mut b: Vec<f64>) -> (Vec<f64>, Vec<f64>) {
    let n = a.len();
    for _ in 1..steps {
        for i in 1..n - 1 {
            b[i] = 0.33333 * (a[i - 1] + a[i] + a[i + 1]);
        }
        for i in 1..n - 1 {
            a[i] = 0.33333 * (b[i - 1] + b[i] + b[i + 1]);
        }
    }
    (a, b)
}

/// Jacobi-2D as the corpus program writes it, in Rust (`n` by `n`).
fn jacobi_2d(steps: usize, n: usize, mut a: Vec<f64>, mut b: Vec<f64>) -> (Vec<f64>, Vec<f64>) {
    let sweep = |from: &[f64], to: &mut [f64]| {
        for i in 1..n - 1 {
            for j in 1..n - 1 {
                let at = |i: usize, j: usize| from[i * n + j];
                to[i * n + j] =
                    0.2 * (at(i, j) + at(i, j - 1) + at(i, j + 1) + at(i + 1, j) + at(i - 1, j));
            }
        }
    };
    for _ in 1..steps {
        sweep(&a, &mut b);
        sweep(&b, &mut a);
    }
    (a, b)
}

#[test]
fn daces_gpu_transformed_jacobi_sdfgs_import_and_compute_the_stencil() {
    // jacobi_1d after `auto_optimize` and jacobi_2d after
    // `apply_gpu_transformations` were refused: "1 of the region's 3
    // blocks cannot be reached" (a stale `start_block`).
    let (steps, n) = (5usize, 12usize);
    for variant in VARIANTS {
        let sdfg = load("polybench__jacobi_1d", variant).unwrap();
        let args = arguments(&sdfg, &[("TSTEPS", steps as i64), ("N", n as i64)]);
        let (want_a, want_b) =
            jacobi_1d(steps, values(&args.arrays["A"]), values(&args.arrays["B"]));
        for (form, sdfg) in [("host", sdfg.clone()), ("offloaded", offloaded(&sdfg))] {
            let out = run(&sdfg, &args);
            close(
                &format!("jacobi_1d {variant} {form}: A"),
                &values(&out["A"]),
                &want_a,
            );
            close(
                &format!("jacobi_1d {variant} {form}: B"),
                &values(&out["B"]),
                &want_b,
            );
        }
    }
    let (steps, n) = (4usize, 7usize);
    for variant in VARIANTS {
        let sdfg = load("polybench__jacobi_2d", variant).unwrap();
        let args = arguments(&sdfg, &[("TSTEPS", steps as i64), ("N", n as i64)]);
        let (want_a, want_b) = jacobi_2d(
            steps,
            n,
            values(&args.arrays["A"]),
            values(&args.arrays["B"]),
        );
        for (form, sdfg) in [("host", sdfg.clone()), ("offloaded", offloaded(&sdfg))] {
            let out = run(&sdfg, &args);
            close(
                &format!("jacobi_2d {variant} {form}: A"),
                &values(&out["A"]),
                &want_a,
            );
            close(
                &format!("jacobi_2d {variant} {form}: B"),
                &values(&out["B"]),
                &want_b,
            );
        }
    }
}

#[test]
fn every_kept_dace_sdfg_computes_what_the_lowered_one_computes_or_is_refused_by_name() {
    let kernels: [(&str, &[(&str, i64)]); 8] = [
        ("polybench__jacobi_1d", &[("TSTEPS", 4), ("N", 9)]),
        ("polybench__jacobi_2d", &[("TSTEPS", 3), ("N", 6)]),
        ("polybench__atax", &[("M", 5), ("N", 6)]),
        ("polybench__floyd_warshall", &[("N", 6)]),
        ("polybench__trisolv", &[("N", 7)]),
        ("misc__crc16", &[("N", 9)]),
        ("polybench__gemm", &[("NI", 4), ("NJ", 5), ("NK", 6)]),
        // After `auto_optimize`, a register `__tmp2` of 1 by 1 is copied
        // through a map's exit into `bcol[__i0, __i1]` with DaCe's
        // `other_subset` left null, which DaCe reads as `__tmp2[0, 0]`;
        // the import read `__tmp2[__i0, __i1]`, out of its bounds.
        ("weather_stencils__vadv", &[("I", 4), ("J", 3), ("K", 5)]),
    ];
    // What the import or the validator refuses today, by name. (DaCe's
    // `auto_optimize` moves scalar arguments into registers and writes
    // GEMM's library call as C++ code; both are outside what is read.)
    let refused: [(&str, &str); 2] = [
        (
            "misc__crc16.dace.auto-gpu",
            "register storage cannot hold an argument",
        ),
        (
            "polybench__gemm.dace.auto-gpu",
            "C++ code other than GT4Py's timers (only Python is read)",
        ),
    ];
    for (kernel, symbols) in kernels {
        let lowered = load(kernel, "dace").unwrap();
        let args = arguments(&lowered, symbols);
        let want = run(&lowered, &args);
        assert!(!want.is_empty(), "{kernel}");
        for variant in VARIANTS {
            let name = format!("{kernel}.{variant}");
            let expected_refusal = refused.iter().find(|(n, _)| *n == name).map(|(_, m)| *m);
            let sdfg = match (load(kernel, variant), expected_refusal) {
                (Ok(sdfg), None) => sdfg,
                (Err(e), Some(m)) => {
                    assert!(e.contains(m), "{name}: {e}");
                    continue;
                }
                (Ok(_), Some(m)) => panic!("{name} imports now (it was refused: {m})"),
                (Err(e), None) => panic!("{name}: {e}"),
            };
            for (form, sdfg) in [("host", sdfg.clone()), ("offloaded", offloaded(&sdfg))] {
                let got = run(&sdfg, &args);
                for (out, value) in &want {
                    let ours = got
                        .get(out)
                        .unwrap_or_else(|| panic!("{name} {form}: no `{out}`"));
                    sdfg_harness::corpus::compare(
                        out,
                        ours,
                        value,
                        &sdfg_harness::corpus::Tolerance {
                            rtol: 1e-12,
                            atol: 1e-12,
                            norm_error: 0.0,
                        },
                    )
                    .unwrap_or_else(|e| panic!("{name} {form}: {e}"));
                }
            }
        }
    }
}
