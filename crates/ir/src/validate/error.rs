//! Validation errors: the outer enum says *where*, the inner enums say *what*.

use crate::code::TypeError;
use crate::placement::{Schedule, Side, Storage};
use crate::state::ScopeError;
use crate::{DType, Wcr};
use std::fmt;
use thiserror::Error;

/// One validation error with its location.
///
/// Locations name the SDFG (a path `outer/nested` for nested SDFGs), then the
/// block (a path of labels through loops and conditionals), the node (id,
/// kind and label) or the edge (id and the labels of both ends), and the
/// container wherever one is involved, so a message can be acted on without
/// opening the SDFG.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ValidationError {
    /// A problem with the SDFG as a whole (names, arguments, symbols).
    #[error("SDFG {}: {error}", crate::quote(.sdfg))]
    Sdfg {
        /// SDFG path.
        sdfg: String,
        /// What is wrong.
        #[source]
        error: SdfgError,
    },
    /// A problem with a container's descriptor.
    #[error("SDFG {}, container {}: {error}", crate::quote(.sdfg), crate::quote(.container))]
    Container {
        /// SDFG path.
        sdfg: String,
        /// The container.
        container: String,
        /// What is wrong.
        #[source]
        error: ContainerError,
    },
    /// A problem with a control-flow block or the transition after it.
    #[error("SDFG {}, block {}: {error}", crate::quote(.sdfg), crate::quote(.block))]
    Block {
        /// SDFG path.
        sdfg: String,
        /// Block path, labels joined by `/`.
        block: String,
        /// What is wrong.
        #[source]
        error: BlockError,
    },
    /// A problem with a dataflow node.
    #[error("SDFG {}, state {}, {kind} {} (node {node}): {error}", crate::quote(.sdfg), crate::quote(.state), crate::quote(.label))]
    Node {
        /// SDFG path.
        sdfg: String,
        /// State label.
        state: String,
        /// Node id.
        node: u32,
        /// Node kind (`"tasklet"`).
        kind: &'static str,
        /// Node label (the container name for access nodes).
        label: String,
        /// What is wrong.
        #[source]
        error: NodeError,
    },
    /// A problem with a dataflow edge or its memlet.
    #[error("SDFG {}, state {}, edge {edge} ({} -> {}): {error}", crate::quote(.sdfg), crate::quote(.state), crate::quote(.src), crate::quote(.dst))]
    Edge {
        /// SDFG path.
        sdfg: String,
        /// State label.
        state: String,
        /// Edge id.
        edge: u32,
        /// Label of the source node.
        src: String,
        /// Label of the destination node.
        dst: String,
        /// What is wrong.
        #[source]
        error: EdgeError,
    },
}

/// Every error found in one SDFG (never empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationErrors(pub Vec<ValidationError>);

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ValidationErrors {}

/// Problems with the SDFG as a whole.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum SdfgError {
    /// A name that is not a valid identifier.
    #[error("{} is not a valid {what} name", crate::quote(.name))]
    InvalidName {
        /// The name.
        name: String,
        /// What it names.
        what: &'static str,
    },
    /// An argument that is neither a container nor a symbol.
    #[error("argument {} is neither a container nor a symbol", crate::quote(.name))]
    UnknownArgument {
        /// The argument.
        name: String,
    },
    /// An argument listed twice.
    #[error("argument {} is listed twice", crate::quote(.name))]
    DuplicateArgument {
        /// The argument.
        name: String,
    },
    /// A transient container listed as an argument.
    #[error("argument {} is a transient container", crate::quote(.name))]
    TransientArgument {
        /// The argument.
        name: String,
    },
    /// A non-transient container that is not an argument.
    #[error("non-transient container {} is not an argument", crate::quote(.name))]
    MissingArgument {
        /// The container.
        name: String,
    },
    /// A name used for both a symbol and a container.
    #[error("{} is both a symbol and a container", crate::quote(.name))]
    NameClash {
        /// The name.
        name: String,
    },
    /// A symbol whose type is not an integer type.
    #[error("symbol {} has type {dtype}; symbols are integers", crate::quote(.name))]
    NonIntegerSymbol {
        /// The symbol.
        name: String,
        /// Its type.
        dtype: crate::DType,
    },
    /// Two blocks with one label.
    #[error("block label {} is used more than once", crate::quote(.label))]
    DuplicateLabel {
        /// The label.
        label: String,
    },
}

/// Problems with a container descriptor.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ContainerError {
    /// Shape, strides or size mention a symbol the SDFG does not declare.
    #[error("its shape or layout uses the undefined symbol {}", crate::quote(.symbol))]
    UndefinedSymbol {
        /// The symbol.
        symbol: String,
    },
    /// Shape and strides of different lengths.
    #[error("shape has {shape} dimensions but strides have {strides}")]
    StridesRank {
        /// Dimensions of the shape.
        shape: usize,
        /// Number of strides.
        strides: usize,
    },
    /// A shape, stride, offset or size that divides by the constant 0
    /// (`N // 0`): no value of the symbols makes it an integer.
    #[error("its layout divides by zero in {}", crate::quote(.expr))]
    DivisionByZero {
        /// The shape, stride, offset or size expression.
        expr: String,
    },
    /// A dimension whose extent is a negative constant.
    #[error("dimension {dim} has negative extent {extent}")]
    NegativeExtent {
        /// The dimension.
        dim: usize,
        /// Its extent.
        extent: i64,
    },
    /// A layout that addresses elements outside its allocation, or whose
    /// addresses do not fit in 64 bits.
    #[error("layout: {0}")]
    Layout(crate::LayoutError),
    /// A view that is not transient.
    #[error("a view must be transient")]
    ViewNotTransient,
    /// Device-shared or register storage on a non-transient container of the
    /// top-level SDFG, which the host program cannot pass.
    #[error("{storage} storage cannot hold an argument")]
    ArgumentStorage {
        /// The storage.
        storage: Storage,
    },
}

/// Problems with a control-flow block or its transition.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum BlockError {
    /// A condition, bound or assignment uses a symbol the SDFG does not declare.
    #[error("{what} uses the undefined symbol {}", crate::quote(.symbol))]
    UndefinedSymbol {
        /// Where (`"loop condition"`).
        what: &'static str,
        /// The symbol.
        symbol: String,
    },
    /// A transition assigns to a container; transitions never write data.
    #[error("transition assigns to container {}; transitions may only assign symbols", crate::quote(.name))]
    AssignsContainer {
        /// The container.
        name: String,
    },
    /// A transition assigns to a name that is not a declared symbol.
    #[error("transition assigns to {}, which is not a declared symbol", crate::quote(.name))]
    AssignsUndeclared {
        /// The name.
        name: String,
    },
    /// Interstate code reads a container that does not exist.
    #[error("{what} reads {}, which is not a container", crate::quote(.name))]
    UnknownRead {
        /// Where.
        what: &'static str,
        /// The name.
        name: String,
    },
    /// Interstate code reads a container it cannot read (wrong kind, type or index count).
    #[error("{what} reads container {}: {reason}", crate::quote(.name))]
    BadRead {
        /// Where.
        what: &'static str,
        /// The container.
        name: String,
        /// Why it cannot be read so.
        reason: String,
    },
    /// Interstate code reads a container its side cannot reach: a transition
    /// or condition of a host-level SDFG reading device storage (it runs on
    /// the host), or of an SDFG nested in a kernel reading host storage (it
    /// runs on the device).
    #[error("{what} runs on the {side} but reads container {} in {storage} storage", crate::quote(.container))]
    Inaccessible {
        /// Where.
        what: &'static str,
        /// Where the interstate code runs.
        side: Side,
        /// The container.
        container: String,
        /// Its storage.
        storage: Storage,
    },
    /// `break` or `continue` outside a loop.
    #[error("{} outside a loop", crate::quote(.kind))]
    JumpOutsideLoop {
        /// `break` or `continue`.
        kind: &'static str,
    },
    /// A conditional with no branch.
    #[error("conditional without branches")]
    EmptyConditional,
    /// A `for` loop missing its init or update, or a `while` loop with one.
    #[error(
        "loop with a variable needs both init and update, and a loop without one needs neither"
    )]
    IncompleteLoop,
    /// The loop variable is not a declared symbol.
    #[error("loop variable {} is not a declared symbol", crate::quote(.name))]
    UndeclaredLoopVariable {
        /// The variable.
        name: String,
    },
}

/// Problems with a dataflow node.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum NodeError {
    /// An access node of a container that does not exist.
    #[error("container {} does not exist", crate::quote(.data))]
    UnknownContainer {
        /// The name.
        data: String,
    },
    /// An access node without any edge.
    #[error("access node has no edges")]
    IsolatedAccess,
    /// Map scopes not well nested, or a cycle.
    #[error("{0}")]
    Scope(ScopeError),
    /// A connector name that is not an identifier or is declared twice.
    #[error("connector {} is {reason}", crate::quote(.name))]
    BadConnector {
        /// The connector.
        name: String,
        /// `"declared twice"` or `"not a valid identifier"`.
        reason: &'static str,
    },
    /// An input connector without exactly one incoming edge.
    #[error("input connector {} has {count} incoming edges (expected 1)", crate::quote(.name))]
    InputEdges {
        /// The connector.
        name: String,
        /// Edges found.
        count: usize,
    },
    /// An output connector with no outgoing edge.
    #[error("output connector {} has no outgoing edge", crate::quote(.name))]
    DanglingOutput {
        /// The connector.
        name: String,
    },
    /// Map entry or exit connectors that do not come in `IN_x`/`OUT_x` pairs.
    #[error("scope connector {} needs {expected}", crate::quote(.name))]
    UnpairedScopeConnector {
        /// The connector.
        name: String,
        /// The missing partner.
        expected: String,
    },
    /// A map whose parameter and range lists differ in length.
    #[error("map has {params} parameters but {ranges} ranges")]
    MapArity {
        /// Number of parameters.
        params: usize,
        /// Number of ranges.
        ranges: usize,
    },
    /// A map parameter that is not an identifier, repeats, or shadows a symbol or container.
    #[error("map parameter {} {reason}", crate::quote(.name))]
    BadMapParam {
        /// The parameter.
        name: String,
        /// Why.
        reason: &'static str,
    },
    /// A map range with a zero step.
    #[error("range of map parameter {} has step 0", crate::quote(.param))]
    ZeroStep {
        /// The parameter.
        param: String,
    },
    /// A map range using a symbol that is not defined around the map.
    #[error("range of the map uses the undefined symbol {}", crate::quote(.symbol))]
    UndefinedSymbol {
        /// The symbol.
        symbol: String,
    },
    /// A map entry without exit, or an exit whose entry is missing or taken.
    #[error("{0}")]
    MapPairing(&'static str),
    /// A schedule not allowed where the node is.
    #[error("schedule {schedule} is not allowed here: {reason}")]
    BadSchedule {
        /// The schedule.
        schedule: Schedule,
        /// Why.
        reason: &'static str,
    },
    /// Tasklet code does not type-check.
    #[error("tasklet code: {0}")]
    Type(TypeError),
    /// A tasklet output connector the code never writes.
    #[error("output connector {} is never written by the code", crate::quote(.name))]
    OutputNeverWritten {
        /// The connector.
        name: String,
    },
    /// A library operand with the wrong number of dimensions.
    #[error("operand {} of {op} has {found} dimensions, expected {expected}", crate::quote(.conn))]
    OperandRank {
        /// The connector.
        conn: String,
        /// The operation.
        op: &'static str,
        /// Expected dimensions.
        expected: String,
        /// Dimensions found.
        found: usize,
    },
    /// A library parameter that does not fit (axes out of range, bad permutation).
    #[error("{op}: {reason}")]
    BadLibraryParameter {
        /// The operation.
        op: &'static str,
        /// Why.
        reason: String,
    },
    /// A nested SDFG connector that is not a non-transient inner container.
    #[error("connector {} is not a non-transient container of the nested SDFG", crate::quote(.name))]
    NestedConnector {
        /// The connector.
        name: String,
    },
    /// An inner container the nested SDFG writes that is only an input
    /// connector: the write never reaches the caller's data.
    #[error("the nested SDFG writes {}, which is only an input connector", crate::quote(.name))]
    NestedInputWritten {
        /// The inner container.
        name: String,
    },
    /// A non-transient inner container that is not connected.
    #[error("non-transient container {} of the nested SDFG is not a connector", crate::quote(.name))]
    NestedUnconnected {
        /// The inner container.
        name: String,
    },
    /// An inner symbol argument without a mapping, or a mapping of a non-symbol.
    #[error("symbol mapping: {reason} {}", crate::quote(.symbol))]
    SymbolMapping {
        /// The inner symbol.
        symbol: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A symbol mapping whose expression uses a symbol not defined outside.
    #[error("symbol mapping of {} uses the undefined symbol {}", crate::quote(.inner), crate::quote(.symbol))]
    MappingUndefinedSymbol {
        /// The inner symbol.
        inner: String,
        /// The undefined outer symbol.
        symbol: String,
    },
    /// A view access node without exactly one view edge.
    #[error("view {} has {count} view edges (expected exactly one)", crate::quote(.data))]
    ViewEdges {
        /// The view container.
        data: String,
        /// View edges found.
        count: usize,
    },
    /// A host callback inside device code.
    #[error("host callback {} cannot run on the device", crate::quote(.callee))]
    CallbackOnDevice {
        /// The callback.
        callee: String,
    },
    /// Device-shared memory accessed outside a kernel.
    #[error("container {} is in device_shared storage, which exists only inside a kernel", crate::quote(.data))]
    SharedOutsideKernel {
        /// The container.
        data: String,
    },
}

/// Problems with a dataflow edge or its memlet.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum EdgeError {
    /// A connector the node does not have.
    #[error("{side} connector {} does not exist on the node", crate::quote(.name))]
    UnknownConnector {
        /// `"source"` or `"destination"`.
        side: &'static str,
        /// The connector.
        name: String,
    },
    /// A data edge that leaves or enters a code node or scope node without a connector.
    #[error("data edge needs a {side} connector")]
    MissingConnector {
        /// `"source"` or `"destination"`.
        side: &'static str,
    },
    /// An edge at a connector of a code or scope node without a memlet:
    /// a connector names data, and an empty edge carries none (it only
    /// orders its ends).
    #[error("the edge at {side} connector {} has no memlet", crate::quote(.name))]
    ConnectorWithoutMemlet {
        /// `"source"` or `"destination"`.
        side: &'static str,
        /// The connector.
        name: String,
    },
    /// A memlet of a container that does not exist.
    #[error("memlet refers to {}, which is not a container", crate::quote(.data))]
    UnknownContainer {
        /// The name.
        data: String,
    },
    /// A memlet naming another container than the access node it touches.
    #[error("memlet refers to {} but the edge touches an access node of {}", crate::quote(.data), crate::quote(.node_data))]
    DataMismatch {
        /// The memlet's container.
        data: String,
        /// The access node's container.
        node_data: String,
    },
    /// A subset whose number of dimensions differs from the container's.
    #[error("{which} of {} has {found} dimensions, the container has {expected}", crate::quote(.data))]
    SubsetRank {
        /// `"subset"` or `"other subset"`.
        which: &'static str,
        /// The container.
        data: String,
        /// Dimensions of the container.
        expected: usize,
        /// Dimensions of the subset.
        found: usize,
    },
    /// An index provably outside the container.
    #[error(
        "dimension {dim} of {}: index {} is out of bounds 0..{}",
        crate::quote(.data),
        crate::quote(.index),
        crate::quote(.extent)
    )]
    OutOfBounds {
        /// The container.
        data: String,
        /// The dimension.
        dim: usize,
        /// The offending bound.
        index: String,
        /// The extent.
        extent: String,
    },
    /// An index that some iteration of the maps around the edge drives
    /// provably outside the container: the memlet `A[i + 1]` under
    /// `i = 0:N` of an `A` of `N` elements. Found by propagating the memlet
    /// through its scopes, as the edge entering them would carry it; the
    /// outer edge may understate it, and a pass that turns the map into a
    /// copy (map-to-copy) would then write an invalid SDFG from a valid one.
    #[error(
        "dimension {dim} of {}: over the ranges of the maps around it, index {} is out of bounds 0..{}",
        crate::quote(.data),
        crate::quote(.index),
        crate::quote(.extent)
    )]
    OutOfBoundsInScope {
        /// The container.
        data: String,
        /// The dimension.
        dim: usize,
        /// The offending bound, with the maps' parameters at their extremes.
        index: String,
        /// The extent.
        extent: String,
    },
    /// A range whose end is provably before its start by more than one step.
    #[error(
        "dimension {dim} of {}: range {} is reversed",
        crate::quote(.data),
        crate::quote(.range)
    )]
    ReversedRange {
        /// The container.
        data: String,
        /// The dimension.
        dim: usize,
        /// The range.
        range: String,
    },
    /// A memlet using a symbol that is not defined where the edge is.
    #[error("memlet of {} uses the undefined symbol {}", crate::quote(.data), crate::quote(.symbol))]
    UndefinedSymbol {
        /// The container.
        data: String,
        /// The symbol.
        symbol: String,
    },
    /// Write-conflict resolution on an edge that reads.
    #[error("memlet of {} reads but has write-conflict resolution", crate::quote(.data))]
    WcrOnRead {
        /// The container.
        data: String,
    },
    /// A bitwise write-conflict resolution on a container of floats or
    /// complex numbers, which have no bits to combine.
    #[error("memlet of {} combines {data_type} values with the bitwise `{wcr}`", crate::quote(.data))]
    BitwiseWcr {
        /// The container.
        data: String,
        /// Its element type.
        data_type: DType,
        /// The resolution.
        wcr: Wcr,
    },
    /// A connector whose type differs from the container's element type.
    #[error("connector {} has type {conn_type} but {} holds {data_type}", crate::quote(.conn), crate::quote(.data))]
    TypeMismatch {
        /// The connector.
        conn: String,
        /// Its type.
        conn_type: crate::DType,
        /// The container.
        data: String,
        /// The container's element type.
        data_type: crate::DType,
    },
    /// Code on one side touching storage of the other side.
    #[error("{side} code in {} accesses container {} in {storage} storage", crate::quote(.by), crate::quote(.container))]
    Inaccessible {
        /// Where the accessing code runs.
        side: Side,
        /// The accessing node (a map, tasklet, library node ...).
        by: String,
        /// The container.
        container: String,
        /// Its storage.
        storage: Storage,
    },
    /// A container passed to a nested SDFG at host level whose storage is on
    /// the other side from the inner container it binds.
    #[error(
        "{} ({outer} storage) is bound to inner container {} in {inner} storage", crate::quote(.container), crate::quote(.conn)
    )]
    NestedStorageMismatch {
        /// The connector (inner container).
        conn: String,
        /// The inner container's storage.
        inner: Storage,
        /// The outer container.
        container: String,
        /// Its storage.
        outer: Storage,
    },
    /// A `views` connector on an edge that does not connect a view to an access node.
    #[error("the `views` connector must connect a view's access node to another access node")]
    MisplacedViewConnector,
}
