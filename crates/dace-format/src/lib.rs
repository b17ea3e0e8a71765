//! DaCe's `.sdfg` file format, for interoperating with DaCe.
//!
//! DaCe's users hand over SDFGs (GT4Py, DaCe's Fortran frontend, DaCe's
//! own transformations), so reading and writing DaCe's schema is what lets
//! them use this project's offload pass without writing Python for it.
//! This crate grows toward that (issue #19); so far it holds the layer
//! every other part of the format is built on:
//!
//! - [`symbolic`]: DaCe's symbolic strings (sympy syntax as DaCe writes it:
//!   `symbol($N, dtype=dace.int64)`, `int_floor`, `Min`, `Max`, `Mod`,
//!   `ceiling`, ...) read into the IR's canonical [`SymExpr`] and
//!   [`SymCond`], and written back in the spelling DaCe's
//!   `pystr_to_symbolic` reads with the same meaning.
//!
//! Anything outside the supported subset is refused by name, never
//! guessed: a C remainder (`%`, `CMod`), whose sign rule differs from
//! Python's, is an error rather than a silently different `Mod`.
//!
//! [`SymExpr`]: sdfg_ir::SymExpr
//! [`SymCond`]: sdfg_ir::SymCond

pub mod export;
pub mod import;
pub mod names;
pub mod python;
pub mod rename;
pub mod symbolic;

pub use export::{ExportError, export, to_dace_string};
pub use import::{ImportError, from_dace_str, import};
