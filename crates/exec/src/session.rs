//! Running a unit in the caller's process, on the caller's buffers.
//!
//! The [`child`](crate::child) runner suits the harness: every execution
//! gets a process of its own, so a fault of generated code is reported, not
//! suffered, and arguments travel as `.npy` files. A caller that calls a
//! program many times with its own arrays (a NumPy or CuPy user, through
//! the Python package) wants neither the process nor the copies. A
//! [`Session`] is the other way to run the same library with the same
//! [`loader`](crate::loader):
//!
//! - the library is opened once ([`Session::open`]);
//! - `NAME_init` runs once per set of symbol values and its state is kept
//!   (DaCe's compiled programs cache theirs the same way), so a second call
//!   with the same shapes costs one `NAME_run`;
//! - `NAME_run` gets the addresses of the caller's buffers ([`Buffer`]):
//!   host memory the program reads and writes in place, or device memory
//!   (a CuPy array's, or one made with [`Session::device_alloc`]) for a
//!   parameter whose home is the device, passed through without a copy;
//! - every state is released with `NAME_exit` when the session is dropped.
//!
//! Before any call, each buffer is checked against its parameter (dtype,
//! shape evaluated with the symbols, strides, side), so the program indexes
//! only memory the buffer describes. What the checks cannot know is
//! whether the described memory exists: [`Session::run`] is `unsafe` for
//! that reason, and its caller (the Python package, which reads the
//! description from the array's own interface and keeps the array alive
//! across the call) is where that promise is kept.

#![allow(unsafe_code)]

use crate::loader::{Loaded, symbol_bytes};
use crate::{Compiled, ExecError};
use sdfg_codegen::{Parameter, ParameterKind};
use sdfg_ir::{DType, Side, SymExpr};
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::ptr::NonNull;

/// A caller's buffer: where an array's elements are and how they are laid
/// out, as NumPy's `__array_interface__` and CuPy's
/// `__cuda_array_interface__` describe them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Buffer {
    /// The address of element zero.
    pub address: usize,
    /// The element type.
    pub dtype: DType,
    /// The extent of each dimension (empty for a scalar).
    pub shape: Vec<usize>,
    /// The distance in *elements* between consecutive indices of each
    /// dimension (NumPy's byte strides divided by the item size).
    pub strides: Vec<i64>,
    /// Which memory the address is in.
    pub side: Side,
}

impl Buffer {
    /// A row-major contiguous buffer of `shape`.
    pub fn contiguous(address: usize, dtype: DType, shape: Vec<usize>, side: Side) -> Buffer {
        let strides = row_major(&shape);
        Buffer {
            address,
            dtype,
            shape,
            strides,
            side,
        }
    }

    /// The number of elements from element zero to the last one, inclusive
    /// (0 for an empty array): what the buffer must hold.
    fn span(&self) -> u128 {
        if self.shape.contains(&0) {
            return 0;
        }
        1 + self
            .shape
            .iter()
            .zip(&self.strides)
            .map(|(n, s)| (*n as u128 - 1) * u128::from(s.unsigned_abs()))
            .sum::<u128>()
    }
}

/// The row-major strides of `shape`, in elements.
fn row_major(shape: &[usize]) -> Vec<i64> {
    let mut strides = vec![1i64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1].saturating_mul(i64::try_from(shape[d + 1]).unwrap_or(i64::MAX));
    }
    strides
}

/// The value a call gives one parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A container or return value: the caller's buffer.
    Buffer(Buffer),
    /// A symbol.
    Symbol(i64),
}

/// A loaded unit with its states, one per set of symbol values.
pub struct Session {
    loaded: Loaded,
    /// `NAME_init`'s state for each tuple of init-symbol values.
    states: BTreeMap<Vec<i64>, NonNull<c_void>>,
}

// SAFETY: the states are handles of the library's own, used only through
// `&mut self`; the emitted entry points keep no thread-local state, so a
// session may move to another thread (Python's threads hand it around).
unsafe impl Send for Session {}

impl Session {
    /// Opens the compiled unit (its library and entry points).
    pub fn open(compiled: &Compiled) -> Result<Session, ExecError> {
        Ok(Session {
            loaded: Loaded::open(compiled)?,
            states: BTreeMap::new(),
        })
    }

    /// The entry points' parameters, in order.
    pub fn parameters(&self) -> &[Parameter] {
        &self.loaded.compiled().parameters
    }

    /// How many states `NAME_init` has made and the session keeps (one per
    /// set of symbol values it was run with).
    pub fn states(&self) -> usize {
        self.states.len()
    }

    /// The symbols of a call ([`bind`] over this unit's parameters).
    pub fn bind(
        &self,
        buffers: &[Option<&Buffer>],
        given: &BTreeMap<String, i64>,
    ) -> Result<BTreeMap<String, i64>, ExecError> {
        bind(self.parameters(), buffers, given)
    }

    /// The shape of parameter `index` with `symbols` ([`shape`]).
    pub fn shape(
        &self,
        index: usize,
        symbols: &BTreeMap<String, i64>,
    ) -> Result<Vec<usize>, ExecError> {
        shape(self.parameters(), index, symbols)
    }

    /// Runs `NAME_run` on `values` (one per parameter, in order), after
    /// `NAME_init` for their symbols where no state has them yet; returns
    /// the program's status (`sdfg_codegen::status`). A host buffer given
    /// for a parameter whose home is the device is copied there and back
    /// around the run; a device buffer for a host parameter is refused.
    ///
    /// # Safety
    ///
    /// Each [`Buffer`] must describe memory that exists and that the
    /// program may read and write for the whole call: `address` points to
    /// element zero of an allocation on `side` holding every element the
    /// shape and strides reach, of the buffer's dtype. (The checks here
    /// make sure those are the only elements the program touches.)
    pub unsafe fn run(&mut self, values: &[Value]) -> Result<i32, ExecError> {
        let parameters = &self.loaded.compiled().parameters;
        let (_, bytes) = checked(parameters, values)?;
        let mut staged: Vec<Staging> = Vec::new();
        for (k, ((p, v), bytes)) in parameters.iter().zip(values).zip(bytes).enumerate() {
            if let Value::Buffer(b) = v
                && p.home == Side::Device
                && b.side == Side::Host
            {
                staged.push(Staging {
                    index: k,
                    host: b.address,
                    bytes,
                    device: None,
                });
            }
        }
        let key: Vec<i64> = values
            .iter()
            .filter_map(|v| match v {
                Value::Symbol(x) => Some(*x),
                Value::Buffer(_) => None,
            })
            .collect();
        let handle = match self.states.get(&key) {
            Some(h) => *h,
            None => {
                let h = self.init(&key)?;
                self.states.insert(key, h);
                h
            }
        };
        let loaded = &self.loaded;
        let release = |staged: &mut Vec<Staging>| {
            for s in staged.iter_mut() {
                if let Some(d) = s.device.take() {
                    // SAFETY: a buffer from `device_alloc`, released once.
                    unsafe { loaded.device_free(d.as_ptr()) };
                }
            }
        };
        for i in 0..staged.len() {
            let device = match loaded.device_alloc(staged[i].bytes) {
                Ok(d) => d,
                Err(e) => {
                    release(&mut staged);
                    return Err(e);
                }
            };
            staged[i].device = Some(device);
            let Staging {
                index, host, bytes, ..
            } = staged[i];
            // SAFETY: `device` holds `bytes` bytes of device memory; the
            // caller promises `host` holds as many (checked: contiguous).
            let status =
                unsafe { loaded.device_copy(device.as_ptr(), host as *const c_void, bytes, true) };
            if status != 0 {
                release(&mut staged);
                return Err(ExecError::Device {
                    call: format!("{}_device_copy", loaded.compiled().entry),
                    message: format!("copying `{}` to the device failed", parameters[index].name),
                });
            }
        }
        let mut slots: Vec<[u8; 8]> = Vec::with_capacity(values.len());
        for (k, (p, v)) in parameters.iter().zip(values).enumerate() {
            slots.push(match (p.kind, v) {
                (ParameterKind::Symbol(t), Value::Symbol(x)) => symbol_bytes(t, *x, &p.name)?,
                (_, Value::Buffer(b)) => {
                    let address = staged
                        .iter()
                        .find(|s| s.index == k)
                        .and_then(|s| s.device)
                        .map_or(b.address, |d| d.as_ptr() as usize);
                    (address as u64).to_ne_bytes()
                }
                _ => unreachable!("checked above"),
            });
        }
        let mut addresses: Vec<*mut c_void> = slots
            .iter_mut()
            .map(|s| s.as_mut_ptr().cast::<c_void>())
            .collect();
        // SAFETY: `handle` came from this library's `init` and is alive;
        // `addresses[k]` is the address of parameter `k`'s value (a
        // symbol's bytes in its type's width, or a pointer the caller
        // vouches for, checked against the parameter above).
        let status = unsafe { loaded.run_packed(handle, addresses.as_mut_ptr()) };
        let mut failed = None;
        for s in &mut staged {
            let Some(device) = s.device else { continue };
            // SAFETY: as above, in the other direction.
            let copied = unsafe {
                loaded.device_copy(s.host as *mut c_void, device.as_ptr(), s.bytes, false)
            };
            if copied != 0 && failed.is_none() {
                failed = Some(parameters[s.index].name.clone());
            }
        }
        release(&mut staged);
        if let Some(name) = failed {
            return Err(ExecError::Device {
                call: format!("{}_device_copy", loaded.compiled().entry),
                message: format!("reading `{name}` back from the device failed"),
            });
        }
        Ok(status)
    }

    /// `NAME_init` for the init symbols' values `key`, in order.
    fn init(&self, key: &[i64]) -> Result<NonNull<c_void>, ExecError> {
        let mut values = self
            .loaded
            .compiled()
            .parameters
            .iter()
            .filter_map(|p| match p.kind {
                ParameterKind::Symbol(t) => Some((t, p)),
                _ => None,
            })
            .zip(key)
            .map(|((t, p), v)| symbol_bytes(t, *v, &p.name))
            .collect::<Result<Vec<[u8; 8]>, _>>()?;
        let addresses: Vec<*mut c_void> = values
            .iter_mut()
            .map(|v| v.as_mut_ptr().cast::<c_void>())
            .collect();
        // SAFETY: `addresses[k]` is the address of init symbol `k`'s value
        // in its type's width, alive for the call.
        let handle = unsafe { self.loaded.init_packed(addresses.as_ptr()) };
        NonNull::new(handle).ok_or_else(|| ExecError::Init {
            entry: self.loaded.compiled().entry.clone(),
            messages: "(what it printed is on standard error)".to_owned(),
            live: None,
        })
    }

    /// `bytes` bytes of the unit's device memory (its own runtime's
    /// allocation: on the emulated GPU, its device heap), for an array
    /// whose home is the device; released with [`Session::device_free`].
    /// This is what the Python package's stand-in device arrays hold, so
    /// that the path of a CuPy array is exercised without a GPU.
    pub fn device_alloc(&self, bytes: usize) -> Result<usize, ExecError> {
        self.loaded.device_alloc(bytes).map(|p| p.as_ptr() as usize)
    }

    /// Copies `bytes` bytes between host memory and device memory made
    /// by [`Session::device_alloc`] (`to_device`: from `host` to
    /// `device`).
    ///
    /// # Safety
    ///
    /// `host` must hold `bytes` bytes of host memory, `device` as many of
    /// this session's device memory.
    pub unsafe fn device_copy(
        &self,
        device: usize,
        host: usize,
        bytes: usize,
        to_device: bool,
    ) -> Result<(), ExecError> {
        let (to, from) = if to_device {
            (device, host)
        } else {
            (host, device)
        };
        // SAFETY: the caller's promise.
        let status = unsafe {
            self.loaded
                .device_copy(to as *mut c_void, from as *const c_void, bytes, to_device)
        };
        if status != 0 {
            return Err(ExecError::Device {
                call: format!("{}_device_copy", self.loaded.compiled().entry),
                message: format!("copying {bytes} bytes failed (status {status})"),
            });
        }
        Ok(())
    }

    /// Releases device memory made by [`Session::device_alloc`].
    ///
    /// # Safety
    ///
    /// `device` came from this session's `device_alloc` and is released
    /// once.
    pub unsafe fn device_free(&self, device: usize) {
        // SAFETY: the caller's promise.
        unsafe { self.loaded.device_free(device as *mut c_void) };
    }

    /// The emulated runtime's report (JSON: what it counted since the last
    /// [`Session::reset_counts`], and what is live), in an emulated build.
    pub fn emulation_report(&self) -> Option<String> {
        self.loaded.emulation_report()
    }

    /// Zeroes the emulated runtime's counts, in an emulated build.
    pub fn reset_counts(&self) {
        self.loaded.emulation_reset();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        for (_, handle) in std::mem::take(&mut self.states) {
            // SAFETY: each handle came from this library's `init` and is
            // released once; the library outlives this loop.
            unsafe { self.loaded.exit_packed(handle) };
        }
    }
}

/// The symbols' values for a call of a unit with `parameters`: those
/// `given` by name, and those read off the buffers, as DaCe infers them: a
/// dimension whose extent (or, for a laid-out parameter, whose stride) is a
/// bare symbol binds it to the buffer's. `buffers` has one entry per
/// parameter (`None` for symbols and for return values, whose buffers the
/// caller makes after this, from [`shape`]). A symbol given twice with
/// different values, or one neither given nor inferable, is an error
/// naming it.
pub fn bind(
    parameters: &[Parameter],
    buffers: &[Option<&Buffer>],
    given: &BTreeMap<String, i64>,
) -> Result<BTreeMap<String, i64>, ExecError> {
    if buffers.len() != parameters.len() {
        return Err(arity(buffers.len(), parameters.len()));
    }
    let mut symbols = given.clone();
    let mut bind = |name: &str, value: i64, why: String| -> Result<(), ExecError> {
        match symbols.insert(name.to_owned(), value) {
            Some(old) if old != value => Err(ExecError::Argument {
                parameter: name.to_owned(),
                message: format!("{why} gives {value}, but it is {old}"),
            }),
            _ => Ok(()),
        }
    };
    for (p, b) in parameters.iter().zip(buffers) {
        let Some(b) = b else { continue };
        let (extents, strides) = match &p.layout {
            Some(l) => (&l.shape, Some(&l.strides)),
            None => (&p.shape, None),
        };
        if b.shape.len() != extents.len() {
            continue; // said by `check` with the whole shape
        }
        for (d, (e, n)) in extents.iter().zip(&b.shape).enumerate() {
            if let Some(s) = e.is_symbol() {
                let n = i64::try_from(*n).unwrap_or(i64::MAX);
                bind(s, n, format!("dimension {d} of `{}`", p.name))?;
            }
        }
        for (d, (e, n)) in strides.into_iter().flatten().zip(&b.strides).enumerate() {
            if let Some(s) = e.is_symbol()
                && b.shape.get(d).is_some_and(|n| *n > 1)
            {
                bind(
                    s,
                    *n,
                    format!("the stride of dimension {d} of `{}`", p.name),
                )?;
            }
        }
    }
    if let Some(p) = parameters
        .iter()
        .find(|p| matches!(p.kind, ParameterKind::Symbol(_)) && !symbols.contains_key(&p.name))
    {
        return Err(ExecError::Argument {
            parameter: p.name.clone(),
            message: "this symbol is neither given nor the extent of an argument's dimension"
                .to_owned(),
        });
    }
    Ok(symbols)
}

/// The shape of parameter `index` of `parameters` with `symbols` (a return
/// value's, for the caller to allocate).
pub fn shape(
    parameters: &[Parameter],
    index: usize,
    symbols: &BTreeMap<String, i64>,
) -> Result<Vec<usize>, ExecError> {
    let p = parameters
        .get(index)
        .ok_or_else(|| arity(index + 1, parameters.len()))?;
    evaluate(&p.name, &p.shape, symbols)
}

/// The values' symbols by name, and each buffer checked against its
/// parameter ([`check`]): its bytes, per parameter (0 for symbols).
fn checked(
    parameters: &[Parameter],
    values: &[Value],
) -> Result<(BTreeMap<String, i64>, Vec<usize>), ExecError> {
    if values.len() != parameters.len() {
        return Err(arity(values.len(), parameters.len()));
    }
    let symbols: BTreeMap<String, i64> = parameters
        .iter()
        .zip(values)
        .filter_map(|(p, v)| match v {
            Value::Symbol(x) => Some((p.name.clone(), *x)),
            Value::Buffer(_) => None,
        })
        .collect();
    let mut bytes = Vec::with_capacity(values.len());
    for (p, v) in parameters.iter().zip(values) {
        bytes.push(match (p.kind, v) {
            (ParameterKind::Symbol(t), Value::Symbol(x)) => {
                symbol_bytes(t, *x, &p.name)?;
                0
            }
            (ParameterKind::Container(_) | ParameterKind::Return(_), Value::Buffer(b)) => {
                check(p, b, &symbols)?
            }
            (ParameterKind::Symbol(_), Value::Buffer(_)) => {
                return Err(argument(&p.name, "an array for a symbol".to_owned()));
            }
            (_, Value::Symbol(_)) => {
                return Err(argument(&p.name, "a symbol for an array".to_owned()));
            }
        });
    }
    Ok((symbols, bytes))
}

/// The SDFG a unit is emitted from, run on the simulator (`sdfg-sim`)
/// instead of a device, with the unit's own parameters
/// ([`sdfg_codegen::signature`]): the Python package's `device="sim"`,
/// which checks a program's answer without any compiler, and faults with
/// the simulator's messages (an access out of bounds, an uninitialised
/// read) where the emitted code would compute garbage.
pub struct SimSession {
    sdfg: sdfg_ir::ValidSdfg,
    parameters: Vec<Parameter>,
    sim_arguments: Vec<String>,
}

impl SimSession {
    /// A session running `sdfg` (offloaded, as for emission).
    pub fn new(sdfg: sdfg_ir::ValidSdfg) -> Result<SimSession, sdfg_codegen::EmitError> {
        let parameters = sdfg_codegen::signature(&sdfg)?;
        let sim_arguments = sdfg.arguments.clone();
        Ok(SimSession {
            sdfg,
            parameters,
            sim_arguments,
        })
    }

    /// The parameters, as the unit's entry points would take them.
    pub fn parameters(&self) -> &[Parameter] {
        &self.parameters
    }

    /// Runs the SDFG on `values` (one per parameter, in order, host
    /// memory only): the buffers are read into the simulator's arrays and
    /// what it wrote is written back. Returns 0 (the unit's status for
    /// success); a fault of the simulation is an error.
    ///
    /// # Safety
    ///
    /// As for [`Session::run`].
    pub unsafe fn run(&self, values: &[Value]) -> Result<i32, ExecError> {
        let (symbols, bytes) = checked(&self.parameters, values)?;
        let shapes = sdfg_sim::argument_shapes(&self.sdfg, &symbols, None).map_err(|e| {
            ExecError::Device {
                call: "the simulator".to_owned(),
                message: e.to_string(),
            }
        })?;
        let mut arguments = sdfg_sim::Arguments {
            symbols: symbols.clone(),
            ..Default::default()
        };
        for ((p, v), n) in self.parameters.iter().zip(values).zip(&bytes) {
            let Value::Buffer(b) = v else { continue };
            if b.side == Side::Device {
                return Err(argument(
                    &p.name,
                    "device memory, but the simulator runs on host memory".to_owned(),
                ));
            }
            if !matches!(p.kind, ParameterKind::Container(_))
                || !self.sim_arguments.contains(&p.name)
            {
                continue;
            }
            let Some((dtype, shape)) = shapes.get(&p.name) else {
                continue;
            };
            // SAFETY: the caller's promise: `address` holds `n` bytes
            // (`check` computed them from the buffer's own description).
            let memory = unsafe { std::slice::from_raw_parts(b.address as *const u8, *n) };
            let count = n / dtype.size_bytes() as usize;
            let mut elements = sdfg_sim::value::Elements::zeros(*dtype, count);
            crate::loader::set_from_bytes(&mut elements, memory, &p.name)?;
            arguments.arrays.insert(
                p.name.clone(),
                sdfg_sim::ArrayValue::new(shape.clone(), elements),
            );
        }
        let result = sdfg_sim::Simulator::new()
            .run(self.sdfg.validated(), &arguments)
            .map_err(|e| ExecError::Device {
                call: "the simulator".to_owned(),
                message: e.to_string(),
            })?;
        for ((p, v), n) in self.parameters.iter().zip(values).zip(&bytes) {
            let (Value::Buffer(b), Some(out)) = (v, result.outputs.get(&p.name)) else {
                continue;
            };
            let written = crate::loader::host_bytes(&out.elements);
            if written.len() != *n {
                return Err(argument(
                    &p.name,
                    format!("the simulator wrote {} bytes for {n}", written.len()),
                ));
            }
            // SAFETY: as above; `written` holds exactly `n` bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(written.as_ptr(), b.address as *mut u8, *n);
            }
        }
        Ok(0)
    }
}

/// A host buffer of a device-home parameter, copied to the device for a run.
#[derive(Clone, Copy)]
struct Staging {
    index: usize,
    host: usize,
    bytes: usize,
    device: Option<NonNull<c_void>>,
}

fn argument(parameter: &str, message: String) -> ExecError {
    ExecError::Argument {
        parameter: parameter.to_owned(),
        message,
    }
}

fn arity(given: usize, expected: usize) -> ExecError {
    argument("(all)", format!("{given} values for {expected} parameters"))
}

/// `exprs` evaluated with `symbols`, each a non-negative extent.
fn evaluate(
    name: &str,
    exprs: &[SymExpr],
    symbols: &BTreeMap<String, i64>,
) -> Result<Vec<usize>, ExecError> {
    exprs
        .iter()
        .map(|e| {
            let n = e
                .eval(symbols)
                .map_err(|e| argument(name, format!("its shape cannot be evaluated: {e}")))?;
            usize::try_from(n).map_err(|_| argument(name, format!("an extent is {n}")))
        })
        .collect()
}

/// Checks `b` against `p` with `symbols`: its dtype, shape and strides (the
/// layout's, else row-major; a dimension of extent 1 may have any stride),
/// its side (device memory only for a parameter whose home is the device),
/// and for a laid-out parameter that it holds the layout's `total_size`
/// elements. Returns the bytes the program may touch.
fn check(p: &Parameter, b: &Buffer, symbols: &BTreeMap<String, i64>) -> Result<usize, ExecError> {
    let bad = |message: String| argument(&p.name, message);
    let (ParameterKind::Container(t) | ParameterKind::Return(t)) = p.kind else {
        return Err(bad("an array for a symbol".to_owned()));
    };
    if b.dtype != t {
        return Err(bad(format!("a {} array for a {t} parameter", b.dtype)));
    }
    if b.side == Side::Device && p.home == Side::Host {
        return Err(bad(
            "device memory for a parameter whose home is the host (compile with the arguments on the device, or pass host memory)"
                .to_owned(),
        ));
    }
    let (shape, strides, total) = match &p.layout {
        Some(l) => {
            let offset = l
                .offset
                .eval(symbols)
                .map_err(|e| bad(format!("its offset cannot be evaluated: {e}")))?;
            if offset != 0 {
                return Err(bad(format!(
                    "its layout starts {offset} elements into its allocation, which an array's interface cannot describe"
                )));
            }
            let strides = l
                .strides
                .iter()
                .map(|s| {
                    s.eval(symbols)
                        .map_err(|e| bad(format!("its strides cannot be evaluated: {e}")))
                })
                .collect::<Result<Vec<i64>, _>>()?;
            let total = evaluate(&p.name, std::slice::from_ref(&l.total_size), symbols)?[0];
            (evaluate(&p.name, &l.shape, symbols)?, strides, Some(total))
        }
        None => {
            let shape = evaluate(&p.name, &p.shape, symbols)?;
            let strides = row_major(&shape);
            (shape, strides, None)
        }
    };
    if b.shape != shape {
        return Err(bad(format!(
            "shape {:?}, but the program expects {shape:?}",
            b.shape
        )));
    }
    if b.strides.len() != shape.len() {
        return Err(bad(format!(
            "{} strides for {} dimensions",
            b.strides.len(),
            shape.len()
        )));
    }
    if let Some(d) = (0..shape.len()).find(|&d| shape[d] > 1 && b.strides[d] != strides[d]) {
        return Err(bad(format!(
            "strides {:?} (in elements), but the program indexes it with strides {strides:?} (dimension {d} differs: pass a copy in that layout, e.g. numpy.ascontiguousarray)",
            b.strides
        )));
    }
    let size = t.size_bytes() as u128;
    let elements = match total {
        Some(total) => {
            if b.span() < total as u128 && !shape.contains(&0) {
                return Err(bad(format!(
                    "it reaches {} elements, but its layout allocates {total}",
                    b.span()
                )));
            }
            total as u128
        }
        None => b.span(),
    };
    usize::try_from(elements * size).map_err(|_| bad("its size in bytes does not fit".to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_major_strides_and_spans() {
        assert_eq!(row_major(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(row_major(&[]), Vec::<i64>::new());
        let b = Buffer::contiguous(0, DType::Float64, vec![2, 3], Side::Host);
        assert_eq!(b.span(), 6);
        let empty = Buffer::contiguous(0, DType::Float64, vec![0, 3], Side::Host);
        assert_eq!(empty.span(), 0);
        let scalar = Buffer::contiguous(0, DType::Float64, vec![], Side::Host);
        assert_eq!(scalar.span(), 1);
    }
}
