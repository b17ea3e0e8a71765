//! An SDFG DaCe wrote for a program that is not in the corpus (and that
//! this project's frontend never saw): `crates/dace-format/tests/fixtures/
//! smooth_and_project.sdfg`, made with DaCe 2.0.0b1 from the program
//! beside it. It imports, validates, simulates to the values the program
//! computes (worked out here in plain Rust), offloads for CUDA and HIP,
//! simulates on the device to the same values, and exports again.

use sdfg_sim::{Arguments, ArrayValue, Simulator};
use std::path::Path;

const N: usize = 7;
const M: usize = 5;
const T: usize = 3;

fn fixture() -> sdfg_ir::Sdfg {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../dace-format/tests/fixtures/smooth_and_project.sdfg");
    sdfg_harness::load_sdfg(&path).expect("the fixture imports")
}

fn inputs() -> (Vec<f64>, Vec<f64>) {
    let a = (0..N * M)
        .map(|k| ((k * 7 + 3) % 11) as f64 - 4.0)
        .collect();
    let x = (0..M).map(|k| 0.5 + k as f64 * 0.25).collect();
    (a, x)
}

/// The program, in Rust: `T` smoothing sweeps of `A`'s interior rows (each
/// sweep reads the rows before it updates them, as NumPy's right-hand side
/// does), then `y = min(A @ x, 10)` and `out = y / sum(|y|)`.
fn expected() -> (Vec<f64>, Vec<f64>) {
    let (mut a, x) = inputs();
    for _ in 0..T {
        let old = a.clone();
        for i in 1..N - 1 {
            for j in 0..M {
                a[i * M + j] = 0.25 * old[(i - 1) * M + j]
                    + 0.5 * old[i * M + j]
                    + 0.25 * old[(i + 1) * M + j];
            }
        }
    }
    let y: Vec<f64> = (0..N)
        .map(|i| (0..M).map(|j| a[i * M + j] * x[j]).sum::<f64>().min(10.0))
        .collect();
    let norm: f64 = y.iter().map(|v| v.abs()).sum();
    (a, y.iter().map(|v| v / norm).collect())
}

fn run(sdfg: &sdfg_ir::Sdfg) -> (Vec<f64>, Vec<f64>) {
    let (a, x) = inputs();
    let args = Arguments::default()
        .symbol("N", N as i64)
        .symbol("M", M as i64)
        .symbol("T", T as i64)
        .array("A", ArrayValue::f64(vec![N, M], a))
        .array("x", ArrayValue::f64(vec![M], x))
        .array("out", ArrayValue::zeros(sdfg_ir::DType::Float64, vec![N]));
    let valid = sdfg_ir::validate(sdfg).expect("valid");
    let result = Simulator::new().run(valid, &args).expect("runs");
    let values = |name: &str| -> Vec<f64> {
        let v = &result.outputs[name];
        (0..v.elements.len())
            .map(|k| v.get(k).unwrap().to_f64())
            .collect()
    };
    (values("A"), values("out"))
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

#[test]
fn daces_sdfg_of_a_new_program_imports_and_computes_the_programs_values() {
    let sdfg = fixture();
    let (a, out) = run(&sdfg);
    let (want_a, want_out) = expected();
    close("A", &a, &want_a);
    close("out", &out, &want_out);
}

#[test]
fn daces_sdfg_of_a_new_program_offloads_and_exports() {
    let sdfg = fixture();
    let (want_a, want_out) = expected();
    for backend in ["cuda", "hip"] {
        let accelerator = sdfg_harness::backend(backend).unwrap();
        let (offloaded, _) = sdfg_passes::pipeline::run_owned(
            sdfg.clone(),
            Some(accelerator.accelerator()),
            &sdfg_passes::PipelineOptions::default(),
            &sdfg_passes::Pass::TO_OFFLOAD,
        )
        .unwrap();
        let on_device = offloaded
            .containers
            .values()
            .any(|d| d.storage == sdfg_ir::Storage::DeviceGlobal);
        assert!(on_device, "{backend}: data on the device");
        let (a, out) = run(&offloaded);
        close(&format!("{backend}: A"), &a, &want_a);
        close(&format!("{backend}: out"), &out, &want_out);
        let text = sdfg_dace_format::to_dace_string(&offloaded).unwrap();
        let back = sdfg_dace_format::from_dace_str(&text).unwrap();
        sdfg_ir::validate(&back).unwrap();
    }
}
