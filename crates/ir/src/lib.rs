//! The SDFG intermediate representation.
//!
//! An SDFG (stateful dataflow multigraph) describes an array program as data
//! containers plus structured control flow whose leaves are *states*, each an
//! acyclic dataflow graph. It is the IR DaCe introduced; this crate is our
//! implementation of it, and everything else in the workspace (the frontend,
//! the simulator, the offload pass, the CUDA and HIP emitters) is written
//! against it.
//!
//! # The data model
//!
//! - An [`Sdfg`] owns named **containers** ([`DataDesc`]: scalar, array, view,
//!   stream, structure, container array; each with a [`DType`], a transient
//!   flag, a [`Storage`] kind and a [`Lifetime`]), integer **symbols** (problem
//!   sizes, loop variables), the ordered **arguments** of its entry point, and
//!   a root [`Region`].
//! - A [`Region`] is a sequence of [`ControlBlock`]s: states, loops (`for`
//!   with variable, init, condition and update; `while`), conditionals
//!   (branches and an optional else), and `break`/`continue`/`return`. The
//!   [`Transition`] after each block may assign symbols. Interstate code is
//!   integer arithmetic over symbols and reads of integer containers; every
//!   such read is a *host read*.
//! - A [`State`] is a petgraph `StableGraph` of [`Node`]s (access nodes, map
//!   entries and exits, tasklets, nested SDFGs, library nodes, host callbacks)
//!   and [`Edge`]s between connectors, each carrying a [`Memlet`]: container,
//!   [`Subset`] (one inclusive [`Range`] per dimension), optional other subset
//!   for copies, write-conflict resolution, volume and a dynamic flag.
//! - Tasklet bodies are typed trees of [`code::Stmt`] and [`code::Expr`], not
//!   strings: every backend and the interpreter read one definition.
//! - Sizes, ranges and conditions are [`SymExpr`]/[`SymCond`] values in a
//!   canonical form, so `i + (M - i - 1)` *is* `M - 1` and structural equality
//!   is semantic equality for the polynomial part.
//!
//! # Invariants
//!
//! Construction never checks anything; [`validate()`] checks everything and
//! returns every violation with its location (SDFG, block, node or edge,
//! container). The rules are listed in the [`validate`](mod@validate) module.
//! The ones other code leans on most:
//!
//! 1. Every container, symbol and connector a node or memlet names exists, and
//!    symbols are defined where they are used (SDFG symbols plus the
//!    parameters of the enclosing maps).
//! 2. Each state is acyclic and its map scopes are properly nested: each
//!    node has one innermost enclosing map ([`ScopeTree`]), each entry one exit.
//! 3. Storage is reachable from where it is used, in both directions: no
//!    device code touches host storage and no host code touches device
//!    storage. Copies between the two sides are edges between access nodes at
//!    host level.
//! 4. Containers are referred to by name; nodes and edges by their stable ids
//!    within a state ([`NodeId`], [`EdgeId`]). Map exits refer to their entry.
//!
//! # Serialization
//!
//! Every type derives serde; [`Sdfg::to_json`] is deterministic (ordered maps,
//! no random ids, expressions as canonical text) and round-trips exactly.
//! [`dot::to_dot`] draws an SDFG for humans.
//!
//! # Building
//!
//! [`builder::SdfgBuilder`] makes SDFGs in a few lines per node, with memlet
//! paths through map scopes propagated automatically ([`propagate`]).
//! [`examples`] holds hand-built SDFGs that exercise every construct.

pub mod builder;
pub mod code;
pub mod control;
pub mod data;
pub mod dot;
pub mod dtype;
pub mod examples;
pub mod memlet;
pub mod node;
pub mod placement;
pub mod propagate;
pub mod quote;
pub mod sdfg;
pub mod state;
pub mod symbolic;
pub mod validate;
pub mod window;

pub use control::{
    Assignment, BlockKind, ConditionalBlock, ControlBlock, LoopBlock, Region, Transition,
};
pub use data::{DataDesc, DataKind, Layout, LayoutError};
pub use dtype::{DType, Literal};
pub use memlet::{Memlet, Range, Subset, Wcr};
pub use node::{
    AccessNode, Connector, Edge, EdgeId, HostCallback, LibraryNode, LibraryOp, Map, MapEntry,
    MapExit, NestedSdfg, Node, NodeId, Tasklet, VIEW_CONNECTOR,
};
pub use placement::{Lifetime, MemoryModel, Schedule, Side, Storage};
pub use quote::quote;
pub use sdfg::Sdfg;
pub use state::{ScopeTree, State};
pub use symbolic::{CmpOp, SymCond, SymExpr};
pub use validate::{ValidSdfg, Validated, ValidationError, ValidationErrors, validate};
