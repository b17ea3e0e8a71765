//! Validator tests: every rule of `sdfg_ir::validate` broken on purpose, one
//! SDFG per rule, checking the exact error and its full location.
//!
//! Most tests take a valid SDFG (an example, or a tiny one made here with the
//! builder), change one thing through the public fields and expect exactly
//! the error that change causes.

use sdfg_ir::builder::SdfgBuilder;
use sdfg_ir::code::{Expr, Stmt, TypeError};
use sdfg_ir::examples;
use sdfg_ir::state::ScopeError;
use sdfg_ir::validate::{BlockError, ContainerError, EdgeError, NodeError, SdfgError};
use sdfg_ir::{
    BlockKind, Connector, ControlBlock, DType, DataDesc, DataKind, Edge, EdgeId, LibraryOp,
    LoopBlock, Map, MapExit, Memlet, Node, NodeId, Range, Region, Schedule, Sdfg, Side, State,
    Storage, Subset, SymCond, SymExpr, Tasklet, ValidationError, Wcr, validate,
};

const F64: DType = DType::Float64;

// -- Checking --------------------------------------------------------------

/// Every error the validator reports (empty when the SDFG is valid).
fn errors(sdfg: &Sdfg) -> Vec<ValidationError> {
    validate(sdfg).err().map_or_else(Vec::new, |e| e.0)
}

#[track_caller]
fn assert_valid(sdfg: &Sdfg) {
    let found = errors(sdfg);
    assert!(
        found.is_empty(),
        "`{}` should be valid, got {found:#?}",
        sdfg.name
    );
}

/// Asserts that validation reports exactly `expected`, in any order.
#[track_caller]
fn assert_errors(sdfg: &Sdfg, expected: &[ValidationError]) {
    let found = errors(sdfg);
    let missing: Vec<_> = expected.iter().filter(|e| !found.contains(e)).collect();
    let unexpected: Vec<_> = found.iter().filter(|e| !expected.contains(e)).collect();
    assert!(
        missing.is_empty() && unexpected.is_empty() && found.len() == expected.len(),
        "missing: {missing:#?}\nunexpected: {unexpected:#?}\nall found: {found:#?}"
    );
}

#[track_caller]
fn assert_error(sdfg: &Sdfg, expected: ValidationError) {
    assert_errors(sdfg, &[expected]);
}

// -- Expected errors with their locations ------------------------------------

fn sdfg_err(sdfg: &str, error: SdfgError) -> ValidationError {
    ValidationError::Sdfg {
        sdfg: sdfg.into(),
        error,
    }
}

fn container_err(sdfg: &str, container: &str, error: ContainerError) -> ValidationError {
    ValidationError::Container {
        sdfg: sdfg.into(),
        container: container.into(),
        error,
    }
}

fn block_err(sdfg: &str, block: &str, error: BlockError) -> ValidationError {
    ValidationError::Block {
        sdfg: sdfg.into(),
        block: block.into(),
        error,
    }
}

fn node_err(
    sdfg: &str,
    state: &str,
    node: NodeId,
    kind: &'static str,
    label: &str,
    error: NodeError,
) -> ValidationError {
    ValidationError::Node {
        sdfg: sdfg.into(),
        state: state.into(),
        node: node.index() as u32,
        kind,
        label: label.into(),
        error,
    }
}

fn edge_err(
    sdfg: &str,
    state: &str,
    edge: EdgeId,
    (src, dst): (&str, &str),
    error: EdgeError,
) -> ValidationError {
    ValidationError::Edge {
        sdfg: sdfg.into(),
        state: state.into(),
        edge: edge.index() as u32,
        src: src.into(),
        dst: dst.into(),
        error,
    }
}

fn inaccessible(side: Side, by: &str, container: &str, storage: Storage) -> EdgeError {
    EdgeError::Inaccessible {
        side,
        by: by.into(),
        container: container.into(),
        storage,
    }
}

// -- Finding and changing parts of an SDFG -----------------------------------

fn block_mut<'a>(sdfg: &'a mut Sdfg, label: &str) -> &'a mut ControlBlock {
    fn find<'a>(region: &'a mut Region, label: &str) -> Option<&'a mut ControlBlock> {
        for block in &mut region.blocks {
            if block.label == label {
                return Some(block);
            }
            let found = match &mut block.kind {
                BlockKind::Loop(l) => find(&mut l.body, label),
                BlockKind::Conditional(c) => c
                    .branches
                    .iter_mut()
                    .map(|(_, r)| r)
                    .chain(c.otherwise.as_mut())
                    .find_map(|r| find(r, label)),
                _ => None,
            };
            if found.is_some() {
                return found;
            }
        }
        None
    }
    find(&mut sdfg.body, label).unwrap_or_else(|| panic!("no block `{label}`"))
}

fn loop_mut<'a>(sdfg: &'a mut Sdfg, label: &str) -> &'a mut LoopBlock {
    match &mut block_mut(sdfg, label).kind {
        BlockKind::Loop(l) => l,
        _ => panic!("`{label}` is not a loop"),
    }
}

fn state_mut<'a>(sdfg: &'a mut Sdfg, label: &str) -> &'a mut State {
    match &mut block_mut(sdfg, label).kind {
        BlockKind::State(s) => s,
        _ => panic!("`{label}` is not a state"),
    }
}

fn state<'a>(sdfg: &'a Sdfg, label: &str) -> &'a State {
    sdfg.states()
        .into_iter()
        .find(|(l, _)| *l == label)
        .unwrap_or_else(|| panic!("no state `{label}`"))
        .1
}

/// The nodes of the given kind and label, in id order.
fn nodes(state: &State, kind: &str, label: &str) -> Vec<NodeId> {
    state
        .nodes()
        .filter(|(_, n)| n.kind_name() == kind && n.label() == label)
        .map(|(id, _)| id)
        .collect()
}

/// The first node of the given kind and label.
fn node(state: &State, kind: &str, label: &str) -> NodeId {
    *nodes(state, kind, label)
        .first()
        .unwrap_or_else(|| panic!("no {kind} `{label}`"))
}

fn access(state: &State, data: &str) -> NodeId {
    node(state, "access node", data)
}

/// The first edge from `src` to `dst`.
fn edge(state: &State, src: NodeId, dst: NodeId) -> EdgeId {
    state
        .edges()
        .find(|(_, s, d, _)| (*s, *d) == (src, dst))
        .unwrap_or_else(|| panic!("no edge {src:?} -> {dst:?}"))
        .0
}

fn edge_mut(state: &mut State, id: EdgeId) -> &mut Edge {
    state.graph.edge_weight_mut(id).expect("edge exists")
}

fn memlet_mut(state: &mut State, id: EdgeId) -> &mut Memlet {
    edge_mut(state, id)
        .memlet
        .as_mut()
        .expect("edge carries data")
}

fn node_mut(state: &mut State, id: NodeId) -> &mut Node {
    state.graph.node_weight_mut(id).expect("node exists")
}

fn tasklet_mut(state: &mut State, id: NodeId) -> &mut Tasklet {
    match node_mut(state, id) {
        Node::Tasklet(t) => t,
        other => panic!("not a tasklet: {other:?}"),
    }
}

fn nested_mut(state: &mut State, id: NodeId) -> &mut sdfg_ir::NestedSdfg {
    match node_mut(state, id) {
        Node::NestedSdfg(n) => n,
        other => panic!("not a nested SDFG: {other:?}"),
    }
}

fn library_mut(state: &mut State, id: NodeId) -> &mut sdfg_ir::LibraryNode {
    match node_mut(state, id) {
        Node::Library(l) => l,
        other => panic!("not a library node: {other:?}"),
    }
}

fn expr(text: &str) -> SymExpr {
    SymExpr::parse(text).expect("expression parses")
}

fn cond(text: &str) -> SymCond {
    SymCond::parse(text).expect("condition parses")
}

fn memlet(data: &str, subset: &str) -> Memlet {
    Memlet::parse(data, subset).expect("memlet parses")
}

fn range(text: &str) -> Range {
    text.parse().expect("range parses")
}

fn f64c(name: &str) -> Connector {
    Connector::scalar(name, F64)
}

fn array(shape: &str, storage: Storage) -> DataDesc {
    let shape = Subset::parse(shape)
        .expect("shape parses")
        .ranges
        .into_iter()
        .map(|r| r.begin)
        .collect();
    DataDesc::array(F64, shape).with_storage(storage)
}

// -- Small valid SDFGs to break ------------------------------------------------

fn axpy() -> Sdfg {
    examples::axpy().expect("axpy builds")
}

/// `y[0] = 2 * x[0]` by the tasklet `double` in state `s`.
/// Nodes: `x` 0, `y` 1, `double` 2; edges: `x -> double` 0, `double -> y` 1.
fn tasklet_sdfg(x: Storage, y: Storage) -> Sdfg {
    let mut b = SdfgBuilder::new("tiny");
    b.symbol("N")
        .container("x", array("N", x))
        .container("y", array("N", y));
    b.state("s", |s| {
        let x = s.access("x");
        let y = s.access("y");
        let t = s.tasklet(
            "double",
            vec![f64c("a")],
            vec![f64c("b")],
            vec![Stmt::assign("b", Expr::var("a") * Expr::f64(2.0))],
        );
        s.edge(x, None, t, Some("a"), "x[0]");
        s.edge(t, Some("b"), y, None, "y[0]");
    });
    b.build().expect("tiny builds")
}

fn tiny() -> Sdfg {
    tasklet_sdfg(Storage::Default, Storage::Default)
}

/// `y[i] = 2 * x[i]` in the map `scale` (state `compute`).
/// Nodes: `x` 0, `y` 1, entry 2, exit 3, `mul` 4; edges: `x -> scale` 0,
/// `scale -> mul` 1, `mul -> scale` 2, `scale -> y` 3.
fn scale_sdfg(schedule: Schedule, x: Storage, y: Storage) -> Sdfg {
    let mut b = SdfgBuilder::new("scale");
    b.symbol("N")
        .container("x", array("N", x))
        .container("y", array("N", y));
    b.state("compute", |s| {
        let x = s.access("x");
        let y = s.access("y");
        s.mapped_tasklet(
            "scale",
            "i = 0:N",
            schedule,
            vec![(x, f64c("a"), "x[i]")],
            vec![Stmt::assign("b", Expr::var("a") * Expr::f64(2.0))],
            vec![(f64c("b"), y, "y[i]")],
        );
    });
    b.build().expect("scale builds")
}

/// `sdfg` with its schedules decided ([`Sdfg::schedules_decided`]): a
/// state `kernel` running a device kernel on device transients of its own
/// comes first. The rule that host code never touches device storage
/// applies only then; before, such storage is data already on the GPU.
fn with_a_kernel(mut sdfg: Sdfg) -> Sdfg {
    let mut b = SdfgBuilder::new("kernel");
    b.symbol("N")
        .container("kernel_x", array("N", Storage::DeviceGlobal))
        .container("kernel_y", array("N", Storage::DeviceGlobal));
    b.state("kernel", |s| {
        let x = s.access("kernel_x");
        let y = s.access("kernel_y");
        s.mapped_tasklet(
            "kernel_scale",
            "i = 0:N",
            Schedule::DeviceKernel,
            vec![(x, f64c("a"), "kernel_x[i]")],
            vec![Stmt::assign("b", Expr::var("a") * Expr::f64(2.0))],
            vec![(f64c("b"), y, "kernel_y[i]")],
        );
    });
    let kernel = b.build().expect("kernel builds");
    for (x, mut d) in kernel.containers {
        d.transient = true;
        sdfg.containers.insert(x, d);
    }
    sdfg.body.blocks.insert(0, kernel.body.blocks[0].clone());
    assert!(sdfg.schedules_decided());
    sdfg
}

/// Control flow only: state `start` (assigns `s = N` after it), the loop
/// `loop` over `k` with state `body`, the conditional `branch` on `s > 0`
/// with state `then`. `n` is an `int64` array argument interstate code may read.
fn control_sdfg() -> Sdfg {
    let mut b = SdfgBuilder::new("control");
    b.symbol("N")
        .local_symbol("s")
        .array("n", DType::Int64, "N");
    b.state("start", |_| {}).assign("s", "N");
    b.for_loop("loop", "k", "0", "N", 1, |b| {
        b.state("body", |_| {});
    });
    b.if_else(
        "branch",
        "s > 0",
        |b| {
            b.state("then", |_| {});
        },
        None,
    );
    b.build().expect("control builds")
}

fn map(label: &str, params: &[&str], ranges: &[&str], schedule: Schedule) -> Map {
    Map {
        label: label.into(),
        params: params.iter().map(|p| (*p).to_owned()).collect(),
        ranges: ranges.iter().map(|r| range(r)).collect(),
        schedule,
    }
}

/// The given maps nested in order (the first outermost), connected by empty
/// memlets, in state `maps`. Map `k` has entry `2k` and exit `2k + 1`. Also
/// declares a transient scalar `x` that nothing uses.
fn maps_sdfg(maps: Vec<Map>) -> Sdfg {
    let mut b = SdfgBuilder::new("maps");
    b.symbol("N").transient_scalar("x", F64);
    b.state("maps", |s| {
        let scopes: Vec<(NodeId, NodeId)> = maps.into_iter().map(|m| s.map_with(m)).collect();
        let chain: Vec<NodeId> = scopes
            .iter()
            .map(|(entry, _)| *entry)
            .chain(scopes.iter().rev().map(|(_, exit)| *exit))
            .collect();
        for pair in chain.windows(2) {
            s.empty_edge(pair[0], pair[1]);
        }
    });
    b.build().expect("maps builds")
}

fn entry_id(k: usize) -> NodeId {
    NodeId::new(2 * k)
}

/// The inner SDFG `flip`: `dst[i] = src[M - 1 - i]` in the map `reverse`
/// (state `reverse`). Nodes: `src` 0, `dst` 1, entry 2, exit 3, `copy` 4;
/// edges: `src -> reverse` 0, `reverse -> copy` 1, `copy -> reverse` 2, `reverse -> dst` 3.
fn flip(src: Storage, dst: Storage, schedule: Schedule) -> Sdfg {
    let mut b = SdfgBuilder::new("flip");
    b.symbol("M")
        .container("src", array("M", src))
        .container("dst", array("M", dst));
    b.state("reverse", |s| {
        let a = s.access("src");
        let d = s.access("dst");
        s.mapped_tasklet(
            "reverse",
            "i = 0:M",
            schedule,
            vec![(a, f64c("a"), "src[M - 1 - i]")],
            vec![Stmt::assign("b", Expr::var("a"))],
            vec![(f64c("b"), d, "dst[i]")],
        );
    });
    b.build().expect("flip builds")
}

/// A kernel `kernel` (state `launch` of SDFG `outer`) that calls `inner`
/// on device-global `x_dev` and `y_dev`.
fn kernel_with_nested(inner: Sdfg) -> Sdfg {
    launch_with_nested(inner, Schedule::DeviceKernel)
}

/// [`kernel_with_nested`] with the kernel's map of `schedule`.
fn launch_with_nested(inner: Sdfg, schedule: Schedule) -> Sdfg {
    let mut b = SdfgBuilder::new("outer");
    b.symbol("N")
        .container("x_dev", array("N", Storage::DeviceGlobal))
        .container("y_dev", array("N", Storage::DeviceGlobal));
    b.state("launch", |s| {
        let xd = s.access("x_dev");
        let yd = s.access("y_dev");
        let (entry, exit) = s.map("kernel", "b = 0:1", schedule);
        let n = s.nested("flip", inner, &["src"], &["dst"], &[("M", "N")]);
        s.path(&[xd, entry, n], None, Some("src"), "x_dev[0:N]");
        s.path(&[n, exit, yd], Some("dst"), None, "y_dev[0:N]");
    });
    b.build().expect("outer builds")
}

// == Valid SDFGs =============================================================

#[test]
fn every_example_validates() {
    let all = examples::all();
    assert!(all.len() >= 8, "the eight documented examples, at least");
    for (name, build) in all {
        let sdfg = build().unwrap_or_else(|e| panic!("example `{name}` does not build: {e}"));
        assert_eq!(sdfg.name, name);
        let found = errors(&sdfg);
        assert!(found.is_empty(), "example `{name}` is invalid: {found:#?}");
        assert!(validate(&sdfg).is_ok_and(|v| std::ptr::eq(v.sdfg(), &sdfg)));
    }
}

#[test]
fn the_small_sdfgs_of_these_tests_are_valid() {
    assert_valid(&tiny());
    assert_valid(&tasklet_sdfg(Storage::Host, Storage::HostPinned));
    assert_valid(&scale_sdfg(
        Schedule::Default,
        Storage::Default,
        Storage::Host,
    ));
    assert_valid(&scale_sdfg(
        Schedule::DeviceKernel,
        Storage::DeviceGlobal,
        Storage::DeviceGlobal,
    ));
    assert_valid(&control_sdfg());
    assert_valid(&maps_sdfg(vec![map(
        "m",
        &["i"],
        &["0:N"],
        Schedule::Default,
    )]));
    assert_valid(&maps_sdfg(vec![
        map("grid", &["b"], &["0:N"], Schedule::DeviceKernel),
        map("block", &["t"], &["0:32"], Schedule::DeviceThreadBlock),
    ]));
    assert_valid(&flip(Storage::Default, Storage::Default, Schedule::Default));
    assert_valid(&kernel_with_nested(flip(
        Storage::DeviceGlobal,
        Storage::DeviceGlobal,
        Schedule::Default,
    )));
}

#[test]
fn registers_and_pinned_memory_are_readable_by_interstate_code() {
    for storage in [Storage::Host, Storage::HostPinned, Storage::Register] {
        let mut sdfg = control_sdfg();
        let n = sdfg.containers.get_mut("n").unwrap();
        n.storage = storage;
        n.transient = true;
        sdfg.arguments.retain(|a| a != "n");
        block_mut(&mut sdfg, "start").transition.assignments[0].value = expr("n[0] + 1");
        assert_valid(&sdfg);
    }
}

#[test]
fn a_nested_sdfg_in_a_kernel_may_take_device_shared_memory() {
    // The kernel stages a row in shared memory and passes the tile to a
    // nested SDFG whose argument `src` is therefore in shared memory: the
    // caller is the kernel, not the host program.
    let mut b = SdfgBuilder::new("tiled");
    b.symbol("N")
        .container("x_dev", array("N, 32", Storage::DeviceGlobal))
        .container("y_dev", array("N, 32", Storage::DeviceGlobal))
        .container("tile", array("32", Storage::DeviceShared).into_transient());
    b.state("kernel", |s| {
        let xd = s.access("x_dev");
        let yd = s.access("y_dev");
        let tile = s.access("tile");
        let (entry, exit) = s.map("blocks", "b = 0:N", Schedule::DeviceKernel);
        let inner = flip(
            Storage::DeviceShared,
            Storage::DeviceGlobal,
            Schedule::Default,
        );
        let n = s.nested("flip", inner, &["src"], &["dst"], &[("M", "32")]);
        s.path(&[xd, entry, tile], None, None, "x_dev[b, 0:32]");
        s.edge(tile, None, n, Some("src"), "tile[0:32]");
        s.path(&[n, exit, yd], Some("dst"), None, "y_dev[b, 0:32]");
    });
    let sdfg = b.build().unwrap();
    assert_valid(&sdfg);
}

// == SDFG rules ==============================================================

#[test]
fn sdfg_invalid_names() {
    let mut sdfg = axpy();
    sdfg.name = "my axpy".into();
    assert_error(
        &sdfg,
        sdfg_err(
            "my axpy",
            SdfgError::InvalidName {
                name: "my axpy".into(),
                what: "SDFG",
            },
        ),
    );

    let mut sdfg = axpy();
    sdfg.symbols.insert("2N".into(), DType::Int64);
    assert_error(
        &sdfg,
        sdfg_err(
            "axpy",
            SdfgError::InvalidName {
                name: "2N".into(),
                what: "symbol",
            },
        ),
    );

    let mut sdfg = axpy();
    sdfg.containers
        .insert("bad-name".into(), DataDesc::scalar(F64).into_transient());
    assert_error(
        &sdfg,
        sdfg_err(
            "axpy",
            SdfgError::InvalidName {
                name: "bad-name".into(),
                what: "container",
            },
        ),
    );
}

#[test]
fn sdfg_unknown_argument() {
    let mut sdfg = axpy();
    sdfg.arguments.push("ghost".into());
    assert_error(
        &sdfg,
        sdfg_err(
            "axpy",
            SdfgError::UnknownArgument {
                name: "ghost".into(),
            },
        ),
    );
}

#[test]
fn sdfg_duplicate_argument() {
    let mut sdfg = axpy();
    sdfg.arguments.push("x".into());
    assert_error(
        &sdfg,
        sdfg_err("axpy", SdfgError::DuplicateArgument { name: "x".into() }),
    );
    // A symbol listed twice, too.
    let mut sdfg = axpy();
    sdfg.arguments.push("N".into());
    assert_error(
        &sdfg,
        sdfg_err("axpy", SdfgError::DuplicateArgument { name: "N".into() }),
    );
}

#[test]
fn sdfg_transient_argument() {
    let mut sdfg = axpy();
    sdfg.containers
        .insert("tmp".into(), DataDesc::scalar(F64).into_transient());
    sdfg.arguments.push("tmp".into());
    assert_error(
        &sdfg,
        sdfg_err("axpy", SdfgError::TransientArgument { name: "tmp".into() }),
    );
}

#[test]
fn sdfg_missing_argument() {
    let mut sdfg = axpy();
    sdfg.arguments.retain(|a| a != "x");
    assert_error(
        &sdfg,
        sdfg_err("axpy", SdfgError::MissingArgument { name: "x".into() }),
    );
}

#[test]
fn sdfg_name_clash() {
    let mut sdfg = axpy();
    sdfg.symbols.insert("x".into(), DType::Int64);
    assert_error(
        &sdfg,
        sdfg_err("axpy", SdfgError::NameClash { name: "x".into() }),
    );
}

#[test]
fn sdfg_non_integer_symbol() {
    let mut sdfg = axpy();
    sdfg.symbols.insert("N".into(), DType::Float64);
    assert_error(
        &sdfg,
        sdfg_err(
            "axpy",
            SdfgError::NonIntegerSymbol {
                name: "N".into(),
                dtype: DType::Float64,
            },
        ),
    );
}

#[test]
fn sdfg_duplicate_label() {
    // `halve` is inside the while loop, `init` at top level: labels are unique
    // across the whole SDFG, not per region.
    let mut sdfg = examples::converge().unwrap();
    block_mut(&mut sdfg, "halve").label = "init".into();
    assert_error(
        &sdfg,
        sdfg_err(
            "converge",
            SdfgError::DuplicateLabel {
                label: "init".into(),
            },
        ),
    );
}

// == Container rules =========================================================

#[test]
fn container_undefined_symbol() {
    let mut sdfg = axpy();
    sdfg.containers.insert(
        "buf".into(),
        DataDesc::array(F64, vec![SymExpr::symbol("M")]).into_transient(),
    );
    assert_error(
        &sdfg,
        container_err(
            "axpy",
            "buf",
            ContainerError::UndefinedSymbol { symbol: "M".into() },
        ),
    );
}

#[test]
fn container_strides_rank() {
    let mut sdfg = axpy();
    match &mut sdfg.containers.get_mut("y").unwrap().kind {
        DataKind::Array(layout) => layout.strides.push(SymExpr::int(1)),
        other => panic!("y is not an array: {other:?}"),
    }
    assert_error(
        &sdfg,
        container_err(
            "axpy",
            "y",
            ContainerError::StridesRank {
                shape: 1,
                strides: 2,
            },
        ),
    );
}

#[test]
fn container_division_by_zero() {
    // `N // 0` evaluates for no N: refused whether or not a pass would
    // later remove the container (a fuzzer's JSON mutant ran offloaded,
    // where the container was gone, but not on the host).
    let mut sdfg = axpy();
    let bad = SymExpr::symbol("N").floor_div(&SymExpr::int(0));
    assert!(bad.divides_by_zero());
    sdfg.containers.insert(
        "tmp".into(),
        DataDesc::array(F64, vec![bad.clone()]).into_transient(),
    );
    assert_error(
        &sdfg,
        container_err(
            "axpy",
            "tmp",
            ContainerError::DivisionByZero {
                expr: bad.to_string(),
            },
        ),
    );
    // Divisions by anything else stay.
    let mut sdfg = axpy();
    let n = SymExpr::symbol("N");
    sdfg.containers.insert(
        "tmp".into(),
        DataDesc::array(F64, vec![n.floor_div(&SymExpr::int(2)), n.modulo(&n)]).into_transient(),
    );
    assert_valid(&sdfg);
}

#[test]
fn container_negative_extent() {
    let mut sdfg = axpy();
    sdfg.containers.insert(
        "neg".into(),
        DataDesc::array(F64, vec![SymExpr::int(4), SymExpr::int(-3)]).into_transient(),
    );
    assert_error(
        &sdfg,
        container_err(
            "axpy",
            "neg",
            ContainerError::NegativeExtent { dim: 1, extent: -3 },
        ),
    );
}

#[test]
fn container_view_not_transient() {
    let mut sdfg = examples::nested_flip().unwrap();
    sdfg.containers.get_mut("row").unwrap().transient = false;
    sdfg.arguments.push("row".into());
    assert_error(
        &sdfg,
        container_err("nested_flip", "row", ContainerError::ViewNotTransient),
    );
}

#[test]
fn container_argument_storage() {
    // A register argument (registers are reachable from both sides, so only
    // this rule is broken).
    let mut sdfg = axpy();
    sdfg.containers.get_mut("a").unwrap().storage = Storage::Register;
    assert_error(
        &sdfg,
        container_err(
            "axpy",
            "a",
            ContainerError::ArgumentStorage {
                storage: Storage::Register,
            },
        ),
    );
    // A device-shared argument nothing accesses.
    let mut sdfg = axpy();
    sdfg.containers.insert(
        "sh".into(),
        DataDesc::scalar(F64).with_storage(Storage::DeviceShared),
    );
    sdfg.arguments.push("sh".into());
    assert_error(
        &sdfg,
        container_err(
            "axpy",
            "sh",
            ContainerError::ArgumentStorage {
                storage: Storage::DeviceShared,
            },
        ),
    );
}

// == Block rules =============================================================

#[test]
fn block_undefined_symbol_everywhere_interstate_code_is() {
    let undefined = |what| BlockError::UndefinedSymbol {
        what,
        symbol: "M".into(),
    };

    let mut sdfg = control_sdfg();
    loop_mut(&mut sdfg, "loop").condition = cond("k < M");
    assert_error(
        &sdfg,
        block_err("control", "loop", undefined("loop condition")),
    );

    let mut sdfg = control_sdfg();
    loop_mut(&mut sdfg, "loop").init = Some(expr("M"));
    assert_error(&sdfg, block_err("control", "loop", undefined("loop init")));

    let mut sdfg = control_sdfg();
    loop_mut(&mut sdfg, "loop").update = Some(expr("k + M"));
    assert_error(
        &sdfg,
        block_err("control", "loop", undefined("loop update")),
    );

    let mut sdfg = control_sdfg();
    match &mut block_mut(&mut sdfg, "branch").kind {
        BlockKind::Conditional(c) => c.branches[0].0 = cond("M > 0"),
        _ => unreachable!(),
    }
    assert_error(
        &sdfg,
        block_err("control", "branch", undefined("branch condition")),
    );

    let mut sdfg = control_sdfg();
    block_mut(&mut sdfg, "start").transition.assignments[0].value = expr("M + 1");
    assert_error(
        &sdfg,
        block_err("control", "start", undefined("transition assignment")),
    );

    // Inside a loop the block path names the loop.
    let mut sdfg = control_sdfg();
    block_mut(&mut sdfg, "body")
        .transition
        .assignments
        .push(sdfg_ir::Assignment {
            symbol: "s".into(),
            value: expr("M"),
        });
    assert_error(
        &sdfg,
        block_err("control", "loop/body", undefined("transition assignment")),
    );
}

#[test]
fn block_assigns_container() {
    let mut sdfg = examples::converge().unwrap();
    block_mut(&mut sdfg, "init")
        .transition
        .assignments
        .push(sdfg_ir::Assignment {
            symbol: "flag".into(),
            value: expr("0"),
        });
    assert_error(
        &sdfg,
        block_err(
            "converge",
            "init",
            BlockError::AssignsContainer {
                name: "flag".into(),
            },
        ),
    );
}

#[test]
fn block_assigns_undeclared() {
    let mut sdfg = control_sdfg();
    block_mut(&mut sdfg, "start").transition.assignments[0].symbol = "q".into();
    assert_error(
        &sdfg,
        block_err(
            "control",
            "start",
            BlockError::AssignsUndeclared { name: "q".into() },
        ),
    );
}

#[test]
fn block_unknown_read() {
    let mut sdfg = control_sdfg();
    match &mut block_mut(&mut sdfg, "branch").kind {
        BlockKind::Conditional(c) => c.branches[0].0 = cond("ghost[0] > 0"),
        _ => unreachable!(),
    }
    assert_error(
        &sdfg,
        block_err(
            "control",
            "branch",
            BlockError::UnknownRead {
                what: "branch condition",
                name: "ghost".into(),
            },
        ),
    );
}

#[test]
fn block_bad_read_of_a_stream() {
    let mut sdfg = control_sdfg();
    sdfg.containers.insert(
        "events".into(),
        DataDesc::stream(DType::Int64, vec![SymExpr::int(1)], SymExpr::int(0)).into_transient(),
    );
    loop_mut(&mut sdfg, "loop").condition = cond("k < events[0]");
    assert_error(
        &sdfg,
        block_err(
            "control",
            "loop",
            BlockError::BadRead {
                what: "loop condition",
                name: "events".into(),
                reason: "a stream cannot be read by interstate code".into(),
            },
        ),
    );
}

#[test]
fn block_bad_read_of_floating_point_data() {
    let mut sdfg = control_sdfg();
    sdfg.containers
        .insert("err".into(), DataDesc::scalar(F64).into_transient());
    block_mut(&mut sdfg, "start").transition.assignments[0].value = expr("err[0]");
    assert_error(
        &sdfg,
        block_err(
            "control",
            "start",
            BlockError::BadRead {
                what: "transition assignment",
                name: "err".into(),
                reason: "it holds float64; interstate code reads integers and booleans only".into(),
            },
        ),
    );
}

#[test]
fn block_bad_read_with_the_wrong_number_of_indices() {
    let mut sdfg = control_sdfg();
    loop_mut(&mut sdfg, "loop").init = Some(expr("n[0, 1]"));
    assert_error(
        &sdfg,
        block_err(
            "control",
            "loop",
            BlockError::BadRead {
                what: "loop init",
                name: "n".into(),
                reason: "it is read with 2 indices but has rank 1".into(),
            },
        ),
    );
    // Reads nested inside another read's index are checked too.
    let mut sdfg = control_sdfg();
    loop_mut(&mut sdfg, "loop").update = Some(expr("k + n[n[0, 0]]"));
    assert_error(
        &sdfg,
        block_err(
            "control",
            "loop",
            BlockError::BadRead {
                what: "loop update",
                name: "n".into(),
                reason: "it is read with 2 indices but has rank 1".into(),
            },
        ),
    );
}

#[test]
fn block_host_reads_device() {
    let device_n = || {
        let mut sdfg = control_sdfg();
        sdfg.containers.get_mut("n").unwrap().storage = Storage::DeviceGlobal;
        with_a_kernel(sdfg)
    };

    let mut sdfg = device_n();
    match &mut block_mut(&mut sdfg, "branch").kind {
        BlockKind::Conditional(c) => c.branches[0].0 = cond("n[0] > 0"),
        _ => unreachable!(),
    }
    assert_error(
        &sdfg,
        block_err(
            "control",
            "branch",
            BlockError::Inaccessible {
                side: Side::Host,
                what: "branch condition",
                container: "n".into(),
                storage: Storage::DeviceGlobal,
            },
        ),
    );

    let mut sdfg = device_n();
    block_mut(&mut sdfg, "body")
        .transition
        .assignments
        .push(sdfg_ir::Assignment {
            symbol: "s".into(),
            value: expr("n[k]"),
        });
    assert_error(
        &sdfg,
        block_err(
            "control",
            "loop/body",
            BlockError::Inaccessible {
                side: Side::Host,
                what: "transition assignment",
                container: "n".into(),
                storage: Storage::DeviceGlobal,
            },
        ),
    );

    // Shared memory is device memory as well.
    let mut sdfg = control_sdfg();
    sdfg.containers.insert(
        "tile".into(),
        DataDesc::array(DType::Int32, vec![SymExpr::int(32)])
            .into_transient()
            .with_storage(Storage::DeviceShared),
    );
    loop_mut(&mut sdfg, "loop").condition = cond("k < tile[0]");
    assert_error(
        &sdfg,
        block_err(
            "control",
            "loop",
            BlockError::Inaccessible {
                side: Side::Host,
                what: "loop condition",
                container: "tile".into(),
                storage: Storage::DeviceShared,
            },
        ),
    );
}

#[test]
fn block_jump_outside_loop() {
    let mut b = SdfgBuilder::new("jumps");
    b.symbol("N");
    b.state("start", |_| {});
    b.break_("stop");
    b.if_else(
        "branch",
        "N > 0",
        |b| {
            b.continue_("skip");
        },
        None,
    );
    // Inside a loop (and inside a conditional in it) jumps are fine.
    b.while_loop("spin", "N > 0", |b| {
        b.if_else(
            "inner",
            "N > 1",
            |b| {
                b.break_("leave");
            },
            None,
        );
        b.continue_("again");
    });
    let sdfg = b.build().unwrap();
    assert_errors(
        &sdfg,
        &[
            block_err(
                "jumps",
                "stop",
                BlockError::JumpOutsideLoop { kind: "break" },
            ),
            block_err(
                "jumps",
                "branch/skip",
                BlockError::JumpOutsideLoop { kind: "continue" },
            ),
        ],
    );
}

#[test]
fn block_empty_conditional() {
    let mut sdfg = control_sdfg();
    match &mut block_mut(&mut sdfg, "branch").kind {
        BlockKind::Conditional(c) => {
            c.branches.clear();
            c.otherwise = Some(Region::default());
        }
        _ => unreachable!(),
    }
    assert_error(
        &sdfg,
        block_err("control", "branch", BlockError::EmptyConditional),
    );
}

#[test]
fn block_incomplete_loop() {
    // A `for` loop without update.
    let mut sdfg = control_sdfg();
    loop_mut(&mut sdfg, "loop").update = None;
    assert_error(
        &sdfg,
        block_err("control", "loop", BlockError::IncompleteLoop),
    );
    // A `for` loop without init.
    let mut sdfg = control_sdfg();
    loop_mut(&mut sdfg, "loop").init = None;
    assert_error(
        &sdfg,
        block_err("control", "loop", BlockError::IncompleteLoop),
    );
    // A `while` loop with an init.
    let mut sdfg = control_sdfg();
    let l = loop_mut(&mut sdfg, "loop");
    l.variable = None;
    l.update = None;
    assert_error(
        &sdfg,
        block_err("control", "loop", BlockError::IncompleteLoop),
    );
}

#[test]
fn block_undeclared_loop_variable() {
    let mut sdfg = control_sdfg();
    loop_mut(&mut sdfg, "loop").variable = Some("z".into());
    assert_error(
        &sdfg,
        block_err(
            "control",
            "loop",
            BlockError::UndeclaredLoopVariable { name: "z".into() },
        ),
    );
}

// == Node rules ==============================================================

#[test]
fn node_unknown_container() {
    let mut sdfg = axpy();
    let ghost = state_mut(&mut sdfg, "compute").add_access("ghost");
    let on_ghost = |error| node_err("axpy", "compute", ghost, "access node", "ghost", error);
    assert_errors(
        &sdfg,
        &[
            on_ghost(NodeError::UnknownContainer {
                data: "ghost".into(),
            }),
            on_ghost(NodeError::IsolatedAccess),
        ],
    );
}

#[test]
fn a_missing_container_is_reported_everywhere_it_is_used_without_panicking() {
    let mut sdfg = axpy();
    sdfg.containers.remove("x");
    sdfg.arguments.retain(|a| a != "x");
    let st = state(&sdfg, "compute");
    let (x, entry, fma) = (
        access(st, "x"),
        node(st, "map entry", "axpy"),
        node(st, "tasklet", "fma"),
    );
    let (outer, inner) = (
        edge(st, x, entry),
        nodes_edge_with_data(st, entry, fma, "x"),
    );
    let unknown = || EdgeError::UnknownContainer { data: "x".into() };
    assert_errors(
        &sdfg,
        &[
            node_err(
                "axpy",
                "compute",
                x,
                "access node",
                "x",
                NodeError::UnknownContainer { data: "x".into() },
            ),
            edge_err("axpy", "compute", outer, ("x", "axpy"), unknown()),
            edge_err("axpy", "compute", inner, ("axpy", "fma"), unknown()),
        ],
    );
}

/// The edge from `src` to `dst` whose memlet names `data`.
fn nodes_edge_with_data(state: &State, src: NodeId, dst: NodeId, data: &str) -> EdgeId {
    state
        .edges()
        .find(|(_, s, d, e)| {
            (*s, *d) == (src, dst) && e.memlet.as_ref().is_some_and(|m| m.data == data)
        })
        .unwrap_or_else(|| panic!("no edge of `{data}`"))
        .0
}

#[test]
fn node_scope_cycle() {
    let mut b = SdfgBuilder::new("cycle");
    b.array("x", F64, "1").array("y", F64, "1");
    b.state("loop", |s| {
        let x = s.access("x");
        let y = s.access("y");
        s.edge(x, None, y, None, "x[0]");
        s.edge(y, None, x, None, "y[0]");
    });
    let sdfg = b.build().unwrap();
    let found = errors(&sdfg);
    let on = |id: usize, label: &str| {
        node_err(
            "cycle",
            "loop",
            NodeId::new(id),
            "access node",
            label,
            NodeError::Scope(ScopeError::Cycle {
                node: NodeId::new(id),
            }),
        )
    };
    assert!(
        found == [on(0, "x")] || found == [on(1, "y")],
        "expected one cycle error on `x` or `y`, got {found:#?}"
    );
}

#[test]
fn node_scope_conflict() {
    // `fma` is inside the map but also fed directly from the top level.
    let mut sdfg = axpy();
    let st = state_mut(&mut sdfg, "compute");
    let (a, entry, fma) = (
        access(st, "a"),
        node(st, "map entry", "axpy"),
        node(st, "tasklet", "fma"),
    );
    st.add_edge(a, None, fma, Some("alpha"), memlet("a", "0"));
    let found = errors(&sdfg);
    let conflict = |first, second| {
        node_err(
            "axpy",
            "compute",
            fma,
            "tasklet",
            "fma",
            NodeError::Scope(ScopeError::Conflict {
                node: fma,
                first,
                second,
            }),
        )
    };
    assert!(
        found == [conflict(Some(entry), None)] || found == [conflict(None, Some(entry))],
        "expected one scope conflict on `fma`, got {found:#?}"
    );
}

#[test]
fn node_scope_exit_outside_scope() {
    let mut b = SdfgBuilder::new("exit_outside");
    b.symbol("N").array("x", F64, "N");
    b.state("s", |s| {
        let x = s.access("x");
        let (_, exit) = s.map("m", "i = 0:N", Schedule::Default);
        s.empty_edge(x, exit);
    });
    let sdfg = b.build().unwrap();
    let exit = NodeId::new(2);
    assert_error(
        &sdfg,
        node_err(
            "exit_outside",
            "s",
            exit,
            "map exit",
            "m",
            NodeError::Scope(ScopeError::ExitOutsideScope { node: exit }),
        ),
    );
}

#[test]
fn node_scope_dangling() {
    let mut sdfg = axpy();
    let st = state_mut(&mut sdfg, "compute");
    let entry = node(st, "map entry", "axpy");
    let sink = st.add_node(Node::Tasklet(Tasklet {
        label: "sink".into(),
        inputs: vec![],
        outputs: vec![],
        body: vec![],
    }));
    st.add_empty_edge(entry, sink);
    assert_error(
        &sdfg,
        node_err(
            "axpy",
            "compute",
            sink,
            "tasklet",
            "sink",
            NodeError::Scope(ScopeError::Dangling { node: sink }),
        ),
    );
}

#[test]
fn node_bad_connector_not_an_identifier() {
    let mut sdfg = tiny();
    let st = state_mut(&mut sdfg, "s");
    let t = tasklet_mut(st, NodeId::new(2));
    t.inputs[0].name = "a b".into();
    t.body = vec![Stmt::assign("b", Expr::var("a b"))];
    edge_mut(st, EdgeId::new(0)).dst_conn = Some("a b".into());
    assert_error(
        &sdfg,
        node_err(
            "tiny",
            "s",
            NodeId::new(2),
            "tasklet",
            "double",
            NodeError::BadConnector {
                name: "a b".into(),
                reason: "not a valid identifier",
            },
        ),
    );
}

#[test]
fn node_bad_connector_declared_twice() {
    let mut sdfg = tiny();
    let st = state_mut(&mut sdfg, "s");
    tasklet_mut(st, NodeId::new(2)).inputs.push(f64c("a"));
    assert_error(
        &sdfg,
        node_err(
            "tiny",
            "s",
            NodeId::new(2),
            "tasklet",
            "double",
            NodeError::BadConnector {
                name: "a".into(),
                reason: "declared twice",
            },
        ),
    );
}

#[test]
fn node_input_edges() {
    let t = NodeId::new(2);
    // An input connector with no edge.
    let mut sdfg = tiny();
    tasklet_mut(state_mut(&mut sdfg, "s"), t)
        .inputs
        .push(f64c("c"));
    assert_error(
        &sdfg,
        node_err(
            "tiny",
            "s",
            t,
            "tasklet",
            "double",
            NodeError::InputEdges {
                name: "c".into(),
                count: 0,
            },
        ),
    );
    // An input connector with two edges.
    let mut sdfg = tiny();
    let st = state_mut(&mut sdfg, "s");
    st.add_edge(NodeId::new(0), None, t, Some("a"), memlet("x", "1"));
    assert_error(
        &sdfg,
        node_err(
            "tiny",
            "s",
            t,
            "tasklet",
            "double",
            NodeError::InputEdges {
                name: "a".into(),
                count: 2,
            },
        ),
    );
}

#[test]
fn node_dangling_output() {
    let mut sdfg = tiny();
    let t = tasklet_mut(state_mut(&mut sdfg, "s"), NodeId::new(2));
    t.outputs.push(f64c("d"));
    t.body.push(Stmt::assign("d", Expr::var("a")));
    assert_error(
        &sdfg,
        node_err(
            "tiny",
            "s",
            NodeId::new(2),
            "tasklet",
            "double",
            NodeError::DanglingOutput { name: "d".into() },
        ),
    );
}

#[test]
fn node_unpaired_scope_connector() {
    // Rename the entry's `OUT_a` (and the edge leaving it) to `OUT_alpha`:
    // now neither `IN_a` nor `OUT_alpha` has a partner.
    let mut sdfg = axpy();
    let st = state_mut(&mut sdfg, "compute");
    let (entry, fma) = (node(st, "map entry", "axpy"), node(st, "tasklet", "fma"));
    let inner = nodes_edge_with_data(st, entry, fma, "a");
    edge_mut(st, inner).src_conn = Some("OUT_alpha".into());
    match node_mut(st, entry) {
        Node::MapEntry(e) => {
            assert!(e.out_connectors.remove("OUT_a"));
            e.out_connectors.insert("OUT_alpha".into());
        }
        _ => unreachable!(),
    }
    let unpaired = |name: &str, expected: &str| {
        node_err(
            "axpy",
            "compute",
            entry,
            "map entry",
            "axpy",
            NodeError::UnpairedScopeConnector {
                name: name.into(),
                expected: expected.into(),
            },
        )
    };
    assert_errors(
        &sdfg,
        &[
            unpaired("IN_a", "a partner `OUT_a`"),
            unpaired("OUT_alpha", "a partner `IN_alpha`"),
        ],
    );

    // A connector without the prefix has no partner name to ask for.
    let mut sdfg = axpy();
    let st = state_mut(&mut sdfg, "compute");
    let entry = node(st, "map entry", "axpy");
    match node_mut(st, entry) {
        Node::MapEntry(e) => {
            e.in_connectors.insert("foo".into());
        }
        _ => unreachable!(),
    }
    let found = errors(&sdfg);
    assert!(
        found.contains(&unpaired("foo", "the prefix `IN_`")),
        "{found:#?}"
    );
}

#[test]
fn node_map_arity() {
    let mut m = map("m", &["i"], &["0:N"], Schedule::Default);
    m.ranges.push(range("0:4"));
    assert_error(
        &maps_sdfg(vec![m]),
        node_err(
            "maps",
            "maps",
            entry_id(0),
            "map entry",
            "m",
            NodeError::MapArity {
                params: 1,
                ranges: 2,
            },
        ),
    );
}

#[test]
fn node_bad_map_param_for_each_reason() {
    let bad = |k: usize, label: &str, name: &str, reason| {
        node_err(
            "maps",
            "maps",
            entry_id(k),
            "map entry",
            label,
            NodeError::BadMapParam {
                name: name.into(),
                reason,
            },
        )
    };
    assert_error(
        &maps_sdfg(vec![map("m", &["1i"], &["0:N"], Schedule::Default)]),
        bad(0, "m", "1i", "is not a valid identifier"),
    );
    assert_error(
        &maps_sdfg(vec![map(
            "m",
            &["i", "i"],
            &["0:N", "0:N"],
            Schedule::Default,
        )]),
        bad(0, "m", "i", "is repeated"),
    );
    assert_error(
        &maps_sdfg(vec![map("m", &["N"], &["0:4"], Schedule::Default)]),
        bad(
            0,
            "m",
            "N",
            "shadows a symbol or an enclosing map's parameter",
        ),
    );
    assert_error(
        &maps_sdfg(vec![
            map("outer", &["i"], &["0:N"], Schedule::Default),
            map("inner", &["i"], &["0:N"], Schedule::Default),
        ]),
        bad(
            1,
            "inner",
            "i",
            "shadows a symbol or an enclosing map's parameter",
        ),
    );
    assert_error(
        &maps_sdfg(vec![map("m", &["x"], &["0:N"], Schedule::Default)]),
        bad(0, "m", "x", "shadows a container"),
    );
}

#[test]
fn node_zero_step() {
    let mut m = map("m", &["i", "j"], &["0:N", "0:N"], Schedule::Default);
    m.ranges[1].step = SymExpr::int(0);
    assert_error(
        &maps_sdfg(vec![m]),
        node_err(
            "maps",
            "maps",
            entry_id(0),
            "map entry",
            "m",
            NodeError::ZeroStep { param: "j".into() },
        ),
    );
}

#[test]
fn node_map_range_undefined_symbol() {
    assert_error(
        &maps_sdfg(vec![map("m", &["i"], &["0:M"], Schedule::Default)]),
        node_err(
            "maps",
            "maps",
            entry_id(0),
            "map entry",
            "m",
            NodeError::UndefinedSymbol { symbol: "M".into() },
        ),
    );
    // An inner map may use the outer map's parameter, but not its own.
    assert_valid(&maps_sdfg(vec![
        map("outer", &["i"], &["0:N"], Schedule::Default),
        map("inner", &["j"], &["i:N"], Schedule::Default),
    ]));
    assert_error(
        &maps_sdfg(vec![map("m", &["i"], &["0:i"], Schedule::Default)]),
        node_err(
            "maps",
            "maps",
            entry_id(0),
            "map entry",
            "m",
            NodeError::UndefinedSymbol { symbol: "i".into() },
        ),
    );
}

#[test]
fn node_map_pairing_entry_without_exit() {
    let mut sdfg = maps_sdfg(vec![map("m", &["i"], &["0:N"], Schedule::Default)]);
    state_mut(&mut sdfg, "maps")
        .graph
        .remove_node(NodeId::new(1));
    assert_error(
        &sdfg,
        node_err(
            "maps",
            "maps",
            entry_id(0),
            "map entry",
            "m",
            NodeError::MapPairing("map entry has no exit"),
        ),
    );
}

#[test]
fn node_map_pairing_entry_with_two_exits() {
    let mut sdfg = maps_sdfg(vec![map("m", &["i"], &["0:N"], Schedule::Default)]);
    let st = state_mut(&mut sdfg, "maps");
    let second = st.add_node(Node::MapExit(MapExit {
        entry: entry_id(0),
        label: "m".into(),
        in_connectors: Default::default(),
        out_connectors: Default::default(),
    }));
    st.add_empty_edge(entry_id(0), second);
    assert_error(
        &sdfg,
        node_err(
            "maps",
            "maps",
            entry_id(0),
            "map entry",
            "m",
            NodeError::MapPairing("map entry has more than one exit"),
        ),
    );
}

#[test]
fn node_map_pairing_exit_of_something_else() {
    let exit = NodeId::new(1);
    // The exit refers to an access node ...
    let mut sdfg = maps_sdfg(vec![map("m", &["i"], &["0:N"], Schedule::Default)]);
    let st = state_mut(&mut sdfg, "maps");
    let x = st.add_access("x");
    st.graph.remove_edge(EdgeId::new(0));
    st.add_empty_edge(x, exit);
    st.graph.remove_node(entry_id(0));
    match node_mut(st, exit) {
        Node::MapExit(e) => e.entry = x,
        _ => unreachable!(),
    }
    let pairing = node_err(
        "maps",
        "maps",
        exit,
        "map exit",
        "m",
        NodeError::MapPairing("map exit refers to a node that is not a map entry"),
    );
    assert_error(&sdfg, pairing.clone());
    // ... or to no node at all.
    match node_mut(state_mut(&mut sdfg, "maps"), exit) {
        Node::MapExit(e) => e.entry = NodeId::new(99),
        _ => unreachable!(),
    }
    assert_error(&sdfg, pairing);
}

#[test]
fn node_bad_schedule_for_each_reason() {
    let bad = |k: usize, label: &str, schedule, reason| {
        node_err(
            "maps",
            "maps",
            entry_id(k),
            "map entry",
            label,
            NodeError::BadSchedule { schedule, reason },
        )
    };
    assert_error(
        &maps_sdfg(vec![map(
            "block",
            &["t"],
            &["0:32"],
            Schedule::DeviceThreadBlock,
        )]),
        bad(
            0,
            "block",
            Schedule::DeviceThreadBlock,
            "a thread-block map must be inside a device kernel",
        ),
    );
    assert_error(
        &maps_sdfg(vec![
            map("grid", &["b"], &["0:N"], Schedule::DeviceKernel),
            map("again", &["t"], &["0:32"], Schedule::DeviceKernel),
        ]),
        bad(
            1,
            "again",
            Schedule::DeviceKernel,
            "a kernel cannot be launched inside a kernel",
        ),
    );
    assert_error(
        &maps_sdfg(vec![
            map("grid", &["b"], &["0:N"], Schedule::DeviceKernel),
            map("cores", &["t"], &["0:32"], Schedule::HostParallel),
        ]),
        bad(
            1,
            "cores",
            Schedule::HostParallel,
            "host-parallel maps cannot run inside a kernel",
        ),
    );
    // A thread-block map inside a thread-block map is still inside the kernel.
    assert_valid(&maps_sdfg(vec![
        map("grid", &["b"], &["0:N"], Schedule::DeviceKernel),
        map("block", &["t"], &["0:32"], Schedule::DeviceThreadBlock),
        map("warp", &["w"], &["0:4"], Schedule::DeviceThreadBlock),
    ]));
}

/// `r_dev[0] = dot(x_dev, y_dev)` by the library node `dot`, inside the
/// kernel `k` when `in_kernel` (state `s` of SDFG `dot`).
fn dot_sdfg(in_kernel: bool, schedule: Schedule, storage: Storage) -> Sdfg {
    let mut b = SdfgBuilder::new("dot");
    b.symbol("N")
        .container("x_dev", array("N", storage))
        .container("y_dev", array("N", storage))
        .container("r_dev", DataDesc::scalar(F64).with_storage(storage));
    b.state("s", |s| {
        let (xd, yd, rd) = (s.access("x_dev"), s.access("y_dev"), s.access("r_dev"));
        let n = s.library("dot", LibraryOp::Dot);
        if let Node::Library(l) = s.state_mut().graph.node_weight_mut(n).unwrap() {
            l.schedule = schedule;
        }
        if in_kernel {
            let (entry, exit) = s.map("k", "b = 0:N", Schedule::DeviceKernel);
            s.path(&[xd, entry, n], None, Some("_x"), "x_dev[0:N]");
            s.path(&[yd, entry, n], None, Some("_y"), "y_dev[0:N]");
            s.path(&[n, exit, rd], Some("_result"), None, "r_dev[0]");
        } else {
            s.edge(xd, None, n, Some("_x"), "x_dev[0:N]");
            s.edge(yd, None, n, Some("_y"), "y_dev[0:N]");
            s.edge(n, Some("_result"), rd, None, "r_dev[0]");
        }
    });
    b.build().unwrap()
}

#[test]
fn node_bad_schedule_of_a_library_call_inside_a_kernel() {
    assert_valid(&dot_sdfg(true, Schedule::Default, Storage::DeviceGlobal));
    assert_valid(&dot_sdfg(
        false,
        Schedule::DeviceKernel,
        Storage::DeviceGlobal,
    ));
    let sdfg = dot_sdfg(true, Schedule::DeviceKernel, Storage::DeviceGlobal);
    let n = node(state(&sdfg, "s"), "library node", "dot");
    assert_error(
        &sdfg,
        node_err(
            "dot",
            "s",
            n,
            "library node",
            "dot",
            NodeError::BadSchedule {
                schedule: Schedule::DeviceKernel,
                reason: "a device-wide library call cannot be issued inside a kernel",
            },
        ),
    );
}

#[test]
fn node_type_error_in_tasklet_code() {
    let mut sdfg = tiny();
    tasklet_mut(state_mut(&mut sdfg, "s"), NodeId::new(2)).body =
        vec![Stmt::assign("b", Expr::var("a") * Expr::var("zz"))];
    assert_error(
        &sdfg,
        node_err(
            "tiny",
            "s",
            NodeId::new(2),
            "tasklet",
            "double",
            NodeError::Type(TypeError::UnknownName { name: "zz".into() }),
        ),
    );
}

#[test]
fn node_output_never_written() {
    let mut sdfg = tiny();
    tasklet_mut(state_mut(&mut sdfg, "s"), NodeId::new(2)).body = vec![];
    assert_error(
        &sdfg,
        node_err(
            "tiny",
            "s",
            NodeId::new(2),
            "tasklet",
            "double",
            NodeError::OutputNeverWritten { name: "b".into() },
        ),
    );
}

/// Sets the subset of the edge between access node `data` and library node
/// `lib` in state `state` of `linear_algebra`, and returns the SDFG and the
/// library node's id.
fn linear_algebra_with_operand(state: &str, lib: &str, data: &str, subset: &str) -> (Sdfg, NodeId) {
    let mut sdfg = examples::linear_algebra().unwrap();
    let st = state_mut(&mut sdfg, state);
    let (a, n) = (access(st, data), node(st, "library node", lib));
    let e = st
        .edges()
        .find(|(_, s, d, _)| (*s, *d) == (a, n) || (*s, *d) == (n, a))
        .map(|(id, ..)| id)
        .unwrap();
    memlet_mut(st, e).subset = Subset::parse(subset).unwrap();
    (sdfg, n)
}

#[test]
fn node_operand_rank() {
    // (state, library node, operand container, new subset, connector, op, expected, found)
    let cases = [
        ("gemv", "gemv", "A", "0, 0:N", "_a", "gemv", "2", 1),
        (
            "batched",
            "bmm",
            "batched",
            "0, 0:N, 0:N",
            "_c",
            "batched_matmul",
            "at least 3",
            2,
        ),
        ("matmul", "matmul", "A", "0, 0", "_a", "matmul", "1 to 2", 0),
    ];
    for (state, lib, data, subset, conn, op, expected, found) in cases {
        let (sdfg, n) = linear_algebra_with_operand(state, lib, data, subset);
        assert_error(
            &sdfg,
            node_err(
                "linear_algebra",
                state,
                n,
                "library node",
                lib,
                NodeError::OperandRank {
                    conn: conn.into(),
                    op,
                    expected: expected.into(),
                    found,
                },
            ),
        );
    }
}

#[test]
fn node_bad_library_parameter() {
    let set_op = |state_label: &str, label: &str, op: LibraryOp| {
        let mut sdfg = examples::linear_algebra().unwrap();
        let st = state_mut(&mut sdfg, state_label);
        let n = node(st, "library node", label);
        library_mut(st, n).op = op;
        (sdfg, n)
    };
    let expect = |sdfg: &Sdfg, state: &str, n, label: &str, op, reason: &str| {
        assert_error(
            sdfg,
            node_err(
                "linear_algebra",
                state,
                n,
                "library node",
                label,
                NodeError::BadLibraryParameter {
                    op,
                    reason: reason.into(),
                },
            ),
        );
    };
    let reduce = |axes| LibraryOp::Reduce {
        op: Wcr::Sum,
        axes: Some(axes),
        identity: None,
    };
    let (sdfg, n) = set_op("reduce", "reduce", reduce(vec![1, 0]));
    expect(
        &sdfg,
        "reduce",
        n,
        "reduce",
        "reduce",
        "axes [1, 0] are not strictly ascending",
    );
    let (sdfg, n) = set_op("reduce", "reduce", reduce(vec![2]));
    expect(
        &sdfg,
        "reduce",
        n,
        "reduce",
        "reduce",
        "axes [2] exceed the input's 2 dimensions",
    );
    let (sdfg, n) = set_op(
        "permute",
        "permute",
        LibraryOp::TensorTranspose {
            axes: vec![0, 0, 2],
        },
    );
    expect(
        &sdfg,
        "permute",
        n,
        "permute",
        "tensor_transpose",
        "axes [0, 0, 2] are not a permutation of 0..3",
    );
}

/// `nested_flip` with the nested SDFG node of state `flip` changed by `f`.
fn nested_flip_with(f: impl FnOnce(&mut sdfg_ir::NestedSdfg)) -> (Sdfg, NodeId) {
    let mut sdfg = examples::nested_flip().unwrap();
    let st = state_mut(&mut sdfg, "flip");
    let n = node(st, "nested SDFG", "flip");
    f(nested_mut(st, n));
    (sdfg, n)
}

fn nested_err(n: NodeId, error: NodeError) -> ValidationError {
    node_err("nested_flip", "flip", n, "nested SDFG", "flip", error)
}

#[test]
fn node_nested_connector() {
    // `extra` is not a container of the nested SDFG (and has no edge either).
    let (sdfg, n) = nested_flip_with(|n| {
        n.inputs.insert("extra".into());
    });
    assert_errors(
        &sdfg,
        &[
            nested_err(
                n,
                NodeError::NestedConnector {
                    name: "extra".into(),
                },
            ),
            nested_err(
                n,
                NodeError::InputEdges {
                    name: "extra".into(),
                    count: 0,
                },
            ),
        ],
    );
    // A transient inner container cannot be a connector either.
    let (sdfg, n) = nested_flip_with(|n| {
        n.sdfg
            .containers
            .insert("tmp".into(), DataDesc::scalar(F64).into_transient());
        n.outputs.insert("tmp".into());
    });
    assert_errors(
        &sdfg,
        &[
            nested_err(n, NodeError::NestedConnector { name: "tmp".into() }),
            nested_err(n, NodeError::DanglingOutput { name: "tmp".into() }),
        ],
    );
}

#[test]
fn node_nested_unconnected() {
    let (sdfg, n) = nested_flip_with(|n| {
        n.sdfg
            .containers
            .insert("extra".into(), DataDesc::scalar(F64));
        n.sdfg.arguments.push("extra".into());
    });
    assert_error(
        &sdfg,
        nested_err(
            n,
            NodeError::NestedUnconnected {
                name: "extra".into(),
            },
        ),
    );
}

#[test]
fn node_nested_input_written() {
    // The body writes what it reads (`src[i] = src[M - 1 - i]`), but `src`
    // is only an input connector: the write would never reach `y`.
    let (sdfg, n) = nested_flip_with(|n| {
        let st = state_mut(&mut n.sdfg, "reverse");
        let dst = access(st, "dst");
        if let Some(Node::Access(a)) = st.graph.node_weight_mut(dst) {
            a.data = "src".into();
        }
        for e in st.graph.edge_weights_mut() {
            if let Some(m) = &mut e.memlet
                && m.data == "dst"
            {
                m.data = "src".into();
            }
        }
    });
    assert_error(
        &sdfg,
        nested_err(n, NodeError::NestedInputWritten { name: "src".into() }),
    );
}

#[test]
fn node_symbol_mapping() {
    let (sdfg, n) = nested_flip_with(|n| {
        n.symbol_mapping.remove("M");
    });
    assert_error(
        &sdfg,
        nested_err(
            n,
            NodeError::SymbolMapping {
                symbol: "M".into(),
                reason: "no mapping for the inner symbol",
            },
        ),
    );
    let (sdfg, n) = nested_flip_with(|n| {
        n.symbol_mapping.insert("Q".into(), expr("k"));
    });
    assert_error(
        &sdfg,
        nested_err(
            n,
            NodeError::SymbolMapping {
                symbol: "Q".into(),
                reason: "mapping of something that is not a symbol of the nested SDFG:",
            },
        ),
    );
}

#[test]
fn node_mapping_undefined_symbol() {
    let (sdfg, n) = nested_flip_with(|n| {
        n.symbol_mapping.insert("M".into(), expr("k + q"));
    });
    assert_error(
        &sdfg,
        nested_err(
            n,
            NodeError::MappingUndefinedSymbol {
                inner: "M".into(),
                symbol: "q".into(),
            },
        ),
    );
}

#[test]
fn node_errors_inside_a_nested_sdfg_carry_its_path() {
    let mut copy = None;
    let (sdfg, _) = nested_flip_with(|n| {
        let st = state_mut(&mut n.sdfg, "reverse");
        let id = node(st, "tasklet", "copy");
        tasklet_mut(st, id).body = vec![];
        copy = Some(id);
    });
    let copy = copy.expect("the nested SDFG has a tasklet `copy`");
    assert_error(
        &sdfg,
        node_err(
            "nested_flip/flip",
            "reverse",
            copy,
            "tasklet",
            "copy",
            NodeError::OutputNeverWritten { name: "b".into() },
        ),
    );
}

#[test]
fn node_view_edges() {
    // No view edge: the edge from `A` loses its `views` connector and becomes a copy.
    let mut sdfg = examples::nested_flip().unwrap();
    let st = state_mut(&mut sdfg, "row_sum");
    let (a, row) = (access(st, "A"), access(st, "row"));
    let view_edge = edge(st, a, row);
    edge_mut(st, view_edge).dst_conn = None;
    let views = |count| {
        node_err(
            "nested_flip",
            "row_sum",
            row,
            "access node",
            "row",
            NodeError::ViewEdges {
                data: "row".into(),
                count,
            },
        )
    };
    assert_error(&sdfg, views(0));
    // Two view edges.
    let mut sdfg = examples::nested_flip().unwrap();
    let st = state_mut(&mut sdfg, "row_sum");
    let a2 = st.add_access("A");
    st.add_edge(
        a2,
        None,
        row,
        Some(sdfg_ir::VIEW_CONNECTOR),
        memlet("A", "0, 0:N"),
    );
    assert_error(&sdfg, views(2));
}

#[test]
fn node_callback_on_device() {
    let mut b = SdfgBuilder::new("cb");
    b.symbol("N")
        .container("x_dev", array("N", Storage::DeviceGlobal));
    b.state("k", |s| {
        let xd = s.access("x_dev");
        let (entry, exit) = s.map("k", "b = 0:N", Schedule::DeviceKernel);
        let cb = s.callback("report", "print", vec![f64c("v")], vec![]);
        s.path(&[xd, entry, cb], None, Some("v"), "x_dev[b]");
        s.empty_edge(cb, exit);
    });
    let sdfg = b.build().unwrap();
    let cb = node(state(&sdfg, "k"), "host callback", "report");
    assert_error(
        &sdfg,
        node_err(
            "cb",
            "k",
            cb,
            "host callback",
            "report",
            NodeError::CallbackOnDevice {
                callee: "print".into(),
            },
        ),
    );
}

#[test]
fn node_shared_outside_kernel() {
    let mut sdfg = examples::offloaded_scale().unwrap();
    let tile = state_mut(&mut sdfg, "copy_in").add_access("tile");
    let on_tile = |error| {
        node_err(
            "offloaded_scale",
            "copy_in",
            tile,
            "access node",
            "tile",
            error,
        )
    };
    assert_errors(
        &sdfg,
        &[
            on_tile(NodeError::SharedOutsideKernel {
                data: "tile".into(),
            }),
            on_tile(NodeError::IsolatedAccess),
        ],
    );
}

// == Edge rules ==============================================================

/// The expected error on edge 0 (`x -> double`) of [`tiny`].
fn tiny_in_edge(error: EdgeError) -> ValidationError {
    edge_err("tiny", "s", EdgeId::new(0), ("x", "double"), error)
}

#[test]
fn edge_unknown_connector() {
    // On an access node (which has no connectors besides `views`).
    let mut sdfg = tiny();
    edge_mut(state_mut(&mut sdfg, "s"), EdgeId::new(0)).src_conn = Some("q".into());
    assert_error(
        &sdfg,
        tiny_in_edge(EdgeError::UnknownConnector {
            side: "source",
            name: "q".into(),
        }),
    );
    // On a tasklet; its real connector is then left without an edge.
    let mut sdfg = tiny();
    edge_mut(state_mut(&mut sdfg, "s"), EdgeId::new(0)).dst_conn = Some("q".into());
    assert_errors(
        &sdfg,
        &[
            tiny_in_edge(EdgeError::UnknownConnector {
                side: "destination",
                name: "q".into(),
            }),
            node_err(
                "tiny",
                "s",
                NodeId::new(2),
                "tasklet",
                "double",
                NodeError::InputEdges {
                    name: "a".into(),
                    count: 0,
                },
            ),
        ],
    );
}

#[test]
fn edge_missing_connector() {
    let mut sdfg = tiny();
    edge_mut(state_mut(&mut sdfg, "s"), EdgeId::new(1)).src_conn = None;
    assert_errors(
        &sdfg,
        &[
            edge_err(
                "tiny",
                "s",
                EdgeId::new(1),
                ("double", "y"),
                EdgeError::MissingConnector { side: "source" },
            ),
            node_err(
                "tiny",
                "s",
                NodeId::new(2),
                "tasklet",
                "double",
                NodeError::DanglingOutput { name: "b".into() },
            ),
        ],
    );
    // A data edge into a code node that has no connectors at all.
    let mut sdfg = tiny();
    let st = state_mut(&mut sdfg, "s");
    let t = st.add_node(Node::Tasklet(Tasklet {
        label: "idle".into(),
        inputs: vec![],
        outputs: vec![],
        body: vec![],
    }));
    let e = st.add_edge(NodeId::new(0), None, t, None, memlet("x", "0"));
    assert_error(
        &sdfg,
        edge_err(
            "tiny",
            "s",
            e,
            ("x", "idle"),
            EdgeError::MissingConnector {
                side: "destination",
            },
        ),
    );
}

#[test]
fn edge_unknown_container() {
    let mut sdfg = axpy();
    let st = state_mut(&mut sdfg, "compute");
    let (entry, fma) = (node(st, "map entry", "axpy"), node(st, "tasklet", "fma"));
    let e = nodes_edge_with_data(st, entry, fma, "x");
    memlet_mut(st, e).data = "ghost".into();
    assert_error(
        &sdfg,
        edge_err(
            "axpy",
            "compute",
            e,
            ("axpy", "fma"),
            EdgeError::UnknownContainer {
                data: "ghost".into(),
            },
        ),
    );
}

#[test]
fn edge_data_mismatch() {
    // Between an access node and a code node.
    let mut sdfg = tiny();
    memlet_mut(state_mut(&mut sdfg, "s"), EdgeId::new(0)).data = "y".into();
    assert_error(
        &sdfg,
        tiny_in_edge(EdgeError::DataMismatch {
            data: "y".into(),
            node_data: "x".into(),
        }),
    );
    // A copy naming neither end.
    let mut b = SdfgBuilder::new("copy");
    b.symbol("N")
        .array("x", F64, "N")
        .array("y", F64, "N")
        .array("z", F64, "N");
    b.state("s", |s| {
        let x = s.access("x");
        let y = s.access("y");
        s.edge(x, None, y, None, "z[0:N]");
    });
    assert_error(
        &b.build().unwrap(),
        edge_err(
            "copy",
            "s",
            EdgeId::new(0),
            ("x", "y"),
            EdgeError::DataMismatch {
                data: "z".into(),
                node_data: "x".into(),
            },
        ),
    );
}

#[test]
fn edge_subset_rank() {
    let mut sdfg = tiny();
    memlet_mut(state_mut(&mut sdfg, "s"), EdgeId::new(0)).subset = Subset::parse("0, 0").unwrap();
    assert_error(
        &sdfg,
        tiny_in_edge(EdgeError::SubsetRank {
            which: "subset",
            data: "x".into(),
            expected: 1,
            found: 2,
        }),
    );
    // The other subset of a copy is checked against the other container.
    let mut sdfg = examples::offloaded_scale().unwrap();
    let st = state_mut(&mut sdfg, "copy_in");
    memlet_mut(st, EdgeId::new(0)).other_subset = Some(Subset::parse("0:N").unwrap());
    assert_error(
        &sdfg,
        edge_err(
            "offloaded_scale",
            "copy_in",
            EdgeId::new(0),
            ("x", "x_dev"),
            EdgeError::SubsetRank {
                which: "other subset",
                data: "x_dev".into(),
                expected: 2,
                found: 1,
            },
        ),
    );
}

#[test]
fn edge_out_of_bounds() {
    for (subset, index) in [("N", "N"), ("-1", "-1"), ("N - 2:N + 1", "N")] {
        let mut sdfg = tiny();
        memlet_mut(state_mut(&mut sdfg, "s"), EdgeId::new(0)).subset =
            Subset::parse(subset).unwrap();
        assert_error(
            &sdfg,
            tiny_in_edge(EdgeError::OutOfBounds {
                data: "x".into(),
                dim: 0,
                index: index.into(),
                extent: "N".into(),
            }),
        );
    }
    // Symbolically undecidable indices are not errors.
    let mut sdfg = tiny();
    sdfg.symbols.insert("K".into(), DType::Int64);
    memlet_mut(state_mut(&mut sdfg, "s"), EdgeId::new(0)).subset = Subset::parse("K").unwrap();
    assert_valid(&sdfg);
}

#[test]
fn edge_out_of_bounds_in_scope() {
    // `y[i] = 2 * x[i]` over `i = 0:N + 1`: the last iteration reads and
    // writes index N of both arrays, though the outer edges say `0:N` (a
    // fuzz finding: map-to-copy turned it into an invalid copy).
    let mut sdfg = scale_sdfg(Schedule::Default, Storage::Default, Storage::Default);
    let state = state_mut(&mut sdfg, "compute");
    if let Some(Node::MapEntry(e)) = state.graph.node_weight_mut(NodeId::new(2)) {
        e.map.ranges[0] = Subset::parse("0:N + 1").unwrap().ranges.remove(0);
    }
    let oob = |data: &str| EdgeError::OutOfBoundsInScope {
        data: data.into(),
        dim: 0,
        index: "N".into(),
        extent: "N".into(),
    };
    assert_errors(
        &sdfg,
        &[
            edge_err(
                "scale",
                "compute",
                EdgeId::new(1),
                ("scale", "scale"),
                oob("x"),
            ),
            edge_err(
                "scale",
                "compute",
                EdgeId::new(2),
                ("scale", "scale"),
                oob("y"),
            ),
        ],
    );
    // A shifted index within the range is valid (`x[i + 1]` over
    // `i = 0:N - 1`), and so is a dynamic (guarded) access beyond it.
    let mut sdfg = scale_sdfg(Schedule::Default, Storage::Default, Storage::Default);
    let state = state_mut(&mut sdfg, "compute");
    if let Some(Node::MapEntry(e)) = state.graph.node_weight_mut(NodeId::new(2)) {
        e.map.ranges[0] = Subset::parse("0:N - 1").unwrap().ranges.remove(0);
    }
    memlet_mut(state, EdgeId::new(1)).subset = Subset::parse("i + 1").unwrap();
    assert_valid(&sdfg);
    memlet_mut(state_mut(&mut sdfg, "compute"), EdgeId::new(1)).subset =
        Subset::parse("i + 2").unwrap();
    assert_error(
        &sdfg,
        edge_err(
            "scale",
            "compute",
            EdgeId::new(1),
            ("scale", "scale"),
            oob("x"),
        ),
    );
    memlet_mut(state_mut(&mut sdfg, "compute"), EdgeId::new(1)).dynamic = true;
    assert_valid(&sdfg);
}

#[test]
fn edge_reversed_range() {
    let mut sdfg = tiny();
    memlet_mut(state_mut(&mut sdfg, "s"), EdgeId::new(0)).subset = Subset::parse("5:2").unwrap();
    assert_error(
        &sdfg,
        tiny_in_edge(EdgeError::ReversedRange {
            data: "x".into(),
            dim: 0,
            range: "5:2".into(),
        }),
    );
}

#[test]
fn edge_undefined_symbol() {
    let mut sdfg = tiny();
    memlet_mut(state_mut(&mut sdfg, "s"), EdgeId::new(0)).subset = Subset::parse("q").unwrap();
    assert_error(
        &sdfg,
        tiny_in_edge(EdgeError::UndefinedSymbol {
            data: "x".into(),
            symbol: "q".into(),
        }),
    );
    // A map parameter is not defined outside its map.
    let mut sdfg = scale_sdfg(Schedule::Default, Storage::Default, Storage::Default);
    memlet_mut(state_mut(&mut sdfg, "compute"), EdgeId::new(0)).subset =
        Subset::parse("i").unwrap();
    assert_error(
        &sdfg,
        edge_err(
            "scale",
            "compute",
            EdgeId::new(0),
            ("x", "scale"),
            EdgeError::UndefinedSymbol {
                data: "x".into(),
                symbol: "i".into(),
            },
        ),
    );
}

#[test]
fn edge_wcr_on_read() {
    let mut sdfg = tiny();
    let m = memlet_mut(state_mut(&mut sdfg, "s"), EdgeId::new(0));
    m.wcr = Some(Wcr::Sum);
    assert_error(
        &sdfg,
        tiny_in_edge(EdgeError::WcrOnRead { data: "x".into() }),
    );
}

#[test]
fn edge_bitwise_wcr_on_floats() {
    // `y` holds float64: a bitwise combination has no bits to work on.
    let mut sdfg = tiny();
    memlet_mut(state_mut(&mut sdfg, "s"), EdgeId::new(1)).wcr = Some(Wcr::BitOr);
    assert_error(
        &sdfg,
        edge_err(
            "tiny",
            "s",
            EdgeId::new(1),
            ("double", "y"),
            EdgeError::BitwiseWcr {
                data: "y".into(),
                data_type: DType::Float64,
                wcr: Wcr::BitOr,
            },
        ),
    );
}

#[test]
fn edge_type_mismatch() {
    let mut sdfg = tiny();
    let t = tasklet_mut(state_mut(&mut sdfg, "s"), NodeId::new(2));
    t.inputs[0].dtype = DType::Float32;
    t.body = vec![Stmt::assign("b", Expr::cast(F64, Expr::var("a")))];
    assert_error(
        &sdfg,
        tiny_in_edge(EdgeError::TypeMismatch {
            conn: "a".into(),
            conn_type: DType::Float32,
            data: "x".into(),
            data_type: F64,
        }),
    );
}

#[test]
fn edge_misplaced_view_connector() {
    // `x` is not a view.
    let mut sdfg = tiny();
    edge_mut(state_mut(&mut sdfg, "s"), EdgeId::new(0)).src_conn =
        Some(sdfg_ir::VIEW_CONNECTOR.into());
    assert_error(&sdfg, tiny_in_edge(EdgeError::MisplacedViewConnector));
}

// == Storage reachability, both ways =========================================

#[test]
fn kernel_reading_host_storage_is_inaccessible_from_the_device() {
    for storage in [Storage::Default, Storage::Host, Storage::HostPinned] {
        let sdfg = scale_sdfg(Schedule::DeviceKernel, storage, Storage::DeviceGlobal);
        assert_error(
            &sdfg,
            edge_err(
                "scale",
                "compute",
                EdgeId::new(0),
                ("x", "scale"),
                inaccessible(Side::Device, "scale", "x", storage),
            ),
        );
    }
}

/// `y[i] = a * x[i]` in a kernel, with `a` a host scalar (or, `array`, a
/// host array of one element) feeding the kernel's entry.
fn scaled_by_host(a: DataDesc) -> Sdfg {
    let mut b = SdfgBuilder::new("scaled");
    b.symbol("N")
        .container("a", a)
        .container("x", array("N", Storage::DeviceGlobal))
        .container("y", array("N", Storage::DeviceGlobal));
    b.state("compute", |s| {
        let (a, x, y) = (s.access("a"), s.access("x"), s.access("y"));
        s.mapped_tasklet(
            "scale",
            "i = 0:N",
            Schedule::DeviceKernel,
            vec![(a, f64c("f"), "a[0]"), (x, f64c("v"), "x[i]")],
            vec![Stmt::assign("w", Expr::var("f") * Expr::var("v"))],
            vec![(f64c("w"), y, "y[i]")],
        );
    });
    b.build().expect("scaled builds")
}

#[test]
fn a_kernel_takes_a_host_scalar_by_value() {
    // A scalar read at the launch is a kernel argument, not memory the
    // device dereferences.
    let sdfg = scaled_by_host(DataDesc::scalar(F64));
    assert!(errors(&sdfg).is_empty(), "{:#?}", errors(&sdfg));
    // An array of one element is memory: the device cannot reach it.
    let sdfg = scaled_by_host(array("1", Storage::Default));
    let found = errors(&sdfg);
    assert!(
        found.iter().any(|e| matches!(
            e,
            ValidationError::Edge { error: EdgeError::Inaccessible { container, side: Side::Device, .. }, .. }
                if container == "a"
        )),
        "{found:#?}"
    );
}

#[test]
fn kernel_writing_host_storage_is_inaccessible_from_the_device() {
    let sdfg = scale_sdfg(Schedule::DeviceKernel, Storage::DeviceGlobal, Storage::Host);
    assert_error(
        &sdfg,
        edge_err(
            "scale",
            "compute",
            EdgeId::new(3),
            ("scale", "y"),
            inaccessible(Side::Device, "scale", "y", Storage::Host),
        ),
    );
}

#[test]
fn host_code_may_touch_device_storage_while_schedules_are_undecided() {
    // DaCe's `apply_gpu_storage`: arguments already on the GPU, no kernel
    // yet. The offload pass decides where the code runs and stages the data.
    let sdfg = tasklet_sdfg(Storage::DeviceGlobal, Storage::Default);
    assert!(!sdfg.schedules_decided());
    assert!(validate(&sdfg).is_ok(), "{:?}", errors(&sdfg));
    let mut sdfg = control_sdfg();
    sdfg.containers.get_mut("n").unwrap().storage = Storage::DeviceGlobal;
    loop_mut(&mut sdfg, "loop").condition = cond("k < n[0]");
    assert!(validate(&sdfg).is_ok(), "{:?}", errors(&sdfg));
    // A device-wide library call decides them: the same host code is an error.
    assert!(!errors(&with_a_kernel(sdfg)).is_empty());
}

#[test]
fn host_tasklet_reading_device_storage_is_inaccessible_from_the_host() {
    let sdfg = with_a_kernel(tasklet_sdfg(Storage::DeviceGlobal, Storage::Default));
    assert_error(
        &sdfg,
        tiny_in_edge(inaccessible(
            Side::Host,
            "double",
            "x",
            Storage::DeviceGlobal,
        )),
    );
    // Writing device storage from the host, through a host map.
    let sdfg = with_a_kernel(scale_sdfg(
        Schedule::Sequential,
        Storage::Default,
        Storage::DeviceGlobal,
    ));
    assert_error(
        &sdfg,
        edge_err(
            "scale",
            "compute",
            EdgeId::new(3),
            ("scale", "y"),
            inaccessible(Side::Host, "scale", "y", Storage::DeviceGlobal),
        ),
    );
}

#[test]
fn device_wide_library_call_on_host_storage_is_inaccessible() {
    let sdfg = dot_sdfg(false, Schedule::DeviceKernel, Storage::Host);
    let st = state(&sdfg, "s");
    let n = node(st, "library node", "dot");
    let (xd, yd, rd) = (
        access(st, "x_dev"),
        access(st, "y_dev"),
        access(st, "r_dev"),
    );
    assert_errors(
        &sdfg,
        &[
            edge_err(
                "dot",
                "s",
                edge(st, xd, n),
                ("x_dev", "dot"),
                inaccessible(Side::Device, "dot", "x_dev", Storage::Host),
            ),
            edge_err(
                "dot",
                "s",
                edge(st, yd, n),
                ("y_dev", "dot"),
                inaccessible(Side::Device, "dot", "y_dev", Storage::Host),
            ),
            edge_err(
                "dot",
                "s",
                edge(st, n, rd),
                ("dot", "r_dev"),
                inaccessible(Side::Device, "dot", "r_dev", Storage::Host),
            ),
        ],
    );
    // And a host library call on device storage, the other way round.
    let sdfg = with_a_kernel(dot_sdfg(false, Schedule::Default, Storage::DeviceGlobal));
    let found = errors(&sdfg);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(found.iter().all(|e| matches!(
        e,
        ValidationError::Edge {
            error: EdgeError::Inaccessible {
                side: Side::Host,
                storage: Storage::DeviceGlobal,
                by,
                ..
            },
            ..
        } if by == "dot"
    )));
}

#[test]
fn copy_inside_a_kernel_into_host_storage_is_inaccessible() {
    let mut b = SdfgBuilder::new("staging");
    b.symbol("N")
        .container("x_dev", array("N", Storage::DeviceGlobal))
        .container("y_dev", array("N", Storage::DeviceGlobal))
        .container(
            "r",
            DataDesc::scalar(F64)
                .into_transient()
                .with_storage(Storage::Register),
        )
        .container("stage", array("N", Storage::Host).into_transient());
    b.state("kernel", |s| {
        let xd = s.access("x_dev");
        let yd = s.access("y_dev");
        let (entry, exit) = s.map("k", "b = 0:N", Schedule::DeviceKernel);
        let r = s.access("r");
        let stage = s.access("stage");
        let t = s.tasklet(
            "use",
            vec![f64c("v")],
            vec![f64c("o")],
            vec![Stmt::assign("o", Expr::var("v"))],
        );
        s.path(&[xd, entry, r], None, None, "x_dev[b]");
        s.edge(
            r,
            None,
            stage,
            None,
            memlet("r", "0").with_other_subset(Subset::parse("b").unwrap()),
        );
        s.edge(stage, None, t, Some("v"), "stage[b]");
        s.path(&[t, exit, yd], Some("o"), None, "y_dev[b]");
    });
    let sdfg = b.build().unwrap();
    let st = state(&sdfg, "kernel");
    let (r, stage, t) = (
        access(st, "r"),
        access(st, "stage"),
        node(st, "tasklet", "use"),
    );
    assert_errors(
        &sdfg,
        &[
            edge_err(
                "staging",
                "kernel",
                edge(st, r, stage),
                ("r", "stage"),
                inaccessible(Side::Device, "copy in kernel", "stage", Storage::Host),
            ),
            edge_err(
                "staging",
                "kernel",
                edge(st, stage, t),
                ("stage", "use"),
                inaccessible(Side::Device, "use", "stage", Storage::Host),
            ),
        ],
    );
}

#[test]
fn host_level_copies_between_host_and_device_are_allowed() {
    // `offloaded_scale` copies pinned host memory to the device and back at
    // host level; the same with default storage is fine too.
    let mut sdfg = examples::offloaded_scale().unwrap();
    sdfg.containers.get_mut("x").unwrap().storage = Storage::Default;
    assert_valid(&sdfg);
}

#[test]
fn device_code_in_a_nested_sdfg_inside_a_kernel_reports_the_nested_path() {
    // The nested SDFG's own map has the default schedule, but it runs inside
    // the outer kernel, so it is device code and cannot write host memory.
    let sdfg = kernel_with_nested(flip(
        Storage::DeviceGlobal,
        Storage::Host,
        Schedule::Default,
    ));
    assert_error(
        &sdfg,
        edge_err(
            "outer/flip",
            "reverse",
            EdgeId::new(3),
            ("reverse", "dst"),
            inaccessible(Side::Device, "reverse", "dst", Storage::Host),
        ),
    );
    let sdfg = kernel_with_nested(flip(
        Storage::Default,
        Storage::DeviceGlobal,
        Schedule::Default,
    ));
    assert_error(
        &sdfg,
        edge_err(
            "outer/flip",
            "reverse",
            EdgeId::new(0),
            ("src", "reverse"),
            inaccessible(Side::Device, "reverse", "src", Storage::Default),
        ),
    );
    // The same nested SDFG called from the host is host code: fine.
    let mut b = SdfgBuilder::new("outer");
    b.symbol("N").array("x", F64, "N").array("y", F64, "N");
    b.state("call", |s| {
        let (x, y) = (s.access("x"), s.access("y"));
        let inner = flip(Storage::Default, Storage::Host, Schedule::Default);
        let n = s.nested("flip", inner, &["src"], &["dst"], &[("M", "N")]);
        s.edge(x, None, n, Some("src"), "x");
        s.edge(n, Some("dst"), y, None, "y");
    });
    assert_valid(&b.build().unwrap());
}

#[test]
fn schedules_inside_a_nested_sdfg_inside_a_kernel_are_device_schedules() {
    let sdfg = kernel_with_nested(flip(
        Storage::DeviceGlobal,
        Storage::DeviceGlobal,
        Schedule::DeviceKernel,
    ));
    assert_error(
        &sdfg,
        node_err(
            "outer/flip",
            "reverse",
            NodeId::new(2),
            "map entry",
            "reverse",
            NodeError::BadSchedule {
                schedule: Schedule::DeviceKernel,
                reason: "a kernel cannot be launched inside a kernel",
            },
        ),
    );
    // A thread-block map needs no kernel of its own there.
    assert_valid(&kernel_with_nested(flip(
        Storage::DeviceGlobal,
        Storage::DeviceGlobal,
        Schedule::DeviceThreadBlock,
    )));
}

#[test]
fn a_persistent_kernels_body_shares_its_top_level_device_maps() {
    // At the top of a persistent kernel's body a device map is shared by
    // the kernel's threads, not launched.
    assert_valid(&launch_with_nested(
        flip(
            Storage::DeviceGlobal,
            Storage::DeviceGlobal,
            Schedule::DeviceKernel,
        ),
        Schedule::DevicePersistent,
    ));
    // A persistent kernel is launched by the host only.
    assert_error(
        &maps_sdfg(vec![
            map("grid", &["b"], &["0:N"], Schedule::DeviceKernel),
            map("again", &["t"], &["0:1"], Schedule::DevicePersistent),
        ]),
        node_err(
            "maps",
            "maps",
            entry_id(1),
            "map entry",
            "again",
            NodeError::BadSchedule {
                schedule: Schedule::DevicePersistent,
                reason: "a persistent kernel cannot be launched inside a kernel",
            },
        ),
    );
    // Deeper in the body, inside a map of its threads, a device map is a
    // kernel inside a kernel again.
    let mut b = SdfgBuilder::new("flip");
    b.symbol("M")
        .container("src", array("M", Storage::DeviceGlobal))
        .container("dst", array("M", Storage::DeviceGlobal));
    b.state("reverse", |s| {
        let a = s.access("src");
        let d = s.access("dst");
        let (oe, ox) = s.map("rows", "r = 0:1", Schedule::DeviceKernel);
        let (ie, ix) = s.map("cols", "i = 0:M", Schedule::DeviceKernel);
        let t = s.tasklet(
            "copy",
            vec![f64c("a")],
            vec![f64c("b")],
            vec![Stmt::assign("b", Expr::var("a"))],
        );
        s.path(&[a, oe, ie, t], None, Some("a"), "src[i]");
        s.path(&[t, ix, ox, d], Some("b"), None, "dst[i]");
    });
    let sdfg = launch_with_nested(b.build().unwrap(), Schedule::DevicePersistent);
    let found = errors(&sdfg);
    assert!(
        found.iter().any(|e| e
            .to_string()
            .contains("a kernel cannot be launched inside a kernel")),
        "{found:#?}"
    );
}

// == Reporting ===============================================================

#[test]
fn every_independent_violation_is_reported() {
    let mut sdfg = axpy();
    // SDFG: an argument listed twice.
    sdfg.arguments.push("x".into());
    // Container: strides that do not match the shape.
    if let DataKind::Array(layout) = &mut sdfg.containers.get_mut("y").unwrap().kind {
        layout.strides.clear();
    }
    // Block: an assignment to an undeclared symbol.
    block_mut(&mut sdfg, "compute")
        .transition
        .assignments
        .push(sdfg_ir::Assignment {
            symbol: "q".into(),
            value: expr("N"),
        });
    let st = state_mut(&mut sdfg, "compute");
    // Node: an access node of a missing container, and bad tasklet code.
    let ghost = st.add_access("ghost");
    let (x, entry, fma) = (
        access(st, "x"),
        node(st, "map entry", "axpy"),
        node(st, "tasklet", "fma"),
    );
    tasklet_mut(st, fma).body = vec![Stmt::assign("out", Expr::var("zz"))];
    // Edge: an index out of bounds.
    let outer = edge(st, x, entry);
    memlet_mut(st, outer).subset = Subset::parse("0:N + 1").unwrap();
    // A second state whose graph has a cycle.
    let mut cyclic = State::new();
    let (p, q) = (cyclic.add_access("x"), cyclic.add_access("y"));
    cyclic.add_edge(p, None, q, None, memlet("x", "0"));
    cyclic.add_edge(q, None, p, None, memlet("y", "0"));
    sdfg.body
        .blocks
        .push(ControlBlock::new("cyclic", BlockKind::State(cyclic)));

    let found = errors(&sdfg);
    let expected = [
        sdfg_err("axpy", SdfgError::DuplicateArgument { name: "x".into() }),
        container_err(
            "axpy",
            "y",
            ContainerError::StridesRank {
                shape: 1,
                strides: 0,
            },
        ),
        block_err(
            "axpy",
            "compute",
            BlockError::AssignsUndeclared { name: "q".into() },
        ),
        node_err(
            "axpy",
            "compute",
            ghost,
            "access node",
            "ghost",
            NodeError::UnknownContainer {
                data: "ghost".into(),
            },
        ),
        node_err(
            "axpy",
            "compute",
            ghost,
            "access node",
            "ghost",
            NodeError::IsolatedAccess,
        ),
        node_err(
            "axpy",
            "compute",
            fma,
            "tasklet",
            "fma",
            NodeError::Type(TypeError::UnknownName { name: "zz".into() }),
        ),
        edge_err(
            "axpy",
            "compute",
            outer,
            ("x", "axpy"),
            EdgeError::OutOfBounds {
                data: "x".into(),
                dim: 0,
                index: "N".into(),
                extent: "N".into(),
            },
        ),
    ];
    for e in &expected {
        assert!(found.contains(e), "missing {e:#?} in {found:#?}");
    }
    // Plus the cycle, on either of its nodes; nothing else.
    assert_eq!(found.len(), expected.len() + 1, "{found:#?}");
    assert!(found.iter().any(|e| matches!(
        e,
        ValidationError::Node {
            state,
            error: NodeError::Scope(ScopeError::Cycle { .. }),
            ..
        } if state == "cyclic"
    )));
}

#[test]
fn both_directions_are_reported_in_one_sdfg() {
    // The kernel reads host `x`; the host tasklet reads device `d`.
    let mut sdfg = scale_sdfg(Schedule::DeviceKernel, Storage::Host, Storage::DeviceGlobal);
    let tasklet = tasklet_sdfg(Storage::DeviceGlobal, Storage::Default);
    sdfg.containers
        .insert("d".into(), array("N", Storage::DeviceGlobal));
    sdfg.containers
        .insert("h".into(), array("N", Storage::Host));
    sdfg.arguments.extend(["d".to_owned(), "h".to_owned()]);
    let mut st = state(&tasklet, "s").clone();
    for n in st.graph.node_weights_mut() {
        if let Node::Access(a) = n {
            a.data = if a.data == "x" {
                "d".into()
            } else {
                "h".into()
            };
        }
    }
    for e in st.graph.edge_weights_mut() {
        let m = e.memlet.as_mut().unwrap();
        m.data = if m.data == "x" {
            "d".into()
        } else {
            "h".into()
        };
    }
    sdfg.body
        .blocks
        .push(ControlBlock::new("host", BlockKind::State(st)));
    assert_errors(
        &sdfg,
        &[
            edge_err(
                "scale",
                "compute",
                EdgeId::new(0),
                ("x", "scale"),
                inaccessible(Side::Device, "scale", "x", Storage::Host),
            ),
            edge_err(
                "scale",
                "host",
                EdgeId::new(0),
                ("d", "double"),
                inaccessible(Side::Host, "double", "d", Storage::DeviceGlobal),
            ),
        ],
    );
}

#[test]
fn display_of_an_inaccessible_container_names_the_container_and_the_map() {
    let sdfg = scale_sdfg(Schedule::DeviceKernel, Storage::Host, Storage::DeviceGlobal);
    let found = errors(&sdfg);
    assert_eq!(found.len(), 1);
    let text = found[0].to_string();
    assert!(text.contains("`x`") && text.contains("`scale`"), "{text}");
    assert_eq!(
        text,
        "SDFG `scale`, state `compute`, edge 0 (`x` -> `scale`): \
         device code in `scale` accesses container `x` in host storage"
    );
    // The list of all errors displays one per line.
    let all = validate(&sdfg).unwrap_err();
    assert_eq!(all.to_string(), text);
}

#[test]
fn display_of_other_errors() {
    let mut sdfg = with_a_kernel(control_sdfg());
    sdfg.containers.get_mut("n").unwrap().storage = Storage::DeviceGlobal;
    loop_mut(&mut sdfg, "loop").condition = cond("k < n[0]");
    block_mut(&mut sdfg, "start").transition.assignments[0].symbol = "q".into();
    let all = validate(&sdfg).unwrap_err();
    let lines: Vec<String> = all.0.iter().map(ToString::to_string).collect();
    assert_eq!(all.to_string(), lines.join("\n"));
    assert!(
        lines.contains(
            &"SDFG `control`, block `loop`: loop condition runs on the host \
          but reads container `n` in device_global storage"
                .to_owned()
        )
    );
    assert!(lines.contains(
        &"SDFG `control`, block `start`: transition assigns to `q`, which is not a declared symbol"
            .to_owned()
    ));

    let mut sdfg = tiny();
    tasklet_mut(state_mut(&mut sdfg, "s"), NodeId::new(2)).body = vec![];
    assert_eq!(
        errors(&sdfg)[0].to_string(),
        "SDFG `tiny`, state `s`, tasklet `double` (node 2): \
         output connector `b` is never written by the code"
    );

    let mut sdfg = axpy();
    sdfg.containers.get_mut("a").unwrap().storage = Storage::Register;
    assert_eq!(
        errors(&sdfg)[0].to_string(),
        "SDFG `axpy`, container `a`: register storage cannot hold an argument"
    );
}

#[test]
fn a_nested_sdfg_called_from_the_host_may_take_device_data_whose_storage_agrees() {
    // After offloading, a nested SDFG at host level is a host level of its
    // own that receives device twins: the call passes pointers, so only the
    // agreement between outer and inner storage matters.
    let outer = |inner_storage: Storage| {
        let mut b = SdfgBuilder::new("outer");
        b.symbol("N")
            .container("x_dev", array("N", Storage::DeviceGlobal))
            .container("y", array("N", Storage::Host));
        b.state("call", |s| {
            let (x, y) = (s.access("x_dev"), s.access("y"));
            let inner = flip(inner_storage, Storage::Host, Schedule::DeviceKernel);
            let n = s.nested("flip", inner, &["src"], &["dst"], &[("M", "N")]);
            s.edge(x, None, n, Some("src"), "x_dev");
            s.edge(n, Some("dst"), y, None, "y");
        });
        b.build().expect("outer builds")
    };
    let sdfg = outer(Storage::Host);
    let found = errors(&sdfg);
    assert!(
        found.iter().any(|e| matches!(
            e,
            ValidationError::Edge {
                sdfg,
                error: EdgeError::NestedStorageMismatch { conn, inner: Storage::Host, container, outer: Storage::DeviceGlobal },
                ..
            } if sdfg == "outer" && conn == "src" && container == "x_dev"
        )),
        "{found:#?}"
    );
    // With the inner container on the device, the call is valid except for
    // the inner kernel writing host memory, which is reported inside `flip`.
    let sdfg = outer(Storage::DeviceGlobal);
    let found = errors(&sdfg);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(matches!(
        &found[0],
        ValidationError::Edge { sdfg, error: EdgeError::Inaccessible { side: Side::Device, .. }, .. } if sdfg == "outer/flip"
    ));
}

#[test]
fn interstate_code_of_an_sdfg_nested_in_a_kernel_runs_on_the_device() {
    let with_counter = |storage: Storage| {
        let mut inner = flip(
            Storage::DeviceGlobal,
            Storage::DeviceGlobal,
            Schedule::Default,
        );
        inner.containers.insert(
            "cnt".into(),
            DataDesc::array(DType::Int64, vec![SymExpr::int(1)])
                .into_transient()
                .with_storage(storage),
        );
        inner.body.blocks.push(ControlBlock::new(
            "check",
            BlockKind::Conditional(sdfg_ir::ConditionalBlock {
                branches: vec![(cond("cnt[0] > 0"), sdfg_ir::Region::default())],
                otherwise: None,
            }),
        ));
        kernel_with_nested(inner)
    };
    assert_error(
        &with_counter(Storage::Host),
        block_err(
            "outer/flip",
            "check",
            BlockError::Inaccessible {
                what: "branch condition",
                side: Side::Device,
                container: "cnt".into(),
                storage: Storage::Host,
            },
        ),
    );
    assert_valid(&with_counter(Storage::DeviceGlobal));
    assert_valid(&with_counter(Storage::Register));
}

#[test]
fn node_isolated_access() {
    let mut sdfg = axpy();
    let st = state_mut(&mut sdfg, "compute");
    let lonely = st.add_access("x");
    assert_error(
        &sdfg,
        node_err(
            "axpy",
            "compute",
            lonely,
            "access node",
            "x",
            NodeError::IsolatedAccess,
        ),
    );
}

#[test]
fn data_passed_between_tasklets_of_a_kernel_must_be_device_memory() {
    // Two tasklets inside a kernel pass a value through the transient `t`
    // without an access node: the memlet's container is still touched by
    // device code.
    let build = |storage: Storage| {
        let mut b = SdfgBuilder::new("chain");
        b.symbol("N")
            .container("x", array("N", Storage::DeviceGlobal))
            .container("y", array("N", Storage::DeviceGlobal))
            .container(
                "t",
                DataDesc::scalar(F64).into_transient().with_storage(storage),
            );
        b.state("k", |s| {
            let (x, y) = (s.access("x"), s.access("y"));
            let (entry, exit) = s.map("k", "i = 0:N", Schedule::DeviceKernel);
            let first = s.tasklet(
                "first",
                vec![f64c("a")],
                vec![f64c("b")],
                vec![Stmt::assign("b", Expr::var("a"))],
            );
            let second = s.tasklet(
                "second",
                vec![f64c("c")],
                vec![f64c("d")],
                vec![Stmt::assign("d", Expr::var("c"))],
            );
            s.path(&[x, entry, first], None, Some("a"), "x[i]");
            s.edge(first, Some("b"), second, Some("c"), "t[0]");
            s.path(&[second, exit, y], Some("d"), None, "y[i]");
        });
        b.build().unwrap()
    };
    assert_valid(&build(Storage::DeviceGlobal));
    assert_valid(&build(Storage::Register));
    let found = errors(&build(Storage::Host));
    let inaccessible: Vec<_> = found
        .iter()
        .filter(|e| matches!(e, ValidationError::Edge { error: EdgeError::Inaccessible { side: Side::Device, container, storage: Storage::Host, .. }, .. } if container == "t"))
        .collect();
    assert_eq!(inaccessible.len(), 2, "both tasklets touch `t`: {found:#?}");
}

/// An array whose layout is `layout`, as a transient of `axpy`.
fn with_layout(layout: sdfg_ir::Layout) -> Sdfg {
    let mut sdfg = axpy();
    sdfg.symbols.insert("M".into(), sdfg_ir::DType::Int64);
    let mut desc = DataDesc::array(F64, layout.shape.clone()).into_transient();
    desc.kind = sdfg_ir::DataKind::Array(layout);
    sdfg.containers.insert("t".into(), desc);
    sdfg
}

#[test]
fn layouts_must_address_their_allocation_within_64_bits() {
    use sdfg_ir::{Layout, LayoutError};
    let e = |s: &str| SymExpr::parse(s).unwrap();
    let layout = |shape: &[&str], strides: &[&str], offset: &str, total: &str| Layout {
        shape: shape.iter().map(|s| e(s)).collect(),
        strides: strides.iter().map(|s| e(s)).collect(),
        offset: e(offset),
        total_size: e(total),
    };
    let layout_err = |error| container_err("axpy", "t", ContainerError::Layout(error));
    // Consistent layouts: contiguous, a padded leading dimension, a
    // reversed one, an offset view-like column, symbolic and empty.
    for ok in [
        layout(&["4", "3"], &["3", "1"], "0", "12"),
        layout(&["4", "3"], &["5", "1"], "0", "20"),
        layout(&["4"], &["-1"], "3", "4"),
        layout(&["4"], &["3"], "2", "12"),
        layout(&["N", "N"], &["N", "1"], "0", "N*N"),
        layout(&["N"], &["1"], "1", "N + 1"),
        layout(&["0", "5"], &["9223372036854775807", "1"], "0", "0"),
    ] {
        assert_errors(&with_layout(ok.clone()), &[]);
        assert_eq!(ok.check(8), Ok(()));
    }
    // An allocation one element short; strides that leave it; an offset
    // before it; an offset near the end of the 64-bit range.
    for (bad, lowest, highest, total_size) in [
        (layout(&["4", "3"], &["3", "1"], "0", "11"), 0, 11, 11),
        (layout(&["4"], &["2"], "0", "4"), 0, 6, 4),
        (layout(&["4"], &["1"], "-1", "4"), -1, 2, 4),
        (
            layout(&["4"], &["1"], "9223372036854775800", "4"),
            9223372036854775800,
            9223372036854775803,
            4,
        ),
    ] {
        assert_error(
            &with_layout(bad),
            layout_err(LayoutError::OutOfAllocation {
                lowest,
                highest,
                total_size,
            }),
        );
    }
    // Two elements at one address.
    assert_error(
        &with_layout(layout(&["4", "3"], &["2", "1"], "0", "12")),
        layout_err(LayoutError::Overlapping {
            shape: vec![4, 3],
            strides: vec![2, 1],
        }),
    );
    assert_eq!(Layout::check_concrete(&[4, 3], &[1, 4], 0, 12, 8), Ok(96));
    assert_eq!(Layout::check_concrete(&[1, 3], &[0, 1], 0, 3, 8), Ok(24));
    // Addresses or bytes beyond 64 bits.
    for bad in [
        layout(&["4"], &["1"], "9223372036854775806", "9223372036854775807"),
        layout(
            &["3037000500", "3037000500"],
            &["3037000500", "1"],
            "0",
            "1",
        ),
        layout(&["1"], &["1"], "0", "2305843009213693952"),
    ] {
        assert_error(&with_layout(bad), layout_err(LayoutError::Overflow));
    }
    // A symbolic size short of what the shape addresses by a constant.
    assert_error(
        &with_layout(layout(&["N", "M"], &["M", "1"], "0", "N*M - 1")),
        layout_err(LayoutError::TooSmall {
            total_size: "M*N - 1".to_owned(),
            needed: "M*N".to_owned(),
        }),
    );
    // The same checks with concrete symbols, as the simulator makes them.
    assert_eq!(Layout::check_concrete(&[4, 3], &[3, 1], 0, 12, 8), Ok(96));
    assert_eq!(
        Layout::check_concrete(&[4], &[1], 0, -4, 8),
        Err(LayoutError::NegativeSize { total_size: -4 })
    );
    assert_eq!(
        Layout::check_concrete(&[1 << 62], &[1], 0, 1 << 62, 8),
        Err(LayoutError::Overflow)
    );
}

#[test]
fn edge_at_a_connector_without_a_memlet() {
    // Found by `cargo xtask fuzz`: a JSON edge whose memlet was dropped
    // passed validation and broke loop sinking.
    let mut sdfg = tiny();
    let st = state_mut(&mut sdfg, "s");
    let conn = edge_mut(st, EdgeId::new(0))
        .dst_conn
        .clone()
        .expect("a connector");
    edge_mut(st, EdgeId::new(0)).memlet = None;
    assert_error(
        &sdfg,
        tiny_in_edge(EdgeError::ConnectorWithoutMemlet {
            side: "destination",
            name: conn,
        }),
    );
}

#[test]
fn memlet_into_a_map_naming_data_its_path_never_reaches() {
    // Found by `cargo xtask fuzz`: `x -> scale` naming `y`, which no access
    // node on the memlet's path through the map holds, validated and
    // simulated to another result offloaded.
    let mut sdfg = scale_sdfg(Schedule::Sequential, Storage::Default, Storage::Default);
    let st = state_mut(&mut sdfg, "compute");
    memlet_mut(st, EdgeId::new(0)).data = "y".into();
    assert_error(
        &sdfg,
        edge_err(
            "scale",
            "compute",
            EdgeId::new(0),
            ("x", "scale"),
            EdgeError::DataMismatch {
                data: "y".into(),
                node_data: "x".into(),
            },
        ),
    );
}

#[test]
fn memlet_inside_a_map_naming_data_its_scope_does_not_carry() {
    // Found by `cargo xtask fuzz`: the memlet from a map entry to its
    // tasklet renamed to another container (`y` where the entry carries
    // `x`, and the reverse at the exit) validated, and loop sinking then
    // left a nested SDFG without that container.
    for (from_entry, named, carried) in [(true, "y", "x"), (false, "x", "y")] {
        let mut sdfg = scale_sdfg(Schedule::Sequential, Storage::Default, Storage::Default);
        let st = state_mut(&mut sdfg, "compute");
        let (id, src, dst) = st
            .edges()
            .find_map(|(id, src, dst, _)| {
                let entry = matches!(st.node(src), Some(Node::MapEntry(_)));
                let exit = matches!(st.node(dst), Some(Node::MapExit(_)));
                let code = |n| matches!(st.node(n), Some(Node::Tasklet(_)));
                ((from_entry && entry && code(dst)) || (!from_entry && exit && code(src)))
                    .then_some((id, src, dst))
            })
            .expect("the edge");
        let labels = (
            st.node(src).expect("src").label().to_owned(),
            st.node(dst).expect("dst").label().to_owned(),
        );
        memlet_mut(st, id).data = named.into();
        assert_error(
            &sdfg,
            edge_err(
                "scale",
                "compute",
                id,
                (&labels.0, &labels.1),
                EdgeError::DataMismatch {
                    data: named.into(),
                    node_data: carried.into(),
                },
            ),
        );
    }
}

// -- The owned proof -------------------------------------------------------

/// `ValidSdfg` keeps its proof only through changes it can trust: one that
/// reports a change is validated again (and refused when it broke the
/// SDFG), one that reports none keeps the proof, and in debug builds (the
/// tests) a change that reports none is caught.
#[test]
fn valid_sdfg_keeps_its_proof_only_through_reported_changes() {
    use sdfg_ir::ValidSdfg;
    use sdfg_ir::validate::UpdateError;
    let mut broken = examples::axpy().unwrap();
    broken.arguments.push("ghost".into());
    assert!(ValidSdfg::new(broken).is_err());

    let valid = ValidSdfg::new(examples::axpy().unwrap()).unwrap();
    let (valid, changed) = valid
        .update(|s| Ok::<_, ()>(s.containers.contains_key("ghost")))
        .unwrap();
    assert!(!changed);
    let (valid, changed) = valid
        .update(|s| {
            s.name.push_str("_renamed");
            Ok::<_, ()>(true)
        })
        .unwrap();
    assert!(changed);
    assert!(valid.name.ends_with("_renamed"));
    assert!(validate(valid.validated().sdfg()).is_ok());

    let breaks = |s: &mut Sdfg| {
        s.arguments.push("ghost".into());
        Ok::<_, ()>(true)
    };
    assert!(matches!(
        valid.clone().update(breaks),
        Err(UpdateError::Invalid(e)) if e.0.iter().any(|e| matches!(
            e,
            ValidationError::Sdfg { error: SdfgError::UnknownArgument { .. }, .. }
        ))
    ));
    assert!(matches!(
        valid.clone().update(|_| Err::<bool, _>("refused")),
        Err(UpdateError::Failed("refused"))
    ));
    let silent = valid.update(|s| {
        s.name.push('_');
        Ok::<_, ()>(false)
    });
    assert_eq!(
        matches!(silent, Err(UpdateError::Unreported)),
        cfg!(debug_assertions)
    );
}
