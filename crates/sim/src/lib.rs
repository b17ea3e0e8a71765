//! Reference interpreter and simulated accelerator.
//!
//! This crate executes any valid SDFG on the CPU. Host storage and device
//! storage are *separate address spaces*: a kernel (a device-scheduled map,
//! a device-wide library call, anything nested in them) that touches host
//! memory, or host code (tasklets, host maps, interstate conditions and
//! assignments) that touches device memory, stops the run with a
//! [`SimError::Fault`] naming the container, the node and the state: the
//! illegal-address error a real GPU would give, found on a CPU. Copies
//! between access nodes move bytes explicitly and are counted; transients
//! start uninitialised and reading an element nothing wrote is a
//! [`SimError::Uninitialized`] fault (compute-sanitizer's initcheck), which
//! is how a missing copy shows up. Running the un-offloaded SDFG on the host
//! is the reference the offloaded one is compared with.
//!
//! # Using it
//!
//! ```
//! use sdfg_sim::{ArrayValue, Arguments, Simulator};
//! let sdfg = sdfg_ir::examples::axpy().unwrap();
//! let valid = sdfg_ir::validate(&sdfg).unwrap();
//! let args = Arguments::default()
//!     .symbol("N", 3)
//!     .array("a", ArrayValue::f64(vec![], vec![2.0]))
//!     .array("x", ArrayValue::f64(vec![3], vec![1.0, 2.0, 3.0]))
//!     .array("y", ArrayValue::f64(vec![3], vec![10.0, 20.0, 30.0]));
//! let result = Simulator::new().run(valid, &args).unwrap();
//! assert_eq!(result.outputs["y"], ArrayValue::f64(vec![3], vec![12.0, 24.0, 36.0]));
//! ```
//!
//! # How it executes
//!
//! Each state is compiled on first execution into a plan (module `plan`): names
//! become slot indices, symbolic indices become affine forms over symbol
//! slots, tasklet bodies become closures (module `tasklet`), and the dataflow graph
//! becomes a tree of steps in topological order, one subtree per map scope.
//! Maps run their iterations sequentially, which is a valid schedule of every
//! map. Library nodes run their reference semantics ([`library`]). Memlets
//! inside a scope name absolute subsets of containers, so inner code reads
//! and writes memory directly; edges into access nodes from other access
//! nodes, or through scope boundaries with another container, are copies.
//!
//! A map whose body is a single tasklet with affine scalar accesses (the
//! common case: elementwise maps, stencils, matrix products written as maps)
//! runs in a fused loop: addresses are affine in the parameters and
//! computed incrementally, and space, bounds and initialisation are checked
//! once for the whole iteration space instead of per access. Anything else
//! takes the general path, which checks every access.
//!
//! # Numbers
//!
//! `cargo bench -p sdfg-sim` (release build, one core of the 2-core
//! development machine, criterion medians):
//!
//! | benchmark | time per run | tasklet executions | per tasklet |
//! |---|---|---|---|
//! | elementwise map `y = a*x + y`, 10^6 elements | 49.8 ms | 10^6 | 40 ns |
//! | the same arguments, a map over one element (run overhead: copying 16 MB of arguments in, reading outputs back) | 9.9 ms | 1 | - |
//! | 200x200x200 GEMM as one map with a sum-WCR tasklet | 338 ms | 8 * 10^6 | 42 ns |
//!
//! Per-tasklet figures subtract the run overhead where it matters (the
//! elementwise map: (49.8 - 9.9) ms / 10^6).
//! The target was under 50 ns per simple tasklet execution.

pub mod accelerator;
mod arith;
pub mod count;
pub mod error;
mod exec;
pub mod library;
pub mod memory;
pub mod npy;
mod plan;
pub mod report;
mod tasklet;
pub mod value;

pub use accelerator::SimAccelerator;
pub use count::{NotCountable, StaticCount, count_statically};
pub use error::{Location, SimError};
pub use memory::{ContainerTraffic, RaceKind, Traffic};
pub use report::RunReport;
pub use value::{Elements, Value};

use library::Tensor;
use sdfg_ir::{DType, Side, Storage, Validated};
use std::collections::{BTreeMap, HashMap};

/// A dense row-major array (or a scalar, with an empty shape) exchanged with
/// the simulator: arguments in, outputs out, callback arguments and results.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayValue {
    /// Extent of each dimension; empty for a scalar.
    pub shape: Vec<usize>,
    /// The elements in row-major order; their dtype is the array's.
    pub elements: Elements,
}

impl ArrayValue {
    /// An array of the given shape holding `elements`.
    pub fn new(shape: Vec<usize>, elements: Elements) -> ArrayValue {
        ArrayValue { shape, elements }
    }

    /// A `float64` array.
    pub fn f64(shape: Vec<usize>, data: Vec<f64>) -> ArrayValue {
        ArrayValue::new(shape, Elements::F64(data))
    }

    /// An `int64` array.
    pub fn i64(shape: Vec<usize>, data: Vec<i64>) -> ArrayValue {
        ArrayValue::new(shape, Elements::I64(data))
    }

    /// Zeros of `dtype` in the given shape, for shapes known to be small
    /// (tests, constants); a shape computed from a program's symbols takes
    /// [`ArrayValue::try_zeros`], which cannot abort.
    pub fn zeros(dtype: DType, shape: Vec<usize>) -> ArrayValue {
        let n = shape.iter().product();
        ArrayValue::new(shape, Elements::zeros(dtype, n))
    }

    /// Zeros of `dtype` in the given shape for the container `name`: an
    /// error naming it where the shape's bytes overflow one allocation
    /// ([`SimError::SizeOverflow`]) or the machine refuses the memory
    /// ([`SimError::AllocationFailed`]).
    pub fn try_zeros(name: &str, dtype: DType, shape: Vec<usize>) -> Result<ArrayValue, SimError> {
        let bytes = allocation_bytes(dtype, &shape).ok_or_else(|| SimError::SizeOverflow {
            container: name.to_owned(),
            dtype,
            shape: shape.iter().map(|&n| n as u64).collect(),
        })?;
        // `allocation_bytes` bounds the product of the shape.
        let n = shape.iter().product();
        let elements = Elements::try_zeros(dtype, n).map_err(|_| SimError::AllocationFailed {
            container: name.to_owned(),
            bytes,
        })?;
        Ok(ArrayValue::new(shape, elements))
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.elements.dtype()
    }

    /// Element `i` in row-major order.
    pub fn get(&self, i: usize) -> Option<Value> {
        self.elements.get(i)
    }

    pub(crate) fn from_tensor(t: &Tensor) -> ArrayValue {
        let mut elements = Elements::zeros(t.dtype, t.data.len());
        for (i, v) in t.data.iter().enumerate() {
            elements.set(i, *v);
        }
        ArrayValue::new(t.shape.clone(), elements)
    }

    pub(crate) fn to_tensor(&self) -> Tensor {
        Tensor {
            dtype: self.dtype(),
            shape: self.shape.clone(),
            data: (0..self.elements.len())
                .filter_map(|i| self.elements.get(i))
                .collect(),
        }
    }
}

/// The deterministic fill for an argument with no input file: element `k`
/// (row-major) of argument `name` is `((k + s) mod 97 + 1) / 97`, where `s`
/// is the sum of the bytes of `name` modulo 97, converted to the dtype
/// (integers take the numerator `(k + s) mod 97 + 1`, booleans are
/// `(k + s)` even, complex numbers take the imaginary part of element
/// `k + 1`). Values are in `(0, 1]`, never zero, and differ between
/// arguments, which keeps divisions defined and catches swapped arguments.
///
/// The shape is a program's, evaluated with its symbols: a size beyond one
/// allocation, or memory the machine refuses, is an error naming the
/// argument ([`ArrayValue::try_zeros`]).
pub fn deterministic_fill(
    name: &str,
    dtype: DType,
    shape: Vec<usize>,
) -> Result<ArrayValue, SimError> {
    let s = name.bytes().map(u64::from).sum::<u64>() % 97;
    let numerator = |k: u64| (k + s) % 97 + 1;
    let ArrayValue {
        shape,
        mut elements,
    } = ArrayValue::try_zeros(name, dtype, shape)?;
    let n = elements.len();
    for k in 0..n as u64 {
        let v = match dtype {
            DType::Bool => Value::Bool((k + s) % 2 == 0),
            d if d.is_integer() => Value::UInt(numerator(k)),
            d if d.is_complex() => Value::Complex(value::C64::new(
                numerator(k) as f64 / 97.0,
                numerator(k + 1) as f64 / 97.0,
            )),
            _ => Value::Float(numerator(k) as f64 / 97.0),
        };
        elements.set(k as usize, v);
    }
    Ok(ArrayValue::new(shape, elements))
}

/// The most bytes one allocation can hold: Rust's bound on the size of an
/// object (`isize::MAX`). A container beyond it can never be allocated,
/// whatever the memory limit says ([`SimError::SizeOverflow`]).
pub const MAX_ALLOCATION_BYTES: u64 = isize::MAX as u64;

/// The bytes of a dense array of `dtype` with `shape`, computed without
/// overflow; `None` where they exceed [`MAX_ALLOCATION_BYTES`].
pub fn allocation_bytes(dtype: DType, shape: &[usize]) -> Option<u64> {
    shape
        .iter()
        .try_fold(dtype.size_bytes(), |acc, &d| {
            acc.checked_mul(u64::try_from(d).ok()?)
        })
        .filter(|&b| b <= MAX_ALLOCATION_BYTES)
}

/// The dtype and concrete shape of every container argument, given symbol
/// values (scalars have shape `[]`). Fails when a shape uses a symbol
/// without a value, when an argument's bytes overflow one allocation
/// ([`SimError::SizeOverflow`], whatever the limit), or when the arguments
/// together need more than `limit` bytes (`None`: no limit), before anyone
/// allocates them.
pub fn argument_shapes(
    sdfg: &sdfg_ir::Sdfg,
    symbols: &BTreeMap<String, i64>,
    limit: Option<u64>,
) -> Result<BTreeMap<String, (DType, Vec<usize>)>, SimError> {
    let mut out = BTreeMap::new();
    let mut total = 0u64;
    for name in &sdfg.arguments {
        let Some(desc) = sdfg.containers.get(name) else {
            continue;
        };
        let shape = if desc.is_scalar() {
            vec![]
        } else {
            desc.shape()
                .iter()
                .map(|e| {
                    let v = e.eval(symbols).map_err(|error| SimError::Eval {
                        at: Location::new(&sdfg.name, "", name),
                        error,
                    })?;
                    usize::try_from(v).map_err(|_| SimError::BadSize {
                        container: name.clone(),
                        size: v,
                    })
                })
                .collect::<Result<Vec<_>, _>>()?
        };
        // The caller makes the arguments before a run could reserve them:
        // together they must fit in `limit` (as every allocation of the run
        // must, `Simulator::max_memory`).
        let bytes = allocation_bytes(desc.dtype, &shape).ok_or_else(|| SimError::SizeOverflow {
            container: name.clone(),
            dtype: desc.dtype,
            shape: shape.iter().map(|&n| n as u64).collect(),
        })?;
        if let Some(limit) = limit
            && total.saturating_add(bytes) > limit
        {
            return Err(SimError::OutOfMemory {
                container: name.clone(),
                bytes,
                used: total,
                limit,
            });
        }
        total = total.saturating_add(bytes);
        out.insert(name.clone(), (desc.dtype, shape));
    }
    Ok(out)
}

/// A host callback: takes its input arrays, returns its output arrays (in
/// connector order), or a message explaining why it failed.
pub type Callback = Box<dyn Fn(&[ArrayValue]) -> Result<Vec<ArrayValue>, String>>;

/// Host callbacks by the name host-callback nodes call them by.
pub type Callbacks = HashMap<String, Callback>;

/// The inputs of a run: symbol values and arrays (scalars are arrays of shape `[]`).
#[derive(Clone, Debug, Default)]
pub struct Arguments {
    /// Symbol values by name.
    pub symbols: BTreeMap<String, i64>,
    /// Array and scalar arguments by container name.
    pub arrays: BTreeMap<String, ArrayValue>,
}

impl Arguments {
    /// Adds a symbol value.
    #[must_use]
    pub fn symbol(mut self, name: &str, value: i64) -> Arguments {
        self.symbols.insert(name.to_owned(), value);
        self
    }

    /// Adds an array (or scalar) argument.
    #[must_use]
    pub fn array(mut self, name: &str, value: ArrayValue) -> Arguments {
        self.arrays.insert(name.to_owned(), value);
        self
    }
}

/// What a run produced.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// Every non-transient container (and `__return*` container) after the run.
    pub outputs: BTreeMap<String, ArrayValue>,
    /// Transfers and launches.
    pub report: RunReport,
}

/// The simulator: a registry of host callbacks and the entry point.
pub struct Simulator {
    callbacks: Callbacks,
    check_races: bool,
    max_memory: Option<u64>,
    step_limit: Option<u64>,
}

/// The memory a run may allocate unless told otherwise
/// ([`Simulator::max_memory`]): 8 GiB, a third of the development machine,
/// ample for every corpus preset the simulator is used with.
pub const DEFAULT_MAX_MEMORY: u64 = 8 << 30;

impl Default for Simulator {
    fn default() -> Simulator {
        Simulator {
            callbacks: Callbacks::default(),
            check_races: false,
            max_memory: Some(DEFAULT_MAX_MEMORY),
            step_limit: None,
        }
    }
}

impl Simulator {
    /// A simulator without callbacks.
    pub fn new() -> Simulator {
        Simulator::default()
    }

    /// Checks every kernel launch for data races: two iterations of a
    /// kernel's map (two GPU threads) touching one element of global device
    /// memory, at least one writing, without the same write-conflict
    /// resolution on both sides. The simulator runs iterations one after the
    /// other, so without this check a race gives a plausible result here and
    /// another on a GPU. Off by default: it logs every access (and runs no
    /// loop fused), which costs time on large inputs.
    pub fn check_races(&mut self, on: bool) -> &mut Simulator {
        self.check_races = on;
        self
    }

    /// Limits the bytes a run allocates in all (`None`: no limit; default
    /// [`DEFAULT_MAX_MEMORY`]): a container beyond it is
    /// [`SimError::OutOfMemory`], naming it, instead of the process
    /// aborting when the allocation fails.
    pub fn max_memory(&mut self, bytes: Option<u64>) -> &mut Simulator {
        self.max_memory = bytes;
        self
    }

    /// Limits the steps a run takes (states run, loop iterations, map
    /// points; `None`, the default: no limit): beyond it the run is
    /// [`SimError::StepLimit`], so a fuzzer or a service running untrusted
    /// programs is never stuck in a loop that does not end.
    pub fn step_limit(&mut self, steps: Option<u64>) -> &mut Simulator {
        self.step_limit = steps;
        self
    }

    /// Registers a host callback under `name`.
    pub fn register(
        &mut self,
        name: &str,
        f: impl Fn(&[ArrayValue]) -> Result<Vec<ArrayValue>, String> + 'static,
    ) -> &mut Simulator {
        self.callbacks.insert(name.to_owned(), Box::new(f));
        self
    }

    /// Runs a validated SDFG. Arguments live where their descriptors say
    /// (host storage, or device storage as if the caller passed a device
    /// pointer); transients are allocated on first use.
    pub fn run(&self, sdfg: Validated<'_>, args: &Arguments) -> Result<RunResult, SimError> {
        let sdfg = sdfg.sdfg();
        let mut machine = exec::Machine::new(&self.callbacks, self.max_memory);
        machine.mem.model = sdfg.memory;
        machine.check_races = self.check_races;
        machine.step_limit = self.step_limit;
        let mut env = machine.env(sdfg, sdfg.name.clone(), Side::Host);
        for name in &sdfg.arguments {
            if sdfg.symbols.contains_key(name) {
                let v = *args
                    .symbols
                    .get(name)
                    .ok_or_else(|| SimError::MissingArgument { name: name.clone() })?;
                let slot = env.info.slots[name];
                env.syms[slot] = v;
                env.defined[slot] = true;
            }
        }
        for name in &sdfg.arguments {
            let Some(desc) = sdfg.containers.get(name) else {
                continue;
            };
            let value = args
                .arrays
                .get(name)
                .ok_or_else(|| SimError::MissingArgument { name: name.clone() })?;
            exec::bind_argument(&mut machine, &mut env, name, desc, value)?;
        }
        machine.run_sdfg(&mut env)?;
        let mut outputs = BTreeMap::new();
        for (name, desc) in &sdfg.containers {
            if desc.transient && !name.starts_with("__return") {
                continue;
            }
            if let Some(v) = exec::read_back(&mut machine, &env, name)? {
                outputs.insert(name.clone(), v);
            }
        }
        Ok(RunResult {
            outputs,
            report: RunReport::from_memory(&machine.mem),
        })
    }
}

/// Where an argument in `storage` lives.
pub(crate) fn argument_space(storage: Storage) -> Side {
    storage.side().unwrap_or(Side::Host)
}
