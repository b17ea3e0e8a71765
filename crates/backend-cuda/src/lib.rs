//! The CUDA backend.
//!
//! This crate will implement the `Accelerator` description for NVIDIA GPUs
//! (warp size 32, cuBLAS/cuSOLVER/CUB as vendor libraries) and supply the
//! CUDA dialect of the shared C++ emitter. A runtime part, behind a cargo
//! feature and built on `cudarc` with dynamic loading, will compile and run
//! the generated code where a device exists.
//!
//! Nothing is implemented yet; the backend arrives with its own issue.
