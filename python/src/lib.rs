//! `sdfg_offload._native`: the Rust side of the Python package.
//!
//! Thin on purpose: every decision is made by the same functions `sdfgc`
//! calls ([`sdfg_harness::driver`]) and every call of a unit by
//! [`sdfg_exec::Session`]; this module converts arguments and errors. The
//! Python side (`sdfg_offload/`) reads arrays' interfaces, binds a call's
//! arguments to parameters and makes the return values, and holds the
//! exception classes, which errors here are raised as by name
//! (`raise`).

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyTuple};
use sdfg_codegen::{ParameterKind, TranslationUnit};
use sdfg_exec::{Buffer, Device, EmulatedGpu, ExecError, Session, SimSession, Value};
use sdfg_harness::driver::{self, Error, Options};
use sdfg_ir::{DType, Side};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The Python exception for `e`: the class of `sdfg_offload.errors` its
/// stage names, made with its message and its location as keywords.
fn raise(py: Python<'_>, e: Error) -> PyErr {
    let (class, location): (&str, Vec<(&str, Py<PyAny>)>) = match &e {
        Error::Parse(_) => ("ParseError", vec![]),
        Error::Import(i) => ("ImportRefused", vec![("path", str_object(py, &i.path))]),
        Error::Frontend(f) => (
            "FrontendError",
            vec![
                ("file", str_object(py, &f.at.file)),
                ("line", int_object(py, f.at.line)),
                ("column", int_object(py, f.at.column)),
            ],
        ),
        Error::Invalid { name, errors } => (
            "InvalidSdfg",
            vec![
                ("sdfg", str_object(py, name)),
                (
                    "errors",
                    errors
                        .0
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .into_pyobject(py)
                        .map(|o| o.into_any().unbind())
                        .unwrap_or_else(|_| py.None()),
                ),
            ],
        ),
        Error::Backend(_) => ("BackendError", vec![]),
        Error::Pass(p) => (
            "PassError",
            match p {
                sdfg_passes::PipelineError::Pass { pass, .. } => {
                    vec![("pass_name", str_object(py, pass.name()))]
                }
                sdfg_passes::PipelineError::Invalid(_) => vec![],
            },
        ),
        Error::Export(_) => ("ExportError", vec![]),
        Error::Emit(_) => ("EmitError", vec![]),
        Error::Exec(x) => match x {
            ExecError::Compile { compiler, file, .. } => (
                "CompileError",
                vec![
                    ("compiler", str_object(py, compiler)),
                    ("file", str_object(py, &file.display().to_string())),
                ],
            ),
            ExecError::Argument { parameter, .. } => (
                "ArgumentError",
                vec![("parameter", str_object(py, parameter))],
            ),
            ExecError::Missing(_) => ("ToolMissing", vec![]),
            _ => ("ExecutionError", vec![]),
        },
        Error::Usage(_) => ("UsageError", vec![]),
    };
    let message = e.to_string();
    let made = (|| -> PyResult<PyErr> {
        let errors = py.import("sdfg_offload.errors")?;
        let class = errors.getattr(class)?;
        let kwargs = PyDict::new(py);
        for (k, v) in location {
            kwargs.set_item(k, v)?;
        }
        let instance = class.call((message.clone(),), Some(&kwargs))?;
        Ok(PyErr::from_value(instance))
    })();
    made.unwrap_or_else(|why| {
        PyRuntimeError::new_err(format!("{message} (and raising it failed: {why})"))
    })
}

fn str_object(py: Python<'_>, s: &str) -> Py<PyAny> {
    pyo3::types::PyString::new(py, s).into_any().unbind()
}

fn int_object(py: Python<'_>, n: usize) -> Py<PyAny> {
    n.into_pyobject(py)
        .map(|o| o.into_any().unbind())
        .unwrap_or_else(|_| py.None())
}

fn options(backend: &str, host_maps: &str, persistent: bool, args_on_device: bool) -> Options {
    Options {
        backend: backend.to_owned(),
        host_maps: host_maps.to_owned(),
        persistent,
        args_on_device,
    }
}

/// Offloads DaCe's SDFG JSON `text`: returns DaCe's JSON of the result
/// (exactly what `sdfgc offload FILE.sdfg` prints, without its newline),
/// the report as text (`--emit report`) and the report as JSON.
#[pyfunction]
#[pyo3(signature = (text, backend="cuda", host_maps="none", persistent=true, args_on_device=false))]
fn offload_dace(
    py: Python<'_>,
    text: &str,
    backend: &str,
    host_maps: &str,
    persistent: bool,
    args_on_device: bool,
) -> PyResult<(String, String, String)> {
    let o = options(backend, host_maps, persistent, args_on_device);
    let text = text.to_owned();
    let result = py.detach(move || driver::offload_dace(&text, &o));
    let (json, report) = result.map_err(|e| raise(py, e))?;
    Ok((
        json,
        report.to_string(),
        driver::report_json(&report).to_string(),
    ))
}

/// A compiled program: the emitted unit, loaded in this process.
#[pyclass(module = "sdfg_offload._native")]
struct NativeProgram {
    engine: Engine,
    /// The parameters of the entry points, in order.
    parameters: Vec<sdfg_codegen::Parameter>,
    /// The unit's entry point (also named for the simulator, which runs the
    /// SDFG the unit would be emitted from).
    entry: String,
    /// The emitted unit, or `None` on the simulator.
    source: Option<String>,
    /// What positional arguments of a call bind to, in order.
    argument_names: Vec<String>,
    report: String,
    device: String,
    library: Option<PathBuf>,
}

/// What runs a program.
enum Engine {
    /// The unit, compiled and loaded. Locked by each call: a session's
    /// states are one program's, and Python threads may share the program.
    Unit(std::sync::Mutex<Session>),
    /// The simulator, on the SDFG the unit is emitted from.
    Simulator(SimSession),
}

/// Where compiled units are kept: `$SDFG_OFFLOAD_CACHE`, else
/// `$XDG_CACHE_HOME/sdfg_offload`, else `~/.cache/sdfg_offload`, one
/// directory per unit named by a hash of its source and the device, so
/// that a program compiled before is loaded, not compiled again (DaCe's
/// `.dacecache` does the same).
fn cache_root() -> PathBuf {
    std::env::var_os("SDFG_OFFLOAD_CACHE")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("sdfg_offload"))
        })
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/sdfg_offload")))
        .unwrap_or_else(|| std::env::temp_dir().join("sdfg_offload"))
}

/// A hash of `value` (the standard library's SipHash with fixed keys:
/// the same for the same build, which is all a cache key needs).
fn hash(value: impl std::hash::Hash) -> u64 {
    use std::hash::Hasher;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

/// The directory of `unit` compiled for `device` in the cache.
fn cache_dir(unit: &TranslationUnit, device: &str) -> PathBuf {
    let key = hash((
        env!("CARGO_PKG_VERSION"),
        &unit.source,
        device,
        sdfg_exec::HEADERS,
    ));
    cache_root().join(format!("{}-{key:016x}", unit.entry))
}

/// The emulated GPU, compiling against the headers embedded in this
/// module (written into the cache once per version of them), so that an
/// installed wheel needs no source tree.
fn emulated_gpu() -> Result<EmulatedGpu, Error> {
    let dir = cache_root().join(format!("emulation-{:016x}", hash(sdfg_exec::HEADERS)));
    let include = sdfg_exec::install_headers(&dir)?;
    Ok(EmulatedGpu::new("").include_dir(include))
}

/// Compiles `unit` for `device` (`auto`: the backend's GPU where there is
/// one, else the emulated GPU; `gpu`; `emulated`) and opens it.
fn load(
    unit: &TranslationUnit,
    backend: &str,
    device: &str,
) -> Result<(Session, String, PathBuf), Error> {
    let emulated = || -> Result<Box<dyn Device + Sync>, Error> { Ok(Box::new(emulated_gpu()?)) };
    let chosen: Box<dyn Device + Sync> = match device {
        "emulated" => emulated()?,
        "gpu" | "auto" => {
            let b = sdfg_harness::backend(backend).map_err(Error::Backend)?;
            match sdfg_harness::gpu(b, std::path::Path::new(""), 1, std::time::Duration::ZERO) {
                Ok(g) => g,
                Err(why) if device == "gpu" => {
                    return Err(Error::Exec(ExecError::Missing(format!("no GPU: {why}"))));
                }
                Err(_) => emulated()?,
            }
        }
        other => {
            return Err(Error::Usage(format!(
                "unknown device `{other}` (known: auto, gpu, emulated, sim)"
            )));
        }
    };
    let description = chosen.describe();
    let dir = cache_dir(unit, &description);
    let library = dir.join(format!("lib{}.so", unit.entry));
    let source = dir.join(&unit.file_name);
    let cached = sdfg_exec::Compiled {
        library: library.clone(),
        entry: unit.entry.clone(),
        parameters: unit.parameters.clone(),
    };
    let compiled =
        if library.is_file() && std::fs::read_to_string(&source).is_ok_and(|s| s == unit.source) {
            cached
        } else {
            // Compiled beside and renamed into place: another process
            // compiling the same unit at the same time finds either nothing or
            // the whole directory, never a library being written.
            let partial = dir.with_extension(format!("partial-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&partial);
            chosen.compile(unit, &partial)?;
            match std::fs::rename(&partial, &dir) {
                Ok(()) => cached,
                // Another process renamed its copy first: the same unit.
                Err(_) if library.is_file() => {
                    let _ = std::fs::remove_dir_all(&partial);
                    cached
                }
                // A directory without the library (left by a process that was
                // killed): replaced.
                Err(_) => {
                    let _ = std::fs::remove_dir_all(&dir);
                    std::fs::rename(&partial, &dir).map_err(|e| {
                        Error::Exec(ExecError::Io {
                            what: format!("moving the compiled unit into `{}`", dir.display()),
                            message: e.to_string(),
                        })
                    })?;
                    cached
                }
            }
        };
    let session = Session::open(&compiled)?;
    Ok((session, description, compiled.library))
}

/// Compiles a program: `kind` says what `text` is (`python`: a module
/// with `@dace.program`s, of which `program` is compiled; `dace`: DaCe's
/// SDFG JSON; `json`: this project's), `file` names it in errors.
#[pyfunction]
#[pyo3(signature = (kind, text, file, program=None, signature=None, backend="cuda", device="auto", host_maps="none", persistent=true, args_on_device=false))]
#[allow(clippy::too_many_arguments)]
fn compile(
    py: Python<'_>,
    kind: &str,
    text: &str,
    file: &str,
    program: Option<&str>,
    signature: Option<BTreeMap<String, String>>,
    backend: &str,
    device: &str,
    host_maps: &str,
    persistent: bool,
    args_on_device: bool,
) -> PyResult<NativeProgram> {
    let o = options(backend, host_maps, persistent, args_on_device);
    let (kind, text, file) = (kind.to_owned(), text.to_owned(), file.to_owned());
    let (program, device) = (program.map(str::to_owned), device.to_owned());
    let signature = signature.unwrap_or_default();
    let made = py.detach(move || -> Result<NativeProgram, Error> {
        let (sdfg, argument_names) = match kind.as_str() {
            "python" => {
                let p = driver::python_program(&file, &text, program.as_deref(), &signature)?;
                (p.sdfg, p.parameters)
            }
            "dace" | "json" => {
                if program.is_some() {
                    return Err(Error::Usage(
                        "a program name applies to a Python file, not to an SDFG".to_owned(),
                    ));
                }
                let sdfg = driver::parse_sdfg(&text, kind == "dace")?;
                let names = sdfg.arguments.clone();
                (sdfg, names)
            }
            other => return Err(Error::Usage(format!("unknown kind of program `{other}`"))),
        };
        if device == "sim" {
            let (sdfg, report, _) = driver::lowered(sdfg, &o)?;
            let entry = sdfg_codegen::cpp::ident(&sdfg.name);
            let session = SimSession::new(sdfg)?;
            return Ok(NativeProgram {
                parameters: session.parameters().to_vec(),
                engine: Engine::Simulator(session),
                entry,
                source: None,
                argument_names,
                report: report.to_string(),
                device: "the simulator (sdfg-sim)".to_owned(),
                library: None,
            });
        }
        let (unit, report) = driver::translation_unit(sdfg, &o)?;
        let (session, device, library) = load(&unit, &o.backend, &device)?;
        Ok(NativeProgram {
            parameters: unit.parameters.clone(),
            engine: Engine::Unit(std::sync::Mutex::new(session)),
            entry: unit.entry,
            source: Some(unit.source),
            argument_names,
            report: report.to_string(),
            device,
            library: Some(library),
        })
    });
    made.map_err(|e| raise(py, e))
}

/// A buffer as the Python side describes it: `(address, dtype name,
/// shape, strides in elements, on the device)`.
type BufferTuple = (usize, String, Vec<usize>, Vec<i64>, bool);

fn buffer(
    parameter: &str,
    (address, dtype, shape, strides, device): BufferTuple,
) -> Result<Buffer, Error> {
    let dtype = DType::from_name(&dtype).ok_or_else(|| {
        Error::Exec(ExecError::Argument {
            parameter: parameter.to_owned(),
            message: format!("an array of {dtype}, which programs have no type for"),
        })
    })?;
    Ok(Buffer {
        address,
        dtype,
        shape,
        strides,
        side: if device { Side::Device } else { Side::Host },
    })
}

/// The session, locked (a panic of another holder does not poison it for
/// good: the session's state is the library's, which a panic here never
/// leaves half-changed).
fn lock(session: &std::sync::Mutex<Session>) -> std::sync::MutexGuard<'_, Session> {
    session
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl NativeProgram {
    /// The unit's session, locked; on the simulator, the error a Python
    /// caller gets for what only a unit has (device memory).
    fn session(&self, what: &str) -> Result<std::sync::MutexGuard<'_, Session>, Error> {
        match &self.engine {
            Engine::Unit(session) => Ok(lock(session)),
            Engine::Simulator(_) => Err(Error::Usage(format!(
                "{what} needs a compiled unit; this program runs on the simulator (device=\"sim\")"
            ))),
        }
    }
}

#[pymethods]
impl NativeProgram {
    /// The parameters of the entry points, in order: `(name, kind, dtype,
    /// shape as strings, home)` with kind `container`, `symbol` or
    /// `return` and home `host` or `device`.
    #[getter]
    fn parameters(&self) -> Vec<(String, &'static str, &'static str, Vec<String>, String)> {
        self.parameters
            .iter()
            .map(|p| {
                let (kind, t) = match p.kind {
                    ParameterKind::Container(t) => ("container", t),
                    ParameterKind::Symbol(t) => ("symbol", t),
                    ParameterKind::Return(t) => ("return", t),
                };
                (
                    p.name.clone(),
                    kind,
                    t.name(),
                    p.shape.iter().map(ToString::to_string).collect(),
                    p.home.to_string(),
                )
            })
            .collect()
    }

    /// The names positional arguments bind to, in order.
    #[getter]
    fn argument_names(&self) -> Vec<String> {
        self.argument_names.clone()
    }

    /// The emitted translation unit (`None` on the simulator).
    #[getter]
    fn source(&self) -> Option<&str> {
        self.source.as_deref()
    }

    /// The unit's entry point (`NAME` of `NAME_init`, `NAME_run`, ...).
    #[getter]
    fn entry(&self) -> &str {
        &self.entry
    }

    /// The pipeline's report, as `sdfgc compile --emit report` prints it.
    #[getter]
    fn report(&self) -> &str {
        &self.report
    }

    /// What runs the program, in words.
    #[getter]
    fn device(&self) -> &str {
        &self.device
    }

    /// The compiled library (`None` on the simulator).
    #[getter]
    fn library(&self) -> Option<String> {
        self.library.as_ref().map(|l| l.display().to_string())
    }

    /// How many states `NAME_init` made (one per set of symbol values; 0
    /// on the simulator, which keeps none).
    #[getter]
    fn states(&self) -> usize {
        match &self.engine {
            Engine::Unit(session) => lock(session).states(),
            Engine::Simulator(_) => 0,
        }
    }

    /// The symbols of a call: `given` by name, the rest read off the
    /// buffers (`None` for symbols and return values).
    fn bind(
        &self,
        py: Python<'_>,
        buffers: Vec<Option<BufferTuple>>,
        given: BTreeMap<String, i64>,
    ) -> PyResult<BTreeMap<String, i64>> {
        let buffers = buffers
            .into_iter()
            .zip(&self.parameters)
            .map(|(b, p)| b.map(|b| buffer(&p.name, b)).transpose())
            .collect::<Result<Vec<Option<Buffer>>, _>>()
            .map_err(|e| raise(py, e))?;
        let refs: Vec<Option<&Buffer>> = buffers.iter().map(Option::as_ref).collect();
        sdfg_exec::session::bind(&self.parameters, &refs, &given)
            .map_err(|e| raise(py, Error::Exec(e)))
    }

    /// The shape of parameter `index` with `symbols`.
    fn shape(
        &self,
        py: Python<'_>,
        index: usize,
        symbols: BTreeMap<String, i64>,
    ) -> PyResult<Vec<usize>> {
        sdfg_exec::session::shape(&self.parameters, index, &symbols)
            .map_err(|e| raise(py, Error::Exec(e)))
    }

    /// Runs the program on `values` (per parameter: an `int` for a symbol,
    /// a buffer tuple for an array); returns its status.
    ///
    /// The caller (`sdfg_offload.Program.__call__`) describes each buffer
    /// from its array's own interface and keeps the arrays alive until
    /// this returns.
    fn run(&self, py: Python<'_>, values: Vec<Bound<'_, PyAny>>) -> PyResult<i32> {
        let mut converted = Vec::with_capacity(values.len());
        let unnamed = String::new();
        let names = self
            .parameters
            .iter()
            .map(|p| &p.name)
            .chain(std::iter::repeat(&unnamed));
        for (v, n) in values.iter().zip(names) {
            converted.push(if v.is_instance_of::<PyInt>() {
                Value::Symbol(v.extract::<i64>()?)
            } else if v.is_instance_of::<PyTuple>() {
                Value::Buffer(buffer(n, v.extract::<BufferTuple>()?).map_err(|e| raise(py, e))?)
            } else {
                return Err(raise(
                    py,
                    Error::Exec(ExecError::Argument {
                        parameter: n.clone(),
                        message: "neither a symbol's value nor a buffer".to_owned(),
                    }),
                ));
            });
        }
        let engine = &self.engine;
        #[allow(unsafe_code)]
        // SAFETY: each buffer was described by its array's own interface
        // (`__array_interface__`, `__cuda_array_interface__`) and the caller
        // keeps every array alive until this returns; `run` checks the
        // descriptions against the parameters.
        let status = py.detach(move || unsafe {
            match engine {
                Engine::Unit(session) => lock(session).run(&converted),
                Engine::Simulator(sim) => sim.run(&converted),
            }
        });
        status.map_err(|e| raise(py, Error::Exec(e)))
    }

    /// `bytes` bytes of the unit's device memory (for stand-in device
    /// arrays); its address.
    fn device_alloc(&self, py: Python<'_>, bytes: usize) -> PyResult<usize> {
        let session = self.session("device memory").map_err(|e| raise(py, e))?;
        session
            .device_alloc(bytes)
            .map_err(|e| raise(py, Error::Exec(e)))
    }

    /// Copies `bytes` bytes between the host address `host` and the
    /// device address `device` (from `sdfg_offload`'s own device arrays,
    /// which know both sizes).
    fn device_copy(
        &self,
        py: Python<'_>,
        device: usize,
        host: usize,
        bytes: usize,
        to_device: bool,
    ) -> PyResult<()> {
        let session = self.session("device memory").map_err(|e| raise(py, e))?;
        #[allow(unsafe_code)]
        // SAFETY: the caller (`DeviceArray`) passes its own allocation and
        // a host array of the same size, alive for the call.
        let done = unsafe { session.device_copy(device, host, bytes, to_device) };
        done.map_err(|e| raise(py, Error::Exec(e)))
    }

    /// Releases device memory from `device_alloc`.
    fn device_free(&self, device: usize) {
        if let Ok(session) = self.session("device memory") {
            #[allow(unsafe_code)]
            // SAFETY: `DeviceArray` releases its allocation once, when collected.
            unsafe {
                session.device_free(device);
            }
        }
    }

    /// What the emulated GPU counted since the last `reset_counts`, as
    /// JSON; `None` on a real GPU and on the simulator.
    fn counts(&self) -> Option<String> {
        self.session("counts").ok()?.emulation_report()
    }

    /// Zeroes the emulated GPU's counts.
    fn reset_counts(&self) {
        if let Ok(session) = self.session("counts") {
            session.reset_counts();
        }
    }
}

/// The module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(offload_dace, m)?)?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_class::<NativeProgram>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
