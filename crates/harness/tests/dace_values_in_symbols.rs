//! DaCe keeps scalar values of any type in symbols (`float64`,
//! `complex128`, `uint16` with bitwise updates) and lets a map parameter
//! shadow a loop's variable; the IR's symbols are integers of one
//! namespace. The fixtures `crates/dace-format/tests/fixtures/
//! values_in_symbols.*.sdfg`, written by DaCe 2.0.0b1 from the programs in
//! `values_in_symbols.py` beside them, import with such symbols kept in
//! containers (`crates/dace-format/src/import/symbols.rs`), compute the
//! programs' values (worked out here in plain Rust) on the host and, once
//! offloaded for CUDA and HIP, on the simulated device, and export again.

use sdfg_ir::{DType, Sdfg};
use sdfg_sim::value::{C64, Elements, Value};
use sdfg_sim::{Arguments, ArrayValue, Simulator};
use std::collections::BTreeMap;
use std::path::Path;

const N: usize = 9;

fn fixture(name: &str) -> Sdfg {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "../dace-format/tests/fixtures/values_in_symbols.{name}.sdfg"
    ));
    sdfg_harness::load_sdfg(&path).expect("the fixture imports")
}

fn array(dtype: DType, shape: Vec<usize>, values: Vec<Value>) -> ArrayValue {
    let mut e = Elements::zeros(dtype, values.len());
    for (k, v) in values.into_iter().enumerate() {
        assert!(e.set(k, v));
    }
    ArrayValue::new(shape, e)
}

/// Runs `sdfg` on the simulator: the outputs by name, element by element.
fn run(sdfg: &Sdfg, args: &Arguments) -> BTreeMap<String, Vec<Value>> {
    let valid = sdfg_ir::validate(sdfg).expect("valid");
    let result = Simulator::new().run(valid, args).expect("runs");
    result
        .outputs
        .iter()
        .map(|(n, v)| {
            let values = (0..v.elements.len())
                .map(|k| v.elements.get(k).unwrap())
                .collect();
            (n.clone(), values)
        })
        .collect()
}

/// Runs the fixture as imported and as offloaded for both backends,
/// checking each run with `check`, and exports the offloaded SDFGs.
fn everywhere(sdfg: &Sdfg, args: &Arguments, check: impl Fn(&str, &BTreeMap<String, Vec<Value>>)) {
    check("host", &run(sdfg, args));
    for backend in ["cuda", "hip"] {
        let accelerator = sdfg_harness::backend(backend).unwrap();
        let (offloaded, _) = sdfg_passes::pipeline::run_owned(
            sdfg.clone(),
            Some(accelerator.accelerator()),
            &sdfg_passes::PipelineOptions::default(),
            &sdfg_passes::Pass::TO_OFFLOAD,
        )
        .unwrap();
        check(backend, &run(&offloaded, args));
        let text = sdfg_dace_format::to_dace_string(&offloaded).unwrap();
        let back = sdfg_dace_format::from_dace_str(&text).unwrap();
        sdfg_ir::validate(&back).unwrap();
    }
}

fn is_container(sdfg: &Sdfg, name: &str, dtype: DType) -> bool {
    !sdfg.symbols.contains_key(name)
        && sdfg
            .containers
            .get(name)
            .is_some_and(|d| d.is_scalar() && d.dtype == dtype)
}

/// `relax` in Rust: the values of `x` and the steps taken.
fn relax(x0: &[f64], target: f64, limit: i64) -> (Vec<f64>, i64) {
    let (mut x, mut steps, mut change) = (x0.to_vec(), 0i64, 1.0f64);
    while change > target {
        steps += 1;
        let old = x.clone();
        for i in 1..N - 1 {
            x[i] = 0.5 * (old[i - 1] + old[i + 1]);
        }
        if steps >= limit {
            change = 0.0;
            continue;
        }
        change = x
            .iter()
            .zip(&old)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
    }
    (x, steps)
}

#[test]
fn a_float_symbol_tested_by_a_while_loop_is_kept_in_a_container() {
    let sdfg = fixture("relax");
    assert!(is_container(&sdfg, "change", DType::Float64));
    assert!(
        sdfg.symbols.contains_key("steps"),
        "an integer stays a symbol"
    );
    let x0: Vec<f64> = (0..N).map(|k| if k % 3 == 0 { 1.0 } else { 0.0 }).collect();
    let target = 1e-3;
    // The loop ends on its own, and where `continue` skips to the test
    // with the condition computed again.
    let (_, free) = relax(&x0, target, 1000);
    for limit in [1000, free - 2] {
        let (x, steps) = relax(&x0, target, limit);
        assert!(
            steps > 3 && steps <= free,
            "the test runs several iterations"
        );
        let args = Arguments::default()
            .symbol("N", N as i64)
            .array(
                "x",
                array(
                    DType::Float64,
                    vec![N],
                    x0.iter().map(|&v| Value::Float(v)).collect(),
                ),
            )
            .array(
                "target",
                array(DType::Float64, vec![], vec![Value::Float(target)]),
            )
            .array(
                "limit",
                array(DType::Int64, vec![], vec![Value::Int(limit)]),
            )
            .array("__return", ArrayValue::zeros(DType::Int64, vec![1]));
        everywhere(&sdfg, &args, |at, out| {
            assert_eq!(
                out["__return"][0].to_i64(),
                steps,
                "{at}: steps (limit {limit})"
            );
            for (k, (o, w)) in out["x"].iter().zip(&x).enumerate() {
                assert!((o.to_f64() - w).abs() < 1e-12, "{at}: x[{k}]");
            }
        });
    }
}

#[test]
fn a_complex_symbol_read_by_tasklets_and_a_condition_is_kept_in_a_container() {
    let sdfg = fixture("weighted");
    assert!(is_container(&sdfg, "z", DType::Complex128));
    let pts: Vec<C64> = (0..8)
        .map(|k| C64::new(0.3 * k as f64 - 0.9, 0.25 * ((k * 5) % 7) as f64 - 0.6))
        .collect();
    let b: Vec<C64> = (0..N)
        .map(|k| C64::new(1.0 + k as f64, 0.5 - k as f64 * 0.1))
        .collect();
    // The program in Rust.
    let mut want = vec![C64::new(0.0, 0.0); N];
    for z in &pts {
        let mut t = vec![C64::new(0.0, 0.0); N];
        for n in 0..3 {
            let zz = z.powc(C64::new(1.5 - n as f64, 0.0));
            for (t, b) in t.iter_mut().zip(&b) {
                *t += zz * b;
            }
        }
        if z.norm() < 1.0 {
            t.iter_mut().for_each(|t| *t = -*t);
        }
        for (o, t) in want.iter_mut().zip(&t) {
            *o += z * t;
        }
    }
    let complex = |v: &[C64]| v.iter().map(|&c| Value::Complex(c)).collect();
    let args = Arguments::default()
        .symbol("N", N as i64)
        .array("pts", array(DType::Complex128, vec![8], complex(&pts)))
        .array("B", array(DType::Complex128, vec![N], complex(&b)))
        .array("out", ArrayValue::zeros(DType::Complex128, vec![N]));
    everywhere(&sdfg, &args, |at, out| {
        for (k, (o, w)) in out["out"].iter().zip(&want).enumerate() {
            assert!(
                (o.to_c64() - w).norm() <= 1e-9 * w.norm().max(1.0),
                "{at}: out[{k}] = {:?}, want {w}",
                o.to_c64()
            );
        }
    });
}

#[test]
fn unsigned_symbols_updated_with_bitwise_operators_are_kept_in_containers() {
    let sdfg = fixture("checksum");
    assert!(is_container(&sdfg, "acc", DType::UInt16));
    let data: Vec<u8> = (0..N).map(|k| ((k * 167 + 13) % 256) as u8).collect();
    // The program in Rust: C++'s promotions, then a store into uint16 / uint8.
    let mut acc: u16 = 0x1D0F;
    for &byte in &data {
        let mut b = byte;
        for _ in 0..4 {
            if (acc ^ u16::from(b)) & 1 != 0 {
                acc = (acc >> 1) ^ 0xA001;
            } else {
                acc >>= 1;
            }
            b >>= 2;
        }
    }
    let args = Arguments::default()
        .symbol("N", N as i64)
        .array(
            "data",
            array(
                DType::UInt8,
                vec![N],
                data.iter().map(|&v| Value::UInt(u64::from(v))).collect(),
            ),
        )
        .array("__return", ArrayValue::zeros(DType::UInt16, vec![1]));
    everywhere(&sdfg, &args, |at, out| {
        assert_eq!(
            out["__return"][0].to_u64(),
            u64::from(acc),
            "{at}: checksum"
        );
    });
}

#[test]
fn map_parameters_shadowing_a_loop_variable_are_renamed_inside_the_map() {
    let sdfg = fixture("shadow");
    let a0: Vec<f64> = (0..N * N)
        .map(|k| ((k * 7) % 11) as f64 * 0.5 - 2.0)
        .collect();
    let v0: Vec<f64> = (0..N).map(|k| 1.0 + k as f64 * 0.25).collect();
    // The program in Rust.
    let (mut a, mut v) = (a0.clone(), v0.clone());
    for j in 0..N {
        v[j] += a[j * N];
    }
    for i in 0..N {
        for j in 0..N {
            a[i * N + j] *= v[j];
        }
    }
    for j in 1..N {
        v[j] += v[j - 1];
    }
    let floats = |x: &[f64]| x.iter().map(|&f| Value::Float(f)).collect();
    let args = Arguments::default()
        .symbol("N", N as i64)
        .array("A", array(DType::Float64, vec![N, N], floats(&a0)))
        .array("v", array(DType::Float64, vec![N], floats(&v0)));
    everywhere(&sdfg, &args, |at, out| {
        for (name, want) in [("A", &a), ("v", &v)] {
            for (k, (o, w)) in out[name].iter().zip(want).enumerate() {
                assert!((o.to_f64() - w).abs() < 1e-12, "{at}: {name}[{k}]");
            }
        }
    });
}

#[test]
fn a_subtracting_copy_is_refused_naming_its_source() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../dace-format/tests/fixtures/values_in_symbols.center.sdfg");
    let err = sdfg_harness::load_sdfg(&path).unwrap_err().to_string();
    assert!(
        err.contains("subtracting write-conflict resolution") && err.contains("`mean`"),
        "{err}"
    );
}
