//! One C++ emitter for every GPU backend.
//!
//! CUDA and HIP C++ differ in little more than names (`cudaMalloc` and
//! `hipMalloc`, the runtime header, the vendor libraries), so, as in
//! cubecl, one emitter writes the translation unit and a [`Dialect`]
//! supplies what differs. Backend crates implement [`Dialect`] (which
//! extends the offload pass's [`Accelerator`]) and register it as a
//! [`Target`]; `sdfgc` and the harness find every linked target by name
//! through [`targets`], with no central list to edit.
//!
//! The emitted file is self-contained: a prelude (the semantics of the IR's
//! operations for host and device), one `__global__` function per kernel,
//! and an `extern "C"` entry point named after the SDFG that takes the
//! program's arguments in [`Sdfg::arguments`](sdfg_ir::Sdfg) order (every
//! container as a pointer, every symbol as `int64_t`) and returns 0, or an
//! error code after printing the failing runtime call. One source compiles
//! three ways: whole with `nvcc`/`hipcc`; its kernels alone with NVRTC
//! (`__CUDACC_RTC__` hides the host part); its host part alone with a host
//! C++ compiler (`-DSDFG_HOST_ONLY` leaves the kernels as declarations and
//! kernels are launched through the runtime's `LaunchKernel` call, not the
//! `<<<>>>` syntax).
//!
//! Library nodes reach the emitter either expanded into maps by
//! `sdfg_passes::lower_library_nodes` or, for device-wide GEMM, GEMV and
//! DOT, as calls to the dialect's [`Blas`] (column-major calls on row-major
//! data: `C^T = B^T A^T`). What the emitter does not lower yet returns
//! [`EmitError::Unsupported`] naming the node and state: other library
//! nodes, nested SDFGs and host callbacks.

pub mod cpp;
mod emit;

pub use emit::{PRELUDE, emit};
use sdfg_passes::Accelerator;
use thiserror::Error;

/// What a GPU programming dialect supplies to the shared emitter.
pub trait Dialect: Accelerator + Sync {
    /// The runtime header (`"cuda_runtime.h"`).
    fn runtime_header(&self) -> &'static str;
    /// The prefix of runtime API names and types (`"cuda"`: `cudaMalloc`,
    /// `cudaStream_t`, `cudaMemcpyHostToDevice`).
    fn api_prefix(&self) -> &'static str;
    /// The extension of an emitted source file, without the dot (`"cu"`).
    fn source_extension(&self) -> &'static str;
    /// The BLAS library device-wide GEMM, GEMV and DOT calls go to.
    fn blas(&self) -> Blas;
    /// The dense solver library device-wide Cholesky factorizations and
    /// linear solves go to.
    fn solver(&self) -> Solver;
}

/// Names of a dense solver with cuSOLVER's `Dn` API shape (cuSOLVER,
/// hipSOLVER's compatibility API): `{prefix}Create`, `{prefix}SetStream`,
/// `{prefix}Dpotrf_bufferSize`, `{prefix}Dpotrf`, `{prefix}Zgetrf`,
/// `{prefix}Zgetrs`, `{prefix}Handle_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Solver {
    /// The header (`"cusolverDn.h"`).
    pub header: &'static str,
    /// The prefix of functions and the handle type (`"cusolverDn"`).
    pub prefix: &'static str,
    /// The status type (`"cusolverStatus_t"`).
    pub status: &'static str,
    /// The success constant (`"CUSOLVER_STATUS_SUCCESS"`).
    pub success: &'static str,
    /// The fill-mode constants for the upper and the lower triangle.
    pub fill: [&'static str; 2],
    /// The operation constant that transposes (`getrs` solves with the
    /// transpose of the factored matrix).
    pub transpose: &'static str,
    /// The vendor's single and double complex types, which the solver's
    /// complex functions take (layout-compatible with the prelude's).
    pub complex: [&'static str; 2],
}

/// Names of a vendor BLAS with the cuBLAS v2 API shape (cuBLAS, hipBLAS):
/// functions `{prefix}Create`, `{prefix}Dgemm`, ..., types
/// `{prefix}Handle_t`, `{prefix}Status_t`, constants `{constants}_OP_N`,
/// `{constants}_STATUS_SUCCESS`, `{constants}_POINTER_MODE_DEVICE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blas {
    /// The header (`"cublas_v2.h"`).
    pub header: &'static str,
    /// The prefix of functions and types (`"cublas"`).
    pub prefix: &'static str,
    /// The prefix of constants (`"CUBLAS"`).
    pub constants: &'static str,
}

/// A linked backend: a name (as `--backend` spells it) and its dialect.
pub struct Target {
    /// The name.
    pub name: &'static str,
    /// The dialect.
    pub dialect: &'static dyn Dialect,
}

inventory::collect!(Target);

/// Every target linked into the program, sorted by name.
///
/// A crate that only registers a target must still be referenced by the
/// program (`use sdfg_backend_hip as _;`), or the linker drops it and its
/// registration with it.
pub fn targets() -> Vec<&'static Target> {
    let mut all: Vec<&'static Target> = inventory::iter::<Target>.into_iter().collect();
    all.sort_by_key(|t| t.name);
    all
}

/// The target named `name`, if it is linked.
pub fn target(name: &str) -> Option<&'static Target> {
    inventory::iter::<Target>
        .into_iter()
        .find(|t| t.name == name)
}

/// One emitted translation unit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TranslationUnit {
    /// File name (`"gemm.cu"`).
    pub file_name: String,
    /// The source.
    pub source: String,
    /// Names of the kernels, in emission order.
    pub kernels: Vec<String>,
    /// Name of the `extern "C"` entry point.
    pub entry: String,
}

/// Why an SDFG could not be emitted.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum EmitError {
    /// A construct this version of the emitter does not lower.
    #[error("cannot emit {what} (node `{node}` in state `{state}`)")]
    Unsupported {
        /// What.
        what: String,
        /// The node's label.
        node: String,
        /// The state's label.
        state: String,
    },
    /// The SDFG is not valid (emission needs a valid SDFG).
    #[error("the SDFG is invalid:\n{0}")]
    Invalid(String),
}
