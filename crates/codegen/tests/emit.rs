//! Tests of the shared emitter, through both dialects.
//!
//! What is checked here is the structure of the emitted source (entry
//! point, kernels, launches, copies, checks); that it compiles is checked by
//! real compilers in the corpus (`cargo xtask corpus --backend hip|cuda`).

use sdfg_backend_cuda::Cuda;
use sdfg_backend_hip::Hip;
use sdfg_codegen::{Dialect, EmitError, emit};
use sdfg_passes::{Options, offload};

mod common;
use common::{STENCIL, emitted, program};

#[test]
fn one_kernel_per_device_map_launched_through_the_runtime() {
    let sdfg = program(STENCIL);
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let unit = emitted(&sdfg, d);
        let p = d.api_prefix();
        assert_eq!(unit.kernels.len(), 2, "{}", unit.source);
        assert_eq!(unit.file_name, format!("f.{}", d.source_extension()));
        for k in &unit.kernels {
            assert!(unit.source.contains(&format!("__global__ void {k}(")));
            // Launched typed, through the one launch macro, and checked.
            assert!(
                unit.source
                    .contains(&format!("SDFG_KERNEL({k}, sdfg_grid, sdfg_block, 0, "))
            );
        }
        assert!(
            !unit.source.contains("<<<"),
            "launches go through the runtime API"
        );
        assert!(
            unit.source
                .contains(&format!("#include <{}>", d.runtime_header()))
        );
        // The entry point takes the arguments in order, containers as pointers.
        let entry = unit
            .source
            .lines()
            .find(|l| l.starts_with("extern \"C\" int f("))
            .unwrap();
        let params: Vec<String> = sdfg
            .arguments
            .iter()
            .map(|a| match sdfg.containers.get(a) {
                Some(_) => format!("double* {a}"),
                None => format!("int64_t {a}"),
            })
            .collect();
        assert_eq!(
            entry,
            format!("extern \"C\" int f({}) {{", params.join(", "))
        );
        // Twins are allocated once, by init (not in the body that holds
        // the time loop), and freed by exit.
        let malloc = format!("{p}Malloc((void**)&sdfg_h->dev_A");
        let setup = unit.source.find("static int f_setup(").unwrap();
        let body = unit.source.find("static int f_body(").unwrap();
        let at = unit.source.find(&malloc).unwrap();
        assert!(setup < at && at < body, "{}", unit.source);
        let loop_at = unit.source.find("for (t = ").unwrap();
        assert!(body < loop_at);
        assert!(unit.source.contains(&format!(
            "if (sdfg_h->dev_A) SDFG_RELEASE({p}Free(sdfg_h->dev_A));"
        )));
        // Copies in before the loop, out after it, then a synchronization.
        let h2d = unit.source.find(&format!("{p}MemcpyHostToDevice")).unwrap();
        let d2h = unit
            .source
            .rfind(&format!("{p}MemcpyDeviceToHost"))
            .unwrap();
        assert!(h2d < loop_at && loop_at < d2h);
        // The host waits for the copies back through an event.
        let after = &unit.source[d2h..];
        let record = after
            .find(&format!("SDFG_CHECK({p}EventRecord(sdfg_copied, stream));"))
            .unwrap();
        assert!(
            after[record..].contains(&format!("SDFG_CHECK({p}EventSynchronize(sdfg_copied));"))
        );
        assert!(unit.source.contains(&format!(
            "{p}EventCreateWithFlags(&sdfg_h->sdfg_copied, {p}EventDisableTiming)"
        )));
        // Released by exit, the release checked too.
        assert!(unit.source.contains(&format!(
            "SDFG_RELEASE({p}EventDestroy(sdfg_h->sdfg_copied));"
        )));
        // Every runtime call is checked.
        for line in unit.source.lines() {
            let call = format!("{p}Memcpy");
            if line.contains(&call) && !line.contains("SDFG_CHECK") && !line.contains("Kind") {
                panic!("unchecked runtime call: {line}");
            }
        }
    }
}

#[test]
fn the_dialects_differ_only_in_names() {
    let sdfg = program(STENCIL);
    let cuda = emitted(&sdfg, &Cuda).source;
    let hip = emitted(&sdfg, &Hip).source;
    let normalize = |s: &str, prefix: &str, header: &str, ext: &str| {
        // The shuffle's spelling is the one other difference.
        let s: String = s
            .lines()
            .filter(|l| !l.starts_with("#define SDFG_SHFL_DOWN"))
            .map(|l| format!("{l}\n"))
            .collect();
        s.replace(&format!("// {ext} for"), "// SOURCE for")
            .replace(header, "RUNTIME")
            .replace(prefix, "API")
            .replace("`cuda` accelerator", "`ACC` accelerator")
            .replace("`hip` accelerator", "`ACC` accelerator")
    };
    let a = normalize(&cuda, "cuda", "cuda_runtime.h", "cu");
    let b = normalize(&hip, "hip", "hip/hip_runtime.h", "hip");
    // Block shapes differ (warp 32 vs wavefront 64) only for 2-D maps; the
    // stencil's maps are 1-D, so the sources agree once names are aligned.
    assert_eq!(a, b);
}

#[test]
fn write_conflicts_on_the_device_become_atomics_and_on_the_host_read_modify_writes() {
    use sdfg_ir::builder::SdfgBuilder;
    use sdfg_ir::code::{Expr, Stmt};
    use sdfg_ir::{Connector, DType, Schedule, Wcr};
    let mut b = SdfgBuilder::new("reduce");
    b.symbol("N")
        .array("x", DType::Float64, "N")
        .array("s", DType::Float64, "1")
        .array("m", DType::Int64, "1");
    b.state("sum", |st| {
        let x = st.access("x");
        let s = st.access("s");
        st.mapped_tasklet(
            "sum",
            "i = 0:N",
            Schedule::Default,
            vec![(x, Connector::scalar("a", DType::Float64), "x[i]")],
            vec![Stmt::assign("o", Expr::var("a"))],
            vec![(
                Connector::scalar("o", DType::Float64),
                s,
                ("s[0]", Wcr::Sum),
            )],
        );
    });
    b.state("max", |st| {
        let m = st.access("m");
        st.mapped_tasklet(
            "top",
            "i = 0:N",
            Schedule::Default,
            vec![],
            vec![Stmt::assign("o", Expr::var("i"))],
            vec![(Connector::scalar("o", DType::Int64), m, ("m[0]", Wcr::Max))],
        );
    });
    let sdfg = b.build().unwrap();
    let unit = emitted(&sdfg, &Cuda);
    assert!(
        unit.source.contains("sdfg::atomic_sum(&dev_s["),
        "{}",
        unit.source
    );
    assert!(
        unit.source.contains("sdfg::atomic_max(&dev_m["),
        "{}",
        unit.source
    );
    // Without offloading, the maps are host loops and the writes plain
    // read-modify-writes.
    let host = emit(&sdfg, &Cuda).unwrap();
    assert!(host.kernels.is_empty());
    assert!(
        host.source
            .contains("s[(0LL) + (0LL) * (1LL)] = s[(0LL) + (0LL) * (1LL)] + t_o;"),
        "{}",
        host.source
    );
    assert!(
        host.source.contains("= sdfg::maximum(m["),
        "{}",
        host.source
    );
}

#[test]
fn indirect_updates_through_pointers_are_atomic_on_the_device_only() {
    // `hist[b] += w` in a map is a store through a pointer connector whose
    // memlet has a sum resolution: an atomic in a kernel, a
    // read-modify-write on the host (control: a plain indirect store).
    let sdfg = program(
        "import dace as dc\nN = dc.symbol('N')\nK = dc.symbol('K')\n\n@dc.program\ndef f(b: dc.int64[N], w: dc.float64[N], hist: dc.float64[K], out: dc.float64[K]):\n    for i in dc.map[0:N]:\n        hist[b[i]] += w[i]\n    out[b] = w\n",
    );
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let unit = emitted(&sdfg, d);
        assert!(
            unit.source.contains("sdfg::atomic_sum(&t___out["),
            "{}",
            unit.source
        );
        assert!(
            unit.source.contains("  t___out[") && unit.source.contains("] = t___in"),
            "{}",
            unit.source
        );
    }
    let host = emit(&sdfg, &Cuda).unwrap();
    assert!(
        !host.source.contains("sdfg::atomic_sum(&t___out["),
        "{}",
        host.source
    );
    assert!(host.source.contains("] = t___out["), "{}", host.source);
}

#[test]
fn a_library_node_is_refused_naming_node_and_state() {
    let src = "import dace as dc\nimport numpy as np\nN = dc.symbol('N')\n\n@dc.program\ndef f(A: dc.float64[N, N], B: dc.float64[N, N], C: dc.float64[N, N]):\n    C[:] = A @ B\n";
    let sdfg = program(src);
    let (out, _) = offload(&sdfg, &Hip, &Options::default()).unwrap();
    match emit(&out, &Hip) {
        Err(EmitError::Unsupported { what, node, state }) => {
            assert!(what.contains("library node"), "{what}");
            assert!(!node.is_empty() && !state.is_empty());
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn an_invalid_sdfg_is_refused() {
    let mut sdfg = program(STENCIL);
    sdfg.arguments.push("missing".to_owned());
    assert!(matches!(emit(&sdfg, &Cuda), Err(EmitError::Invalid(_))));
}

#[test]
fn the_registry_finds_every_linked_target_by_name() {
    let names: Vec<&str> = sdfg_codegen::targets().iter().map(|t| t.name).collect();
    assert_eq!(names, ["cuda", "hip"]);
    assert_eq!(
        sdfg_codegen::target("hip").map(|t| t.dialect.warp_size()),
        Some(64)
    );
    assert_eq!(
        sdfg_codegen::target("cuda").map(|t| t.dialect.warp_size()),
        Some(32)
    );
    assert!(sdfg_codegen::target("opencl").is_none());
}

#[test]
fn a_thread_block_map_shares_its_iterations_among_the_threads_of_a_block() {
    // The hand-offloaded example: a kernel over rows, a thread-block map
    // over a 32-element tile in shared memory, a register.
    let sdfg = sdfg_ir::examples::offloaded_scale().unwrap();
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let unit = emit(&sdfg, d).unwrap();
        let src = &unit.source;
        assert_eq!(unit.kernels.len(), 1, "{src}");
        assert!(src.contains("__shared__ double tile_s[32];"), "{src}");
        assert!(src.contains("(int64_t)blockIdx.x"), "{src}");
        assert!(src.contains("sdfg_t += blockDim.x"), "{src}");
        assert!(src.contains("__syncthreads();"), "{src}");
    }
}

#[test]
fn maps_of_more_than_three_dimensions_fold_their_outer_dimensions_into_z() {
    let src = "import dace as dc\nN = dc.symbol('N')\n\n@dc.program\ndef f(A: dc.float64[N, N, N, N]):\n    for i, j, k, l in dc.map[0:N, 0:N, 0:N, 0:N]:\n        A[i, j, k, l] = A[i, j, k, l] + 1.0\n";
    let sdfg = program(src);
    let unit = emitted(&sdfg, &Hip);
    assert_eq!(unit.kernels.len(), 1, "{}", unit.source);
    // The generated part, after the prelude (which has kernels of its own).
    let after_prelude = |src: &str| {
        let at = src.find("end of the sdfg prelude").unwrap();
        src[at..].to_owned()
    };
    let s = &after_prelude(&unit.source);
    // The innermost two dimensions are x and y; the outer two one index
    // over z (a grid-stride loop), decoded with one division.
    assert!(
        s.contains(
            "for (int64_t sdfg_t = (int64_t)blockIdx.z * blockDim.z + threadIdx.z; sdfg_t < (N) * (N); sdfg_t += (int64_t)gridDim.z * blockDim.z)"
        ),
        "{s}"
    );
    assert!(s.contains("int64_t sdfg_rest = sdfg_t;"), "{s}");
    assert_eq!(s.matches("sdfg_rest /= ").count(), 1, "{s}");
    assert!(s.contains("for (int64_t k_i = (int64_t)blockIdx.y"), "{s}");
    assert!(s.contains("for (int64_t l_i = (int64_t)blockIdx.x"), "{s}");
    // The launch covers the three axes.
    assert!(s.contains("dim3 sdfg_grid("), "{s}");
    assert_eq!(
        s.lines()
            .find(|l| l.contains("dim3 sdfg_grid("))
            .unwrap()
            .matches("sdfg::imin(")
            .count(),
        3,
        "{s}"
    );
    // A three-dimensional map uses x, y and z instead.
    let src3 = "import dace as dc\nN = dc.symbol('N')\n\n@dc.program\ndef f(A: dc.float64[N, N, N]):\n    for i, j, k in dc.map[0:N, 0:N, 0:N]:\n        A[i, j, k] = A[i, j, k] + 1.0\n";
    let s3 = after_prelude(&emitted(&program(src3), &Hip).source);
    for axis in ["x", "y", "z"] {
        assert!(
            s3.contains(&format!("blockIdx.{axis} * blockDim.{axis}")),
            "{s3}"
        );
    }
    assert!(!s3.contains("sdfg_rest"), "{s3}");
}

#[test]
fn device_wide_products_become_blas_calls_on_the_stream() {
    let src = "import dace as dc\nimport numpy as np\nN = dc.symbol('N')\nM = dc.symbol('M')\n\n@dc.program\ndef f(A: dc.float64[N, M], B: dc.float64[M, N], C: dc.float64[N, N], x: dc.float64[M], y: dc.float64[N]):\n    C[:] = A @ B\n    y[:] = A @ x\n";
    let sdfg = program(src);
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let s = emitted(&sdfg, d).source;
        let b = d.blas();
        let (p, c) = (b.prefix, b.constants);
        assert!(s.contains(&format!("#include <{}>", b.header)), "{s}");
        assert!(
            s.contains(&format!("SDFG_BLAS_CHECK({p}Create(&sdfg_h->sdfg_blas));")),
            "{s}"
        );
        assert!(
            s.contains(&format!(
                "SDFG_BLAS_CHECK({p}SetStream(sdfg_h->sdfg_blas, sdfg_h->stream));"
            )),
            "{s}"
        );
        assert!(
            s.contains(&format!(
                "sdfg_h->sdfg_blas && {p}Destroy(sdfg_h->sdfg_blas) != {c}_STATUS_SUCCESS"
            )),
            "{s}"
        );
        // C = A B as C^T = B^T A^T: m = N (columns of C), n = N, k = M, B first.
        assert!(
            s.contains(&format!(
                "{p}Dgemm(sdfg_blas, {c}_OP_N, {c}_OP_N, (int)((N)), (int)((N)), (int)((M)), &sdfg_alpha, dev_B"
            )),
            "{s}"
        );
        // y = A x: the row-major A is the column-major A^T, transposed back.
        assert!(
            s.contains(&format!(
                "{p}Dgemv(sdfg_blas, {c}_OP_T, (int)((M)), (int)((N)), &sdfg_alpha, dev_A"
            )),
            "{s}"
        );
    }
}

#[test]
fn a_device_wide_solve_factors_a_copy_and_solves_column_major_right_hand_sides() {
    // Complex, against a matrix (transposed to column-major and back) and a
    // vector (column-major already).
    let src = "import dace as dc\nimport numpy as np\nN = dc.symbol('N')\nM = dc.symbol('M')\n\n@dc.program\ndef f(A: dc.complex128[N, N], B: dc.complex128[N, M], X: dc.complex128[N, M], b: dc.float64[N], x: dc.float64[N], R: dc.float64[N, N]):\n    X[:] = np.linalg.solve(A, B)\n    x[:] = np.linalg.solve(R, b)\n";
    let sdfg = program(src);
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let s = emitted(&sdfg, d).source;
        let sv = d.solver();
        let p = sv.prefix;
        let z = sv.complex[1];
        // Row-major A is column-major A^T: solve with the transpose.
        assert!(
            s.contains(&format!(
                "{p}Zgetrf(sdfg_solver, (int)sdfg_n, (int)sdfg_n, ({z}*)sdfg_lu"
            )),
            "{s}"
        );
        assert!(
            s.contains(&format!("{p}Zgetrs(sdfg_solver, {}, ", sv.transpose)),
            "{s}"
        );
        assert!(
            s.contains(&format!("{p}Dgetrs(sdfg_solver, {}, ", sv.transpose)),
            "{s}"
        );
        // The matrix right-hand sides go through the transpose kernel twice,
        // the vector's through none (only solves use that kernel).
        let calls: Vec<&str> = s.split("One workspace").skip(1).collect();
        assert_eq!(calls.len(), 2, "{s}");
        for call in calls {
            let transposes = call.matches("sdfg::transpose<").count();
            let complex = call.contains(&format!("{p}Zgetrs("));
            assert_eq!(transposes, if complex { 2 } else { 0 }, "{call}");
        }
    }
}

#[test]
fn a_device_wide_cholesky_becomes_a_solver_call_on_a_copy_then_zeroes_the_other_triangle() {
    let src = "import dace as dc\nimport numpy as np\nN = dc.symbol('N')\n\n@dc.program\ndef f(A: dc.float64[N, N], L: dc.float64[N, N]):\n    L[:] = np.linalg.cholesky(A)\n";
    let sdfg = program(src);
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let s = emitted(&sdfg, d).source;
        let sv = d.solver();
        let p = sv.prefix;
        assert!(s.contains(&format!("#include <{}>", sv.header)), "{s}");
        assert!(
            s.contains(&format!(
                "SDFG_SOLVER_CHECK({p}SetStream(sdfg_h->sdfg_solver, sdfg_h->stream));"
            )),
            "{s}"
        );
        // Row-major lower L is column-major upper: the upper fill mode.
        assert!(
            s.contains(&format!(
                "{p}Dpotrf(sdfg_solver, {}, (int)sdfg_n, sdfg_b, (int)sdfg::imax(1, sdfg_ldb)",
                sv.fill[0]
            )),
            "{s}"
        );
        let copy = s.find("if (sdfg_b != sdfg_a").unwrap();
        let potrf = s.find(&format!("{p}Dpotrf(")).unwrap();
        let zero = s.find("sdfg::zero_triangle<double>").unwrap();
        assert!(copy < potrf && potrf < zero, "{s}");
        // Its info is noted as call site 1; run reads the note once at the
        // end and returns the factorization's status.
        let noted = s
            .find(
                "SDFG_KERNEL(sdfg::note_failure, dim3(1), dim3(1), 0, sdfg_info, sdfg_failed, 1);",
            )
            .unwrap();
        assert!(potrf < noted && noted < zero, "{s}");
        assert!(
            s.contains("the Cholesky factorization (potrf) of `dev_A` (node `cholesky`) failed: the matrix is not positive definite"),
            "{s}"
        );
        assert!(s.contains("return 2;\n  }"), "{s}");
        assert!(
            s.contains(&format!(
                "sdfg_h->sdfg_solver && {p}Destroy(sdfg_h->sdfg_solver) != {}",
                sv.success
            )),
            "{s}"
        );
    }
}

#[test]
fn the_entry_points_are_init_run_exit_and_their_one_shot_and_packed_forms() {
    let src = "import dace as dc\nN = dc.symbol('N')\n\n@dc.program\ndef f(A: dc.float64[N], s: dc.float64):\n    return A * s, A + s\n";
    let sdfg = program(src);
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let u = emitted(&sdfg, d);
        // Arguments in order, then the return values in number order.
        let order: Vec<(&str, sdfg_codegen::ParameterKind)> = u
            .parameters
            .iter()
            .map(|p| (p.name.as_str(), p.kind))
            .collect();
        use sdfg_codegen::ParameterKind::{Container, Return, Symbol};
        use sdfg_ir::DType::{Float64, Int64};
        assert_eq!(
            order,
            [
                ("A", Container(Float64)),
                ("s", Container(Float64)),
                ("N", Symbol(Int64)),
                ("__return_0", Return(Float64)),
                ("__return_1", Return(Float64)),
            ]
        );
        assert_eq!(u.init_symbols().count(), 1);
        let s = &u.source;
        let params = "double* A, double* s, int64_t N, double* v__return_0, double* v__return_1";
        for entry in [
            "struct f_state_t {".to_owned(),
            "extern \"C\" f_state_t* f_init(int64_t N) {".to_owned(),
            format!("extern \"C\" int f_run(f_state_t* sdfg_h, {params}) {{"),
            "extern \"C\" int f_exit(f_state_t* sdfg_h) {".to_owned(),
            format!("extern \"C\" int f({params}) {{"),
            "extern \"C\" f_state_t* f_init_packed(void* const* sdfg_args) {".to_owned(),
            "extern \"C\" int f_run_packed(f_state_t* sdfg_h, void* const* sdfg_args) {".to_owned(),
        ] {
            assert!(s.contains(&entry), "{entry}\n{s}");
        }
        // The one-shot entry is the three in a row; a failed setup is
        // released by exit; run refuses symbols init was not given.
        assert!(s.contains("f_state_t* sdfg_h = f_init(N);\n  if (!sdfg_h) return 1;\n  int status = f_run(sdfg_h, A, s, N, v__return_0, v__return_1);\n  int released = f_exit(sdfg_h);"), "{s}");
        assert!(
            s.contains("if (f_setup(sdfg_h) != 0) { f_exit(sdfg_h); return nullptr; }"),
            "{s}"
        );
        assert!(s.contains("if (N != sdfg_h->N) {"), "{s}");
        assert!(s.contains("return 3; }"), "{s}");
        // Returned values are the caller's: never allocated or freed here.
        assert!(!s.contains("sdfg_h->v__return"), "{s}");
        assert!(!s.contains("free(v__return"), "{s}");
    }
}

#[test]
fn a_return_value_whose_shape_depends_on_data_is_refused_by_name() {
    use sdfg_ir::builder::SdfgBuilder;
    use sdfg_ir::code::{Expr, Stmt};
    use sdfg_ir::{Connector, DType, Schedule};
    // `k` is no argument: it is assigned while the program runs, so the
    // caller cannot know how large `__return` is.
    let mut b = SdfgBuilder::new("f");
    b.symbol("N")
        .local_symbol("k")
        .array("x", DType::Float64, "N");
    b.transient("__return", DType::Int64, "k");
    b.state("start", |_| {});
    b.assign("k", "N");
    b.state("fill", |st| {
        let r = st.access("__return");
        st.mapped_tasklet(
            "fill",
            "i = 0:k",
            Schedule::Default,
            vec![],
            vec![Stmt::assign("o", Expr::var("i"))],
            vec![(Connector::scalar("o", DType::Int64), r, "__return[i]")],
        );
    });
    let sdfg = b.build().unwrap();
    match emit(&sdfg, &Cuda) {
        Err(EmitError::Unsupported { what, node, .. }) => {
            assert_eq!(node, "__return");
            assert!(what.contains("depends on `k`"), "{what}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn vendor_calls_on_empty_matrices_are_skipped_and_leading_dimensions_are_at_least_one() {
    let src = "import dace as dc\nimport numpy as np\nN = dc.symbol('N')\nM = dc.symbol('M')\n\n@dc.program\ndef f(A: dc.float64[N, M], B: dc.float64[M, N], C: dc.float64[N, N], x: dc.float64[M], y: dc.float64[N]):\n    C[:] = A @ B\n    y[:] = A @ x\n";
    let sdfg = program(src);
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let s = emitted(&sdfg, d).source;
        let p = d.blas().prefix;
        // GEMM: no call for an empty C; an empty inner dimension is a call.
        assert!(
            s.contains(&format!(
                "if ((N) > 0 && (N) > 0) SDFG_BLAS_CHECK({p}Dgemm("
            )),
            "{s}"
        );
        assert!(s.contains("(int)sdfg::imax(1, (M))"), "{s}");
        // GEMV: an empty A is no call, and y = beta y is a prelude kernel.
        assert!(s.contains("if ((M) > 0 && (N) > 0) {"), "{s}");
        assert!(
            s.contains("SDFG_KERNEL(sdfg::scale<double>, sdfg_grid, sdfg_block, 0, sdfg_y, sdfg_len, sdfg_inc, sdfg_beta);"),
            "{s}"
        );
    }
}

#[test]
fn grids_are_clamped_to_the_accelerators_limits_and_kernels_stride_over_the_rest() {
    let src = "import dace as dc\nN = dc.symbol('N')\n\n@dc.program\ndef f(A: dc.float64[N, N, N]):\n    for i, j, k in dc.map[0:N, 0:N, 0:N]:\n        A[i, j, k] = A[i, j, k] + 1.0\n";
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let s = emitted(&program(src), d).source;
        let [x, y, z] = d.max_grid();
        for limit in [x, y, z] {
            assert!(s.contains(&format!("), {limit}LL)")), "{limit}: {s}");
        }
        for axis in ["x", "y", "z"] {
            assert!(
                s.contains(&format!("+= (int64_t)gridDim.{axis} * blockDim.{axis}) {{")),
                "{s}"
            );
        }
    }
}

#[test]
fn grow_only_buffers_are_reset_before_they_are_released() {
    // `tmp` is sized by `i`, which changes in the loop: a grow-only buffer.
    let src = "import dace as dc\nN = dc.symbol('N')\n\n@dc.program\ndef f(A: dc.float64[N, N], s: dc.float64[N]):\n    for i in range(1, N):\n        s[i] = np.sum(A[i, :i] * 2.0)\n";
    let src = src.replace("import dace as dc", "import dace as dc\nimport numpy as np");
    let s = emitted(&program(&src), &Cuda).source;
    let grow = s.find("* sdfg_old = ").expect("a grow-only buffer");
    let after = &s[grow..];
    let reset = after.find(" = nullptr;").unwrap();
    let free = after
        .find("if (sdfg_old) SDFG_CHECK(cudaFree(sdfg_old));")
        .unwrap();
    let malloc = after.find("SDFG_CHECK(cudaMalloc(").unwrap();
    assert!(reset < free && free < malloc, "{after}");
}

#[test]
fn a_reshape_is_one_copy_whatever_the_two_shapes() {
    // `(N, M)` into `(N * M,)` and back as `(M, N)`: each side coalesces
    // on its own into one run of `M * N` elements, one call each, no
    // kernel.
    let mut sdfg = program(
        "import dace as dc\nimport numpy as np\nN = dc.symbol('N')\nM = dc.symbol('M')\n\n@dc.program\ndef f(A: dc.float64[N, M], B: dc.float64[N * M], C: dc.float64[M, N]):\n    B[:] = np.reshape(A, (N * M,))\n    C[:] = np.reshape(B, (M, N))\n",
    );
    assert_eq!(sdfg_passes::copies::maps_to_copies(&mut sdfg).len(), 2);
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let unit = emitted(&sdfg, d);
        let p = d.api_prefix();
        let copies: Vec<&str> = unit
            .source
            .lines()
            .filter(|l| l.contains(&format!("{p}MemcpyAsync(")) && l.contains("DeviceToDevice"))
            .collect();
        assert_eq!(copies.len(), 2, "{}", unit.source);
        assert!(
            copies
                .iter()
                .all(|l| l.contains("sizeof(double) * (M * N)")),
            "{copies:?}"
        );
        let launches = unit
            .source
            .lines()
            .filter(|l| l.trim_start().starts_with("SDFG_KERNEL("))
            .count();
        assert_eq!(launches, 0, "{}", unit.source);
    }
}

#[test]
fn a_whole_array_of_any_rank_moves_in_one_copy() {
    // Contiguity is decided on the canonical symbolic strides: `A[N, M, K]`
    // in and out is one `MemcpyAsync` each way, not rows or planes.
    let sdfg = program(
        "import dace as dc\nN = dc.symbol('N')\nM = dc.symbol('M')\nK = dc.symbol('K')\n\n@dc.program\ndef f(A: dc.float64[N, M, K], B: dc.float64[N, M]):\n    A[:] = A * 2.0\n    B[:] = B + 1.0\n",
    );
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let unit = emitted(&sdfg, d);
        let p = d.api_prefix();
        let whole = |x: &str, kind: &str| {
            unit.source
                .lines()
                .filter(|l| l.contains(&format!("{p}MemcpyAsync(")) && l.contains(kind))
                .filter(|l| l.contains(&format!(" {x} +")) || l.contains(&format!("({x} +")))
                .count()
        };
        assert!(!unit.source.contains("Memcpy2DAsync("), "{}", unit.source);
        assert_eq!(whole("A", "HostToDevice"), 1, "{}", unit.source);
        assert_eq!(whole("A", "DeviceToHost"), 1, "{}", unit.source);
        assert_eq!(whole("B", "HostToDevice"), 1, "{}", unit.source);
        assert!(
            unit.source.contains("sizeof(double) * (K * M * N)"),
            "{}",
            unit.source
        );
    }
}

#[test]
fn blocks_fit_constant_extents_and_scalars_go_by_value() {
    // A map over (N, 3), one over 5 points, one over N, and a scalar the
    // kernels only read.
    let sdfg = program(
        "import dace as dc\nN = dc.symbol('N')\n\n@dc.program\ndef f(A: dc.float64[N, 3], B: dc.float64[5], C: dc.float64[N], s: dc.float64):\n    A[:] = A * s\n    B[:] = B + s\n    C[:] = C + 1.0\n",
    );
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let unit = emitted(&sdfg, d);
        let blocks: Vec<&str> = unit
            .source
            .lines()
            .filter_map(|l| l.trim().strip_prefix("dim3 sdfg_block("))
            .collect();
        // Three of the 2-D map's x lanes in 4, 5 points in 8 threads, and the
        // default width where the extent is not known.
        assert_eq!(blocks, ["4, 64);", "8);", "256);"], "{}", unit.source);
        // `s` reaches the kernels as a value: no device copy of it.
        assert!(
            unit.source.contains("double sdfg_value_s"),
            "{}",
            unit.source
        );
        assert!(unit.source.contains(", s[0]"), "{}", unit.source);
        assert!(!unit.source.contains("dev_s"), "{}", unit.source);
    }
}

#[test]
fn device_reductions_give_each_output_a_block_that_combines_its_threads_partials() {
    // A full sum, a row maximum (the innermost axis), a column sum (the
    // outer axis: a thread per output reads consecutive elements already),
    // and an integer row minimum of a short constant row (a thread each).
    let sdfg = program(
        "import dace as dc\nimport numpy as np\nN = dc.symbol('N')\nM = dc.symbol('M')\n\n@dc.program\ndef f(A: dc.float64[N, M], I: dc.int32[N, 4], s: dc.float64[1], r: dc.float64[N], c: dc.float64[M], m: dc.int32[N]):\n    s[0] = np.sum(A)\n    r[:] = np.max(A, axis=1)\n    c[:] = np.sum(A, axis=0)\n    m[:] = np.min(I, axis=1)\n",
    );
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let unit = emitted(&sdfg, d);
        let src = &unit.source;
        let at = src.find("end of the sdfg prelude").unwrap();
        let s = &src[at..];
        assert_eq!(
            s.matches("sdfg::block_reduce<sdfg::op_sum<double>>")
                .count(),
            1,
            "{s}"
        );
        assert_eq!(
            s.matches("sdfg::block_reduce<sdfg::op_max<double>>")
                .count(),
            1,
            "{s}"
        );
        assert_eq!(s.matches("sdfg::block_reduce").count(), 2, "{s}");
        // The block's threads share the reduced elements, each partial
        // starting from the identity; one thread stores each output.
        assert!(s.contains("sdfg_t += blockDim.x"), "{s}");
        assert!(s.contains("= ((double)-INFINITY);"), "{s}");
        assert!(
            s.contains("if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0)"),
            "{s}"
        );
        // Reductions of symbolic length: blocks of the default width.
        assert!(s.matches("dim3 sdfg_block(256);").count() >= 2, "{s}");
        assert!(
            src.contains(&format!(
                "#define SDFG_SHFL_DOWN(v, d) {}",
                d.shuffle_down()
            )),
            "{src}"
        );
    }
}

/// A `while` loop whose test reads the length a compaction on the device
/// computes: the offload pass makes it one persistent kernel.
const COMPACT: &str = "import dace as dc\nN = dc.symbol('N')\n\n@dc.program\ndef f(A: dc.float64[N], K: dc.int64[1]):\n    length = N\n    k = 0\n    while length > 0:\n        A[:length] = A[:length] * 0.5\n        count = 0\n        for j in range(length):\n            if A[j] > 0.02:\n                A[count] = A[j]\n                count += 1\n        length = count\n        k += 1\n    K[0] = k\n";

#[test]
fn a_persistent_kernel_is_launched_cooperatively_and_its_states_end_at_grid_barriers() {
    let sdfg = program(COMPACT);
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let unit = emitted(&sdfg, d);
        let src = &unit.source;
        assert_eq!(unit.kernels.len(), 1, "{src}");
        let name = &unit.kernels[0];
        assert!(src.contains(&format!("#include <{}>", d.cooperative_groups_header())));
        // Sized by the occupancy API to what is resident at once, and
        // launched cooperatively.
        let p = d.api_prefix();
        for call in [
            format!("{p}GetDevice(&sdfg_device)"),
            format!(
                "{p}DeviceGetAttribute(&sdfg_units, {}, sdfg_device)",
                d.multiprocessor_count_attribute()
            ),
            format!(
                "{p}OccupancyMaxActiveBlocksPerMultiprocessor(&sdfg_resident, (const void*){name}, 256, 0)"
            ),
            format!("SDFG_COOPERATIVE_KERNEL({name}, sdfg_grid, sdfg_block, 0"),
            format!("return {p}LaunchCooperativeKernel("),
        ] {
            assert!(src.contains(&call), "no `{call}` in:\n{src}");
        }
        let at = src.find(&format!("__global__ void {name}(")).unwrap();
        let body = &src[at..at + src[at..].find("\n}\n").unwrap()];
        // Every thread runs the loop; the shared map strides over the
        // grid, the compaction runs on the first thread, and each state
        // ends at a grid-wide barrier.
        assert!(
            body.contains("while_") || body.contains("for (; "),
            "{body}"
        );
        assert!(
            body.contains("for (int64_t sdfg_g = sdfg_rank; sdfg_g < sdfg::imax(0, (length)); sdfg_g += sdfg_threads)"),
            "{body}"
        );
        assert!(body.contains("if (sdfg_rank == 0) {"), "{body}");
        assert!(body.matches("SDFG_GRID_SYNC();").count() >= 3, "{body}");
        // Its threads read what others wrote before a barrier: no
        // `__restrict__` pointers.
        assert!(
            !body.lines().next().unwrap().contains("__restrict__"),
            "{body}"
        );
    }
}

/// crc16's shape: sequential scalar code on data the host holds, which no
/// copy ever touches.
const HOST_LOOP: &str = "import dace as dc\nN = dc.symbol('N')\n\n@dc.program\ndef f(data: dc.uint8[N], out: dc.int64[1]):\n    s = 0\n    for i in range(N):\n        if data[i] > 100:\n            s = s + 1\n    out[0] = s\n";

#[test]
fn host_code_waits_for_the_stream_only_where_it_touches_pinned_memory() {
    let sdfg = program(HOST_LOOP);
    for d in [&Cuda as &dyn Dialect, &Hip] {
        let sync = format!("{}StreamSynchronize(stream)", d.api_prefix());
        let src = emitted(&sdfg, d).source;
        // Only the exit waits: no copy is ever queued.
        let host = &src[src.find("end of the sdfg prelude").unwrap()..];
        assert_eq!(host.matches(&sync).count(), 1, "{host}");
        // The same code on pinned memory, which copies read and write
        // asynchronously: each state of it waits first.
        let (mut out, _) = offload(&sdfg, d, &Options::default()).unwrap();
        out.containers.get_mut("data").unwrap().storage = sdfg_ir::Storage::HostPinned;
        let pinned = emit(&out, d).unwrap().source;
        let host = &pinned[pinned.find("end of the sdfg prelude").unwrap()..];
        assert!(host.matches(&sync).count() > 1, "{host}");
    }
}

#[test]
fn minimum_and_maximum_reading_symbols_convert_to_the_result_type() {
    // DaCe's nussinov: `max(t, u + w)` with `t` an int32 symbol: the type
    // checker types symbols in code as int64, the unit declares `t` as
    // int32, and the prelude's `maximum` takes one type. The emitted call
    // converts to the type the checker decided.
    use sdfg_ir::builder::SdfgBuilder;
    use sdfg_ir::code::{Expr, Intrinsic, Stmt};
    use sdfg_ir::{Connector, DType, Schedule};
    let mut b = SdfgBuilder::new("mixed");
    b.symbol("N")
        .array("a", DType::Int64, "N")
        .array("c", DType::Int64, "N");
    b.state("s", |st| {
        let a = st.access("a");
        let c = st.access("c");
        st.mapped_tasklet(
            "top",
            "i = 0:N",
            Schedule::Default,
            vec![(a, Connector::scalar("x", DType::Int64), "a[i]")],
            vec![Stmt::assign(
                "o",
                Expr::Call {
                    func: Intrinsic::Max,
                    args: vec![Expr::var("x"), Expr::var("i")],
                },
            )],
            vec![(Connector::scalar("o", DType::Int64), c, "c[i]")],
        );
    });
    let mut sdfg = b.build().unwrap();
    sdfg.symbols.insert("N".into(), DType::Int32);
    let unit = emitted(&sdfg, &Cuda);
    // `i`, the map's parameter, is a symbol too.
    assert!(
        unit.source
            .contains("sdfg::maximum(t_x, sdfg::cast<int64_t, int64_t>(i))"),
        "{}",
        unit.source
    );
}

#[test]
fn units_list_the_vendor_libraries_they_call() {
    use sdfg_codegen::VendorLibrary;
    let gemm = program(
        "import dace as dc\nN = dc.symbol('N')\n\n@dc.program\ndef f(A: dc.float64[N, N], B: dc.float64[N, N], C: dc.float64[N, N]):\n    C[:] = A @ B\n",
    );
    let solve = program(
        "import dace as dc\nimport numpy as np\nN = dc.symbol('N')\n\n@dc.program\ndef f(A: dc.float64[N, N], b: dc.float64[N], x: dc.float64[N]):\n    x[:] = np.linalg.solve(A, b)\n",
    );
    for d in [&Cuda as &dyn Dialect, &Hip] {
        assert!(emitted(&program(STENCIL), d).libraries.is_empty());
        let unit = emitted(&gemm, d);
        assert_eq!(unit.libraries, [VendorLibrary::Blas], "{}", unit.source);
        assert!(unit.source.contains(d.blas().header));
        let unit = emitted(&solve, d);
        assert_eq!(unit.libraries, [VendorLibrary::Solver], "{}", unit.source);
        assert!(unit.source.contains(d.solver().header));
    }
}

#[test]
fn constant_integer_exponents_are_multiplications_and_one_half_a_square_root() {
    let unit = emitted(
        &program(
            "import dace as dc\nN = dc.symbol('N')\n\n@dc.program\ndef f(A: dc.float64[N], B: dc.float64[N], C: dc.complex128[N], I: dc.int64[N], F: dc.float32[N]):\n    B[:] = A ** 2 + A ** 3.0 + A ** 0.5 + A ** -2 + A ** 2.5\n    C[:] = C ** 2\n    I[:] = I ** 3\n    F[:] = F ** 2\n",
        ),
        &Cuda,
    );
    let body = &unit.source
        [unit.source.find(sdfg_codegen::PRELUDE).unwrap() + sdfg_codegen::PRELUDE.len()..];
    for power in [
        "((double)sdfg::integer_power<2>(",
        "((double)sdfg::integer_power<3>(",
        "((double)sdfg::sqrt(",
        "((double)(double(1) / sdfg::integer_power<2>(",
        "((sdfg::complex<double>)sdfg::integer_power<2>(",
        "((int64_t)sdfg::integer_power<3>(",
        "((float)sdfg::integer_power<2>(",
    ] {
        assert!(body.contains(power), "no `{power}` in\n{body}");
    }
    // 2.5 is no integer: the one call of pow left.
    assert_eq!(body.matches("sdfg::pow(").count(), 1, "{body}");
    let call = body.find("sdfg::pow(").unwrap();
    assert!(
        body[call..].starts_with("sdfg::pow(t___in0, ((double)2.5))"),
        "{body}"
    );
}
