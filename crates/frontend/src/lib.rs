//! The frontend: DaCe-style Python/NumPy programs lowered to SDFGs.
//!
//! This crate will read the same `@dace.program` files DaCe compiles
//! (symbols, typed array annotations, NumPy slicing, broadcasting, ufuncs,
//! reductions, `@`, loops and branches) with a maintained Python parser crate,
//! and build SDFGs with `sdfg_ir::builder`. Unsupported constructs will be
//! errors naming file, line and column.
//!
//! Nothing is implemented yet; the frontend arrives with its own issue.
