//! The nodes of a state's dataflow graph.

use crate::code::Stmt;
use crate::dtype::{DType, Literal};
use crate::memlet::{Memlet, Range, Wcr};
use crate::placement::Schedule;
use crate::sdfg::Sdfg;
use crate::symbolic::SymExpr;
use petgraph::stable_graph::{EdgeIndex, NodeIndex};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Identifies a node within one state. Stable across removals of other nodes.
pub type NodeId = NodeIndex<u32>;
/// Identifies an edge within one state. Stable across removals of other edges.
pub type EdgeId = EdgeIndex<u32>;

/// The connector through which a view's access node is attached to the
/// container it aliases: the destination connector of the edge `origin ->
/// view` when the view is read, the source connector of `view -> origin` when
/// it is written. The edge's memlet names the origin and the aliased subset.
pub const VIEW_CONNECTOR: &str = "views";

/// Prefix of a map entry's or exit's input connectors (`IN_A`).
pub const MAP_IN_PREFIX: &str = "IN_";
/// Prefix of a map entry's or exit's output connectors (`OUT_A`).
pub const MAP_OUT_PREFIX: &str = "OUT_";

/// A node of a state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Node {
    /// A use of a container. Edges into it write the container, edges out of it read it.
    Access(AccessNode),
    /// The start of a map scope: nodes reachable from it up to its exit run once per iteration.
    MapEntry(MapEntry),
    /// The end of a map scope.
    MapExit(MapExit),
    /// A unit of scalar computation.
    Tasklet(Tasklet),
    /// A whole SDFG called as a node.
    NestedSdfg(NestedSdfg),
    /// A coarse operation (GEMM, reduction, ...) with several implementations.
    Library(LibraryNode),
    /// A call of host code that the compiler does not see (Python callbacks in DaCe).
    Callback(HostCallback),
}

impl Node {
    /// A short human-readable label (container name, map label, tasklet label, ...).
    pub fn label(&self) -> &str {
        match self {
            Node::Access(a) => &a.data,
            Node::MapEntry(m) => &m.map.label,
            Node::MapExit(m) => &m.label,
            Node::Tasklet(t) => &t.label,
            Node::NestedSdfg(n) => &n.label,
            Node::Library(l) => &l.label,
            Node::Callback(c) => &c.label,
        }
    }

    /// The kind of node, as it appears in messages (`"tasklet"`).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Node::Access(_) => "access node",
            Node::MapEntry(_) => "map entry",
            Node::MapExit(_) => "map exit",
            Node::Tasklet(_) => "tasklet",
            Node::NestedSdfg(_) => "nested SDFG",
            Node::Library(_) => "library node",
            Node::Callback(_) => "host callback",
        }
    }

    /// Names of the node's input connectors. Access nodes have none (the view
    /// connector aside, which they accept implicitly).
    pub fn in_connectors(&self) -> Vec<&str> {
        match self {
            Node::Access(_) => Vec::new(),
            Node::MapEntry(m) => m.in_connectors.iter().map(String::as_str).collect(),
            Node::MapExit(m) => m.in_connectors.iter().map(String::as_str).collect(),
            Node::Tasklet(t) => t.inputs.iter().map(|c| c.name.as_str()).collect(),
            Node::NestedSdfg(n) => n.inputs.iter().map(String::as_str).collect(),
            Node::Library(l) => l.op.in_connectors(),
            Node::Callback(c) => c.inputs.iter().map(|c| c.name.as_str()).collect(),
        }
    }

    /// Names of the node's output connectors.
    pub fn out_connectors(&self) -> Vec<&str> {
        match self {
            Node::Access(_) => Vec::new(),
            Node::MapEntry(m) => m.out_connectors.iter().map(String::as_str).collect(),
            Node::MapExit(m) => m.out_connectors.iter().map(String::as_str).collect(),
            Node::Tasklet(t) => t.outputs.iter().map(|c| c.name.as_str()).collect(),
            Node::NestedSdfg(n) => n.outputs.iter().map(String::as_str).collect(),
            Node::Library(l) => l.op.out_connectors(),
            Node::Callback(c) => c.outputs.iter().map(|c| c.name.as_str()).collect(),
        }
    }

    /// True for tasklets, nested SDFGs, library nodes and callbacks: the nodes
    /// that compute, as opposed to access nodes and scope boundaries.
    pub fn is_code(&self) -> bool {
        matches!(
            self,
            Node::Tasklet(_) | Node::NestedSdfg(_) | Node::Library(_) | Node::Callback(_)
        )
    }

    /// The container of an access node.
    pub fn as_access(&self) -> Option<&str> {
        match self {
            Node::Access(a) => Some(&a.data),
            _ => None,
        }
    }
}

/// A use of the container named `data`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessNode {
    /// The container.
    pub data: String,
}

/// A parametric parallel scope: the body runs once per point of the iteration space.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Map {
    /// Name of the map, unique within its state by convention; `--host-maps` names maps by it.
    pub label: String,
    /// Iteration variables, outermost first. They are symbols inside the scope.
    pub params: Vec<String>,
    /// One range per parameter.
    pub ranges: Vec<Range>,
    /// How the iterations run.
    pub schedule: Schedule,
}

impl Map {
    /// Parameter-to-range pairs.
    pub fn dims(&self) -> impl Iterator<Item = (&String, &Range)> {
        self.params.iter().zip(&self.ranges)
    }

    /// Number of iterations, the product of the ranges' lengths.
    pub fn num_iterations(&self) -> SymExpr {
        self.ranges
            .iter()
            .fold(SymExpr::int(1), |acc, r| acc * r.num_elements())
    }
}

/// Entry of a map scope.
///
/// Data enters through pairs of connectors: an edge from outside arrives at
/// `IN_x`, and edges into the scope leave from `OUT_x` (DaCe's convention).
/// Edges without data (empty memlets) leave from no connector and order the
/// scope's nodes after the entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapEntry {
    /// The map.
    pub map: Map,
    /// Input connectors (`IN_x`).
    #[serde(default)]
    pub in_connectors: BTreeSet<String>,
    /// Output connectors (`OUT_x`).
    #[serde(default)]
    pub out_connectors: BTreeSet<String>,
}

/// Exit of a map scope; refers to its entry, which holds the map.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapExit {
    /// The matching entry in the same state.
    pub entry: NodeId,
    /// Copy of the map's label, for messages and DOT output.
    pub label: String,
    /// Input connectors (`IN_x`).
    #[serde(default)]
    pub in_connectors: BTreeSet<String>,
    /// Output connectors (`OUT_x`).
    #[serde(default)]
    pub out_connectors: BTreeSet<String>,
}

/// A typed connector of a code node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Connector {
    /// Its name, visible to the node's code.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Whether the code indexes the connector (its memlet is a region) rather
    /// than reading or writing one value. A pointer connector takes one index
    /// per non-degenerate range of its memlet's subset, relative to the range's
    /// start and in units of its step, as if it were a NumPy view.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pointer: bool,
}

impl Connector {
    /// A scalar connector.
    pub fn scalar(name: impl Into<String>, dtype: DType) -> Connector {
        Connector {
            name: name.into(),
            dtype,
            pointer: false,
        }
    }

    /// A pointer connector.
    pub fn pointer(name: impl Into<String>, dtype: DType) -> Connector {
        Connector {
            name: name.into(),
            dtype,
            pointer: true,
        }
    }
}

/// Scalar code with typed connectors.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tasklet {
    /// Name for messages and DOT output.
    pub label: String,
    /// Input connectors.
    pub inputs: Vec<Connector>,
    /// Output connectors.
    pub outputs: Vec<Connector>,
    /// The code.
    pub body: Vec<Stmt>,
}

impl Tasklet {
    /// Whether its code calls what only the host can
    /// ([`Intrinsic::host_only`](crate::code::Intrinsic::host_only)): it
    /// runs on the host, whatever else the offload pass moves.
    pub fn host_only(&self) -> bool {
        fn expr(e: &crate::code::Expr) -> bool {
            use crate::code::Expr;
            match e {
                Expr::Call { func, args } => func.host_only() || args.iter().any(expr),
                Expr::Lit(_) | Expr::Var(_) => false,
                Expr::Load { index, .. } => index.iter().any(expr),
                Expr::Unary { arg, .. } | Expr::Cast { arg, .. } => expr(arg),
                Expr::Binary { lhs, rhs, .. } => expr(lhs) || expr(rhs),
                Expr::Select {
                    cond,
                    then,
                    otherwise,
                } => expr(cond) || expr(then) || expr(otherwise),
            }
        }
        fn body(b: &[crate::code::Stmt]) -> bool {
            use crate::code::Stmt;
            b.iter().any(|s| match s {
                Stmt::Let { value, .. } | Stmt::Assign { value, .. } => expr(value),
                Stmt::Store { index, value, .. } => index.iter().any(expr) || expr(value),
                Stmt::If {
                    cond,
                    then,
                    otherwise,
                } => expr(cond) || body(then) || body(otherwise),
            })
        }
        body(&self.body)
    }

    /// The names the tasklet's code sees, as the type checker binds them:
    /// inputs as values or indexable pointers, outputs as assignable values
    /// or indexed stores. `rank_of(connector, is_input)` is the number of
    /// indices a pointer connector takes (the squeezed rank of its memlet),
    /// which only the state knows. One definition, so that the validator
    /// and every writer of tasklet code agree on it.
    pub fn bindings(
        &self,
        rank_of: impl Fn(&str, bool) -> usize,
    ) -> BTreeMap<String, crate::code::Binding> {
        use crate::code::Binding;
        let mut bindings = BTreeMap::new();
        for c in &self.inputs {
            let b = if c.pointer {
                Binding::PointerIn {
                    dtype: c.dtype,
                    rank: rank_of(&c.name, true),
                }
            } else {
                Binding::Value(c.dtype)
            };
            bindings.insert(c.name.clone(), b);
        }
        for c in &self.outputs {
            let b = if c.pointer {
                Binding::PointerOut {
                    dtype: c.dtype,
                    rank: rank_of(&c.name, false),
                }
            } else {
                Binding::Output(c.dtype)
            };
            bindings.insert(c.name.clone(), b);
        }
        bindings
    }
}

/// An SDFG nested as a node.
///
/// Its non-transient containers are its connectors: each input connector is
/// the name of an inner container that the incoming edge's memlet binds to
/// (part of) an outer one, likewise for outputs. Its symbols are bound by
/// `symbol_mapping` to expressions of the outer scope's symbols, which may be
/// loop variables (a callee whose size is the caller's loop counter).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NestedSdfg {
    /// Name for messages and DOT output.
    pub label: String,
    /// The inner SDFG.
    pub sdfg: Box<Sdfg>,
    /// Inner symbol -> outer expression. Every inner symbol must be mapped.
    pub symbol_mapping: BTreeMap<String, SymExpr>,
    /// Inner containers read from outside.
    pub inputs: BTreeSet<String>,
    /// Inner containers written to outside.
    pub outputs: BTreeSet<String>,
}

/// A coarse operation that later passes specialize and expand.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LibraryNode {
    /// Name for messages and DOT output.
    pub label: String,
    /// The operation.
    pub op: LibraryOp,
    /// Where it runs: `DeviceKernel` means a device-wide call issued by the host.
    pub schedule: Schedule,
}

/// The operations library nodes stand for. Connector names are fixed per
/// operation (see [`LibraryOp::in_connectors`]), as in DaCe's library.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LibraryOp {
    /// NumPy's `@`: specialized by operand ranks into Gemm, Gemv, Dot or BatchedMatMul.
    /// `_a @ _b -> _c`.
    MatMul,
    /// `_c = alpha * op(_a) @ op(_b) + beta * _cin`; `_cin` exists when `beta` is not zero.
    ///
    /// Either scale may also be a value of the run (`alpha * A @ B + beta *
    /// C` with `alpha` and `beta` arguments, folded into one call by library
    /// lowering): with `alpha_input`, the literal `alpha` is multiplied by the
    /// scalar read through the `_alpha` connector, with `beta_input` the
    /// literal `beta` by the one read through `_beta`. BLAS takes its scales
    /// as values, so this is what lets the call absorb them. As in BLAS, a
    /// scale read at run time that is zero does not read what it scales:
    /// the product is zero, or `_cin` is ignored, even where the operands
    /// hold NaN or infinities (NumPy's `0 * x` would give NaN there).
    Gemm {
        /// Scale of the product.
        alpha: Literal,
        /// Scale of the accumulated input (zero: no `_cin` connector).
        beta: Literal,
        /// Use `_a` transposed.
        trans_a: bool,
        /// Use `_b` transposed.
        trans_b: bool,
        /// `alpha` is multiplied by the scalar read through `_alpha`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        alpha_input: bool,
        /// `beta` is multiplied by the scalar read through `_beta`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        beta_input: bool,
    },
    /// `_y = alpha * op(_a) @ _x + beta * _y_in`; `_y_in` exists when `beta` is not zero.
    Gemv {
        /// Scale of the product.
        alpha: Literal,
        /// Scale of the accumulated input.
        beta: Literal,
        /// Use `_a` transposed (`v @ M`).
        trans_a: bool,
    },
    /// `_result = sum(_x * _y)` over vectors of equal length (0 for length 0).
    Dot,
    /// Matrix product over leading batch dimensions, `_a @ _b -> _c`.
    BatchedMatMul,
    /// Reduction of `_in` into `_out` with `op` over `axes` (all axes when `None`).
    Reduce {
        /// The combining operation.
        op: Wcr,
        /// Reduced axes of the input, ascending; `None` reduces all.
        axes: Option<Vec<usize>>,
        /// Initial value; `None` means the output's current value is combined into.
        identity: Option<Literal>,
    },
    /// Matrix transpose `_out = _in.T`.
    Transpose,
    /// Permutation of axes: `_out = np.transpose(_in, axes)`.
    TensorTranspose {
        /// The permutation.
        axes: Vec<usize>,
    },
    /// Cholesky factor `_b` of the symmetric positive-definite `_a`.
    Cholesky {
        /// Lower (`true`) or upper triangular factor.
        lower: bool,
    },
    /// Solution `_x` of `_a @ _x = _b`.
    Solve,
}

impl LibraryOp {
    /// Name of the operation (`"gemm"`).
    pub fn name(&self) -> &'static str {
        match self {
            LibraryOp::MatMul => "matmul",
            LibraryOp::Gemm { .. } => "gemm",
            LibraryOp::Gemv { .. } => "gemv",
            LibraryOp::Dot => "dot",
            LibraryOp::BatchedMatMul => "batched_matmul",
            LibraryOp::Reduce { .. } => "reduce",
            LibraryOp::Transpose => "transpose",
            LibraryOp::TensorTranspose { .. } => "tensor_transpose",
            LibraryOp::Cholesky { .. } => "cholesky",
            LibraryOp::Solve => "solve",
        }
    }

    /// The input connectors the operation has.
    pub fn in_connectors(&self) -> Vec<&'static str> {
        match self {
            LibraryOp::MatMul | LibraryOp::BatchedMatMul => vec!["_a", "_b"],
            LibraryOp::Gemm {
                beta,
                alpha_input,
                beta_input,
                ..
            } => {
                let mut c = vec!["_a", "_b"];
                if !literal_is_zero(beta) {
                    c.push("_cin");
                }
                if *alpha_input {
                    c.push("_alpha");
                }
                if *beta_input && !literal_is_zero(beta) {
                    c.push("_beta");
                }
                c
            }
            LibraryOp::Gemv { beta, .. } => {
                if literal_is_zero(beta) {
                    vec!["_a", "_x"]
                } else {
                    vec!["_a", "_x", "_y_in"]
                }
            }
            LibraryOp::Dot => vec!["_x", "_y"],
            LibraryOp::Reduce { .. } | LibraryOp::Transpose | LibraryOp::TensorTranspose { .. } => {
                vec!["_in"]
            }
            LibraryOp::Cholesky { .. } => vec!["_a"],
            LibraryOp::Solve => vec!["_a", "_b"],
        }
    }

    /// The output connectors the operation has.
    pub fn out_connectors(&self) -> Vec<&'static str> {
        match self {
            LibraryOp::MatMul | LibraryOp::BatchedMatMul | LibraryOp::Gemm { .. } => vec!["_c"],
            LibraryOp::Gemv { .. } => vec!["_y"],
            LibraryOp::Dot => vec!["_result"],
            LibraryOp::Reduce { .. } | LibraryOp::Transpose | LibraryOp::TensorTranspose { .. } => {
                vec!["_out"]
            }
            LibraryOp::Cholesky { .. } => vec!["_b"],
            LibraryOp::Solve => vec!["_x"],
        }
    }
}

fn literal_is_zero(l: &Literal) -> bool {
    match *l {
        Literal::Bool(b) => !b,
        Literal::Int { value, .. } => value == 0,
        Literal::UInt { value, .. } => value == 0,
        Literal::Float { value, .. } => value == 0.0,
        Literal::Complex { re, im, .. } => re == 0.0 && im == 0.0,
    }
}

/// A call of host code registered under `callee` (for example a Python function
/// DaCe could not parse). It can only run on the host: the offload pass keeps
/// it, and any map around it, there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostCallback {
    /// Name for messages and DOT output.
    pub label: String,
    /// Key of the function in the runtime's callback registry.
    pub callee: String,
    /// Arguments passed to the callback, in order.
    pub inputs: Vec<Connector>,
    /// Results written by the callback, in order.
    pub outputs: Vec<Connector>,
}

/// A dataflow edge: from an output connector to an input connector, carrying a memlet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edge {
    /// Output connector of the source node (`None` for access nodes and empty memlets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src_conn: Option<String>,
    /// Input connector of the destination node (`None` for access nodes and empty memlets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_conn: Option<String>,
    /// The data moved, or `None` for an empty memlet that only orders the two nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memlet: Option<Memlet>,
}

impl Edge {
    /// An edge carrying `memlet` between the given connectors.
    pub fn new(src_conn: Option<&str>, dst_conn: Option<&str>, memlet: Memlet) -> Edge {
        Edge {
            src_conn: src_conn.map(str::to_owned),
            dst_conn: dst_conn.map(str::to_owned),
            memlet: Some(memlet),
        }
    }

    /// An empty memlet: orders two nodes without moving data.
    pub fn empty() -> Edge {
        Edge {
            src_conn: None,
            dst_conn: None,
            memlet: None,
        }
    }
}
