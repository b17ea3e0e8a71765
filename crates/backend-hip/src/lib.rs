//! The HIP backend: AMD GPUs as an [`Accelerator`] (wavefront size 64,
//! hipBLAS and hipSOLVER as vendor libraries) and the HIP dialect of
//! the shared C++ emitter (`hip/hip_runtime.h`, `hip*` API names, `.hip`
//! files).
//!
//! Linking this crate registers the `hip` target with `sdfg-codegen`;
//! `sdfgc` and the harness find it by name. With the `runtime` feature,
//! its `runtime` module runs emitted units on a real AMD GPU (hip-sys,
//! `hipcc`; `docs/gpu.md`).

pub mod check;
#[cfg(feature = "runtime")]
pub mod runtime;

use sdfg_accelerator::{Accelerator, VendorCall};
use sdfg_codegen::{
    Blas, Dialect, DialectIncludes, DialectKernel, DialectMemory, DialectSync, Solver, Target,
};
use sdfg_ir::LibraryOp;

/// An AMD GPU programmed in HIP C++.
#[derive(Clone, Copy, Debug, Default)]
pub struct Hip;

impl Accelerator for Hip {
    fn name(&self) -> &'static str {
        "hip"
    }

    fn warp_size(&self) -> u32 {
        64
    }

    /// 256 threads: 64 x 4 for two-dimensional maps (one wavefront per row).
    fn default_block(&self) -> [u32; 3] {
        [64, 4, 1]
    }

    fn max_grid(&self) -> [u64; 3] {
        [(1 << 31) - 1, 65_535, 65_535]
    }

    /// Cooperative launches: a loop whose tests read device data runs in
    /// one persistent kernel.
    fn grid_barrier(&self) -> bool {
        true
    }

    /// The vendor calls the emitter issues: hipBLAS for matrix products
    /// (specialized into GEMM, GEMV, DOT) and hipSOLVER for Cholesky
    /// (`potrf`) and linear solves (`getrf` + `getrs`). Every other
    /// operation is expanded into kernels (hipCUB reductions, batched GEMM
    /// and transposes are not called yet).
    fn vendor_library(&self, op: &LibraryOp) -> Option<VendorCall> {
        let call = |library, function| Some(VendorCall { library, function });
        match op {
            LibraryOp::MatMul | LibraryOp::Gemm { .. } => call("hipBLAS", "hipblasDgemm"),
            LibraryOp::Gemv { .. } => call("hipBLAS", "hipblasDgemv"),
            LibraryOp::Dot => call("hipBLAS", "hipblasDdot"),
            LibraryOp::Cholesky { .. } => call("hipSOLVER", "hipsolverDnDpotrf"),
            LibraryOp::Solve => call("hipSOLVER", "hipsolverDnZgetrf + hipsolverDnZgetrs"),
            LibraryOp::BatchedMatMul
            | LibraryOp::Transpose
            | LibraryOp::TensorTranspose { .. }
            | LibraryOp::Reduce { .. } => None,
        }
    }
}

impl Dialect for Hip {
    fn source_extension(&self) -> &'static str {
        "hip"
    }
}

impl DialectKernel for Hip {
    fn shuffle_down(&self) -> &'static str {
        "__shfl_down(v, d)"
    }
}

impl DialectMemory for Hip {
    fn api_prefix(&self) -> &'static str {
        "hip"
    }

    fn multiprocessor_count_attribute(&self) -> &'static str {
        "hipDeviceAttributeMultiprocessorCount"
    }
}

impl DialectSync for Hip {}

impl DialectIncludes for Hip {
    fn runtime_header(&self) -> &'static str {
        "hip/hip_runtime.h"
    }

    fn cooperative_groups_header(&self) -> &'static str {
        "hip/hip_cooperative_groups.h"
    }

    fn blas(&self) -> Blas {
        Blas {
            header: "hipblas/hipblas.h",
            prefix: "hipblas",
            constants: "HIPBLAS",
            link: "hipblas",
        }
    }

    fn solver(&self) -> Solver {
        Solver {
            header: "hipsolver/hipsolver.h",
            prefix: "hipsolverDn",
            status: "hipsolverStatus_t",
            success: "HIPSOLVER_STATUS_SUCCESS",
            fill: ["HIPSOLVER_FILL_MODE_UPPER", "HIPSOLVER_FILL_MODE_LOWER"],
            transpose: "HIPSOLVER_OP_T",
            complex: ["hipFloatComplex", "hipDoubleComplex"],
            link: "hipsolver",
        }
    }
}

inventory::submit! {
    Target { name: "hip", dialect: &Hip }
}
