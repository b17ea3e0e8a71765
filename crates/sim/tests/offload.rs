//! The simulated accelerator on hand-offloaded SDFGs: correct placements run
//! and are counted exactly; missing copies and wrong placements fault with
//! the container's name.

use sdfg_ir::builder::SdfgBuilder;
use sdfg_ir::code::{Expr, Stmt};
use sdfg_ir::{Connector, DType, DataDesc, Layout, Schedule, Sdfg, Side, Storage, SymExpr};
use sdfg_sim::{Arguments, ArrayValue, SimError, Simulator};

fn f64c(name: &str) -> Connector {
    Connector::scalar(name, DType::Float64)
}

fn run(sdfg: &Sdfg, args: &Arguments) -> Result<sdfg_sim::RunResult, SimError> {
    let valid = sdfg_ir::validate(sdfg).unwrap_or_else(|e| panic!("invalid test SDFG:\n{e}"));
    Simulator::new().run(valid, args)
}

/// `out = sum(2 * x)`, offloaded: `x` is copied to `x_dev`, a kernel doubles
/// it into `t_dev`, `t_dev` is copied back to the host twin `t` (unless
/// `copy_back` is false), and a host tasklet sums `t` into `out`.
fn doubled_sum(copy_back: bool) -> Sdfg {
    let dev = |shape: &str| {
        DataDesc::array(DType::Float64, vec![SymExpr::parse(shape).unwrap()])
            .into_transient()
            .with_storage(Storage::DeviceGlobal)
    };
    let mut b = SdfgBuilder::new("doubled_sum");
    b.symbol("N")
        .array("x", DType::Float64, "N")
        .scalar("out", DType::Float64)
        .container("x_dev", dev("N"))
        .container("t_dev", dev("N"))
        .transient("t", DType::Float64, "N");
    b.state("copy_in", |s| {
        let (x, xd) = (s.access("x"), s.access("x_dev"));
        s.edge(x, None, xd, None, "x");
    });
    b.state("kernel", |s| {
        let (xd, td) = (s.access("x_dev"), s.access("t_dev"));
        s.mapped_tasklet(
            "double",
            "i = 0:N",
            Schedule::DeviceKernel,
            vec![(xd, f64c("a"), "x_dev[i]")],
            vec![Stmt::assign("b", Expr::var("a") * Expr::f64(2.0))],
            vec![(f64c("b"), td, "t_dev[i]")],
        );
    });
    if copy_back {
        b.state("copy_out", |s| {
            let (td, t) = (s.access("t_dev"), s.access("t"));
            s.edge(td, None, t, None, "t_dev");
        });
    }
    b.state("sum", |s| {
        let (t, out) = (s.access("t"), s.access("out"));
        let (entry, exit) = s.map("sum", "i = 0:N", Schedule::Sequential);
        let k = s.tasklet(
            "acc",
            vec![f64c("v")],
            vec![f64c("o")],
            vec![Stmt::assign("o", Expr::var("v"))],
        );
        s.path(&[t, entry, k], None, Some("v"), "t[i]");
        s.path(
            &[k, exit, out],
            Some("o"),
            None,
            ("out[0]", sdfg_ir::Wcr::Sum),
        );
    });
    b.build().unwrap()
}

fn inputs(n: usize) -> Arguments {
    Arguments::default()
        .symbol("N", n as i64)
        .array(
            "x",
            ArrayValue::f64(vec![n], (0..n).map(|i| i as f64 + 0.5).collect()),
        )
        .array("out", ArrayValue::f64(vec![], vec![1.0]))
}

#[test]
fn a_correct_offloaded_sdfg_runs_and_moves_exactly_its_data() {
    let n = 10;
    let result = run(&doubled_sum(true), &inputs(n)).unwrap();
    // 1 + sum(2 * (i + 0.5)) for i < 10 = 1 + 2 * 50 = 101.
    assert_eq!(result.outputs["out"], ArrayValue::f64(vec![], vec![101.0]));
    let r = &result.report;
    assert_eq!(r.launches, 1);
    assert_eq!((r.to_device.bytes, r.to_device.copies), (8 * n as u64, 1));
    assert_eq!((r.to_host.bytes, r.to_host.copies), (8 * n as u64, 1));
    assert_eq!(r.device_to_device.copies, 0);
    assert_eq!(r.lower_bound_bytes, 16 * n as u64);
    assert_eq!(r.transfer_ratio(), Some(1.0));
    assert_eq!(r.per_container["x"].to_device.bytes, 80);
    assert_eq!(r.per_container["t"].to_host.bytes, 80);
}

#[test]
fn a_missing_device_to_host_copy_faults_naming_the_container() {
    let err = run(&doubled_sum(false), &inputs(4)).unwrap_err();
    match &err {
        SimError::Uninitialized { container, at, .. } => {
            assert_eq!(container, "t");
            assert_eq!(&*at.block, "sum");
            assert_eq!(&*at.node, "acc");
        }
        other => panic!("expected an uninitialised read of `t`, got {other}"),
    }
    assert!(err.to_string().contains("container `t`"), "{err}");
}

#[test]
fn host_code_reading_device_memory_through_a_view_faults() {
    // A view whose descriptor says host storage but whose origin is device
    // memory: the validator cannot see where the view points, the run can.
    let mut b = SdfgBuilder::new("view_fault");
    b.symbol("N")
        .array("y", DType::Float64, "N")
        .container(
            "x_dev",
            DataDesc::array(DType::Float64, vec![SymExpr::symbol("N")])
                .into_transient()
                .with_storage(Storage::DeviceGlobal),
        )
        .container(
            "v",
            DataDesc::view(
                DType::Float64,
                Layout::contiguous(vec![SymExpr::symbol("N")]),
            ),
        );
    b.state("init", |s| {
        let xd = s.access("x_dev");
        s.mapped_tasklet(
            "fill",
            "i = 0:N",
            Schedule::DeviceKernel,
            vec![],
            vec![Stmt::assign("o", Expr::f64(1.0))],
            vec![(f64c("o"), xd, "x_dev[i]")],
        );
    });
    b.state("read", |s| {
        let (xd, v, y) = (s.access("x_dev"), s.access("v"), s.access("y"));
        s.edge(xd, None, v, Some(sdfg_ir::VIEW_CONNECTOR), "x_dev");
        s.mapped_tasklet(
            "copy",
            "i = 0:N",
            Schedule::Sequential,
            vec![(v, f64c("a"), "v[i]")],
            vec![Stmt::assign("b", Expr::var("a"))],
            vec![(f64c("b"), y, "y[i]")],
        );
    });
    let sdfg = b.build().unwrap();
    let args = Arguments::default()
        .symbol("N", 3)
        .array("y", ArrayValue::f64(vec![3], vec![0.0; 3]));
    match run(&sdfg, &args).unwrap_err() {
        SimError::Fault {
            side,
            container,
            space,
            at,
        } => {
            assert_eq!((side, space), (Side::Host, Side::Device));
            assert_eq!(container, "v");
            assert_eq!((&*at.block, &*at.node), ("read", "copy"));
        }
        other => panic!("expected a fault, got {other}"),
    }
}

#[test]
fn the_offloaded_example_doubles_its_input_with_one_launch() {
    let sdfg = sdfg_ir::examples::offloaded_scale().unwrap();
    let n = 3;
    let x: Vec<f64> = (0..n * 32).map(|i| i as f64).collect();
    let args = Arguments::default()
        .symbol("N", n as i64)
        .array("x", ArrayValue::f64(vec![n, 32], x.clone()));
    let result = run(&sdfg, &args).unwrap();
    let expected: Vec<f64> = x.iter().map(|v| v * 2.0).collect();
    assert_eq!(result.outputs["x"], ArrayValue::f64(vec![n, 32], expected));
    let r = &result.report;
    assert_eq!(r.launches, 1);
    assert_eq!(r.to_device.bytes, (n * 32 * 8) as u64);
    assert_eq!(r.to_host.bytes, (n * 32 * 8) as u64);
    // The shared-memory tile is filled by one device-to-device copy per block.
    assert_eq!(r.device_to_device.copies, n as u64);
    assert_eq!(r.transfer_ratio(), Some(1.0));
}

#[test]
fn a_copy_inside_a_loop_shows_up_in_the_transfer_ratio() {
    // Copy `x` in on every iteration of a loop of 3: 3x the bytes, same lower bound.
    let mut b = SdfgBuilder::new("loop_copy");
    b.symbol("N").array("x", DType::Float64, "N").container(
        "x_dev",
        DataDesc::array(DType::Float64, vec![SymExpr::symbol("N")])
            .into_transient()
            .with_storage(Storage::DeviceGlobal),
    );
    b.for_loop("repeat", "r", "0", "3", 1, |b| {
        b.state("copy_in", |s| {
            let (x, xd) = (s.access("x"), s.access("x_dev"));
            s.edge(x, None, xd, None, "x");
        });
    });
    let sdfg = b.build().unwrap();
    let args = Arguments::default()
        .symbol("N", 4)
        .array("x", ArrayValue::f64(vec![4], vec![1.0; 4]));
    let r = run(&sdfg, &args).unwrap().report;
    assert_eq!((r.to_device.bytes, r.to_device.copies), (96, 3));
    assert_eq!(r.lower_bound_bytes, 32);
    assert_eq!(r.transfer_ratio(), Some(3.0));
}

/// A kernel over `i` in `0:N` on device data: `y_dev[out] = f(x_dev[in])`
/// (each a memlet in text form, with an optional write-conflict resolution),
/// between copies in and out.
fn one_kernel(input: &str, output: &str, wcr: Option<sdfg_ir::Wcr>) -> Sdfg {
    let dev = || {
        DataDesc::array(DType::Float64, vec![SymExpr::parse("N").unwrap()])
            .into_transient()
            .with_storage(Storage::DeviceGlobal)
    };
    let mut b = SdfgBuilder::new("one_kernel");
    b.symbol("N")
        .array("x", DType::Float64, "N")
        .array("y", DType::Float64, "N")
        .container("x_dev", dev())
        .container("y_dev", dev());
    b.state("copy_in", |s| {
        let (x, xd) = (s.access("x"), s.access("x_dev"));
        s.edge(x, None, xd, None, "x");
        let (y, yd) = (s.access("y"), s.access("y_dev"));
        s.edge(y, None, yd, None, "y");
    });
    b.state("kernel", |s| {
        let (src, yd) = (
            s.access(input.split('[').next().unwrap()),
            s.access("y_dev"),
        );
        let subset = output.trim_start_matches("y_dev[").trim_end_matches(']');
        let m = sdfg_ir::Memlet::parse("y_dev", subset).unwrap();
        let out = vec![(f64c("b"), yd, wcr.map_or(m.clone(), |w| m.with_wcr(w)))];
        s.mapped_tasklet(
            "k",
            "i = 0:N",
            Schedule::DeviceKernel,
            vec![(src, f64c("a"), input)],
            vec![Stmt::assign("b", Expr::var("a") + Expr::f64(1.0))],
            out,
        );
    });
    b.state("copy_out", |s| {
        let (yd, y) = (s.access("y_dev"), s.access("y"));
        s.edge(yd, None, y, None, "y_dev");
    });
    b.build().unwrap()
}

#[test]
fn races_between_the_threads_of_a_kernel_are_found_when_checking() {
    let args = Arguments::default()
        .symbol("N", 4)
        .array("x", ArrayValue::f64(vec![4], vec![1.0, 2.0, 3.0, 4.0]))
        .array("y", ArrayValue::f64(vec![4], vec![0.0; 4]));
    let checked = |sdfg: &Sdfg| {
        let valid = sdfg_ir::validate(sdfg).unwrap_or_else(|e| panic!("{e}"));
        Simulator::new().check_races(true).run(valid, &args)
    };
    // Every thread writes y_dev[0]: a race, which the sequential run hides.
    let racy = one_kernel("x_dev[i]", "y_dev[0]", None);
    assert!(run(&racy, &args).is_ok());
    match checked(&racy) {
        Err(SimError::Race {
            container,
            index,
            kind,
            ..
        }) => {
            assert_eq!((container.as_str(), index), ("y_dev", 0));
            assert_eq!(kind, sdfg_sim::memory::RaceKind::WriteWrite);
        }
        other => panic!("expected a race, got {other:?}"),
    }
    // The same updates combined by a write-conflict resolution: no race.
    let summed = one_kernel("x_dev[i]", "y_dev[0]", Some(sdfg_ir::Wcr::Sum));
    let out = checked(&summed).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.outputs["y"].get(0).unwrap().to_f64(), 14.0);
    // Thread i reads what thread i + 1 writes (an in-place shift).
    let shift = one_kernel("y_dev[(i + 1) % N]", "y_dev[i]", None);
    match checked(&shift) {
        Err(SimError::Race { kind, .. }) => {
            assert_eq!(kind, sdfg_sim::memory::RaceKind::ReadWrite);
        }
        other => panic!("expected a race, got {other:?}"),
    }
    // Control: each thread its own element.
    assert!(checked(&one_kernel("x_dev[i]", "y_dev[i]", None)).is_ok());
}

/// The static count of `sdfg`'s run with `args`, which must be the run's own.
fn assert_counted_as_run(sdfg: &Sdfg, args: &Arguments, scalars: &[(&str, i64)]) {
    let r = run(sdfg, args).unwrap().report;
    let scalars = scalars.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    let c = sdfg_sim::count_statically(sdfg, &args.symbols, &scalars)
        .unwrap_or_else(|e| panic!("`{}` is not countable: {e}", sdfg.name));
    assert_eq!(
        (c.launches, c.to_device_bytes, c.to_host_bytes),
        (r.launches, r.to_device.bytes, r.to_host.bytes),
        "`{}`: the static count is not the run's",
        sdfg.name
    );
}

#[test]
fn static_counts_are_the_runs_counts() {
    for copy_back in [true, false] {
        let sdfg = doubled_sum(copy_back);
        let r = run(&sdfg, &inputs(5));
        if r.is_ok() {
            assert_counted_as_run(&sdfg, &inputs(5), &[]);
        }
    }
    let scale = sdfg_ir::examples::offloaded_scale().unwrap();
    let args = Arguments::default()
        .symbol("N", 3)
        .array("x", ArrayValue::f64(vec![3, 32], vec![1.0; 96]));
    assert_counted_as_run(&scale, &args, &[]);
}

/// `for i in range(T): kernel over j in 0:i` with the vector copied in
/// before and out after: the first iteration's map is empty and launches
/// nothing, in the run and in the count.
fn triangular_launches() -> Sdfg {
    let mut b = SdfgBuilder::new("triangular");
    b.symbol("N")
        .symbol("T")
        .array("x", DType::Float64, "N")
        .container(
            "x_dev",
            DataDesc::array(DType::Float64, vec![SymExpr::symbol("N")])
                .into_transient()
                .with_storage(Storage::DeviceGlobal),
        );
    b.state("copy_in", |s| {
        let (x, xd) = (s.access("x"), s.access("x_dev"));
        s.edge(x, None, xd, None, "x");
    });
    b.for_loop("steps", "i", "0", "T", 1, |b| {
        b.state("kernel", |s| {
            let (r, w) = (s.access("x_dev"), s.access("x_dev"));
            s.mapped_tasklet(
                "bump",
                "j = 0:i",
                Schedule::DeviceKernel,
                vec![(r, f64c("a"), "x_dev[j]")],
                vec![Stmt::assign("b", Expr::var("a") + Expr::f64(1.0))],
                vec![(f64c("b"), w, "x_dev[j]")],
            );
        });
    });
    b.state("copy_out", |s| {
        let (xd, x) = (s.access("x_dev"), s.access("x"));
        s.edge(xd, None, x, None, "x_dev[0:3]");
    });
    b.build().unwrap()
}

#[test]
fn static_counts_skip_empty_kernels_and_size_partial_copies() {
    let sdfg = triangular_launches();
    let args = Arguments::default()
        .symbol("N", 8)
        .symbol("T", 4)
        .array("x", ArrayValue::f64(vec![8], vec![0.0; 8]));
    assert_counted_as_run(&sdfg, &args, &[]);
    let c = sdfg_sim::count_statically(&sdfg, &args.symbols, &Default::default()).unwrap();
    assert_eq!(
        (c.launches, c.to_device_bytes, c.to_host_bytes),
        (3, 64, 24)
    );
}

#[test]
fn a_branch_on_data_the_run_computes_is_not_counted_statically() {
    // `if flag[0]: copy x in` where the program writes `flag`: only a run
    // knows; a flag the program never writes is an argument whose value is
    // given, and counts.
    let build = |write_flag: bool| {
        let mut b = SdfgBuilder::new("branch");
        b.symbol("N")
            .array("x", DType::Float64, "N")
            .scalar("flag", DType::Int64)
            .container(
                "x_dev",
                DataDesc::array(DType::Float64, vec![SymExpr::symbol("N")])
                    .into_transient()
                    .with_storage(Storage::DeviceGlobal),
            );
        if write_flag {
            b.state("set", |s| {
                let f = s.access("flag");
                let t = s.tasklet(
                    "one",
                    vec![],
                    vec![Connector::scalar("o", DType::Int64)],
                    vec![Stmt::assign("o", Expr::i64(1))],
                );
                s.edge(t, Some("o"), f, None, "flag[0]");
            });
        }
        b.if_else(
            "maybe",
            "flag[0] > 0",
            |b| {
                b.state("copy_in", |s| {
                    let (x, xd) = (s.access("x"), s.access("x_dev"));
                    s.edge(x, None, xd, None, "x");
                });
            },
            None,
        );
        b.build().unwrap()
    };
    let args = Arguments::default()
        .symbol("N", 4)
        .array("x", ArrayValue::f64(vec![4], vec![1.0; 4]))
        .array("flag", ArrayValue::i64(vec![], vec![1]));
    assert_counted_as_run(&build(false), &args, &[("flag", 1)]);
    let err = sdfg_sim::count_statically(
        &build(true),
        &args.symbols,
        &[("flag".to_owned(), 1)].into(),
    )
    .unwrap_err();
    assert!(
        matches!(&err, sdfg_sim::NotCountable::DataDependent { data, .. } if data == "flag"),
        "{err}"
    );
    assert!(err.to_string().contains("maybe"), "{err}");
}
