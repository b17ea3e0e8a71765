//! `cargo xtask fuzz`: a time-bounded fuzzing campaign of the whole
//! pipeline, on stable Rust.
//!
//! Five targets, each a stream of inputs checked against one set of
//! properties ([`check_sdfg`]):
//!
//! - `programs`: Python programs of the supported subset, generated from
//!   their structure ([`generate`], a proptest strategy, so a failing
//!   program shrinks to a small one). The frontend must accept them, and
//!   what the SDFG computes must be what NumPy computes running the
//!   program as Python ([`oracle`]); where the CUDA unit launches a
//!   persistent kernel, the emulated GPU runs it to NumPy's answer in
//!   every interleaving of its threads ([`check_persistent`]).
//! - `python-mutants`: the corpus files with a few token and line
//!   mutations ([`mutate::python`]); the frontend may refuse them, but only
//!   with an error.
//! - `json-mutants`: the corpus kernels' SDFGs as JSON with a few
//!   structural mutations ([`mutate::json_mutations`]); loading and validation may
//!   refuse them, but what validates must run.
//! - `dace-mutants`: DaCe's own SDFGs of corpus kernels (as lowered and
//!   after DaCe's GPU transformations) with structural and DaCe-specific
//!   mutations, read by the DaCe-format import ([`dace`]).
//! - `long-chains`: every reader of text (programs, DaCe tasklet code,
//!   interstate assignments, conditions, symbolic strings of both formats)
//!   given chains of random kinds and lengths ([`chains`]): a result or a
//!   clean error, never an overflowed stack, with messages of bounded size.
//!
//! The properties: no panic, no abort, no hang; every pass keeps a valid
//! SDFG valid; offloading is idempotent and its JSON round-trips exactly;
//! the offloaded SDFG simulates to the host SDFG's outputs (the simulator
//! runs with a step and a memory limit, so a program that does not end is
//! an error, not a hang); code generation for CUDA never panics.
//!
//! Each target runs in a child process (`xtask fuzz-worker`), which writes
//! every input to `target/fuzz/TARGET.current` before checking it: an
//! abort or a stack overflow kills only the child, and the parent reports
//! the input that killed it; a child past its time is killed and its input
//! reported as a hang. A panic or a broken property is caught in the
//! child, minimized (shrinking for generated programs, line deletion for
//! Python mutants, dropping mutations for JSON ones) and written to
//! `target/fuzz/TARGET.finding`; the campaign fails on any finding.

mod chains;
mod dace;
mod generate;
mod mutate;
mod oracle;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use sdfg_ir::Sdfg;
use sdfg_passes::{Pass, PipelineOptions};
use sdfg_sim::{Arguments, SimError, Simulator};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The targets, in the order they run.
const TARGETS: [&str; 5] = [
    "programs",
    "python-mutants",
    "json-mutants",
    "dace-mutants",
    "long-chains",
];

/// The most steps a simulated run may take, and the most bytes it may
/// allocate: fuzzed programs are small, and the limits turn a program that
/// does not end, or asks for the machine, into a clean error.
const STEP_LIMIT: u64 = 200_000;
const MEMORY_LIMIT: u64 = 64 << 20;

/// What checking one input found.
enum Outcome {
    /// Every property held.
    Passed,
    /// Refused cleanly somewhere (a frontend, load or validation error, an
    /// unsupported construct, a run past its limits): nothing to check.
    Refused,
    /// A property did not hold.
    Finding(String),
}

/// `cargo xtask fuzz [--seconds N] [--seed S] [--target NAME]...`.
pub(crate) fn campaign(args: &[String], root: &Path) -> Result<ExitCode, String> {
    let mut seconds = 60u64;
    let mut seed = 0u64;
    let mut targets: Vec<String> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |what: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("`{a}` needs {what}"))
        };
        match a.as_str() {
            "--seconds" => {
                seconds = value("a number of seconds")?
                    .parse()
                    .map_err(|_| "`--seconds` needs a whole number".to_owned())?;
            }
            "--seed" => {
                seed = value("a number")?
                    .parse()
                    .map_err(|_| "`--seed` needs a whole number".to_owned())?;
            }
            "--target" => {
                let t = value("a target")?;
                if !TARGETS.contains(&t.as_str()) {
                    return Err(format!("unknown target `{t}` (one of {TARGETS:?})"));
                }
                targets.push(t);
            }
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    if targets.is_empty() {
        targets = TARGETS.iter().map(|t| (*t).to_owned()).collect();
    }
    let dir = root.join("target/fuzz");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create `{}`: {e}", dir.display()))?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let share = (seconds / targets.len() as u64).max(1);
    let mut failed = false;
    for target in &targets {
        for stale in ["current", "finding"] {
            let _ = std::fs::remove_file(dir.join(format!("{target}.{stale}")));
        }
        let started = Instant::now();
        let mut child = Command::new(&exe)
            .env("SDFG_ROOT", root)
            .args(["fuzz-worker", target, &share.to_string(), &seed.to_string()])
            .arg(&dir)
            .spawn()
            .map_err(|e| format!("cannot start the worker: {e}"))?;
        // Time to minimize a finding, beyond the share, before a worker
        // counts as hung.
        let deadline = Duration::from_secs(share + 120);
        let status = loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                break Some(status);
            }
            if started.elapsed() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let read = |kind: &str| std::fs::read_to_string(dir.join(format!("{target}.{kind}"))).ok();
        match status {
            Some(s) if s.success() => {}
            Some(s) => {
                failed = true;
                match read("finding") {
                    Some(finding) => println!("{target}: FINDING\n{finding}"),
                    None => println!(
                        "{target}: the worker died ({s}) on this input (target/fuzz/{target}.current):\n{}",
                        read("current").unwrap_or_default()
                    ),
                }
            }
            None => {
                failed = true;
                println!(
                    "{target}: HANG, no result after {} s on this input (target/fuzz/{target}.current):\n{}",
                    deadline.as_secs(),
                    read("current").unwrap_or_default()
                );
            }
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Generated programs whose persistent kernels ran on the emulated GPU
/// ([`check_persistent`]), for the worker's summary.
static PERSISTENT_RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The message and place of the latest panic, recorded by the hook the
/// worker installs (the default hook would print every caught panic).
static PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Checks `f` and turns a panic into a finding naming it.
fn guarded(f: impl FnOnce() -> Outcome) -> Outcome {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(outcome) => outcome,
        Err(_) => {
            let what = PANIC
                .lock()
                .ok()
                .and_then(|mut p| p.take())
                .unwrap_or_else(|| "a panic".to_owned());
            Outcome::Finding(format!("panicked: {what}"))
        }
    }
}

/// `xtask fuzz-worker TARGET SECONDS SEED DIR`: one target's loop.
pub(crate) fn worker(args: &[String], root: &Path) -> Result<ExitCode, String> {
    let [target, seconds, seed, dir] = args else {
        return Err("usage: fuzz-worker TARGET SECONDS SEED DIR".to_owned());
    };
    let seconds: u64 = seconds.parse().map_err(|_| "bad seconds".to_owned())?;
    let seed: u64 = seed.parse().map_err(|_| "bad seed".to_owned())?;
    let dir = PathBuf::from(dir);
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        if let Ok(mut p) = PANIC.lock() {
            *p = Some(format!("{message}{at}"));
        }
    }));
    let mut w = Worker {
        dir,
        target: target.clone(),
        until: Instant::now() + Duration::from_secs(seconds),
        counts: BTreeMap::new(),
    };
    let sources = corpus_sources(root)?;
    // A panic outside the checks (in a generator, say) is a finding too.
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match target.as_str() {
        "programs" => Ok(w.programs(seed, root)),
        "python-mutants" => Ok(w.python_mutants(seed, &sources)),
        "json-mutants" => Ok(w.json_mutants(seed, &sources)),
        "dace-mutants" => w.dace_mutants(seed, root),
        "long-chains" => Ok(w.long_chains(seed, &sources)),
        other => Err(format!("unknown target `{other}`")),
    }));
    let finding = match run {
        Ok(found) => found?,
        Err(_) => Some(format!(
            "the fuzzer itself panicked: {}",
            PANIC
                .lock()
                .ok()
                .and_then(|mut p| p.take())
                .unwrap_or_default()
        )),
    };
    let counts: Vec<String> = w.counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
    let total: usize = w.counts.values().sum();
    let persistent = PERSISTENT_RUNS.load(std::sync::atomic::Ordering::Relaxed);
    let persistent = if persistent > 0 {
        format!(
            "; {persistent} with persistent kernels run on the emulated GPU in every interleaving"
        )
    } else {
        String::new()
    };
    println!(
        "{target}: {total} inputs ({}{persistent})",
        counts.join(", ")
    );
    match finding {
        None => Ok(ExitCode::SUCCESS),
        Some(text) => {
            std::fs::write(w.dir.join(format!("{target}.finding")), &text)
                .map_err(|e| e.to_string())?;
            Ok(ExitCode::from(1))
        }
    }
}

/// Every corpus file's path and text ([`sdfg_harness::corpus::discover`]).
fn corpus_sources(root: &Path) -> Result<Vec<(String, String)>, String> {
    let dir = root.join("corpus/npbench");
    let kernels = sdfg_harness::corpus::discover(&dir)
        .map_err(|e| format!("cannot read `{}`: {e}", dir.display()))?;
    let sources: Vec<(String, String)> = kernels
        .iter()
        .filter_map(|k| {
            Some((
                k.path.display().to_string(),
                std::fs::read_to_string(&k.path).ok()?,
            ))
        })
        .collect();
    if sources.is_empty() {
        return Err(format!("no corpus under `{}`", dir.display()));
    }
    Ok(sources)
}

struct Worker {
    dir: PathBuf,
    target: String,
    until: Instant,
    /// Inputs by outcome (`passed`, `refused`).
    counts: BTreeMap<&'static str, usize>,
}

impl Worker {
    fn running(&self) -> bool {
        Instant::now() < self.until
    }

    /// Records the input about to be checked, for the parent to report if
    /// this process dies on it.
    fn note(&self, input: &str) {
        let _ = std::fs::write(self.dir.join(format!("{}.current", self.target)), input);
    }

    fn count(&mut self, outcome: &Outcome) {
        let key = match outcome {
            Outcome::Passed => "passed",
            Outcome::Refused => "refused",
            Outcome::Finding(_) => "findings",
        };
        *self.counts.entry(key).or_default() += 1;
    }

    /// Generated programs, shrunk by proptest when one fails.
    fn programs(&mut self, seed: u64, root: &Path) -> Option<String> {
        let mut oracle = match oracle::Oracle::spawn(root, &self.dir) {
            Ok(o) => Some(o),
            Err(why) => {
                println!("programs: the NumPy oracle is skipped: {why}");
                None
            }
        };
        let gpu = emulated_gpu(&self.dir);
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes(seed));
        let mut runner = TestRunner::new_with_rng(Config::default(), rng);
        let strategy = generate::program();
        while self.running() {
            let mut tree = strategy.new_tree(&mut runner).ok()?;
            let text = tree.current();
            self.note(&text);
            let outcome = guarded(|| check_generated(&text, oracle.as_mut(), gpu.as_ref()));
            self.count(&outcome);
            let Outcome::Finding(first) = outcome else {
                continue;
            };
            // Shrink: simplify while the finding persists, else step back.
            let (mut best, mut why) = (text, first);
            let stop = Instant::now() + Duration::from_secs(60);
            while Instant::now() < stop && tree.simplify() {
                loop {
                    let candidate = tree.current();
                    self.note(&candidate);
                    if let Outcome::Finding(w) =
                        guarded(|| check_generated(&candidate, oracle.as_mut(), gpu.as_ref()))
                    {
                        (best, why) = (candidate, w);
                        break;
                    }
                    if !tree.complicate() {
                        break;
                    }
                }
            }
            return Some(format!("{why}\n--- minimized program ---\n{best}"));
        }
        None
    }

    /// Corpus files with a few mutations; a finding is minimized by
    /// deleting lines while it persists.
    fn python_mutants(&mut self, seed: u64, sources: &[(String, String)]) -> Option<String> {
        let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes(seed ^ 0x5eed));
        while self.running() {
            let (path, text) = &sources[mutate::below(&mut rng, sources.len())];
            let mutant = mutate::python(&mut rng, text);
            self.note(&mutant);
            let outcome = guarded(|| check_python(&mutant, false));
            self.count(&outcome);
            if let Outcome::Finding(why) = outcome {
                let (small, why) = self.minimize_lines(mutant, why);
                return Some(format!(
                    "{why}\n--- a mutant of {path}, minimized ---\n{small}"
                ));
            }
        }
        None
    }

    fn minimize_lines(&self, text: String, why: String) -> (String, String) {
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        let mut why = why;
        let stop = Instant::now() + Duration::from_secs(60);
        let mut i = 0;
        while i < lines.len() && Instant::now() < stop {
            let mut fewer = lines.clone();
            fewer.remove(i);
            let candidate = fewer.join("\n") + "\n";
            self.note(&candidate);
            match guarded(|| check_python(&candidate, false)) {
                Outcome::Finding(w) => {
                    lines = fewer;
                    why = w;
                }
                _ => i += 1,
            }
        }
        (lines.join("\n") + "\n", why)
    }

    /// The corpus kernels' SDFGs with a few JSON mutations; a finding keeps
    /// only the mutations it needs.
    fn json_mutants(&mut self, seed: u64, sources: &[(String, String)]) -> Option<String> {
        let bases: Vec<(String, serde_json::Value)> = sources
            .iter()
            .filter_map(|(path, text)| {
                let module = sdfg_frontend::Module::parse(path, text).ok()?;
                let name = sdfg_harness::default_program(&module)?;
                let sdfg = module.compile(&name).ok()?;
                Some((path.clone(), serde_json::from_str(&sdfg.to_json()).ok()?))
            })
            .collect();
        let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes(seed ^ 0x150));
        while self.running() {
            let (path, base) = &bases[mutate::below(&mut rng, bases.len())];
            let mutations = mutate::json_mutations(&mut rng, base);
            let text = mutate::apply(base, &mutations);
            self.note(&text);
            let outcome = guarded(|| check_json(&text));
            self.count(&outcome);
            if let Outcome::Finding(mut why) = outcome {
                let mut kept = mutations;
                let mut i = 0;
                while i < kept.len() {
                    let mut fewer = kept.clone();
                    fewer.remove(i);
                    let text = mutate::apply(base, &fewer);
                    match guarded(|| check_json(&text)) {
                        Outcome::Finding(w) => {
                            kept = fewer;
                            why = w;
                        }
                        _ => i += 1,
                    }
                }
                let text = mutate::apply(base, &kept);
                let file = self.dir.join("json-mutants.finding.json");
                let _ = std::fs::write(&file, &text);
                let list: Vec<String> = kept.iter().map(ToString::to_string).collect();
                return Some(format!(
                    "{why}\n--- the SDFG of {path} with these mutations (written to {}) ---\n{}",
                    file.display(),
                    list.join("\n")
                ));
            }
        }
        None
    }
}

fn seed_bytes(seed: u64) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(
            &seed
                .wrapping_add((i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
                .to_le_bytes(),
        );
    }
    bytes
}

/// Parses and lowers every program of `text` (`strict`: the frontend must
/// accept them, for generated programs of the supported subset) and checks
/// each SDFG.
fn check_python(text: &str, strict: bool) -> Outcome {
    let module = match sdfg_frontend::Module::parse("fuzz.py", text) {
        Ok(m) => m,
        Err(e) if strict => return Outcome::Finding(format!("the frontend refused it: {e}")),
        Err(_) => return Outcome::Refused,
    };
    let mut outcome = Outcome::Refused;
    for program in module.programs().iter().take(3) {
        match module.compile(&program.name) {
            Ok(sdfg) => match check_sdfg(&sdfg) {
                Outcome::Finding(f) => return Outcome::Finding(f),
                Outcome::Passed => outcome = Outcome::Passed,
                Outcome::Refused if strict => {
                    return Outcome::Finding("a generated program did not run".to_owned());
                }
                Outcome::Refused => {}
            },
            Err(e) if strict => return Outcome::Finding(format!("the frontend refused it: {e}")),
            // A program text must never lower to an invalid SDFG.
            Err(e) if matches!(e.kind, sdfg_frontend::ErrorKind::Invalid(_)) => {
                return Outcome::Finding(format!("internal error of the frontend: {e}"));
            }
            Err(_) => {}
        }
    }
    outcome
}

/// A generated program: [`check_python`]'s properties, and NumPy's answer
/// where the oracle runs.
fn check_generated(text: &str, oracle: Option<&mut oracle::Oracle>, gpu: Option<&Gpu>) -> Outcome {
    match check_python(text, true) {
        Outcome::Passed => {}
        other => return other,
    }
    let Some(oracle) = oracle else {
        return Outcome::Passed;
    };
    let (args, numpy) = match check_numpy(text, oracle) {
        Ok(checked) => checked,
        Err(outcome) => return outcome,
    };
    match gpu {
        Some(gpu) => check_persistent(text, &args, &numpy, gpu),
        None => Outcome::Passed,
    }
}

/// Whether the host SDFG of `kernel` computes NumPy's answer on the
/// arguments the other checks use ([`arguments`]): those arguments and
/// NumPy's outputs where it does, the outcome where it does not.
fn check_numpy(
    text: &str,
    oracle: &mut oracle::Oracle,
) -> Result<(Arguments, BTreeMap<String, sdfg_sim::ArrayValue>), Outcome> {
    let sdfg = match sdfg_frontend::Module::parse("fuzz.py", text).and_then(|m| m.compile("kernel"))
    {
        Ok(s) => s,
        Err(e) => return Err(Outcome::Finding(format!("the frontend refused it: {e}"))),
    };
    let args = arguments(&sdfg);
    let ours = match run_once(&sdfg, &args) {
        Some(Ok(r)) => r.outputs,
        _ => {
            return Err(Outcome::Finding(
                "a generated program did not run".to_owned(),
            ));
        }
    };
    let Some(args) = args else {
        return Err(Outcome::Refused);
    };
    let numpy = match oracle.run(text, "kernel", &args.symbols, &args.arrays) {
        Ok(n) => n,
        Err(e) => {
            return Err(Outcome::Finding(format!(
                "NumPy could not run the program: {e}"
            )));
        }
    };
    match differ(&numpy, &ours) {
        None => Ok((args, numpy)),
        Some(what) => Err(Outcome::Finding(format!(
            "the SDFG computes another result than NumPy: {what}"
        ))),
    }
}

/// The emulated GPU the `programs` target runs persistent kernels on, and
/// the directory it builds them in.
struct Gpu {
    device: sdfg_exec::EmulatedGpu,
    dir: PathBuf,
}

/// The emulated GPU, with this executable as its runner; `None` (said
/// once) where g++ is missing.
fn emulated_gpu(dir: &Path) -> Option<Gpu> {
    if sdfg_exec::on_path("g++").is_none() {
        println!("programs: persistent kernels are not executed: no g++ for the emulated GPU");
        return None;
    }
    let runner = std::env::current_exe().ok()?;
    Some(Gpu {
        device: sdfg_exec::EmulatedGpu::new(runner),
        dir: dir.join("gpu"),
    })
}

/// Where the CUDA unit of `text` launches a persistent kernel, whether the
/// emulated GPU runs it to NumPy's outputs `numpy` in order and under
/// every adversarial interleaving of its threads
/// ([`sdfg_exec::Interleaving::ADVERSARIAL`]): the race between a value's
/// read by some threads and its next write by another shows only in the
/// emitted code, never in the simulator, which runs a kernel's threads one
/// after another.
fn check_persistent(
    text: &str,
    args: &Arguments,
    numpy: &BTreeMap<String, sdfg_sim::ArrayValue>,
    gpu: &Gpu,
) -> Outcome {
    use sdfg_exec::{Device, Interleaving};
    let Ok(sdfg_harness::Backend::Code(target)) = sdfg_harness::backend("cuda") else {
        return Outcome::Passed;
    };
    let unit = sdfg_frontend::Module::parse("fuzz.py", text)
        .and_then(|m| m.compile("kernel"))
        .map_err(|e| e.to_string())
        .and_then(|sdfg| {
            sdfg_passes::pipeline::run(
                &sdfg,
                Some(target.dialect),
                &PipelineOptions::default(),
                &Pass::ALL,
            )
            .map_err(|e| e.to_string())
        })
        .and_then(|(lowered, _)| {
            sdfg_codegen::emit(&lowered, target.dialect).map_err(|e| e.to_string())
        });
    // Code generation may refuse a program ([`check_sdfg`] allows it).
    let Ok(unit) = unit else {
        return Outcome::Passed;
    };
    if !unit.cooperative {
        return Outcome::Passed;
    }
    let compiled = match gpu.device.compile(&unit, &gpu.dir) {
        Ok(c) => c,
        Err(sdfg_exec::ExecError::Missing(_)) => return Outcome::Passed,
        Err(e) => return Outcome::Finding(format!("the emitted unit does not compile: {e}")),
    };
    for order in std::iter::once(Interleaving::InOrder).chain(Interleaving::ADVERSARIAL) {
        let mut arguments =
            match sdfg_harness::corpus::unit_arguments(&unit, &args.arrays, &args.symbols) {
                Ok(a) => a,
                Err(e) => return Outcome::Finding(format!("the unit's arguments: {e}")),
            };
        let ran = gpu
            .device
            .execute_interleaved(&compiled, &mut arguments, order)
            .unwrap_or_else(|| gpu.device.execute(&compiled, &mut arguments));
        let why = match ran {
            Ok(e) if e.status == 0 => {
                match sdfg_harness::corpus::unit_outputs(&unit, arguments, &args.symbols) {
                    Err(why) => format!("its outputs cannot be read back: {why}"),
                    Ok(outputs) => match differ(numpy, &outputs) {
                        None => continue,
                        Some(what) => format!("computes another result than NumPy: {what}"),
                    },
                }
            }
            Ok(e) => format!("returned status {}: {}", e.status, e.messages.trim()),
            Err(sdfg_exec::ExecError::Missing(_)) => return Outcome::Passed,
            Err(e) => e.to_string(),
        };
        return Outcome::Finding(format!(
            "the emitted persistent kernel, threads interleaved {}, {why}",
            order.variable()
        ));
    }
    PERSISTENT_RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Outcome::Passed
}

/// Loads an SDFG from JSON and checks it where it validates.
fn check_json(text: &str) -> Outcome {
    match Sdfg::from_json(text) {
        Ok(sdfg) if sdfg_ir::validate(&sdfg).is_ok() => check_sdfg(&sdfg),
        _ => Outcome::Refused,
    }
}

/// The properties every valid SDFG must have (see the module docs).
fn check_sdfg(sdfg: &Sdfg) -> Outcome {
    if sdfg_ir::validate(sdfg).is_err() {
        return Outcome::Refused;
    }
    let sim = &sdfg_sim::SimAccelerator;
    let options = PipelineOptions::default();
    let offloaded = match sdfg_passes::pipeline::run(sdfg, Some(sim), &options, &Pass::TO_OFFLOAD) {
        Ok((o, _)) => o,
        Err(e) => return broken_pass(sdfg, &e.to_string()),
    };
    // Idempotence and the exact JSON round trip.
    match sdfg_passes::pipeline::run(&offloaded, Some(sim), &options, &Pass::TO_OFFLOAD) {
        Ok((again, _)) if again.to_json() == offloaded.to_json() => {}
        Ok(_) => return Outcome::Finding("offloading the offloaded SDFG changed it".to_owned()),
        Err(e) => return Outcome::Finding(format!("offloading the offloaded SDFG failed: {e}")),
    }
    let json = offloaded.to_json();
    match Sdfg::from_json(&json) {
        Ok(back) if back.to_json() == json => {}
        _ => return Outcome::Finding("the offloaded SDFG's JSON does not round-trip".to_owned()),
    }
    // The same program with every array argument already on the device
    // (`--args-on-device`): offloaded, a fixed point, and computing what
    // the host SDFG computes.
    let mut on_device = sdfg.clone();
    sdfg_harness::arguments_on_device(&mut on_device);
    if on_device != *sdfg && sdfg_ir::validate(&on_device).is_ok() {
        let moved =
            match sdfg_passes::pipeline::run(&on_device, Some(sim), &options, &Pass::TO_OFFLOAD) {
                Ok((o, _)) => o,
                Err(e) => {
                    return match broken_pass(sdfg, &e.to_string()) {
                        Outcome::Finding(why) => {
                            Outcome::Finding(format!("with the arguments on the device: {why}"))
                        }
                        other => other,
                    };
                }
            };
        match sdfg_passes::pipeline::run(&moved, Some(sim), &options, &Pass::TO_OFFLOAD) {
            Ok((again, _)) if again.to_json() == moved.to_json() => {}
            _ => {
                return Outcome::Finding(
                    "with the arguments on the device, offloading the offloaded SDFG changed it or failed"
                        .to_owned(),
                );
            }
        }
        if let Outcome::Finding(why) = compare_runs(sdfg, &moved) {
            return Outcome::Finding(format!("with the arguments on the device: {why}"));
        }
    }
    // Code generation for CUDA: errors are fine, panics are not.
    if let Ok(sdfg_harness::Backend::Code(target)) = sdfg_harness::backend("cuda")
        && let Ok((lowered, _)) =
            sdfg_passes::pipeline::run(sdfg, Some(target.dialect), &options, &Pass::ALL)
    {
        let _ = sdfg_codegen::emit(&lowered, target.dialect);
    }
    compare_runs(sdfg, &offloaded)
}

/// A pass that failed: a finding where it broke an SDFG that validates
/// and runs. The validator cannot decide every out-of-bounds access of a
/// symbolic subset; one a pass makes visible (a map turned into a copy of
/// a constant range) is the input's fault where the input's own run
/// faults on it.
fn broken_pass(sdfg: &Sdfg, message: &str) -> Outcome {
    if !message.contains("left the SDFG invalid") {
        return Outcome::Refused;
    }
    match run_once(sdfg, &arguments(sdfg)) {
        Some(Err(e)) if faulty_program(&e) => Outcome::Refused,
        _ => Outcome::Finding(message.to_owned()),
    }
}

/// Whether a run's error is the program's own (an access outside its
/// arrays, a read of memory nothing wrote or of a symbol nothing assigned,
/// an integer overflow in symbolic code, which the simulator checks on
/// the host and a kernel's loop wraps: the output is undefined), not a difference between two forms of one
/// program.
fn faulty_program(e: &SimError) -> bool {
    matches!(
        e,
        SimError::OutOfShape { .. }
            | SimError::OutOfBounds { .. }
            | SimError::Uninitialized { .. }
            | SimError::AddressOverflow { .. }
            | SimError::Eval {
                error: sdfg_ir::symbolic::EvalError::UndefinedSymbol { .. }
                    | sdfg_ir::symbolic::EvalError::Overflow { .. },
                ..
            }
    )
}

/// Every symbol of `host` at 4 (3 for a second symbol, and so on down to
/// 2) and deterministic arrays; `None` where the arguments do not fit.
fn arguments(host: &Sdfg) -> Option<Arguments> {
    let mut symbols = BTreeMap::new();
    for (k, name) in host
        .arguments
        .iter()
        .filter(|a| host.symbols.contains_key(*a))
        .enumerate()
    {
        symbols.insert(name.clone(), 4 - (k as i64).min(2));
    }
    let shapes = sdfg_sim::argument_shapes(host, &symbols, Some(MEMORY_LIMIT)).ok()?;
    let mut args = Arguments {
        symbols,
        ..Arguments::default()
    };
    for (name, (dtype, shape)) in shapes {
        let value = sdfg_sim::deterministic_fill(&name, dtype, shape).ok()?;
        args.arrays.insert(name, value);
    }
    Some(args)
}

/// One limited run of `sdfg` (`None`: it does not validate).
fn run_once(
    sdfg: &Sdfg,
    args: &Option<Arguments>,
) -> Option<Result<sdfg_sim::RunResult, SimError>> {
    let args = args.as_ref()?;
    let valid = sdfg_ir::validate(sdfg).ok()?;
    Some(
        Simulator::new()
            .max_memory(Some(MEMORY_LIMIT))
            .step_limit(Some(STEP_LIMIT))
            .run(valid, args),
    )
}

/// Runs the host SDFG and the offloaded one on the same arguments
/// ([`arguments`]); their outputs must agree.
fn compare_runs(host: &Sdfg, offloaded: &Sdfg) -> Outcome {
    let args = arguments(host);
    let (Some(h), Some(d)) = (run_once(host, &args), run_once(offloaded, &args)) else {
        return Outcome::Refused;
    };
    let limited = |e: &SimError| {
        matches!(
            e,
            // Limits of the run, and layouts that only the run's symbols
            // show invalid (a pass may drop such a container).
            SimError::StepLimit { .. } | SimError::OutOfMemory { .. } | SimError::Layout { .. }
        )
    };
    match (h, d) {
        (Ok(h), Ok(d)) => match differ(&h.outputs, &d.outputs) {
            None => Outcome::Passed,
            Some(what) => Outcome::Finding(format!(
                "the offloaded SDFG computes another result than the host SDFG: {what}"
            )),
        },
        (Err(e), _) | (_, Err(e)) if limited(&e) => Outcome::Refused,
        // The program's own fault: what it computes is undefined.
        (Err(e), _) if faulty_program(&e) => Outcome::Refused,
        (Err(_), Err(_)) => Outcome::Refused,
        (Ok(_), Err(e)) => {
            Outcome::Finding(format!("the host SDFG ran, the offloaded one failed: {e}"))
        }
        (Err(e), Ok(_)) => {
            Outcome::Finding(format!("the offloaded SDFG ran, the host one failed: {e}"))
        }
    }
}

/// The first output of `host` (the reference) that `device` lacks or
/// computes otherwise, described: compared as the corpus compares them
/// ([`sdfg_harness::corpus::compare`]), with tolerances for reassociated
/// floating-point sums only.
fn differ(
    host: &BTreeMap<String, sdfg_sim::ArrayValue>,
    device: &BTreeMap<String, sdfg_sim::ArrayValue>,
) -> Option<String> {
    let tolerance = sdfg_harness::corpus::Tolerance {
        rtol: 1e-9,
        atol: 1e-9,
        norm_error: 0.0,
    };
    host.iter().find_map(|(name, h)| match device.get(name) {
        None => Some(format!("`{name}` is missing from the offloaded run")),
        Some(d) => sdfg_harness::corpus::compare(name, d, h, &tolerance).err(),
    })
}
