//! The child process a unit runs in on the emulated GPU.
//!
//! Generated code that faults must not take the harness down with it, and
//! the sanitizers' runtimes must be loaded before anything else (they are
//! preloaded into the child). So the emulated GPU writes a request into a
//! directory and starts a *runner*: any binary that passes its arguments to
//! [`dispatch`] first thing in `main` (`sdfgc`, `cargo xtask`, and
//! `sdfg-exec-child` do). The runner loads the library with the
//! [`loader`](crate::loader), calls `init`, `run` and `exit`, and writes the
//! outputs and what the emulation counted back into the directory.
//!
//! The directory holds `request.json` ([`Request`]), `in/K.npy` for each
//! array parameter `K` (by position), and, once the runner is done,
//! `out/K.npy` and `result.json` ([`Response`]).

use crate::loader::Loaded;
use crate::{Argument, Compiled, Counts, ExecError, Execution, Live, Timing};
use sdfg_codegen::{Parameter, ParameterKind};
use sdfg_ir::{DType, SymExpr};
use sdfg_sim::npy;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The first argument that makes a runner serve a request.
pub const CHILD_FLAG: &str = "__sdfg-exec-child";

/// What the runner is asked to do.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Request {
    /// The compiled unit.
    pub library: PathBuf,
    /// The one-shot entry point's name.
    pub entry: String,
    /// One slot per parameter, in order.
    pub slots: Vec<Slot>,
    /// How many times `NAME_run` is called on one state and timed (the
    /// outputs and counts are those of the last run; each run starts from
    /// the inputs).
    pub runs: u32,
    /// Untimed calls of `NAME_run` before those.
    #[serde(default)]
    pub warmup: u32,
    /// The [`TimerFactory`](crate::TimerFactory) that times the runs, by
    /// name (`None`: the host's clock).
    #[serde(default)]
    pub timer: Option<String>,
}

/// One parameter with the value the call gives it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Slot {
    /// The parameter's name.
    pub name: String,
    /// How it is passed, with its dtype.
    pub kind: SlotKind,
    /// The array's shape (for containers and return values).
    pub shape: Vec<usize>,
    /// The symbol's value.
    pub value: Option<i64>,
    /// Whether the container's home is the device: the runner stages it
    /// there before each run ([`Loaded::stage`]).
    #[serde(default)]
    pub on_device: bool,
}

/// A parameter's kind and dtype, as the request spells them
/// (`{"container": "float64"}`, `{"symbol": "int64"}`, `{"return": ...}`).
#[derive(Clone, Copy, Debug)]
pub struct SlotKind(pub ParameterKind);

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum SlotKindText {
    Container(DType),
    Symbol(DType),
    Return(DType),
}

impl Serialize for SlotKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            ParameterKind::Container(t) => SlotKindText::Container(t),
            ParameterKind::Symbol(t) => SlotKindText::Symbol(t),
            ParameterKind::Return(t) => SlotKindText::Return(t),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for SlotKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SlotKind, D::Error> {
        Ok(SlotKind(match SlotKindText::deserialize(d)? {
            SlotKindText::Container(t) => ParameterKind::Container(t),
            SlotKindText::Symbol(t) => ParameterKind::Symbol(t),
            SlotKindText::Return(t) => ParameterKind::Return(t),
        }))
    }
}

/// What the runner did.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Response {
    /// `NAME_init` gave no state.
    pub init_failed: bool,
    /// What `NAME_run` returned.
    pub status: i32,
    /// What `NAME_exit` returned.
    pub exit_status: i32,
    /// The emulation's counts over the run.
    pub counts: Option<Counts>,
    /// What was live after `NAME_exit`.
    pub live_after_exit: Option<Live>,
    /// The milliseconds of each timed run.
    #[serde(default)]
    pub run_millis: Vec<f64>,
}

impl Request {
    /// The request for `compiled` with `arguments`.
    pub fn new(compiled: &Compiled, arguments: &[Argument]) -> Request {
        let slots = compiled
            .parameters
            .iter()
            .zip(arguments)
            .map(|(p, a)| {
                let (shape, value) = match a {
                    Argument::Array(v) => (v.shape.clone(), None),
                    Argument::Symbol(v) => (Vec::new(), Some(*v)),
                };
                Slot {
                    name: p.name.clone(),
                    kind: SlotKind(p.kind),
                    shape,
                    value,
                    on_device: p.home == sdfg_ir::Side::Device,
                }
            })
            .collect();
        Request {
            library: compiled.library.clone(),
            entry: compiled.entry.clone(),
            slots,
            runs: 1,
            warmup: 0,
            timer: None,
        }
    }

    /// The compiled unit the request names, its shapes made concrete.
    fn compiled(&self) -> Result<Compiled, ExecError> {
        let parameters = self
            .slots
            .iter()
            .map(|s| {
                let shape = s
                    .shape
                    .iter()
                    .map(|n| i64::try_from(*n).map(SymExpr::int))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| ExecError::io("request.json", e))?;
                // The buffer as the caller laid it out: its own shape.
                Ok(Parameter {
                    name: s.name.clone(),
                    kind: s.kind.0,
                    layout: None,
                    shape,
                    home: if s.on_device {
                        sdfg_ir::Side::Device
                    } else {
                        sdfg_ir::Side::Host
                    },
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Compiled {
            library: self.library.clone(),
            entry: self.entry.clone(),
            parameters,
        })
    }
}

/// Writes the request and the input arrays into `dir`.
pub fn write_request(
    dir: &Path,
    request: &Request,
    arguments: &[Argument],
) -> Result<(), ExecError> {
    let inputs = dir.join("in");
    std::fs::create_dir_all(&inputs).map_err(|e| ExecError::io(inputs.display(), e))?;
    for (k, a) in arguments.iter().enumerate() {
        if let Argument::Array(v) = a {
            npy::write(&inputs.join(format!("{k}.npy")), v)
                .map_err(|e| ExecError::io("writing an input", e))?;
        }
    }
    let text =
        serde_json::to_string_pretty(request).map_err(|e| ExecError::io("request.json", e))?;
    std::fs::write(dir.join("request.json"), text).map_err(|e| ExecError::io("request.json", e))
}

/// Reads what the runner wrote into `dir` back into `arguments`.
pub fn read_response(dir: &Path, arguments: &mut [Argument]) -> Result<Response, ExecError> {
    let path = dir.join("result.json");
    let text = std::fs::read_to_string(&path).map_err(|e| ExecError::io(path.display(), e))?;
    let response: Response =
        serde_json::from_str(&text).map_err(|e| ExecError::io(path.display(), e))?;
    if !response.init_failed {
        for (k, a) in arguments.iter_mut().enumerate() {
            if let Argument::Array(v) = a {
                *v = npy::read(&dir.join("out").join(format!("{k}.npy")))
                    .map_err(|e| ExecError::io("reading an output", e))?;
            }
        }
    }
    Ok(response)
}

/// Serves a request when `args` (the program's arguments after its name)
/// start with [`CHILD_FLAG`]; returns the exit code, or `None` when they do
/// not, so that `main` goes on as usual.
pub fn dispatch(args: &[String]) -> Option<i32> {
    if args.first().map(String::as_str) != Some(CHILD_FLAG) {
        return None;
    }
    let Some(dir) = args.get(1) else {
        eprintln!("{CHILD_FLAG}: expected the request's directory");
        return Some(2);
    };
    Some(match serve(Path::new(dir)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{CHILD_FLAG}: {e}");
            2
        }
    })
}

fn serve(dir: &Path) -> Result<(), ExecError> {
    let path = dir.join("request.json");
    let text = std::fs::read_to_string(&path).map_err(|e| ExecError::io(path.display(), e))?;
    let request: Request =
        serde_json::from_str(&text).map_err(|e| ExecError::io(path.display(), e))?;
    let compiled = request.compiled()?;
    let mut arguments = Vec::with_capacity(request.slots.len());
    for (k, s) in request.slots.iter().enumerate() {
        arguments.push(match s.value {
            Some(v) => Argument::Symbol(v),
            None => Argument::Array(
                npy::read(&dir.join("in").join(format!("{k}.npy")))
                    .map_err(|e| ExecError::io("reading an input", e))?,
            ),
        });
    }
    let loaded = Loaded::open(&compiled)?;
    let mut response = Response::default();
    match loaded.init(&arguments) {
        Err(ExecError::Init { .. }) => response.init_failed = true,
        Err(e) => return Err(e),
        Ok(state) => {
            let inputs = arguments.clone();
            // A device error names the call and the program it was timing.
            let entry = &request.entry;
            let naming = |e: ExecError| match e {
                ExecError::Device { call, message } => ExecError::Device {
                    call: format!("{call}, timing `{entry}_run`"),
                    message,
                },
                other => other,
            };
            let mut timer = crate::make_timer(request.timer.as_deref()).map_err(naming)?;
            let warmup = request.warmup;
            for k in 0..warmup + request.runs.max(1) {
                if k > 0 {
                    arguments.clone_from(&inputs);
                }
                // Arguments whose home is the device go there first, as a
                // caller's CuPy arrays are there before the call.
                let staged = loaded.stage(&arguments)?;
                // Counted from here: what one run does.
                loaded.emulation_reset();
                timer.start().map_err(naming)?;
                response.status = loaded.run(&state, &mut arguments, &staged)?;
                let millis = timer.stop().map_err(naming)?;
                if k >= warmup {
                    response.run_millis.push(millis);
                }
                response.counts = report(&loaded)?.map(|(c, _)| c);
                loaded.unstage(staged, &mut arguments)?;
                if response.status != 0 {
                    break;
                }
            }
            response.exit_status = loaded.exit(state);
        }
    }
    response.live_after_exit = report(&loaded)?.map(|(_, l)| l);
    let outputs = dir.join("out");
    std::fs::create_dir_all(&outputs).map_err(|e| ExecError::io(outputs.display(), e))?;
    for (k, a) in arguments.iter().enumerate() {
        if let Argument::Array(v) = a {
            npy::write(&outputs.join(format!("{k}.npy")), v)
                .map_err(|e| ExecError::io("writing an output", e))?;
        }
    }
    let text =
        serde_json::to_string_pretty(&response).map_err(|e| ExecError::io("result.json", e))?;
    std::fs::write(dir.join("result.json"), text).map_err(|e| ExecError::io("result.json", e))
}

/// The emulation's counts and live objects, in an emulated build.
fn report(loaded: &Loaded) -> Result<Option<(Counts, Live)>, ExecError> {
    let Some(text) = loaded.emulation_report() else {
        return Ok(None);
    };
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| ExecError::io("the emulation's report", e))?;
    let counts: Counts = serde_json::from_value(value.clone())
        .map_err(|e| ExecError::io("the emulation's report", e))?;
    let live: Live = serde_json::from_value(value.get("live").cloned().unwrap_or_default())
        .map_err(|e| ExecError::io("the emulation's report", e))?;
    Ok(Some((counts, live)))
}

/// Starts child processes that serve requests: a runner binary (and the
/// arguments before [`CHILD_FLAG`]), its environment, and a time limit.
/// Every [`Device`](crate::Device) that runs units out of process (the
/// emulated GPU, the real ones) executes through it.
#[derive(Clone, Debug)]
pub struct Runner {
    /// The runner binary and the arguments before [`CHILD_FLAG`].
    pub command: Vec<String>,
    /// Environment variables of the child.
    pub env: Vec<(String, String)>,
    /// A child running longer is stopped ([`ExecError::Timeout`]).
    pub timeout: Duration,
}

impl Runner {
    /// A runner that is the binary `program`, with a 15-minute limit.
    pub fn new(program: impl Into<PathBuf>) -> Runner {
        Runner {
            command: vec![program.into().display().to_string()],
            env: Vec::new(),
            timeout: Duration::from_secs(900),
        }
    }

    /// Runs `compiled` once in a child: `init`, the runs `timing` asks for,
    /// `exit`. `arguments` are updated with the last run's outputs.
    pub fn execute(
        &self,
        compiled: &Compiled,
        arguments: &mut [Argument],
        timing: &Timing,
        env: &[(String, String)],
    ) -> Result<Execution, ExecError> {
        crate::check_arguments(&compiled.parameters, arguments)?;
        static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let base = compiled.library.parent().unwrap_or(Path::new("."));
        let dir = base.join(format!("run-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| ExecError::io(dir.display(), e))?;
        let mut request = Request::new(compiled, arguments);
        request.runs = timing.runs.max(1);
        request.warmup = timing.warmup;
        request.timer = timing.timer.map(str::to_owned);
        write_request(&dir, &request, arguments)?;
        let (program, leading) = self
            .command
            .split_first()
            .ok_or_else(|| ExecError::Missing("no runner binary".to_owned()))?;
        let mut cmd = Command::new(program);
        cmd.args(leading).arg(CHILD_FLAG).arg(&dir);
        for (k, v) in self.env.iter().chain(env) {
            cmd.env(k, v);
        }
        let stderr_path = dir.join("stderr.txt");
        let stderr = std::fs::File::create(&stderr_path)
            .map_err(|e| ExecError::io(stderr_path.display(), e))?;
        let stdout = stderr
            .try_clone()
            .map_err(|e| ExecError::io(stderr_path.display(), e))?;
        cmd.stdin(Stdio::null()).stdout(stdout).stderr(stderr);
        let mut process = cmd
            .spawn()
            .map_err(|e| ExecError::io(format!("starting `{program}`"), e))?;
        let start = Instant::now();
        let status = loop {
            match process.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if start.elapsed() > self.timeout => {
                    let _ = process.kill();
                    let _ = process.wait();
                    return Err(ExecError::Timeout {
                        seconds: self.timeout.as_secs(),
                    });
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                Err(e) => return Err(ExecError::io("waiting for the runner", e)),
            }
        };
        let messages = std::fs::read_to_string(&stderr_path).unwrap_or_default();
        if !status.success() {
            use std::os::unix::process::ExitStatusExt;
            let how = match (status.code(), status.signal()) {
                (_, Some(sig)) => format!("was killed by signal {sig} ({})", signal_name(sig)),
                (Some(code), _) => format!("exited with status {code}"),
                _ => "ended abnormally".to_owned(),
            };
            return Err(ExecError::Crashed { how, messages });
        }
        let response = read_response(&dir, arguments)?;
        if response.init_failed {
            return Err(ExecError::Init {
                entry: compiled.entry.clone(),
                messages,
                live: response.live_after_exit,
            });
        }
        let _ = std::fs::remove_dir_all(&dir);
        Ok(Execution {
            status: if response.status != 0 {
                response.status
            } else {
                response.exit_status
            },
            messages,
            counts: response.counts,
            live_after_exit: response.live_after_exit,
            run_millis: response.run_millis,
        })
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        _ => "a signal",
    }
}
