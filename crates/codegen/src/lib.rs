//! One C++ emitter for every GPU backend.
//!
//! CUDA and HIP C++ differ in little more than names (`cudaMalloc` and
//! `hipMalloc`, the runtime header, the vendor libraries), so, as in
//! cubecl, one emitter writes the translation unit and a [`Dialect`]
//! supplies what differs, in parts ([`dialect`]: kernel syntax, the host's
//! runtime API, barriers and atomics, includes and vendor libraries) whose
//! provided methods write the CUDA-family form. Backend crates implement
//! [`Dialect`] (which extends [`Accelerator`], the trait the offload pass
//! asks too) and register it as a [`Target`]; `sdfgc` and the harness find
//! every linked target by name through [`targets`], with no central list
//! to edit (`docs/adding-an-accelerator.md`).
//!
//! The emitted file is self-contained: a prelude (the semantics of the IR's
//! operations for host and device), one `__global__` function per kernel,
//! and `extern "C"` entry points named after the SDFG, as DaCe's are:
//! `NAME_init(symbols)` makes a state (stream, event, vendor handles, every
//! allocation sized by symbols alone), `NAME_run(state, parameters)` runs the
//! program, `NAME_exit(state)` releases it, `NAME(parameters)` does all
//! three, and packed variants take their arguments as an array of addresses.
//! The parameters ([`TranslationUnit::parameters`]) are the program's
//! arguments in [`Sdfg::arguments`](sdfg_ir::Sdfg) order (every container a
//! pointer, every symbol by value), then its return values, which the caller
//! allocates; the [`status`] codes say how a run ended (`docs/codegen.md`,
//! "The entry points"). One source compiles three ways: whole with
//! `nvcc`/`hipcc`; its kernels alone with NVRTC (`__CUDACC_RTC__` hides the
//! host part); its host part alone with a host C++ compiler
//! (`-DSDFG_HOST_ONLY` leaves the kernels as declarations). Kernels are
//! launched through one typed macro (`SDFG_LAUNCH`, which a runtime that
//! runs kernels itself, like `sdfg-exec`'s emulated GPU, defines), not the
//! `<<<>>>` syntax, and the launch is checked naming the kernel.
//!
//! Library nodes reach the emitter either expanded into maps by
//! `sdfg_passes::lower_library_nodes` or, for device-wide GEMM, GEMV and
//! DOT, as calls to the dialect's [`Blas`] (column-major calls on row-major
//! data: `C^T = B^T A^T`). What the emitter does not lower yet returns
//! [`EmitError::Unsupported`] naming the node and state: other library
//! nodes, nested SDFGs and host callbacks.

pub mod cpp;
pub mod dialect;
mod emit;

pub use dialect::{
    Axis, DialectIncludes, DialectKernel, DialectMemory, DialectSync, LaunchGrid, LaunchPlan,
    Memory, PitchedCopy,
};
pub use emit::{PRELUDE, emit, emit_validated, signature};
use sdfg_accelerator::Accelerator;
use thiserror::Error;

/// What a GPU programming dialect supplies to the shared emitter: the
/// four parts of [`dialect`] (kernel syntax, the host's runtime API,
/// barriers and atomics, includes and vendor libraries) and the extension
/// of its source files.
///
/// Made of parts, as cubecl's C++ dialects are, so that each part's
/// provided methods can write the CUDA-family form once: CUDA and HIP
/// implement little more than their names, and a dialect of another
/// family overrides the part where it differs.
pub trait Dialect:
    Accelerator + DialectKernel + DialectMemory + DialectSync + DialectIncludes + Sync
{
    /// The extension of an emitted source file, without the dot (`"cu"`).
    fn source_extension(&self) -> &'static str;
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
    /// The library a unit calling it links (`"cusolver"`: `-lcusolver`).
    pub link: &'static str,
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
    /// The library a unit calling it links (`"cublas"`: `-lcublas`).
    pub link: &'static str,
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
    /// Name of the `extern "C"` one-shot entry point; `{entry}_init`,
    /// `{entry}_run`, `{entry}_exit` and the packed variants share it.
    pub entry: String,
    /// The parameters of `{entry}` and `{entry}_run` (after the state
    /// handle), in order: the SDFG's arguments, then its return values.
    /// `{entry}_init` takes the [`ParameterKind::Symbol`] ones, in order.
    pub parameters: Vec<Parameter>,
    /// Call sites of vendor factorizations (potrf, getrf). Where there is
    /// one, every run ends by reading their status flag back: one
    /// device-to-host copy of 8 bytes that moves no program data.
    pub factorizations: usize,
    /// Whether a kernel is launched cooperatively (a persistent kernel,
    /// `docs/codegen.md`): its threads share values through memory between
    /// grid-wide barriers, which is why the corpus runs such a unit under
    /// adversarial interleavings of its threads as well.
    pub cooperative: bool,
    /// What the unit links beyond the runtime, in this order and each
    /// once: the vendor libraries its calls go to, so that runtimes and the
    /// emulation need not search the source for `#include` lines to know
    /// what to link or provide.
    pub libraries: Vec<VendorLibrary>,
}

/// A vendor library a translation unit calls, beyond the runtime
/// ([`TranslationUnit::libraries`]); the dialect names it
/// ([`DialectIncludes::blas`], [`DialectIncludes::solver`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum VendorLibrary {
    /// The BLAS ([`Blas`]): device-wide GEMM, GEMV and DOT.
    Blas,
    /// The dense solver ([`Solver`]): Cholesky factorizations and linear
    /// solves.
    Solver,
}

impl VendorLibrary {
    /// The library `dialect` links for this one (`"cublas"`), as its
    /// [`Blas`] or [`Solver`] names it: what a runtime passes its linker
    /// for each of a unit's [`TranslationUnit::libraries`].
    pub fn link(self, dialect: &dyn Dialect) -> &'static str {
        match self {
            VendorLibrary::Blas => dialect.blas().link,
            VendorLibrary::Solver => dialect.solver().link,
        }
    }
}

impl TranslationUnit {
    /// The symbols `{entry}_init` takes, in order.
    pub fn init_symbols(&self) -> impl Iterator<Item = &Parameter> {
        self.parameters
            .iter()
            .filter(|p| matches!(p.kind, ParameterKind::Symbol(_)))
    }
}

/// One parameter of an emitted entry point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parameter {
    /// The IR name (the C++ name is [`cpp::ident`] of it).
    pub name: String,
    /// What is passed.
    pub kind: ParameterKind,
    /// The shape of a container or return value (empty for scalars and
    /// symbols): the buffer the caller passes holds this many elements in
    /// row-major order, unless [`Parameter::layout`] says otherwise.
    pub shape: Vec<sdfg_ir::SymExpr>,
    /// The container's layout where it is not the row-major contiguous
    /// one (DaCe's Fortran arrays, with strides `(1, n)`; GT4Py's, with
    /// strides in symbols): the code indexes the buffer by it, so the
    /// caller's buffer holds its `total_size` elements, element `i` of the
    /// shape at `offset + sum(i[d] * strides[d])`, as DaCe's callers lay
    /// their data out. `None`: row-major contiguous.
    pub layout: Option<sdfg_ir::Layout>,
    /// Where the buffer a container's pointer points to lives: `Device`
    /// for an argument whose home is the device (DaCe's `GPU_Global`
    /// arguments, a CuPy array), which the caller allocates on the
    /// device; `Host` otherwise (symbols included).
    pub home: sdfg_ir::Side,
}

/// How a parameter is passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParameterKind {
    /// An argument container (array or scalar): a pointer to memory the
    /// caller owns, `T*`, on the side [`Parameter::home`] says.
    Container(sdfg_ir::DType),
    /// A symbol, by value.
    Symbol(sdfg_ir::DType),
    /// A return value (`__return`, `__return_0`, ...): a pointer to host
    /// memory of its shape the caller owns and the program fills.
    Return(sdfg_ir::DType),
}

/// The status codes the emitted entry points return.
pub mod status {
    /// Success.
    pub const OK: i32 = 0;
    /// A runtime or vendor library call failed (the message on `stderr`
    /// names the call), or `{entry}_init` did not give a state.
    pub const RUNTIME_ERROR: i32 = 1;
    /// A factorization failed (a matrix not positive definite for
    /// Cholesky, singular for a solve), where NumPy raises `LinAlgError`;
    /// the message names the factorization.
    pub const LINALG_ERROR: i32 = 2;
    /// `{entry}_run` was given symbols other than those `{entry}_init` was.
    pub const ARGUMENT_ERROR: i32 = 3;
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
