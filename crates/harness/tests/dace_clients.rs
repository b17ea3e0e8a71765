//! Constructs of the SDFGs DaCe's users' tools write (GT4Py, DaCe's
//! Fortran frontend; issue #41), each imported and run against what DaCe
//! compiles them to. `cargo xtask clients` runs whole programs of those
//! tools; these are the constructs one by one.

use sdfg_sim::{Arguments, ArrayValue, Simulator};
use serde_json::{Value, json};
use std::path::Path;

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../dace-format/tests/fixtures/gt4py")
        .join(name)
}

/// The IR's axpy example in DaCe's format, its tasklet's code replaced by
/// `code` (connectors `alpha`, `xi`, `yi` in, `out` out, all `float64`).
fn axpy_with(code: &str) -> Value {
    let mut v = sdfg_dace_format::export(&sdfg_ir::examples::axpy().unwrap()).unwrap();
    fn replace(v: &mut Value, code: &str) {
        match v {
            Value::Object(m) => {
                if m.get("type") == Some(&json!("Tasklet")) {
                    m["attributes"]["code"]["string_data"] = json!(code);
                }
                m.values_mut().for_each(|x| replace(x, code));
            }
            Value::Array(a) => a.iter_mut().for_each(|x| replace(x, code)),
            _ => {}
        }
    }
    replace(&mut v, code);
    v
}

const X: [f64; 4] = [0.1, -2.75, 3.5, -0.3];
const Y: [f64; 4] = [1.9, -1.5, 7.25, 2.5];
const A: f64 = 1.25;

/// `y` after the axpy SDFG with `code` ran on `X`, `Y` and `A`.
fn run(code: &str) -> Vec<f64> {
    let sdfg = sdfg_dace_format::import(&axpy_with(code))
        .unwrap_or_else(|e| panic!("`{code}` imports: {e}"));
    let valid = sdfg_ir::validate(&sdfg).unwrap_or_else(|e| panic!("`{code}` validates: {e}"));
    let args = Arguments::default()
        .symbol("N", 4)
        .array("a", ArrayValue::f64(vec![], vec![A]))
        .array("x", ArrayValue::f64(vec![4], X.to_vec()))
        .array("y", ArrayValue::f64(vec![4], Y.to_vec()));
    let out = Simulator::new().run(valid, &args).expect("runs");
    let y = &out.outputs["y"];
    (0..4).map(|k| y.get(k).unwrap().to_f64()).collect()
}

fn expect(code: &str, f: impl Fn(f64, f64) -> f64) {
    let want: Vec<f64> = X.iter().zip(&Y).map(|(x, y)| f(*x, *y)).collect();
    assert_eq!(run(code), want, "`{code}`");
}

#[test]
fn c_casts_written_as_calls_mean_what_cpp_makes_of_them() {
    // DaCe unparses tasklet code to C++ name for name: GT4Py's
    // `double(4.0)`, C's fixed-width types, and C++'s 32-bit `float`/`int`.
    expect("out = (- double(4.0)) * xi + yi", |x, y| -4.0 * x + y);
    expect("out = int64_t(yi) + xi", |x, y| (y.trunc()) + x);
    expect("out = float(xi)", |x, _| f64::from(x as f32));
    expect("out = int(yi) * 2", |_, y| f64::from(y as i32 * 2));
    expect("out = dace.float64(dace.int32(yi))", |_, y| y.trunc());
}

#[test]
fn a_declaration_without_a_value_and_an_output_read_after_it_is_assigned() {
    expect("v: dace.float64\nv = xi * 2.0\nout = v", |x, _| x * 2.0);
    expect("out = xi\nout = out + yi", |x, y| x + y);
}

#[test]
fn fmod_is_cs_remainder_with_the_dividends_sign() {
    expect("out = fmod(xi, alpha)", |x, _| x % A);
    expect("out = fmod(yi, xi)", |x, y| y % x);
    // Python's modulo keeps the divisor's sign: not the same function.
    assert_ne!(run("out = fmod(xi, alpha)"), run("out = Mod(xi, alpha)"));
}

/// GT4Py's `dace:gpu` layout: a device map over `K` around a device map
/// over `J` and `I`, which DaCe runs as one kernel over every point.
#[test]
fn gt4pys_device_map_over_k_around_device_maps_over_ij_is_one_kernel() {
    let sdfg = sdfg_harness::load_sdfg(&fixture("laplacian_gpu.sdfg")).expect("imports");
    let valid = sdfg_ir::validate(&sdfg).expect("valid");
    let maps: Vec<Vec<String>> = sdfg
        .states()
        .iter()
        .flat_map(|(_, s)| {
            s.nodes().filter_map(|(_, n)| match n {
                sdfg_ir::Node::MapEntry(e) => Some(e.map.params.clone()),
                _ => None,
            })
        })
        .collect();
    assert_eq!(maps.len(), 1, "one map: {maps:?}");
    assert_eq!(maps[0].len(), 3, "over k, j and i: {maps:?}");
    // The five-point Laplacian of a window with a halo of one.
    let (ni, nj, nk) = (4usize, 3usize, 2usize);
    let (hi, hj) = (ni + 2, nj + 2);
    let inp: Vec<f64> = (0..hi * hj * nk)
        .map(|k| ((k * 7 + 3) % 13) as f64 - 6.0)
        .collect();
    let at = |i: usize, j: usize, k: usize| inp[(i * hj + j) * nk + k];
    let mut want = vec![0.0; ni * nj * nk];
    for i in 0..ni {
        for j in 0..nj {
            for k in 0..nk {
                want[(i * nj + j) * nk + k] = -4.0 * at(i + 1, j + 1, k)
                    + at(i + 2, j + 1, k)
                    + at(i, j + 1, k)
                    + at(i + 1, j + 2, k)
                    + at(i + 1, j, k);
            }
        }
    }
    let strides = |n: &str, a: usize, b: usize| {
        [
            (format!("__{n}_I_stride"), a * b),
            (format!("__{n}_J_stride"), b),
            (format!("__{n}_K_stride"), 1),
        ]
    };
    let mut args = Arguments::default()
        .symbol("__I", ni as i64)
        .symbol("__J", nj as i64)
        .symbol("__K", nk as i64)
        .array("inp", ArrayValue::f64(vec![hi, hj, nk], inp.clone()))
        .array(
            "out",
            ArrayValue::f64(vec![ni, nj, nk], vec![0.0; ni * nj * nk]),
        );
    for (s, v) in strides("inp", hj, nk)
        .into_iter()
        .chain(strides("out", nj, nk))
    {
        args = args.symbol(&s, v as i64);
    }
    let out = Simulator::new().run(valid, &args).expect("runs");
    let got: Vec<f64> = (0..want.len())
        .map(|k| out.outputs["out"].get(k).unwrap().to_f64())
        .collect();
    assert_eq!(got, want);
}

/// GT4Py's frozen Laplacian (origin (1, 1, 0) of both fields, domain
/// (6, 5, 4)) run on fields of 8 by 7 by 4 elements: what the simulator
/// computes for `sdfg`.
fn frozen_laplacian(sdfg: &sdfg_ir::Sdfg) -> Vec<f64> {
    let (ni, nj, nk) = (8usize, 7usize, 4usize);
    let n = ni * nj * nk;
    let inp: Vec<f64> = (0..n).map(|k| ((k * 7 + 3) % 13) as f64 - 6.0).collect();
    let mut args = Arguments::default()
        .array("inp", ArrayValue::f64(vec![ni, nj, nk], inp))
        .array("out", ArrayValue::f64(vec![ni, nj, nk], vec![0.0; n]));
    for f in ["inp", "out"] {
        for (d, size, stride) in [("I", ni, nj * nk), ("J", nj, nk), ("K", nk, 1)] {
            args = args
                .symbol(&format!("__{f}_{d}_size"), size as i64)
                .symbol(&format!("__{f}_{d}_stride"), stride as i64);
        }
    }
    let valid = sdfg_ir::validate(sdfg).expect("valid");
    let out = Simulator::new().run(valid, &args).expect("runs");
    (0..n)
        .map(|k| out.outputs["out"].get(k).unwrap().to_f64())
        .collect()
}

/// A nested SDFG in DaCe's convention before 2.0 describes a window of
/// the outer array (GT4Py's frozen stencils, gt4py.next's scans and
/// `where`); read by 2.0's, it would compute from the array's start
/// (1,480 of 4,004 elements of a GT4Py stencil differed before this was
/// refused). It is the IR's own binding: read as the window, and written
/// back for DaCe 2.0 with whole arrays, as `convert_legacy_nested_sdfgs`
/// restates it.
#[test]
fn a_nested_sdfg_describing_a_window_computes_on_the_window() {
    let sdfg = sdfg_harness::load_sdfg(&fixture("laplacian_legacy_nested.sdfg")).expect("imports");
    let got = frozen_laplacian(&sdfg);
    let (nj, nk) = (7usize, 4usize);
    let inp = |i: usize, j: usize, k: usize| (((i * nj + j) * nk + k) * 7 + 3) % 13;
    let inp = |i, j, k| inp(i, j, k) as f64 - 6.0;
    let mut want = vec![0.0; 8 * nj * nk];
    for i in 1..7 {
        for j in 1..6 {
            for k in 0..nk {
                want[(i * nj + j) * nk + k] = -4.0 * inp(i, j, k)
                    + inp(i + 1, j, k)
                    + inp(i - 1, j, k)
                    + inp(i, j + 1, k)
                    + inp(i, j - 1, k);
            }
        }
    }
    assert_eq!(got, want);
    // Exported, every connector is a whole array from its start, and the
    // file reads back to the same answer.
    let text = sdfg_dace_format::export::to_dace_string(&sdfg).expect("exports");
    let again = sdfg_dace_format::import::from_dace_str(&text).expect("reads back");
    assert_eq!(frozen_laplacian(&again), want);
    let value: Value = serde_json::from_str(&text).unwrap();
    let mut windows = 0;
    fn edges(v: &Value, f: &mut dyn FnMut(&Value)) {
        if let Some(es) = v.get("edges").and_then(Value::as_array) {
            es.iter().for_each(&mut *f);
        }
        for key in ["nodes"] {
            if let Some(ns) = v.get(key).and_then(Value::as_array) {
                for n in ns {
                    edges(n, f);
                    if let Some(inner) = n["attributes"].get("sdfg") {
                        edges(inner, f);
                    }
                }
            }
        }
    }
    edges(&value, &mut |e| {
        let ranges = &e["attributes"]["data"]["attributes"]["subset"]["ranges"];
        let into_nested = e["dst_connector"]
            .as_str()
            .is_some_and(|c| c == "inp" || c == "out");
        if into_nested
            && ranges
                .as_array()
                .is_some_and(|r| r.iter().any(|r| r["start"] != json!("0")))
        {
            windows += 1;
        }
    });
    assert_eq!(windows, 0, "a connector still bound to a window");
}

/// A window whose connector gives strides other than the outer array's
/// over it means something else to DaCe before 2.0 (the connector's
/// strides from the window's start) than to the IR: refused by name.
#[test]
fn a_window_with_strides_of_its_own_is_refused_by_name() {
    let text = std::fs::read_to_string(fixture("laplacian_legacy_nested.sdfg")).unwrap();
    let mut value: Value = serde_json::from_str(&text).unwrap();
    // The nested SDFG's `out` gets strides of a contiguous array of the window.
    fn nested(v: &mut Value) -> Option<&mut Value> {
        for n in v.get_mut("nodes")?.as_array_mut()? {
            if n["type"] == "NestedSDFG" {
                return Some(&mut n["attributes"]["sdfg"]);
            }
            if let Some(found) = nested(n) {
                return Some(found);
            }
        }
        None
    }
    let inner = nested(&mut value).expect("a nested SDFG");
    inner["attributes"]["_arrays"]["out"]["attributes"]["strides"] = json!(["20", "4", "1"]);
    let err = sdfg_dace_format::import::import(&value)
        .expect_err("refused")
        .to_string();
    assert!(err.contains("describes a window of `out`"), "{err}");
    assert!(err.contains("its stride 20 in dimension 0"), "{err}");
    assert!(err.contains("convert_legacy_nested_sdfgs"), "{err}");
    assert!(err.contains("nodes[0].edges["), "names the edge: {err}");
}

/// A connector bound to data of another element type (the fuzzer's
/// `dace-mutants` finding, seed 11: `out` of the nested SDFG made
/// `complex128`): DaCe's validation refuses it, and so does the import,
/// naming the edge, instead of reading it and writing back what does not
/// import again.
#[test]
fn a_connector_of_another_element_type_than_its_data_is_refused_by_name() {
    let text = std::fs::read_to_string(fixture("laplacian_legacy_nested.sdfg")).unwrap();
    let mut value: Value = serde_json::from_str(&text).unwrap();
    let inner = &mut value["nodes"][0]["nodes"][0]["attributes"]["sdfg"];
    inner["attributes"]["_arrays"]["out"]["attributes"]["dtype"] = json!("complex128");
    let err = sdfg_dace_format::import::import(&value)
        .expect_err("refused")
        .to_string();
    assert!(
        err.contains("binds its connector `out` of complex128 to `out` of float64"),
        "{err}"
    );
    assert!(err.contains("nodes[0].edges["), "names the edge: {err}");
}

/// A program of DaCe's Fortran frontend (`corpus/clients/fortran/lower_bounds.f90`,
/// the case `cargo xtask clients` writes for it kept as a fixture): 1-based arrays and arrays from 0 (DaCe's index offset -1 on
/// every array, the bounds in the index arithmetic), 2-D sections and
/// loops as a state machine of conditional interstate edges. Imported,
/// simulated against DaCe's own CPU build's answer, offloaded and
/// simulated on the device, through the corpus's stages.
#[test]
fn a_fortran_programs_sdfg_computes_daces_answer_on_the_host_and_the_device() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../dace-format/tests/fixtures/fortran/lower_bounds");
    let case = sdfg_harness::clients::ClientCase::read(&dir).expect("a case");
    let out = std::env::temp_dir().join(format!("dace-clients-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    copy_dir(&dir, &out);
    let case = sdfg_harness::clients::ClientCase {
        dir: out.clone(),
        ..case
    };
    let report = run_on_the_simulator(&case);
    let _ = std::fs::remove_dir_all(&out);
    for (stage, s) in &report.stages {
        assert_eq!(
            s.verdict,
            sdfg_harness::corpus::Verdict::Pass,
            "stage `{stage}`"
        );
    }
}

/// A client case through the corpus's stages on the simulated
/// accelerator, without NumPy or DaCe.
fn run_on_the_simulator(
    case: &sdfg_harness::clients::ClientCase,
) -> sdfg_harness::corpus::KernelReport {
    let tools = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/tools");
    let python = Ok(());
    let options = sdfg_harness::corpus::RunOptions {
        preset: "client",
        backend: sdfg_harness::Backend::Sim,
        tools: &tools,
        python: &python,
        references: None,
        device: Err("not needed"),
        gpu: Err("not needed"),
        repeat: 1,
        skip: &[],
        disabled: &[],
        dace_sdfgs: None,
        args_on_device: false,
    };
    sdfg_harness::corpus::run_client(case, &options)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let target = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &target);
        } else {
            std::fs::copy(&p, &target).unwrap();
        }
    }
}

/// DaCe's do-while loop (`LoopRegion` with `inverted`): the body runs
/// before the first test, so once where a `while` loop runs no time.
#[test]
fn a_do_while_loop_runs_its_body_before_the_first_test() {
    let mut v = axpy_with("out = alpha * xi + yi");
    let state = v["nodes"][0].clone();
    v["attributes"]["symbols"]["t"] = json!("int64");
    v["attributes"]["symbols"]["T"] = json!("int64");
    // DaCe's calling convention: the free symbols are arguments.
    if let Some(a) = v["attributes"].as_object_mut() {
        a.remove("_meta_sdfg_arguments");
    }
    let code = |s: &str| json!({"string_data": s, "language": "Python"});
    v["nodes"] = json!([{
        "type": "LoopRegion", "label": "repeat",
        "attributes": {
            "label": "repeat", "loop_variable": "t", "inverted": true,
            "init_statement": code("t = 0"), "update_statement": code("t = (t + 1)"),
            "loop_condition": code("(t < T)"),
        },
        "nodes": [state], "edges": [], "start_block": 0,
    }]);
    v["edges"] = json!([]);
    let sdfg = sdfg_dace_format::import(&v).expect("imports");
    let valid = sdfg_ir::validate(&sdfg).expect("valid");
    let run = |t: i64| -> Vec<f64> {
        let args = Arguments::default()
            .symbol("N", 4)
            .symbol("T", t)
            .array("a", ArrayValue::f64(vec![], vec![A]))
            .array("x", ArrayValue::f64(vec![4], X.to_vec()))
            .array("y", ArrayValue::f64(vec![4], Y.to_vec()));
        let out = Simulator::new().run(valid, &args).expect("runs");
        (0..4)
            .map(|k| out.outputs["y"].get(k).unwrap().to_f64())
            .collect()
    };
    let after = |times: usize| -> Vec<f64> {
        (0..4)
            .map(|k| (0..times).fold(Y[k], |y, _| A * X[k] + y))
            .collect()
    };
    assert_eq!(run(0), after(1), "once before the first test");
    assert_eq!(run(3), after(3));
}

/// A tool's SDFG whose own code indexes outside an array when it runs
/// (gt4py.next's optimizer computes `f(K - 1)` over the whole column and
/// overwrites the ends afterwards): undefined behaviour in DaCe's build as
/// well, refused by name where the simulator finds it, never compared.
#[test]
fn a_tools_sdfg_indexing_outside_its_array_is_refused_where_it_runs() {
    let text = sdfg_dace_format::to_dace_string(&sdfg_ir::examples::axpy().unwrap()).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    // `x[i]` becomes `x[i + N - 3]`: inside the array for no `N` the
    // validator could rule out, outside it at `i = 3` when `N` is 4.
    fn shift(v: &mut Value, n: &mut usize) {
        match v {
            Value::Object(m) => {
                if m.get("data") == Some(&json!("x"))
                    && let Some(subset) = m.get_mut("subset")
                    && subset["ranges"][0]["start"] == json!("$i")
                {
                    for k in ["start", "end"] {
                        subset["ranges"][0][k] = json!("$i + $N - 3");
                    }
                    *n += 1;
                }
                m.values_mut().for_each(|x| shift(x, n));
            }
            Value::Array(a) => a.iter_mut().for_each(|x| shift(x, n)),
            _ => {}
        }
    }
    let mut shifted = 0;
    shift(&mut v, &mut shifted);
    assert_eq!(shifted, 1, "one memlet reads `x[i]`");
    let dir = std::env::temp_dir().join(format!("dace-clients-oob-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for d in ["inputs", "expected"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    std::fs::write(dir.join("program.sdfg"), v.to_string()).unwrap();
    let case = json!({
        "client": "test", "program": "axpy", "variant": "shifted", "source": "-",
        "reference": "none", "symbols": {"N": 4}, "outputs": ["y"],
        "tolerance": {"rtol": 0.0, "atol": 0.0},
    });
    std::fs::write(dir.join("case.json"), case.to_string()).unwrap();
    let npy =
        |name: &str, value: ArrayValue| sdfg_sim::npy::write(&dir.join(name), &value).unwrap();
    npy("inputs/a.npy", ArrayValue::f64(vec![], vec![A]));
    npy("inputs/x.npy", ArrayValue::f64(vec![4], X.to_vec()));
    npy("inputs/y.npy", ArrayValue::f64(vec![4], Y.to_vec()));
    npy("expected/y.npy", ArrayValue::f64(vec![4], Y.to_vec()));
    let case = sdfg_harness::clients::ClientCase::read(&dir).expect("a case");
    let report = run_on_the_simulator(&case);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(report.passed(), "{:?}", report.stages);
    let (_, simulate) = report
        .stages
        .iter()
        .find(|(s, _)| *s == sdfg_harness::corpus::Stage::Simulate)
        .expect("a simulate stage");
    match &simulate.verdict {
        sdfg_harness::corpus::Verdict::Refused(why) => assert!(
            why.contains("the tool's SDFG indexes outside an array") && why.contains("`x`"),
            "{why}"
        ),
        v => panic!("simulate: {v:?}"),
    }
}
