//! Map fusion, vertical (`map_fusion`) and horizontal (`horizontal_fusion`):
//! which consecutive maps fuse, which do not, and that the fused program
//! computes what the two maps did (race-checked, on the host and
//! offloaded).

use sdfg_ir::{BlockKind, Node, Sdfg};
use sdfg_passes::horizontal_fusion::fuse_independent_maps;
use sdfg_passes::map_fusion::fuse_maps;

mod common;
use common::{program, rewritten};

/// Fuses, with every check of [`common::rewritten`].
#[track_caller]
fn fused(sdfg: &Sdfg) -> (Sdfg, Vec<String>) {
    let (out, lines, _) = rewritten(sdfg, fuse_maps);
    (out, lines)
}

fn maps(sdfg: &Sdfg) -> usize {
    sdfg.states()
        .iter()
        .map(|(_, s)| {
            let tree = s.scope_tree().unwrap();
            s.nodes()
                .filter(|(id, n)| matches!(n, Node::MapEntry(_)) && tree.parent(*id).is_none())
                .count()
        })
        .sum()
}

fn transient_arrays(sdfg: &Sdfg) -> Vec<&String> {
    sdfg.containers
        .iter()
        .filter(|(_, d)| {
            d.transient && !d.is_scalar() && d.total_elements().and_then(|n| n.as_int()) != Some(1)
        })
        .map(|(n, _)| n)
        .collect()
}

fn states(sdfg: &Sdfg) -> usize {
    let mut n = 0;
    sdfg.walk_blocks(&mut |_, _, b| n += usize::from(matches!(b.kind, BlockKind::State(_))));
    n
}

#[test]
fn an_elementwise_chain_fuses_and_its_temporary_disappears() {
    let sdfg = program(
        "    T = A * 2.0\n    U = T + 1.0\n    B[:] = U * U\n",
        "A: dc.float64[N], B: dc.float64[N]",
    );
    let (out, lines) = fused(&sdfg);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(maps(&out), 1);
    // Neither temporary is an array any more.
    assert_eq!(transient_arrays(&sdfg).len(), 2);
    assert!(transient_arrays(&out).is_empty());
}

#[test]
fn a_flat_map_fuses_with_the_box_map_of_its_reshape() {
    // The first map writes `T` through its (N, M) reshape, at the flat
    // index `i * M + j`; the second runs over T's N * M elements. Its
    // parameter is the first's linear index, every point reads what the
    // same point wrote, and `T` becomes a scalar of the point.
    let sdfg = program(
        "    T = np.empty((N * M,), dtype=np.float64)\n    Tv = np.reshape(T, (N, M))\n    Tv[:] = A * 2.0\n    B[:] = T + 1.0\n",
        "A: dc.float64[N, M], B: dc.float64[N * M]",
    );
    let (out, lines) = fused(&sdfg);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(maps(&out), 1);
    assert!(
        transient_arrays(&out).is_empty(),
        "{:?}",
        transient_arrays(&out)
    );
    // Negative controls: the second map reads a neighbour's element, or
    // runs over another number of points: no fusion.
    for (body, params) in [
        (
            "    T = np.empty((N * M,), dtype=np.float64)\n    Tv = np.reshape(T, (N, M))\n    Tv[:] = A * 2.0\n    B[0:N * M - 1] = T[1:N * M] + 1.0\n",
            "A: dc.float64[N, M], B: dc.float64[N * M]",
        ),
        (
            "    T = np.empty((N * M,), dtype=np.float64)\n    Tv = np.reshape(T, (N, M))\n    Tv[:] = A * 2.0\n    B[:] = T[0:N] + 1.0\n",
            "A: dc.float64[N, M], B: dc.float64[N]",
        ),
    ] {
        let sdfg = program(body, params);
        let (_, lines) = fused(&sdfg);
        assert!(lines.is_empty(), "{body}: {lines:?}");
    }
}

#[test]
fn a_temporary_read_later_stays_an_array() {
    let sdfg = program(
        "    T = A * 2.0\n    B[:] = T + 1.0\n    C[0] = T[3]\n",
        "A: dc.float64[N], B: dc.float64[N], C: dc.float64[1]",
    );
    let (out, lines) = fused(&sdfg);
    assert_eq!(lines.len(), 1, "{lines:?}");
    // The array the third statement reads is still there, and written.
    assert_eq!(transient_arrays(&out), transient_arrays(&sdfg));
}

#[test]
fn a_shifted_read_does_not_fuse() {
    // The second map at point i reads what the first wrote at i + 1.
    let sdfg = program(
        "    T = A * 2.0\n    B[0:N - 1] = T[1:N]\n",
        "A: dc.float64[N], B: dc.float64[N]",
    );
    let (out, lines) = fused(&sdfg);
    assert!(lines.is_empty(), "{lines:?}");
    assert_eq!(maps(&out), maps(&sdfg));
}

#[test]
fn different_ranges_do_not_fuse() {
    let sdfg = program(
        "    A[:] = 1.0\n    B[0:M] = 2.0\n",
        "A: dc.float64[N], B: dc.float64[N]",
    );
    let (_, lines) = fused(&sdfg);
    assert!(lines.is_empty(), "{lines:?}");
}

#[test]
fn a_second_map_writing_what_the_first_reads_does_not_fuse() {
    let sdfg = program(
        "    B[:] = A + 1.0\n    A[:] = 0.0\n",
        "A: dc.float64[N], B: dc.float64[N]",
    );
    let (_, lines) = fused(&sdfg);
    assert!(lines.is_empty(), "{lines:?}");
}

#[test]
fn a_map_commutes_past_independent_scalar_code_to_fuse() {
    // azimint's shape: the mask, two scalar initializations, the masked sums.
    let sdfg = program(
        "    mask = np.less(A, 0.5)\n    s = 0.0\n    for j in dc.map[0:N]:\n        if mask[j]:\n            s += A[j]\n    B[0] = s\n",
        "A: dc.float64[N], B: dc.float64[1]",
    );
    let before = states(&sdfg);
    let (out, lines) = fused(&sdfg);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(states(&out), before - 1);
}

#[test]
fn a_temporary_with_two_readers_becomes_a_scalar_at_the_last_one() {
    // The first fusion keeps `T` (the third statement reads it); the second
    // finds it used by the fused state alone.
    let sdfg = program(
        "    T = A * 2.0\n    B[:] = T + 1.0\n    C[:] = T * 3.0\n",
        "A: dc.float64[N], B: dc.float64[N], C: dc.float64[N]",
    );
    let (out, lines) = fused(&sdfg);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(maps(&out), 1);
    assert!(
        transient_arrays(&out).is_empty(),
        "{:?}",
        transient_arrays(&out)
    );
}

/// Fuses horizontally, with every check of [`common::rewritten`].
#[track_caller]
fn fused_side_by_side(sdfg: &Sdfg) -> (Sdfg, Vec<String>) {
    let (out, lines, _) = rewritten(sdfg, fuse_independent_maps);
    (out, lines)
}

#[test]
fn independent_maps_of_different_extents_fuse_over_their_bounding_box() {
    // hdiff's two flux limiters: (N + 1, M) and (N, M + 1), sharing only
    // what they read.
    let sdfg = program(
        "    X[:] = A[:, 0:M] - 1.0\n    Y[:] = A[0:N, :] * 2.0\n",
        "A: dc.float64[N + 1, M + 1], X: dc.float64[N + 1, M], Y: dc.float64[N, M + 1]",
    );
    let (out, lines) = fused_side_by_side(&sdfg);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(maps(&out), 1);
    assert_eq!(states(&out), states(&sdfg) - 1);
}

#[test]
fn a_vector_map_fuses_into_a_grid_map_of_one_of_its_extents() {
    // mandelbrot's grid and its two `linspace` vectors, with a scalar
    // computed between them (the grid moves past it): one map over the
    // grid, each vector written by the points of the grid's first row or
    // column. `fused_side_by_side` compares the results with the unfused
    // program, on the host and the simulated device.
    let sdfg = program(
        "    G[:] = A * 2.0
    d = (b - a) / 4.0
    for i in dc.map[0:N]:
        X[i] = a + i * d
    for j in dc.map[0:M]:
        Y[j] = b - j * d
",
        "A: dc.float64[N, M], G: dc.float64[N, M], X: dc.float64[N], Y: dc.float64[M], a: dc.float64, b: dc.float64",
    );
    let (out, lines) = fused_side_by_side(&sdfg);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(maps(&out), 1);
    // Negative control: a vector whose extent is neither of the grid's.
    let sdfg = program(
        "    G[:] = A * 2.0
    for i in dc.map[0:N - 1]:
        X[i] = i * 2.0
",
        "A: dc.float64[N, M], G: dc.float64[N, M], X: dc.float64[N]",
    );
    let (_, lines) = fused_side_by_side(&sdfg);
    assert!(lines.is_empty(), "{lines:?}");
}

#[test]
fn a_chain_of_side_by_side_fusions_keeps_transients_read_later() {
    // `np.tril(A, 1) - np.triu(A, 1)` of a (2, 5) array: four index fills
    // (rows and columns of each), one map computing the result from all
    // four after map fusion. The fills fuse side by side, then their fused
    // state with the next; a fused state is a nested SDFG, accessing its
    // containers once more, so the uses counted outside the pair must
    // follow each fusion: the fills are read later and must stay arrays of
    // the SDFG (a fuzz finding: they were taken private to the second
    // fusion, leaving the reader invalid).
    let sdfg = program(
        "    out[:] = np.tril(A, 1) - np.triu(A, 1)\n",
        "A: dc.float64[2, 5], out: dc.float64[2, 5]",
    );
    // (Map fusion alone: a second run of it fuses two of the fills, which
    // the first left apart, so `fused`'s idempotence check is not for it.)
    let mut mapped = sdfg.clone();
    fuse_maps(&mut mapped);
    let (out, lines) = fused_side_by_side(&mapped);
    assert!(lines.len() >= 2, "{lines:?}");
    assert_eq!(
        transient_arrays(&out).len(),
        transient_arrays(&mapped).len()
    );
}

#[test]
fn maps_sharing_what_one_writes_do_not_fuse_side_by_side() {
    // The second reads what the first writes.
    let sdfg = program(
        "    X[0:N - 1] = A[0:N - 1] * 2.0\n    Y[:] = X + 1.0\n",
        "A: dc.float64[N], X: dc.float64[N], Y: dc.float64[N]",
    );
    let (_, lines) = fused_side_by_side(&sdfg);
    assert!(lines.is_empty(), "{lines:?}");
    // Both write one container, at different elements: still not fused
    // (the test is on containers).
    let sdfg = program(
        "    X[0:N - 1] = A[0:N - 1] * 2.0\n    X[N - 1] = 5.0\n",
        "A: dc.float64[N], X: dc.float64[N]",
    );
    let (_, lines) = fused_side_by_side(&sdfg);
    assert!(lines.is_empty(), "{lines:?}");
    // Extents that do not compare (N against M) do not fuse.
    let sdfg = program(
        "    X[:] = A * 2.0\n    Y[:] = B * 3.0\n",
        "A: dc.float64[N], X: dc.float64[N], B: dc.float64[M], Y: dc.float64[M]",
    );
    let (_, lines) = fused_side_by_side(&sdfg);
    assert!(lines.is_empty(), "{lines:?}");
}

#[test]
fn a_map_with_an_inner_map_fuses_with_its_inner_exit_renumbered() {
    // Found by `cargo xtask fuzz`: fusing a map whose body holds a map of
    // its own (a row written per point) copied the inner exit with the id
    // of its entry in the other state, naming a node that is not an entry.
    let sdfg = program(
        "    for i in dc.map[0:N]:\n        A[i, 0] = i * 2.0\n        B[i, :] = i * 3.0\n",
        "A: dc.float64[N, N], B: dc.float64[N, N]",
    );
    let (out, lines) = fused(&sdfg);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(maps(&out), 1);
}

#[test]
fn in_place_updates_of_one_element_per_point_fuse() {
    // `B += A; B *= B`: each point updates its own element twice, in
    // order; the first map's write leaves the scope only through the
    // second's.
    let sdfg = program(
        "    for i in dc.map[0:N]:\n        B[i] = B[i] + A[i]\n    for i in dc.map[0:N]:\n        B[i] = B[i] * B[i]\n",
        "A: dc.float64[N], B: dc.float64[N]",
    );
    let (out, lines) = fused(&sdfg);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(maps(&out), 1);
}

#[test]
fn in_place_updates_at_other_elements_do_not_fuse() {
    // The first map updates element i + 1 at point i, the second element
    // i: a point's second update would not see its first.
    let sdfg = program(
        "    for i in dc.map[0:N - 1]:\n        B[i + 1] = B[i + 1] + A[i]\n    for i in dc.map[0:N - 1]:\n        B[i] = B[i] * 2.0\n",
        "A: dc.float64[N], B: dc.float64[N]",
    );
    let (_, lines) = fused(&sdfg);
    assert!(lines.is_empty(), "{lines:?}");
    // A read before an update elsewhere: the first map only reads `B`.
    let sdfg = program(
        "    for i in dc.map[0:N]:\n        A[i] = B[i] + 1.0\n    for i in dc.map[0:N]:\n        B[i] = B[i] * 2.0\n",
        "A: dc.float64[N], B: dc.float64[N]",
    );
    let (_, lines) = fused(&sdfg);
    assert!(lines.is_empty(), "{lines:?}");
}

#[test]
fn fused_maps_reading_one_array_share_its_connector() {
    // Both maps read all of `A`: the fused map brings it in once.
    let sdfg = program(
        "    B[:] = A + 1.0\n    C[:] = A * 2.0\n",
        "A: dc.float64[N], B: dc.float64[N], C: dc.float64[N]",
    );
    let (out, lines) = fused(&sdfg);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let entries: Vec<usize> = out
        .states()
        .iter()
        .flat_map(|(_, s)| {
            s.nodes().filter_map(|(_, n)| match n {
                Node::MapEntry(e) => Some(
                    e.in_connectors
                        .iter()
                        .filter(|c| c.starts_with("IN_A"))
                        .count(),
                ),
                _ => None,
            })
        })
        .collect();
    assert_eq!(entries, vec![1]);
}

#[test]
fn a_write_apart_from_every_read_fuses() {
    // cavity_flow's boundary condition `p[:, -1] = p[:, -2]`: the copy of
    // column N - 2 into a temporary and of the temporary into column
    // N - 1 fuse (no point writes what any point reads), and the
    // temporary becomes a scalar of the point.
    let sdfg = program("    P[:, -1] = P[:, -2]\n", "P: dc.float64[M, N]");
    let (out, lines) = fused(&sdfg);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(maps(&out), 1);
    assert!(transient_arrays(&out).is_empty());
}

#[test]
fn writes_that_may_meet_do_not_fuse() {
    // Columns 0 and N - 1 are one column when N is 1: the order of the two
    // writes would matter, and nothing proves N > 1.
    let sdfg = program(
        "    P[:, 0] = A\n    P[:, -1] = A * 2.0\n",
        "P: dc.float64[M, N], A: dc.float64[M]",
    );
    let (_, lines) = fused(&sdfg);
    assert!(lines.is_empty(), "{lines:?}");
    // Rows 0 and 1 never meet: they fuse.
    let sdfg = program(
        "    P[0, :] = B\n    P[1, :] = B * 2.0\n",
        "P: dc.float64[M, N], B: dc.float64[N]",
    );
    let (_, lines) = fused(&sdfg);
    assert_eq!(lines.len(), 1, "{lines:?}");
}

#[test]
fn a_temporary_updated_in_place_and_dead_after_stays_valid() {
    // A fuzzer's find (correlation's `stddev[stddev <= 0.1] = 1.0` with
    // nothing reading `stddev` after): the second map writes the
    // temporary the first passes it, so it is not a dead scalar of the
    // point; fusing left the second map's tasklet with no output once.
    let sdfg = program(
        "    T = np.sqrt(A)\n    T[T <= 0.1] = 1.0\n    B[:] = A + 1.0\n",
        "A: dc.float64[N], B: dc.float64[N]",
    );
    let (_, lines) = fused(&sdfg);
    assert!(!lines.is_empty(), "{lines:?}");
}

#[test]
fn an_in_place_update_waits_for_every_read_of_the_first_map() {
    // A fuzzer's find: the first map (two fused ones) reads `A` from an
    // access node inside its scope, which its writer of `A` does not
    // depend on; the third map's in-place update of `A` must come after
    // that read, not only after the write.
    let sdfg = program(
        "    A[:] = np.sqrt(np.abs(y))\n    for i, j in dc.map[0:N, 0:M]:\n        t = A[i, j]\n        if t > 0.25:\n            t = t * 0.5 - A[i, j]\n        B[i, j] = t + A[i, j]\n    A[:] = np.exp(-np.abs(A))\n",
        "A: dc.float64[N, M], B: dc.float64[N, M], y: dc.float64[M]",
    );
    let (out, lines) = fused(&sdfg);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(maps(&out), 1);
}
