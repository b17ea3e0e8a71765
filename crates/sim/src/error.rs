//! Errors of a simulated run: faults a GPU would raise, and misuse of the API.

use sdfg_ir::symbolic::EvalError;
use sdfg_ir::{DType, Side};
use std::sync::Arc;
use thiserror::Error;

/// Where in the program something happened: the state and the node (or the
/// block, for interstate code), with the SDFG path for nested SDFGs.
///
/// Names are shared strings so that errors stay small (they travel in every
/// `Result` of the interpreter's hot paths).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Location {
    /// SDFG path (`outer/inner`).
    pub sdfg: Arc<str>,
    /// State or block label.
    pub block: Arc<str>,
    /// Node label (empty for interstate code).
    pub node: Arc<str>,
}

impl Location {
    /// A location from its three names.
    pub fn new(sdfg: &str, block: &str, node: &str) -> Location {
        Location {
            sdfg: sdfg.into(),
            block: block.into(),
            node: node.into(),
        }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.node.is_empty() {
            write!(f, "block `{}` of SDFG `{}`", self.block, self.sdfg)
        } else {
            write!(
                f,
                "`{}` in state `{}` of SDFG `{}`",
                self.node, self.block, self.sdfg
            )
        }
    }
}

/// Why a simulated run stopped.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum SimError {
    /// Code on one side touched memory of the other side: what a real GPU
    /// reports as an illegal address, found on the CPU and named.
    #[error("{side} code {at} accessed container `{container}` in {space} memory")]
    Fault {
        /// Where the accessing code ran.
        side: Side,
        /// The container.
        container: String,
        /// The side whose memory it is.
        space: Side,
        /// The accessing code.
        at: Location,
    },
    /// Code read an element that nothing wrote (a transient never
    /// initialised, or a twin whose copy-in is missing), like
    /// compute-sanitizer's initcheck.
    #[error("{at} read element {index} of container `{container}`, which was never written")]
    Uninitialized {
        /// The container.
        container: String,
        /// Linear index of the element in its allocation.
        index: i64,
        /// The reading code.
        at: Location,
    },
    /// Two threads of one kernel (iterations of its map) touched one element
    /// of global device memory, at least one writing, without write-conflict
    /// resolution on both sides: a data race (found when race checking is
    /// on, [`crate::Simulator::check_races`]).
    #[error(
        "{at}: a data race on element {index} of container `{container}`: {kind} it within one kernel launch"
    )]
    Race {
        /// The container.
        container: String,
        /// Linear index of the element in its allocation.
        index: i64,
        /// How the threads met.
        kind: crate::memory::RaceKind,
        /// The access that completed the race.
        at: Location,
    },
    /// An access outside the container's allocation.
    #[error("{at} accessed element {index} of container `{container}`, outside its {len} elements")]
    OutOfBounds {
        /// The container.
        container: String,
        /// Linear index of the element.
        index: i64,
        /// Elements allocated.
        len: usize,
        /// The accessing code.
        at: Location,
    },
    /// An index outside the extent of its dimension (NumPy's IndexError),
    /// even where the address lies inside the allocation: the emitted code
    /// would read or write another element, or another container.
    #[error(
        "{at}: index {index} is out of bounds for dimension {dim} of `{container}` with extent {extent}"
    )]
    OutOfShape {
        /// The container.
        container: String,
        /// The dimension.
        dim: usize,
        /// The index.
        index: i64,
        /// The dimension's extent.
        extent: i64,
        /// The accessing code.
        at: Location,
    },
    /// An address that does not fit in 64 bits.
    #[error("{at}: an address of `{container}` overflows 64 bits")]
    AddressOverflow {
        /// The container.
        container: String,
        /// The accessing code.
        at: Location,
    },
    /// A symbol or symbolic expression that could not be evaluated.
    #[error("{at}: {error}")]
    Eval {
        /// The evaluating code.
        at: Location,
        /// What went wrong.
        #[source]
        error: EvalError,
    },
    /// Integer division or modulo by zero in tasklet code.
    #[error("{at}: integer division by zero")]
    DivisionByZero {
        /// The tasklet.
        at: Location,
    },
    /// A library node whose operands do not fit its operation.
    #[error("{at}: {error}")]
    Library {
        /// The library node.
        at: Location,
        /// What went wrong.
        #[source]
        error: crate::library::LibraryError,
    },
    /// A host callback that is not registered, or that failed.
    #[error("{at}: callback `{callee}`: {message}")]
    Callback {
        /// The callback node.
        at: Location,
        /// The registered name.
        callee: String,
        /// What went wrong.
        message: String,
    },
    /// A construct the simulator does not execute (streams, structures).
    #[error("{at}: {what} is not supported by the simulator")]
    Unsupported {
        /// Where.
        at: Location,
        /// What.
        what: String,
    },
    /// A required argument (array or symbol) was not given.
    #[error("argument `{name}` is missing")]
    MissingArgument {
        /// The argument.
        name: String,
    },
    /// An array argument whose dtype or shape does not match its descriptor.
    #[error("argument `{name}`: expected {expected}, got {found}")]
    BadArgument {
        /// The argument.
        name: String,
        /// What the SDFG declares.
        expected: String,
        /// What was given.
        found: String,
    },
    /// A container whose layout, evaluated with the run's symbols,
    /// addresses elements outside its allocation or beyond 64 bits.
    #[error("container `{container}`: {error}")]
    Layout {
        /// The container.
        container: String,
        /// What is wrong with its layout.
        error: sdfg_ir::LayoutError,
    },
    /// The run took more steps (states, loop iterations, map points) than
    /// its limit allows: most likely a loop that does not end.
    #[error(
        "{at}: the run exceeded its limit of {limit} steps (states, loop iterations and map points)"
    )]
    StepLimit {
        /// Where the limit was reached.
        at: Location,
        /// The limit.
        limit: u64,
    },
    /// An allocation beyond the run's memory limit.
    #[error(
        "container `{container}` needs {bytes} bytes, beyond the memory limit of {limit} bytes ({used} bytes already allocated); raise it with --max-memory"
    )]
    OutOfMemory {
        /// The container.
        container: String,
        /// The bytes it needs.
        bytes: u64,
        /// The bytes allocated before it.
        used: u64,
        /// The limit.
        limit: u64,
    },
    /// A container whose size in bytes, evaluated with the run's symbols,
    /// is beyond what one allocation can hold
    /// ([`crate::MAX_ALLOCATION_BYTES`]): found before anything is
    /// allocated, whatever the memory limit, because no machine could run
    /// it and the allocation itself would abort the process.
    #[error(
        "container `{container}` ({dtype}, shape {shape:?}) needs more than {max} bytes, beyond what one allocation can hold",
        max = crate::MAX_ALLOCATION_BYTES
    )]
    SizeOverflow {
        /// The container.
        container: String,
        /// Its element type.
        dtype: DType,
        /// Its shape, evaluated.
        shape: Vec<u64>,
    },
    /// The machine's allocator refused memory for a container (without a
    /// memory limit, [`crate::Simulator::max_memory`], nothing smaller
    /// stops a run from asking for more than the machine has).
    #[error("the allocation of {bytes} bytes for container `{container}` failed")]
    AllocationFailed {
        /// The container.
        container: String,
        /// The bytes asked for.
        bytes: u64,
    },
    /// A container whose size evaluates to a negative or unrepresentable number.
    #[error("container `{container}` has invalid size {size}")]
    BadSize {
        /// The container.
        container: String,
        /// The size.
        size: i64,
    },
    /// A value of the wrong type reached a place that needs another (an
    /// internal inconsistency the validator should have prevented).
    #[error("{at}: expected a {expected} value")]
    Type {
        /// Where.
        at: Location,
        /// The expected type.
        expected: DType,
    },
}
