//! Hand-built example SDFGs that together use every construct of the IR.
//!
//! They serve as snapshot fixtures (their JSON is committed under
//! `crates/ir/tests/snapshots/`), as the built-in programs `cargo xtask
//! corpus` validates until the Python corpus exists, and as worked examples of
//! the builder. Each is valid; tests break them on purpose to exercise the
//! validator.
//!
//! | example | what it exercises |
//! |---|---|
//! | [`axpy`] | map scope, tasklet, scalar and array arguments, memlet paths |
//! | [`linear_algebra`] | every library operation, transients, a literal `alpha`/`beta` |
//! | [`jacobi_1d`] | `for` loops (positive and negative step), loop-dependent memlets, sum-WCR |
//! | [`converge`] | `while` on data, conditionals with `else`, `break`, `continue`, `return`, transition assignments, interstate reads |
//! | [`nested_flip`] | nested SDFG with a loop-dependent symbol mapping, a view and its view edge |
//! | [`offloaded_scale`] | device storage, copies with other subsets, kernel and thread-block maps, shared memory, registers, pinned memory |
//! | [`spmv_indirect`] | interstate reads as slice bounds, pointer connectors, indirect loads and stores, dynamic memlets |
//! | [`containers_and_callbacks`] | complex and bitwise code, intrinsics, select and casts, streams, structures, container arrays, persistent lifetime, host callbacks, empty memlets |

use crate::builder::{BuildErrors, SdfgBuilder};
use crate::code::{BinaryOp, Expr, Intrinsic, Stmt, UnaryOp};
use crate::data::{DataDesc, DataKind, Layout};
use crate::dtype::{DType, Literal};
use crate::memlet::{Memlet, Subset, Wcr};
use crate::node::{Connector, LibraryOp, VIEW_CONNECTOR};
use crate::placement::{Lifetime, Schedule, Storage};
use crate::sdfg::Sdfg;
use crate::symbolic::SymExpr;

/// The constructor of one example.
pub type ExampleFn = fn() -> Result<Sdfg, BuildErrors>;

/// Every example with its name, in the order of the table above.
pub fn all() -> Vec<(&'static str, ExampleFn)> {
    vec![
        ("axpy", axpy as ExampleFn),
        ("linear_algebra", linear_algebra),
        ("jacobi_1d", jacobi_1d),
        ("converge", converge),
        ("nested_flip", nested_flip),
        ("offloaded_scale", offloaded_scale),
        ("spmv_indirect", spmv_indirect),
        ("containers_and_callbacks", containers_and_callbacks),
    ]
}

const F64: DType = DType::Float64;

fn f64c(name: &str) -> Connector {
    Connector::scalar(name, F64)
}

fn v(name: &str) -> Expr {
    Expr::var(name)
}

/// `y = a * x + y` as one map.
pub fn axpy() -> Result<Sdfg, BuildErrors> {
    let mut b = SdfgBuilder::new("axpy");
    b.symbol("N")
        .scalar("a", F64)
        .array("x", F64, "N")
        .array("y", F64, "N");
    b.state("compute", |s| {
        let a = s.access("a");
        let x = s.access("x");
        let y_in = s.access("y");
        let y_out = s.access("y");
        let (entry, exit) = s.map("axpy", "i = 0:N", Schedule::Default);
        let t = s.tasklet(
            "fma",
            vec![f64c("alpha"), f64c("xi"), f64c("yi")],
            vec![f64c("out")],
            vec![Stmt::assign("out", v("alpha") * v("xi") + v("yi"))],
        );
        s.path(&[a, entry, t], None, Some("alpha"), "a[0]");
        s.path(&[x, entry, t], None, Some("xi"), "x[i]");
        s.path(&[y_in, entry, t], None, Some("yi"), "y[i]");
        s.path(&[t, exit, y_out], Some("out"), None, "y[i]");
    });
    b.build()
}

/// One state per library operation.
pub fn linear_algebra() -> Result<Sdfg, BuildErrors> {
    let mut b = SdfgBuilder::new("linear_algebra");
    b.symbol("N")
        .symbol("K")
        .array("A", F64, "N, N")
        .array("B", F64, "N, N")
        .array("C", F64, "N, N")
        .array("x", F64, "N")
        .array("y", F64, "N")
        .array("T3", F64, "K, N, N")
        .scalar("r", F64)
        .transient("P", F64, "N, N")
        .transient("colsum", F64, "N")
        .transient("At", F64, "N, N")
        .transient("T3p", F64, "N, K, N")
        .transient("L", F64, "N, N")
        .transient("sol", F64, "N")
        .transient("batched", F64, "K, N, N")
        .transient("Ax", F64, "N");
    let unary = |b: &mut SdfgBuilder,
                 label: &str,
                 op: LibraryOp,
                 (i, ic): (&'static str, &'static str),
                 (o, oc): (&'static str, &'static str)| {
        let label = label.to_owned();
        b.state(&label.clone(), move |s| {
            let src = s.access(i);
            let dst = s.access(o);
            let n = s.library(&label, op);
            s.edge(src, None, n, Some(ic), i);
            s.edge(n, Some(oc), dst, None, o);
        });
    };
    b.state("matmul", |s| {
        let (a, bb, p) = (s.access("A"), s.access("B"), s.access("P"));
        let n = s.library("matmul", LibraryOp::MatMul);
        s.edge(a, None, n, Some("_a"), "A");
        s.edge(bb, None, n, Some("_b"), "B");
        s.edge(n, Some("_c"), p, None, "P");
    });
    b.state("gemm", |s| {
        let (a, bb, c_in, c) = (s.access("A"), s.access("B"), s.access("C"), s.access("C"));
        let n = s.library(
            "gemm",
            LibraryOp::Gemm {
                alpha: Literal::f64(1.5),
                beta: Literal::f64(1.2),
                trans_a: false,
                trans_b: true,
                alpha_input: false,
                beta_input: false,
            },
        );
        s.edge(a, None, n, Some("_a"), "A");
        s.edge(bb, None, n, Some("_b"), "B");
        s.edge(c_in, None, n, Some("_cin"), "C");
        s.edge(n, Some("_c"), c, None, "C");
    });
    b.state("gemv", |s| {
        let (a, x, ax) = (s.access("A"), s.access("x"), s.access("Ax"));
        let n = s.library(
            "gemv",
            LibraryOp::Gemv {
                alpha: Literal::f64(1.0),
                beta: Literal::f64(0.0),
                trans_a: true,
            },
        );
        s.edge(a, None, n, Some("_a"), "A");
        s.edge(x, None, n, Some("_x"), "x");
        s.edge(n, Some("_y"), ax, None, "Ax");
    });
    b.state("dot", |s| {
        let (x, y, r) = (s.access("x"), s.access("y"), s.access("r"));
        let n = s.library("dot", LibraryOp::Dot);
        s.edge(x, None, n, Some("_x"), "x");
        s.edge(y, None, n, Some("_y"), "y");
        s.edge(n, Some("_result"), r, None, "r[0]");
    });
    b.state("batched", |s| {
        let (a, t, out) = (s.access("T3"), s.access("T3"), s.access("batched"));
        let n = s.library("bmm", LibraryOp::BatchedMatMul);
        s.edge(a, None, n, Some("_a"), "T3");
        s.edge(t, None, n, Some("_b"), "T3");
        s.edge(n, Some("_c"), out, None, "batched");
    });
    unary(
        &mut b,
        "reduce",
        LibraryOp::Reduce {
            op: Wcr::Sum,
            axes: Some(vec![0]),
            identity: Some(Literal::f64(0.0)),
        },
        ("P", "_in"),
        ("colsum", "_out"),
    );
    unary(
        &mut b,
        "transpose",
        LibraryOp::Transpose,
        ("A", "_in"),
        ("At", "_out"),
    );
    unary(
        &mut b,
        "permute",
        LibraryOp::TensorTranspose {
            axes: vec![1, 0, 2],
        },
        ("T3", "_in"),
        ("T3p", "_out"),
    );
    unary(
        &mut b,
        "cholesky",
        LibraryOp::Cholesky { lower: true },
        ("A", "_a"),
        ("L", "_b"),
    );
    b.state("solve", |s| {
        let (a, y, sol) = (s.access("L"), s.access("y"), s.access("sol"));
        let n = s.library("solve", LibraryOp::Solve);
        s.edge(a, None, n, Some("_a"), "L");
        s.edge(y, None, n, Some("_b"), "y");
        s.edge(n, Some("_x"), sol, None, "sol");
    });
    b.build()
}

/// Jacobi 1-D time loop, then a reversed accumulation loop.
pub fn jacobi_1d() -> Result<Sdfg, BuildErrors> {
    let mut b = SdfgBuilder::new("jacobi_1d");
    b.symbol("N")
        .symbol("TSTEPS")
        .array("A", F64, "N")
        .array("B", F64, "N")
        .scalar("total", F64);
    let sweep = |from: &'static str, to: &'static str| {
        move |s: &mut crate::builder::StateBuilder<'_>| {
            let src = s.access(from);
            let dst = s.access(to);
            let (entry, exit) = s.map(&format!("sweep_{to}"), "i = 1:N - 1", Schedule::Default);
            let t = s.tasklet(
                "stencil",
                vec![f64c("l"), f64c("c"), f64c("r")],
                vec![f64c("o")],
                vec![Stmt::assign(
                    "o",
                    Expr::f64(0.33333) * (v("l") + v("c") + v("r")),
                )],
            );
            s.path(
                &[src, entry, t],
                None,
                Some("l"),
                &*format!("{from}[i - 1]"),
            );
            s.path(&[src, entry, t], None, Some("c"), &*format!("{from}[i]"));
            s.path(
                &[src, entry, t],
                None,
                Some("r"),
                &*format!("{from}[i + 1]"),
            );
            s.path(&[t, exit, dst], Some("o"), None, &*format!("{to}[i]"));
        }
    };
    b.for_loop("time", "t", "1", "TSTEPS", 1, |b| {
        b.state("sweep_b", sweep("A", "B"));
        b.state("sweep_a", sweep("B", "A"));
    });
    b.for_loop("accumulate", "k", "N - 1", "-1", -1, |b| {
        b.state("add", |s| {
            let a = s.access("A");
            let total = s.access("total");
            let t = s.tasklet(
                "add",
                vec![f64c("ak")],
                vec![f64c("acc")],
                vec![Stmt::assign("acc", v("ak"))],
            );
            s.edge(a, None, t, Some("ak"), "A[k]");
            s.edge(t, Some("acc"), total, None, ("total[0]", Wcr::Sum));
        });
    });
    b.build()
}

/// Halves `x` until its norm is small, with every kind of jump.
pub fn converge() -> Result<Sdfg, BuildErrors> {
    let mut b = SdfgBuilder::new("converge");
    b.symbol("N")
        .local_symbol("it")
        .array("x", F64, "N")
        .scalar("flag", DType::Int32)
        .transient_scalar("done", DType::Bool)
        .transient_scalar("err", F64);
    b.state("init", |s| {
        let done = s.access("done");
        let t = s.tasklet(
            "clear",
            vec![],
            vec![Connector::scalar("d", DType::Bool)],
            vec![Stmt::assign("d", Expr::Lit(Literal::Bool(false)))],
        );
        s.edge(t, Some("d"), done, None, "done[0]");
    })
    .assign("it", "0");
    b.while_loop("iterate", "done[0] == 0", |b| {
        b.state("reset", |s| {
            // The norm is accumulated afresh in every iteration.
            let err = s.access("err");
            let t = s.tasklet(
                "zero",
                vec![],
                vec![f64c("e")],
                vec![Stmt::assign("e", Expr::f64(0.0))],
            );
            s.edge(t, Some("e"), err, None, "err[0]");
        });
        b.state("halve", |s| {
            let x_in = s.access("x");
            let x_out = s.access("x");
            let err = s.access("err");
            let (entry, exit) = s.map("halve", "i = 0:N", Schedule::Default);
            let t = s.tasklet(
                "halve",
                vec![f64c("xi")],
                vec![f64c("xo"), f64c("e")],
                vec![
                    Stmt::assign("xo", v("xi") * Expr::f64(0.5)),
                    Stmt::assign(
                        "e",
                        Expr::call(Intrinsic::Abs, vec![v("xi") * Expr::f64(0.5)]),
                    ),
                ],
            );
            s.path(&[x_in, entry, t], None, Some("xi"), "x[i]");
            s.path(&[t, exit, x_out], Some("xo"), None, "x[i]");
            s.path(&[t, exit, err], Some("e"), None, ("err[0]", Wcr::Sum));
        });
        b.state("check", |s| {
            let err = s.access("err");
            let done = s.access("done");
            let t = s.tasklet(
                "compare",
                vec![f64c("e")],
                vec![Connector::scalar("d", DType::Bool)],
                vec![Stmt::assign(
                    "d",
                    Expr::binary(BinaryOp::Lt, v("e"), Expr::f64(1e-3)),
                )],
            );
            s.edge(err, None, t, Some("e"), "err[0]");
            s.edge(t, Some("d"), done, None, "done[0]");
        })
        .assign("it", "it + 1");
        b.if_else(
            "limit",
            "it >= 50",
            |b| {
                b.break_("give_up");
            },
            None,
        );
        b.if_else(
            "parity",
            "it % 2 == 0",
            |b| {
                b.continue_("skip_odd");
            },
            Some(&|b: &mut SdfgBuilder| {
                b.state("odd", |_| {});
            }),
        );
    });
    b.if_else(
        "early_exit",
        "flag[0] != 0",
        |b| {
            b.return_("leave");
        },
        None,
    );
    b.state("finish", |s| {
        let flag = s.access("flag");
        let t = s.tasklet(
            "mark",
            vec![],
            vec![Connector::scalar("f", DType::Int32)],
            vec![Stmt::assign("f", Expr::Lit(Literal::i32(1)))],
        );
        s.edge(t, Some("f"), flag, None, "flag[0]");
    });
    b.build()
}

/// The inner SDFG of [`nested_flip`]: `dst[i] = src[M - 1 - i]`.
fn flip() -> Result<Sdfg, BuildErrors> {
    let mut b = SdfgBuilder::new("flip");
    b.symbol("M").array("src", F64, "M").array("dst", F64, "M");
    b.state("reverse", |s| {
        let src = s.access("src");
        let dst = s.access("dst");
        let (entry, exit) = s.map("reverse", "i = 0:M", Schedule::Default);
        let t = s.tasklet(
            "copy",
            vec![f64c("a")],
            vec![f64c("b")],
            vec![Stmt::assign("b", v("a"))],
        );
        s.path(&[src, entry, t], None, Some("a"), "src[M - 1 - i]");
        s.path(&[t, exit, dst], Some("b"), None, "dst[i]");
    });
    b.build()
}

/// Durbin-style loop calling a nested SDFG whose size is the loop counter,
/// then summing a row of `A` through a view.
pub fn nested_flip() -> Result<Sdfg, BuildErrors> {
    let inner = flip()?;
    let mut b = SdfgBuilder::new("nested_flip");
    b.symbol("N")
        .array("y", F64, "N")
        .array("A", F64, "N, N")
        .transient("z", F64, "N");
    let row = Layout {
        shape: vec![SymExpr::symbol("N")],
        strides: vec![SymExpr::int(1)],
        offset: SymExpr::int(0),
        total_size: SymExpr::symbol("N"),
    };
    b.container("row", DataDesc::view(F64, row));
    b.for_loop("outer", "k", "1", "N", 1, move |b| {
        b.state("flip", move |s| {
            let y = s.access("y");
            let z = s.access("z");
            let n = s.nested("flip", inner, &["src"], &["dst"], &[("M", "k")]);
            s.edge(y, None, n, Some("src"), "y[0:k]");
            s.edge(n, Some("dst"), z, None, "z[0:k]");
        });
        b.state("row_sum", |s| {
            let a = s.access("A");
            let row = s.access("row");
            let y = s.access("y");
            s.edge(a, None, row, Some(VIEW_CONNECTOR), "A[k, 0:N]");
            let (entry, exit) = s.map("row_sum", "j = 0:N", Schedule::Default);
            let t = s.tasklet(
                "acc",
                vec![f64c("r")],
                vec![f64c("o")],
                vec![Stmt::assign("o", v("r"))],
            );
            s.path(&[row, entry, t], None, Some("r"), "row[j]");
            s.path(&[t, exit, y], Some("o"), None, ("y[k]", Wcr::Sum));
        });
    });
    b.build()
}

/// What the offload pass produces for a scaling kernel: a device twin,
/// copies in and out, a kernel with a thread-block map staging through
/// shared memory and a register.
pub fn offloaded_scale() -> Result<Sdfg, BuildErrors> {
    let mut b = SdfgBuilder::new("offloaded_scale");
    b.symbol("N")
        .container(
            "x",
            DataDesc::array(F64, vec![SymExpr::symbol("N"), SymExpr::int(32)])
                .with_storage(Storage::HostPinned),
        )
        .container(
            "x_dev",
            DataDesc::array(F64, vec![SymExpr::symbol("N"), SymExpr::int(32)])
                .into_transient()
                .with_storage(Storage::DeviceGlobal),
        )
        .container(
            "tile",
            DataDesc::array(F64, vec![SymExpr::int(32)])
                .into_transient()
                .with_storage(Storage::DeviceShared)
                .with_lifetime(Lifetime::Scope),
        )
        .container(
            "tmp",
            DataDesc::scalar(F64)
                .into_transient()
                .with_storage(Storage::Register)
                .with_lifetime(Lifetime::Scope),
        );
    b.state("copy_in", |s| {
        let x = s.access("x");
        let xd = s.access("x_dev");
        let whole = Subset::full(&[SymExpr::symbol("N"), SymExpr::int(32)]);
        s.edge(
            x,
            None,
            xd,
            None,
            Memlet::new("x", whole.clone()).with_other_subset(whole),
        );
    });
    b.state("kernel", |s| {
        let xd_in = s.access("x_dev");
        let xd_out = s.access("x_dev");
        let tile = s.access("tile");
        let tmp = s.access("tmp");
        let (k_entry, k_exit) = s.map("scale", "b = 0:N", Schedule::DeviceKernel);
        let (t_entry, t_exit) = s.map("threads", "t = 0:32", Schedule::DeviceThreadBlock);
        s.path(&[xd_in, k_entry, tile], None, None, "x_dev[b, 0:32]");
        let load = s.tasklet(
            "load",
            vec![f64c("v")],
            vec![f64c("r")],
            vec![Stmt::assign("r", v("v"))],
        );
        let store = s.tasklet(
            "store",
            vec![f64c("r")],
            vec![f64c("o")],
            vec![Stmt::assign("o", v("r") * Expr::f64(2.0))],
        );
        s.path(&[tile, t_entry, load], None, Some("v"), "tile[t]");
        s.edge(load, Some("r"), tmp, None, "tmp[0]");
        s.edge(tmp, None, store, Some("r"), "tmp[0]");
        s.path(
            &[store, t_exit, k_exit, xd_out],
            Some("o"),
            None,
            "x_dev[b, t]",
        );
    });
    b.state("copy_out", |s| {
        let xd = s.access("x_dev");
        let x = s.access("x");
        s.edge(xd, None, x, None, "x_dev[0:N, 0:32]");
    });
    b.build()
}

/// CSR sparse matrix-vector product with data-dependent row bounds, then a
/// histogram of column indices through an indirect store.
pub fn spmv_indirect() -> Result<Sdfg, BuildErrors> {
    let mut b = SdfgBuilder::new("spmv_indirect");
    b.symbol("M")
        .symbol("N")
        .symbol("nnz")
        .local_symbol("row_start")
        .local_symbol("row_stop")
        .array("A_row", DType::UInt32, "M + 1")
        .array("A_col", DType::UInt32, "nnz")
        .array("A_val", F64, "nnz")
        .array("x", F64, "N")
        .array("y", F64, "M")
        .array("hist", F64, "N");
    b.for_loop("rows", "i", "0", "M", 1, |b| {
        b.state("bounds", |_| {})
            .assign("row_start", "A_row[i]")
            .assign("row_stop", "A_row[i + 1]");
        b.state("row", |s| {
            let val = s.access("A_val");
            let col = s.access("A_col");
            let x = s.access("x");
            let y = s.access("y");
            let (entry, exit) = s.map("row", "j = row_start:row_stop", Schedule::Default);
            let t = s.tasklet(
                "gather",
                vec![
                    f64c("a"),
                    Connector::scalar("c", DType::UInt32),
                    Connector::pointer("xs", F64),
                ],
                vec![f64c("o")],
                vec![Stmt::assign(
                    "o",
                    v("a") * Expr::load("xs", vec![Expr::cast(DType::Int64, v("c"))]),
                )],
            );
            s.path(&[val, entry, t], None, Some("a"), "A_val[j]");
            s.path(&[col, entry, t], None, Some("c"), "A_col[j]");
            s.path(
                &[x, entry, t],
                None,
                Some("xs"),
                Memlet::full("x", &[SymExpr::symbol("N")]).into_dynamic(),
            );
            s.path(&[t, exit, y], Some("o"), None, ("y[i]", Wcr::Sum));
        });
    });
    b.state("histogram", |s| {
        let col = s.access("A_col");
        let hist = s.access("hist");
        let (entry, exit) = s.map("histogram", "j = 0:nnz", Schedule::Default);
        let t = s.tasklet(
            "scatter",
            vec![Connector::scalar("c", DType::UInt32)],
            vec![Connector::pointer("h", F64)],
            vec![Stmt::Store {
                conn: "h".to_owned(),
                index: vec![Expr::cast(DType::Int64, v("c"))],
                value: Expr::f64(1.0),
            }],
        );
        s.path(&[col, entry, t], None, Some("c"), "A_col[j]");
        s.path(
            &[t, exit, hist],
            Some("h"),
            None,
            Memlet::full("hist", &[SymExpr::symbol("N")])
                .with_wcr(Wcr::Sum)
                .into_dynamic(),
        );
    });
    b.build()
}

/// Complex arithmetic, a CRC-style bitwise step, a host callback ordered by
/// an empty memlet, and the container kinds the offload pass must leave alone.
pub fn containers_and_callbacks() -> Result<Sdfg, BuildErrors> {
    let c128 = DType::Complex128;
    let mut b = SdfgBuilder::new("containers_and_callbacks");
    b.symbol("N")
        .array("z", c128, "N")
        .array("mag", F64, "N")
        .array("data", DType::UInt8, "N")
        .scalar("crc", DType::UInt16)
        .container(
            "events",
            DataDesc::stream(F64, vec![SymExpr::int(1)], SymExpr::int(0)).into_transient(),
        )
        .container(
            "params",
            DataDesc {
                kind: DataKind::Structure {
                    members: [
                        ("alpha".to_owned(), DataDesc::scalar(F64)),
                        (
                            "dims".to_owned(),
                            DataDesc::array(DType::Int64, vec![SymExpr::int(4)]),
                        ),
                    ]
                    .into_iter()
                    .collect(),
                },
                ..DataDesc::scalar(F64).into_transient()
            },
        )
        .container(
            "batches",
            DataDesc {
                kind: DataKind::ContainerArray {
                    shape: vec![SymExpr::int(2)],
                    element: Box::new(DataDesc::array(F64, vec![SymExpr::symbol("N")])),
                },
                ..DataDesc::scalar(F64).into_transient()
            },
        )
        .container(
            "cache",
            DataDesc::array(F64, vec![SymExpr::symbol("N")])
                .into_transient()
                .with_lifetime(Lifetime::Persistent),
        );
    b.state("complex", |s| {
        let z = s.access("z");
        let mag = s.access("mag");
        let (entry, exit) = s.map("magnitude", "i = 0:N", Schedule::Default);
        let zi = v("zi");
        let squared = zi.clone() * Expr::call(Intrinsic::Conj, vec![zi.clone()]);
        let t = s.tasklet(
            "magnitude",
            vec![Connector::scalar("zi", c128)],
            vec![f64c("m")],
            vec![
                Stmt::Let {
                    name: "r".to_owned(),
                    dtype: F64,
                    value: Expr::call(
                        Intrinsic::Sqrt,
                        vec![Expr::call(Intrinsic::Real, vec![squared])],
                    ),
                },
                Stmt::If {
                    cond: Expr::call(Intrinsic::IsNan, vec![v("r")]),
                    then: vec![Stmt::assign("m", Expr::f64(0.0))],
                    otherwise: vec![Stmt::assign(
                        "m",
                        Expr::select(
                            Expr::binary(BinaryOp::Gt, v("r"), Expr::f64(1.0)),
                            Expr::call(Intrinsic::Abs, vec![Expr::call(Intrinsic::Exp, vec![zi])]),
                            Expr::call(Intrinsic::Max, vec![v("r"), Expr::f64(f64::NEG_INFINITY)]),
                        ),
                    )],
                },
            ],
        );
        s.path(&[z, entry, t], None, Some("zi"), "z[i]");
        s.path(&[t, exit, mag], Some("m"), None, "mag[i]");
    });
    b.state("bits", |s| {
        let crc_in = s.access("crc");
        let data = s.access("data");
        let crc_out = s.access("crc");
        let u16 = DType::UInt16;
        let t = s.tasklet(
            "crc_step",
            vec![
                Connector::scalar("c", u16),
                Connector::scalar("d", DType::UInt8),
            ],
            vec![Connector::scalar("o", u16)],
            vec![Stmt::assign(
                "o",
                Expr::binary(
                    BinaryOp::BitAnd,
                    Expr::binary(
                        BinaryOp::Shl,
                        Expr::binary(BinaryOp::BitXor, v("c"), Expr::cast(u16, v("d"))),
                        Expr::Lit(Literal::UInt {
                            value: 1,
                            dtype: u16,
                        }),
                    ),
                    Expr::unary(
                        UnaryOp::BitNot,
                        Expr::Lit(Literal::UInt {
                            value: 0,
                            dtype: u16,
                        }),
                    ),
                ),
            )],
        );
        s.edge(crc_in, None, t, Some("c"), "crc[0]");
        s.edge(data, None, t, Some("d"), "data[0]");
        s.edge(t, Some("o"), crc_out, None, "crc[0]");
    });
    b.state("report", |s| {
        let mag = s.access("mag");
        let cache = s.access("cache");
        let cb = s.callback(
            "report",
            "print_magnitudes",
            vec![Connector::pointer("values", F64)],
            vec![],
        );
        s.edge(mag, None, cb, Some("values"), "mag");
        let after = s.tasklet(
            "after",
            vec![],
            vec![f64c("o")],
            vec![Stmt::assign("o", Expr::f64(1.0))],
        );
        s.empty_edge(cb, after);
        s.edge(after, Some("o"), cache, None, "cache[0]");
    });
    b.build()
}
