//! Library lowering: library nodes become maps and tasklets (the pure
//! expansion) before code generation.
//!
//! A library node stands for a coarse operation the simulator computes
//! directly (`sdfg_sim::library`, the reference semantics). Emitters need
//! loops, so each node is replaced, in place, by a scope that computes the
//! same thing: a map over the output's elements (a kernel where the node was
//! a device-wide call, sequential loops where it sat inside a map), and
//! inside it a sequential map over the reduced dimensions accumulating into
//! a per-element register, which is then stored. One builder serves every
//! operation, since all are reductions of an elementwise product or value:
//!
//! | operation | output elements | reduced | value |
//! |---|---|---|---|
//! | MatMul (matrix x matrix) | `i, j` | `k` | `A[i,k] * B[k,j]` |
//! | MatMul (matrix x vector, vector x matrix) | `i` / `j` | `k` | `A[i,k] * x[k]` / `x[k] * B[k,j]` |
//! | MatMul (vector x vector), Dot | one | `k` | `x[k] * y[k]` |
//! | BatchedMatMul | batch (broadcast), `i, j` | `k` | `A[b,i,k] * B[b,k,j]` |
//! | Reduce | kept axes | reduced axes | `in[...]` |
//! | Transpose, TensorTranspose | permuted axes | none | `in[permuted]` |
//!
//! A Reduce without identity combines into the output's current value
//! (DaCe's rule, as the simulator does): its result is stored with the
//! reduction as write-conflict resolution.
//!
//! A Cholesky factorization at host level of a state becomes one
//! single-thread scope (a single-thread kernel on the device) running the
//! column-by-column algorithm with sequential maps, reading back the factor
//! it has written so far (as LAPACK's unblocked `potf2` does).
//!
//! **Vendor calls.** A device-wide matrix product whose accelerator maps it
//! to a vendor library (`Accelerator::vendor_library`) is not expanded: it
//! stays a library node, specialized by operand ranks into GEMM, GEMV or DOT
//! (float operands with unit stride along rows), and the emitter calls the
//! vendor BLAS (a GEMM absorbing the element-wise scaling before it and the
//! accumulation after it, `fold_scales.rs`); a device-wide Cholesky
//! factorization of a float matrix stays a library node too, for the vendor dense solver (`potrf`), and so does a
//! device-wide linear solve (`getrf` + `getrs`). Reductions are
//! expanded even where a vendor call exists; the returned lines say which
//! vendor call was not used.
//!
//! A linear solve at host level of a state becomes one single-thread scope
//! too: LU factorization with partial pivoting of a copy of the matrix (the
//! pivot row, read from data, is swapped through pointer connectors), then
//! forward elimination of the right-hand sides and back substitution. A
//! device-wide solve whose accelerator maps it stays a library node for the
//! vendor solver (`getrf` + `getrs`), for real and complex matrices.
//!
//! Operations without an expansion here (GEMM and GEMV given with
//! scaling, a vector against a stack of matrices, Cholesky inside a map or
//! of complex matrices, a solve inside a map) are refused with
//! [`LibraryError::Unsupported`] naming the node and state.

use crate::accelerator::Accelerator;
use sdfg_ir::builder::{BuildError, StateBuilder};
use sdfg_ir::code::{BinaryOp, Expr, Intrinsic, Stmt};
use sdfg_ir::{
    BlockKind, Connector, DType, DataDesc, LibraryOp, Lifetime, Literal, Map, Memlet, Node, NodeId,
    Range, Region, Schedule, Sdfg, State, Storage, Subset, SymExpr, Wcr,
};
use std::collections::BTreeMap;
use thiserror::Error;

/// Why a library node could not be lowered.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum LibraryError {
    /// An operation (or operand shape) without an expansion here.
    #[error("cannot lower {what} (library node `{node}` in state `{state}`)")]
    Unsupported {
        /// What.
        what: String,
        /// The node's label.
        node: String,
        /// The state's label.
        state: String,
    },
    /// The lowered SDFG is invalid: a bug, reported instead of hidden.
    #[error("the lowered SDFG is invalid:\n{0}")]
    Invalid(String),
}

/// Expands every library node of `sdfg` (and of SDFGs nested in it); returns
/// one line per node: what it became, and the vendor call `acc` maps it to.
pub fn lower_library_nodes(
    sdfg: &mut Sdfg,
    acc: &dyn Accelerator,
) -> Result<Vec<String>, LibraryError> {
    let lines = lower_library_unvalidated(sdfg, acc)?;
    sdfg_ir::validate(sdfg).map_err(|e| LibraryError::Invalid(e.to_string()))?;
    Ok(lines)
}

/// [`lower_library_nodes`] without the validation of its result: for the
/// pipeline, which validates after every pass that changed the SDFG.
pub(crate) fn lower_library_unvalidated(
    sdfg: &mut Sdfg,
    acc: &dyn Accelerator,
) -> Result<Vec<String>, LibraryError> {
    lower_sdfg(sdfg, acc, Level::Host)
}

/// Where an SDFG being lowered runs, which decides its expansions.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    /// Called by the host: device-wide calls are kernels or vendor calls.
    Host,
    /// Nested inside device code: every expansion is sequential code of
    /// the thread running it.
    Device,
    /// The body of a persistent kernel: a reduction at its top is shared
    /// by the kernel's threads (a thread per output, or partial results
    /// combined once per thread for a full reduction), deeper it is code
    /// of each thread.
    Grid,
}

/// Lowers one SDFG level. Validation is the caller's: a nested SDFG is
/// only valid where it sits.
fn lower_sdfg(
    sdfg: &mut Sdfg,
    acc: &dyn Accelerator,
    level: Level,
) -> Result<Vec<String>, LibraryError> {
    let mut lines = Vec::new();
    let Sdfg {
        body, containers, ..
    } = sdfg;
    let mut counter = 0usize;
    lower_region(body, containers, acc, level, &mut counter, &mut lines)?;
    // The host issues vendor calls: only the top level has them.
    if level == Level::Host {
        lines.extend(crate::fold_scales::fold_gemm_scales(sdfg));
    }
    Ok(lines)
}

fn lower_region(
    region: &mut Region,
    containers: &mut BTreeMap<String, DataDesc>,
    acc: &dyn Accelerator,
    level: Level,
    counter: &mut usize,
    lines: &mut Vec<String>,
) -> Result<(), LibraryError> {
    for block in &mut region.blocks {
        match &mut block.kind {
            BlockKind::State(state) => {
                lower_state(&block.label, state, containers, acc, level, counter, lines)?;
            }
            BlockKind::Loop(l) => {
                lower_region(&mut l.body, containers, acc, level, counter, lines)?
            }
            BlockKind::Conditional(c) => {
                for (_, r) in &mut c.branches {
                    lower_region(r, containers, acc, level, counter, lines)?;
                }
                if let Some(r) = &mut c.otherwise {
                    lower_region(r, containers, acc, level, counter, lines)?;
                }
            }
            BlockKind::Break | BlockKind::Continue | BlockKind::Return => {}
        }
    }
    Ok(())
}

/// One operand: the edge's other end and connector, and its memlet.
pub(crate) struct Operand {
    pub(crate) node: NodeId,
    pub(crate) conn: Option<String>,
    pub(crate) memlet: Memlet,
}

/// The operands of library node `id` by connector: its inputs (`incoming`)
/// or its outputs.
pub(crate) fn operands(state: &State, id: NodeId, incoming: bool) -> BTreeMap<String, Operand> {
    let edges: Vec<_> = if incoming {
        state.in_edges(id).collect()
    } else {
        state.out_edges(id).collect()
    };
    edges
        .into_iter()
        .filter_map(|(_, other, e)| {
            let (own, theirs) = if incoming {
                (&e.dst_conn, &e.src_conn)
            } else {
                (&e.src_conn, &e.dst_conn)
            };
            Some((
                own.clone()?,
                Operand {
                    node: other,
                    conn: theirs.clone(),
                    memlet: e.memlet.clone()?,
                },
            ))
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn lower_state(
    label: &str,
    state: &mut State,
    containers: &mut BTreeMap<String, DataDesc>,
    acc: &dyn Accelerator,
    level: Level,
    counter: &mut usize,
    lines: &mut Vec<String>,
) -> Result<(), LibraryError> {
    // Nested SDFGs first: one inside device code is code of each thread,
    // the body of a persistent kernel the code its threads share.
    let ids: Vec<NodeId> = state.nodes().map(|(id, _)| id).collect();
    let tree = state
        .scope_tree()
        .map_err(|e| LibraryError::Invalid(e.to_string()))?;
    for id in &ids {
        let persistent = level == Level::Host
            && tree.parent(*id).is_some_and(|p| {
                matches!(state.node(p), Some(Node::MapEntry(m))
                    if m.map.schedule == Schedule::DevicePersistent)
            });
        let inner_level = if persistent {
            Level::Grid
        } else if level != Level::Host || tree.runs_on_device(state, *id) {
            Level::Device
        } else {
            Level::Host
        };
        if let Some(Node::NestedSdfg(n)) = state.graph.node_weight_mut(*id) {
            let mut inner = lower_sdfg(&mut n.sdfg, acc, inner_level)?;
            lines.append(&mut inner);
        }
    }
    // Library nodes kept for a vendor call.
    let mut kept: Vec<NodeId> = Vec::new();
    loop {
        let tree = state
            .scope_tree()
            .map_err(|e| LibraryError::Invalid(e.to_string()))?;
        let Some((id, node)) = state.nodes().find_map(|(id, n)| match n {
            Node::Library(l) if !kept.contains(&id) => Some((id, l.clone())),
            _ => None,
        }) else {
            return Ok(());
        };
        let refuse = |what: &str| LibraryError::Unsupported {
            what: what.to_owned(),
            node: node.label.clone(),
            state: label.to_owned(),
        };
        let (inputs, outputs) = (operands(state, id, true), operands(state, id, false));
        // Where the expansion runs: at the top of a persistent kernel's
        // body, in maps its threads share.
        let shared = level == Level::Grid && tree.parent(id).is_none();
        let (outer, inner) = match (tree.parent(id), node.schedule) {
            _ if shared => (acc.kernel_schedule(), acc.inner_schedule()),
            _ if level != Level::Host => (acc.inner_schedule(), acc.inner_schedule()),
            (None, s) if s.is_device() => (acc.kernel_schedule(), acc.inner_schedule()),
            (None, _) => (Schedule::Default, Schedule::Sequential),
            (Some(_), _) => (acc.inner_schedule(), acc.inner_schedule()),
        };
        // A device-wide call the accelerator maps to a vendor library stays a
        // library node, specialized (GEMM, GEMV, DOT) for the emitter to call.
        if level == Level::Host
            && tree.parent(id).is_none()
            && node.schedule.is_device()
            && let Some((op, renames)) = vendor_form(&node.op, &inputs, &outputs, containers)
                .or_else(|| solver_form(&node.op, &inputs, &outputs, containers))
            && let Some(v) = acc.vendor_library(&op)
        {
            rename_connectors(state, id, &renames);
            kept.push(id);
            if let Some(Node::Library(l)) = state.graph.node_weight_mut(id) {
                l.op = op.clone();
            }
            lines.push(format!(
                "{} `{}` in state `{label}`: {} {} ({})",
                node.op.name(),
                node.label,
                v.library,
                v.function,
                op.name()
            ));
            continue;
        }
        if node.op == LibraryOp::Solve {
            if tree.parent(id).is_some() {
                return Err(refuse(
                    "a linear solve inside a map (no pure expansion yet)",
                ));
            }
            *counter += 1;
            let work = solve_workspace(*counter, &outputs, containers).map_err(|w| refuse(&w))?;
            state.graph.remove_node(id);
            let mut errors: Vec<BuildError> = Vec::new();
            let mut sb = StateBuilder::standalone(containers, &mut errors);
            *sb.state_mut() = std::mem::take(state);
            build_solve(
                &mut sb,
                &node.label,
                *counter,
                (&inputs, &outputs),
                &work,
                (outer, inner),
            )
            .map_err(|w| refuse(&w))?;
            *state = sb.finish();
            if !errors.is_empty() {
                let text: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
                return Err(LibraryError::Invalid(text.join("\n")));
            }
            lines.push(format!(
                "{} `{}` in state `{label}`: pure expansion (LU with partial pivoting)",
                node.op.name(),
                node.label
            ));
            continue;
        }
        let plan = match node.op {
            LibraryOp::Cholesky { .. } => None,
            _ => Some(plan(&node.op, &inputs, &outputs).map_err(|w| refuse(&w))?),
        };
        // Every operation has one output connector (the IR's fixed names).
        let out_name = node.op.out_connectors().first().copied().unwrap_or("");
        let dtype = outputs
            .get(out_name)
            .and_then(|o| containers.get(&o.memlet.data))
            .map(|d| d.dtype)
            .ok_or_else(|| refuse("an output without a container"))?;
        *counter += 1;
        // A full reduction a persistent kernel's threads share: each
        // thread's partial result is the emitter's (no register here).
        let grid_full = shared
            && plan
                .as_ref()
                .is_some_and(|p| p.out_dims.is_empty() && !p.red_dims.is_empty());
        // Per-thread registers: one accumulator, three for Cholesky.
        let registers: Vec<String> = ["acc", "diag", "acc2"]
            .iter()
            .take(match &plan {
                _ if grid_full => 0,
                Some(_) => 1,
                None => 3,
            })
            .map(|r| {
                let mut n = format!("__lib{counter}_{r}");
                while containers.contains_key(&n) {
                    n.push('_');
                }
                containers.insert(
                    n.clone(),
                    DataDesc::scalar(dtype)
                        .into_transient()
                        .with_storage(Storage::Register)
                        .with_lifetime(Lifetime::Scope),
                );
                n
            })
            .collect();
        if plan.is_none() && (tree.parent(id).is_some() || !dtype.is_float()) {
            return Err(refuse(
                "a Cholesky factorization inside a map or of a non-float matrix (no pure expansion yet)",
            ));
        }
        state.graph.remove_node(id);
        let mut errors: Vec<BuildError> = Vec::new();
        let mut sb = StateBuilder::standalone(containers, &mut errors);
        *sb.state_mut() = std::mem::take(state);
        // A block of threads per output where the device has blocks and the
        // reduction is long enough to share.
        let inner = match (&plan, acc.block_schedule()) {
            (Some(p), Some(block))
                if !shared && outer == acc.kernel_schedule() && p.by_blocks(acc.warp_size()) =>
            {
                block
            }
            _ => inner,
        };
        match (&plan, &node.op) {
            (Some(plan), _) if grid_full => build_grid_reduction(
                &mut sb,
                &node.label,
                *counter,
                plan,
                &inputs,
                &outputs,
                dtype,
                outer,
            ),
            (Some(plan), _) => build(
                &mut sb,
                &node.label,
                *counter,
                plan,
                &inputs,
                &outputs,
                &registers[0],
                dtype,
                (outer, inner),
            ),
            (None, LibraryOp::Cholesky { lower }) => build_cholesky(
                &mut sb,
                &node.label,
                *counter,
                (&inputs, &outputs),
                &registers,
                dtype,
                *lower,
                (outer, inner),
            ),
            (None, _) => Err("an operation without an expansion".to_owned()),
        }
        .map_err(|w| refuse(&w))?;
        *state = sb.finish();
        if !errors.is_empty() {
            let text: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
            return Err(LibraryError::Invalid(text.join("\n")));
        }
        let vendor = acc.vendor_library(&node.op).map_or(String::new(), |v| {
            format!(
                " (the accelerator's {} {} is not emitted yet)",
                v.library, v.function
            )
        });
        lines.push(format!(
            "{} `{}` in state `{label}`: pure expansion{vendor}",
            node.op.name(),
            node.label
        ));
    }
}

/// What a node computes, as a reduction over an elementwise value.
struct Plan {
    /// Extents of the output's elements (outer map), and of the reduction.
    out_dims: Vec<SymExpr>,
    red_dims: Vec<SymExpr>,
    /// Per input connector: for each squeezed dimension, the index it takes:
    /// `Out(k)` the k-th output parameter, `Red(k)` the k-th reduced one.
    operands: Vec<(String, Vec<Axis>)>,
    /// The elementwise value of the inputs (connectors named as the inputs).
    value: Expr,
    /// The output connector, and how the reduction combines.
    out: String,
    op: Wcr,
    /// Identity of the accumulation, or `None`: store combining into the output.
    identity: Option<Option<Literal>>,
    /// Whether a block of threads may share each output's reduction on a
    /// device, reading consecutive elements: one output, a reduction of the
    /// input's innermost axis, or the rows of a matrix against a vector (a
    /// matrix product's many outputs keep a thread each).
    blocks: bool,
}

impl Plan {
    /// Whether a device-wide expansion reduces each output with a block of
    /// threads (see [`Accelerator::block_schedule`]): the plan allows it and
    /// the reduction is not known to be shorter than a warp.
    fn by_blocks(&self, warp: u32) -> bool {
        let count = SymExpr::constant_product(&self.red_dims);
        self.blocks && !self.red_dims.is_empty() && count.is_none_or(|c| c >= i64::from(warp))
    }
}

#[derive(Clone, Copy)]
enum Axis {
    Out(usize),
    Red(usize),
    /// A broadcast dimension of extent 1: always index 0.
    Zero,
}

/// The extents of a memlet's squeezed dimensions.
fn extents(m: &Memlet) -> Vec<SymExpr> {
    m.subset
        .ranges
        .iter()
        .filter(|r| !r.is_index())
        .map(Range::num_elements)
        .collect()
}

fn plan(
    op: &LibraryOp,
    inputs: &BTreeMap<String, Operand>,
    outputs: &BTreeMap<String, Operand>,
) -> Result<Plan, String> {
    let get = |c: &str, from: &BTreeMap<String, Operand>| {
        from.get(c)
            .map(|o| extents(&o.memlet))
            .ok_or_else(|| format!("a node without its `{c}` connector"))
    };
    let mul = || Expr::binary(BinaryOp::Mul, Expr::var("_a"), Expr::var("_b"));
    match op {
        LibraryOp::MatMul | LibraryOp::BatchedMatMul => {
            let (a, b) = (get("_a", inputs)?, get("_b", inputs)?);
            let (out_dims, ax_a, ax_b) = match (a.len(), b.len()) {
                (2, 2) => (
                    vec![a[0].clone(), b[1].clone()],
                    vec![Axis::Out(0), Axis::Red(0)],
                    vec![Axis::Red(0), Axis::Out(1)],
                ),
                (2, 1) => (
                    vec![a[0].clone()],
                    vec![Axis::Out(0), Axis::Red(0)],
                    vec![Axis::Red(0)],
                ),
                (1, 2) => (
                    vec![b[1].clone()],
                    vec![Axis::Red(0)],
                    vec![Axis::Red(0), Axis::Out(0)],
                ),
                (1, 1) => (Vec::new(), vec![Axis::Red(0)], vec![Axis::Red(0)]),
                (ra, rb) if ra >= 2 && rb >= 2 => batched(&a, &b)?,
                (ra, rb) => {
                    return Err(format!(
                        "a matrix product of operands of ranks {ra} and {rb} (a vector against a stack of matrices is not expanded yet)"
                    ));
                }
            };
            let k = if a.len() >= 2 {
                a[a.len() - 1].clone()
            } else {
                a[0].clone()
            };
            Ok(Plan {
                // Rows of a matrix against a vector, and a dot product: a
                // block's threads read consecutive elements of each row.
                blocks: matches!((a.len(), b.len()), (2, 1) | (1, 1)),
                out_dims,
                red_dims: vec![k],
                operands: vec![("_a".to_owned(), ax_a), ("_b".to_owned(), ax_b)],
                value: mul(),
                out: "_c".to_owned(),
                op: Wcr::Sum,
                identity: Some(None),
            })
        }
        LibraryOp::Dot => {
            let x = get("_x", inputs)?;
            if x.len() != 1 {
                return Err("a dot product of operands that are not vectors".to_owned());
            }
            Ok(Plan {
                out_dims: Vec::new(),
                red_dims: x,
                operands: vec![
                    ("_x".to_owned(), vec![Axis::Red(0)]),
                    ("_y".to_owned(), vec![Axis::Red(0)]),
                ],
                value: Expr::binary(BinaryOp::Mul, Expr::var("_x"), Expr::var("_y")),
                out: "_result".to_owned(),
                op: Wcr::Sum,
                identity: Some(None),
                blocks: true,
            })
        }
        LibraryOp::Reduce { op, axes, identity } => {
            let input = get("_in", inputs)?;
            let reduced: Vec<bool> = (0..input.len())
                .map(|d| axes.as_ref().is_none_or(|a| a.contains(&d)))
                .collect();
            let (mut out_dims, mut red_dims, mut axis) = (Vec::new(), Vec::new(), Vec::new());
            for (d, extent) in input.iter().enumerate() {
                if reduced[d] {
                    axis.push(Axis::Red(red_dims.len()));
                    red_dims.push(extent.clone());
                } else {
                    axis.push(Axis::Out(out_dims.len()));
                    out_dims.push(extent.clone());
                }
            }
            let blocks = out_dims.is_empty() || reduced.last() == Some(&true);
            Ok(Plan {
                blocks,
                out_dims,
                red_dims,
                operands: vec![("_in".to_owned(), axis)],
                value: Expr::var("_in"),
                out: "_out".to_owned(),
                op: *op,
                identity: identity.map(Some),
            })
        }
        LibraryOp::Transpose | LibraryOp::TensorTranspose { .. } => {
            let input = get("_in", inputs)?;
            let rank = input.len();
            // Output dimension k is input dimension axes[k].
            let axes: Vec<usize> = match op {
                LibraryOp::TensorTranspose { axes } => axes.clone(),
                _ => (0..rank).rev().collect(),
            };
            let mut sorted = axes.clone();
            sorted.sort_unstable();
            if sorted != (0..rank).collect::<Vec<_>>() {
                return Err(format!(
                    "a transpose by {axes:?}, not a permutation of {rank} axes"
                ));
            }
            let out_dims = axes.iter().map(|&d| input[d].clone()).collect();
            let operand = (0..rank)
                .map(|d| Axis::Out(axes.iter().position(|&a| a == d).unwrap_or(d)))
                .collect();
            let _ = outputs;
            Ok(Plan {
                out_dims,
                red_dims: Vec::new(),
                operands: vec![("_in".to_owned(), operand)],
                value: Expr::var("_in"),
                out: "_out".to_owned(),
                op: Wcr::Sum,
                identity: Some(None),
                blocks: false,
            })
        }
        other => Err(format!(
            "the {} operation (no pure expansion yet)",
            other.name()
        )),
    }
}

/// The output extents of a product, and the axes of its two operands.
type ProductAxes = (Vec<SymExpr>, Vec<Axis>, Vec<Axis>);

/// A batched matrix product (`numpy.matmul` of stacks of matrices): the
/// batch dimensions broadcast, aligned from the right, and a batch
/// dimension of extent 1 broadcasts against the other operand's.
fn batched(a: &[SymExpr], b: &[SymExpr]) -> Result<ProductAxes, String> {
    let (ba, bb) = (&a[..a.len() - 2], &b[..b.len() - 2]);
    let nb = ba.len().max(bb.len());
    let one = SymExpr::int(1);
    let mut out_dims = Vec::with_capacity(nb + 2);
    let (mut ax_a, mut ax_b) = (Vec::new(), Vec::new());
    for d in 0..nb {
        // Dimension `d` of the output batch; the operands' aligned ones.
        let ea = (d + ba.len()).checked_sub(nb).map(|i| &ba[i]);
        let eb = (d + bb.len()).checked_sub(nb).map(|i| &bb[i]);
        let extent = match (ea, eb) {
            (Some(x), Some(y)) if x == &one => y.clone(),
            (Some(x), Some(y)) if y == &one || x == y => x.clone(),
            (Some(x), Some(y)) => {
                return Err(format!(
                    "a batched product whose batch extents {x} and {y} are not known to match"
                ));
            }
            (Some(x), None) | (None, Some(x)) => x.clone(),
            (None, None) => one.clone(),
        };
        let axis = |e: Option<&SymExpr>| match e {
            Some(x) if x == &one && extent != one => Some(Axis::Zero),
            Some(_) => Some(Axis::Out(d)),
            None => None,
        };
        ax_a.extend(axis(ea));
        ax_b.extend(axis(eb));
        out_dims.push(extent);
    }
    out_dims.push(a[a.len() - 2].clone());
    out_dims.push(b[b.len() - 1].clone());
    ax_a.extend([Axis::Out(nb), Axis::Red(0)]);
    ax_b.extend([Axis::Red(0), Axis::Out(nb + 1)]);
    Ok((out_dims, ax_a, ax_b))
}

/// The element of `m`'s subset whose squeezed indices are `index`.
fn element(m: &Memlet, index: &[SymExpr]) -> Result<Memlet, String> {
    let mut it = index.iter();
    let mut ranges = Vec::with_capacity(m.subset.ranges.len());
    for r in &m.subset.ranges {
        if r.is_index() {
            ranges.push(r.clone());
        } else {
            let i = it.next().ok_or_else(|| {
                format!("the operand `{}` has more dimensions than expected", m.data)
            })?;
            ranges.push(Range::index(&r.begin + &(i * &r.step)));
        }
    }
    if it.next().is_some() {
        return Err(format!(
            "the operand `{}` has fewer dimensions than expected",
            m.data
        ));
    }
    Ok(Memlet::new(m.data.clone(), Subset::new(ranges)))
}

#[allow(clippy::too_many_arguments)]
fn build(
    sb: &mut StateBuilder<'_>,
    label: &str,
    n: usize,
    plan: &Plan,
    inputs: &BTreeMap<String, Operand>,
    outputs: &BTreeMap<String, Operand>,
    acc: &str,
    dtype: DType,
    (outer, inner): (Schedule, Schedule),
) -> Result<(), String> {
    let out = outputs
        .get(&plan.out)
        .ok_or_else(|| format!("a node without its `{}` connector", plan.out))?;
    // Parameters: `__l{n}_o{k}` over the output, `__l{n}_r{k}` reduced.
    let out_params: Vec<String> = (0..plan.out_dims.len().max(1))
        .map(|k| format!("__l{n}_o{k}"))
        .collect();
    let red_params: Vec<String> = (0..plan.red_dims.len())
        .map(|k| format!("__l{n}_r{k}"))
        .collect();
    let out_ranges: Vec<Range> = if plan.out_dims.is_empty() {
        vec![Range::index(SymExpr::int(0))]
    } else {
        plan.out_dims.iter().map(Range::full).collect()
    };
    let (me, mx) = sb.map_with(Map {
        label: format!("{label}_expansion"),
        params: out_params.clone(),
        ranges: out_ranges,
        schedule: outer,
    });
    let sym = |p: &String| SymExpr::symbol(p.as_str());
    let out_index: Vec<SymExpr> = if plan.out_dims.is_empty() {
        Vec::new()
    } else {
        out_params.iter().map(sym).collect()
    };
    let red_index: Vec<SymExpr> = red_params.iter().map(sym).collect();
    // Start the accumulator.
    let start = plan
        .identity
        .flatten()
        .unwrap_or_else(|| plan.op.identity(dtype));
    let acc_start = init_register(
        sb,
        &format!("{label}_init"),
        me,
        (acc, dtype),
        Expr::Lit(start),
    );
    // The elementwise value, accumulated over the reduced dimensions.
    let compute = value_tasklet(sb, label, plan, dtype);
    let acc_end = sb.access(acc);
    let acc_memlet = register(acc);
    let mut chain_in = vec![me];
    let mut chain_out = vec![compute];
    if !plan.red_dims.is_empty() {
        let (re, rx) = sb.map_with(Map {
            label: format!("{label}_reduce"),
            params: red_params.clone(),
            ranges: plan.red_dims.iter().map(Range::full).collect(),
            schedule: inner,
        });
        sb.empty_edge(acc_start, re);
        chain_in.push(re);
        chain_out.push(rx);
    } else {
        sb.empty_edge(acc_start, compute);
    }
    for (conn, axes) in &plan.operands {
        let operand = inputs
            .get(conn)
            .ok_or_else(|| format!("a node without its `{conn}` connector"))?;
        let index: Vec<SymExpr> = axes
            .iter()
            .map(|a| match a {
                Axis::Out(k) => out_index[*k].clone(),
                Axis::Red(k) => red_index[*k].clone(),
                Axis::Zero => SymExpr::int(0),
            })
            .collect();
        let m = element(&operand.memlet, &index)?;
        let mut path = vec![operand.node];
        path.extend(&chain_in);
        path.push(compute);
        sb.path(&path, operand.conn.as_deref(), Some(conn), m);
    }
    chain_out.push(acc_end);
    sb.path(
        &chain_out,
        Some("_v"),
        None,
        acc_memlet.clone().with_wcr(plan.op),
    );
    // Store.
    let store = sb.tasklet(
        &format!("{label}_store"),
        vec![Connector::scalar("_s", dtype)],
        vec![Connector::scalar("_o", dtype)],
        vec![Stmt::assign("_o", Expr::var("_s"))],
    );
    sb.edge(acc_end, None, store, Some("_s"), acc_memlet);
    let mut target = element(&out.memlet, &out_index)?;
    if plan.identity.is_none() {
        target = target.with_wcr(plan.op);
    }
    sb.path(
        &[store, mx, out.node],
        Some("_o"),
        out.conn.as_deref(),
        target,
    );
    Ok(())
}

/// The tasklet computing a plan's elementwise value `_v` from its operands.
fn value_tasklet(sb: &mut StateBuilder<'_>, label: &str, plan: &Plan, dtype: DType) -> NodeId {
    let inputs: Vec<Connector> = plan
        .operands
        .iter()
        .map(|(c, _)| Connector::scalar(c.as_str(), dtype))
        .collect();
    sb.tasklet(
        &format!("{label}_value"),
        inputs,
        vec![Connector::scalar("_v", dtype)],
        vec![Stmt::assign("_v", plan.value.clone())],
    )
}

/// A full reduction at the top of a persistent kernel's body, shared by
/// its threads: the output starts at the reduction's identity (where the
/// plan has one; else the reduction combines into what the output holds),
/// then one map the threads share over the reduced elements combines each
/// element's value into it. The emitter gives each thread a partial result
/// of its own and combines it into the output once (`emit/persistent.rs`),
/// so the output sees one atomic update per thread.
#[allow(clippy::too_many_arguments)]
fn build_grid_reduction(
    sb: &mut StateBuilder<'_>,
    label: &str,
    n: usize,
    plan: &Plan,
    inputs: &BTreeMap<String, Operand>,
    outputs: &BTreeMap<String, Operand>,
    dtype: DType,
    shared: Schedule,
) -> Result<(), String> {
    let out = outputs
        .get(&plan.out)
        .ok_or_else(|| format!("a node without its `{}` connector", plan.out))?;
    let target = element(&out.memlet, &[])?;
    let red_params: Vec<String> = (0..plan.red_dims.len())
        .map(|k| format!("__l{n}_r{k}"))
        .collect();
    let (me, mx) = sb.map_with(Map {
        label: format!("{label}_expansion"),
        params: red_params.clone(),
        ranges: plan.red_dims.iter().map(Range::full).collect(),
        schedule: shared,
    });
    if let Some(start) = plan.identity {
        let start = start.unwrap_or_else(|| plan.op.identity(dtype));
        let init = sb.tasklet(
            &format!("{label}_init"),
            vec![],
            vec![Connector::scalar("_o", dtype)],
            vec![Stmt::assign("_o", Expr::Lit(start))],
        );
        let started = sb.access(&target.data);
        sb.edge(init, Some("_o"), started, None, target.clone());
        sb.empty_edge(started, me);
    }
    let compute = value_tasklet(sb, label, plan, dtype);
    if plan.operands.is_empty() {
        sb.empty_edge(me, compute);
    }
    for (conn, axes) in &plan.operands {
        let operand = inputs
            .get(conn)
            .ok_or_else(|| format!("a node without its `{conn}` connector"))?;
        let index: Vec<SymExpr> = axes
            .iter()
            .map(|a| match a {
                Axis::Red(k) => SymExpr::symbol(red_params[*k].as_str()),
                Axis::Out(_) | Axis::Zero => SymExpr::int(0),
            })
            .collect();
        let m = element(&operand.memlet, &index)?;
        sb.path(
            &[operand.node, me, compute],
            operand.conn.as_deref(),
            Some(conn),
            m,
        );
    }
    sb.path(
        &[compute, mx, out.node],
        Some("_v"),
        out.conn.as_deref(),
        target.with_wcr(plan.op),
    );
    Ok(())
}

/// Cholesky: `_b = L` with `A = L L^T` (`lower`), or `U = L^T`, for a real
/// matrix `_a`. One single-thread scope: zero the other triangle; then for
/// each column `j`, `L[j,j] = sqrt(A[j,j] - sum_k<j L[j,k]^2)` and
/// `L[i,j] = (A[i,j] - sum_k<j L[i,k] L[j,k]) / L[j,j]` for `i > j`.
#[allow(clippy::too_many_arguments)]
fn build_cholesky(
    sb: &mut StateBuilder<'_>,
    label: &str,
    n: usize,
    (inputs, outputs): (&BTreeMap<String, Operand>, &BTreeMap<String, Operand>),
    registers: &[String],
    dtype: DType,
    lower: bool,
    (outer, inner): (Schedule, Schedule),
) -> Result<(), String> {
    let a = inputs.get("_a").ok_or("a Cholesky node without `_a`")?;
    let b = outputs.get("_b").ok_or("a Cholesky node without `_b`")?;
    let [acc1, diag, acc2] = registers else {
        return Err("three registers are needed".to_owned());
    };
    let ext = extents(&a.memlet);
    if ext.len() != 2 || extents(&b.memlet).len() != 2 {
        return Err("a Cholesky factorization of operands that are not matrices".to_owned());
    }
    let size = ext[0].clone();
    let sym = |p: &str| SymExpr::symbol(p);
    let name = |s: &str| format!("__lc{n}_{s}");
    // Element (row, col) of L in `_b` (of U = L^T when upper).
    let l_at = |r: &SymExpr, c: &SymExpr| {
        if lower {
            element(&b.memlet, &[r.clone(), c.clone()])
        } else {
            element(&b.memlet, &[c.clone(), r.clone()])
        }
    };
    let scalar = |c: &str| Connector::scalar(c, dtype);
    let map = |sb: &mut StateBuilder<'_>, l: &str, p: &str, range: Range, schedule| {
        sb.map_with(Map {
            label: format!("{label}_{l}"),
            params: vec![name(p)],
            ranges: vec![range],
            schedule,
        })
    };
    let zero = Expr::Lit(Wcr::Sum.identity(dtype));
    let last = &size - 1;
    let b_in = sb.access(&b.memlet.data);

    let (ome, omx) = map(sb, "factor", "s", Range::index(SymExpr::int(0)), outer);
    // The other triangle is zero.
    let (zi, zj) = (sym(&name("zi")), sym(&name("zj")));
    let (zie, zix) = map(sb, "zero_rows", "zi", Range::full(&size), inner);
    let (zje, zjx) = map(
        sb,
        "zero_cols",
        "zj",
        Range::inclusive(&zi + 1, last.clone()),
        inner,
    );
    let z = sb.tasklet(
        &format!("{label}_zero"),
        vec![],
        vec![scalar("_o")],
        vec![Stmt::assign("_o", zero.clone())],
    );
    sb.empty_edge(ome, zie);
    sb.empty_edge(zie, zje);
    sb.empty_edge(zje, z);
    sb.path(
        &[z, zjx, zix, omx, b.node],
        Some("_o"),
        b.conn.as_deref(),
        l_at(&zi, &zj)?,
    );

    // Column j.
    let j = sym(&name("j"));
    let (je, jx) = map(sb, "columns", "j", Range::full(&size), inner);
    // The diagonal.
    let acc1_a = init_register(
        sb,
        &format!("{label}_init"),
        je,
        (acc1, dtype),
        zero.clone(),
    );
    let k1 = sym(&name("k1"));
    let (k1e, k1x) = map(
        sb,
        "diag_sum",
        "k1",
        Range::slice(SymExpr::int(0), j.clone()),
        inner,
    );
    sb.empty_edge(acc1_a, k1e);
    let sq = sb.tasklet(
        &format!("{label}_square"),
        vec![scalar("_x")],
        vec![scalar("_v")],
        vec![Stmt::assign(
            "_v",
            Expr::binary(BinaryOp::Mul, Expr::var("_x"), Expr::var("_x")),
        )],
    );
    sb.path(&[b_in, ome, je, k1e, sq], None, Some("_x"), l_at(&j, &k1)?);
    let acc1_b = sb.access(acc1);
    sb.path(
        &[sq, k1x, acc1_b],
        Some("_v"),
        None,
        register(acc1).with_wcr(Wcr::Sum),
    );
    let dt = sb.tasklet(
        &format!("{label}_diagonal"),
        vec![scalar("_a"), scalar("_s")],
        vec![scalar("_d"), scalar("_l")],
        vec![
            Stmt::Let {
                name: "r".to_owned(),
                dtype,
                value: Expr::call(
                    sdfg_ir::code::Intrinsic::Sqrt,
                    vec![Expr::binary(
                        BinaryOp::Sub,
                        Expr::var("_a"),
                        Expr::var("_s"),
                    )],
                ),
            },
            Stmt::assign("_d", Expr::var("r")),
            Stmt::assign("_l", Expr::var("r")),
        ],
    );
    sb.path(
        &[a.node, ome, je, dt],
        a.conn.as_deref(),
        Some("_a"),
        element(&a.memlet, &[j.clone(), j.clone()])?,
    );
    sb.edge(acc1_b, None, dt, Some("_s"), register(acc1));
    let diag_node = sb.access(diag);
    sb.edge(dt, Some("_d"), diag_node, None, register(diag));
    sb.path(
        &[dt, jx, omx, b.node],
        Some("_l"),
        b.conn.as_deref(),
        l_at(&j, &j)?,
    );
    // Below the diagonal.
    let i = sym(&name("i"));
    let (ie, ix) = map(sb, "rows", "i", Range::inclusive(&j + 1, last), inner);
    let acc2_a = init_register(sb, &format!("{label}_init_row"), ie, (acc2, dtype), zero);
    let k2 = sym(&name("k2"));
    let (k2e, k2x) = map(
        sb,
        "row_sum",
        "k2",
        Range::slice(SymExpr::int(0), j.clone()),
        inner,
    );
    sb.empty_edge(acc2_a, k2e);
    let pr = sb.tasklet(
        &format!("{label}_product"),
        vec![scalar("_x"), scalar("_y")],
        vec![scalar("_v")],
        vec![Stmt::assign(
            "_v",
            Expr::binary(BinaryOp::Mul, Expr::var("_x"), Expr::var("_y")),
        )],
    );
    sb.path(
        &[b_in, ome, je, ie, k2e, pr],
        None,
        Some("_x"),
        l_at(&i, &k2)?,
    );
    sb.path(
        &[b_in, ome, je, ie, k2e, pr],
        None,
        Some("_y"),
        l_at(&j, &k2)?,
    );
    let acc2_b = sb.access(acc2);
    sb.path(
        &[pr, k2x, acc2_b],
        Some("_v"),
        None,
        register(acc2).with_wcr(Wcr::Sum),
    );
    let dv = sb.tasklet(
        &format!("{label}_divide"),
        vec![scalar("_a"), scalar("_s"), scalar("_g")],
        vec![scalar("_l")],
        vec![Stmt::assign(
            "_l",
            Expr::binary(
                BinaryOp::Div,
                Expr::binary(BinaryOp::Sub, Expr::var("_a"), Expr::var("_s")),
                Expr::var("_g"),
            ),
        )],
    );
    sb.path(
        &[a.node, ome, je, ie, dv],
        a.conn.as_deref(),
        Some("_a"),
        element(&a.memlet, &[i.clone(), j.clone()])?,
    );
    sb.edge(acc2_b, None, dv, Some("_s"), register(acc2));
    sb.path(&[diag_node, ie, dv], None, Some("_g"), register(diag));
    sb.path(
        &[dv, ix, jx, omx, b.node],
        Some("_l"),
        b.conn.as_deref(),
        l_at(&i, &j)?,
    );
    Ok(())
}

/// The containers a linear solve's expansion works in: the LU factors (a
/// copy of `_a`, in the output's storage) and four per-thread registers.
struct SolveWork {
    dtype: DType,
    lu: String,
    best: String,
    pivot: String,
    factor: String,
    acc: String,
}

fn solve_workspace(
    n: usize,
    outputs: &BTreeMap<String, Operand>,
    containers: &mut BTreeMap<String, DataDesc>,
) -> Result<SolveWork, String> {
    let x = outputs.get("_x").ok_or("a solve node without `_x`")?;
    let out = containers
        .get(&x.memlet.data)
        .ok_or("an output without a container")?
        .clone();
    let rows = extents(&x.memlet)
        .first()
        .cloned()
        .ok_or("a solve whose right-hand side has no rows")?;
    let dtype = out.dtype;
    let mut add = |what: &str, desc: DataDesc| {
        let mut name = format!("__lib{n}_{what}");
        while containers.contains_key(&name) {
            name.push('_');
        }
        containers.insert(name.clone(), desc);
        name
    };
    let register = |t: DType| {
        DataDesc::scalar(t)
            .into_transient()
            .with_storage(Storage::Register)
            .with_lifetime(Lifetime::Scope)
    };
    Ok(SolveWork {
        dtype,
        lu: add(
            "lu",
            DataDesc::array(dtype, vec![rows.clone(), rows])
                .into_transient()
                .with_storage(out.storage),
        ),
        best: add("best", register(dtype.real_type())),
        pivot: add("pivot", register(DType::Int64)),
        factor: add("factor", register(dtype)),
        acc: add("acc", register(dtype)),
    })
}

/// A register (a length-one scratch container) as a memlet.
fn register(r: &str) -> Memlet {
    Memlet::new(r, Subset::at(vec![SymExpr::int(0)]))
}

/// A tasklet, inside the scope `entry` opens, setting register `r` of type
/// `dtype` to `value` each time the scope runs; returns the register's access
/// node, from which later readers are ordered after it.
fn init_register(
    sb: &mut StateBuilder<'_>,
    label: &str,
    entry: NodeId,
    (r, dtype): (&str, DType),
    value: Expr,
) -> NodeId {
    let init = sb.tasklet(
        label,
        vec![],
        vec![Connector::scalar("_o", dtype)],
        vec![Stmt::assign("_o", value)],
    );
    sb.empty_edge(entry, init);
    let node = sb.access(r);
    sb.edge(init, Some("_o"), node, None, register(r));
    node
}

/// The nodes of several path pieces, in order.
fn chain(pieces: &[&[NodeId]]) -> Vec<NodeId> {
    pieces.iter().flat_map(|p| p.iter().copied()).collect()
}

/// The indices of a load or store through a pointer connector whose memlet
/// is `m`: one per dimension the memlet does not squeeze.
fn pointer_index(m: &Memlet, logical: Vec<Expr>) -> Vec<Expr> {
    let kept = m.subset.ranges.iter().filter(|r| !r.is_index()).count();
    logical.into_iter().take(kept).collect()
}

/// Solve: `_x` with `_a _x = _b`, for a square `_a` and a vector or matrix
/// `_b`, by LU factorization with partial pivoting (LAPACK's `getrf` and
/// `getrs`, unblocked) in one single-thread scope:
///
/// 1. `LU = A`, `X = B`;
/// 2. for each column `k`: the pivot is the first row `p >= k` of largest
///    magnitude (a max, then a min over the rows that attain it); rows `k`
///    and `p` of `LU` and `X` swap (through pointers, as `p` is data); every
///    row `i > k` gets `f = LU[i,k] / LU[k,k]`, `LU[i,k] = f`,
///    `LU[i,k+1:] -= f LU[k,k+1:]` and `X[i] -= f X[k]`;
/// 3. back substitution, last row first:
///    `X[i] = (X[i] - sum_{c>i} LU[i,c] X[c]) / LU[i,i]`.
///
/// Sub-steps are ordered by access nodes inside the scopes (of `LU`, `X`
/// and the registers), each scope's maps being sequential.
fn build_solve(
    sb: &mut StateBuilder<'_>,
    label: &str,
    n: usize,
    (inputs, outputs): (&BTreeMap<String, Operand>, &BTreeMap<String, Operand>),
    w: &SolveWork,
    (outer, inner): (Schedule, Schedule),
) -> Result<(), String> {
    let a = inputs.get("_a").ok_or("a solve node without `_a`")?;
    let b = inputs.get("_b").ok_or("a solve node without `_b`")?;
    let x = outputs.get("_x").ok_or("a solve node without `_x`")?;
    let ext_a = extents(&a.memlet);
    let ext_x = extents(&x.memlet);
    if ext_a.len() != 2 || !(1..=2).contains(&ext_x.len()) || extents(&b.memlet) != ext_x {
        return Err(
            "a solve of operands that are not a matrix and a vector or matrix of its rows"
                .to_owned(),
        );
    }
    let size = ext_a[0].clone();
    let cols = ext_x.get(1).cloned();
    let dtype = w.dtype;
    let name = |s: &str| format!("__ls{n}_{s}");
    let sym = |p: &str| SymExpr::symbol(name(p));
    let var = |p: &str| Expr::var(name(p));
    let scalar = |c: &str, t: DType| Connector::scalar(c, t);
    let lu_at =
        |r: &SymExpr, c: &SymExpr| Memlet::new(&w.lu, Subset::at(vec![r.clone(), c.clone()]));
    let lu_all = Memlet::new(&w.lu, Subset::full(&[size.clone(), size.clone()])).into_dynamic();
    // Element (row, col) of a right-hand-side operand (col ignored for vectors).
    let rhs_at = |m: &Memlet, r: &SymExpr, c: &SymExpr| match cols {
        Some(_) => element(m, &[r.clone(), c.clone()]),
        None => element(m, std::slice::from_ref(r)),
    };
    let map = |sb: &mut StateBuilder<'_>, l: &str, p: &str, range: Range, schedule| {
        sb.map_with(Map {
            label: format!("{label}_{l}"),
            params: vec![name(p)],
            ranges: vec![range],
            schedule,
        })
    };
    let copy = |sb: &mut StateBuilder<'_>, l: &str| {
        sb.tasklet(
            &format!("{label}_{l}"),
            vec![scalar("_i", dtype)],
            vec![scalar("_o", dtype)],
            vec![Stmt::assign("_o", Expr::var("_i"))],
        )
    };
    // The scope over the right-hand sides' columns: one map for a matrix,
    // none for a vector (entries and exits to splice into paths).
    let cols_scope = |sb: &mut StateBuilder<'_>, l: &str, p: &str| match &cols {
        Some(m) => {
            let (e, x) = map(sb, l, p, Range::full(m), inner);
            (vec![e], vec![x])
        }
        None => (Vec::new(), Vec::new()),
    };
    // A right-hand-side pointer index for a row (and column `j`).
    let rhs_index = |row: Expr| match cols {
        Some(_) => vec![row, var("j")],
        None => vec![row],
    };
    let (r, c, k) = (sym("r"), sym("c"), sym("k"));

    let (se, sx) = map(sb, "solve", "s", Range::index(SymExpr::int(0)), outer);
    // 1. LU = A and X = B.
    let lu1 = sb.access(&w.lu);
    let (re, rx) = map(sb, "copy_a_rows", "r", Range::full(&size), inner);
    let (ce, cx) = map(sb, "copy_a_cols", "c", Range::full(&size), inner);
    let t = copy(sb, "copy_a");
    sb.path(
        &[a.node, se, re, ce, t],
        a.conn.as_deref(),
        Some("_i"),
        element(&a.memlet, &[r.clone(), c.clone()])?,
    );
    sb.path(&[t, cx, rx, lu1], Some("_o"), None, lu_at(&r, &c));
    let x1 = sb.access(&x.memlet.data);
    let (re, rx) = map(sb, "copy_b_rows", "r", Range::full(&size), inner);
    let t = copy(sb, "copy_b");
    let (ce, cx) = cols_scope(sb, "copy_b_cols", "c");
    sb.path(
        &chain(&[&[b.node, se, re], &ce, &[t]]),
        b.conn.as_deref(),
        Some("_i"),
        rhs_at(&b.memlet, &r, &c)?,
    );
    sb.path(
        &chain(&[&[t], &cx, &[rx, x1]]),
        Some("_o"),
        None,
        rhs_at(&x.memlet, &r, &c)?,
    );

    // 2. Elimination, column k.
    let (ke, kx) = map(sb, "columns", "k", Range::full(&size), inner);
    let real = dtype.real_type();
    // a. The largest magnitude in column k, rows k..n.
    let best_a = init_register(
        sb,
        &format!("{label}_init_best"),
        ke,
        (&w.best, real),
        Expr::Lit(Wcr::Sum.identity(real)),
    );
    let i = sym("i");
    let (ie, ix) = map(
        sb,
        "pivot_max",
        "i",
        Range::slice(k.clone(), size.clone()),
        inner,
    );
    sb.empty_edge(best_a, ie);
    let t = sb.tasklet(
        &format!("{label}_magnitude"),
        vec![scalar("_v", dtype)],
        vec![scalar("_o", real)],
        vec![Stmt::assign(
            "_o",
            Expr::call(Intrinsic::Abs, vec![Expr::var("_v")]),
        )],
    );
    sb.path(&[lu1, ke, ie, t], None, Some("_v"), lu_at(&i, &k));
    let best_b = sb.access(&w.best);
    sb.path(
        &[t, ix, best_b],
        Some("_o"),
        None,
        register(&w.best).with_wcr(Wcr::Max),
    );
    // b. The first row that attains it.
    let piv_a = init_register(
        sb,
        &format!("{label}_init_pivot"),
        ke,
        (&w.pivot, DType::Int64),
        Expr::Lit(Literal::i64(i64::MAX)),
    );
    let (ie, ix) = map(
        sb,
        "pivot_row",
        "i",
        Range::slice(k.clone(), size.clone()),
        inner,
    );
    sb.empty_edge(piv_a, ie);
    let t = sb.tasklet(
        &format!("{label}_pivot"),
        vec![scalar("_v", dtype), scalar("_b", real)],
        vec![scalar("_o", DType::Int64)],
        vec![Stmt::assign(
            "_o",
            Expr::select(
                Expr::binary(
                    BinaryOp::Eq,
                    Expr::call(Intrinsic::Abs, vec![Expr::var("_v")]),
                    Expr::var("_b"),
                ),
                var("i"),
                Expr::Lit(Literal::i64(i64::MAX)),
            ),
        )],
    );
    sb.path(&[lu1, ke, ie, t], None, Some("_v"), lu_at(&i, &k));
    sb.path(&[best_b, ie, t], None, Some("_b"), register(&w.best));
    let piv_b = sb.access(&w.pivot);
    sb.path(
        &[t, ix, piv_b],
        Some("_o"),
        None,
        register(&w.pivot).with_wcr(Wcr::Min),
    );
    // c. Swap rows k and the pivot's, of LU and of X.
    let swap = |sb: &mut StateBuilder<'_>, l: &str, m: &Memlet, row: &dyn Fn(Expr) -> Vec<Expr>| {
        let (t0, t1) = (row(var("k")), row(Expr::var("_p")));
        sb.tasklet(
            &format!("{label}_{l}"),
            vec![Connector::pointer("_m", dtype), scalar("_p", DType::Int64)],
            vec![Connector::pointer("_w", dtype)],
            vec![
                Stmt::Let {
                    name: "a".to_owned(),
                    dtype,
                    value: Expr::load("_m", pointer_index(m, t0.clone())),
                },
                Stmt::Let {
                    name: "b".to_owned(),
                    dtype,
                    value: Expr::load("_m", pointer_index(m, t1.clone())),
                },
                Stmt::Store {
                    conn: "_w".to_owned(),
                    index: pointer_index(m, t0),
                    value: Expr::var("b"),
                },
                Stmt::Store {
                    conn: "_w".to_owned(),
                    index: pointer_index(m, t1),
                    value: Expr::var("a"),
                },
            ],
        )
    };
    let lu_k = sb.access(&w.lu);
    let (je, jx) = map(sb, "swap_lu", "j", Range::full(&size), inner);
    let t = swap(sb, "swap_lu", &lu_all, &|row| vec![row, var("j")]);
    sb.path(&[lu1, ke, je, t], None, Some("_m"), lu_all.clone());
    sb.path(&[piv_b, je, t], None, Some("_p"), register(&w.pivot));
    sb.path(&[t, jx, lu_k], Some("_w"), None, lu_all.clone());
    let x_all = x.memlet.clone().into_dynamic();
    let x_k = sb.access(&x.memlet.data);
    let (je, jx) = cols_scope(sb, "swap_x", "j");
    let t = swap(sb, "swap_x", &x_all, &|row| rhs_index(row));
    sb.path(
        &chain(&[&[x1, ke], &je, &[t]]),
        None,
        Some("_m"),
        x_all.clone(),
    );
    sb.path(
        &chain(&[&[piv_b], &je, &[t]]),
        None,
        Some("_p"),
        register(&w.pivot),
    );
    sb.path(
        &chain(&[&[t], &jx, &[x_k]]),
        Some("_w"),
        None,
        x_all.clone(),
    );
    // d. Eliminate below the pivot.
    let lu2 = sb.access(&w.lu);
    let x2 = sb.access(&x.memlet.data);
    let (ie, ix) = map(
        sb,
        "eliminate",
        "i",
        Range::slice(&k + 1, size.clone()),
        inner,
    );
    let t = sb.tasklet(
        &format!("{label}_factor"),
        vec![scalar("_v", dtype), scalar("_d", dtype)],
        vec![scalar("_f", dtype), scalar("_l", dtype)],
        vec![
            Stmt::Let {
                name: "f".to_owned(),
                dtype,
                value: Expr::binary(BinaryOp::Div, Expr::var("_v"), Expr::var("_d")),
            },
            Stmt::assign("_f", Expr::var("f")),
            Stmt::assign("_l", Expr::var("f")),
        ],
    );
    sb.path(&[lu_k, ie, t], None, Some("_v"), lu_at(&i, &k));
    sb.path(&[lu_k, ie, t], None, Some("_d"), lu_at(&k, &k));
    sb.path(&[t, ix, kx, lu2], Some("_l"), None, lu_at(&i, &k));
    let f_node = sb.access(&w.factor);
    sb.edge(t, Some("_f"), f_node, None, register(&w.factor));
    let update = |sb: &mut StateBuilder<'_>, l: &str| {
        sb.tasklet(
            &format!("{label}_{l}"),
            vec![
                scalar("_f", dtype),
                scalar("_y", dtype),
                scalar("_z", dtype),
            ],
            vec![scalar("_o", dtype)],
            vec![Stmt::assign(
                "_o",
                Expr::binary(
                    BinaryOp::Sub,
                    Expr::var("_y"),
                    Expr::binary(BinaryOp::Mul, Expr::var("_f"), Expr::var("_z")),
                ),
            )],
        )
    };
    let j = sym("j");
    let (je, jx) = map(
        sb,
        "update_lu",
        "j",
        Range::slice(&k + 1, size.clone()),
        inner,
    );
    let t = update(sb, "update_lu");
    sb.path(&[f_node, je, t], None, Some("_f"), register(&w.factor));
    sb.path(&[lu_k, ie, je, t], None, Some("_y"), lu_at(&i, &j));
    sb.path(&[lu_k, ie, je, t], None, Some("_z"), lu_at(&k, &j));
    sb.path(&[t, jx, ix, kx, lu2], Some("_o"), None, lu_at(&i, &j));
    let (je, jx) = cols_scope(sb, "update_x", "j");
    let t = update(sb, "update_x");
    sb.path(
        &chain(&[&[f_node], &je, &[t]]),
        None,
        Some("_f"),
        register(&w.factor),
    );
    sb.path(
        &chain(&[&[x_k, ie], &je, &[t]]),
        None,
        Some("_y"),
        rhs_at(&x.memlet, &i, &j)?,
    );
    sb.path(
        &chain(&[&[x_k, ie], &je, &[t]]),
        None,
        Some("_z"),
        rhs_at(&x.memlet, &k, &j)?,
    );
    sb.path(
        &chain(&[&[t], &jx, &[ix, kx, x2]]),
        Some("_o"),
        None,
        rhs_at(&x.memlet, &i, &j)?,
    );

    // 3. Back substitution: row i = size - 1 - r, last row first.
    let x3 = sb.access(&x.memlet.data);
    let (re, rx) = map(sb, "substitute", "r", Range::full(&size), inner);
    let row = &(&size - 1) - &r;
    let (je, jx) = cols_scope(sb, "substitute_cols", "j");
    let scopes = chain(&[&[re], &je]);
    let exits = chain(&[&jx, &[rx]]);
    let init = copy(sb, "init_sum");
    let mut p = vec![x2];
    p.extend(&scopes);
    p.push(init);
    sb.path(&p, None, Some("_i"), rhs_at(&x.memlet, &row, &j)?);
    let acc_a = sb.access(&w.acc);
    sb.edge(init, Some("_o"), acc_a, None, register(&w.acc));
    let (ce, cx) = map(
        sb,
        "substitute_sum",
        "c",
        Range::slice(&row + 1, size.clone()),
        inner,
    );
    sb.empty_edge(acc_a, ce);
    let t = sb.tasklet(
        &format!("{label}_subtract"),
        vec![scalar("_u", dtype), scalar("_z", dtype)],
        vec![scalar("_o", dtype)],
        vec![Stmt::assign(
            "_o",
            Expr::unary(
                sdfg_ir::code::UnaryOp::Neg,
                Expr::binary(BinaryOp::Mul, Expr::var("_u"), Expr::var("_z")),
            ),
        )],
    );
    let mut p = vec![lu2];
    p.extend(&scopes);
    p.extend([ce, t]);
    sb.path(&p, None, Some("_u"), lu_at(&row, &c));
    let mut p = vec![x2];
    p.extend(&scopes);
    p.extend([ce, t]);
    sb.path(&p, None, Some("_z"), rhs_at(&x.memlet, &c, &j)?);
    let acc_b = sb.access(&w.acc);
    sb.path(
        &[t, cx, acc_b],
        Some("_o"),
        None,
        register(&w.acc).with_wcr(Wcr::Sum),
    );
    let t = sb.tasklet(
        &format!("{label}_divide"),
        vec![scalar("_s", dtype), scalar("_d", dtype)],
        vec![scalar("_o", dtype)],
        vec![Stmt::assign(
            "_o",
            Expr::binary(BinaryOp::Div, Expr::var("_s"), Expr::var("_d")),
        )],
    );
    sb.edge(acc_b, None, t, Some("_s"), register(&w.acc));
    let mut p = vec![lu2];
    p.extend(&scopes);
    p.push(t);
    sb.path(&p, None, Some("_d"), lu_at(&row, &row));
    let mut p = vec![t];
    p.extend(&exits);
    p.push(x3);
    sb.path(&p, Some("_o"), None, rhs_at(&x.memlet, &row, &j)?);
    sb.path(&[x3, sx, x.node], None, x.conn.as_deref(), x.memlet.clone());
    Ok(())
}

/// The vendor-callable form of a matrix product: GEMM, GEMV or DOT by
/// operand ranks, with the connector renames it needs (`old -> new`), when
/// the operands are `float32`/`float64` and every matrix has unit stride
/// along its rows (BLAS takes a leading dimension, not two strides).
fn vendor_form(
    op: &LibraryOp,
    inputs: &BTreeMap<String, Operand>,
    outputs: &BTreeMap<String, Operand>,
    containers: &BTreeMap<String, DataDesc>,
) -> Option<(LibraryOp, Vec<(&'static str, &'static str)>)> {
    if !matches!(op, LibraryOp::MatMul) {
        return None;
    }
    let (a, b, c) = (inputs.get("_a")?, inputs.get("_b")?, outputs.get("_c")?);
    let dtype = containers.get(&c.memlet.data)?.dtype;
    if !matches!(dtype, DType::Float32 | DType::Float64) {
        return None;
    }
    let same = [a, b].iter().all(|o| {
        containers
            .get(&o.memlet.data)
            .is_some_and(|d| d.dtype == dtype)
    });
    if !same {
        return None;
    }
    let unit_rows = |o: &Operand| unit_rows(o, containers);
    let one = Literal::Float { value: 1.0, dtype };
    let zero = Wcr::Sum.identity(dtype);
    let ranks = (
        extents(&a.memlet).len(),
        extents(&b.memlet).len(),
        extents(&c.memlet).len(),
    );
    match ranks {
        (2, 2, 2) if unit_rows(a) && unit_rows(b) && unit_rows(c) => Some((
            LibraryOp::Gemm {
                alpha: one,
                beta: zero,
                trans_a: false,
                trans_b: false,
                alpha_input: false,
                beta_input: false,
            },
            vec![],
        )),
        (2, 1, 1) if unit_rows(a) => Some((
            LibraryOp::Gemv {
                alpha: one,
                beta: zero,
                trans_a: false,
            },
            vec![("_b", "_x"), ("_c", "_y")],
        )),
        (1, 2, 1) if unit_rows(b) => Some((
            LibraryOp::Gemv {
                alpha: one,
                beta: zero,
                trans_a: true,
            },
            vec![("_a", "_x"), ("_b", "_a"), ("_c", "_y")],
        )),
        (1, 1, 0) => Some((
            LibraryOp::Dot,
            vec![("_a", "_x"), ("_b", "_y"), ("_c", "_result")],
        )),
        _ => None,
    }
}

/// A factorization or solve a dense solver can take as is, with unit stride
/// along rows (LAPACK takes a leading dimension, not two strides): a
/// Cholesky factorization of a real `float32` or `float64` square matrix
/// (`potrf`), or a linear solve of a real or complex square matrix against
/// a vector or a matrix of its rows, all of one type (`getrf` + `getrs`).
fn solver_form(
    op: &LibraryOp,
    inputs: &BTreeMap<String, Operand>,
    outputs: &BTreeMap<String, Operand>,
    containers: &BTreeMap<String, DataDesc>,
) -> Option<(LibraryOp, Vec<(&'static str, &'static str)>)> {
    let square = |o: &Operand| {
        let e = extents(&o.memlet);
        e.len() == 2 && e[0] == e[1] && unit_rows(o, containers)
    };
    let dtype_of = |o: &Operand| containers.get(&o.memlet.data).map(|d| d.dtype);
    let ok = match op {
        LibraryOp::Cholesky { .. } => {
            let (a, b) = (inputs.get("_a")?, outputs.get("_b")?);
            let dtype = dtype_of(b)?;
            matches!(dtype, DType::Float32 | DType::Float64)
                && dtype_of(a) == Some(dtype)
                && square(a)
                && square(b)
        }
        LibraryOp::Solve => {
            let (a, b, x) = (inputs.get("_a")?, inputs.get("_b")?, outputs.get("_x")?);
            let dtype = dtype_of(x)?;
            let rows = extents(&a.memlet).first().cloned();
            let rhs = |o: &Operand| {
                let e = extents(&o.memlet);
                (1..=2).contains(&e.len()) && e.first() == rows.as_ref() && unit_rows(o, containers)
            };
            (dtype.is_float() || dtype.is_complex())
                && dtype_of(a) == Some(dtype)
                && dtype_of(b) == Some(dtype)
                && square(a)
                && rhs(b)
                && rhs(x)
                && extents(&b.memlet) == extents(&x.memlet)
        }
        _ => false,
    };
    ok.then(|| (op.clone(), Vec::new()))
}

/// Whether a matrix operand has unit element stride along its last
/// squeezed dimension (BLAS and LAPACK take a leading dimension, not two
/// strides).
fn unit_rows(o: &Operand, containers: &BTreeMap<String, DataDesc>) -> bool {
    let Some(layout) = containers.get(&o.memlet.data).and_then(|d| d.layout()) else {
        return false;
    };
    o.memlet
        .subset
        .ranges
        .iter()
        .enumerate()
        .rfind(|(_, r)| !r.is_index())
        .is_some_and(|(d, r)| {
            layout
                .strides
                .get(d)
                .is_some_and(|s| (s * &r.step).as_int() == Some(1))
        })
}

/// Renames the connectors of library node `id` on its edges, all at once.
fn rename_connectors(state: &mut State, id: NodeId, renames: &[(&str, &str)]) {
    let edges: Vec<_> = state
        .in_edges(id)
        .map(|(e, ..)| (e, true))
        .chain(state.out_edges(id).map(|(e, ..)| (e, false)))
        .collect();
    for (e, incoming) in edges {
        if let Some(w) = state.graph.edge_weight_mut(e) {
            let conn = if incoming {
                &mut w.dst_conn
            } else {
                &mut w.src_conn
            };
            let renamed = conn
                .as_deref()
                .and_then(|c| renames.iter().find(|(old, _)| *old == c))
                .map(|(_, n)| (*n).to_owned());
            if renamed.is_some() {
                *conn = renamed;
            }
        }
    }
}
