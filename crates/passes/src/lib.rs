//! Transformations over the SDFG.
//!
//! This crate will hold the GPU pipeline, in order: simplification,
//! loop-to-map (parallel loops become maps, by a dependence test on memlet
//! subsets), map collapse and fusion, library specialization (MatMul becomes
//! GEMM, GEMV or DOT by operand rank), the **offload pass** (written once
//! against an `Accelerator` description, never against a vendor), library
//! lowering (vendor call or pure expansion) and register promotion. Every
//! pass keeps the SDFG valid (`sdfg_ir::validate`) and serializable.
//!
//! Nothing is implemented yet; the passes arrive with their own issues.
