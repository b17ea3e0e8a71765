//! The in-process [`Session`]: a unit loaded once, `NAME_init` once per
//! set of symbol values, `NAME_run` on the caller's own buffers (host
//! memory written in place, device memory passed through without a copy),
//! every buffer checked against its parameter before the call.
//!
//! Runs the emulated GPU in this process (g++ compiles the unit); off CI a
//! missing compiler skips a test with a message, on CI it fails.
//!
//! `unsafe` here is the caller's promise [`Session::run`] asks for: the
//! buffers are vectors of this test that outlive each call.

#![allow(unsafe_code)]

use sdfg_backend_cuda::Cuda;
use sdfg_codegen::TranslationUnit;
use sdfg_exec::{Buffer, Device, EmulatedGpu, ExecError, Session, Value};
use sdfg_ir::{DType, Side};
use std::collections::BTreeMap;

const DOUBLE: &str = "import dace as dc\nN = dc.symbol('N')\n\n@dc.program\ndef f(A: dc.float64[N], B: dc.float64[N]):\n    B[:] = A * 2.0\n";

const RETURNS: &str = "import dace as dc\nN, M = dc.symbol('N'), dc.symbol('M')\n\n@dc.program\ndef f(A: dc.float64[N, M]):\n    return A + 1.0\n";

/// The unit of `f` in `source` for CUDA, with every array argument's home
/// the device where `on_device` (DaCe's `GPU_Global` arguments).
fn unit(source: &str, on_device: bool) -> TranslationUnit {
    let module = sdfg_frontend::Module::parse("test.py", source).unwrap();
    let mut sdfg = module.compile("f").unwrap();
    if on_device {
        for (_, d) in sdfg.containers.iter_mut() {
            if !d.transient && !d.is_scalar() {
                d.storage = sdfg_ir::Storage::DeviceGlobal;
            }
        }
    }
    let (mut out, _) =
        sdfg_passes::offload(&sdfg, &Cuda, &sdfg_passes::Options::default()).unwrap();
    sdfg_passes::lower_library_nodes(&mut out, &Cuda).unwrap();
    sdfg_codegen::emit(&out, &Cuda).unwrap()
}

/// A session of `unit` on the emulated GPU; `None` (after saying why) where
/// g++ is missing off CI.
fn session(unit: &TranslationUnit, name: &str) -> Option<Session> {
    let dir = std::env::temp_dir().join(format!("sdfg-session-{}-{name}", std::process::id()));
    let device = EmulatedGpu::new(env!("CARGO_BIN_EXE_sdfg-exec-child"));
    match device.compile(unit, &dir) {
        Err(ExecError::Missing(why)) if std::env::var_os("CI").is_none() => {
            eprintln!("skipped `{name}`: {why}");
            None
        }
        compiled => Some(Session::open(&compiled.unwrap()).unwrap()),
    }
}

fn host(v: &mut [f64], shape: Vec<usize>) -> Value {
    Value::Buffer(Buffer::contiguous(
        v.as_mut_ptr() as usize,
        DType::Float64,
        shape,
        Side::Host,
    ))
}

fn counts(s: &Session) -> serde_json::Value {
    serde_json::from_str(&s.emulation_report().unwrap()).unwrap()
}

#[test]
fn a_session_writes_the_callers_buffers_and_keeps_one_state_per_set_of_symbols() {
    let Some(mut s) = session(&unit(DOUBLE, false), "double") else {
        return;
    };
    let names: Vec<&str> = s.parameters().iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["A", "B", "N"]);
    for n in [2usize, 2, 3, 2] {
        let mut a: Vec<f64> = (0..n).map(|i| i as f64 + 1.0).collect();
        let mut b = vec![0.0; n];
        let values = [
            host(&mut a, vec![n]),
            host(&mut b, vec![n]),
            Value::Symbol(n as i64),
        ];
        // SAFETY: `a` and `b` hold `n` elements each and outlive the call.
        assert_eq!(unsafe { s.run(&values) }.unwrap(), 0);
        let expected: Vec<f64> = a.iter().map(|x| x * 2.0).collect();
        assert_eq!(b, expected);
    }
    assert_eq!(s.states(), 2, "one state for N = 2, one for N = 3");
}

#[test]
fn symbols_are_read_off_the_shapes_and_return_values_get_their_shape() {
    let Some(mut s) = session(&unit(RETURNS, false), "returns") else {
        return;
    };
    let names: Vec<&str> = s.parameters().iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["A", "M", "N", "__return"]);
    let mut a: Vec<f64> = (0..6).map(f64::from).collect();
    let a_buffer = Buffer::contiguous(
        a.as_mut_ptr() as usize,
        DType::Float64,
        vec![2, 3],
        Side::Host,
    );
    let symbols = s
        .bind(&[Some(&a_buffer), None, None, None], &BTreeMap::new())
        .unwrap();
    assert_eq!(
        symbols,
        BTreeMap::from([("M".to_owned(), 3), ("N".to_owned(), 2)])
    );
    assert_eq!(s.shape(3, &symbols).unwrap(), [2, 3]);
    // A symbol given that contradicts a shape is named.
    let wrong = BTreeMap::from([("N".to_owned(), 5)]);
    let e = s
        .bind(&[Some(&a_buffer), None, None, None], &wrong)
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("dimension 0 of `A` gives 2, but it is 5"),
        "{e}"
    );
    let mut r = vec![0.0; 6];
    let values = [
        Value::Buffer(a_buffer),
        Value::Symbol(3),
        Value::Symbol(2),
        host(&mut r, vec![2, 3]),
    ];
    // SAFETY: `a` and `r` hold six elements each and outlive the call.
    assert_eq!(unsafe { s.run(&values) }.unwrap(), 0);
    assert_eq!(r, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
}

#[test]
fn a_buffer_that_does_not_match_its_parameter_is_refused_by_name_before_the_call() {
    let Some(mut s) = session(&unit(DOUBLE, false), "refusals") else {
        return;
    };
    let mut a = vec![0.0; 4];
    let mut b = vec![0.0; 4];
    let base = |a: &mut Vec<f64>| {
        Buffer::contiguous(a.as_mut_ptr() as usize, DType::Float64, vec![4], Side::Host)
    };
    let cases: Vec<(Buffer, &str)> = vec![
        (
            Buffer {
                dtype: DType::Float32,
                ..base(&mut a)
            },
            "argument `A`: a float32 array for a float64 parameter",
        ),
        (
            Buffer {
                shape: vec![3],
                strides: vec![1],
                ..base(&mut a)
            },
            "argument `A`: shape [3], but the program expects [4]",
        ),
        (
            Buffer {
                shape: vec![4],
                strides: vec![2],
                ..base(&mut a)
            },
            "argument `A`: strides [2] (in elements), but the program indexes it with strides [1]",
        ),
        (
            Buffer {
                side: Side::Device,
                ..base(&mut a)
            },
            "argument `A`: device memory for a parameter whose home is the host",
        ),
    ];
    for (bad, message) in cases {
        let values = [Value::Buffer(bad), host(&mut b, vec![4]), Value::Symbol(4)];
        // SAFETY: refused before any call.
        let e = unsafe { s.run(&values) }.unwrap_err();
        assert!(
            e.to_string().starts_with(message),
            "{e}\nexpected: {message}"
        );
    }
    assert_eq!(s.states(), 0, "nothing was initialized");
}

#[test]
fn device_home_arguments_take_device_memory_without_a_copy() {
    let Some(mut s) = session(&unit(DOUBLE, true), "device") else {
        return;
    };
    assert!(s.parameters()[..2].iter().all(|p| p.home == Side::Device));
    let n = 3usize;
    let bytes = n * 8;
    let mut a = vec![1.0, 2.0, 3.0];
    let mut b = vec![0.0; n];
    let da = s.device_alloc(bytes).unwrap();
    let db = s.device_alloc(bytes).unwrap();
    // SAFETY: `a` holds `bytes` bytes, `da` as many of device memory.
    unsafe { s.device_copy(da, a.as_mut_ptr() as usize, bytes, true) }.unwrap();
    s.reset_counts();
    let on_device = |address| {
        Value::Buffer(Buffer::contiguous(
            address,
            DType::Float64,
            vec![n],
            Side::Device,
        ))
    };
    let values = [on_device(da), on_device(db), Value::Symbol(n as i64)];
    // SAFETY: `da` and `db` are this session's, `n` elements each.
    assert_eq!(unsafe { s.run(&values) }.unwrap(), 0);
    let c = counts(&s);
    assert_eq!(c["host_to_device"]["count"], 0, "{c}");
    assert_eq!(c["device_to_host"]["count"], 0, "{c}");
    // SAFETY: as above, back to the host.
    unsafe { s.device_copy(db, b.as_mut_ptr() as usize, bytes, false) }.unwrap();
    assert_eq!(b, [2.0, 4.0, 6.0]);
    // Host memory for a device-home parameter is staged around the run.
    let mut b2 = vec![0.0; n];
    let values = [
        host(&mut a, vec![n]),
        host(&mut b2, vec![n]),
        Value::Symbol(n as i64),
    ];
    // SAFETY: `a` and `b2` hold `n` elements each.
    assert_eq!(unsafe { s.run(&values) }.unwrap(), 0);
    assert_eq!(b2, [2.0, 4.0, 6.0]);
    // SAFETY: each made by `device_alloc`, released once.
    unsafe {
        s.device_free(da);
        s.device_free(db);
    }
}

#[test]
fn the_simulator_runs_the_sdfg_a_unit_is_emitted_from_with_the_units_parameters() {
    let module = sdfg_frontend::Module::parse("test.py", RETURNS).unwrap();
    let sdfg = module.compile("f").unwrap();
    let (mut out, _) =
        sdfg_passes::offload(&sdfg, &Cuda, &sdfg_passes::Options::default()).unwrap();
    sdfg_passes::lower_library_nodes(&mut out, &Cuda).unwrap();
    let unit = sdfg_codegen::emit(&out, &Cuda).unwrap();
    let sim = sdfg_exec::SimSession::new(sdfg_ir::ValidSdfg::new(out).unwrap()).unwrap();
    assert_eq!(sim.parameters(), unit.parameters);
    let mut a: Vec<f64> = (0..6).map(f64::from).collect();
    let mut r = vec![0.0; 6];
    let values = [
        host(&mut a, vec![2, 3]),
        Value::Symbol(3),
        Value::Symbol(2),
        host(&mut r, vec![2, 3]),
    ];
    // SAFETY: `a` and `r` hold six elements each and outlive the call.
    assert_eq!(unsafe { sim.run(&values) }.unwrap(), 0);
    assert_eq!(r, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let on_device = [
        Value::Buffer(Buffer::contiguous(
            a.as_mut_ptr() as usize,
            DType::Float64,
            vec![2, 3],
            Side::Device,
        )),
        Value::Symbol(3),
        Value::Symbol(2),
        host(&mut r, vec![2, 3]),
    ];
    // SAFETY: refused before any access.
    let e = unsafe { sim.run(&on_device) }.unwrap_err();
    assert!(e.to_string().contains("argument `A`: device memory"), "{e}");
}
