//! The CUDA backend: NVIDIA GPUs as an [`Accelerator`] (warp size 32,
//! cuBLAS and cuSOLVER as vendor libraries) and the CUDA dialect of the
//! shared C++ emitter (`cuda_runtime.h`, `cuda*` API names, `.cu` files).
//!
//! Linking this crate registers the `cuda` target with `sdfg-codegen`;
//! `sdfgc` and the harness find it by name. With the `runtime` feature,
//! its `runtime` module runs emitted units on a real NVIDIA GPU (cudarc,
//! `nvcc`; `docs/gpu.md`).

pub mod check;
#[cfg(feature = "runtime")]
pub mod runtime;

use sdfg_accelerator::{Accelerator, VendorCall};
use sdfg_codegen::{
    Blas, Dialect, DialectIncludes, DialectKernel, DialectMemory, DialectSync, Solver, Target,
};
use sdfg_ir::LibraryOp;

/// An NVIDIA GPU programmed in CUDA C++.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cuda;

impl Accelerator for Cuda {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn warp_size(&self) -> u32 {
        32
    }

    /// 256 threads: 32 x 8 for two-dimensional maps.
    fn default_block(&self) -> [u32; 3] {
        [32, 8, 1]
    }

    fn max_grid(&self) -> [u64; 3] {
        [(1 << 31) - 1, 65_535, 65_535]
    }

    /// Cooperative launches: a loop whose tests read device data runs in
    /// one persistent kernel.
    fn grid_barrier(&self) -> bool {
        true
    }

    /// The vendor calls the emitter issues: cuBLAS for matrix products
    /// (specialized into GEMM, GEMV, DOT) and cuSOLVER for Cholesky (`potrf`)
    /// and linear solves (`getrf` + `getrs`). Every other operation is
    /// expanded into kernels (CUB reductions, batched GEMM and transposes
    /// are not called yet).
    fn vendor_library(&self, op: &LibraryOp) -> Option<VendorCall> {
        let call = |library, function| Some(VendorCall { library, function });
        match op {
            LibraryOp::MatMul | LibraryOp::Gemm { .. } => call("cuBLAS", "cublasDgemm"),
            LibraryOp::Gemv { .. } => call("cuBLAS", "cublasDgemv"),
            LibraryOp::Dot => call("cuBLAS", "cublasDdot"),
            LibraryOp::Cholesky { .. } => call("cuSOLVER", "cusolverDnDpotrf"),
            LibraryOp::Solve => call("cuSOLVER", "cusolverDnZgetrf + cusolverDnZgetrs"),
            LibraryOp::BatchedMatMul
            | LibraryOp::Transpose
            | LibraryOp::TensorTranspose { .. }
            | LibraryOp::Reduce { .. } => None,
        }
    }
}

impl Dialect for Cuda {
    fn source_extension(&self) -> &'static str {
        "cu"
    }
}

impl DialectKernel for Cuda {
    fn shuffle_down(&self) -> &'static str {
        "__shfl_down_sync(0xffffffffu, v, d)"
    }
}

impl DialectMemory for Cuda {
    fn api_prefix(&self) -> &'static str {
        "cuda"
    }

    fn multiprocessor_count_attribute(&self) -> &'static str {
        "cudaDevAttrMultiProcessorCount"
    }
}

impl DialectSync for Cuda {}

impl DialectIncludes for Cuda {
    fn runtime_header(&self) -> &'static str {
        "cuda_runtime.h"
    }

    fn cooperative_groups_header(&self) -> &'static str {
        "cooperative_groups.h"
    }

    fn blas(&self) -> Blas {
        Blas {
            header: "cublas_v2.h",
            prefix: "cublas",
            constants: "CUBLAS",
            link: "cublas",
        }
    }

    fn solver(&self) -> Solver {
        Solver {
            header: "cusolverDn.h",
            prefix: "cusolverDn",
            status: "cusolverStatus_t",
            success: "CUSOLVER_STATUS_SUCCESS",
            fill: ["CUBLAS_FILL_MODE_UPPER", "CUBLAS_FILL_MODE_LOWER"],
            transpose: "CUBLAS_OP_T",
            complex: ["cuComplex", "cuDoubleComplex"],
            link: "cusolver",
        }
    }
}

inventory::submit! {
    Target { name: "cuda", dialect: &Cuda }
}
