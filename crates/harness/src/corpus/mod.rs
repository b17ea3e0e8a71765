//! The corpus runner: every kernel of `corpus/npbench/` through every stage.
//!
//! For one kernel and one preset the stages are: **parse** the Python file;
//! **compile** the kernel and its initializer with the frontend; **validate**
//! both SDFGs; **json**: round-trip them through JSON exactly; **simulate**:
//! run the initializer and then the kernel on the host in the simulator;
//! **numpy**: run the same file under CPython and NumPy
//! (`corpus/tools/reference.py`) and compare every output within the
//! kernel's tolerance. A stage that cannot run says why ("skipped: python3
//! with NumPy not found"); it never passes silently. A failed stage stops the
//! stages that depend on it, which are reported as skipped with the reason:
//! each stage needs the one before it, except that the NumPy comparison
//! needs only the host simulation and `exec` only the emitted unit. NumPy
//! runs once per kernel and preset; its outputs are kept in
//! [`RunOptions::references`] for the next run and the other backends.
//!
//! The offload stages: **offload** runs the offload pass for the simulated
//! accelerator and checks that its output validates, round-trips through
//! JSON and is left unchanged by a second run; **device** runs the
//! initializer on the host and the offloaded kernel on the simulated
//! accelerator (separate memories, every transfer counted) and compares its
//! outputs with the host run's, recording launches, bytes moved between
//! host and device, and the transfer ratio. For the `test` preset the
//! device run also checks every kernel launch for data races
//! ([`Simulator::check_races`]).
//!
//! The code stages (`--backend cuda|hip`): **lower** expands library nodes
//! (or keeps them for vendor calls) and simulates the result on the device
//! against the host run; **emit** writes the translation unit; **cc**
//! compiles it with the real compilers (the backend's registered
//! [`sdfg_exec::Toolchain`]); **exec**
//! compiles and runs it on [`RunOptions::device`] (the emulated GPU:
//! `docs/emulation.md`) with the inputs the initializer made, compares every
//! output (arguments the program writes and return values) with NumPy
//! within the kernel's tolerance, fails on anything left allocated, and
//! records what the device counted beside the simulator's counts of the
//! same lowered SDFG ([`ExecCounts`]); **gpu** compiles and runs it on
//! [`RunOptions::gpu`], a real GPU (`docs/gpu.md`), with the same inputs and
//! the same comparison with NumPy, and times it: the median of the timed
//! calls of `NAME_run` (after `NAME_init` and warm-up calls), beside NumPy's
//! time for the same kernel on the host CPU and CuPy's on the GPU where
//! CuPy is installed ([`GpuTiming`]). Without a GPU the stage is skipped
//! with the runtime's reason, in one line.
//!
//! [`Stage`] names the stages, the order each backend runs them in and
//! what each one needs; each stage is one function of the `run` submodule,
//! named after it, and a short driver walks them for every case.

use sdfg_ir::{DType, DataKind, Sdfg, SymExpr};
use sdfg_sim::{Arguments, ArrayValue, RunReport, Simulator, Value};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

mod run;
mod stage;

pub use stage::{Stage, UnknownStage};

/// The outcome of one stage.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "verdict", content = "reason", rename_all = "snake_case")]
pub enum Verdict {
    /// The stage ran and succeeded.
    Pass,
    /// The stage ran and failed, with why.
    Fail(String),
    /// The stage did not run, with why.
    Skip(String),
    /// The input is outside what the tools accept, named with why: a
    /// construct the import does not support, a program its tool could
    /// not write, or a foreign SDFG whose own code reads outside its
    /// arrays. Not a failure of this project's code, and not a pass:
    /// reports count it apart, and the stages after it do not run.
    Refused(String),
}

/// One stage's verdict and time, as reported beside the stage's name.
#[derive(Clone, Debug, Serialize)]
pub struct StageReport {
    /// The outcome.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// Wall time in milliseconds.
    pub millis: f64,
}

/// Everything measured for one kernel.
#[derive(Clone, Debug, Serialize)]
pub struct KernelReport {
    /// `category/name`.
    pub kernel: String,
    /// The preset run.
    pub preset: String,
    /// Whether every array argument's home was the device
    /// ([`RunOptions::args_on_device`]).
    pub args_on_device: bool,
    /// Per stage, in the order of [`Stage::for_backend`] (serialized as
    /// `[name, {verdict, reason, millis}]` pairs).
    pub stages: Vec<(Stage, StageReport)>,
    /// Kernel launches of the simulated run.
    pub launches: u64,
    /// Bytes moved between host and device.
    pub transfer_bytes: u64,
    /// The lower bound of those bytes.
    pub lower_bound_bytes: u64,
    /// Whether [`sdfg_sim::count_statically`] counted the device run
    /// exactly (and agreed with the simulator, else the stage failed).
    pub counted_statically: bool,
    /// Why it could not, where the device stage ran.
    pub not_countable: Option<String>,
    /// What the `exec` stage's device counted beside the simulator.
    pub exec_counts: Option<ExecCounts>,
    /// What the `gpu` stage measured.
    pub gpu: Option<GpuTiming>,
}

/// What the `gpu` stage measured for one kernel: the emitted program's time
/// on the device, and the same kernel's under NumPy (host CPU) and CuPy
/// (the same GPU), at the same sizes.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GpuTiming {
    /// The device, as the runtime describes it.
    pub device: String,
    /// The median time of the timed calls of `NAME_run`, in milliseconds
    /// (device events around each call; `NAME_init` not included).
    pub device_ms: f64,
    /// Each timed call's time.
    pub device_runs_ms: Vec<f64>,
    /// NumPy's median time for the kernel alone, on the host CPU.
    pub numpy_ms: Option<f64>,
    /// CuPy's median time (the same program with CuPy as its `np`), where
    /// CuPy is installed and runs the kernel.
    pub cupy_ms: Option<f64>,
    /// Whether CuPy's outputs matched NumPy's.
    pub cupy_matches_numpy: Option<bool>,
    /// Why there is no NumPy or CuPy time, where there is none.
    pub notes: Vec<String>,
    /// `numpy_ms / device_ms`.
    pub speedup_vs_numpy: Option<f64>,
    /// `cupy_ms / device_ms`.
    pub speedup_vs_cupy: Option<f64>,
    /// The model's estimate for the detected device, from what the `exec`
    /// stage counted (`docs/gpu.md`, "The estimate"), where a description
    /// of the device exists and `exec` ran.
    pub estimate: Option<sdfg_exec::metrics::Estimate>,
}

impl KernelReport {
    /// Whether no stage failed.
    pub fn passed(&self) -> bool {
        !self
            .stages
            .iter()
            .any(|(_, s)| matches!(s.verdict, Verdict::Fail(_)))
    }
}

/// A kernel file of the corpus.
#[derive(Clone, Debug)]
pub struct KernelFile {
    /// `category/name`.
    pub name: String,
    /// The file.
    pub path: PathBuf,
}

/// Every `corpus/npbench/<category>/<kernel>.py`, sorted by name.
pub fn discover(root: &Path) -> std::io::Result<Vec<KernelFile>> {
    let mut out = Vec::new();
    for category in std::fs::read_dir(root)? {
        let category = category?.path();
        if !category.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&category)? {
            let path = file?.path();
            if path.extension().is_some_and(|e| e == "py") {
                let cat = category.file_name().unwrap_or_default().to_string_lossy();
                let stem = path.file_stem().unwrap_or_default().to_string_lossy();
                out.push(KernelFile {
                    name: format!("{cat}/{stem}"),
                    path,
                });
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Whether `python3` with NumPy can run references: `Ok(())` or why not.
pub fn python_available() -> Result<(), String> {
    match Command::new("python3")
        .args(["-c", "import numpy"])
        .output()
    {
        Ok(o) if o.status.success() => Ok(()),
        Ok(_) => Err("python3 is installed but NumPy is not".to_owned()),
        Err(_) => Err("python3 not found".to_owned()),
    }
}

/// What a corpus run uses besides the kernel: the preset, the backend whose
/// accelerator the offload pass places data for, `corpus/tools`, whether
/// NumPy can run, where NumPy's results are kept between runs, and the
/// device that executes the emitted code.
#[derive(Clone, Copy)]
pub struct RunOptions<'a> {
    /// The preset (`test`, `S`, ...).
    pub preset: &'a str,
    /// The backend.
    pub backend: crate::Backend,
    /// `corpus/tools`.
    pub tools: &'a Path,
    /// Whether `python3` with NumPy can run references, or why not.
    pub python: &'a Result<(), String>,
    /// A directory where NumPy's outputs are kept, keyed by the kernel
    /// file's and the reference runner's contents (so that the backends'
    /// runs share one NumPy run per kernel); `None` runs NumPy every time.
    pub references: Option<&'a Path>,
    /// The device the `exec` stage runs the emitted unit on, or why there
    /// is none.
    pub device: Result<&'a (dyn sdfg_exec::Device + Sync), &'a str>,
    /// The real GPU the `gpu` stage runs the emitted unit on, or why there
    /// is none ("no CUDA device (driver not found ...)").
    pub gpu: Result<&'a (dyn sdfg_exec::Device + Sync), &'a str>,
    /// Timed calls of NumPy and CuPy in the `gpu` stage (the device's own
    /// count is the device's).
    pub repeat: u32,
    /// Stages not to run (reported as skipped: `--skip STAGE`).
    pub skip: &'a [Stage],
    /// Passes of the pipeline turned off (`--no-loop-to-map`).
    pub disabled: &'a [sdfg_passes::Pass],
    /// A directory of DaCe's own SDFGs of the kernels
    /// ([`dace_sdfg_file`], written by `corpus/tools/dace_to_sdfg.py`): the
    /// `dace-import` stage imports the kernel's, validates and simulates
    /// it against NumPy, offloads it for the backend and simulates that on
    /// the device against NumPy too, and writes the offloaded SDFG back in
    /// DaCe's format beside it ([`dace_offloaded_file`]). `None` skips the
    /// stage.
    pub dace_sdfgs: Option<&'a Path>,
    /// Every array argument's home is the device
    /// ([`crate::arguments_on_device`]) from the offload stage on, as
    /// NPBench's `dace_gpu` framework and CuPy run: inputs already on the
    /// GPU. The host run and NumPy's are the same program's.
    pub args_on_device: bool,
}

/// Where DaCe's own SDFG of `kernel` (`category/name`) is kept in `dir`.
pub fn dace_sdfg_file(dir: &Path, kernel: &str) -> PathBuf {
    dir.join(format!("{}.dace.sdfg", kernel.replace('/', "__")))
}

/// Where the `dace-import` stage writes DaCe's own SDFG of `kernel` after
/// this project offloaded it.
pub fn dace_offloaded_file(dir: &Path, kernel: &str) -> PathBuf {
    dir.join(format!("{}.dace.offloaded.sdfg", kernel.replace('/', "__")))
}

/// Where DaCe's own SDFG of `kernel` after `apply_gpu_storage` is kept in
/// `dir` (its inputs and outputs already on the GPU): what the
/// `dace-import` stage reads with [`RunOptions::args_on_device`].
pub fn dace_gpu_storage_file(dir: &Path, kernel: &str) -> PathBuf {
    dir.join(format!(
        "{}.dace.gpu-storage.sdfg",
        kernel.replace('/', "__")
    ))
}

/// Where the `dace-import` stage writes that SDFG after this project
/// offloaded it.
pub fn dace_gpu_storage_offloaded_file(dir: &Path, kernel: &str) -> PathBuf {
    dir.join(format!(
        "{}.dace.gpu-storage.offloaded.sdfg",
        kernel.replace('/', "__")
    ))
}

/// What the `exec` stage counted on the device beside what the simulator
/// counted for the same program (the lowered SDFG), where they differ.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ExecCounts {
    /// Kernel launches plus vendor library operations, on the device.
    pub launches: u64,
    /// The simulator's launches.
    pub simulated_launches: u64,
    /// Helper kernels of vendor calls (not program work).
    pub helper_launches: u64,
    /// Host-to-device bytes on the device.
    pub to_device_bytes: u64,
    /// The simulator's host-to-device bytes.
    pub simulated_to_device_bytes: u64,
    /// Device-to-host bytes on the device, less the status flag of
    /// factorizations (8 bytes per run, no program data).
    pub to_host_bytes: u64,
    /// The simulator's device-to-host bytes.
    pub simulated_to_host_bytes: u64,
    /// Runtime API calls.
    pub api_calls: u64,
    /// Runtime copy calls, every direction (host to device, device to
    /// host, device to device): one per call, so a whole array moved in
    /// one `MemcpyAsync` counts one.
    pub copies: u64,
    /// Host-side waits (stream, event and device synchronizations).
    pub synchronizations: u64,
    /// What decides the run's speed on a GPU, over its kernels
    /// (`docs/emulation.md`, "What it measures").
    pub metrics: sdfg_exec::metrics::RunMetrics,
    /// The same per kernel: launch shapes, atomics, sectors against the
    /// ideal, serial accesses.
    pub kernels: BTreeMap<String, sdfg_exec::metrics::KernelMetrics>,
    /// The run's estimated time on each described device
    /// ([`sdfg_exec::metrics::DEVICES`]; `docs/gpu.md`, "The estimate").
    pub estimates: Vec<sdfg_exec::metrics::Estimate>,
}

impl ExecCounts {
    /// Whether the device counted what the simulator counted.
    pub fn agree(&self) -> bool {
        self.launches == self.simulated_launches
            && self.to_device_bytes == self.simulated_to_device_bytes
            && self.to_host_bytes == self.simulated_to_host_bytes
    }
}

/// The pipeline up to offloading for `options`' backend, each pass
/// validated as it runs, without the passes `options` turns off.
fn offload_for(kernel: &Sdfg, options: &RunOptions<'_>) -> Result<Sdfg, String> {
    if options.args_on_device && !sdfg_passes::offload::is_offloaded(kernel) {
        let mut kernel = kernel.clone();
        crate::arguments_on_device(&mut kernel);
        return offload_for(
            &kernel,
            &RunOptions {
                args_on_device: false,
                ..*options
            },
        );
    }
    let mut pipeline = sdfg_passes::PipelineOptions::default();
    for p in options.disabled {
        pipeline = pipeline.without(*p);
    }
    let accelerator = options.backend.accelerator();
    let passes = sdfg_passes::Pass::TO_OFFLOAD;
    sdfg_passes::pipeline::run(kernel, Some(accelerator), &pipeline, &passes)
        .map(|(out, _)| out.into_inner())
        .map_err(|e| e.to_string())
}

/// Launches and host <-> device bytes of one run of a kernel offloaded
/// for `options`' backend, and how they were found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunCounts {
    /// Kernel launches.
    pub launches: u64,
    /// Bytes moved between host and device.
    pub transfer_bytes: u64,
    /// `None` when counted without running ([`sdfg_sim::count_statically`]);
    /// else why the program had to run in the simulator.
    pub simulated: Option<String>,
}

/// Counts one run of a corpus kernel at `options`' preset: from control
/// flow alone where that decides them (milliseconds at any preset), else by
/// simulating the device run as [`run_kernel`] does. The corpus's `device`
/// stage checks that the two agree wherever the first applies.
pub fn count_kernel(kernel: &KernelFile, options: &RunOptions<'_>) -> Result<RunCounts, String> {
    let text = std::fs::read_to_string(&kernel.path).map_err(|e| e.to_string())?;
    let module = sdfg_frontend::Module::parse(&kernel.path.display().to_string(), &text)
        .map_err(|e| e.to_string())?;
    let md = Metadata::read(&module, options.preset)?;
    let sdfg = module.compile(&md.program).map_err(|e| e.to_string())?;
    let mut offloaded = offload_for(&sdfg, options)?;
    // A code-generating backend's count is its emitted code's: after
    // library lowering (vendor calls, and the kernels they absorbed).
    if let crate::Backend::Code(target) = options.backend {
        sdfg_passes::lower_library_nodes(&mut offloaded, target.dialect)
            .map_err(|e| e.to_string())?;
    }
    let why = match count_run(&offloaded, &md, None) {
        Ok(c) => {
            return Ok(RunCounts {
                launches: c.launches,
                transfer_bytes: c.transfer_bytes(),
                simulated: None,
            });
        }
        Err(why) => why.to_string(),
    };
    let r = run_kernel(kernel, options);
    if !r.passed() {
        let failed = r
            .stages
            .iter()
            .find(|(_, s)| matches!(s.verdict, Verdict::Fail(_)))
            .map_or("a stage", |(stage, _)| stage.name());
        return Err(format!("the `{failed}` stage failed"));
    }
    Ok(RunCounts {
        launches: r.launches,
        transfer_bytes: r.transfer_bytes,
        simulated: Some(why),
    })
}

/// Runs every stage for one kernel of the corpus (the device stage runs on
/// the simulated accelerator whatever placed the data).
pub fn run_kernel(kernel: &KernelFile, options: &RunOptions<'_>) -> KernelReport {
    run::run_case(&Case::Corpus(kernel), options)
}

/// Runs every stage for one unmodified program of a manifest
/// ([`Manifest`]): its inputs and NumPy's outputs come from the entry's
/// Python reference (`corpus/tools/programs_reference.py`), run once.
pub fn run_program(
    entry: &ProgramEntry,
    manifest: &Path,
    root: &Path,
    options: &RunOptions<'_>,
) -> KernelReport {
    run::run_case(
        &Case::Program {
            entry,
            manifest,
            root,
        },
        options,
    )
}

/// Runs every stage for one case of a client tool
/// ([`crate::clients::ClientCase`]): **parse** reads the case, **compile**
/// imports the tool's SDFG (a refusal skips the rest, naming the
/// construct), the host and device runs start from the case's inputs, and
/// the tool's own answer stands where NumPy's does (**numpy**, **exec**).
/// The last stage (**dace-import** in the corpus) writes the offloaded
/// SDFG back in DaCe's format ([`crate::clients::ClientCase::offloaded_file`])
/// for DaCe to validate and generate code from.
pub fn run_client(case: &crate::clients::ClientCase, options: &RunOptions<'_>) -> KernelReport {
    run::run_case(&Case::Client(case), options)
}

/// What is run: a corpus kernel (metadata in its `BENCHMARK`, inputs from
/// its initializer program), a program of a manifest (metadata in the
/// entry, inputs from its Python reference), or a client tool's SDFG
/// (metadata, inputs and answer in its case folder).
enum Case<'a> {
    Corpus(&'a KernelFile),
    Program {
        entry: &'a ProgramEntry,
        manifest: &'a Path,
        root: &'a Path,
    },
    Client(&'a crate::clients::ClientCase),
}

impl Case<'_> {
    fn name(&self) -> &str {
        match self {
            Case::Corpus(k) => &k.name,
            Case::Program { entry, .. } => &entry.name,
            Case::Client(c) => &c.name,
        }
    }

    fn path(&self) -> PathBuf {
        match self {
            Case::Corpus(k) => k.path.clone(),
            Case::Program { entry, root, .. } => root.join(&entry.file),
            Case::Client(c) => c.sdfg_file(),
        }
    }
}

/// NumPy's outputs, and the program's inputs where NumPy's side made them.
#[derive(Clone)]
struct Reference {
    outputs: BTreeMap<String, ArrayValue>,
    inputs: Option<BTreeMap<String, ArrayValue>>,
}

/// One run of a compiled unit (`run` executes it), on the kernel's inputs
/// and symbols, checked: status 0, nothing left live, every output equal
/// to `against` (the outputs, and what they are). `None`: the device does
/// not run it that way.
fn checked_run(
    unit: &sdfg_codegen::TranslationUnit,
    inputs: &BTreeMap<String, ArrayValue>,
    md: &Metadata,
    against: (&BTreeMap<String, ArrayValue>, &str),
    what: &str,
    run: &mut UnitRun<'_>,
) -> Result<Option<sdfg_exec::Execution>, Verdict> {
    let mut arguments = unit_arguments(unit, inputs, &md.symbols).map_err(Verdict::Fail)?;
    let Some(execution) = run(&mut arguments) else {
        return Ok(None);
    };
    let execution = execution.map_err(exec_verdict)?;
    if execution.status != 0 {
        return Err(Verdict::Fail(format!(
            "the program returned status {}:\n{}",
            execution.status,
            execution.messages.trim()
        )));
    }
    if let Some(live) = &execution.live_after_exit
        && !live.is_empty()
    {
        return Err(Verdict::Fail(format!("left live after exit: {live:?}")));
    }
    let outputs = unit_outputs(unit, arguments, &md.symbols).map_err(Verdict::Fail)?;
    compare_outputs(
        &md.outputs,
        &outputs,
        against.0,
        what,
        against.1,
        &md.tolerance,
    )?;
    Ok(Some(execution))
}

/// An execution's error as a stage's verdict: a missing tool skips.
fn exec_verdict(e: sdfg_exec::ExecError) -> Verdict {
    match e {
        sdfg_exec::ExecError::Missing(why) => Verdict::Skip(why),
        other => Verdict::Fail(other.to_string()),
    }
}

/// Compares every output `ours` has with `reference`; the verdict names
/// every output that differs, not only the first.
fn compare_outputs(
    names: &[String],
    ours: &BTreeMap<String, ArrayValue>,
    reference: &BTreeMap<String, ArrayValue>,
    what: &str,
    against: &str,
    tolerance: &Tolerance,
) -> Result<(), Verdict> {
    let mut differ = Vec::new();
    for name in names {
        let r = reference
            .get(name)
            .ok_or_else(|| Verdict::Fail(format!("{against} has no output `{name}`")))?;
        let o = ours
            .get(name)
            .ok_or_else(|| Verdict::Fail(format!("{what} has no output `{name}`")))?;
        if let Err(why) = compare(name, o, r, tolerance) {
            differ.push(why);
        }
    }
    if differ.is_empty() {
        Ok(())
    } else {
        Err(Verdict::Fail(format!(
            "{what} vs {against}: {}",
            differ.join("; ")
        )))
    }
}

/// The arrays of an execution's `arguments` (in the unit's parameter
/// order, as [`unit_arguments`] made them) by parameter name: what the
/// program left in them.
pub fn unit_outputs(
    unit: &sdfg_codegen::TranslationUnit,
    arguments: Vec<sdfg_exec::Argument>,
    symbols: &BTreeMap<String, i64>,
) -> Result<BTreeMap<String, ArrayValue>, String> {
    unit.parameters
        .iter()
        .zip(arguments)
        .filter_map(|(p, a)| match a {
            sdfg_exec::Argument::Array(v) => Some(match &p.layout {
                Some(l) => read_back(&v, l, symbols)
                    .map(|v| (p.name.clone(), v))
                    .map_err(|e| format!("`{}`: {e}", p.name)),
                None => Ok((p.name.clone(), v)),
            }),
            sdfg_exec::Argument::Symbol(_) => None,
        })
        .collect()
}

/// A layout's shape, strides, offset and total size for `symbols`.
fn concrete(
    layout: &sdfg_ir::Layout,
    symbols: &BTreeMap<String, i64>,
) -> Result<(Vec<i64>, Vec<i64>, i64, i64), String> {
    let eval = |e: &SymExpr| e.eval(symbols).map_err(|e| e.to_string());
    let all = |v: &[SymExpr]| v.iter().map(eval).collect::<Result<Vec<_>, _>>();
    Ok((
        all(&layout.shape)?,
        all(&layout.strides)?,
        eval(&layout.offset)?,
        eval(&layout.total_size)?,
    ))
}

/// Where each element of a row-major array of `shape` lies in a buffer
/// of the layout, in row-major order.
fn positions(shape: &[i64], strides: &[i64], offset: i64) -> Vec<i64> {
    let mut out = vec![offset];
    for (&n, &s) in shape.iter().zip(strides) {
        out = out
            .iter()
            .flat_map(|&base| (0..n.max(0)).map(move |i| base + i * s))
            .collect();
    }
    out
}

/// `v` (row-major, its logical shape) laid out in a buffer of `layout`,
/// as a caller of DaCe's program lays its data out
/// ([`sdfg_codegen::Parameter::layout`]).
fn lay_out(
    v: &ArrayValue,
    layout: &sdfg_ir::Layout,
    symbols: &BTreeMap<String, i64>,
) -> Result<ArrayValue, String> {
    let (shape, strides, offset, total) = concrete(layout, symbols)?;
    let total = usize::try_from(total).map_err(|_| format!("a total size of {total}"))?;
    let mut buffer =
        ArrayValue::try_zeros("buffer", v.dtype(), vec![total]).map_err(|e| e.to_string())?;
    for (k, at) in positions(&shape, &strides, offset).into_iter().enumerate() {
        let at = usize::try_from(at)
            .ok()
            .filter(|&a| a < total)
            .ok_or_else(|| format!("element {k} lies at {at}, outside the buffer of {total}"))?;
        if let Some(x) = v.get(k) {
            buffer.elements.set(at, x);
        }
    }
    Ok(buffer)
}

/// The row-major array of its logical shape that a buffer of `layout`
/// holds.
fn read_back(
    buffer: &ArrayValue,
    layout: &sdfg_ir::Layout,
    symbols: &BTreeMap<String, i64>,
) -> Result<ArrayValue, String> {
    let (shape, strides, offset, _) = concrete(layout, symbols)?;
    let dims = shape
        .iter()
        .map(|&n| usize::try_from(n).unwrap_or(0))
        .collect();
    let mut v = ArrayValue::try_zeros("value", buffer.dtype(), dims).map_err(|e| e.to_string())?;
    for (k, at) in positions(&shape, &strides, offset).into_iter().enumerate() {
        if let Some(x) = usize::try_from(at).ok().and_then(|a| buffer.get(a)) {
            v.elements.set(k, x);
        }
    }
    Ok(v)
}

/// One execution of a compiled unit on the given arguments (`None`: the
/// device does not run it that way).
type UnitRun<'a> = dyn FnMut(&mut [sdfg_exec::Argument]) -> Option<Result<sdfg_exec::Execution, sdfg_exec::ExecError>>
    + 'a;

/// The arguments of an emitted unit's entry point: the kernel's inputs as
/// the initializer left them, the symbols of the preset, and zeroed return
/// values of their shapes.
pub fn unit_arguments(
    unit: &sdfg_codegen::TranslationUnit,
    inputs: &BTreeMap<String, ArrayValue>,
    symbols: &BTreeMap<String, i64>,
) -> Result<Vec<sdfg_exec::Argument>, String> {
    unit.parameters
        .iter()
        .map(|p| match p.kind {
            sdfg_codegen::ParameterKind::Symbol(_) => symbols
                .get(&p.name)
                .map(|v| sdfg_exec::Argument::Symbol(*v))
                .ok_or_else(|| format!("the preset gives no value for the symbol `{}`", p.name)),
            sdfg_codegen::ParameterKind::Container(_) => {
                let v = inputs
                    .get(&p.name)
                    .ok_or_else(|| format!("no input for `{}`", p.name))?;
                match &p.layout {
                    Some(l) => lay_out(v, l, symbols)
                        .map(sdfg_exec::Argument::Array)
                        .map_err(|e| format!("`{}`: {e}", p.name)),
                    None => Ok(sdfg_exec::Argument::Array(v.clone())),
                }
            }
            sdfg_codegen::ParameterKind::Return(t) => {
                let shape = p
                    .shape
                    .iter()
                    .map(|e| {
                        e.eval(symbols)
                            .map_err(|e| e.to_string())
                            .and_then(|n| usize::try_from(n).map_err(|e| e.to_string()))
                    })
                    .collect::<Result<Vec<usize>, String>>()
                    .map_err(|e| format!("the shape of `{}`: {e}", p.name))?;
                let zeros = ArrayValue::try_zeros(&p.name, t, shape).map_err(|e| e.to_string())?;
                match &p.layout {
                    Some(l) => lay_out(&zeros, l, symbols).map(sdfg_exec::Argument::Array),
                    None => Ok(sdfg_exec::Argument::Array(zeros)),
                }
            }
        })
        .collect()
}

/// A fresh directory name under the system's temporary directory for one
/// use named `what`: runs of the same kernel may overlap (`--jobs`, tests
/// in one process), so the name has the process and a counter.
fn scratch_dir(what: &str) -> PathBuf {
    static USES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    std::env::temp_dir().join(format!(
        "sdfg-{}-{}-{}",
        what.replace('/', "_"),
        std::process::id(),
        USES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ))
}

/// Serializes the `gpu` stage's use of the GPU across the corpus runner's
/// threads ([`run_kernel`] may run on several at once).
static GPU: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The median time of the kernel alone under `module` (`numpy` on the host
/// CPU, `cupy` on the GPU) over [`RunOptions::repeat`] calls after one
/// warm-up (`corpus/tools/reference.py --time`), and whether its outputs
/// matched NumPy's; or why there is none (CuPy missing, or failing on the
/// kernel).
fn python_timing(
    kernel: &KernelFile,
    options: &RunOptions<'_>,
    module: &str,
) -> Result<(f64, bool), String> {
    options.python.clone()?;
    let dir = scratch_dir(&format!("timing-{}-{module}", kernel.name));
    let out = Command::new("python3")
        .arg(options.tools.join("reference.py"))
        .arg(&kernel.path)
        .args(["--preset", options.preset, "--out"])
        .arg(&dir)
        .args(["--time", &options.repeat.max(1).to_string()])
        .args(["--array-module", module])
        .output()
        .map_err(|e| format!("python3: {e}"))?;
    let result = if out.status.success() {
        std::fs::read_to_string(dir.join("timing.json"))
            .map_err(|e| e.to_string())
            .and_then(|text| {
                let v: serde_json::Value =
                    serde_json::from_str(&text).map_err(|e| e.to_string())?;
                let ms = v["median_ms"]
                    .as_f64()
                    .ok_or("timing.json has no median_ms")?;
                Ok((ms, v["matches_numpy"].as_bool().unwrap_or(false)))
            })
    } else {
        let text = String::from_utf8_lossy(&out.stderr);
        Err(text
            .trim()
            .trim_start_matches("reference.py: error: ")
            .lines()
            .last()
            .unwrap_or("failed")
            .to_owned())
    };
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// NumPy's outputs for the kernel (`corpus/tools/reference.py`), from the
/// cache when the kernel file and the runner are unchanged.
fn numpy_reference(
    kernel: &KernelFile,
    md: &Metadata,
    options: &RunOptions<'_>,
) -> Result<BTreeMap<String, ArrayValue>, Verdict> {
    options
        .python
        .clone()
        .map_err(|why| Verdict::Skip(format!("NumPy reference not run: {why}")))?;
    let fail = |e: &dyn std::fmt::Display| Verdict::Fail(e.to_string());
    let script = options.tools.join("reference.py");
    let mut key = 0xcbf2_9ce4_8422_2325_u64;
    for part in [
        std::fs::read(&kernel.path).map_err(|e| fail(&e))?,
        std::fs::read(&script).map_err(|e| fail(&e))?,
        options.preset.as_bytes().to_vec(),
    ] {
        for b in part {
            key = (key ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    let name = format!(
        "{}-{}-{key:016x}",
        kernel.name.replace('/', "_"),
        options.preset
    );
    let (dir, cached) = match options.references {
        Some(cache) => (cache.join(&name), true),
        None => (scratch_dir(&format!("reference-{name}")), false),
    };
    if !(cached && dir.is_dir()) {
        // Written elsewhere and renamed into place: runs of the corpus for
        // several backends at once never read a half-written reference.
        let fresh = dir.with_extension(
            scratch_dir("part")
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        );
        let out = Command::new("python3")
            .arg(&script)
            .arg(&kernel.path)
            .args(["--preset", options.preset, "--out"])
            .arg(&fresh)
            .output()
            .map_err(|e| fail(&e))?;
        if !out.status.success() {
            let _ = std::fs::remove_dir_all(&fresh);
            return Err(Verdict::Fail(format!(
                "reference run failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        if std::fs::rename(&fresh, &dir).is_err() {
            // Another run put the same reference there first.
            let _ = std::fs::remove_dir_all(&fresh);
        }
    }
    let mut outputs = BTreeMap::new();
    for name in &md.outputs {
        let v = sdfg_sim::npy::read(&dir.join(format!("{name}.npy"))).map_err(|e| fail(&e))?;
        outputs.insert(name.clone(), v);
    }
    if !cached {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(outputs)
}

/// The `BENCHMARK` metadata of a kernel file, for one preset.
#[derive(Clone, Debug)]
pub struct Metadata {
    /// The kernel program.
    pub program: String,
    /// The initializer program.
    pub init: Option<String>,
    /// Scalar argument values.
    pub scalars: BTreeMap<String, f64>,
    /// Compared outputs.
    pub outputs: Vec<String>,
    /// Symbol values of the preset.
    pub symbols: BTreeMap<String, i64>,
    /// Comparison tolerance.
    pub tolerance: Tolerance,
    /// Types of the kernel's unannotated parameters (a manifest's
    /// `signature`; empty for corpus files, whose parameters are annotated).
    pub signature: BTreeMap<String, String>,
}

/// NPBench's comparison rule.
#[derive(Clone, Copy, Debug)]
pub struct Tolerance {
    /// Relative tolerance of `allclose`.
    pub rtol: f64,
    /// Absolute tolerance of `allclose`.
    pub atol: f64,
    /// Bound on the relative Frobenius error.
    pub norm_error: f64,
}

impl Metadata {
    /// Reads the metadata of `module` for `preset`.
    pub fn read(module: &sdfg_frontend::Module, preset: &str) -> Result<Metadata, String> {
        let m = module.metadata().ok_or("the file has no BENCHMARK dict")?;
        let string = |key: &str| m.get(key).and_then(|v| v.as_str()).map(str::to_owned);
        let program = string("program").ok_or("BENCHMARK has no \"program\"")?;
        let presets = m
            .get("presets")
            .and_then(|p| p.as_object())
            .ok_or("BENCHMARK has no \"presets\"")?;
        let chosen = presets
            .get(preset)
            .and_then(|p| p.as_object())
            .ok_or_else(|| format!("BENCHMARK has no preset \"{preset}\""))?;
        // A preset gives symbol values, and may give scalar values of its
        // own (`"scalars": {...}`) over BENCHMARK's (a grid spacing that
        // follows from the grid size, say).
        let symbols = chosen
            .iter()
            .filter(|(k, _)| k.as_str() != "scalars")
            .map(|(k, v)| {
                v.as_i64()
                    .map(|v| (k.clone(), v))
                    .ok_or_else(|| format!("preset value `{k}` is not an integer"))
            })
            .collect::<Result<_, _>>()?;
        let numbers = |o: Option<&serde_json::Value>| -> Vec<(String, f64)> {
            o.and_then(|s| s.as_object())
                .map(|o| {
                    o.iter()
                        .filter_map(|(k, v)| v.as_f64().map(|v| (k.clone(), v)))
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut scalars: BTreeMap<String, f64> = numbers(m.get("scalars")).into_iter().collect();
        scalars.extend(numbers(chosen.get("scalars")));
        let outputs = m
            .get("outputs")
            .and_then(|o| o.as_array())
            .ok_or("BENCHMARK has no \"outputs\"")?
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        let tol = m.get("tolerance");
        let get = |k: &str, d: f64| {
            tol.and_then(|t| t.get(k))
                .and_then(|v| v.as_f64())
                .unwrap_or(d)
        };
        Ok(Metadata {
            program,
            init: string("init"),
            scalars,
            outputs,
            symbols,
            tolerance: Tolerance {
                rtol: get("rtol", 1e-5),
                atol: get("atol", 1e-8),
                norm_error: get("norm_error", 1e-5),
            },
            signature: BTreeMap::new(),
        })
    }
}

/// Runs the initializer on the host, then the kernel (on the host, or on
/// the simulated accelerator where it was offloaded, checking its kernels
/// for data races when `races` is set).
/// A simulated run: the kernel's inputs (as the initializer left them),
/// its outputs and what the simulator counted.
struct Simulated {
    inputs: BTreeMap<String, ArrayValue>,
    outputs: BTreeMap<String, ArrayValue>,
    report: RunReport,
}

/// Why [`simulate`] produced no outputs: the run's setup (argument
/// shapes, inputs), the initializer's run, or the program's own run,
/// whose typed error decides the verdict (a client's SDFG that reads
/// outside its arrays is refused, not failed).
#[derive(Debug, thiserror::Error)]
enum SimulateError {
    #[error("{0}")]
    Setup(String),
    #[error("initializer: {0}")]
    Init(sdfg_sim::SimError),
    #[error("{0}")]
    Run(sdfg_sim::SimError),
}

fn simulate(
    kernel: &Sdfg,
    init: Option<&Sdfg>,
    md: &Metadata,
    races: bool,
    given: Option<&BTreeMap<String, ArrayValue>>,
) -> Result<Simulated, SimulateError> {
    let mut sim = Simulator::new();
    sim.check_races(races);
    let shapes = sdfg_sim::argument_shapes(kernel, &md.symbols, Some(sdfg_sim::DEFAULT_MAX_MEMORY))
        .map_err(|e| SimulateError::Setup(e.to_string()))?;
    let mut arrays: BTreeMap<String, ArrayValue> = BTreeMap::new();
    for (name, (dtype, shape)) in &shapes {
        let value = match md.scalars.get(name) {
            Some(v) if shape.is_empty() => {
                let mut a = ArrayValue::zeros(*dtype, vec![]);
                a.elements.set(0, Value::Float(*v).cast(*dtype));
                a
            }
            _ => ArrayValue::try_zeros(name, *dtype, shape.clone())
                .map_err(|e| SimulateError::Setup(e.to_string()))?,
        };
        // Inputs given by NumPy's side, in the argument's type and shape.
        let value = match given.and_then(|g| g.get(name)) {
            Some(v) if v.shape == *shape => cast_array(v, *dtype),
            // A number given for a scalar, or an array whose shape differs
            // only in dimensions of length one (DaCe passes arrays by
            // pointer: nbody's `mass` of shape (N, 1) to `float64[N]`).
            Some(v) if squeezed(&v.shape) == squeezed(shape) => {
                let mut one = cast_array(v, *dtype);
                one.shape = shape.clone();
                one
            }
            Some(v) => {
                return Err(SimulateError::Setup(format!(
                    "input `{name}` has shape {:?}, the program expects {shape:?}",
                    v.shape
                )));
            }
            None => value,
        };
        arrays.insert(name.clone(), value);
    }
    if let Some(init) = init {
        let valid = sdfg_ir::validate(init).map_err(|e| SimulateError::Setup(e.to_string()))?;
        let args = arguments(init, &arrays, &md.symbols);
        let result = sim.run(valid, &args).map_err(SimulateError::Init)?;
        for (name, v) in result.outputs {
            if arrays.contains_key(&name) {
                arrays.insert(name, v);
            }
        }
    }
    let valid = sdfg_ir::validate(kernel).map_err(|e| SimulateError::Setup(e.to_string()))?;
    let args = arguments(kernel, &arrays, &md.symbols);
    let result = sim.run(valid, &args).map_err(SimulateError::Run)?;
    Ok(Simulated {
        inputs: arrays,
        outputs: result.outputs,
        report: result.report,
    })
}

fn arguments(
    sdfg: &Sdfg,
    arrays: &BTreeMap<String, ArrayValue>,
    symbols: &BTreeMap<String, i64>,
) -> Arguments {
    let mut args = Arguments::default();
    for name in &sdfg.arguments {
        if sdfg.containers.contains_key(name) {
            if let Some(a) = arrays.get(name) {
                args.arrays.insert(name.clone(), a.clone());
            }
        } else if let Some(v) = symbols.get(name) {
            args.symbols.insert(name.clone(), *v);
        }
    }
    args
}

/// The launches and host <-> device bytes of a run of `kernel` with the
/// arguments [`simulate`] gives it, counted without running it
/// ([`sdfg_sim::count_statically`]): its symbols, and the values of its
/// integer scalar arguments (zero where neither the preset nor NumPy's side
/// gives one, as in the run).
fn count_run(
    kernel: &Sdfg,
    md: &Metadata,
    given: Option<&BTreeMap<String, ArrayValue>>,
) -> Result<sdfg_sim::StaticCount, sdfg_sim::NotCountable> {
    let symbols = arguments(kernel, &BTreeMap::new(), &md.symbols).symbols;
    let mut scalars = BTreeMap::new();
    for name in &kernel.arguments {
        let Some(desc) = kernel.containers.get(name) else {
            continue;
        };
        if desc.kind != DataKind::Scalar || !(desc.dtype.is_integer() || desc.dtype == DType::Bool)
        {
            continue;
        }
        let value = match (given.and_then(|g| g.get(name)), md.scalars.get(name)) {
            (Some(a), _) => a.elements.get(0).map_or(0, Value::to_i64),
            (None, Some(v)) => Value::Float(*v).cast(desc.dtype).to_i64(),
            (None, None) => 0,
        };
        scalars.insert(name.clone(), value);
    }
    sdfg_sim::count_statically(kernel, &symbols, &scalars)
}

/// A shape without its dimensions of length one.
fn squeezed(shape: &[usize]) -> Vec<usize> {
    shape.iter().copied().filter(|d| *d != 1).collect()
}

/// NPBench's rule: `allclose(ref, val, rtol, atol)` or a relative Frobenius
/// error below `norm_error`, on complex values (real ones widened), NaN
/// equal to NaN. The one comparison of outputs: against NumPy, host against
/// device, and in the fuzzing campaign.
pub fn compare(
    name: &str,
    ours: &ArrayValue,
    reference: &ArrayValue,
    tol: &Tolerance,
) -> Result<(), String> {
    let n = reference.elements.len();
    if ours.elements.len() != n {
        return Err(format!(
            "`{name}`: shape {:?} differs from the reference's {:?}",
            ours.shape, reference.shape
        ));
    }
    // Integers and truth values have no rounding: they compare exactly
    // (as 64-bit floats, two uint64 or int64 values above 2**53 that
    // differ in their last bits would look equal).
    let exact = |d: DType| d == DType::Bool || d.is_integer();
    if exact(ours.dtype()) && exact(reference.dtype()) {
        let wide = |a: &ArrayValue, i: usize| match a.get(i) {
            Some(Value::Int(v)) => Some(i128::from(v)),
            Some(Value::UInt(v)) => Some(i128::from(v)),
            Some(Value::Bool(b)) => Some(i128::from(b)),
            _ => None,
        };
        let differing = (0..n).filter(|&i| wide(ours, i) != wide(reference, i));
        let count = differing.clone().count();
        return match differing.clone().next() {
            None => Ok(()),
            Some(i) => Err(format!(
                "`{name}` differs in {count} of {n} elements (integers compare exactly): element {i} is {}, the reference's {}",
                wide(ours, i).map_or("missing".to_owned(), |v| v.to_string()),
                wide(reference, i).map_or("missing".to_owned(), |v| v.to_string()),
            )),
        };
    }
    let complex = |a: &ArrayValue, i: usize| {
        a.get(i)
            .map_or(sdfg_sim::value::C64::new(f64::NAN, 0.0), Value::to_c64)
    };
    let (mut close, mut diff2, mut ref2) = (true, 0.0, 0.0);
    let mut worst = (0usize, 0.0f64);
    for i in 0..n {
        let (a, b) = (complex(ours, i), complex(reference, i));
        let d = (a - b).norm();
        // Equal values are close (infinities of one sign too, whose
        // difference is NaN), as NaN is to NaN (NumPy's `equal_nan`, for
        // which a complex number with a NaN part is NaN: `-inf + nan j`
        // counted as a difference from itself).
        let nan = |c: sdfg_sim::value::C64| c.re.is_nan() || c.im.is_nan();
        let same = a == b || (nan(a) && nan(b));
        // NaN and infinite differences count as not close (an infinite
        // reference would otherwise make every tolerance infinite).
        let within = d.is_finite() && d <= tol.atol + tol.rtol * b.norm();
        if !same && !within {
            close = false;
            if d.partial_cmp(&worst.1).is_none_or(|o| o.is_gt()) {
                worst = (i, d);
            }
        }
        if !same {
            diff2 += d * d;
            ref2 += b.norm_sqr();
        }
    }
    if close {
        return Ok(());
    }
    let rel = if ref2 > 0.0 {
        (diff2 / ref2).sqrt()
    } else {
        diff2.sqrt()
    };
    if rel < tol.norm_error {
        return Ok(());
    }
    Err(format!(
        "`{name}` differs: worst element {} off by {:.3e}, relative error {rel:.3e}",
        worst.0, worst.1
    ))
}

/// The dtype and shape of every kernel argument (for reports).
pub fn describe(shapes: &BTreeMap<String, (DType, Vec<usize>)>) -> String {
    shapes
        .iter()
        .map(|(n, (d, s))| format!("{n}: {d}{s:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::Metadata;

    #[test]
    fn equal_infinities_and_nans_compare_equal_and_other_values_do_not() {
        // Found by `cargo xtask fuzz`: `x / False` is inf on both sides, and
        // inf - inf is NaN, which counted as a difference.
        use super::{Tolerance, compare};
        use sdfg_sim::ArrayValue;
        let tol = Tolerance {
            rtol: 1e-9,
            atol: 1e-9,
            norm_error: 0.0,
        };
        let v = |xs: &[f64]| ArrayValue::f64(vec![xs.len()], xs.to_vec());
        let special = v(&[f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 1.0]);
        assert_eq!(compare("a", &special, &special, &tol), Ok(()));
        for other in [
            v(&[f64::NEG_INFINITY, f64::NEG_INFINITY, f64::NAN, 1.0]),
            v(&[f64::INFINITY, f64::NEG_INFINITY, 0.0, 1.0]),
            v(&[f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 1.1]),
        ] {
            assert!(compare("a", &other, &special, &tol).is_err(), "{other:?}");
        }
        // Complex values with a NaN part (found by the `long-chains` fuzz
        // target: `x ** x` of complex zeros and infinities), compared with
        // themselves.
        use sdfg_sim::value::C64;
        let c = |xs: &[C64]| ArrayValue::new(vec![xs.len()], sdfg_sim::Elements::C128(xs.to_vec()));
        let special = c(&[
            C64::new(f64::NEG_INFINITY, f64::NAN),
            C64::new(f64::NAN, f64::INFINITY),
            C64::new(1.0, 2.0),
        ]);
        assert_eq!(compare("c", &special, &special, &tol), Ok(()));
        let other = c(&[
            C64::new(f64::NEG_INFINITY, 0.0),
            C64::new(f64::NAN, f64::INFINITY),
            C64::new(1.0, 2.0),
        ]);
        assert!(compare("c", &other, &special, &tol).is_err());
    }

    #[test]
    fn integers_compare_exactly() {
        // Two uint64 values above 2**53 one apart are one double: compared
        // as doubles, a wrong last bit passed; and a relative tolerance
        // forgave 1,000,000 for 1,000,001.
        use super::{Tolerance, compare};
        use sdfg_sim::{ArrayValue, Elements};
        let tol = Tolerance {
            rtol: 1e-5,
            atol: 1e-8,
            norm_error: 1e-5,
        };
        let big = |x: u64| ArrayValue::new(vec![1], Elements::U64(vec![x]));
        let wanted = big((1 << 60) + 1);
        assert_eq!(compare("u", &wanted, &wanted, &tol), Ok(()));
        let e = compare("u", &big(1 << 60), &wanted, &tol).unwrap_err();
        assert!(
            e.contains("compare exactly") && e.contains("1152921504606846977"),
            "{e}"
        );
        let ints = |x: i64| ArrayValue::i64(vec![1], vec![x]);
        assert!(compare("i", &ints(1_000_001), &ints(1_000_000), &tol).is_err());
        // Control: floats keep NumPy's tolerances.
        let floats = |x: f64| ArrayValue::f64(vec![1], vec![x]);
        assert_eq!(
            compare("f", &floats(1_000_001.0), &floats(1_000_000.0), &tol),
            Ok(())
        );
    }

    #[test]
    fn a_preset_gives_scalar_values_over_the_benchmarks() {
        let src = "import dace as dc\nN = dc.symbol('N')\n\n@dc.program\ndef kernel(a: dc.float64[N], h: dc.float64, c: dc.float64):\n    a[:] = h * c\n\nBENCHMARK = {\n    'program': 'kernel',\n    'scalars': {'h': 1.0, 'c': 3.0},\n    'outputs': ['a'],\n    'presets': {\n        'test': {'N': 4, 'scalars': {'h': 0.25}},\n        'S': {'N': 8},\n    },\n}\n";
        let module = sdfg_frontend::Module::parse("k.py", src).unwrap();
        let test = Metadata::read(&module, "test").unwrap();
        assert_eq!(test.symbols.get("N"), Some(&4));
        assert!(!test.symbols.contains_key("scalars"));
        assert_eq!(test.scalars.get("h"), Some(&0.25));
        assert_eq!(test.scalars.get("c"), Some(&3.0));
        // Control: a preset without its own keeps BENCHMARK's.
        let s = Metadata::read(&module, "S").unwrap();
        assert_eq!(s.scalars.get("h"), Some(&1.0));
    }
}

/// A directory of unmodified DaCe programs with what runs and checks them:
/// the `programs.json` format (`docs/corpus.md`, "Programs as they are").
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Where the files are, relative to the manifest (default: its folder).
    #[serde(default)]
    pub root: Option<String>,
    /// The programs.
    pub programs: Vec<ProgramEntry>,
}

/// One unmodified DaCe program, its sizes, and the NumPy code it is
/// compared with.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramEntry {
    /// The row's name.
    pub name: String,
    /// The file of the DaCe program, as it is (relative to the root).
    pub file: String,
    /// The `@dace.program` to compile.
    pub program: String,
    /// Sizes (symbols) and scalars by name.
    #[serde(default)]
    pub parameters: BTreeMap<String, serde_json::Value>,
    /// A Python function making the inputs from parameters.
    #[serde(default)]
    pub init: Option<InitSpec>,
    /// A NumPy function computing what the program computes.
    pub reference: FunctionSpec,
    /// The names passed to the reference, in order (the program takes the
    /// same names; symbols it infers from the arrays' shapes).
    #[serde(default)]
    pub arguments: Vec<String>,
    /// Arguments compared after the run; none: the return values.
    #[serde(default)]
    pub outputs: Vec<String>,
    /// The comparison's tolerance (NPBench's defaults otherwise).
    #[serde(default)]
    pub tolerance: Option<BTreeMap<String, f64>>,
    /// Types of the program's unannotated parameters (`"A": "float64[N]"`),
    /// which DaCe takes from the call's arguments
    /// ([`sdfg_frontend::Module::compile_with`]).
    #[serde(default)]
    pub signature: BTreeMap<String, String>,
}

/// The initializer of a manifest entry.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InitSpec {
    /// Its file (relative to the root).
    pub file: String,
    /// Its function.
    pub function: String,
    /// Parameters it is called with, in order.
    #[serde(default)]
    pub args: Vec<String>,
    /// Names of the values it returns, in order.
    #[serde(default)]
    pub outputs: Vec<String>,
}

/// A Python function in a file (relative to the root).
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FunctionSpec {
    /// The file.
    pub file: String,
    /// The function.
    pub function: String,
}

impl Manifest {
    /// Reads a manifest; returns it with the directory its paths are relative to.
    pub fn read(path: &Path) -> Result<(Manifest, PathBuf), String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
        let m: Manifest = serde_json::from_str(&text)
            .map_err(|e| format!("`{}` is not a programs manifest: {e}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        let root = match &m.root {
            Some(r) => base.join(r),
            None => base.to_path_buf(),
        };
        Ok((m, root))
    }
}

impl ProgramEntry {
    /// The entry as corpus metadata: its integer parameters are symbol
    /// values, the others scalars; no initializer program (NumPy's side
    /// makes the inputs).
    fn metadata(&self) -> Metadata {
        let mut symbols = BTreeMap::new();
        let mut scalars = BTreeMap::new();
        for (k, v) in &self.parameters {
            if let Some(i) = v.as_i64() {
                symbols.insert(k.clone(), i);
            } else if let Some(f) = v.as_f64() {
                scalars.insert(k.clone(), f);
            }
        }
        let tol = |k: &str, d: f64| {
            self.tolerance
                .as_ref()
                .and_then(|t| t.get(k).copied())
                .unwrap_or(d)
        };
        Metadata {
            program: self.program.clone(),
            init: None,
            scalars,
            outputs: self.outputs.clone(),
            symbols,
            tolerance: Tolerance {
                rtol: tol("rtol", 1e-5),
                atol: tol("atol", 1e-8),
                norm_error: tol("norm_error", 1e-5),
            },
            signature: self.signature.clone(),
        }
    }
}

/// The inputs and NumPy's outputs of a manifest entry
/// (`corpus/tools/programs_reference.py`). Where the entry lists no
/// outputs, the program's return values are compared.
fn program_reference(
    entry: &ProgramEntry,
    manifest: &Path,
    root: &Path,
    md: &Metadata,
    options: &RunOptions<'_>,
) -> Result<Reference, Verdict> {
    options
        .python
        .clone()
        .map_err(|why| Verdict::Skip(format!("NumPy reference not run: {why}")))?;
    let fail = |e: &dyn std::fmt::Display| Verdict::Fail(e.to_string());
    let dir = scratch_dir(&format!("programs-{}", entry.name));
    let _ = std::fs::remove_dir_all(&dir);
    let out = Command::new("python3")
        .arg(options.tools.join("programs_reference.py"))
        .arg(manifest)
        .arg(&entry.name)
        .arg("--root")
        .arg(root)
        .arg("--out")
        .arg(&dir)
        .output()
        .map_err(|e| fail(&e))?;
    if !out.status.success() {
        return Err(Verdict::Fail(format!(
            "reference run failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let read_dir = |d: &Path| -> Result<BTreeMap<String, ArrayValue>, Verdict> {
        let mut m = BTreeMap::new();
        for f in std::fs::read_dir(d).map_err(|e| fail(&e))? {
            let p = f.map_err(|e| fail(&e))?.path();
            if p.extension().is_some_and(|e| e == "npy") {
                let name = p
                    .file_stem()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned();
                m.insert(name, sdfg_sim::npy::read(&p).map_err(|e| fail(&e))?);
            }
        }
        Ok(m)
    };
    let inputs = read_dir(&dir.join("inputs"))?;
    let mut outputs = read_dir(&dir)?;
    outputs.retain(|k, _| md.outputs.is_empty() || md.outputs.contains(k));
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Reference {
        outputs,
        inputs: Some(inputs),
    })
}

/// A client case's inputs and the tool's answer (`expected/`).
fn client_reference(case: &crate::clients::ClientCase) -> Result<Reference, Verdict> {
    Ok(Reference {
        outputs: case.expected().map_err(Verdict::Fail)?,
        inputs: Some(case.inputs().map_err(Verdict::Fail)?),
    })
}

/// Binds each symbol that is a whole dimension of an array argument of
/// `sdfg` and has no value yet to that input's extent, as DaCe infers a
/// program's symbols from its arguments.
fn infer_symbols(
    sdfg: &Sdfg,
    inputs: &BTreeMap<String, ArrayValue>,
    symbols: &mut BTreeMap<String, i64>,
) {
    for name in &sdfg.arguments {
        let (Some(desc), Some(v)) = (sdfg.containers.get(name), inputs.get(name)) else {
            continue;
        };
        let shape = desc.shape();
        if desc.is_scalar() || shape.len() != v.shape.len() {
            continue;
        }
        for (dim, extent) in shape.iter().zip(&v.shape) {
            let free = dim.free_symbols();
            if let [s] = free.iter().collect::<Vec<_>>()[..]
                && *dim == SymExpr::symbol(s.clone())
                && !symbols.contains_key(s)
            {
                symbols.insert(s.clone(), *extent as i64);
            }
        }
    }
    // Symbol arguments given as 0-d inputs (a size passed as an argument).
    for name in &sdfg.arguments {
        if sdfg.symbols.contains_key(name)
            && !symbols.contains_key(name)
            && let Some(v) = inputs.get(name).and_then(|v| v.get(0))
        {
            symbols.insert(name.clone(), v.to_i64());
        }
    }
}

/// `v` with its elements converted to `dtype`.
fn cast_array(v: &ArrayValue, dtype: DType) -> ArrayValue {
    if v.dtype() == dtype {
        return v.clone();
    }
    let mut out = ArrayValue::zeros(dtype, v.shape.clone());
    for i in 0..v.elements.len() {
        if let Some(x) = v.get(i) {
            out.elements.set(i, x.cast(dtype));
        }
    }
    out
}
