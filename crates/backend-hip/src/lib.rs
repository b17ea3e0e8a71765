//! The HIP backend.
//!
//! This crate will implement the `Accelerator` description for AMD GPUs
//! (wavefront size 64, hipBLAS/rocBLAS, hipSOLVER, hipCUB) and supply the
//! HIP dialect of the shared C++ emitter, so that it stays a thin mirror of
//! the CUDA backend. A runtime part behind a cargo feature will need ROCm.
//!
//! Nothing is implemented yet; the backend arrives with its own issue.
