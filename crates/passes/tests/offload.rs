//! Tests of the generic offload pass (`sdfg_passes::offload`) against the
//! simulated accelerator.
//!
//! One section per phase of the pass (schedules, partitions, locations and
//! placement), then whole-program properties, errors and the report. Every
//! rule has a positive and a negative control that assert specific values;
//! wherever a program can run, the offloaded SDFG is simulated and compared
//! with the original (host storage and device storage are separate address
//! spaces in the simulator, so a missing or wrong copy faults or changes an
//! output).

use sdfg_ir::builder::SdfgBuilder;
use sdfg_ir::code::{Expr, Stmt};
use sdfg_ir::{
    BlockKind, Connector, DType, LibraryOp, Lifetime, Node, Range, Region, Schedule, Sdfg, State,
    Storage, SymExpr, Wcr,
};
use sdfg_passes::offload::{CopyRecord, Placement};
use sdfg_passes::{Accelerator, CopyKind, HostMaps, OffloadError, Options, Report, offload};
use sdfg_sim::{Arguments, ArrayValue, Elements, RunResult, SimAccelerator, Simulator};
use std::collections::BTreeMap;

// ---------------------------------------------------------------------------
// Helpers: running the pass, looking into its output, simulating.

const F64: DType = DType::Float64;

fn f64c(name: &str) -> Connector {
    Connector::scalar(name, F64)
}

fn sym(text: &str) -> SymExpr {
    SymExpr::parse(text).unwrap_or_else(|e| panic!("bad expression `{text}`: {e}"))
}

/// Offloads with the default options, failing the test on a refusal.
#[track_caller]
fn offload_ok(sdfg: &Sdfg) -> (Sdfg, Report) {
    offload_ok_on(sdfg, &SimAccelerator)
}

fn offload_ok_on(sdfg: &Sdfg, acc: &dyn Accelerator) -> (Sdfg, Report) {
    offload(sdfg, acc, &Options::default())
        .unwrap_or_else(|e| panic!("the pass refused `{}`: {e}", sdfg.name))
}

/// The simulated accelerator without a grid-wide barrier: loops whose
/// tests read device data stay on the host (no persistent kernels), for
/// the tests of the placement walk's copies back for those tests.
struct HostLoops;

impl Accelerator for HostLoops {
    fn name(&self) -> &'static str {
        "sim without a grid-wide barrier"
    }
    fn warp_size(&self) -> u32 {
        SimAccelerator.warp_size()
    }
    fn default_block(&self) -> [u32; 3] {
        SimAccelerator.default_block()
    }
    fn max_grid(&self) -> [u64; 3] {
        SimAccelerator.max_grid()
    }
    fn vendor_library(&self, _: &LibraryOp) -> Option<sdfg_passes::VendorCall> {
        None
    }
}

/// The `(what, location)` of an `Unsupported` refusal; fails on anything else.
#[track_caller]
fn refusal(sdfg: &Sdfg, options: &Options) -> (String, String) {
    match offload(sdfg, &SimAccelerator, options) {
        Err(OffloadError::Unsupported { what, location }) => (what, location),
        Err(other) => panic!("expected `Unsupported`, got {other:?}"),
        Ok((_, report)) => panic!("expected `Unsupported`, the pass accepted:\n{report}"),
    }
}

/// The state labelled `label`, anywhere in the SDFG.
#[track_caller]
fn state<'a>(sdfg: &'a Sdfg, label: &str) -> &'a State {
    sdfg.states()
        .into_iter()
        .find(|(l, _)| *l == label)
        .map(|(_, s)| s)
        .unwrap_or_else(|| panic!("no state `{label}`"))
}

/// The state labelled `label`, to change it.
fn state_mut<'a>(sdfg: &'a mut Sdfg, label: &str) -> &'a mut State {
    sdfg.body
        .blocks
        .iter_mut()
        .find(|b| b.label == label)
        .and_then(|b| match &mut b.kind {
            BlockKind::State(s) => Some(s),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no state `{label}` at the top level"))
}

/// The labels of a region's blocks, in order.
fn labels(region: &Region) -> Vec<&str> {
    region.blocks.iter().map(|b| b.label.as_str()).collect()
}

/// The region inside the loop or the first branch of the conditional `label` (top level).
#[track_caller]
fn inner_region<'a>(region: &'a Region, label: &str) -> &'a Region {
    let block = region
        .blocks
        .iter()
        .find(|b| b.label == label)
        .unwrap_or_else(|| panic!("no block `{label}`"));
    match &block.kind {
        BlockKind::Loop(l) => &l.body,
        BlockKind::Conditional(c) => &c.branches[0].1,
        other => panic!("`{label}` is a {}", other.name()),
    }
}

/// Every map of the SDFG by label, with its schedule.
fn map_schedules(sdfg: &Sdfg) -> BTreeMap<String, Schedule> {
    let mut out = BTreeMap::new();
    for (_, s) in sdfg.states() {
        for (_, n) in s.nodes() {
            if let Node::MapEntry(e) = n {
                out.insert(e.map.label.clone(), e.map.schedule);
            }
        }
    }
    out
}

/// Every library node of the SDFG by label, with its schedule.
fn library_schedules(sdfg: &Sdfg) -> BTreeMap<String, Schedule> {
    let mut out = BTreeMap::new();
    for (_, s) in sdfg.states() {
        for (_, n) in s.nodes() {
            if let Node::Library(l) = n {
                out.insert(l.label.clone(), l.schedule);
            }
        }
    }
    out
}

/// The containers the access nodes of a state name, sorted, with repeats.
fn accessed(state: &State) -> Vec<String> {
    let mut v: Vec<_> = state
        .nodes()
        .filter_map(|(_, n)| n.as_access().map(str::to_owned))
        .collect();
    v.sort();
    v
}

#[track_caller]
fn placement<'a>(report: &'a Report, container: &str) -> &'a Placement {
    report
        .placements
        .iter()
        .find(|p| p.container == container)
        .unwrap_or_else(|| panic!("no placement for `{container}` in\n{report}"))
}

/// A copy as `(from, to, kind, bytes, block)`, for comparisons.
type CopyRow = (String, String, CopyKind, SymExpr, String);

/// The copies out of or into `container`, in report order.
fn copies_of(report: &Report, container: &str) -> Vec<CopyRow> {
    report
        .copies
        .iter()
        .filter(|c| c.from == container || c.to == container)
        .map(|c| {
            (
                c.from.clone(),
                c.to.clone(),
                c.kind,
                c.bytes.clone(),
                c.block.clone(),
            )
        })
        .collect()
}

#[track_caller]
fn copy_record<'a>(report: &'a Report, from: &str, to: &str, block: &str) -> &'a CopyRecord {
    report
        .copies
        .iter()
        .find(|c| c.from == from && c.to == to && c.block == block)
        .unwrap_or_else(|| panic!("no copy {from} -> {to} at `{block}` in\n{report}"))
}

fn h2d(from: &str, to: &str, bytes: &str, block: &str) -> CopyRow {
    (
        from.to_owned(),
        to.to_owned(),
        CopyKind::HostToDevice,
        sym(bytes),
        block.to_owned(),
    )
}

fn d2h(from: &str, to: &str, bytes: &str, block: &str) -> CopyRow {
    (
        from.to_owned(),
        to.to_owned(),
        CopyKind::DeviceToHost,
        sym(bytes),
        block.to_owned(),
    )
}

#[track_caller]
fn simulate(sim: &Simulator, sdfg: &Sdfg, args: &Arguments) -> RunResult {
    let valid = sdfg_ir::validate(sdfg)
        .unwrap_or_else(|e| panic!("`{}` does not validate:\n{e}", sdfg.name));
    sim.run(valid, args)
        .unwrap_or_else(|e| panic!("simulating `{}` failed: {e}", sdfg.name))
}

/// Outputs equal: integers and booleans exactly, floating-point and complex
/// numbers within 1e-12 (relative above 1).
#[track_caller]
fn assert_same_outputs(what: &str, want: &RunResult, got: &RunResult) {
    let names = |r: &RunResult| r.outputs.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(want), names(got), "{what}: output names");
    for (name, w) in &want.outputs {
        let g = &got.outputs[name];
        assert_eq!(w.shape, g.shape, "{what}: shape of `{name}`");
        assert_eq!(w.dtype(), g.dtype(), "{what}: dtype of `{name}`");
        for i in 0..w.elements.len() {
            let (a, b) = (w.get(i).unwrap(), g.get(i).unwrap());
            if w.dtype().is_float() || w.dtype().is_complex() {
                let (a, b) = (a.to_c64(), b.to_c64());
                let close = |x: f64, y: f64| {
                    (x.is_nan() && y.is_nan()) || (x - y).abs() <= 1e-12 * x.abs().max(1.0)
                };
                assert!(
                    close(a.re, b.re) && close(a.im, b.im),
                    "{what}: `{name}`[{i}]: original {a}, offloaded {b}"
                );
            } else {
                assert_eq!(a, b, "{what}: `{name}`[{i}]");
            }
        }
    }
}

/// What [`check_offload`] found.
struct Checked {
    offloaded: Sdfg,
    report: Report,
    original_run: RunResult,
    run: RunResult,
}

/// The properties every accepted SDFG must have: the output validates,
/// round-trips through JSON exactly, is a fixed point of the pass (reported
/// as already offloaded when it has device work), and computes what the
/// original computes, with kernel launches when it has device work.
#[track_caller]
fn check_offload(sdfg: &Sdfg, args: &Arguments, sim: &Simulator) -> Checked {
    check_offload_on_path(sdfg, args, sim, true)
}

/// [`check_offload`] for an accelerator without a grid-wide barrier.
#[track_caller]
fn check_host_loops(sdfg: &Sdfg, args: &Arguments, sim: &Simulator) -> Checked {
    check_offload_with(sdfg, args, sim, true, &HostLoops)
}

/// [`check_offload`] for arguments whose run may take a path without kernels
/// (`launches` then tells whether one must be launched).
#[track_caller]
fn check_offload_on_path(
    sdfg: &Sdfg,
    args: &Arguments,
    sim: &Simulator,
    launches: bool,
) -> Checked {
    check_offload_with(sdfg, args, sim, launches, &SimAccelerator)
}

#[track_caller]
fn check_offload_with(
    sdfg: &Sdfg,
    args: &Arguments,
    sim: &Simulator,
    launches: bool,
    acc: &dyn Accelerator,
) -> Checked {
    let (offloaded, report) = offload_ok_on(sdfg, acc);
    let name = &sdfg.name;
    if let Err(e) = sdfg_ir::validate(&offloaded) {
        panic!("`{name}`: the offloaded SDFG does not validate:\n{e}\n{report}");
    }
    let json = offloaded.to_json();
    let back = Sdfg::from_json(&json).unwrap_or_else(|e| panic!("`{name}`: JSON: {e}"));
    assert_eq!(back, offloaded, "`{name}`: JSON round trip");
    assert_eq!(back.to_json(), json, "`{name}`: JSON round trip text");

    let device_work = !report.kernels.is_empty() || !report.library_calls.is_empty();
    let (again, second) = offload_ok_on(&offloaded, acc);
    assert_eq!(
        again, offloaded,
        "`{name}`: a second offload changed the SDFG"
    );
    // Recognized by its schedules; one the pass left without device code
    // (copies only) is a fixed point all the same (checked above).
    assert_eq!(
        second.already_offloaded,
        offloaded.schedules_decided(),
        "`{name}`: second report\n{second}"
    );
    if second.already_offloaded {
        assert!(
            second.kernels.is_empty() && second.copies.is_empty() && second.placements.is_empty(),
            "`{name}`: an already offloaded SDFG reports decisions:\n{second}"
        );
    }

    let original_run = simulate(sim, sdfg, args);
    let run = simulate(sim, &offloaded, args);
    assert_same_outputs(name, &original_run, &run);
    if device_work && launches {
        assert!(run.report.launches > 0, "`{name}`: no kernel launches");
    }
    Checked {
        offloaded,
        report,
        original_run,
        run,
    }
}

/// Transfers of a run: (host to device bytes, device to host bytes, lower bound).
fn transfers(run: &RunResult) -> (u64, u64, u64) {
    (
        run.report.to_device.bytes,
        run.report.to_host.bytes,
        run.report.lower_bound_bytes,
    )
}

fn f64s(n: usize, seed: u64) -> Vec<f64> {
    (0..n as u64)
        .map(|k| ((k * 37 + seed * 11) % 101) as f64 / 50.0 - 1.0)
        .collect()
}

fn vector(n: usize, seed: u64) -> ArrayValue {
    ArrayValue::f64(vec![n], f64s(n, seed))
}

fn scalar(x: f64) -> ArrayValue {
    ArrayValue::f64(vec![], vec![x])
}

// ---------------------------------------------------------------------------
// Test programs, built with the IR builder.

/// `y[i] = 2 * x[i]` as one map in state `compute` (`y` is `x` when `in_place`).
fn scale(in_place: bool) -> Sdfg {
    let y = if in_place { "x" } else { "y" };
    let mut b = SdfgBuilder::new("scale");
    b.symbol("N").array("x", F64, "N");
    if !in_place {
        b.array("y", F64, "N");
    }
    b.state("compute", |s| {
        let xa = s.access("x");
        let ya = s.access(y);
        s.mapped_tasklet(
            "scale",
            "i = 0:N",
            Schedule::Default,
            vec![(xa, f64c("a"), "x[i]")],
            vec![Stmt::assign("b", Expr::var("a") * Expr::f64(2.0))],
            vec![(f64c("b"), ya, &*format!("{y}[i]"))],
        );
    });
    b.build().unwrap()
}

/// `A[i, j] *= 2` as a map over rows holding a map over columns.
fn nested_maps() -> Sdfg {
    let mut b = SdfgBuilder::new("nested_maps");
    b.symbol("N").symbol("M").array("A", F64, "N, M");
    b.state("compute", |s| {
        let a_in = s.access("A");
        let a_out = s.access("A");
        let (rows, rows_exit) = s.map("rows", "i = 0:N", Schedule::Default);
        let (cols, cols_exit) = s.map("cols", "j = 0:M", Schedule::Default);
        let t = s.tasklet(
            "mul",
            vec![f64c("a")],
            vec![f64c("b")],
            vec![Stmt::assign("b", Expr::var("a") * Expr::f64(2.0))],
        );
        s.path(&[a_in, rows, cols, t], None, Some("a"), "A[i, j]");
        s.path(
            &[t, cols_exit, rows_exit, a_out],
            Some("b"),
            None,
            "A[i, j]",
        );
    });
    b.build().unwrap()
}

/// State `host`: map `host_loop` computes `y[i] = twice(x[i])`, through the
/// host callback `twice` when `callback`, else through a tasklet. State
/// `device`: map `other` doubles `z` (always a kernel).
fn callback_map(callback: bool) -> Sdfg {
    let mut b = SdfgBuilder::new("callback_map");
    b.symbol("N")
        .array("x", F64, "N")
        .array("y", F64, "N")
        .array("z", F64, "N");
    b.state("host", |s| {
        let x = s.access("x");
        let y = s.access("y");
        let (entry, exit) = s.map("host_loop", "i = 0:N", Schedule::Default);
        let node = if callback {
            s.callback("cb", "twice", vec![f64c("v")], vec![f64c("o")])
        } else {
            s.tasklet(
                "cb",
                vec![f64c("v")],
                vec![f64c("o")],
                vec![Stmt::assign("o", Expr::var("v") * Expr::f64(2.0))],
            )
        };
        s.path(&[x, entry, node], None, Some("v"), "x[i]");
        s.path(&[node, exit, y], Some("o"), None, "y[i]");
    });
    b.state("device", |s| {
        let z_in = s.access("z");
        let z_out = s.access("z");
        s.mapped_tasklet(
            "other",
            "i = 0:N",
            Schedule::Default,
            vec![(z_in, f64c("a"), "z[i]")],
            vec![Stmt::assign("b", Expr::var("a") * Expr::f64(2.0))],
            vec![(f64c("b"), z_out, "z[i]")],
        );
    });
    b.build().unwrap()
}

/// A simulator that knows the callback `twice`.
fn sim_with_twice() -> Simulator {
    let mut sim = Simulator::new();
    sim.register("twice", |args: &[ArrayValue]| {
        let v = args[0].get(0).ok_or("no input")?.to_f64();
        Ok(vec![ArrayValue::f64(args[0].shape.clone(), vec![2.0 * v])])
    });
    sim
}

/// `C = A @ B` as a top-level library node in state `product`, then
/// `r[i] = dot(A[i, :], B[i, :])` as a library node inside map `rows`.
fn library_program() -> Sdfg {
    let mut b = SdfgBuilder::new("library_program");
    b.symbol("N")
        .array("A", F64, "N, N")
        .array("B", F64, "N, N")
        .array("C", F64, "N, N")
        .array("r", F64, "N");
    b.state("product", |s| {
        let (a, bb, c) = (s.access("A"), s.access("B"), s.access("C"));
        let n = s.library("mm", LibraryOp::MatMul);
        s.edge(a, None, n, Some("_a"), "A");
        s.edge(bb, None, n, Some("_b"), "B");
        s.edge(n, Some("_c"), c, None, "C");
    });
    b.state("row_dots", |s| {
        let (a, bb, r) = (s.access("A"), s.access("B"), s.access("r"));
        let (entry, exit) = s.map("rows", "i = 0:N", Schedule::Default);
        let n = s.library("row_dot", LibraryOp::Dot);
        s.path(&[a, entry, n], None, Some("_x"), "A[i, 0:N]");
        s.path(&[bb, entry, n], None, Some("_y"), "B[i, 0:N]");
        s.path(&[n, exit, r], Some("_result"), None, "r[i]");
    });
    b.build().unwrap()
}

/// State `bump`: the top-level tasklet `inc` computes `s = x[0] + 1`.
fn top_tasklet() -> Sdfg {
    top_tasklet_after(false)
}

/// [`top_tasklet`], after a state `double` whose kernel doubles `x` when
/// `doubled`: `inc` then reads what device code wrote.
fn top_tasklet_after(doubled: bool) -> Sdfg {
    let mut b = SdfgBuilder::new("top_tasklet");
    b.symbol("N").array("x", F64, "N").scalar("s", F64);
    if doubled {
        b.state("double", |s| {
            let (x_in, x_out) = (s.access("x"), s.access("x"));
            s.mapped_tasklet(
                "double",
                "i = 0:N",
                Schedule::Default,
                vec![(x_in, f64c("a"), "x[i]")],
                vec![Stmt::assign("b", Expr::var("a") * Expr::f64(2.0))],
                vec![(f64c("b"), x_out, "x[i]")],
            );
        });
    }
    b.state("bump", |st| {
        let x = st.access("x");
        let s = st.access("s");
        let t = st.tasklet(
            "inc",
            vec![f64c("xi")],
            vec![f64c("o")],
            vec![Stmt::assign("o", Expr::var("xi") + Expr::f64(1.0))],
        );
        st.edge(x, None, t, Some("xi"), "x[0]");
        st.edge(t, Some("o"), s, None, "s[0]");
    });
    b.build().unwrap()
}

/// State `s`: map `fill` writes `y = 2x`; the top-level tasklet `mark`
/// (no data inputs) runs after it through an empty memlet from `y` and
/// writes `z = 1`; the tasklet `after` runs after `mark` through an empty
/// memlet and writes `w = 2`.
fn ordering() -> Sdfg {
    let mut b = SdfgBuilder::new("ordering");
    b.symbol("N")
        .array("x", F64, "N")
        .array("y", F64, "N")
        .scalar("z", F64)
        .scalar("w", F64);
    b.state("s", |s| {
        let x = s.access("x");
        let y = s.access("y");
        let z = s.access("z");
        let w = s.access("w");
        s.mapped_tasklet(
            "fill",
            "i = 0:N",
            Schedule::Default,
            vec![(x, f64c("a"), "x[i]")],
            vec![Stmt::assign("b", Expr::var("a") * Expr::f64(2.0))],
            vec![(f64c("b"), y, "y[i]")],
        );
        let mark = s.tasklet(
            "mark",
            vec![],
            vec![f64c("o")],
            vec![Stmt::assign("o", Expr::f64(1.0))],
        );
        s.empty_edge(y, mark);
        s.edge(mark, Some("o"), z, None, "z[0]");
        let after = s.tasklet(
            "after",
            vec![],
            vec![f64c("o")],
            vec![Stmt::assign("o", Expr::f64(2.0))],
        );
        s.empty_edge(mark, after);
        s.edge(after, Some("o"), w, None, "w[0]");
    });
    b.build().unwrap()
}

/// Names that twins must avoid: containers `x` and `dev_x` (both
/// arguments), `y` next to the symbol `dev_y`, and the return value
/// `__return`. Map `combine` computes `y = x + dev_x`, `__return = x - dev_x`.
fn colliding_names() -> Sdfg {
    let mut b = SdfgBuilder::new("colliding_names");
    b.symbol("N")
        .local_symbol("dev_y")
        .array("x", F64, "N")
        .array("dev_x", F64, "N")
        .array("y", F64, "N")
        .transient("__return", F64, "N");
    b.state("combine", |s| {
        let (x, dx, y, r) = (
            s.access("x"),
            s.access("dev_x"),
            s.access("y"),
            s.access("__return"),
        );
        s.mapped_tasklet(
            "combine",
            "i = 0:N",
            Schedule::Default,
            vec![(x, f64c("a"), "x[i]"), (dx, f64c("b"), "dev_x[i]")],
            vec![
                Stmt::assign("sum", Expr::var("a") + Expr::var("b")),
                Stmt::assign("diff", Expr::var("a") - Expr::var("b")),
            ],
            vec![(f64c("sum"), y, "y[i]"), (f64c("diff"), r, "__return[i]")],
        );
    });
    b.build().unwrap()
}

/// `tmp = 2x` in state `first`, `y = tmp + 1` in state `second`: `tmp` is a
/// transient only kernels use.
fn device_transient() -> Sdfg {
    let mut b = SdfgBuilder::new("device_transient");
    b.symbol("N")
        .array("x", F64, "N")
        .array("y", F64, "N")
        .transient("tmp", F64, "N");
    for (label, from, to, code) in [
        ("first", "x", "tmp", Expr::var("a") * Expr::f64(2.0)),
        ("second", "tmp", "y", Expr::var("a") + Expr::f64(1.0)),
    ] {
        b.state(label, |s| {
            let src = s.access(from);
            let dst = s.access(to);
            let (entry, exit) = s.map(label, "i = 0:N", Schedule::Default);
            let t = s.tasklet(
                label,
                vec![f64c("a")],
                vec![f64c("b")],
                vec![Stmt::assign("b", code)],
            );
            s.path(&[src, entry, t], None, Some("a"), &*format!("{from}[i]"));
            s.path(&[t, exit, dst], Some("b"), None, &*format!("{to}[i]"));
        });
    }
    b.build().unwrap()
}

/// Adds to `b` a state `label` doubling `x` in place with map `label`.
fn double_state(b: &mut SdfgBuilder, label: &str) {
    b.state(label, |s| {
        let x_in = s.access("x");
        let x_out = s.access("x");
        let (entry, exit) = s.map(label, "i = 0:N", Schedule::Default);
        let t = s.tasklet(
            label,
            vec![f64c("a")],
            vec![f64c("b")],
            vec![Stmt::assign("b", Expr::var("a") * Expr::f64(2.0))],
        );
        s.path(&[x_in, entry, t], None, Some("a"), "x[i]");
        s.path(&[t, exit, x_out], Some("b"), None, "x[i]");
    });
}

/// Doubles `x`, returns early when `N > 3`, doubles `x` again.
fn early_return() -> Sdfg {
    let mut b = SdfgBuilder::new("early_return");
    b.symbol("N").array("x", F64, "N");
    double_state(&mut b, "double");
    b.if_else(
        "maybe",
        "N > 3",
        |b| {
            b.return_("leave");
        },
        None,
    );
    double_state(&mut b, "again");
    b.build().unwrap()
}

/// State `count` (a top-level tasklet) sets `cnt[0] = x[0]`; the transition
/// after it assigns `k = cnt[0]` (a host read); state `use` sets `y[0:k] = 1`.
fn interstate_read() -> Sdfg {
    let mut b = SdfgBuilder::new("interstate_read");
    b.symbol("N")
        .local_symbol("k")
        .array("x", DType::Int64, "N")
        .array("cnt", DType::Int64, "1")
        .array("y", F64, "N");
    // A kernel writes `cnt` (a host tasklet on `x` alone would stay host code).
    b.state("count", |s| {
        let x = s.access("x");
        let cnt = s.access("cnt");
        s.mapped_tasklet(
            "pick",
            "j = 0:1",
            Schedule::Default,
            vec![(x, Connector::scalar("xi", DType::Int64), "x[j]")],
            vec![Stmt::assign("c", Expr::var("xi"))],
            vec![(Connector::scalar("c", DType::Int64), cnt, "cnt[j]")],
        );
    })
    .assign("k", "cnt[0]");
    b.state("use", |s| {
        let y = s.access("y");
        s.mapped_tasklet(
            "head",
            "i = 0:k",
            Schedule::Default,
            vec![],
            vec![Stmt::assign("o", Expr::f64(1.0))],
            vec![(f64c("o"), y, "y[i]")],
        );
    });
    b.build().unwrap()
}

fn interstate_args(first: i64) -> Arguments {
    Arguments::default()
        .symbol("N", 5)
        .array("x", ArrayValue::i64(vec![5], vec![first, 9, 9, 9, 9]))
        .array("cnt", ArrayValue::i64(vec![1], vec![-1]))
        .array("y", vector(5, 3))
}

/// `out[0] += x[i]` over a map: a write-conflict resolution into an argument
/// the device never reads through a connector.
fn accumulate() -> Sdfg {
    let mut b = SdfgBuilder::new("accumulate");
    b.symbol("N").array("x", F64, "N").scalar("out", F64);
    b.state("sum", |s| {
        let x = s.access("x");
        let out = s.access("out");
        s.mapped_tasklet(
            "sum",
            "i = 0:N",
            Schedule::Default,
            vec![(x, f64c("v"), "x[i]")],
            vec![Stmt::assign("o", Expr::var("v"))],
            vec![(f64c("o"), out, ("out[0]", Wcr::Sum))],
        );
    });
    b.build().unwrap()
}

/// `y[i] = x[i]` for `i` in `1:N`: `y[0]` keeps its value.
fn partial_write() -> Sdfg {
    let mut b = SdfgBuilder::new("partial_write");
    b.symbol("N").array("x", F64, "N").array("y", F64, "N");
    b.state("shift", |s| {
        let x = s.access("x");
        let y = s.access("y");
        s.mapped_tasklet(
            "shift",
            "i = 1:N",
            Schedule::Default,
            vec![(x, f64c("a"), "x[i]")],
            vec![Stmt::assign("b", Expr::var("a"))],
            vec![(f64c("b"), y, "y[i]")],
        );
    });
    b.build().unwrap()
}

/// `y = x` (the whole of `y`), but only when `N > 3`; with `return_first`,
/// the program returns early when `N > 5` before writing `y` at all.
fn conditional_write(return_first: bool) -> Sdfg {
    let mut b = SdfgBuilder::new("conditional_write");
    b.symbol("N").array("x", F64, "N").array("y", F64, "N");
    let fill = |b: &mut SdfgBuilder| {
        b.state("fill", |s| {
            let x = s.access("x");
            let y = s.access("y");
            s.mapped_tasklet(
                "fill",
                "i = 0:N",
                Schedule::Default,
                vec![(x, f64c("a"), "x[i]")],
                vec![Stmt::assign("b", Expr::var("a"))],
                vec![(f64c("b"), y, "y[i]")],
            );
        });
    };
    if return_first {
        b.if_else(
            "maybe_leave",
            "N > 5",
            |b| {
                b.return_("leave");
            },
            None,
        );
        fill(&mut b);
    } else {
        b.if_else("maybe_fill", "N > 3", fill, None);
    }
    b.build().unwrap()
}

/// `y[i] = 3 * (x[i] + 1)` as two tasklets inside map `m`, passing the
/// transient scalar `t` directly from one to the other (no access node).
fn tasklet_chain_in_map() -> Sdfg {
    let mut b = SdfgBuilder::new("tasklet_chain_in_map");
    b.symbol("N")
        .array("x", F64, "N")
        .array("y", F64, "N")
        .transient_scalar("t", F64);
    b.state("s", |s| {
        let x = s.access("x");
        let y = s.access("y");
        let (entry, exit) = s.map("m", "i = 0:N", Schedule::Default);
        let (t1, t2) = add_chain(s);
        s.path(&[x, entry, t1], None, Some("a"), "x[i]");
        s.path(&[t2, exit, y], Some("b"), None, "y[i]");
    });
    b.build().unwrap()
}

/// The same two tasklets at the top level of a state, for `y[1] = 3 * (x[0] + 1)`.
fn tasklet_chain() -> Sdfg {
    let mut b = SdfgBuilder::new("tasklet_chain");
    b.symbol("N")
        .array("x", F64, "N")
        .array("y", F64, "N")
        .transient_scalar("t", F64);
    b.state("s", |s| {
        let x = s.access("x");
        let y = s.access("y");
        let (t1, t2) = add_chain(s);
        s.edge(x, None, t1, Some("a"), "x[0]");
        s.edge(t2, Some("b"), y, None, "y[1]");
    });
    b.build().unwrap()
}

/// Tasklets `t1` (`b = a + 1`) and `t2` (`b = 3a`), `t1.b -> t2.a` through `t[0]`.
fn add_chain(s: &mut sdfg_ir::builder::StateBuilder<'_>) -> (sdfg_ir::NodeId, sdfg_ir::NodeId) {
    let t1 = s.tasklet(
        "t1",
        vec![f64c("a")],
        vec![f64c("b")],
        vec![Stmt::assign("b", Expr::var("a") + Expr::f64(1.0))],
    );
    let t2 = s.tasklet(
        "t2",
        vec![f64c("a")],
        vec![f64c("b")],
        vec![Stmt::assign("b", Expr::var("a") * Expr::f64(3.0))],
    );
    s.edge(t1, Some("b"), t2, Some("a"), "t[0]");
    (t1, t2)
}

/// Arguments `N = n`, and `x`, `y` of length `n`.
fn xy_args(n: usize) -> Arguments {
    Arguments::default()
        .symbol("N", n as i64)
        .array("x", vector(n, 1))
        .array("y", vector(n, 2))
}

// ---------------------------------------------------------------------------
// Phase 1: schedules.

#[test]
fn a_top_level_map_becomes_a_kernel() {
    let (out, report) = offload_ok(&scale(false));
    assert_eq!(map_schedules(&out)["scale"], Schedule::DeviceKernel);
    assert_eq!(report.kernels, ["scale (state `compute`)"]);
    assert!(report.library_calls.is_empty());
    // Negative control: the input is untouched and still host code.
    assert_eq!(map_schedules(&scale(false))["scale"], Schedule::Default);
}

#[test]
fn a_map_inside_a_kernel_runs_sequentially_and_is_no_kernel() {
    let sdfg = nested_maps();
    let checked = check_offload(
        &sdfg,
        &Arguments::default()
            .symbol("N", 3)
            .symbol("M", 4)
            .array("A", ArrayValue::f64(vec![3, 4], f64s(12, 5))),
        &Simulator::new(),
    );
    let schedules = map_schedules(&checked.offloaded);
    assert_eq!(schedules["rows"], Schedule::DeviceKernel);
    assert_eq!(schedules["cols"], Schedule::Sequential);
    assert_eq!(checked.report.kernels, ["rows (state `compute`)"]);
    assert_eq!(checked.run.report.launches, 1);
    assert_eq!(transfers(&checked.run), (96, 96, 192));
}

#[test]
fn a_map_holding_a_host_callback_stays_on_the_host() {
    let sim = sim_with_twice();
    let n = 6;
    let args = xy_args(n).array("z", vector(n, 3));
    let checked = check_offload(&callback_map(true), &args, &sim);
    let schedules = map_schedules(&checked.offloaded);
    assert_eq!(schedules["host_loop"], Schedule::Sequential);
    assert_eq!(schedules["other"], Schedule::DeviceKernel);
    assert_eq!(checked.report.kernels, ["other (state `device`)"]);
    // The callback's data stays on the host, without twins or copies.
    assert_eq!(accessed(state(&checked.offloaded, "host")), ["x", "y"]);
    for c in ["x", "y"] {
        assert!(
            checked.report.placements.iter().all(|p| p.container != c),
            "`{c}` was placed:\n{}",
            checked.report
        );
        assert!(copies_of(&checked.report, c).is_empty());
    }
    assert_eq!(checked.run.report.launches, 1);
    // Only `z` moves: in and out.
    assert_eq!(transfers(&checked.run), (48, 48, 96));
}

#[test]
fn the_same_map_without_the_callback_is_offloaded() {
    let n = 6;
    let args = xy_args(n).array("z", vector(n, 3));
    let checked = check_offload(&callback_map(false), &args, &Simulator::new());
    let schedules = map_schedules(&checked.offloaded);
    assert_eq!(schedules["host_loop"], Schedule::DeviceKernel);
    assert_eq!(schedules["other"], Schedule::DeviceKernel);
    assert_eq!(
        checked.report.kernels,
        ["host_loop (state `host`)", "other (state `device`)"]
    );
    assert_eq!(
        accessed(state(&checked.offloaded, "host")),
        ["dev_x", "dev_y"]
    );
    assert_eq!(checked.run.report.launches, 2);
    // x in; y out; z in and out.
    assert_eq!(transfers(&checked.run), (96, 96, 192));
}

#[test]
fn a_top_level_library_node_becomes_a_device_wide_call() {
    let n = 4;
    let args = Arguments::default()
        .symbol("N", n as i64)
        .array("A", ArrayValue::f64(vec![n, n], f64s(n * n, 1)))
        .array("B", ArrayValue::f64(vec![n, n], f64s(n * n, 2)))
        .array("C", ArrayValue::f64(vec![n, n], f64s(n * n, 3)))
        .array("r", vector(n, 4));
    let checked = check_offload(&library_program(), &args, &Simulator::new());
    let libs = library_schedules(&checked.offloaded);
    assert_eq!(libs["mm"], Schedule::DeviceKernel);
    assert_eq!(
        checked.report.library_calls,
        ["matmul `mm` -> pure expansion (state `product`)"]
    );
    // Negative control: a library node inside a map is part of the kernel,
    // not a device-wide call of its own.
    assert_eq!(libs["row_dot"], Schedule::Default);
    assert_eq!(
        map_schedules(&checked.offloaded)["rows"],
        Schedule::DeviceKernel
    );
    assert_eq!(checked.report.kernels, ["rows (state `row_dots`)"]);
    assert_eq!(checked.run.report.launches, 2);
    // A and B in; C and r written whole: out only.
    assert_eq!(transfers(&checked.run), (256, 160, 416));
}

// ---------------------------------------------------------------------------
// Phase 2: partitions.

/// The map entry labelled `label` in `state`.
#[track_caller]
fn map_entry(state: &State, label: &str) -> (sdfg_ir::NodeId, sdfg_ir::Map) {
    state
        .nodes()
        .find_map(|(id, n)| match n {
            Node::MapEntry(e) if e.map.label == label => Some((id, e.map.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no map `{label}`"))
}

/// The code node (tasklet, library node, callback) labelled `label`.
#[track_caller]
fn node_named(state: &State, label: &str) -> sdfg_ir::NodeId {
    state
        .nodes()
        .find(|(_, n)| n.is_code() && n.label() == label)
        .map(|(id, _)| id)
        .unwrap_or_else(|| panic!("no node `{label}`"))
}

#[test]
fn a_top_level_tasklet_on_inputs_and_scalars_stays_host_code() {
    // `s = x[0] + 1`: sequential scalar code on an input nothing writes.
    let args = Arguments::default()
        .symbol("N", 3)
        .array("x", vector(3, 1))
        .array("s", scalar(0.25));
    let checked = check_offload(&top_tasklet(), &args, &Simulator::new());
    assert!(checked.report.kernels.is_empty(), "{}", checked.report);
    assert_eq!(checked.report.host_states.len(), 1);
    assert!(checked.report.host_states[0].starts_with("bump (sequential scalar code"));
    assert_eq!(checked.run.report.launches, 0);
    assert_eq!(transfers(&checked.run), (0, 0, 0));
}

#[test]
fn a_top_level_tasklet_reading_device_results_is_wrapped_in_a_single_thread_kernel() {
    let sdfg = top_tasklet_after(true);
    let args = Arguments::default()
        .symbol("N", 3)
        .array("x", vector(3, 1))
        .array("s", scalar(0.25));
    let checked = check_offload(&sdfg, &args, &Simulator::new());
    let st = state(&checked.offloaded, "bump");
    let (entry, map) = map_entry(st, "inc_single");
    assert_eq!(map.params, ["__s"]);
    assert_eq!(map.ranges, [Range::index(SymExpr::int(0))]);
    assert_eq!(map.schedule, Schedule::DeviceKernel);
    let tree = st.scope_tree().unwrap();
    assert_eq!(tree.parent(node_named(st, "inc")), Some(entry));
    assert_eq!(
        checked.report.kernels,
        [
            "double (state `double`)",
            "inc_single (single-thread kernel for host tasklet `inc`, state `bump`)"
        ]
    );
    assert!(checked.report.host_states.is_empty());
    assert_eq!(checked.run.report.launches, 2);
    // x in and back (the kernel reads and writes all of it); s out.
    assert_eq!(transfers(&checked.run), (24, 32, 56));
}

#[test]
fn the_single_thread_parameter_avoids_symbols() {
    let mut sdfg = top_tasklet_after(true);
    sdfg.symbols.insert("__s".to_owned(), DType::Int64);
    let (out, _) = offload_ok(&sdfg);
    let (_, map) = map_entry(state(&out, "bump"), "inc_single");
    assert_eq!(map.params, ["__s_"]);
    sdfg_ir::validate(&out).unwrap();
}

#[test]
fn a_tasklet_inside_a_map_is_not_wrapped() {
    let (out, report) = offload_ok(&scale(false));
    let st = state(&out, "compute");
    let maps: Vec<_> = st
        .nodes()
        .filter_map(|(_, n)| match n {
            Node::MapEntry(e) => Some(e.map.label.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(maps, ["scale"]);
    assert!(report.kernels.iter().all(|k| !k.contains("single")));
}

#[test]
fn empty_memlets_into_a_wrapped_tasklet_survive_without_connectors() {
    let n = 5;
    let args = xy_args(n).array("z", scalar(-1.0)).array("w", scalar(-2.0));
    let checked = check_offload(&ordering(), &args, &Simulator::new());
    let st = state(&checked.offloaded, "s");

    // `y -> mark` became `y -> mark_single` (entry), empty and without connectors.
    let (mark_entry, _) = map_entry(st, "mark_single");
    let ins: Vec<_> = st.in_edges(mark_entry).collect();
    assert_eq!(ins.len(), 1, "edges into mark_single");
    let (_, src, e) = ins[0];
    assert_eq!(st.node(src).and_then(Node::as_access), Some("dev_y"));
    assert_eq!((&e.src_conn, &e.dst_conn, &e.memlet), (&None, &None, &None));
    match st.node(mark_entry) {
        Some(Node::MapEntry(m)) => {
            assert!(m.in_connectors.is_empty() && m.out_connectors.is_empty())
        }
        other => panic!("{other:?}"),
    }
    // The entry orders the tasklet by an empty memlet too.
    let mark = node_named(st, "mark");
    let into_mark: Vec<_> = st.in_edges(mark).collect();
    assert_eq!(into_mark.len(), 1);
    assert_eq!(into_mark[0].1, mark_entry);
    assert!(into_mark[0].2.memlet.is_none());

    // `mark -> after` orders two host tasklets: one partition, one kernel,
    // the empty memlet left inside it.
    let after = node_named(st, "after");
    let into_after: Vec<_> = st.in_edges(after).collect();
    assert_eq!(into_after.len(), 1);
    assert_eq!(into_after[0].1, mark);
    assert!(into_after[0].2.memlet.is_none());
    assert!(
        checked
            .report
            .kernels
            .iter()
            .all(|k| !k.contains("after_single"))
    );
    assert_eq!(checked.run.report.launches, 2);
}

#[test]
fn a_tasklet_without_outputs_is_wrapped_into_a_valid_scope() {
    // Fixed in partitions.rs: the new exit had no edge from inside its scope.
    let mut b = SdfgBuilder::new("no_outputs");
    b.symbol("N").array("x", F64, "N");
    b.state("s", |s| {
        let x = s.access("x");
        let t = s.tasklet("sink", vec![f64c("a")], vec![], vec![]);
        s.edge(x, None, t, Some("a"), "x[0]");
    });
    let sdfg = b.build().unwrap();
    let args = Arguments::default().symbol("N", 2).array("x", vector(2, 1));
    let checked = check_offload(&sdfg, &args, &Simulator::new());
    let st = state(&checked.offloaded, "s");
    let sink = node_named(st, "sink");
    let outs: Vec<_> = st.out_edges(sink).collect();
    assert_eq!(outs.len(), 1);
    assert!(matches!(st.node(outs[0].1), Some(Node::MapExit(x)) if x.label == "sink_single"));
    assert!(outs[0].2.memlet.is_none());
    assert_eq!(checked.run.report.launches, 1);
}

#[test]
fn tasklets_connected_by_a_memlet_form_one_partition_on_the_device() {
    let args = xy_args(3);
    let checked = check_offload(&tasklet_chain(), &args, &Simulator::new());
    // One partition: the two tasklets run in one single-thread kernel.
    assert_eq!(
        checked.report.kernels,
        [
            "t1_single (single-thread kernel for the partition of host code starting at tasklet `t1`, state `s`)"
        ]
    );
    assert_eq!(
        checked.offloaded.containers["t"].storage,
        Storage::DeviceGlobal
    );
    assert_eq!(checked.run.report.launches, 1);
    let want = 3.0 * (args.arrays["x"].get(0).unwrap().to_f64() + 1.0);
    assert_eq!(checked.run.outputs["y"].get(1).unwrap().to_f64(), want);
}

// ---------------------------------------------------------------------------
// Phases 3 and 4: locations and placement.

#[test]
fn a_map_exit_claiming_more_than_its_map_writes_is_not_a_whole_write() {
    // Found by `cargo xtask fuzz --target dace-mutants` (a DaCe file whose
    // map range was changed): the map writes `y[1:N]`, the edge leaving it
    // claims all of `y` (DaCe's propagation over-approximates too). Taken
    // for a whole write, `y` was not copied in, and the copy back wrote
    // the device's unwritten `y[0]` over the host's.
    let mut sdfg = SdfgBuilder::new("partial");
    sdfg.symbol("N").array("x", F64, "N").array("y", F64, "N");
    sdfg.state("compute", |s| {
        let (xa, ya) = (s.access("x"), s.access("y"));
        s.mapped_tasklet(
            "scale",
            "i = 1:N",
            Schedule::Default,
            vec![(xa, f64c("a"), "x[i]")],
            vec![Stmt::assign("b", Expr::var("a") * Expr::f64(2.0))],
            vec![(f64c("b"), ya, "y[i]")],
        );
    });
    let mut sdfg = sdfg.build().unwrap();
    let BlockKind::State(st) = &mut sdfg.body.blocks[0].kind else {
        panic!("one state");
    };
    let exit_edge = st
        .edges()
        .find(|(_, src, _, _)| matches!(st.node(*src), Some(Node::MapExit(_))))
        .map(|(id, ..)| id)
        .unwrap();
    let memlet = st.graph[exit_edge].memlet.as_mut().unwrap();
    memlet.subset = sdfg_ir::Subset::parse("0:N").unwrap();
    memlet.volume = sym("N");
    let checked = check_offload(&sdfg, &xy_args(7), &Simulator::new());
    assert!(
        copies_of(&checked.report, "y").contains(&h2d("y", "dev_y", "8*N", "offload_copy_in")),
        "{}",
        checked.report
    );
}

#[test]
fn a_signature_container_gets_a_device_twin_and_keeps_its_host_storage() {
    let sdfg = scale(false);
    let checked = check_offload(&sdfg, &xy_args(7), &Simulator::new());
    let (out, report) = (&checked.offloaded, &checked.report);
    for (c, twin) in [("x", "dev_x"), ("y", "dev_y")] {
        let p = placement(report, c);
        assert_eq!(p.twin.as_deref(), Some(twin));
        assert_eq!(p.storage, sdfg.containers[c].storage);
        assert!(p.reason.contains("signature"), "{}", p.reason);
        assert_eq!(out.containers[c], sdfg.containers[c], "`{c}` changed");
        let t = &out.containers[twin];
        assert_eq!(
            (t.transient, t.storage, t.lifetime, t.dtype, t.shape()),
            (
                true,
                Storage::DeviceGlobal,
                Lifetime::Sdfg,
                F64,
                vec![sym("N")]
            )
        );
    }
    assert_eq!(out.arguments, sdfg.arguments);
    assert_eq!(accessed(state(out, "compute")), ["dev_x", "dev_y"]);
    assert_eq!(
        labels(&out.body),
        ["offload_copy_in", "compute", "offload_copy_out"]
    );
    assert_eq!(
        copies_of(report, "x"),
        [h2d("x", "dev_x", "8*N", "offload_copy_in")]
    );
    assert_eq!(
        copies_of(report, "y"),
        [d2h("dev_y", "y", "8*N", "offload_copy_out")]
    );
    // 7 float64 in, 7 out, nothing twice.
    assert_eq!(checked.run.report.launches, 1);
    assert_eq!(transfers(&checked.run), (56, 56, 112));
    assert_eq!(checked.run.report.transfer_ratio(), Some(1.0));
}

#[test]
fn twin_names_collide_with_no_container_symbol_or_return_name() {
    let sdfg = colliding_names();
    let n = 4;
    let args = xy_args(n).array("dev_x", vector(n, 7));
    let checked = check_offload(&sdfg, &args, &Simulator::new());
    let report = &checked.report;
    let twins: BTreeMap<_, _> = report
        .placements
        .iter()
        .map(|p| (p.container.as_str(), p.twin.as_deref()))
        .collect();
    assert_eq!(
        twins,
        BTreeMap::from([
            ("__return", Some("dev_return")),
            ("dev_x", Some("dev_dev_x")),
            ("x", Some("dev_x_1")),
            ("y", Some("dev_y_1")),
        ])
    );
    for (_, twin) in twins {
        let twin = twin.unwrap();
        assert!(!sdfg.containers.contains_key(twin) && !sdfg.symbols.contains_key(twin));
        assert!(!twin.starts_with("__return"));
    }
    // Each argument is read from its own twin: swapping two would change `y`
    // and `__return` (checked by the simulation) or fail to validate.
    assert_eq!(
        accessed(state(&checked.offloaded, "combine")),
        ["dev_dev_x", "dev_return", "dev_x_1", "dev_y_1"]
    );
    // `__return` is a signature container: twin, copy back, own storage kept.
    assert_eq!(
        checked.offloaded.containers["__return"],
        sdfg.containers["__return"]
    );
    assert_eq!(
        copies_of(report, "__return"),
        [d2h("dev_return", "__return", "8*N", "offload_copy_out")]
    );
    assert!(placement(report, "__return").reason.contains("signature"));
    assert_eq!(transfers(&checked.run), (64, 64, 128));
}

#[test]
fn a_transient_only_kernels_use_lives_in_device_memory_without_a_twin() {
    let sdfg = device_transient();
    let checked = check_offload(&sdfg, &xy_args(5), &Simulator::new());
    let (out, report) = (&checked.offloaded, &checked.report);
    let p = placement(report, "tmp");
    assert_eq!(
        (p.twin.as_deref(), p.storage),
        (None, Storage::DeviceGlobal)
    );
    assert_eq!(out.containers["tmp"].storage, Storage::DeviceGlobal);
    assert!(out.containers["tmp"].transient);
    assert!(!out.containers.contains_key("dev_tmp"));
    assert!(copies_of(report, "tmp").is_empty());
    assert_eq!(accessed(state(out, "first")), ["dev_x", "tmp"]);
    assert_eq!(accessed(state(out, "second")), ["dev_y", "tmp"]);
    assert_eq!(transfers(&checked.run), (40, 40, 80));
}

#[test]
fn a_transient_passed_between_tasklets_of_a_kernel_lives_in_device_memory() {
    // Fixed in locations.rs: memlets between two tasklets were not looked at,
    // `t` stayed in host memory and the kernel faulted on it.
    let checked = check_offload(&tasklet_chain_in_map(), &xy_args(4), &Simulator::new());
    let p = placement(&checked.report, "t");
    assert_eq!(
        (p.twin.as_deref(), p.storage),
        (None, Storage::DeviceGlobal)
    );
    assert_eq!(
        checked.offloaded.containers["t"].storage,
        Storage::DeviceGlobal
    );
    assert!(copies_of(&checked.report, "t").is_empty());
    assert_eq!(transfers(&checked.run), (32, 32, 64));
}

#[test]
fn a_transient_the_host_reads_gets_a_twin_instead() {
    // Negative control: `done` in `converge` is a transient, but a loop
    // condition reads it on the host (where the loop stays without a
    // grid-wide barrier).
    let sdfg = sdfg_ir::examples::converge().unwrap();
    let (out, report) = offload_ok_on(&sdfg, &HostLoops);
    let p = placement(&report, "done");
    assert_eq!(p.twin.as_deref(), Some("dev_done"));
    assert!(
        p.reason.contains("host code and device code"),
        "{}",
        p.reason
    );
    assert_eq!(out.containers["done"], sdfg.containers["done"]);
    assert_eq!(out.containers["dev_done"].storage, Storage::DeviceGlobal);
    // Its sibling `err` is only used by kernels.
    let err = placement(&report, "err");
    assert_eq!(
        (err.twin.as_deref(), err.storage),
        (None, Storage::DeviceGlobal)
    );
}

#[test]
fn a_container_the_device_only_reads_is_copied_in_and_not_back() {
    let (out, report) = offload_ok(&scale(false));
    let copies = copies_of(&report, "x");
    assert_eq!(copies, [h2d("x", "dev_x", "8*N", "offload_copy_in")]);
    assert!(
        report
            .copies
            .iter()
            .all(|c| c.from != "dev_x" && c.kind != CopyKind::HostToHost),
        "no copy back for a twin nothing wrote:\n{report}"
    );
    // The copy-out state moves y alone.
    assert_eq!(accessed(state(&out, "offload_copy_out")), ["dev_y", "y"]);
    assert_eq!(accessed(state(&out, "offload_copy_in")), ["dev_x", "x"]);
}

#[test]
fn a_container_the_device_writes_is_copied_back_at_the_exit_and_before_every_return() {
    let sdfg = early_return();
    let (out, report) = offload_ok(&sdfg);
    assert_eq!(
        labels(&out.body),
        [
            "offload_copy_in",
            "double",
            "maybe",
            "again",
            "offload_copy_out"
        ]
    );
    assert_eq!(
        labels(inner_region(&out.body, "maybe")),
        ["offload_copy_out_return", "leave"]
    );
    assert_eq!(
        copies_of(&report, "x"),
        [
            h2d("x", "dev_x", "8*N", "offload_copy_in"),
            d2h("dev_x", "x", "8*N", "offload_copy_out_return"),
            d2h("dev_x", "x", "8*N", "offload_copy_out"),
        ]
    );
    assert!(
        copy_record(&report, "dev_x", "x", "offload_copy_out_return")
            .reason
            .contains("return")
    );
    // Both paths compute what the original computes, copying x back once.
    for n in [2usize, 5] {
        let args = Arguments::default()
            .symbol("N", n as i64)
            .array("x", vector(n, 1));
        let checked = check_offload(&sdfg, &args, &Simulator::new());
        let launches = if n > 3 { 1 } else { 2 };
        assert_eq!(checked.run.report.launches, launches, "N = {n}");
        let bytes = 8 * n as u64;
        assert_eq!(
            transfers(&checked.run),
            (bytes, bytes, 2 * bytes),
            "N = {n}"
        );
    }
}

#[test]
fn a_final_return_needs_no_copy_at_the_exit() {
    // Negative control of the exit copy: the region ends in `return`, which
    // already copied back.
    let sdfg = compile(
        "@dc.program\ndef f(A: dc.float64[N, N], B: dc.float64[N, N]):\n    return A @ B + 1.0\n",
    );
    let (out, report) = offload_ok(&sdfg);
    assert!(!labels(&out.body).contains(&"offload_copy_out"));
    assert_eq!(
        copies_of(&report, "__return"),
        [d2h(
            "dev_return",
            "__return",
            "8*N**2",
            "offload_copy_out_return"
        )]
    );
}

#[test]
fn a_container_read_by_a_transition_is_copied_back_before_the_transition() {
    let sdfg = interstate_read();
    let (out, report) = offload_ok(&sdfg);
    assert_eq!(
        labels(&out.body),
        [
            "offload_copy_in",
            "count",
            "count_to_host",
            "use",
            "offload_copy_out"
        ]
    );
    // The assignment `k = cnt[0]` now leaves the copy state.
    let count = &out.body.blocks[1];
    let copy = &out.body.blocks[2];
    assert!(count.transition.is_empty());
    assert_eq!(copy.transition, sdfg.body.blocks[0].transition);
    assert_eq!(copy.transition.assignments[0].symbol, "k");
    assert_eq!(accessed(state(&out, "count_to_host")), ["cnt", "dev_cnt"]);
    // Copied back there and only there: not again at the exit.
    assert_eq!(
        copies_of(&report, "cnt"),
        [d2h("dev_cnt", "cnt", "8", "count_to_host")]
    );
    let record = copy_record(&report, "dev_cnt", "cnt", "count_to_host");
    assert!(
        record
            .reason
            .contains("transition after `count` reads `cnt`"),
        "{}",
        record.reason
    );
    // Negative control: `x`, which interstate code never reads, is not
    // copied back after `count` (nor at all: the device only reads it).
    assert_eq!(
        copies_of(&report, "x"),
        [h2d("x", "dev_x", "8*N", "offload_copy_in")]
    );
    for first in [0, 3, 5] {
        let checked = check_offload(&sdfg, &interstate_args(first), &Simulator::new());
        // cnt back (8), y in and out (40 each), x in (40).
        assert_eq!(transfers(&checked.run), (80, 48, 128), "x[0] = {first}");
    }
}

#[test]
fn a_container_read_by_loop_and_branch_conditions_is_copied_back_where_the_host_reads_it() {
    // Without a grid-wide barrier the loop stays on the host, testing what
    // the device writes.
    let sdfg = sdfg_ir::examples::converge().unwrap();
    let (out, report) = offload_ok_on(&sdfg, &HostLoops);
    // `init` only sets `done`, which only interstate code reads, and
    // `finish` only the scalar `flag`: host states. The loop holds `done`
    // on the host at its head.
    assert_eq!(report.host_states.len(), 2, "{report}");
    assert!(report.host_states[0].starts_with("init "), "{report}");
    assert!(report.host_states[1].starts_with("finish "), "{report}");
    assert_eq!(
        labels(&out.body),
        [
            "offload_copy_in",
            "init",
            "iterate",
            "early_exit",
            "finish",
            "offload_copy_out"
        ]
    );
    // `it = 0` leaves `init` unchanged: the copy is a block of its own.
    assert_eq!(out.body.blocks[1].transition.assignments[0].symbol, "it");
    // `check` writes `done` on the device; every way back to the head or
    // out of the loop (the back edge, `continue` at `skip_odd`, `break` at
    // `give_up`) restores it on the host, and only those.
    let body = inner_region(&out.body, "iterate");
    assert_eq!(
        labels(body),
        [
            "reset",
            "halve",
            "check",
            "limit",
            "parity",
            "iterate_back_edge"
        ]
    );
    assert_eq!(
        copies_of(&report, "done"),
        [
            d2h("dev_done", "done", "1", "give_up_to_host"),
            d2h("dev_done", "done", "1", "skip_odd_to_host"),
            d2h("dev_done", "done", "1", "iterate_back_edge"),
        ]
    );
    // `flag` is read by the branch condition of `early_exit`, and written
    // by `finish` on the host: it never crosses.
    assert!(copies_of(&report, "flag").is_empty());
    assert_eq!(
        labels(inner_region(&out.body, "early_exit")),
        ["offload_copy_out_return", "leave"]
    );
    for flag in [0, 1] {
        let args = Arguments::default()
            .symbol("N", 4)
            .array("x", ArrayValue::f64(vec![4], vec![1.0, -2.0, 0.5, 3.0]))
            .array("flag", ArrayValue::new(vec![], Elements::I32(vec![flag])));
        let checked = check_host_loops(&sdfg, &args, &Simulator::new());
        assert!(checked.run.report.launches > 1);
        assert_eq!(checked.run.report.per_container["x"].to_host.bytes, 32);
        // With one, the loop is one persistent kernel: `done` never
        // crosses, and the loop is one launch.
        let persistent = check_offload(&sdfg, &args, &Simulator::new());
        assert_eq!(
            persistent.report.persistent_loops,
            ["iterate"],
            "{}",
            persistent.report
        );
        assert!(copies_of(&persistent.report, "done").is_empty());
        assert!(persistent.run.report.launches < checked.run.report.launches);
    }
}

#[test]
fn a_loop_bound_read_from_data_is_copied_back_on_the_back_edge() {
    // `for i in range(0, n[0])` whose body decrements `n[0]` on the device.
    let mut b = SdfgBuilder::new("loop_bound");
    b.local_symbol("i").array("n", DType::Int64, "1");
    b.for_loop("l", "i", "0", "n[0]", 1, |b| {
        // A kernel (a host tasklet on `n` alone would stay host code).
        b.state("body", |s| {
            let n_in = s.access("n");
            let n_out = s.access("n");
            s.mapped_tasklet(
                "dec",
                "j = 0:1",
                Schedule::Default,
                vec![(n_in, Connector::scalar("a", DType::Int64), "n[j]")],
                vec![Stmt::assign("o", Expr::var("a") - Expr::i64(1))],
                vec![(Connector::scalar("o", DType::Int64), n_out, "n[j]")],
            );
        });
    });
    let sdfg = b.build().unwrap();
    let args = Arguments::default().array("n", ArrayValue::i64(vec![1], vec![6]));
    // Without a grid-wide barrier the loop stays on the host.
    let checked = check_host_loops(&sdfg, &args, &Simulator::new());
    assert_eq!(labels(&checked.offloaded.body), ["offload_copy_in", "l"]);
    // The condition reads `n` on the host, the body on the device before
    // writing it: the loop holds it on both sides at its head, copied in
    // once; the back edge brings the body's write back for the condition.
    assert_eq!(
        labels(inner_region(&checked.offloaded.body, "l")),
        ["body", "l_back_edge"]
    );
    assert_eq!(
        copies_of(&checked.report, "n"),
        [
            h2d("n", "dev_n", "8", "offload_copy_in"),
            d2h("dev_n", "n", "8", "l_back_edge"),
        ]
    );
    // i = 0, 1, 2 run (n = 5, 4, 3); i = 3 stops.
    assert_eq!(checked.run.outputs["n"], ArrayValue::i64(vec![1], vec![3]));
    assert_eq!(checked.run.report.launches, 3);
    assert_eq!(transfers(&checked.run), (8, 24, 16));
    // With a grid-wide barrier the loop is one persistent kernel: `n` goes
    // in once and comes back once, at the lower bound.
    let persistent = check_offload(&sdfg, &args, &Simulator::new());
    assert_eq!(
        persistent.report.persistent_loops,
        ["l"],
        "{}",
        persistent.report
    );
    assert_eq!(
        persistent.run.outputs["n"],
        ArrayValue::i64(vec![1], vec![3])
    );
    assert_eq!(persistent.run.report.launches, 1);
    assert_eq!(transfers(&persistent.run), (8, 8, 16));
}

// Regression tests for write-only twins (fixed in placement.rs): the copy
// back must not carry elements the device never wrote.

#[test]
fn a_combining_write_copies_the_old_value_in() {
    let sdfg = accumulate();
    let args = Arguments::default()
        .symbol("N", 4)
        .array("x", vector(4, 1))
        .array("out", scalar(10.0));
    let checked = check_offload(&sdfg, &args, &Simulator::new());
    assert_eq!(
        copies_of(&checked.report, "out"),
        [
            h2d("out", "dev_out", "8", "offload_copy_in"),
            d2h("dev_out", "out", "8", "offload_copy_out"),
        ]
    );
    let r = &copy_record(&checked.report, "out", "dev_out", "offload_copy_in").reason;
    assert!(r.contains("writes part of `out`"), "{r}");
    let got = checked.run.outputs["out"].get(0).unwrap().to_f64();
    let want = 10.0 + f64s(4, 1).iter().sum::<f64>();
    assert!((got - want).abs() < 1e-12, "{got} != {want}");
}

#[test]
fn a_partial_write_copies_the_rest_in() {
    let checked = check_offload(&partial_write(), &xy_args(5), &Simulator::new());
    assert_eq!(
        copies_of(&checked.report, "y"),
        [
            h2d("y", "dev_y", "8*N", "offload_copy_in"),
            d2h("dev_y", "y", "8*N", "offload_copy_out"),
        ]
    );
    assert_eq!(
        checked.run.outputs["y"].get(0),
        xy_args(5).arrays["y"].get(0)
    );
}

#[test]
fn a_write_the_run_may_skip_keeps_the_old_value() {
    for return_first in [false, true] {
        let sdfg = conditional_write(return_first);
        for n in [2usize, 4, 7] {
            // Written when `N > 3`, or unless `N > 5` returns first.
            let writes = if return_first { n <= 5 } else { n > 3 };
            let checked = check_offload_on_path(&sdfg, &xy_args(n), &Simulator::new(), writes);
            assert_eq!(checked.run.report.launches, u64::from(writes), "N = {n}");
            let copies = copies_of(&checked.report, "y");
            let copy_in: Vec<_> = copies
                .iter()
                .filter(|c| c.2 == CopyKind::HostToDevice)
                .collect();
            if return_first {
                // The `return` leaves before the device touches `y`: the
                // host copy is still the value, and the whole write after
                // the branch needs nothing copied in.
                assert!(copy_in.is_empty(), "{copies:?}");
            } else {
                // Copied in where the path without the write meets the one
                // with it (the first branch leaves `y` on the device): never
                // before the branch, so a run that writes `y` copies nothing in.
                assert_eq!(copy_in.len(), 1, "{copies:?}");
                assert!(copy_in[0].4.ends_with("_meet"), "{copies:?}");
            }
        }
    }
}

#[test]
fn a_whole_unconditional_write_needs_no_copy_in() {
    // Negative control of the three tests above.
    let (_, report) = offload_ok(&scale(false));
    assert_eq!(
        copies_of(&report, "y"),
        [d2h("dev_y", "y", "8*N", "offload_copy_out")]
    );
    // ... also when a `return` follows the write.
    let sdfg = compile(
        "@dc.program\ndef f(A: dc.float64[N], B: dc.float64[N]):\n    B[:] = A\n    if A[0] > 0.5:\n        return\n    B[:] = 3.0 * A\n",
    );
    let (_, report) = offload_ok(&sdfg);
    assert!(
        copies_of(&report, "B")
            .iter()
            .all(|c| c.2 == CopyKind::DeviceToHost),
        "{report}"
    );
}

#[test]
fn a_whole_copy_between_access_nodes_is_a_whole_write() {
    // `y` is written whole by a copy named by its source `x`: no copy-in.
    let mut b = SdfgBuilder::new("whole_copy");
    b.symbol("N").array("x", F64, "N").array("y", F64, "N");
    b.state("copy", |s| {
        let x = s.access("x");
        let y = s.access("y");
        s.edge(x, None, y, None, "x");
    });
    let checked = check_offload(&b.build().unwrap(), &xy_args(3), &Simulator::new());
    assert_eq!(
        copies_of(&checked.report, "y"),
        [d2h("dev_y", "y", "8*N", "offload_copy_out")]
    );
    assert_eq!(transfers(&checked.run), (24, 24, 48));
    assert_eq!(checked.run.report.device_to_device.bytes, 24);
}

#[test]
fn copy_states_get_labels_no_block_has() {
    // Blocks already called like the copy states the pass inserts.
    let mut b = SdfgBuilder::new("labels");
    b.symbol("N").array("x", F64, "N");
    b.state("offload_copy_in", |_| {});
    double_state(&mut b, "offload_copy_out");
    let sdfg = b.build().unwrap();
    let args = Arguments::default().symbol("N", 3).array("x", vector(3, 1));
    let checked = check_offload(&sdfg, &args, &Simulator::new());
    assert_eq!(
        labels(&checked.offloaded.body),
        [
            "offload_copy_in_1",
            "offload_copy_in",
            "offload_copy_out",
            "offload_copy_out_1"
        ]
    );
    assert_eq!(
        copies_of(&checked.report, "x"),
        [
            h2d("x", "dev_x", "8*N", "offload_copy_in_1"),
            d2h("dev_x", "x", "8*N", "offload_copy_out_1"),
        ]
    );
}

#[test]
fn a_view_used_by_a_kernel_takes_device_storage_and_its_origin_a_twin() {
    let mut b = row_view_builder("view");
    b.state("s", copy_row_into_y);
    let sdfg = b.build().unwrap();
    let n = 3;
    let args = xy_args(n).array("A", ArrayValue::f64(vec![n, n], f64s(n * n, 9)));
    let checked = check_offload(&sdfg, &args, &Simulator::new());
    let p = placement(&checked.report, "row");
    assert_eq!(
        (p.twin.as_deref(), p.storage),
        (None, Storage::DeviceGlobal)
    );
    assert_eq!(
        placement(&checked.report, "A").twin.as_deref(),
        Some("dev_A")
    );
    assert_eq!(
        accessed(state(&checked.offloaded, "s")),
        ["dev_A", "dev_y", "row"]
    );
    // A whole in (the view reads one row of it), y out.
    assert_eq!(transfers(&checked.run), (72, 24, 96));
}

#[test]
fn every_copy_has_a_direction_a_size_and_a_reason() {
    for sdfg in [
        scale(false),
        scale(true),
        early_return(),
        interstate_read(),
        accumulate(),
        colliding_names(),
        sdfg_ir::examples::converge().unwrap(),
        sdfg_ir::examples::axpy().unwrap(),
    ] {
        let (out, report) = offload_ok(&sdfg);
        assert!(!report.copies.is_empty(), "`{}`", sdfg.name);
        for c in &report.copies {
            assert!(!c.reason.trim().is_empty(), "`{}`: {c:?}", sdfg.name);
            assert_ne!(c.bytes, SymExpr::int(0), "`{}`: {c:?}", sdfg.name);
            let (host, dev) = match c.kind {
                CopyKind::HostToDevice => (&c.from, &c.to),
                CopyKind::DeviceToHost => (&c.to, &c.from),
                other => panic!("`{}`: unexpected copy kind {other:?}", sdfg.name),
            };
            assert_eq!(
                out.containers[dev].storage,
                Storage::DeviceGlobal,
                "`{}`: {c:?}",
                sdfg.name
            );
            assert_ne!(
                out.containers[host].storage.side(),
                Some(sdfg_ir::Side::Device)
            );
            let bytes = out.containers[host].total_bytes().unwrap();
            assert_eq!(c.bytes, bytes, "`{}`: {c:?}", sdfg.name);
            // The recorded block exists and is a state that copies exactly this.
            let st = state(&out, &c.block);
            assert!(accessed(st).contains(&c.from) && accessed(st).contains(&c.to));
        }
    }
}

// ---------------------------------------------------------------------------
// Whole programs: the examples and frontend-compiled programs.

const HEADER: &str = "import numpy as np\n\
                      import dace as dc\n\
                      N, M, K = (dc.symbol(s, dtype=dc.int64) for s in ('N', 'M', 'K'))\n";

#[track_caller]
fn compile(body: &str) -> Sdfg {
    sdfg_frontend::Module::parse("t.py", &format!("{HEADER}{body}"))
        .and_then(|m| m.compile("f"))
        .unwrap_or_else(|e| panic!("frontend: {e}"))
}

/// Arguments for every argument of `sdfg`: the given symbols, and the
/// simulator's deterministic fill for containers, then `overrides`.
fn fill_args(
    sdfg: &Sdfg,
    symbols: &[(&str, i64)],
    overrides: Vec<(&str, ArrayValue)>,
) -> Arguments {
    let symbols: BTreeMap<String, i64> =
        symbols.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect();
    let mut args = Arguments::default();
    for a in &sdfg.arguments {
        if let Some(v) = symbols.get(a) {
            args = args.symbol(a, *v);
        }
    }
    for (name, (dtype, shape)) in sdfg_sim::argument_shapes(sdfg, &symbols, None).unwrap() {
        args = args.array(
            &name,
            sdfg_sim::deterministic_fill(&name, dtype, shape).unwrap(),
        );
    }
    for (name, v) in overrides {
        args = args.array(name, v);
    }
    args
}

#[test]
fn single_thread_states_merge_across_states_they_commute_with() {
    // Durbin's shape: per iteration a scalar update, a map, a scalar that
    // needs both, a map reading it, and a store of it past the map's range.
    // The first moves down past the map on `r` (it touches only `b` and
    // `y[k]`), the store up past the map on `y[:k]` (`k` lies past it): one
    // single-thread kernel between the two maps, 3 launches per iteration.
    // Where the first map adds `b[0]`, the store is `y[k - 1]` and the
    // scalar reads `r[k - 1]`, each pair touches an element in common and
    // nothing moves: 5 launches per iteration.
    let body = |add: &str, read: &str, store: &str| {
        format!(
            "@dc.program\ndef f(y: dc.float64[N], r: dc.float64[N], a: dc.float64[1], b: dc.float64[1]):\n    for k in range(1, N):\n        b[0] = b[0] * 0.5 + y[k]\n        r[:k] = r[:k] + {add}\n        a[0] = b[0] + r[{read}]\n        y[:k] = y[:k] * a[0]\n        y[{store}] = a[0]\n"
        )
    };
    for (add, read, store, per_iteration) in [("1.0", "k", "k", 3), ("b[0]", "k - 1", "k - 1", 5)] {
        let sdfg = compile(&body(add, read, store));
        let args = fill_args(&sdfg, &[("N", 6)], vec![]);
        let checked = check_offload(&sdfg, &args, &Simulator::new());
        assert_eq!(
            checked.run.report.launches,
            5 * per_iteration,
            "+ {add}, r[{read}], y[{store}]: {}",
            checked.report
        );
    }
}

#[test]
fn scalars_kernels_only_read_are_passed_by_value() {
    // A linspace: the step is sequential scalar code on scalar arguments,
    // computed on the host; the kernel takes `lo` and `step` by value, so
    // neither gets a twin, a copy or a single-thread kernel.
    let sdfg = compile(
        "@dc.program\ndef f(lo: dc.float64, hi: dc.float64, X: dc.float64[N]):\n    step = (hi - lo) / N\n    for i in dc.map[0:N]:\n        X[i] = lo + i * step\n",
    );
    let args = fill_args(&sdfg, &[("N", 5)], vec![]);
    let checked = check_offload(&sdfg, &args, &Simulator::new());
    let report = &checked.report;
    assert_eq!(report.kernels.len(), 1, "{report}");
    assert_eq!(report.host_states.len(), 1, "{report}");
    for x in ["lo", "step_1"] {
        let p = placement(report, x);
        assert!(p.twin.is_none(), "{report}");
        assert!(p.reason.contains("by value"), "{report}");
        assert!(copies_of(report, x).is_empty(), "{report}");
    }
    // Only X comes back; nothing goes in.
    assert_eq!(transfers(&checked.run).0, 0);
    assert_eq!(transfers(&checked.run).1, 5 * 8);
}

#[test]
fn a_scalar_device_code_writes_is_not_passed_by_value() {
    // `s` is updated by a single-thread kernel between two launches that
    // read it: it lives on the device, and the host's own step stays a
    // kernel (it would otherwise need the device's value back).
    let sdfg = compile(
        "@dc.program\ndef f(X: dc.float64[N], s: dc.float64[1]):\n    t = s[0] * 2.0\n    for i in dc.map[0:N]:\n        X[i] = X[i] + t\n    t = X[0] + t\n    for i in dc.map[0:N]:\n        X[i] = X[i] * t\n",
    );
    let args = fill_args(&sdfg, &[("N", 4)], vec![]);
    let checked = check_offload(&sdfg, &args, &Simulator::new());
    let report = &checked.report;
    assert_eq!(
        placement(report, "t_1").storage,
        Storage::DeviceGlobal,
        "{report}"
    );
    assert!(report.host_states.is_empty(), "{report}");
    assert_eq!(report.kernels.len(), 4, "{report}");
}

/// Arguments for the examples; `None` for the ones the pass refuses.
fn example_args(name: &str, sdfg: &Sdfg) -> Arguments {
    let symbols = [("N", 5), ("M", 4), ("K", 3), ("TSTEPS", 4), ("nnz", 6)];
    let overrides = match name {
        // A CSR matrix with an empty row, columns below N.
        "spmv_indirect" => vec![
            (
                "A_row",
                ArrayValue::new(vec![5], Elements::U32(vec![0, 2, 3, 3, 6])),
            ),
            (
                "A_col",
                ArrayValue::new(vec![6], Elements::U32(vec![0, 4, 1, 2, 3, 4])),
            ),
        ],
        // Symmetric positive definite, for the Cholesky factorisation.
        "linear_algebra" => {
            let n = 5;
            let a = (0..n * n)
                .map(|k| {
                    let (i, j) = (k / n, k % n);
                    1.0 / (1 + i + j) as f64 + if i == j { n as f64 } else { 0.0 }
                })
                .collect();
            vec![("A", ArrayValue::f64(vec![n, n], a))]
        }
        _ => vec![],
    };
    fill_args(sdfg, &symbols, overrides)
}

#[test]
fn every_example_is_offloaded_correctly() {
    // Exact transfers (in, out, lower bound) and launches where they are small.
    let expected: BTreeMap<&str, ((u64, u64, u64), u64)> = BTreeMap::from([
        // x, y in (the scalar a goes by value); y out.
        ("axpy", ((80, 40, 120), 1)),
        // A, B, total in and out; 3 time steps of 2 sweeps, and the loop of
        // 5 accumulations in one single-thread kernel.
        ("jacobi_1d", ((88, 88, 176), 7)),
        // Already offloaded: what the hand-written copies move.
        ("offloaded_scale", ((1280, 1280, 2560), 1)),
    ]);
    let mut accepted = Vec::new();
    for (name, make) in sdfg_ir::examples::all() {
        let sdfg = make().unwrap();
        match offload(&sdfg, &SimAccelerator, &Options::default()) {
            Err(e) => panic!("`{name}` refused: {e}"),
            Ok(_) => {
                // The callback of `containers_and_callbacks` reads `mag`, which
                // a kernel wrote: an uninitialised host copy would fault.
                let mut sim = Simulator::new();
                sim.register("print_magnitudes", |_: &[ArrayValue]| Ok(vec![]));
                let checked = check_offload(&sdfg, &example_args(name, &sdfg), &sim);
                if let Some((bytes, launches)) = expected.get(name) {
                    assert_eq!(transfers(&checked.run), *bytes, "`{name}`");
                    assert_eq!(checked.run.report.launches, *launches, "`{name}`");
                }
                if name == "offloaded_scale" {
                    assert!(checked.report.already_offloaded);
                    assert_eq!(checked.offloaded, sdfg);
                } else {
                    // The original runs entirely on the host.
                    assert_eq!(checked.original_run.report.launches, 0, "`{name}`");
                    assert_eq!(transfers(&checked.original_run), (0, 0, 0), "`{name}`");
                }
                accepted.push(name);
            }
        }
    }
    assert_eq!(
        accepted,
        [
            "axpy",
            "linear_algebra",
            "jacobi_1d",
            "converge",
            "nested_flip",
            "offloaded_scale",
            "spmv_indirect",
            "containers_and_callbacks"
        ]
    );
}

/// Frontend programs, with exact (in, out) bytes for `N = 6, M = 4, K = 3` where given.
/// A frontend program: name, source, exact `(in, out)` bytes if checked.
type Program = (&'static str, &'static str, Option<(u64, u64)>);

const PROGRAMS: &[Program] = &[
    (
        "double_in_place",
        "@dc.program\ndef f(A: dc.float64[N]):\n    A[:] = 2.0 * A\n",
        Some((48, 48)),
    ),
    (
        "double_into",
        "@dc.program\ndef f(A: dc.float64[N], B: dc.float64[N]):\n    B[:] = 2.0 * A\n",
        Some((48, 48)),
    ),
    (
        "temporary",
        "@dc.program\ndef f(A: dc.float64[N], B: dc.float64[N]):\n    tmp = A * 2.0\n    B[:] = tmp + 1.0\n",
        Some((48, 48)),
    ),
    (
        "matmul_return",
        "@dc.program\ndef f(A: dc.float64[N, M], B: dc.float64[M, N]):\n    return A @ B + 1.0\n",
        Some((384, 288)),
    ),
    (
        "sum",
        "@dc.program\ndef f(A: dc.float64[N], out: dc.float64[1]):\n    out[0] = np.sum(A)\n",
        Some((48, 8)),
    ),
    (
        "slice_write",
        "@dc.program\ndef f(A: dc.float64[N], B: dc.float64[N]):\n    B[1:] = A[1:]\n",
        Some((96, 48)),
    ),
    (
        "while_on_data",
        "@dc.program\ndef f(x: dc.float64[1], n: dc.int64[1]):\n    while x[0] < 100.0:\n        x[0] = x[0] * 2.0\n        n[0] += 1\n",
        None,
    ),
    (
        "conditional_elements",
        "@dc.program\ndef f(A: dc.float64[N], out: dc.float64[N]):\n    for i in range(N):\n        if A[i] > 0.3:\n            out[i] = A[i]\n",
        None,
    ),
    (
        "early_return",
        "@dc.program\ndef f(A: dc.float64[N], B: dc.float64[N]):\n    B[:] = A\n    if A[0] > 0.01:\n        return\n    B[:] = 3.0 * A\n",
        // B back before the return; the host tests its own A (an input
        // nothing writes), so the condition needs no copy.
        Some((48, 48)),
    ),
    (
        "jacobi",
        "@dc.program\ndef f(A: dc.float64[N], B: dc.float64[N]):\n    for t in range(1, K):\n        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])\n        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])\n",
        Some((96, 96)),
    ),
];

#[test]
fn frontend_programs_compute_the_same_after_offloading() {
    for (name, text, bytes) in PROGRAMS {
        let sdfg = compile(text);
        let args = fill_args(&sdfg, &[("N", 6), ("M", 4), ("K", 3)], vec![]);
        let checked = check_offload(&sdfg, &args, &Simulator::new());
        // `while_on_data` is sequential scalar code on one-element arrays:
        // host code, no launch.
        assert_eq!(
            checked.run.report.launches > 0,
            *name != "while_on_data",
            "`{name}`"
        );
        if let Some((to_device, to_host)) = bytes {
            let (i, o, lower) = transfers(&checked.run);
            assert_eq!(
                (i, o),
                (*to_device, *to_host),
                "`{name}`:\n{}",
                checked.report
            );
            assert_eq!(lower, i + o, "`{name}`: something moved twice");
        }
    }
}

#[test]
fn a_frontend_temporary_is_placed_in_device_memory() {
    let (out, report) = offload_ok(&compile(PROGRAMS[2].1));
    let tmp: Vec<_> = report
        .placements
        .iter()
        .filter(|p| p.twin.is_none())
        .collect();
    assert!(!tmp.is_empty(), "{report}");
    for p in tmp {
        assert!(out.containers[&p.container].transient);
        assert_eq!(out.containers[&p.container].storage, Storage::DeviceGlobal);
        assert!(copies_of(&report, &p.container).is_empty());
    }
}

// ---------------------------------------------------------------------------
// Errors.

fn with_host_maps(host_maps: HostMaps) -> Options {
    Options {
        host_maps,
        ..Options::default()
    }
}

/// Rows and columns, where the inner map's range depends on the outer parameter.
fn triangular_maps() -> Sdfg {
    let mut b = SdfgBuilder::new("triangular");
    b.symbol("N").array("A", F64, "N, N");
    b.state("compute", |s| {
        let a_in = s.access("A");
        let a_out = s.access("A");
        let (rows, rows_exit) = s.map("rows", "i = 0:N", Schedule::Default);
        let (cols, cols_exit) = s.map("cols", "j = 0:i + 1", Schedule::Default);
        let t = s.tasklet(
            "mul",
            vec![f64c("a")],
            vec![f64c("b")],
            vec![Stmt::assign("b", Expr::var("a") * Expr::f64(2.0))],
        );
        s.path(&[a_in, rows, cols, t], None, Some("a"), "A[i, j]");
        s.path(
            &[t, cols_exit, rows_exit, a_out],
            Some("b"),
            None,
            "A[i, j]",
        );
    });
    let mut sdfg = b.build().unwrap();
    // The builder's volumes of a triangular nest name `i` outside its map;
    // the subsets are exact, so bound the volumes by them.
    if let sdfg_ir::BlockKind::State(st) = &mut sdfg.body.blocks[0].kind {
        for e in st.graph.edge_weights_mut() {
            if let Some(m) = &mut e.memlet
                && m.volume.free_symbols().contains("i")
                && !m.subset.free_symbols().contains("i")
            {
                m.volume = m.subset.num_elements();
                m.dynamic = true;
            }
        }
    }
    sdfg
}

#[test]
fn a_named_host_map_launches_its_inner_map_as_a_kernel_per_iteration() {
    let sdfg = nested_maps();
    let options = with_host_maps(HostMaps::Named(vec!["rows".to_owned()]));
    let (out, report) = offload(&sdfg, &SimAccelerator, &options).unwrap();
    let schedules = map_schedules(&out);
    assert_eq!(schedules["rows"], Schedule::Sequential);
    assert_eq!(schedules["cols"], Schedule::DeviceKernel);
    assert_eq!(report.host_maps.len(), 1, "{report}");
    assert!(report.to_string().contains("host map: rows"), "{report}");
    // It computes the same, launching one kernel per row.
    let (n, m) = (3usize, 4usize);
    let args = Arguments::default()
        .symbol("N", n as i64)
        .symbol("M", m as i64)
        .array("A", ArrayValue::f64(vec![n, m], f64s(n * m, 7)));
    let sim = Simulator::new();
    let host = simulate(&sim, &sdfg, &args);
    let device = simulate(&sim, &out, &args);
    assert_same_outputs("host map", &host, &device);
    assert_eq!(device.report.launches, n as u64);
    // Negative control: without host maps the outer map is the kernel, launched once.
    let (plain, _) = offload_ok(&sdfg);
    let schedules = map_schedules(&plain);
    assert_eq!(schedules["rows"], Schedule::DeviceKernel);
    assert_eq!(schedules["cols"], Schedule::Sequential);
    assert_eq!(simulate(&sim, &plain, &args).report.launches, 1);
}

#[test]
fn auto_host_maps_pick_only_maps_that_launch_work() {
    // `rows` only holds `cols`: a launcher.
    let (out, _) = offload(
        &nested_maps(),
        &SimAccelerator,
        &with_host_maps(HostMaps::Auto),
    )
    .unwrap();
    assert_eq!(map_schedules(&out)["rows"], Schedule::Sequential);
    assert_eq!(map_schedules(&out)["cols"], Schedule::DeviceKernel);
    // Negative control: a map doing its own work (a tasklet directly inside)
    // is not a launcher and is offloaded whole.
    let (out, report) = offload(
        &scale(false),
        &SimAccelerator,
        &with_host_maps(HostMaps::Auto),
    )
    .unwrap();
    assert_eq!(map_schedules(&out)["scale"], Schedule::DeviceKernel);
    assert!(report.host_maps.is_empty());
}

#[test]
fn host_maps_are_refused_with_reasons() {
    // An inner extent that names the outer parameter.
    let (what, _) = refusal(
        &triangular_maps(),
        &with_host_maps(HostMaps::Named(vec!["rows".to_owned()])),
    );
    assert!(
        what.contains("`cols`") && what.contains("parameter `i`"),
        "{what}"
    );
    // A named map that does its own work.
    let (what, _) = refusal(
        &scale(false),
        &with_host_maps(HostMaps::Named(vec!["scale".to_owned()])),
    );
    assert!(what.contains("does work of its own"), "{what}");
    // A name that matches no map.
    let (what, _) = refusal(
        &scale(false),
        &with_host_maps(HostMaps::Named(vec!["nope".to_owned()])),
    );
    assert!(what.contains("`nope`"), "{what}");
    // Negative control: the triangular nest offloads whole without host maps.
    assert!(offload(&triangular_maps(), &SimAccelerator, &Options::default()).is_ok());
}

#[test]
fn a_container_shared_by_a_callback_and_a_kernel_is_copied_to_the_host_for_the_callback() {
    // `y` is written by a kernel in `produce` and read by a callback in
    // `consume` (through `consumer`, below, in the same state when `fused`).
    let build = |fused: bool| {
        let mut b = SdfgBuilder::new("shared");
        b.symbol("N").array("x", F64, "N").array("y", F64, "N");
        let produce = |s: &mut sdfg_ir::builder::StateBuilder<'_>| {
            let x = s.access("x");
            let y = s.access("y");
            s.mapped_tasklet(
                "produce",
                "i = 0:N",
                Schedule::Default,
                vec![(x, f64c("a"), "x[i]")],
                vec![Stmt::assign("b", Expr::var("a"))],
                vec![(f64c("b"), y, "y[i]")],
            );
            y
        };
        let consume = |s: &mut sdfg_ir::builder::StateBuilder<'_>, y| {
            let cb = s.callback("show", "show", vec![Connector::pointer("v", F64)], vec![]);
            s.edge(y, None, cb, Some("v"), "y");
        };
        if fused {
            b.state("both", |s| {
                let y = produce(s);
                consume(s, y);
            });
        } else {
            b.state("produce", |s| {
                produce(s);
            });
            b.state("consume", |s| {
                let y = s.access("y");
                consume(s, y);
            });
        }
        b.build().unwrap()
    };
    let sdfg = build(false);
    let seen_handle = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = seen_handle.clone();
    let mut sim = Simulator::new();
    let sink = seen.clone();
    sim.register("show", move |args: &[ArrayValue]| {
        sink.lock()
            .map_err(|e| e.to_string())?
            .push(args[0].clone());
        Ok(vec![])
    });
    let args = xy_args(5);
    let checked = check_offload(&sdfg, &args, &sim);
    // Copied back before the callback, and not again at the exit (the host
    // copy is current).
    assert_eq!(
        copies_of(&checked.report, "y"),
        [d2h("dev_y", "y", "8*N", "consume_to_host")]
    );
    let r = &copy_record(&checked.report, "dev_y", "y", "consume_to_host").reason;
    assert!(r.contains("host code in `consume` reads `y`"), "{r}");
    // The callback saw the kernel's values, in both runs.
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0], seen[1]);
    assert_eq!(seen[1], args.arrays["x"]);
    drop(seen);
    // In one state the kernel and the callback share `y`: the state splits
    // in dataflow order (kernel, then callback), and the copy sits between.
    let fused = build(true);
    let checked = check_offload(&fused, &args, &sim);
    let report = &checked.report;
    assert_eq!(
        report.split_states,
        ["both into 2 states (host code and device code share `y`)"],
        "{report}"
    );
    assert_eq!(
        copies_of(report, "y"),
        [d2h("dev_y", "y", "8*N", "both_part1_to_host")],
        "{report}"
    );
    let seen_now = seen_values(&seen_handle);
    assert_eq!(seen_now.last(), Some(&args.arrays["x"]));
    // Negative control: with a copy between access nodes in the state as
    // well, where the parts would go is not decided; the pass refuses,
    // naming the container and state.
    let mut with_copy = build(true);
    with_copy
        .containers
        .insert("z".into(), sdfg_ir::DataDesc::array(F64, vec![sym("N")]));
    with_copy.arguments.push("z".into());
    let st = state_mut(&mut with_copy, "both");
    let x = st
        .nodes()
        .find(|(_, n)| n.as_access() == Some("x"))
        .map(|(id, _)| id)
        .unwrap();
    let z = st.add_access("z");
    st.add_edge(x, None, z, None, sdfg_ir::Memlet::full("x", &[sym("N")]));
    let (what, location) = refusal(&with_copy, &Options::default());
    assert!(what.contains("`y`"), "{what}");
    assert!(!what.contains("`x`"), "{what}");
    assert_eq!(location, "both");
}

/// What the `show` callback was given so far.
fn seen_values(seen: &std::sync::Arc<std::sync::Mutex<Vec<ArrayValue>>>) -> Vec<ArrayValue> {
    seen.lock().unwrap().clone()
}

#[test]
fn a_nested_sdfg_at_host_level_is_a_host_level_of_its_own() {
    let sdfg = sdfg_ir::examples::nested_flip().unwrap();
    let (out, report) = offload_ok(&sdfg);
    // The nested SDFG's map became a kernel; its connectors are device data.
    let text = report.to_string();
    assert!(text.contains("kernel: flip/reverse"), "{text}");
    let nested = out
        .states()
        .into_iter()
        .flat_map(|(_, st)| st.nodes().map(|(_, n)| n.clone()).collect::<Vec<_>>())
        .find_map(|n| match n {
            sdfg_ir::Node::NestedSdfg(n) => Some(n),
            _ => None,
        })
        .unwrap();
    assert_eq!(nested.sdfg.containers["src"].storage, Storage::DeviceGlobal);
    let inner_maps = map_schedules(&nested.sdfg);
    assert_eq!(inner_maps["reverse"], Schedule::DeviceKernel);
    // It computes what the host program computes.
    let n = 5usize;
    let args = Arguments::default()
        .symbol("N", n as i64)
        .array("y", vector(n, 11))
        .array("A", ArrayValue::f64(vec![n, n], f64s(n * n, 12)));
    let sim = Simulator::new();
    let device = simulate(&sim, &out, &args);
    assert_same_outputs("nested", &simulate(&sim, &sdfg, &args), &device);
    assert!(device.report.launches > 0);
}

#[test]
fn a_nested_sdfg_inside_a_kernel_runs_its_maps_sequentially() {
    // Put the flip call inside a map over one point.
    let inner = sdfg_ir::examples::nested_flip()
        .unwrap()
        .states()
        .into_iter()
        .flat_map(|(_, st)| st.nodes().map(|(_, n)| n.clone()).collect::<Vec<_>>())
        .find_map(|n| match n {
            sdfg_ir::Node::NestedSdfg(n) => Some(*n.sdfg),
            _ => None,
        })
        .unwrap();
    let mut b = SdfgBuilder::new("outer");
    b.symbol("N").array("y", F64, "N").array("z", F64, "N");
    b.state("call", |s| {
        let (y, z) = (s.access("y"), s.access("z"));
        let (entry, exit) = s.map("once", "o = 0:1", Schedule::Default);
        let n = s.nested("flip", inner, &["src"], &["dst"], &[("M", "N")]);
        s.path(&[y, entry, n], None, Some("src"), "y[0:N]");
        s.path(&[n, exit, z], Some("dst"), None, "z[0:N]");
    });
    let sdfg = b.build().unwrap();
    sdfg_ir::validate(&sdfg).unwrap();
    let checked = check_offload(
        &sdfg,
        &xy_args(5).array("z", vector(5, 3)),
        &Simulator::new(),
    );
    // One kernel (`once`); the flip's own map runs inside it, per thread.
    assert_eq!(checked.run.report.launches, 1);
    let Some(Node::NestedSdfg(n)) = state(&checked.offloaded, "call")
        .nodes()
        .map(|(_, n)| n)
        .find(|n| matches!(n, Node::NestedSdfg(_)))
    else {
        panic!("no nested SDFG")
    };
    let inner_maps = map_schedules(&n.sdfg);
    assert!(!inner_maps.is_empty());
    assert!(
        inner_maps.values().all(|s| *s == Schedule::Sequential),
        "{inner_maps:?}"
    );
}

// ---------------------------------------------------------------------------
// The report.

#[test]
fn the_report_text_lists_every_copy_with_its_reason() {
    for sdfg in [
        scale(false),
        early_return(),
        interstate_read(),
        accumulate(),
        sdfg_ir::examples::converge().unwrap(),
    ] {
        let (_, report) = offload_ok(&sdfg);
        let text = report.to_string();
        assert!(text.starts_with("offload report (sim)\n"), "{text}");
        for c in &report.copies {
            let line = text
                .lines()
                .find(|l| {
                    l.contains(&format!("copy {} -> {} ", c.from, c.to))
                        && l.contains(&format!("at `{}`", c.block))
                })
                .unwrap_or_else(|| panic!("no line for {c:?} in\n{text}"));
            assert!(line.ends_with(&c.reason), "{line}");
            assert!(line.contains(&format!("{} bytes", c.bytes)), "{line}");
            let dir = match c.kind {
                CopyKind::HostToDevice => "host -> device",
                CopyKind::DeviceToHost => "device -> host",
                _ => unreachable!(),
            };
            assert!(line.contains(dir), "{line}");
        }
        assert_eq!(
            text.lines()
                .filter(|l| l.trim_start().starts_with("copy "))
                .count(),
            report.copies.len()
        );
        for k in &report.kernels {
            assert!(text.contains(&format!("kernel: {k}")), "{text}");
        }
    }
    let (_, report) = offload_ok(&scale(false));
    assert!(report.to_string().contains(
        "copy x -> dev_x (host -> device, 8*N bytes) at `offload_copy_in`: \
         device code in `compute` reads `x`: copied in once, at the start"
    ));
    // An already offloaded SDFG says so and lists nothing.
    let (out, _) = offload_ok(&scale(false));
    let (_, again) = offload_ok(&out);
    assert_eq!(
        again.to_string(),
        "offload report (sim)\n  the SDFG is already offloaded; nothing changed\n"
    );
}

#[test]
fn host_maps_leave_an_already_offloaded_sdfg_unchanged() {
    let (offloaded, _) = offload_ok(&scale(false));
    let (again, report) =
        offload(&offloaded, &SimAccelerator, &with_host_maps(HostMaps::Auto)).unwrap();
    assert!(report.already_offloaded);
    assert_eq!(again, offloaded);
}

#[test]
fn twin_names_avoid_map_parameters() {
    // A map parameter named like the twin the pass would choose.
    let mut sdfg = scale(false);
    let sdfg_ir::BlockKind::State(st) = &mut sdfg.body.blocks[0].kind else {
        unreachable!()
    };
    for node in st.graph.node_weights_mut() {
        if let sdfg_ir::Node::MapEntry(m) = node {
            m.map.params = vec!["dev_x".to_owned()];
        }
    }
    for e in st.graph.edge_weights_mut() {
        if let Some(m) = &mut e.memlet {
            m.subset = m
                .subset
                .subs(&[("i".to_owned(), sym("dev_x"))].into_iter().collect());
            m.volume = m
                .volume
                .subs(&[("i".to_owned(), sym("dev_x"))].into_iter().collect());
        }
    }
    sdfg_ir::validate(&sdfg).unwrap();
    let (out, report) = offload_ok(&sdfg);
    let twin = placement(&report, "x").twin.clone().unwrap();
    assert_ne!(twin, "dev_x");
    assert!(out.containers.contains_key(&twin));
}

#[test]
fn a_stream_in_device_code_is_refused_by_name() {
    let mut b = SdfgBuilder::new("streamed");
    b.symbol("N").array("x", F64, "N").container(
        "q",
        sdfg_ir::DataDesc::stream(F64, vec![SymExpr::int(1)], SymExpr::int(0)).into_transient(),
    );
    b.state("push", |s| {
        let (x, q) = (s.access("x"), s.access("q"));
        s.mapped_tasklet(
            "push",
            "i = 0:N",
            Schedule::Default,
            vec![(x, f64c("a"), "x[i]")],
            vec![Stmt::assign("b", Expr::var("a"))],
            vec![(f64c("b"), q, "q[0]")],
        );
    });
    let sdfg = b.build().unwrap();
    let (what, _) = refusal(&sdfg, &Options::default());
    assert!(what.contains("stream `q`"), "{what}");
}

/// `y[i] = 2 * x[i]` through a transient `t` inside the map (`local`), or
/// through a transient array written by one map and read by another.
fn through_transient(local: bool) -> Sdfg {
    let mut b = SdfgBuilder::new("through");
    b.symbol("N").array("x", F64, "N").array("y", F64, "N");
    if local {
        b.transient_scalar("t", F64);
        b.state("compute", |s| {
            let (x, y, t) = (s.access("x"), s.access("y"), s.access("t"));
            let (entry, exit) = s.map("m", "i = 0:N", Schedule::Default);
            let first = s.tasklet(
                "first",
                vec![f64c("a")],
                vec![f64c("b")],
                vec![Stmt::assign("b", Expr::var("a") * Expr::f64(2.0))],
            );
            let second = s.tasklet(
                "second",
                vec![f64c("c")],
                vec![f64c("d")],
                vec![Stmt::assign("d", Expr::var("c"))],
            );
            s.path(&[x, entry, first], None, Some("a"), "x[i]");
            s.edge(first, Some("b"), t, None, "t[0]");
            s.edge(t, None, second, Some("c"), "t[0]");
            s.path(&[second, exit, y], Some("d"), None, "y[i]");
        });
    } else {
        b.transient("t", F64, "N");
        b.state("first", |s| {
            let (x, t) = (s.access("x"), s.access("t"));
            let (entry, exit) = s.map("first", "i = 0:N", Schedule::Default);
            let k = s.tasklet(
                "first",
                vec![f64c("a")],
                vec![f64c("b")],
                vec![Stmt::assign("b", Expr::var("a") * Expr::f64(2.0))],
            );
            s.path(&[x, entry, k], None, Some("a"), "x[i]");
            s.path(&[k, exit, t], Some("b"), None, "t[i]");
        });
        b.state("second", |s| {
            let (t, y) = (s.access("t"), s.access("y"));
            let (entry, exit) = s.map("second", "i = 0:N", Schedule::Default);
            let k = s.tasklet(
                "second",
                vec![f64c("c")],
                vec![f64c("d")],
                vec![Stmt::assign("d", Expr::var("c"))],
            );
            s.path(&[t, entry, k], None, Some("c"), "t[i]");
            s.path(&[k, exit, y], Some("d"), None, "y[i]");
        });
    }
    b.build().unwrap()
}

#[test]
fn a_transient_live_inside_one_kernel_becomes_a_register() {
    let sdfg = through_transient(true);
    let (out, report) = offload_ok(&sdfg);
    assert_eq!(out.containers["t"].storage, Storage::Register);
    assert!(
        placement(&report, "t").reason.contains("register"),
        "{report}"
    );
    let n = 5;
    let args = Arguments::default()
        .symbol("N", n as i64)
        .array("x", vector(n, 3))
        .array("y", vector(n, 4));
    let sim = Simulator::new();
    assert_same_outputs(
        "register",
        &simulate(&sim, &sdfg, &args),
        &simulate(&sim, &out, &args),
    );
    // Negative control: a transient passed from one kernel to another lives in global memory.
    let (out, _) = offload_ok(&through_transient(false));
    assert_eq!(out.containers["t"].storage, Storage::DeviceGlobal);
}

#[test]
fn a_scalar_kernels_write_becomes_a_length_one_device_array() {
    // `s` is written by one kernel and read by a single-thread kernel.
    let mut b = SdfgBuilder::new("scalar_chain");
    b.array("x", F64, "1")
        .array("y", F64, "1")
        .transient_scalar("s", F64);
    b.state("write", |st| {
        let (x, s) = (st.access("x"), st.access("s"));
        st.mapped_tasklet(
            "w",
            "j = 0:1",
            Schedule::Default,
            vec![(x, f64c("a"), "x[j]")],
            vec![Stmt::assign("b", Expr::var("a") + Expr::f64(1.0))],
            vec![(f64c("b"), s, "s[0]")],
        );
    });
    b.state("read", |st| {
        let (s, y) = (st.access("s"), st.access("y"));
        let t = st.tasklet(
            "r",
            vec![f64c("c")],
            vec![f64c("d")],
            vec![Stmt::assign("d", Expr::var("c"))],
        );
        st.edge(s, None, t, Some("c"), "s[0]");
        st.edge(t, Some("d"), y, None, "y[0]");
    });
    let sdfg = b.build().unwrap();
    let (out, report) = offload_ok(&sdfg);
    let s = &out.containers["s"];
    assert_eq!(s.storage, Storage::DeviceGlobal);
    assert!(
        !s.is_scalar() && s.shape() == vec![SymExpr::int(1)],
        "{s:?}"
    );
    assert!(
        placement(&report, "s").reason.contains("length-one"),
        "{report}"
    );
    let args = Arguments::default()
        .array("x", ArrayValue::f64(vec![1], vec![2.5]))
        .array("y", ArrayValue::f64(vec![1], vec![0.0]));
    let sim = Simulator::new();
    assert_same_outputs(
        "scalar",
        &simulate(&sim, &sdfg, &args),
        &simulate(&sim, &out, &args),
    );
}

/// `for t in range(T): y[:] += x` on the device, then a host callback
/// `show(y)`.
fn loop_then_callback() -> Sdfg {
    let mut b = SdfgBuilder::new("loop_then_callback");
    b.symbol("N")
        .symbol("T")
        .local_symbol("t")
        .array("x", F64, "N")
        .array("y", F64, "N");
    b.for_loop("steps", "t", "0", "T", 1, |b| {
        b.state("step", |s| {
            let x = s.access("x");
            let y_in = s.access("y");
            let y = s.access("y");
            s.mapped_tasklet(
                "add",
                "i = 0:N",
                Schedule::Default,
                vec![(x, f64c("a"), "x[i]"), (y_in, f64c("b"), "y[i]")],
                vec![Stmt::assign("o", Expr::var("a") + Expr::var("b"))],
                vec![(f64c("o"), y, "y[i]")],
            );
        });
    });
    b.state("show", |s| {
        let y = s.access("y");
        let cb = s.callback("show", "show", vec![Connector::pointer("v", F64)], vec![]);
        s.edge(y, None, cb, Some("v"), "y");
    });
    b.build().unwrap()
}

/// A simulator whose callback `show` records what it is given.
fn recording_sim() -> (Simulator, std::sync::Arc<std::sync::Mutex<Vec<ArrayValue>>>) {
    let seen_handle = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = seen_handle.clone();
    let mut sim = Simulator::new();
    let sink = seen.clone();
    sim.register("show", move |args: &[ArrayValue]| {
        sink.lock()
            .map_err(|e| e.to_string())?
            .push(args[0].clone());
        Ok(vec![])
    });
    (sim, seen)
}

#[test]
fn a_loop_copies_in_once_before_it_and_a_later_host_read_copies_back_once() {
    let sdfg = loop_then_callback();
    let (sim, seen) = recording_sim();
    let args = xy_args(5).symbol("T", 4);
    let checked = check_offload(&sdfg, &args, &sim);
    // Nothing is copied inside the loop: its body uses `x` and `y` on the
    // device only, so the head holds them there, copied in once.
    assert_eq!(
        labels(inner_region(&checked.offloaded.body, "steps")),
        ["step"]
    );
    assert_eq!(
        copies_of(&checked.report, "y"),
        [
            h2d("y", "dev_y", "8*N", "offload_copy_in"),
            d2h("dev_y", "y", "8*N", "show_to_host"),
        ]
    );
    assert_eq!(
        copies_of(&checked.report, "x"),
        [h2d("x", "dev_x", "8*N", "offload_copy_in")]
    );
    let r = &copy_record(&checked.report, "y", "dev_y", "offload_copy_in").reason;
    assert!(r.contains("loop `steps` uses `y` on the device"), "{r}");
    // x and y in once, y back once, whatever the trip count.
    assert_eq!(transfers(&checked.run), (80, 40, 120));
    assert_eq!(checked.run.report.launches, 4);
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen[0], seen[1], "the callback saw the kernels' sums");
    }
    // Zero trips: the host copy is still the value; the same copies run.
    let checked = check_offload_on_path(&sdfg, &xy_args(5).symbol("T", 0), &sim, false);
    assert_eq!(checked.run.report.launches, 0);
}

/// `flag = seq[0] > 2` in state `test` (preceded by a kernel incrementing
/// `seq` when `written`), then `if flag: y[:] = 1` on the device.
fn branch_on_flag(written: bool) -> Sdfg {
    let mut b = SdfgBuilder::new("branch_on_flag");
    b.symbol("N")
        .array("seq", DType::Int64, "N")
        .array("y", F64, "N")
        .container(
            "flag",
            sdfg_ir::DataDesc::array(DType::Int64, vec![sym("1")]).into_transient(),
        );
    if written {
        b.state("prep", |s| {
            let a = s.access("seq");
            let o = s.access("seq");
            s.mapped_tasklet(
                "inc",
                "i = 0:N",
                Schedule::Default,
                vec![(a, Connector::scalar("a", DType::Int64), "seq[i]")],
                vec![Stmt::assign("o", Expr::var("a") + Expr::i64(1))],
                vec![(Connector::scalar("o", DType::Int64), o, "seq[i]")],
            );
        });
    }
    b.state("test", |s| {
        let seq = s.access("seq");
        let flag = s.access("flag");
        let t = s.tasklet(
            "test",
            vec![Connector::scalar("a", DType::Int64)],
            vec![Connector::scalar("f", DType::Int64)],
            vec![Stmt::assign(
                "f",
                Expr::select(
                    Expr::binary(sdfg_ir::code::BinaryOp::Gt, Expr::var("a"), Expr::i64(2)),
                    Expr::i64(1),
                    Expr::i64(0),
                ),
            )],
        );
        s.edge(seq, None, t, Some("a"), "seq[0]");
        s.edge(t, Some("f"), flag, None, "flag[0]");
    });
    b.if_else(
        "maybe_fill",
        "flag[0] > 0",
        |b| {
            b.state("fill", |s| {
                let y = s.access("y");
                s.mapped_tasklet(
                    "fill",
                    "i = 0:N",
                    Schedule::Default,
                    vec![],
                    vec![Stmt::assign("o", Expr::f64(1.0))],
                    vec![(f64c("o"), y, "y[i]")],
                );
            });
        },
        None,
    );
    b.build().unwrap()
}

#[test]
fn a_state_computing_only_a_condition_from_unwritten_data_stays_on_the_host() {
    let sdfg = branch_on_flag(false);
    for first in [1, 5] {
        let args = xy_args(4).array("seq", ArrayValue::i64(vec![4], vec![first, 0, 0, 0]));
        let checked = check_offload_on_path(&sdfg, &args, &Simulator::new(), first > 2);
        assert_eq!(checked.report.host_states.len(), 1, "{}", checked.report);
        assert!(checked.report.host_states[0].starts_with("test "));
        // `flag` never reaches the device, and neither does `seq`.
        assert!(copies_of(&checked.report, "flag").is_empty());
        assert!(copies_of(&checked.report, "seq").is_empty());
        assert_eq!(checked.run.report.launches, u64::from(first > 2));
    }
    // Negative control: a kernel writes `seq` first. The test runs on the
    // device (a single-thread kernel) and `flag` is copied back for the
    // condition.
    let sdfg = branch_on_flag(true);
    let args = xy_args(4).array("seq", ArrayValue::i64(vec![4], vec![2, 0, 0, 0]));
    let checked = check_offload_on_path(&sdfg, &args, &Simulator::new(), true);
    assert!(checked.report.host_states.is_empty());
    assert_eq!(
        copies_of(&checked.report, "flag"),
        [d2h("dev_flag", "flag", "8", "maybe_fill_to_host")]
    );
    assert_eq!(checked.run.report.launches, 3);
}

#[test]
fn a_view_used_by_both_sides_gets_a_twin_view_of_the_twin() {
    // `s0` doubles A on the device; `s1` copies row 1 of A through the view
    // `row` into y on the device; `s2` shows `row` to a host callback.
    let mut b = row_view_builder("twin_view");
    b.state("s0", |s| {
        let a = s.access("A");
        let o = s.access("A");
        s.mapped_tasklet(
            "double",
            "i = 0:N, j = 0:N",
            Schedule::Default,
            vec![(a, f64c("a"), "A[i, j]")],
            vec![Stmt::assign("o", Expr::var("a") * Expr::f64(2.0))],
            vec![(f64c("o"), o, "A[i, j]")],
        );
    });
    b.state("s1", copy_row_into_y);
    b.state("s2", |s| {
        let a = s.access("A");
        let row = s.access("row");
        s.edge(a, None, row, Some(sdfg_ir::VIEW_CONNECTOR), "A[1, 0:N]");
        let cb = s.callback("show", "show", vec![Connector::pointer("v", F64)], vec![]);
        s.edge(row, None, cb, Some("v"), "row");
    });
    let sdfg = b.build().unwrap();
    let n = 3;
    let args = xy_args(n).array("A", ArrayValue::f64(vec![n, n], f64s(n * n, 9)));
    let (sim, seen) = recording_sim();
    let checked = check_offload(&sdfg, &args, &sim);
    let p = placement(&checked.report, "row");
    assert_eq!(p.twin.as_deref(), Some("dev_row"));
    assert_eq!(
        checked.offloaded.containers["dev_row"].storage,
        Storage::DeviceGlobal
    );
    assert!(checked.offloaded.containers["dev_row"].is_view());
    assert_eq!(checked.offloaded.containers["row"], sdfg.containers["row"]);
    assert_eq!(
        accessed(state(&checked.offloaded, "s1")),
        ["dev_A", "dev_row", "dev_y"]
    );
    assert_eq!(accessed(state(&checked.offloaded, "s2")), ["A", "row"]);
    // The doubled A comes back before the host reads it through the view.
    assert_eq!(
        copies_of(&checked.report, "A"),
        [
            h2d("A", "dev_A", "8*N**2", "offload_copy_in"),
            d2h("dev_A", "A", "8*N**2", "s2_to_host"),
        ]
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0], seen[1]);
    let want: Vec<f64> = f64s(n * n, 9)[n..2 * n].iter().map(|v| 2.0 * v).collect();
    assert_eq!(seen[1], ArrayValue::f64(vec![n], want));
}

/// State `s`: `t1` computes `p = x[0] + 1`; `t2` computes `y[0] = 3 * p`
/// (and, when `across`, adds `q[0]`, which kernel `k` computes from `r[0]`,
/// a value `t1` also writes).
fn partition(across: bool) -> Sdfg {
    let mut b = SdfgBuilder::new("partition");
    b.symbol("N")
        .array("x", F64, "N")
        .array("y", F64, "N")
        .transient_scalar("p", F64)
        .container(
            "q",
            sdfg_ir::DataDesc::array(F64, vec![sym("1")]).into_transient(),
        )
        .container(
            "r",
            sdfg_ir::DataDesc::array(F64, vec![sym("1")]).into_transient(),
        );
    b.state("s", |s| {
        let x = s.access("x");
        let y = s.access("y");
        let p = s.access("p");
        let mut outs = vec![f64c("b")];
        let mut body = vec![Stmt::assign("b", Expr::var("a") + Expr::f64(1.0))];
        if across {
            outs.push(f64c("c"));
            body.push(Stmt::assign("c", Expr::var("a") * Expr::f64(2.0)));
        }
        let t1 = s.tasklet("t1", vec![f64c("a")], outs, body);
        let mut ins = vec![f64c("a")];
        let mut sum = Expr::var("a") * Expr::f64(3.0);
        if across {
            ins.push(f64c("d"));
            sum = sum + Expr::var("d");
        }
        let t2 = s.tasklet("t2", ins, vec![f64c("b")], vec![Stmt::assign("b", sum)]);
        s.edge(x, None, t1, Some("a"), "x[0]");
        s.edge(t1, Some("b"), p, None, "p");
        s.edge(p, None, t2, Some("a"), "p");
        s.edge(t2, Some("b"), y, None, "y[0]");
        if across {
            let r = s.access("r");
            let q = s.access("q");
            s.edge(t1, Some("c"), r, None, "r[0]");
            s.mapped_tasklet(
                "k",
                "i = 0:1",
                Schedule::Default,
                vec![(r, f64c("u"), "r[i]")],
                vec![Stmt::assign("v", Expr::var("u") + Expr::f64(0.5))],
                vec![(f64c("v"), q, "q[i]")],
            );
            s.edge(q, None, t2, Some("d"), "q[0]");
        }
    });
    b.build().unwrap()
}

#[test]
fn host_tasklets_joined_through_data_only_they_touch_form_one_kernel() {
    let args = xy_args(3);
    let checked = check_offload(&partition(false), &args, &Simulator::new());
    assert_eq!(checked.report.kernels.len(), 1, "{}", checked.report);
    assert!(checked.report.kernels[0].contains("partition"));
    assert_eq!(checked.run.report.launches, 1);
    // `p` moved inside the kernel: a register of its thread.
    assert_eq!(checked.offloaded.containers["p"].storage, Storage::Register);
    let st = state(&checked.offloaded, "s");
    let tree = st.scope_tree().unwrap();
    let p = st
        .nodes()
        .find(|(_, n)| n.as_access() == Some("p"))
        .map(|(id, _)| id)
        .unwrap();
    assert!(tree.parent(p).is_some());
    // Negative control: joining `t1` and `t2` would reach across kernel
    // `k` (t1 -> r -> k -> q -> t2): each is wrapped on its own, and `p`
    // stays between them in device memory.
    let checked = check_offload(&partition(true), &args, &Simulator::new());
    let singles: Vec<_> = checked
        .report
        .kernels
        .iter()
        .filter(|k| k.contains("single"))
        .collect();
    assert_eq!(singles.len(), 2, "{}", checked.report);
    assert!(singles.iter().all(|k| k.contains("host tasklet")));
    assert_eq!(checked.run.report.launches, 3);
    assert_eq!(
        checked.offloaded.containers["p"].storage,
        Storage::DeviceGlobal
    );
}

#[test]
fn a_view_inside_a_kernel_is_a_register() {
    // `y[i] = sum(row)` with `row` viewing `A[i, 0:N]` inside map `rows`.
    let mut b = row_view_builder("view_in_kernel");
    b.state("s", |s| {
        let a = s.access("A");
        let y = s.access("y");
        let (entry, exit) = s.map("rows", "i = 0:N", Schedule::Default);
        let a_in = s.access("A");
        let row = s.access("row");
        s.path(&[a, entry, a_in], None, None, "A[i, 0:N]");
        s.edge(a_in, None, row, Some(sdfg_ir::VIEW_CONNECTOR), "A[i, 0:N]");
        let t = s.tasklet(
            "total",
            vec![Connector::pointer("r", F64)],
            vec![f64c("o")],
            vec![Stmt::assign(
                "o",
                Expr::load("r", vec![Expr::i64(0)]) + Expr::load("r", vec![Expr::i64(1)]),
            )],
        );
        s.edge(row, None, t, Some("r"), "row[0:N]");
        s.path(&[t, exit, y], Some("o"), None, "y[i]");
    });
    let sdfg = b.build().unwrap();
    let n = 3;
    let args = xy_args(n).array("A", ArrayValue::f64(vec![n, n], f64s(n * n, 4)));
    let checked = check_offload(&sdfg, &args, &Simulator::new());
    let p = placement(&checked.report, "row");
    assert_eq!((p.twin.as_deref(), p.storage), (None, Storage::Register));
    assert_eq!(
        checked.offloaded.containers["row"].storage,
        Storage::Register
    );
    // Negative control: the view outside the kernel in
    // `a_view_used_by_a_kernel_takes_device_storage_and_its_origin_a_twin`
    // takes device global storage.
}

#[test]
fn a_loop_carried_scalar_accumulation_stays_a_host_loop() {
    // `for i in range(N): s[0] = s[0] + x[i]`: each iteration depends on
    // the last, so the loop stays a loop; its tasklet is sequential scalar
    // code on an input, so it stays host code: no kernel per iteration.
    let mut b = SdfgBuilder::new("accumulation");
    b.symbol("N")
        .local_symbol("i")
        .array("x", F64, "N")
        .array("s", F64, "1");
    b.for_loop("l", "i", "0", "N", 1, |b| {
        b.state("acc", |s| accumulate_into(s, "x[i]", "s", "s[0]"));
    });
    let sdfg = b.build().unwrap();
    let args = xy_args(4).array("s", ArrayValue::f64(vec![1], vec![0.5]));
    let checked = check_offload(&sdfg, &args, &Simulator::new());
    assert!(matches!(
        checked
            .offloaded
            .body
            .blocks
            .iter()
            .find(|b| b.label == "l")
            .map(|b| &b.kind),
        Some(sdfg_ir::BlockKind::Loop(_))
    ));
    let maps: Vec<_> = state(&checked.offloaded, "acc")
        .nodes()
        .filter_map(|(_, n)| match n {
            Node::MapEntry(m) => Some(m.map.clone()),
            _ => None,
        })
        .collect();
    assert!(maps.is_empty(), "{maps:?}");
    assert_eq!(checked.report.host_states.len(), 1, "{}", checked.report);
    assert_eq!(checked.run.report.launches, 0);
    assert_eq!(transfers(&checked.run), (0, 0, 0));
}

/// `rowsum`: `dst[0] = sum(src[0:M])`, or `0` when `neg[0] > 0`, with a
/// loop, a transient accumulator and a branch on data.
fn rowsum() -> Sdfg {
    let mut b = SdfgBuilder::new("rowsum");
    b.symbol("M")
        .local_symbol("j")
        .array("src", F64, "M")
        .array("neg", DType::Int64, "1")
        .array("dst", F64, "1")
        .transient_scalar("t", F64);
    let set = |s: &mut sdfg_ir::builder::StateBuilder<'_>, value: f64| {
        let t = s.access("t");
        let k = s.tasklet(
            "zero",
            vec![],
            vec![f64c("o")],
            vec![Stmt::assign("o", Expr::f64(value))],
        );
        s.edge(k, Some("o"), t, None, "t");
    };
    b.state("zero", |s| set(s, 0.0));
    b.for_loop("l", "j", "0", "M", 1, |b| {
        b.state("add", |s| accumulate_into(s, "src[j]", "t", "t"));
    });
    b.if_else(
        "negative",
        "neg[0] > 0",
        |b| {
            b.state("clear", |s| set(s, 0.0));
        },
        None,
    );
    b.state("store", |s| {
        let t = s.access("t");
        let dst = s.access("dst");
        s.edge(t, None, dst, None, "t");
    });
    b.build().unwrap()
}

#[test]
fn a_nested_sdfg_inside_a_kernel_is_code_of_each_thread() {
    let mut b = SdfgBuilder::new("nested_in_kernel");
    b.symbol("N")
        .array("A", F64, "N, N")
        .array("neg", DType::Int64, "N")
        .array("y", F64, "N");
    b.state("s", |s| {
        let a = s.access("A");
        let neg = s.access("neg");
        let y = s.access("y");
        let (entry, exit) = s.map("rows", "i = 0:N", Schedule::Default);
        let n = s.nested("rowsum", rowsum(), &["src", "neg"], &["dst"], &[("M", "N")]);
        s.path(&[a, entry, n], None, Some("src"), "A[i, 0:N]");
        s.path(&[neg, entry, n], None, Some("neg"), "neg[i]");
        s.path(&[n, exit, y], Some("dst"), None, "y[i]");
    });
    let sdfg = b.build().unwrap();
    let n = 4;
    let a = f64s(n * n, 6);
    // Row 1 is flagged: its sum is cleared.
    let args = xy_args(n)
        .array("A", ArrayValue::f64(vec![n, n], a.clone()))
        .array("neg", ArrayValue::i64(vec![n], vec![0, 1, 0, 0]));
    let checked = check_offload(&sdfg, &args, &Simulator::new());
    assert_eq!(checked.report.kernels, ["rows (state `s`)"]);
    assert_eq!(checked.run.report.launches, 1);
    let Some(Node::NestedSdfg(inner)) = state(&checked.offloaded, "s")
        .nodes()
        .map(|(_, n)| n)
        .find(|n| matches!(n, Node::NestedSdfg(_)))
    else {
        panic!("no nested SDFG")
    };
    assert_eq!(inner.sdfg.containers["t"].storage, Storage::Register);
    assert_eq!(inner.sdfg.containers["src"].storage, Storage::DeviceGlobal);
    let y = &checked.run.outputs["y"];
    for r in 0..n {
        let want: f64 = if r == 1 {
            0.0
        } else {
            a[r * n..(r + 1) * n].iter().sum()
        };
        assert!((y.get(r).unwrap().to_f64() - want).abs() < 1e-12, "row {r}");
    }
    // Negative control: inside a map that stays on the host (named as a
    // host map, doing work of its own through the nested SDFG), refused.
    let (what, _) = refusal(
        &sdfg,
        &Options {
            host_maps: HostMaps::Named(vec!["rows".to_owned()]),
            ..Options::default()
        },
    );
    assert!(what.contains("rows"), "{what}");
}

/// `acc[at] = acc[at] + src_element` in one tasklet (`src_element` is a
/// memlet such as `x[i]`).
fn accumulate_into(
    s: &mut sdfg_ir::builder::StateBuilder<'_>,
    src_element: &str,
    acc: &str,
    at: &str,
) {
    let src = s.access(src_element.split('[').next().unwrap_or(src_element));
    let acc_in = s.access(acc);
    let acc_out = s.access(acc);
    let t = s.tasklet(
        "add",
        vec![f64c("a"), f64c("b")],
        vec![f64c("o")],
        vec![Stmt::assign("o", Expr::var("a") + Expr::var("b"))],
    );
    s.edge(src, None, t, Some("a"), src_element);
    s.edge(acc_in, None, t, Some("b"), at);
    s.edge(t, Some("o"), acc_out, None, at);
}

/// An SDFG builder with `A: f64[N, N]`, `y: f64[N]` and a view `row` of `N`
/// elements.
/// A state copying row 1 of `A`, through the view `row`, into `y` with a map.
fn copy_row_into_y(s: &mut sdfg_ir::builder::StateBuilder<'_>) {
    let a = s.access("A");
    let row = s.access("row");
    let y = s.access("y");
    s.edge(a, None, row, Some(sdfg_ir::VIEW_CONNECTOR), "A[1, 0:N]");
    s.mapped_tasklet(
        "m",
        "j = 0:N",
        Schedule::Default,
        vec![(row, f64c("r"), "row[j]")],
        vec![Stmt::assign("o", Expr::var("r"))],
        vec![(f64c("o"), y, "y[j]")],
    );
}

fn row_view_builder(name: &str) -> SdfgBuilder {
    let mut b = SdfgBuilder::new(name);
    b.symbol("N").array("A", F64, "N, N").array("y", F64, "N");
    b.container(
        "row",
        sdfg_ir::DataDesc::view(F64, sdfg_ir::Layout::contiguous(vec![sym("N")])),
    );
    b
}

// ---------------------------------------------------------------------------
// Data whose home is the device: DaCe's `GPU_Global` arguments.

/// `body` compiled twice: as written (arguments annotated `@
/// dc.StorageType.GPU_Global` where it says `@GPU`) and with every
/// argument on the host. The second is the reference the first, offloaded,
/// must agree with; returns the offloaded SDFG, its report and its run.
#[track_caller]
fn check_device_home(
    body: &str,
    symbols: &[(&str, i64)],
    acc: &dyn Accelerator,
) -> (Sdfg, Report, RunResult) {
    let on_device = compile(&body.replace("@GPU", "@ dc.StorageType.GPU_Global"));
    let on_host = compile(&body.replace("@GPU", ""));
    sdfg_ir::validate(&on_device).unwrap_or_else(|e| panic!("input invalid: {e}"));
    let args = fill_args(&on_host, symbols, vec![]);
    let sim = Simulator::new();
    let want = simulate(&sim, &on_host, &args);
    let (out, report) = offload_ok_on(&on_device, acc);
    sdfg_ir::validate(&out).unwrap_or_else(|e| panic!("output invalid: {e}\n{report}"));
    assert_eq!(Sdfg::from_json(&out.to_json()).unwrap(), out);
    let (again, second) = offload_ok_on(&out, acc);
    assert!(second.already_offloaded, "{second}");
    assert_eq!(again, out, "a second offload changed the SDFG");
    let got = simulate(&sim, &out, &args);
    assert_same_outputs("device-home arguments", &want, &got);
    (out, report, got)
}

#[test]
fn arguments_whose_home_is_the_device_are_used_where_they_are() {
    // DaCe's `B[:] = A * 2.0 + 1.0` after `apply_gpu_storage`: no twin, no
    // copy in either direction, the kernel works on the caller's arrays.
    let (out, report, run) = check_device_home(
        "@dc.program\ndef f(A: dc.float64[N] @GPU, B: dc.float64[N] @GPU):\n    B[:] = A * 2.0 + 1.0\n",
        &[("N", 7)],
        &SimAccelerator,
    );
    assert_eq!(report.kernels.len(), 1, "{report}");
    assert!(report.copies.is_empty(), "{report}");
    for x in ["A", "B"] {
        let p = placement(&report, x);
        assert_eq!(
            (p.twin.as_deref(), p.storage),
            (None, Storage::DeviceGlobal)
        );
        assert!(!out.containers[x].transient);
    }
    assert_eq!(transfers(&run).0 + transfers(&run).1, 0);
}

#[test]
fn host_code_reads_data_whose_home_is_the_device_through_a_host_twin() {
    // The loop bound reads `n[0]` on the host: one 8-byte copy to a host
    // twin before the loop, none back (the host wrote nothing), and the
    // kernels use `B` and `n`'s home directly.
    let body = "@dc.program\ndef f(n: dc.int64[1] @GPU, B: dc.float64[N] @GPU):\n    for i in range(n[0]):\n        B[:] = B * 0.5 + 1.0\n";
    let (out, report, run) = check_device_home(body, &[("N", 5)], &HostLoops);
    let p = placement(&report, "n");
    assert_eq!(p.twin.as_deref(), Some("host_n"), "{report}");
    assert_eq!(out.containers["host_n"].storage, Storage::Host);
    assert!(format!("{report}").contains("n: stays on the device, host twin `host_n`"));
    assert_eq!(report.copies.len(), 1, "{report}");
    let c = &report.copies[0];
    assert_eq!(
        (c.from.as_str(), c.to.as_str(), c.kind),
        ("n", "host_n", CopyKind::DeviceToHost),
        "{report}"
    );
    assert_eq!(transfers(&run), (0, 8, transfers(&run).2));
    // The loop reads the twin; no interstate code names `n` any more.
    let mut reads = std::collections::BTreeSet::new();
    out.walk_blocks(&mut |_, _, b| {
        if let BlockKind::Loop(l) = &b.kind {
            reads.extend(l.condition.reads());
            reads.extend(l.init.iter().chain(&l.update).flat_map(|e| e.reads()));
        }
        reads.extend(b.transition.reads());
    });
    assert!(!reads.contains("n"), "{reads:?}");
}

#[test]
fn scalar_host_code_on_data_whose_home_is_the_device_goes_to_the_data() {
    // Sequential scalar code stays on the host when it reads what the host
    // holds (crc16); on an argument already on the GPU it becomes a
    // single-thread kernel instead of a copy back and forth.
    let body = "@dc.program\ndef f(a: dc.float64[4] @GPU, s: dc.float64[1] @GPU):\n    s[0] = a[0] * 2.0 + a[3]\n";
    let (_, report, run) = check_device_home(body, &[], &SimAccelerator);
    assert!(report.host_states.is_empty(), "{report}");
    assert_eq!(report.kernels.len(), 1, "{report}");
    assert!(report.copies.is_empty(), "{report}");
    assert_eq!(run.report.launches, 1);
    // On the host, the same code launches nothing.
    let host = compile(&body.replace("@GPU", ""));
    let (_, report) = offload_ok(&host);
    assert_eq!(report.host_states.len(), 1, "{report}");
    assert!(report.kernels.is_empty(), "{report}");
}

#[test]
fn host_code_beside_device_code_that_can_run_on_the_device_becomes_a_one_point_map() {
    // One state: a kernel writes `y`, a tasklet reads `y[0]` into `z[0]`.
    // The tasklet can run on the device: it becomes a single-thread kernel
    // (DaCe's one-point GPU map), nothing is split, and with every array
    // already on the device nothing is copied.
    let build = |storage: Storage| {
        let mut b = SdfgBuilder::new("beside");
        b.symbol("N")
            .container(
                "x",
                sdfg_ir::DataDesc::array(F64, vec![sym("N")]).with_storage(storage),
            )
            .container(
                "y",
                sdfg_ir::DataDesc::array(F64, vec![sym("N")]).with_storage(storage),
            )
            .container(
                "z",
                sdfg_ir::DataDesc::array(F64, vec![sym("1")]).with_storage(storage),
            );
        b.state("both", |s| {
            let x = s.access("x");
            let y = s.access("y");
            s.mapped_tasklet(
                "produce",
                "i = 0:N",
                Schedule::Default,
                vec![(x, f64c("a"), "x[i]")],
                vec![Stmt::assign("b", Expr::var("a") * Expr::f64(3.0))],
                vec![(f64c("b"), y, "y[i]")],
            );
            let z = s.access("z");
            let t = s.tasklet(
                "first",
                vec![f64c("a")],
                vec![f64c("b")],
                vec![Stmt::assign("b", Expr::var("a") + Expr::f64(1.0))],
            );
            s.edge(y, None, t, Some("a"), "y[0]");
            s.edge(t, Some("b"), z, None, "z[0]");
        });
        b.build().unwrap()
    };
    let on_host = build(Storage::Default);
    let on_device = build(Storage::DeviceGlobal);
    let args = fill_args(&on_host, &[("N", 4)], vec![]);
    let sim = Simulator::new();
    let want = simulate(&sim, &on_host, &args);
    let (out, report) = offload_ok(&on_device);
    assert!(report.split_states.is_empty(), "{report}");
    assert!(
        report
            .kernels
            .iter()
            .any(|k| k.contains("single-thread kernel for host tasklet `first`")),
        "{report}"
    );
    assert!(report.copies.is_empty(), "{report}");
    let got = simulate(&sim, &out, &args);
    assert_same_outputs("one-point map", &want, &got);
    assert_eq!(got.report.launches, 2);
    assert_eq!(transfers(&got).0 + transfers(&got).1, 0);
    // Idempotent.
    assert_eq!(offload_ok(&out).0, out);
}
