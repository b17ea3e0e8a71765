//! The loop transformations: loop-to-map (which loops become maps, why the
//! others stay), loop sinking (a loop around per-point maps into one map)
//! and the offload pass's single-thread loops. Each converted program must
//! compute what the loop did, on the host and offloaded to the simulated
//! device with the race check on (a wrong "independent" shows up as two
//! threads writing one element).

use sdfg_ir::{BlockKind, Node, Sdfg};
use sdfg_passes::dependence::independent;
use sdfg_passes::pipeline::{self, Pass, PipelineOptions};
use sdfg_passes::{LoopReport, loop_to_map};
use sdfg_sim::SimAccelerator;
use std::collections::BTreeSet;

mod common;
use common::{args, args_with, program, run, same};

/// Converts, validates, checks idempotence, and compares runs of the loop,
/// the map on the host and the map offloaded; returns the report.
#[track_caller]
fn convert(sdfg: &Sdfg) -> (Sdfg, LoopReport) {
    let mut out = sdfg.clone();
    let report = loop_to_map(&mut out);
    sdfg_ir::validate(&out).unwrap_or_else(|e| panic!("{e}\n{report}"));
    let back = Sdfg::from_json(&out.to_json()).unwrap();
    assert_eq!(back, out, "JSON round trip");
    let mut again = out.clone();
    let second = loop_to_map(&mut again);
    assert_eq!(again, out, "a second run changed the SDFG");
    assert!(second.converted.is_empty());
    let a = args(sdfg);
    let want = run(sdfg, &a);
    same(&want, &run(&out, &a));
    let (device, _) = pipeline::run(
        sdfg,
        Some(&SimAccelerator),
        &PipelineOptions::default(),
        &[Pass::LoopToMap, Pass::Offload],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    same(&want, &run(&device, &a));
    (out, report)
}

fn loops(sdfg: &Sdfg) -> usize {
    let mut n = 0;
    sdfg.walk_blocks(&mut |_, _, b| n += usize::from(matches!(b.kind, BlockKind::Loop(_))));
    n
}

/// The parameters of the maps at the top of each state.
fn top_maps(sdfg: &Sdfg) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (_, s) in sdfg.states() {
        let tree = s.scope_tree().unwrap();
        for (id, n) in s.nodes() {
            if let Node::MapEntry(e) = n
                && tree.parent(id).is_none()
            {
                out.push(e.map.params.clone());
            }
        }
    }
    out
}

fn nested_maps(sdfg: &Sdfg) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (_, s) in sdfg.states() {
        for (_, n) in s.nodes() {
            if let Node::MapEntry(e) = n
                && s.nodes().any(|(_, m)| matches!(m, Node::NestedSdfg(_)))
            {
                out.push(e.map.params.clone());
            }
        }
    }
    out
}

#[test]
fn an_elementwise_loop_becomes_a_map() {
    let sdfg = program(
        "    for i in range(N):\n        B[i] = A[i] * 2.0 + 1.0\n",
        "A: dc.float64[N], B: dc.float64[N]",
    );
    let (out, report) = convert(&sdfg);
    assert_eq!(report.converted.len(), 1, "{report}");
    assert_eq!(loops(&out), 0);
    // One statement: inlined into the map's scope, no nested SDFG.
    assert!(nested_maps(&out).is_empty());
    assert_eq!(top_maps(&out), vec![vec!["i".to_owned()]]);
}

#[test]
fn a_perfect_nest_becomes_one_map_of_both_variables() {
    let sdfg = program(
        "    for i in range(N):\n        for j in range(M):\n            B[i, j] = A[j, i] + 1.0\n",
        "A: dc.float64[M, N], B: dc.float64[N, M]",
    );
    let (out, report) = convert(&sdfg);
    assert_eq!(loops(&out), 0, "{report}");
    assert_eq!(top_maps(&out), vec![vec!["i".to_owned(), "j".to_owned()]]);
}

#[test]
fn a_loop_around_a_slice_statement_is_one_map_of_the_loop_and_the_slice() {
    // `X[i, :] = ...` per row: one map over rows and columns, not a map of
    // rows whose threads each walk a row.
    let sdfg = program(
        "    for i in range(N):\n        X[i, :] = A * i\n",
        "A: dc.float64[M], X: dc.float64[N, M]",
    );
    let (out, report) = convert(&sdfg);
    assert_eq!(report.converted.len(), 1, "{report}");
    let maps = top_maps(&out);
    assert_eq!(maps.len(), 1, "{maps:?}");
    assert_eq!(maps[0].len(), 2, "{maps:?}");
    assert_eq!(maps[0][0], "i", "rows outermost: {maps:?}");
    assert!(nested_maps(&out).is_empty());
    // A column per iteration: the loop's variable indexes the innermost
    // dimension, so it comes last (consecutive threads, consecutive
    // elements).
    let sdfg = program(
        "    for j in range(M):\n        X[:, j] = A[j] + 1.0\n",
        "A: dc.float64[M], X: dc.float64[N, M]",
    );
    let (out, _) = convert(&sdfg);
    let maps = top_maps(&out);
    assert_eq!(maps.len(), 1, "{maps:?}");
    assert_eq!(maps[0].len(), 2, "{maps:?}");
    assert_eq!(maps[0][1], "j", "{maps:?}");
    // A statement whose range depends on the loop's variable keeps its
    // own map inside the loop's (a triangle is no box).
    let sdfg = program(
        "    for i in range(N):\n        X[i, :i] = A[:i] * 2.0\n",
        "A: dc.float64[N], X: dc.float64[N, N]",
    );
    let (out, report) = convert(&sdfg);
    assert_eq!(report.converted.len(), 1, "{report}");
    assert_eq!(top_maps(&out), vec![vec!["i".to_owned()]]);
}

#[test]
fn a_row_loop_with_a_sequential_inner_loop_maps_the_rows() {
    // syrk's shape: rows independent, the inner k loop accumulates.
    let sdfg = program(
        "    for i in range(N):\n        for k in range(M):\n            C[i, :i + 1] += A[i, k] * A[:i + 1, k]\n",
        "A: dc.float64[N, M], C: dc.float64[N, N]",
    );
    let (out, report) = convert(&sdfg);
    assert_eq!(report.converted.len(), 1, "{report}");
    assert_eq!(nested_maps(&out), vec![vec!["i".to_owned()]]);
    // The k loop runs inside each row's nested SDFG.
    assert_eq!(loops(&out), 0);
}

#[test]
fn a_private_scalar_moves_into_the_body() {
    let sdfg = program(
        "    for i in range(N):\n        t = A[i] * A[i]\n        B[i] = t + 1.0\n",
        "A: dc.float64[N], B: dc.float64[N]",
    );
    let (out, report) = convert(&sdfg);
    assert_eq!(report.converted.len(), 1, "{report}");
    // No transient of the loop is left outside.
    let before: BTreeSet<&String> = sdfg.containers.keys().collect();
    let after: BTreeSet<&String> = out.containers.keys().collect();
    assert!(after.is_subset(&before));
    assert!(after.len() < before.len(), "{after:?}");
}

#[test]
fn a_recurrence_stays_a_loop_with_the_reason() {
    let sdfg = program(
        "    for i in range(1, N):\n        A[i] = A[i - 1] + 1.0\n",
        "A: dc.float64[N]",
    );
    let (out, report) = convert(&sdfg);
    assert!(report.converted.is_empty());
    assert_eq!(loops(&out), 1);
    let (_, why) = &report.kept[0];
    assert!(why.contains("`A[i]`") && why.contains("reads"), "{why}");
}

#[test]
fn a_loop_carried_scalar_stays_a_loop() {
    // Each iteration reads what the last wrote, and not only to add to it:
    // a prefix sum, a recurrence mixing the value in, two operations.
    for body in [
        "    s = 0.0\n    for i in range(N):\n        s = s + A[i]\n        B[i] = s\n",
        "    s = 0.0\n    for i in range(N):\n        s = s * 0.5 + A[i]\n    B[0] = s\n",
        "    s = 1.0\n    for i in range(N):\n        s = s + A[i]\n        s = s * 2.0\n    B[0] = s\n",
        "    s = 0.0\n    for i in range(N):\n        if s < 3.0:\n            s = s + A[i]\n    B[0] = s\n",
    ] {
        let sdfg = program(body, "A: dc.float64[N], B: dc.float64[N]");
        let (_, report) = convert(&sdfg);
        assert!(report.converted.is_empty(), "{body}{report}");
        assert_eq!(report.kept.len(), 1, "{body}{report}");
    }
}

#[test]
fn a_loop_variable_sizing_a_container_stays_a_symbol() {
    // Found by `cargo xtask fuzz` (a JSON mutant whose container's size
    // names the loop variable): the map took the variable out of the
    // symbols, and the container's size named an undefined symbol.
    let mut sdfg = program(
        "    for i in range(N):\n        A[i] = 1.0\n",
        "A: dc.float64[N]",
    );
    sdfg.containers.insert(
        "T".to_owned(),
        sdfg_ir::DataDesc::array(
            sdfg_ir::DType::Float64,
            vec![sdfg_ir::SymExpr::symbol("i") + sdfg_ir::SymExpr::int(1)],
        )
        .into_transient(),
    );
    sdfg_ir::validate(&sdfg).expect("valid before");
    let (out, report) = convert(&sdfg);
    assert_eq!(report.converted.len(), 1, "{report}");
    assert!(out.symbols.contains_key("i"));
}

#[test]
fn a_loop_variable_read_after_the_loop_keeps_the_loop() {
    // Python sees the last value of `i` after the loop (the frontend
    // refuses such reads; an SDFG from elsewhere may have one).
    let mut sdfg = program(
        "    for i in range(N):\n        A[i] = 1.0\n",
        "A: dc.float64[N]",
    );
    sdfg.symbols
        .insert("after".to_owned(), sdfg_ir::DType::Int64);
    let last = sdfg.body.blocks.len() - 1;
    let at = (0..=last)
        .rev()
        .find(|k| matches!(sdfg.body.blocks[*k].kind, BlockKind::Loop(_)))
        .unwrap();
    sdfg.body.blocks[at]
        .transition
        .assignments
        .push(sdfg_ir::Assignment {
            symbol: "after".to_owned(),
            value: sdfg_ir::SymExpr::symbol("i"),
        });
    let mut out = sdfg.clone();
    let report = loop_to_map(&mut out);
    assert!(report.converted.is_empty(), "{report}");
    assert!(report.kept[0].1.contains("used after the loop"), "{report}");
}

#[test]
fn two_loops_with_one_variable_name_both_convert() {
    let sdfg = program(
        "    for i in range(N):\n        A[i] = 1.0\n    for i in range(N):\n        B[i] = A[i] + 2.0\n",
        "A: dc.float64[N], B: dc.float64[N]",
    );
    let (out, report) = convert(&sdfg);
    assert_eq!(report.converted.len(), 2, "{report}");
    assert_eq!(loops(&out), 0);
}

#[test]
fn a_break_keeps_the_loop() {
    let sdfg = program(
        "    for i in range(N):\n        if A[i] > 50.0:\n            break\n        B[i] = A[i]\n",
        "A: dc.float64[N], B: dc.float64[N]",
    );
    let (_, report) = convert(&sdfg);
    assert!(report.converted.is_empty(), "{report}");
    assert!(
        report.kept.iter().any(|(_, w)| w.contains("break")),
        "{report}"
    );
}

#[test]
fn a_branch_in_the_body_converts() {
    let sdfg = program(
        "    for i in range(N):\n        if i % 2 == 0:\n            B[i] = A[i]\n        else:\n            B[i] = -A[i]\n",
        "A: dc.float64[N], B: dc.float64[N]",
    );
    let (_, report) = convert(&sdfg);
    assert_eq!(report.converted.len(), 1, "{report}");
}

#[test]
fn a_reverse_and_strided_loop_covers_the_same_iterations() {
    let sdfg = program(
        "    for i in range(N - 1, 0, -2):\n        B[i] = A[i] + 1.0\n",
        "A: dc.float64[N], B: dc.float64[N]",
    );
    let (_, report) = convert(&sdfg);
    assert_eq!(report.converted.len(), 1, "{report}");
}

#[test]
fn an_accumulation_becomes_a_map_of_private_partial_sums() {
    // `+=` reads what the last iteration wrote; but the loop only ever
    // adds to it, in a loop of its own, so each iteration (a map point)
    // sums its part into a private scalar, added once to the total with a
    // write-conflict resolution. `convert` runs both on the host and on the
    // simulated device, with the race check on, against the loop.
    for (body, params) in [
        // nbody's potential energy: a triangle, the rows a map, each row's
        // partial summed by its thread.
        (
            "    s = 0.0\n    for j in range(N):\n        for k in range(j + 1, N):\n            s += T[j, k]\n    B[0] = s * 2.0\n",
            "T: dc.float64[N, N], B: dc.float64[1]",
        ),
        // Into an argument's element, a product.
        (
            "    for i in range(N):\n        for j in range(N):\n            B[0] = B[0] * (T[i, j] + 0.5)\n",
            "T: dc.float64[N, N], B: dc.float64[1]",
        ),
    ] {
        let sdfg = program(body, params);
        let (out, report) = convert(&sdfg);
        assert_eq!(report.converted.len(), 1, "{body}{report}");
        assert_eq!(loops(&out), 0, "{body}{report}");
        assert_eq!(top_maps(&out).len(), 1, "{body}{report}");
    }
    // The partial sum read inside the loop (a test on it, a running
    // total stored): not only updated, the loop stays.
    for body in [
        "    s = 0.0\n    for i in range(N):\n        for j in range(N):\n            if s < 3.0:\n                s = s + T[i, j]\n    B[0] = s\n",
        "    s = 0.0\n    for i in range(N):\n        for j in range(N):\n            s = s + T[i, j]\n        C[i] = s\n    B[0] = s\n",
    ] {
        let sdfg = program(
            body,
            "T: dc.float64[N, N], B: dc.float64[1], C: dc.float64[N]",
        );
        let (_, report) = convert(&sdfg);
        assert!(report.converted.is_empty(), "{body}{report}");
    }
    // One term per iteration is a reduction, not partial sums (an atomic
    // per term on one address): the loop stays.
    let sdfg = program(
        "    for i in range(N):\n        B[0] += A[i]\n",
        "A: dc.float64[N], B: dc.float64[1]",
    );
    let (_, report) = convert(&sdfg);
    assert!(report.converted.is_empty(), "{report}");
}

#[test]
fn the_dependence_test_on_subsets() {
    let s = |t: &str| sdfg_ir::Subset::parse(t).unwrap();
    let p = ["i".to_owned()];
    let none = BTreeSet::new();
    // Same index of i: distinct iterations, distinct elements.
    assert!(independent(&s("i, 0:N"), &s("i, 0:N"), &p, &[], &none));
    assert!(independent(&s("2*i + 1"), &s("2*i + 1"), &p, &[], &none));
    // A neighbour: not independent.
    assert!(!independent(&s("i"), &s("i - 1"), &p, &[], &none));
    // Invariantly separated rows.
    assert!(independent(&s("0, i"), &s("1:N, i"), &p, &[], &none));
    // Whole ranges: conflict.
    assert!(!independent(&s("0:N"), &s("0:N"), &p, &[], &none));
    // An index through a symbol that varies inside the body.
    let varying: BTreeSet<String> = ["k".to_owned()].into();
    assert!(!independent(&s("i + k"), &s("i + k"), &p, &[], &varying));
    // Two variables need a dimension each.
    let pq = ["i".to_owned(), "j".to_owned()];
    assert!(independent(&s("i, j"), &s("i, j"), &pq, &[], &none));
    assert!(!independent(&s("i, 0"), &s("i, 0"), &pq, &[], &none));
    // With the loop's range: lu's `for j in range(i, N)` writes A[i, j]
    // and reads A[i, 0:i], which lies below every j.
    let j = ["j".to_owned()];
    let from_i = s("i:N").ranges;
    assert!(independent(&s("i, j"), &s("i, 0:i"), &j, &from_i, &none));
    // From i - 1, the first iteration writes what the others read.
    let from_before = s("i - 1:N").ranges;
    assert!(!independent(
        &s("i, j"),
        &s("i, 0:i"),
        &j,
        &from_before,
        &none
    ));
    // A triangular nest: j below i, i below N; `B[i, j]` against the row
    // `B[N, 0:N]` beyond every i.
    let ij = ["i".to_owned(), "j".to_owned()];
    let tri = s("0:N, 0:i").ranges;
    assert!(independent(&s("i, j"), &s("N, 0:N"), &ij, &tri, &none));
    assert!(!independent(&s("i, j"), &s("N - 1, 0:N"), &ij, &tri, &none));
}

#[test]
fn the_stride_test_delinearizes_an_index_through_a_reshape() {
    let s = |t: &str| sdfg_ir::Subset::parse(t).unwrap();
    let k = ["k".to_owned()];
    // `a` and `b` are parameters of a map inside the body: anything.
    let varying: BTreeSet<String> = ["a".to_owned(), "b".to_owned()].into();
    let below_m = s("0:M").ranges;
    // k + M * (a * N + b), k below M: equal elements, equal k.
    let x = s("a*N*M + b*M + k");
    assert!(independent(&x, &x, &k, &below_m, &varying));
    // Against another access of the same stride, offsets cancelling.
    assert!(independent(
        &s("a*M + k + 1"),
        &s("b*N*M + k + 1"),
        &k,
        &below_m,
        &varying
    ));
    // Negative controls: k reaching M wraps into the next stride; another
    // offset on one side; the stride itself varying; no range for k.
    assert!(!independent(&x, &x, &k, &s("0:M + 1").ranges, &varying));
    assert!(!independent(
        &s("a*M + k"),
        &s("b*M + k + 1"),
        &k,
        &below_m,
        &varying
    ));
    let m_varies: BTreeSet<String> = ["a".to_owned(), "M".to_owned()].into();
    assert!(!independent(
        &s("a*M + k"),
        &s("a*M + k"),
        &k,
        &below_m,
        &m_varies
    ));
    assert!(!independent(&x, &x, &k, &[], &varying));
}

#[test]
fn a_flat_index_numbering_a_box_row_major_is_one_to_one() {
    // `a * N * M + b * M + k` over the box (N, N, M): the digits of one
    // mixed-radix number, no two points at one element (map fusion asks
    // this of the write it passes on).
    let s = |t: &str| sdfg_ir::Subset::parse(t).unwrap();
    let abk = ["a".to_owned(), "b".to_owned(), "k".to_owned()];
    let none = BTreeSet::new();
    let box_ = s("0:N, 0:N, 0:M").ranges;
    let x = s("a*N*M + b*M + k + 7");
    assert!(independent(&x, &x, &abk, &box_, &none));
    // Negative controls: k reaching M, b's stride not the run of k, the
    // digits in another order than the parameters', no ranges.
    assert!(!independent(
        &x,
        &x,
        &abk,
        &s("0:N, 0:N, 0:M + 1").ranges,
        &none
    ));
    let y = s("a*N*M + b*N + k");
    assert!(!independent(&y, &y, &abk, &box_, &none));
    let z = s("k*N*N + a*N + b");
    assert!(!independent(&z, &z, &abk, &box_, &none));
    assert!(!independent(&x, &x, &abk, &[], &none));
}

#[test]
fn a_loop_writing_through_a_reshaped_view_at_its_variable_becomes_a_map() {
    // stockham_fft's twiddle copy: `Dv[:, :, k] = T` where `Dv` is `D`
    // reshaped to (N, N, M); the map inside writes D at `a*N*M + b*M + k`.
    let sdfg = program(
        "    Dv = np.reshape(D, (N, N, M))
    for k in range(M):
        Dv[:, :, k] = T
",
        "D: dc.float64[N * N * M], T: dc.float64[N, N]",
    );
    let (out, report) = convert(&sdfg);
    assert_eq!(report.converted.len(), 1, "{report}");
    assert_eq!(loops(&out), 0, "{report}");
    // One map of all three: the statement's map collapses into the loop's,
    // whose variable, the innermost index of what is written, comes last.
    let maps = top_maps(&out);
    assert_eq!(maps.len(), 1, "{maps:?}");
    assert_eq!(maps[0].len(), 3, "{maps:?}");
    assert_eq!(maps[0][2], "k", "{maps:?}");
    // Negative control: every iteration writes all of row 0 of the view.
    let sdfg = program(
        "    Dv = np.reshape(D, (N, N, M))
    for k in range(M):
        Dv[0, :, 0] = T[k, :]
",
        "D: dc.float64[N * N * M], T: dc.float64[M, N]",
    );
    let (_, report) = convert(&sdfg);
    assert!(report.converted.is_empty(), "{report}");
}

#[test]
fn a_loop_writing_beyond_what_it_reads_becomes_a_map() {
    // Each iteration reads B[0:M] and writes B[j] for j >= M.
    let sdfg = program(
        "    for j in range(M, N):\n        B[j] = np.sum(B[:M]) + A[j]\n",
        "A: dc.float64[N], B: dc.float64[N]",
    );
    let (_, report) = convert(&sdfg);
    assert_eq!(report.converted.len(), 1, "{report}");
    // From M - 1 the first iteration writes B[M - 1], which the others read.
    let sdfg = program(
        "    for j in range(M - 1, N):\n        B[j] = np.sum(B[:M]) + A[j]\n",
        "A: dc.float64[N], B: dc.float64[N]",
    );
    let (_, report) = convert(&sdfg);
    assert!(report.converted.is_empty(), "{report}");
}

#[test]
fn the_pipeline_can_turn_loop_to_map_off() {
    let sdfg = program(
        "    for i in range(N):\n        B[i] = A[i] * 2.0\n",
        "A: dc.float64[N], B: dc.float64[N]",
    );
    let passes = [Pass::LoopToMap, Pass::Offload];
    let on = pipeline::run(
        &sdfg,
        Some(&SimAccelerator),
        &PipelineOptions::default(),
        &passes,
    )
    .unwrap();
    let off = pipeline::run(
        &sdfg,
        Some(&SimAccelerator),
        &PipelineOptions::default().without(Pass::LoopToMap),
        &passes,
    )
    .unwrap();
    assert_eq!(on.1.ran, vec![Pass::LoopToMap, Pass::Offload]);
    assert_eq!(off.1.ran, vec![Pass::Offload]);
    assert_eq!(on.1.loops.as_ref().map(|l| l.converted.len()), Some(1));
    assert!(off.1.loops.is_none());
    // Off, the loop is sequential: one thread runs it.
    let report = off.1.offload.as_ref().unwrap();
    assert_eq!(report.sequential_loops.len(), 1, "{report}");
    // The pipeline on its own output changes nothing.
    let again = pipeline::run(
        &on.0,
        Some(&SimAccelerator),
        &PipelineOptions::default(),
        &passes,
    )
    .unwrap();
    assert_eq!(again.0, on.0);
    // Offloading without an accelerator is an error naming the pass.
    let e = pipeline::run(&sdfg, None, &PipelineOptions::default(), &passes).unwrap_err();
    assert!(e.to_string().contains("offload"), "{e}");
}

/// Offloads through the pipeline up to offloading (all passes there).
fn offloaded(sdfg: &Sdfg) -> (Sdfg, sdfg_passes::PipelineReport) {
    through(sdfg, &[Pass::LoopToMap, Pass::SinkLoop, Pass::Offload])
}

/// Runs `passes` for the simulated accelerator (validated after each).
#[track_caller]
fn through(sdfg: &Sdfg, passes: &[Pass]) -> (Sdfg, sdfg_passes::PipelineReport) {
    pipeline::run(
        sdfg,
        Some(&SimAccelerator),
        &PipelineOptions::default(),
        passes,
    )
    .map(|(out, report)| (out.into_inner(), report))
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Kernels (device maps at the top of a state) in the SDFG's states,
/// nested SDFGs excluded.
fn kernels(sdfg: &Sdfg) -> usize {
    sdfg.states()
        .iter()
        .map(|(_, s)| {
            let tree = s.scope_tree().unwrap();
            s.nodes()
                .filter(|(id, n)| {
                    matches!(n, Node::MapEntry(e) if e.map.schedule.is_device())
                        && tree.parent(*id).is_none()
                })
                .count()
        })
        .sum()
}

#[test]
fn loop_nests_updating_in_place_become_one_kernel() {
    // Each nest becomes a map whose body is the statement itself (no
    // nested SDFG), and the maps fuse: one kernel for the three nests.
    let sdfg = program(
        "    for i in range(N):\n        for j in range(M):\n            B[i, j] = B[i, j] + A[i, j]\n    for i in range(N):\n        for j in range(M):\n            B[i, j] = B[i, j] * 0.5\n    for i in range(N):\n        for j in range(M):\n            B[i, j] = B[i, j] - A[i, j]\n",
        "A: dc.float64[N, M], B: dc.float64[N, M]",
    );
    let (out, _) = convert(&sdfg);
    assert!(nested_maps(&out).is_empty(), "{:?}", nested_maps(&out));
    let (device, report) = through(&sdfg, &Pass::TO_OFFLOAD);
    assert_eq!(report.fused.len(), 2, "{report}");
    assert_eq!(kernels(&device), 1);
    let a = args(&sdfg);
    same(&run(&sdfg, &a), &run(&device, &a));
}

const MASKED: &str = "    Z = np.zeros((N, M), dtype=np.float64)\n    for n in range(5):\n        I = np.less(np.absolute(Z), 4.0)\n        for j, k in dc.map[0:N, 0:M]:\n            if I[j, k]:\n                Z[j, k] = Z[j, k] * Z[j, k] + C[j, k]\n    B[:] = Z\n";

#[test]
fn a_loop_around_per_point_maps_sinks_into_one_map() {
    let sdfg = program(MASKED, "C: dc.float64[N, M], B: dc.float64[N, M]");
    let (out, report) = offloaded(&sdfg);
    assert_eq!(report.sunk.len(), 1, "{report}");
    assert_eq!(loops(&out), 0);
    let a = args(&sdfg);
    same(&run(&sdfg, &a), &run(&out, &a));
    // Off: one loop, a kernel per map per iteration.
    let (kept, r) = pipeline::run(
        &sdfg,
        Some(&SimAccelerator),
        &PipelineOptions::default().without(Pass::SinkLoop),
        &[Pass::LoopToMap, Pass::SinkLoop, Pass::Offload],
    )
    .unwrap();
    assert!(r.sunk.is_empty());
    assert_eq!(loops(&kept), 1);
    assert!(kernels(&kept) > kernels(&out));
}

#[test]
fn a_recurrence_along_the_loop_within_each_point_sinks() {
    // vadv's sweep: each point (i, j) reads at level k - 1 what the same
    // point wrote at the previous iteration; no point reads another's.
    let sdfg = program(
        "    for k in range(1, M):\n        C[:, k] = C[:, k - 1] * 0.5 + A[:, k]\n        B[:, k] = C[:, k] - B[:, k - 1]\n",
        "A: dc.float64[N, M], B: dc.float64[N, M], C: dc.float64[N, M]",
    );
    let (out, report) = offloaded(&sdfg);
    assert_eq!(report.sunk.len(), 1, "{report}");
    assert_eq!(loops(&out), 0);
    let a = args(&sdfg);
    same(&run(&sdfg, &a), &run(&out, &a));
    // Along the other axis it is a neighbour's value: the loop stays.
    let sdfg = program(
        "    for k in range(1, M):\n        C[1:, k] = C[:-1, k - 1] * 0.5 + A[1:, k]\n",
        "A: dc.float64[N, M], C: dc.float64[N, M]",
    );
    let (out, report) = offloaded(&sdfg);
    assert!(report.sunk.is_empty(), "{report}");
    let a = args(&sdfg);
    same(&run(&sdfg, &a), &run(&out, &a));
}

#[test]
fn a_map_whose_range_the_loop_changes_keeps_the_loop() {
    // A triangle: the map over rows `:j` is a different range in each
    // iteration, so no single map can hold the loop (found by the fuzzer,
    // seed 3: the sunk map's range named the loop's variable).
    let sdfg = program(
        "    for j in range(1, N):\n        Y[:j, j] = Y[:j, j - 1] + 1.0\n",
        "Y: dc.float64[N, N]",
    );
    let (out, report) = offloaded(&sdfg);
    assert!(report.sunk.is_empty(), "{report}");
    assert_eq!(loops(&out), 1);
    let a = args(&sdfg);
    same(&run(&sdfg, &a), &run(&out, &a));
}

#[test]
fn a_points_temporary_moves_into_the_sunk_loop() {
    // deriche's recurrence: the element-wise maps fuse through a temporary
    // that becomes each point's own scalar; sunk, the loop's nested SDFG
    // must hold that scalar (each thread's), not take it as an input it
    // writes (DaCe's validator refused the export).
    let sdfg = program(
        "    for j in range(2, M):\n        Y[:, j] = 0.5 * A[:, j] + 0.25 * Y[:, j - 1] + 0.125 * Y[:, j - 2]\n",
        "A: dc.float64[N, M], Y: dc.float64[N, M]",
    );
    let (device, report) = through(&sdfg, &Pass::TO_OFFLOAD);
    assert!(!report.fused.is_empty(), "{report}");
    assert_eq!(report.sunk.len(), 1, "{report}");
    assert_eq!(loops(&device), 0);
    let a = args(&sdfg);
    same(&run(&sdfg, &a), &run(&device, &a));
}

#[test]
fn a_neighbour_read_keeps_the_loop_around_its_maps() {
    // A stencil iterated in time: a point reads its neighbours, which other
    // points wrote in the previous iteration.
    let sdfg = program(
        "    for t in range(3):\n        B[1:N - 1] = A[0:N - 2] + A[2:N]\n        A[1:N - 1] = B[1:N - 1] * 0.5\n",
        "A: dc.float64[N], B: dc.float64[N]",
    );
    let (out, report) = offloaded(&sdfg);
    assert!(report.sunk.is_empty(), "{report}");
    assert_eq!(loops(&out), 1);
    let a = args(&sdfg);
    same(&run(&sdfg, &a), &run(&out, &a));
}

#[test]
fn a_sequential_loop_of_scalar_device_work_is_one_single_thread_kernel() {
    let sdfg = program(
        "    for i in range(1, N):\n        if A[i] > A[i - 1]:\n            A[i] = A[i - 1] * 0.5\n        else:\n            A[i] = A[i] + A[i - 1]\n",
        "A: dc.float64[N]",
    );
    let (out, report) = offloaded(&sdfg);
    let off = report.offload.as_ref().unwrap();
    assert_eq!(off.sequential_loops.len(), 1, "{off}");
    assert_eq!(loops(&out), 0);
    assert_eq!(kernels(&out), 1);
    let a = args(&sdfg);
    let want = run(&sdfg, &a);
    let got = run(&out, &a);
    same(&want, &got);
    // One launch, where each iteration launched a kernel per state before.
    assert_eq!(got.report.launches, 1, "{:?}", got.report);
}

#[test]
fn a_sequential_loop_hands_the_symbols_it_assigns_back_once() {
    // Stream compaction (mandelbrot2's): the counter is a symbol the loop
    // assigns and the code after it uses, as a value and as a bound. The
    // loop is one single-thread kernel all the same, and the counter
    // crosses once, after it, instead of a condition per iteration.
    let sdfg = program(
        "    count = 0
    for j in range(N):
        if A[j] > 0.5:
            B[count] = A[j]
            count += 1
    C[0] = count
    B[count:N] = -1.0
",
        "A: dc.float64[N], B: dc.float64[N], C: dc.int64[1]",
    );
    let (out, report) = offloaded(&sdfg);
    let off = report.offload.as_ref().unwrap();
    assert_eq!(off.sequential_loops.len(), 1, "{off}");
    assert_eq!(loops(&out), 0);
    let a = args(&sdfg);
    let want = run(&sdfg, &a);
    let got = run(&out, &a);
    same(&want, &got);
    let handed = got
        .report
        .per_container
        .iter()
        .find(|(name, _)| name.starts_with("count_last"))
        .map(|(_, t)| t.to_host)
        .unwrap_or_else(|| panic!("no counter crossed: {:?}", got.report.per_container));
    assert_eq!((handed.copies, handed.bytes), (1, 8));
    // The loop, and the two statements after it (no launch per iteration).
    assert!(got.report.launches <= 3, "{:?}", got.report);
}

#[test]
fn scalar_host_code_in_a_loop_stays_on_the_host() {
    // Only scalars the host holds: no kernel at all (crc16's bit loop).
    let sdfg = program(
        "    s = 0\n    for i in range(N):\n        s = (s * 3 + i) % 7\n    B[0] = s\n",
        "B: dc.int64[1]",
    );
    let (out, report) = offloaded(&sdfg);
    let off = report.offload.as_ref().unwrap();
    assert!(off.sequential_loops.is_empty(), "{off}");
    let a = args(&sdfg);
    let got = run(&out, &a);
    same(&run(&sdfg, &a), &got);
    assert_eq!(got.report.launches, 0, "{:?}", got.report);
}

#[test]
fn consecutive_statements_of_scalar_device_work_are_one_kernel() {
    // Two statements on elements of an array (device data): one
    // single-thread kernel for both, in order.
    let sdfg = program(
        "    A[0] = A[1] * 2.0\n    A[2] = A[0] + 1.0\n    A[1] = A[2] - A[0]\n",
        "A: dc.float64[N]",
    );
    let (out, _) = offloaded(&sdfg);
    assert_eq!(kernels(&out), 1);
    let a = args(&sdfg);
    let got = run(&out, &a);
    same(&run(&sdfg, &a), &got);
    assert_eq!(got.report.launches, 1);
    // The frontend made a state of tasklets per step of each statement:
    // each would have been a kernel of its own.
    let mut alone = 0;
    for (_, s) in sdfg.states() {
        alone += usize::from(s.nodes().any(|(_, n)| matches!(n, Node::Tasklet(_))));
    }
    assert!(alone >= 3, "{alone}");
}

/// Renames symbol `from` to `to` in loop headers and memlets of `region`
/// (what a frontend reusing a loop variable's name would have written).
fn rename_symbol(region: &mut sdfg_ir::Region, from: &str, to: &str) {
    let map: std::collections::BTreeMap<String, sdfg_ir::SymExpr> =
        [(from.to_owned(), sdfg_ir::SymExpr::symbol(to))].into();
    region.for_each_region_mut(&mut |r| {
        for b in &mut r.blocks {
            match &mut b.kind {
                BlockKind::Loop(l) => {
                    if l.variable.as_deref() == Some(from) {
                        l.variable = Some(to.to_owned());
                    }
                    l.condition = l.condition.subs(&map);
                    l.init = l.init.as_ref().map(|e| e.subs(&map));
                    l.update = l.update.as_ref().map(|e| e.subs(&map));
                }
                BlockKind::State(st) => {
                    for e in st.graph.edge_weights_mut() {
                        if let Some(m) = &mut e.memlet {
                            m.subset = m.subset.subs(&map);
                            m.volume = m.volume.subs(&map);
                        }
                    }
                }
                _ => {}
            }
        }
    });
}

#[test]
fn a_loop_variable_another_loop_reuses_keeps_its_declaration() {
    // The first loop becomes a map; the second, a recurrence over the same
    // variable name, stays a loop and still finds `i` declared.
    let mut sdfg = program(
        "    for i in range(N):\n        A[i] = A[i] * 2.0\n    for j in range(1, N):\n        A[j] = A[j - 1] + A[j]\n",
        "A: dc.float64[N]",
    );
    let second = sdfg.body.blocks.len() - 1;
    let mut tail = sdfg_ir::Region::new(sdfg.body.blocks.split_off(second));
    rename_symbol(&mut tail, "j", "i");
    sdfg.body.blocks.extend(tail.blocks);
    sdfg.symbols.remove("j");
    sdfg_ir::validate(&sdfg).unwrap_or_else(|e| panic!("{e}"));
    let (out, report) = convert(&sdfg);
    assert_eq!(report.converted.len(), 1, "{report}");
    assert!(out.symbols.contains_key("i"));
    // The map's parameter is a fresh name; the nested SDFG's `i` maps to it.
    let params = nested_maps(&out);
    assert_eq!(params.len(), 1);
    assert_ne!(params[0], vec!["i".to_owned()]);
}

#[test]
fn a_loop_labelled_with_no_identifier_nests_under_a_valid_name() {
    // Found by `cargo xtask fuzz`: a block label is any string, a nested
    // SDFG's name must be an identifier (`-1_body` was not).
    let mut sdfg = program(
        "    for i in range(N):\n        for k in range(M):\n            C[i, :i + 1] += A[i, k] * A[:i + 1, k]\n",
        "A: dc.float64[N, M], C: dc.float64[N, N]",
    );
    let first = sdfg
        .body
        .blocks
        .iter_mut()
        .find(|b| matches!(b.kind, BlockKind::Loop(_)))
        .expect("the row loop");
    first.label = "-9223372036854775808".to_owned();
    let (_, report) = convert(&sdfg);
    assert_eq!(report.converted.len(), 1, "{report}");
}

/// Stream compaction in a `while` loop (mandelbrot2's): the loop's test
/// reads the length the compaction on the device computes.
const COMPACT: &str = "    length = N
    k = 0
    while length > 0:
        A[:length] = A[:length] * 0.5
        count = 0
        for j in range(length):
            if A[j] > 0.02:
                A[count] = A[j]
                count += 1
        length = count
        k += 1
    K[0] = k
";

#[test]
fn a_loop_testing_what_the_device_writes_becomes_one_persistent_kernel() {
    let sdfg = program(COMPACT, "A: dc.float64[N], K: dc.int64[1]");
    let (out, report) = offloaded(&sdfg);
    let off = report.offload.as_ref().unwrap();
    assert_eq!(off.persistent_loops.len(), 1, "{off}");
    assert_eq!(loops(&out), 0, "the loop is inside the kernel");
    let persistent = out
        .states()
        .iter()
        .flat_map(|(_, s)| s.nodes().map(|(_, n)| n.clone()).collect::<Vec<_>>())
        .filter(|n| matches!(n, Node::MapEntry(e) if e.map.schedule == sdfg_ir::Schedule::DevicePersistent))
        .count();
    assert_eq!(persistent, 1);
    let a = args_with(&sdfg, 40, 1);
    let want = run(&sdfg, &a);
    let got = run(&out, &a);
    same(&want, &got);
    assert!(
        want.outputs["K"].get(0).unwrap().to_i64() > 2,
        "several iterations"
    );
    // One launch for the whole loop (and one for what follows it); nothing
    // crosses per iteration: the inputs go in once, the outputs out once.
    assert!(got.report.launches <= 3, "{:?}", got.report);
    for (name, t) in &got.report.per_container {
        assert!(
            t.to_host.copies <= 1,
            "`{name}` crossed {} times",
            t.to_host.copies
        );
    }
}

/// The simulated accelerator without a grid-wide barrier: the pass asks,
/// and keeps the loop on the host.
struct NoGridBarrier;

impl sdfg_passes::Accelerator for NoGridBarrier {
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
    fn vendor_library(&self, _: &sdfg_ir::LibraryOp) -> Option<sdfg_passes::VendorCall> {
        None
    }
}

#[test]
fn without_a_grid_barrier_or_a_test_on_device_data_the_loop_stays_on_the_host() {
    let sdfg = program(COMPACT, "A: dc.float64[N], K: dc.int64[1]");
    let (out, report) = pipeline::run(
        &sdfg,
        Some(&NoGridBarrier),
        &PipelineOptions::default(),
        &[Pass::LoopToMap, Pass::SinkLoop, Pass::Offload],
    )
    .unwrap();
    assert!(report.offload.as_ref().unwrap().persistent_loops.is_empty());
    assert_eq!(loops(&out), 1);
    let a = args_with(&sdfg, 40, 1);
    same(&run(&sdfg, &a), &run(&out, &a));
    // A loop whose tests read only what the host holds launches its
    // kernels from the host: no copy back per iteration to save.
    let timed = program(
        "    t = 0\n    while t < N:\n        A[:] = A * 0.5 + B\n        t += 1\n",
        "A: dc.float64[M], B: dc.float64[M]",
    );
    let (out, report) = offloaded(&timed);
    assert!(report.offload.as_ref().unwrap().persistent_loops.is_empty());
    assert_eq!(loops(&out), 1);
    // Nor one whose body issues a library call the threads cannot share
    // (a matrix product: the host issues it).
    let product = program(
        "    while B[0, 0] > 0.01:\n        B[:] = (A @ B) * 0.05\n",
        "A: dc.float64[N, N], B: dc.float64[N, N]",
    );
    let (out, report) = offloaded(&product);
    assert!(report.offload.as_ref().unwrap().persistent_loops.is_empty());
    assert_eq!(loops(&out), 1);
    let a = args(&product);
    same(&run(&product, &a), &run(&out, &a));
}

#[test]
fn a_loop_testing_a_reduction_shares_it_among_a_persistent_kernels_threads() {
    // channel_flow's shape: the test reads a norm the device reduces.
    let sdfg = program(
        "    while np.sum(A) > 0.5:\n        A[:] = A * 0.5\n        B[:] = B + np.max(A)\n",
        "A: dc.float64[N], B: dc.float64[N]",
    );
    let (mut out, report) = through(&sdfg, &Pass::ALL);
    let off = report.offload.as_ref().unwrap();
    assert_eq!(off.persistent_loops.len(), 1, "{off}");
    assert_eq!(loops(&out), 0);
    let a = args(&sdfg);
    let want = run(&sdfg, &a);
    let got = run(&out, &a);
    same(&want, &got);
    assert_eq!(got.report.launches, 1, "{:?}", got.report);
    // Lowered, each reduction is a map the threads share: the full sum
    // combines into its one element (the emitter keeps a partial per
    // thread), the maximum too.
    let mut shared_reductions = 0;
    for (_, s) in out.states() {
        for (_, n) in s.nodes() {
            if let Node::NestedSdfg(body) = n {
                for (_, inner) in body.sdfg.states() {
                    let tree = inner.scope_tree().unwrap();
                    for (id, node) in inner.nodes() {
                        if matches!(node, Node::MapEntry(e)
                            if e.map.schedule == sdfg_ir::Schedule::DeviceKernel
                                && tree.parent(id).is_none()
                                && e.map.label.ends_with("_expansion"))
                        {
                            shared_reductions += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(shared_reductions, 2);
    sdfg_ir::validate(&out).unwrap();
    out.name.push('_');
    assert_eq!(Sdfg::from_json(&out.to_json()).unwrap(), out);
}
