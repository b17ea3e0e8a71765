//! Helpers of the pass tests: a program from a body, deterministic
//! arguments, a race-checked simulation, and a comparison of outputs.

#![allow(dead_code)]

use sdfg_ir::Sdfg;
use sdfg_passes::pipeline::{self, Pass, PipelineOptions};
use sdfg_sim::{Arguments, RunResult, SimAccelerator, Simulator};
use std::collections::BTreeMap;

/// `@dc.program def f(PARAMS): BODY` with symbols `N` and `M`.
pub(crate) fn program(body: &str, params: &str) -> Sdfg {
    let src = format!(
        "import dace as dc\nimport numpy as np\nN = dc.symbol('N')\nM = dc.symbol('M')\n\n@dc.program\ndef f({params}):\n{body}"
    );
    let module = sdfg_frontend::Module::parse("test.py", &src).unwrap();
    module.compile("f").unwrap_or_else(|e| panic!("{e}\n{src}"))
}

/// `N = 6`, `M = 4`, every argument filled deterministically.
pub(crate) fn args(sdfg: &Sdfg) -> Arguments {
    args_with(sdfg, 6, 4)
}

/// Given `N` and `M`, every argument filled deterministically.
pub(crate) fn args_with(sdfg: &Sdfg, n: i64, m: i64) -> Arguments {
    let symbols: BTreeMap<String, i64> = [("N".to_owned(), n), ("M".to_owned(), m)].into();
    let mut a = Arguments::default();
    for s in &sdfg.arguments {
        if let Some(v) = symbols.get(s) {
            a = a.symbol(s, *v);
        }
    }
    for (name, (dtype, shape)) in sdfg_sim::argument_shapes(sdfg, &symbols, None).unwrap() {
        a = a.array(
            &name,
            sdfg_sim::deterministic_fill(&name, dtype, shape).unwrap(),
        );
    }
    a
}

/// Validates and simulates with the race check on.
pub(crate) fn run(sdfg: &Sdfg, a: &Arguments) -> RunResult {
    let valid = sdfg_ir::validate(sdfg).unwrap_or_else(|e| panic!("{e}"));
    Simulator::new()
        .check_races(true)
        .run(valid, a)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The same outputs, to rounding.
#[track_caller]
pub(crate) fn same(want: &RunResult, got: &RunResult) {
    assert_eq!(
        want.outputs.keys().collect::<Vec<_>>(),
        got.outputs.keys().collect::<Vec<_>>()
    );
    for (name, w) in &want.outputs {
        let g = &got.outputs[name];
        assert_eq!(w.shape, g.shape, "`{name}`");
        for i in 0..w.elements.len() {
            let (a, b) = (w.get(i).unwrap().to_c64(), g.get(i).unwrap().to_c64());
            assert!(
                (a - b).norm() <= 1e-12 * a.norm().max(1.0),
                "`{name}`[{i}]: before {a}, after {b}"
            );
        }
    }
}

/// Applies `pass` to a copy of `sdfg`, and checks what every pass must
/// keep: the result validates and round-trips through JSON, a second run
/// changes nothing, and it computes what `sdfg` did on the host and
/// offloaded to the simulated device. Returns the result, the pass's lines
/// and the offloaded run.
#[track_caller]
pub(crate) fn rewritten(
    sdfg: &Sdfg,
    pass: fn(&mut Sdfg) -> Vec<String>,
) -> (Sdfg, Vec<String>, RunResult) {
    let mut out = sdfg.clone();
    let lines = pass(&mut out);
    sdfg_ir::validate(&out).unwrap_or_else(|e| panic!("{e}\n{lines:?}"));
    assert_eq!(Sdfg::from_json(&out.to_json()).unwrap(), out);
    let mut again = out.clone();
    assert!(
        pass(&mut again).is_empty(),
        "a second run changed something"
    );
    assert_eq!(again, out);
    let a = args(sdfg);
    let want = run(sdfg, &a);
    same(&want, &run(&out, &a));
    let (device, _) = pipeline::run(
        &out,
        Some(&SimAccelerator),
        &PipelineOptions::default(),
        &[Pass::Offload],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let got = run(&device, &a);
    same(&want, &got);
    (out, lines, got)
}
