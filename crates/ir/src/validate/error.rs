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
    #[error("SDFG `{sdfg}`: {error}")]
    Sdfg {
        /// SDFG path.
        sdfg: String,
        /// What is wrong.
        #[source]
        error: SdfgError,
    },
    /// A problem with a container's descriptor.
    #[error("SDFG `{sdfg}`, container `{container}`: {error}")]
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
    #[error("SDFG `{sdfg}`, block `{block}`: {error}")]
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
    #[error("SDFG `{sdfg}`, state `{state}`, {kind} `{label}` (node {node}): {error}")]
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
    #[error("SDFG `{sdfg}`, state `{state}`, edge {edge} (`{src}` -> `{dst}`): {error}")]
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
    #[error("`{name}` is not a valid {what} name")]
    InvalidName {
        /// The name.
        name: String,
        /// What it names.
        what: &'static str,
    },
    /// An argument that is neither a container nor a symbol.
    #[error("argument `{name}` is neither a container nor a symbol")]
    UnknownArgument {
        /// The argument.
        name: String,
    },
    /// An argument listed twice.
    #[error("argument `{name}` is listed twice")]
    DuplicateArgument {
        /// The argument.
        name: String,
    },
    /// A transient container listed as an argument.
    #[error("argument `{name}` is a transient container")]
    TransientArgument {
        /// The argument.
        name: String,
    },
    /// A non-transient container that is not an argument.
    #[error("non-transient container `{name}` is not an argument")]
    MissingArgument {
        /// The container.
        name: String,
    },
    /// A name used for both a symbol and a container.
    #[error("`{name}` is both a symbol and a container")]
    NameClash {
        /// The name.
        name: String,
    },
    /// A symbol whose type is not an integer type.
    #[error("symbol `{name}` has type {dtype}; symbols are integers")]
    NonIntegerSymbol {
        /// The symbol.
        name: String,
        /// Its type.
        dtype: crate::DType,
    },
    /// Two blocks with one label.
    #[error("block label `{label}` is used more than once")]
    DuplicateLabel {
        /// The label.
        label: String,
    },
}

/// Problems with a container descriptor.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ContainerError {
    /// Shape, strides or size mention a symbol the SDFG does not declare.
    #[error("its shape or layout uses the undefined symbol `{symbol}`")]
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
    #[error("{what} uses the undefined symbol `{symbol}`")]
    UndefinedSymbol {
        /// Where (`"loop condition"`).
        what: &'static str,
        /// The symbol.
        symbol: String,
    },
    /// A transition assigns to a container; transitions never write data.
    #[error("transition assigns to container `{name}`; transitions may only assign symbols")]
    AssignsContainer {
        /// The container.
        name: String,
    },
    /// A transition assigns to a name that is not a declared symbol.
    #[error("transition assigns to `{name}`, which is not a declared symbol")]
    AssignsUndeclared {
        /// The name.
        name: String,
    },
    /// Interstate code reads a container that does not exist.
    #[error("{what} reads `{name}`, which is not a container")]
    UnknownRead {
        /// Where.
        what: &'static str,
        /// The name.
        name: String,
    },
    /// Interstate code reads a container it cannot read (wrong kind, type or index count).
    #[error("{what} reads container `{name}`: {reason}")]
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
    #[error("{what} runs on the {side} but reads container `{container}` in {storage} storage")]
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
    #[error("`{kind}` outside a loop")]
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
    #[error("loop variable `{name}` is not a declared symbol")]
    UndeclaredLoopVariable {
        /// The variable.
        name: String,
    },
}

/// Problems with a dataflow node.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum NodeError {
    /// An access node of a container that does not exist.
    #[error("container `{data}` does not exist")]
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
    #[error("connector `{name}` is {reason}")]
    BadConnector {
        /// The connector.
        name: String,
        /// `"declared twice"` or `"not a valid identifier"`.
        reason: &'static str,
    },
    /// An input connector without exactly one incoming edge.
    #[error("input connector `{name}` has {count} incoming edges (expected 1)")]
    InputEdges {
        /// The connector.
        name: String,
        /// Edges found.
        count: usize,
    },
    /// An output connector with no outgoing edge.
    #[error("output connector `{name}` has no outgoing edge")]
    DanglingOutput {
        /// The connector.
        name: String,
    },
    /// Map entry or exit connectors that do not come in `IN_x`/`OUT_x` pairs.
    #[error("scope connector `{name}` needs {expected}")]
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
    #[error("map parameter `{name}` {reason}")]
    BadMapParam {
        /// The parameter.
        name: String,
        /// Why.
        reason: &'static str,
    },
    /// A map range with a zero step.
    #[error("range of map parameter `{param}` has step 0")]
    ZeroStep {
        /// The parameter.
        param: String,
    },
    /// A map range using a symbol that is not defined around the map.
    #[error("range of the map uses the undefined symbol `{symbol}`")]
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
    #[error("output connector `{name}` is never written by the code")]
    OutputNeverWritten {
        /// The connector.
        name: String,
    },
    /// A library operand with the wrong number of dimensions.
    #[error("operand `{conn}` of {op} has {found} dimensions, expected {expected}")]
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
    #[error("connector `{name}` is not a non-transient container of the nested SDFG")]
    NestedConnector {
        /// The connector.
        name: String,
    },
    /// An inner container the nested SDFG writes that is only an input
    /// connector: the write never reaches the caller's data.
    #[error("the nested SDFG writes `{name}`, which is only an input connector")]
    NestedInputWritten {
        /// The inner container.
        name: String,
    },
    /// A non-transient inner container that is not connected.
    #[error("non-transient container `{name}` of the nested SDFG is not a connector")]
    NestedUnconnected {
        /// The inner container.
        name: String,
    },
    /// An inner symbol argument without a mapping, or a mapping of a non-symbol.
    #[error("symbol mapping: {reason} `{symbol}`")]
    SymbolMapping {
        /// The inner symbol.
        symbol: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A symbol mapping whose expression uses a symbol not defined outside.
    #[error("symbol mapping of `{inner}` uses the undefined symbol `{symbol}`")]
    MappingUndefinedSymbol {
        /// The inner symbol.
        inner: String,
        /// The undefined outer symbol.
        symbol: String,
    },
    /// A view access node without exactly one view edge.
    #[error("view `{data}` has {count} view edges (expected exactly one)")]
    ViewEdges {
        /// The view container.
        data: String,
        /// View edges found.
        count: usize,
    },
    /// A host callback inside device code.
    #[error("host callback `{callee}` cannot run on the device")]
    CallbackOnDevice {
        /// The callback.
        callee: String,
    },
    /// Device-shared memory accessed outside a kernel.
    #[error("container `{data}` is in device_shared storage, which exists only inside a kernel")]
    SharedOutsideKernel {
        /// The container.
        data: String,
    },
}

/// Problems with a dataflow edge or its memlet.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum EdgeError {
    /// A connector the node does not have.
    #[error("{side} connector `{name}` does not exist on the node")]
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
    #[error("the edge at {side} connector `{name}` has no memlet")]
    ConnectorWithoutMemlet {
        /// `"source"` or `"destination"`.
        side: &'static str,
        /// The connector.
        name: String,
    },
    /// A memlet of a container that does not exist.
    #[error("memlet refers to `{data}`, which is not a container")]
    UnknownContainer {
        /// The name.
        data: String,
    },
    /// A memlet naming another container than the access node it touches.
    #[error("memlet refers to `{data}` but the edge touches an access node of `{node_data}`")]
    DataMismatch {
        /// The memlet's container.
        data: String,
        /// The access node's container.
        node_data: String,
    },
    /// A subset whose number of dimensions differs from the container's.
    #[error("{which} of `{data}` has {found} dimensions, the container has {expected}")]
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
        "dimension {dim} of `{data}`: index {} is out of bounds 0..{}",
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
        "dimension {dim} of `{data}`: over the ranges of the maps around it, index {} is out of bounds 0..{}",
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
    #[error("dimension {dim} of `{data}`: range {} is reversed", crate::quote(.range))]
    ReversedRange {
        /// The container.
        data: String,
        /// The dimension.
        dim: usize,
        /// The range.
        range: String,
    },
    /// A memlet using a symbol that is not defined where the edge is.
    #[error("memlet of `{data}` uses the undefined symbol `{symbol}`")]
    UndefinedSymbol {
        /// The container.
        data: String,
        /// The symbol.
        symbol: String,
    },
    /// Write-conflict resolution on an edge that reads.
    #[error("memlet of `{data}` reads but has write-conflict resolution")]
    WcrOnRead {
        /// The container.
        data: String,
    },
    /// A bitwise write-conflict resolution on a container of floats or
    /// complex numbers, which have no bits to combine.
    #[error("memlet of `{data}` combines {data_type} values with the bitwise `{wcr}`")]
    BitwiseWcr {
        /// The container.
        data: String,
        /// Its element type.
        data_type: DType,
        /// The resolution.
        wcr: Wcr,
    },
    /// A connector whose type differs from the container's element type.
    #[error("connector `{conn}` has type {conn_type} but `{data}` holds {data_type}")]
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
    #[error("{side} code in `{by}` accesses container `{container}` in {storage} storage")]
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
        "`{container}` ({outer} storage) is bound to inner container `{conn}` in {inner} storage"
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
