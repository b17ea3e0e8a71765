//! Loading a compiled unit and calling its entry points.
//!
//! This module is the only one in the workspace that uses `unsafe`: it opens
//! a shared library with `libloading` and calls the packed entry points
//! every emitted unit exports (`docs/codegen.md`, "The entry points"):
//!
//! ```c
//! NAME_state_t* NAME_init_packed(void* const* symbols);
//! int NAME_run_packed(NAME_state_t* state, void* const* arguments);
//! int NAME_exit(NAME_state_t* state);
//! ```
//!
//! where element `k` of each array is the *address* of parameter `k`'s value
//! (a pointer for a container, an integer of the symbol's type for a
//! symbol), as the runtimes' `LaunchKernel` takes kernel arguments. Before
//! any call, [`check_arguments`] has made sure that
//! each argument has its parameter's kind and dtype and exactly the elements
//! the program will index, so the program reads and writes only memory these
//! arguments own.

#![allow(unsafe_code)]

use crate::{Argument, Compiled, ExecError, check_arguments};
use sdfg_codegen::ParameterKind;
use sdfg_ir::DType;
use sdfg_sim::value::Elements;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::ptr::NonNull;

type InitFn = unsafe extern "C" fn(*const *mut c_void) -> *mut c_void;
type RunFn = unsafe extern "C" fn(*mut c_void, *const *mut c_void) -> c_int;
type ExitFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type ReportFn = unsafe extern "C" fn() -> *const c_char;
type ResetFn = unsafe extern "C" fn();
type DeviceAllocFn = unsafe extern "C" fn(usize) -> *mut c_void;
type DeviceCopyFn = unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int) -> c_int;
type DeviceFreeFn = unsafe extern "C" fn(*mut c_void) -> c_int;

/// The unit's own device memory functions (`NAME_device_alloc`,
/// `NAME_device_copy`, `NAME_device_free`), exported by a unit with
/// arguments whose home is the device.
#[derive(Clone, Copy)]
struct DeviceMemory {
    alloc: DeviceAllocFn,
    copy: DeviceCopyFn,
    free: DeviceFreeFn,
}

/// A loaded unit: its library and entry points.
pub struct Loaded {
    compiled: Compiled,
    init: InitFn,
    run: RunFn,
    exit: ExitFn,
    report: Option<ReportFn>,
    reset: Option<ResetFn>,
    device: Option<DeviceMemory>,
    // Never closed: the function pointers above point into it, and a unit
    // once loaded stays loaded for the life of the process, as CPython
    // never unloads an extension module. The emulated runtime's state is
    // C++ inline variables, which GCC makes unique across every library
    // of the process (one emulated GPU for all units, like one device
    // context), registering its destructors in the library that loaded
    // first and its SIGSEGV handler in each: unloading a unit would free
    // state the others still use (a use after free in the Python
    // package's process, found by its tests) and leave the fault handler
    // pointing at unmapped code.
    _library: std::mem::ManuallyDrop<libloading::Library>,
}

/// The state `NAME_init` made, released by [`Loaded::exit`].
pub struct State<'a> {
    handle: NonNull<c_void>,
    symbols: Vec<Argument>,
    loaded: &'a Loaded,
}

impl Loaded {
    /// Opens the library of `compiled` and finds its entry points.
    pub fn open(compiled: &Compiled) -> Result<Loaded, ExecError> {
        let load_error = |message: String| ExecError::Load {
            library: compiled.library.clone(),
            message,
        };
        // SAFETY: opening a library runs its static initializers. The library
        // is an emitted translation unit compiled by a `Device`; its
        // initializers are those of the C++ runtime (or the emulation's
        // headers), which have no preconditions.
        let library = unsafe { libloading::Library::new(&compiled.library) }
            .map_err(|e| load_error(e.to_string()))?;
        let entry = &compiled.entry;
        // SAFETY (all four lookups): the types are those `sdfg-codegen`
        // emits for these names (see the module documentation); a library
        // that exports the names with other types was not emitted by it.
        let init = unsafe { library.get::<InitFn>(format!("{entry}_init_packed").as_bytes()) }
            .map(|s| *s)
            .map_err(|e| load_error(e.to_string()))?;
        let run = unsafe { library.get::<RunFn>(format!("{entry}_run_packed").as_bytes()) }
            .map(|s| *s)
            .map_err(|e| load_error(e.to_string()))?;
        let exit = unsafe { library.get::<ExitFn>(format!("{entry}_exit").as_bytes()) }
            .map(|s| *s)
            .map_err(|e| load_error(e.to_string()))?;
        // The emulated runtime's report, present only in emulated builds.
        let report = unsafe { library.get::<ReportFn>(b"sdfg_emulation_report") }
            .ok()
            .map(|s| *s);
        let reset = unsafe { library.get::<ResetFn>(b"sdfg_emulation_reset") }
            .ok()
            .map(|s| *s);
        // SAFETY (the three lookups): the types `sdfg-codegen` emits for
        // these names, where a parameter's home is the device.
        let device = match (
            unsafe { library.get::<DeviceAllocFn>(format!("{entry}_device_alloc").as_bytes()) },
            unsafe { library.get::<DeviceCopyFn>(format!("{entry}_device_copy").as_bytes()) },
            unsafe { library.get::<DeviceFreeFn>(format!("{entry}_device_free").as_bytes()) },
        ) {
            (Ok(alloc), Ok(copy), Ok(free)) => Some(DeviceMemory {
                alloc: *alloc,
                copy: *copy,
                free: *free,
            }),
            _ => None,
        };
        if device.is_none()
            && let Some(p) = compiled
                .parameters
                .iter()
                .find(|p| p.home == sdfg_ir::Side::Device)
        {
            return Err(load_error(format!(
                "the parameter `{}` lives on the device, but the library exports no `{entry}_device_alloc`",
                p.name
            )));
        }
        Ok(Loaded {
            compiled: compiled.clone(),
            init,
            run,
            exit,
            report,
            reset,
            device,
            _library: std::mem::ManuallyDrop::new(library),
        })
    }

    /// Calls `NAME_init` with the symbols among `arguments` (all of them,
    /// checked against the parameters first).
    pub fn init(&self, arguments: &[Argument]) -> Result<State<'_>, ExecError> {
        let parameters = &self.compiled.parameters;
        check_arguments(parameters, arguments)?;
        let symbols: Vec<(DType, i64)> = parameters
            .iter()
            .zip(arguments)
            .filter_map(|(p, a)| match (p.kind, a) {
                (ParameterKind::Symbol(t), Argument::Symbol(v)) => Some((t, *v)),
                _ => None,
            })
            .collect();
        let mut values = symbols
            .iter()
            .zip(
                parameters
                    .iter()
                    .filter(|p| matches!(p.kind, ParameterKind::Symbol(_))),
            )
            .map(|((t, v), p)| symbol_bytes(*t, *v, &p.name))
            .collect::<Result<Vec<[u8; 8]>, _>>()?;
        let addresses: Vec<*mut c_void> = values
            .iter_mut()
            .map(|v| v.as_mut_ptr().cast::<c_void>())
            .collect();
        // SAFETY: `addresses[k]` is the address of symbol `k`'s value, in
        // the width and byte order of its type, alive for the call.
        let handle = unsafe { (self.init)(addresses.as_ptr()) };
        let handle = NonNull::new(handle).ok_or_else(|| ExecError::Init {
            entry: self.compiled.entry.clone(),
            messages: String::new(),
            live: None,
        })?;
        Ok(State {
            handle,
            symbols: arguments
                .iter()
                .filter(|a| matches!(a, Argument::Symbol(_)))
                .cloned()
                .collect(),
            loaded: self,
        })
    }

    /// Device buffers for the arguments whose home is the device
    /// ([`Parameter::home`](sdfg_codegen::Parameter::home)), allocated
    /// with the unit's own runtime and filled from `arguments`: what a
    /// caller whose data already lives on the GPU (a CuPy array) passes.
    /// Staged before a run, so the run's counts and time are the
    /// program's alone; [`Loaded::unstage`] reads them back.
    pub fn stage(&self, arguments: &[Argument]) -> Result<Staged<'_>, ExecError> {
        check_arguments(&self.compiled.parameters, arguments)?;
        let mut staged = Staged {
            buffers: Vec::with_capacity(arguments.len()),
            loaded: self,
        };
        for (p, a) in self.compiled.parameters.iter().zip(arguments) {
            let (Some(device), sdfg_ir::Side::Device, Argument::Array(v)) =
                (self.device, p.home, a)
            else {
                staged.buffers.push(None);
                continue;
            };
            let mut bytes = host_bytes(&v.elements);
            // SAFETY: the unit's `NAME_device_alloc` takes a byte count and
            // returns device memory of that size, or null.
            let buffer = NonNull::new(unsafe { (device.alloc)(bytes.len()) }).ok_or_else(|| {
                ExecError::Device {
                    call: format!("{}_device_alloc", self.compiled.entry),
                    message: format!("no device memory for `{}` ({} bytes)", p.name, bytes.len()),
                }
            })?;
            staged.buffers.push(Some((buffer, bytes.len())));
            // SAFETY: `buffer` holds `bytes.len()` bytes of device memory;
            // `bytes` as many of host memory.
            let status = unsafe {
                (device.copy)(buffer.as_ptr(), bytes.as_mut_ptr().cast(), bytes.len(), 1)
            };
            if status != 0 {
                return Err(ExecError::Device {
                    call: format!("{}_device_copy", self.compiled.entry),
                    message: format!("copying `{}` to the device failed", p.name),
                });
            }
        }
        Ok(staged)
    }

    /// Reads the arguments whose home is the device back into
    /// `arguments` and releases their device buffers.
    pub fn unstage(
        &self,
        mut staged: Staged<'_>,
        arguments: &mut [Argument],
    ) -> Result<(), ExecError> {
        let Some(device) = self.device else {
            return Ok(());
        };
        let buffers = std::mem::take(&mut staged.buffers);
        for ((p, a), buffer) in self.compiled.parameters.iter().zip(arguments).zip(buffers) {
            let (Some((buffer, len)), Argument::Array(v)) = (buffer, a) else {
                continue;
            };
            let mut bytes = vec![0u8; len];
            // SAFETY: as in `stage`, in the other direction.
            let copied =
                unsafe { (device.copy)(bytes.as_mut_ptr().cast(), buffer.as_ptr(), len, 0) };
            // SAFETY: the buffer came from `NAME_device_alloc`, released once.
            let freed = unsafe { (device.free)(buffer.as_ptr()) };
            if copied != 0 || freed != 0 {
                return Err(ExecError::Device {
                    call: format!("{}_device_copy", self.compiled.entry),
                    message: format!("reading `{}` back from the device failed", p.name),
                });
            }
            set_from_bytes(&mut v.elements, &bytes, &p.name)?;
        }
        Ok(())
    }

    /// Calls `NAME_run` on `state` with `arguments`, which the program
    /// updates (those whose home is the device through `staged`, read
    /// back by [`Loaded::unstage`]); returns its status.
    pub fn run(
        &self,
        state: &State<'_>,
        arguments: &mut [Argument],
        staged: &Staged<'_>,
    ) -> Result<i32, ExecError> {
        let parameters = &self.compiled.parameters;
        check_arguments(parameters, arguments)?;
        if !std::ptr::eq(state.loaded, self) {
            return Err(ExecError::Argument {
                parameter: "(state)".to_owned(),
                message: "a state made by another library".to_owned(),
            });
        }
        let given: Vec<&Argument> = arguments
            .iter()
            .filter(|a| matches!(a, Argument::Symbol(_)))
            .collect();
        if given.len() != state.symbols.len()
            || given.iter().zip(&state.symbols).any(|(a, b)| *a != b)
        {
            // The program refuses this too (status 3); say it here first.
            return Err(ExecError::Argument {
                parameter: "(symbols)".to_owned(),
                message: "the symbols differ from those `init` was given".to_owned(),
            });
        }
        // One slot per parameter: a data pointer or a symbol's bytes. Bool
        // arrays go through bytes: a byte the program never wrote may hold
        // the device's poison, which is no `bool`.
        let mut pointers: Vec<*mut c_void> = Vec::with_capacity(arguments.len());
        let mut symbols: Vec<[u8; 8]> = Vec::with_capacity(arguments.len());
        let mut bytes: Vec<Vec<u8>> = Vec::with_capacity(arguments.len());
        for (k, (p, a)) in parameters.iter().zip(arguments.iter_mut()).enumerate() {
            let mut staged_bytes = Vec::new();
            match (p.kind, a) {
                (ParameterKind::Symbol(t), Argument::Symbol(v)) => {
                    symbols.push(symbol_bytes(t, *v, &p.name)?);
                    pointers.push(std::ptr::null_mut());
                }
                (_, Argument::Array(_)) if let Some(Some((buffer, _))) = staged.buffers.get(k) => {
                    pointers.push(buffer.as_ptr());
                    symbols.push([0; 8]);
                }
                (_, Argument::Array(v)) => {
                    if let Elements::Bool(b) = &v.elements {
                        staged_bytes = b.iter().map(|x| u8::from(*x)).collect();
                        pointers.push(staged_bytes.as_mut_ptr().cast());
                    } else {
                        pointers.push(data_pointer(&mut v.elements));
                    }
                    symbols.push([0; 8]);
                }
                (_, Argument::Symbol(_)) => unreachable!("checked by check_arguments"),
            }
            bytes.push(staged_bytes);
        }
        let addresses: Vec<*mut c_void> = parameters
            .iter()
            .enumerate()
            .map(|(k, p)| match p.kind {
                ParameterKind::Symbol(_) => symbols[k].as_mut_ptr().cast::<c_void>(),
                _ => std::ptr::addr_of_mut!(pointers[k]).cast::<c_void>(),
            })
            .collect();
        // SAFETY: `state` came from this library's `init`; `addresses[k]` is
        // the address of parameter `k`'s value: a pointer to the array's
        // elements (of the parameter's dtype, as many as its shape has,
        // checked above) or a symbol's bytes. `pointers` and `symbols` are
        // not moved or resized while the call runs.
        let status = unsafe { (self.run)(state.handle.as_ptr(), addresses.as_ptr()) };
        for (k, ((p, a), bytes)) in parameters
            .iter()
            .zip(arguments.iter_mut())
            .zip(&bytes)
            .enumerate()
        {
            let on_device = matches!(staged.buffers.get(k), Some(Some(_)));
            if let Argument::Array(v) = a
                && matches!(v.elements, Elements::Bool(_))
                && !on_device
            {
                set_from_bytes(&mut v.elements, bytes, &p.name)?;
            }
        }
        Ok(status)
    }

    /// Calls `NAME_exit`, releasing the state; returns its status.
    pub fn exit(&self, state: State<'_>) -> i32 {
        let handle = state.handle;
        std::mem::forget(state);
        // SAFETY: the handle came from this library's `init` and is released
        // once (the `State` is consumed, its `Drop` skipped).
        unsafe { (self.exit)(handle.as_ptr()) }
    }

    /// The unit this library was compiled from.
    pub(crate) fn compiled(&self) -> &Compiled {
        &self.compiled
    }

    /// Calls `NAME_init_packed` (for [`crate::session`]).
    ///
    /// # Safety
    ///
    /// `symbols[k]` is the address of init symbol `k`'s value in its
    /// type's width, alive for the call.
    pub(crate) unsafe fn init_packed(&self, symbols: *const *mut c_void) -> *mut c_void {
        // SAFETY: the caller's promise.
        unsafe { (self.init)(symbols) }
    }

    /// Calls `NAME_run_packed` (for [`crate::session`]).
    ///
    /// # Safety
    ///
    /// `state` came from this library's `init` and is alive; `arguments[k]`
    /// is the address of parameter `k`'s value, each checked against it.
    pub(crate) unsafe fn run_packed(
        &self,
        state: NonNull<c_void>,
        arguments: *mut *mut c_void,
    ) -> i32 {
        // SAFETY: the caller's promise.
        unsafe { (self.run)(state.as_ptr(), arguments.cast_const()) }
    }

    /// Calls `NAME_exit` (for [`crate::session`]).
    ///
    /// # Safety
    ///
    /// `state` came from this library's `init` and is released once.
    pub(crate) unsafe fn exit_packed(&self, state: NonNull<c_void>) -> i32 {
        // SAFETY: the caller's promise.
        unsafe { (self.exit)(state.as_ptr()) }
    }

    /// `bytes` bytes of the unit's device memory (`NAME_device_alloc`).
    pub(crate) fn device_alloc(&self, bytes: usize) -> Result<NonNull<c_void>, ExecError> {
        let device = self.device.ok_or_else(|| ExecError::Missing(format!(
            "`{}` has no parameter whose home is the device, so its library exports no device memory functions",
            self.compiled.entry
        )))?;
        // SAFETY: `NAME_device_alloc` takes a byte count and returns device
        // memory of that size, or null.
        NonNull::new(unsafe { (device.alloc)(bytes) }).ok_or_else(|| ExecError::Device {
            call: format!("{}_device_alloc", self.compiled.entry),
            message: format!("no device memory for {bytes} bytes"),
        })
    }

    /// Copies `bytes` bytes from `from` to `to` (`NAME_device_copy`), to
    /// the device or back; returns the runtime's status (1 where the unit
    /// has no device memory functions).
    ///
    /// # Safety
    ///
    /// Both hold `bytes` bytes: host memory on one side and memory from
    /// [`Loaded::device_alloc`] on the other, as `to_device` says.
    pub(crate) unsafe fn device_copy(
        &self,
        to: *mut c_void,
        from: *const c_void,
        bytes: usize,
        to_device: bool,
    ) -> i32 {
        let Some(device) = self.device else { return 1 };
        // SAFETY: the caller's promise.
        unsafe { (device.copy)(to, from, bytes, c_int::from(to_device)) }
    }

    /// Releases memory from [`Loaded::device_alloc`].
    ///
    /// # Safety
    ///
    /// `buffer` came from `device_alloc` and is released once.
    pub(crate) unsafe fn device_free(&self, buffer: *mut c_void) {
        if let Some(device) = self.device {
            // SAFETY: the caller's promise.
            unsafe { (device.free)(buffer) };
        }
    }

    /// The emulated runtime's report (JSON), in an emulated build.
    pub fn emulation_report(&self) -> Option<String> {
        let report = self.report?;
        // SAFETY: the emulation returns a NUL-terminated string it keeps
        // until the next call; it is copied at once.
        let text = unsafe { CStr::from_ptr(report()) };
        Some(text.to_string_lossy().into_owned())
    }

    /// Zeroes the emulated runtime's counts, in an emulated build.
    pub fn emulation_reset(&self) {
        if let Some(reset) = self.reset {
            // SAFETY: takes no arguments, touches only the emulation's counters.
            unsafe { reset() }
        }
    }
}

impl Drop for State<'_> {
    fn drop(&mut self) {
        // SAFETY: as in `Loaded::exit`: a state not released explicitly is
        // released once here.
        unsafe { (self.loaded.exit)(self.handle.as_ptr()) };
    }
}

/// A symbol's value in the width of its dtype (native byte order, as the
/// program reads it), checked to fit.
pub(crate) fn symbol_bytes(t: DType, v: i64, name: &str) -> Result<[u8; 8], ExecError> {
    fn narrow<T: TryFrom<i64>, const N: usize>(
        v: i64,
        bytes: impl Fn(T) -> [u8; N],
    ) -> Option<[u8; 8]> {
        let mut out = [0u8; 8];
        out[..N].copy_from_slice(&bytes(T::try_from(v).ok()?));
        Some(out)
    }
    let out = match t {
        DType::Int8 => narrow(v, i8::to_ne_bytes),
        DType::Int16 => narrow(v, i16::to_ne_bytes),
        DType::Int32 => narrow(v, i32::to_ne_bytes),
        DType::Int64 => narrow(v, i64::to_ne_bytes),
        DType::UInt8 => narrow(v, u8::to_ne_bytes),
        DType::UInt16 => narrow(v, u16::to_ne_bytes),
        DType::UInt32 => narrow(v, u32::to_ne_bytes),
        DType::UInt64 => narrow(v, u64::to_ne_bytes),
        other => {
            return Err(ExecError::Argument {
                parameter: name.to_owned(),
                message: format!("a symbol of type {other}"),
            });
        }
    };
    out.ok_or_else(|| ExecError::Argument {
        parameter: name.to_owned(),
        message: format!("{v} does not fit in {t}"),
    })
}

/// Device buffers of one run's arguments whose home is the device
/// ([`Loaded::stage`]); any not read back are released when dropped.
pub struct Staged<'a> {
    /// Per parameter: the device buffer and its bytes, if it has one.
    buffers: Vec<Option<(NonNull<c_void>, usize)>>,
    loaded: &'a Loaded,
}

impl Drop for Staged<'_> {
    fn drop(&mut self) {
        let Some(device) = self.loaded.device else {
            return;
        };
        for (buffer, _) in self.buffers.drain(..).flatten() {
            // SAFETY: a buffer from `NAME_device_alloc` not yet released.
            unsafe { (device.free)(buffer.as_ptr()) };
        }
    }
}

/// The elements as the program's memory holds them (a `bool` one byte).
pub(crate) fn host_bytes(elements: &Elements) -> Vec<u8> {
    let mut copy = elements.clone();
    if let Elements::Bool(b) = &copy {
        return b.iter().map(|x| u8::from(*x)).collect();
    }
    let len = copy.len() * copy.dtype().size_bytes() as usize;
    let p = data_pointer(&mut copy).cast::<u8>();
    // SAFETY: `p` points to the `len` bytes of `copy`'s elements (plain
    // numbers, every byte initialized), alive while the slice is read.
    unsafe { std::slice::from_raw_parts(p, len) }.to_vec()
}

/// Sets `elements` from the bytes the program left (a `bool` array
/// checked to hold only 0 and 1: a byte nothing wrote holds the device's
/// poison).
pub(crate) fn set_from_bytes(
    elements: &mut Elements,
    bytes: &[u8],
    name: &str,
) -> Result<(), ExecError> {
    if let Elements::Bool(b) = elements {
        for (k, (x, byte)) in b.iter_mut().zip(bytes).enumerate() {
            *x = match byte {
                0 => false,
                1 => true,
                other => {
                    return Err(ExecError::Argument {
                        parameter: name.to_owned(),
                        message: format!(
                            "after the run, element {k} holds {other:#04x}, which is no bool (nothing wrote it: the device's poison)"
                        ),
                    });
                }
            };
        }
        return Ok(());
    }
    let len = elements.len() * elements.dtype().size_bytes() as usize;
    if bytes.len() != len {
        return Err(ExecError::Argument {
            parameter: name.to_owned(),
            message: format!("{} bytes came back for {len}", bytes.len()),
        });
    }
    let p = data_pointer(elements).cast::<u8>();
    // SAFETY: `p` points to `len` bytes of plain numbers, which any bytes
    // are a valid value of; `bytes` holds exactly `len`.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, len) };
    Ok(())
}

/// The address of the first element (each variant's element type has the
/// layout of the C++ type the emitter gives its dtype: `bool` one byte,
/// complex numbers two floats).
fn data_pointer(elements: &mut Elements) -> *mut c_void {
    match elements {
        Elements::Bool(v) => v.as_mut_ptr().cast(),
        Elements::I8(v) => v.as_mut_ptr().cast(),
        Elements::I16(v) => v.as_mut_ptr().cast(),
        Elements::I32(v) => v.as_mut_ptr().cast(),
        Elements::I64(v) => v.as_mut_ptr().cast(),
        Elements::U8(v) => v.as_mut_ptr().cast(),
        Elements::U16(v) => v.as_mut_ptr().cast(),
        Elements::U32(v) => v.as_mut_ptr().cast(),
        Elements::U64(v) => v.as_mut_ptr().cast(),
        Elements::F32(v) => v.as_mut_ptr().cast(),
        Elements::F64(v) => v.as_mut_ptr().cast(),
        Elements::C64(v) => v.as_mut_ptr().cast(),
        Elements::C128(v) => v.as_mut_ptr().cast(),
    }
}
