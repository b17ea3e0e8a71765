//! One case through its backend's stages: [`run_case`] walks
//! [`Stage::for_backend`] in order, and each stage is one method of
//! [`CaseRun`] named after it, reading what earlier stages left there.

use super::{
    Case, ExecCounts, GPU, GpuTiming, KernelReport, Metadata, Reference, RunOptions, SimulateError,
    Simulated, Stage, StageReport, UnitRun, Verdict, checked_run, client_reference,
    compare_outputs, count_run, dace_gpu_storage_file, dace_gpu_storage_offloaded_file,
    dace_offloaded_file, dace_sdfg_file, exec_verdict, infer_symbols, numpy_reference, offload_for,
    program_reference, python_timing, scratch_dir, simulate,
};
use crate::Backend;
use sdfg_codegen::{Target, TranslationUnit};
use sdfg_ir::Sdfg;
use sdfg_sim::{ArrayValue, RunReport, SimError};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

/// Runs the stages of `options`' backend for one case, in order: a stage
/// whose prerequisite did not pass, or that `--skip` names, is skipped with
/// why; every other stage runs and its verdict and time are recorded.
pub(super) fn run_case(case: &Case<'_>, options: &RunOptions<'_>) -> KernelReport {
    let mut run = CaseRun::new(case, options);
    for &stage in Stage::for_backend(options.backend) {
        let start = Instant::now();
        let verdict = match run.unmet_prerequisite(stage) {
            Some(why) => Verdict::Skip(why),
            None if options.skip.contains(&stage) => Verdict::Skip(format!("--skip {stage}")),
            None => match run.run(stage) {
                Ok(()) => Verdict::Pass,
                Err(v) => v,
            },
        };
        let millis = start.elapsed().as_secs_f64() * 1e3;
        run.report
            .stages
            .push((stage, StageReport { verdict, millis }));
    }
    run.finish()
}

/// A stage's failure with `e`'s text.
fn fail(e: &dyn std::fmt::Display) -> Verdict {
    Verdict::Fail(e.to_string())
}

/// `Skip(why)` for a missing product of an earlier stage.
fn missing(why: &str) -> Verdict {
    Verdict::Skip(why.to_owned())
}

/// One case on its way through the stages: the report so far, and what
/// each stage produced for the later ones.
struct CaseRun<'r> {
    case: &'r Case<'r>,
    options: &'r RunOptions<'r>,
    /// The case's file (Python source, or a client's SDFG).
    path: PathBuf,
    report: KernelReport,
    /// `parse`: the Python module (none for a client case).
    module: Option<sdfg_frontend::Module>,
    /// `compile`: the case's metadata (symbols completed by `simulate`
    /// from the inputs NumPy's side made).
    meta: Option<Metadata>,
    /// `compile`: the kernel and its initializer.
    sdfgs: Option<(Sdfg, Option<Sdfg>)>,
    /// NumPy's side, run when a stage first needs it.
    numpy: NumpySide<'r>,
    /// `simulate`: the inputs NumPy's side made, for a program of a
    /// manifest or a client case.
    given: Option<BTreeMap<String, ArrayValue>>,
    /// `simulate`: the host run.
    host: Option<Simulated>,
    /// `offload`: the offloaded kernel.
    offloaded: Option<Sdfg>,
    /// `device`: what the simulator counted of the device run.
    device_report: RunReport,
    /// `device`: whether the static count applied (and agreed).
    counted_statically: bool,
    /// `device`: why the static count did not apply.
    not_countable: Option<String>,
    /// `lower`: the lowered kernel and its device run's counts.
    lowered: Option<(Sdfg, RunReport)>,
    /// `emit`: the translation unit.
    unit: Option<TranslationUnit>,
    /// Where the unit is written and compiled (made when first needed,
    /// removed at the end).
    dir: Option<PathBuf>,
}

/// NumPy's outputs (and, for a program of a manifest or a client case, the
/// inputs), made once for the case, when a stage first asks: the result,
/// failure included, is kept for the later stages.
struct NumpySide<'r> {
    case: &'r Case<'r>,
    options: &'r RunOptions<'r>,
    made: Option<Result<Reference, Verdict>>,
}

impl NumpySide<'_> {
    /// The reference for `meta` (skipped without metadata, and not kept).
    fn get(&mut self, meta: &Option<Metadata>) -> Result<Reference, Verdict> {
        if self.made.is_none() {
            let md = meta.as_ref().ok_or_else(|| missing("no metadata"))?;
            self.made = Some(match self.case {
                Case::Corpus(kernel) => {
                    numpy_reference(kernel, md, self.options).map(|outputs| Reference {
                        outputs,
                        inputs: None,
                    })
                }
                Case::Program {
                    entry,
                    manifest,
                    root,
                } => program_reference(entry, manifest, root, md, self.options),
                Case::Client(c) => client_reference(c),
            });
        }
        self.made
            .clone()
            .unwrap_or_else(|| Err(missing("no reference")))
    }
}

impl<'r> CaseRun<'r> {
    fn new(case: &'r Case<'r>, options: &'r RunOptions<'r>) -> CaseRun<'r> {
        CaseRun {
            case,
            options,
            path: case.path(),
            report: KernelReport {
                kernel: case.name().to_owned(),
                preset: options.preset.to_owned(),
                args_on_device: options.args_on_device,
                stages: Vec::new(),
                launches: 0,
                transfer_bytes: 0,
                lower_bound_bytes: 0,
                counted_statically: false,
                not_countable: None,
                exec_counts: None,
                gpu: None,
            },
            module: None,
            meta: None,
            sdfgs: None,
            numpy: NumpySide {
                case,
                options,
                made: None,
            },
            given: None,
            host: None,
            offloaded: None,
            device_report: RunReport::default(),
            counted_statically: false,
            not_countable: None,
            lowered: None,
            unit: None,
            dir: None,
        }
    }

    /// Why `stage` cannot run: its prerequisite did not pass.
    fn unmet_prerequisite(&self, stage: Stage) -> Option<String> {
        let p = stage.prerequisite()?;
        let passed = self
            .report
            .stages
            .iter()
            .any(|(s, r)| *s == p && r.verdict == Verdict::Pass);
        (!passed).then(|| format!("`{p}` did not pass"))
    }

    /// Runs one stage.
    fn run(&mut self, stage: Stage) -> Result<(), Verdict> {
        match (stage, self.options.backend) {
            (Stage::Parse, _) => self.parse(),
            (Stage::Compile, _) => self.compile(),
            (Stage::Validate, _) => self.validate(),
            (Stage::Json, _) => self.json(),
            (Stage::Simulate, _) => self.simulate(),
            (Stage::Offload, _) => self.offload(),
            (Stage::Device, _) => self.device(),
            (Stage::Lower, Backend::Code(target)) => self.lower(target),
            (Stage::Emit, Backend::Code(target)) => self.emit(target),
            (Stage::Cc, Backend::Code(target)) => self.cc(target),
            (Stage::Exec, Backend::Code(target)) => self.exec(target),
            (Stage::Gpu, Backend::Code(target)) => self.gpu(target),
            (Stage::Lower | Stage::Emit | Stage::Cc | Stage::Exec | Stage::Gpu, Backend::Sim) => {
                Err(missing("the simulated accelerator has no code"))
            }
            (Stage::Numpy, _) => self.numpy(),
            (Stage::DaceImport, _) => self.dace_import(),
        }
    }

    /// The report, with what the stages measured.
    fn finish(self) -> KernelReport {
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
        let mut report = self.report;
        report.counted_statically = self.counted_statically;
        report.not_countable = self.not_countable;
        // What the run does: for a code-generating backend, the lowered
        // SDFG's run (the emitted code's: vendor calls that absorbed
        // kernels, library expansions), else the offloaded one's.
        let run_counts = match self.lowered {
            Some((_, r)) => r,
            None => self.device_report,
        };
        report.launches = run_counts.launches;
        report.transfer_bytes = run_counts.transfer_bytes();
        report.lower_bound_bytes = run_counts.lower_bound_bytes;
        report
    }

    /// The compiled kernel and initializer.
    fn compiled(&self) -> Result<(&Sdfg, Option<&Sdfg>), Verdict> {
        self.sdfgs
            .as_ref()
            .map(|(k, i)| (k, i.as_ref()))
            .ok_or_else(|| missing("nothing compiled"))
    }

    fn metadata(&self) -> Result<&Metadata, Verdict> {
        self.meta.as_ref().ok_or_else(|| missing("no metadata"))
    }

    fn host_outputs(&self) -> Result<BTreeMap<String, ArrayValue>, Verdict> {
        self.host
            .as_ref()
            .map(|h| h.outputs.clone())
            .ok_or_else(|| missing("no host run"))
    }

    /// The directory of the emitted unit.
    fn unit_dir(&mut self, target: &Target) -> PathBuf {
        let name = format!("emit-{}-{}", target.name, self.case.name());
        self.dir.get_or_insert_with(|| scratch_dir(&name)).clone()
    }

    /// **parse**: the Python file (a client case: its SDFG file, or the
    /// tool's refusal to write one).
    fn parse(&mut self) -> Result<(), Verdict> {
        let path = &self.path;
        if let Case::Client(c) = self.case {
            if let Some(why) = &c.meta.refused {
                return Err(Verdict::Refused(format!("the tool wrote no SDFG: {why}")));
            }
            return match path.is_file() {
                true => Ok(()),
                false => Err(fail(&format!("no `{}`", path.display()))),
            };
        }
        let text = std::fs::read_to_string(path).map_err(|e| fail(&e))?;
        self.module = Some(
            sdfg_frontend::Module::parse(&path.display().to_string(), &text)
                .map_err(|e| fail(&e))?,
        );
        Ok(())
    }

    /// **compile**: the kernel and its initializer, and the metadata (a
    /// client case: the tool's SDFG imported).
    fn compile(&mut self) -> Result<(), Verdict> {
        if let Case::Client(c) = self.case {
            // A construct outside the supported subset is refused by name.
            let sdfg = crate::load_sdfg(&self.path).map_err(|e| Verdict::Refused(e.to_string()))?;
            self.sdfgs = Some((sdfg, None));
            self.meta = Some(c.metadata());
            return Ok(());
        }
        let m = self.module.as_ref().ok_or_else(|| missing("no module"))?;
        let md = match self.case {
            Case::Corpus(_) => Metadata::read(m, self.options.preset).map_err(Verdict::Fail)?,
            Case::Program { entry, .. } => entry.metadata(),
            Case::Client(c) => c.metadata(),
        };
        let kernel = m
            .compile_with(&md.program, &md.signature)
            .map_err(|e| fail(&e))?;
        let init = match &md.init {
            Some(i) => Some(m.compile(i).map_err(|e| fail(&e))?),
            None => None,
        };
        let mut md = md;
        if md.outputs.is_empty() {
            // A program of a manifest that lists no outputs: its return values.
            md.outputs = kernel
                .containers
                .keys()
                .filter(|k| k.starts_with("__return"))
                .cloned()
                .collect();
        }
        self.sdfgs = Some((kernel, init));
        self.meta = Some(md);
        Ok(())
    }

    /// **validate**: both SDFGs.
    fn validate(&mut self) -> Result<(), Verdict> {
        let (k, i) = self.compiled()?;
        for s in std::iter::once(k).chain(i) {
            sdfg_ir::validate(s).map_err(|e| fail(&e))?;
        }
        Ok(())
    }

    /// **json**: both SDFGs round-trip exactly.
    fn json(&mut self) -> Result<(), Verdict> {
        let (k, i) = self.compiled()?;
        for s in std::iter::once(k).chain(i) {
            let text = s.to_json();
            let back = Sdfg::from_json(&text).map_err(|e| fail(&e))?;
            if &back != s || back.to_json() != text {
                return Err(Verdict::Fail(format!(
                    "`{}` changed in a JSON round trip",
                    s.name
                )));
            }
        }
        Ok(())
    }

    /// **simulate**: the initializer, then the kernel, on the host (a
    /// program of a manifest or a client case: from the inputs NumPy's
    /// side made, its symbols inferred from them).
    fn simulate(&mut self) -> Result<(), Verdict> {
        let (k, i) = self
            .sdfgs
            .as_ref()
            .ok_or_else(|| missing("nothing compiled"))?;
        if let Case::Program { .. } | Case::Client(_) = self.case {
            let inputs = self
                .numpy
                .get(&self.meta)
                .map_err(|v| match v {
                    Verdict::Skip(why) => Verdict::Skip(format!(
                        "the program's inputs come from its NumPy reference: {why}"
                    )),
                    other => other,
                })?
                .inputs
                .unwrap_or_default();
            if let Some(md) = self.meta.as_mut() {
                infer_symbols(k, &inputs, &mut md.symbols);
            }
            self.given = Some(inputs);
        }
        let md = self.meta.as_ref().ok_or_else(|| missing("no metadata"))?;
        let case = self.case;
        self.host = Some(
            simulate(k, i.as_ref(), md, false, self.given.as_ref()).map_err(|e| {
                match (case, &e) {
                    // The tool's SDFG as imported, before any pass: an index
                    // outside an array is its own code's (undefined behaviour
                    // in DaCe's build of it too).
                    (
                        Case::Client(_),
                        SimulateError::Run(
                            SimError::OutOfBounds { .. } | SimError::OutOfShape { .. },
                        ),
                    ) => Verdict::Refused(format!("the tool's SDFG indexes outside an array: {e}")),
                    _ => fail(&e),
                }
            })?,
        );
        Ok(())
    }

    /// **offload**: the offload pass for the backend; its output
    /// round-trips through JSON and a second run leaves it unchanged.
    fn offload(&mut self) -> Result<(), Verdict> {
        let (k, _) = self.compiled()?;
        let run = |s: &Sdfg| offload_for(s, self.options);
        let out = run(k).map_err(Verdict::Fail)?;
        let text = out.to_json();
        let back = Sdfg::from_json(&text).map_err(|e| fail(&e))?;
        if back != out {
            return Err(Verdict::Fail(
                "the offloaded SDFG changed in a JSON round trip".to_owned(),
            ));
        }
        let again = run(&out).map_err(Verdict::Fail)?;
        if again != out {
            return Err(Verdict::Fail(
                "a second offload changed the SDFG (not idempotent)".to_owned(),
            ));
        }
        self.offloaded = Some(out);
        Ok(())
    }

    /// A simulated run of `k` on the device (checked for data races at
    /// preset `test`), compared with the host run.
    fn device_run(&self, k: &Sdfg, what: &str) -> Result<RunReport, Verdict> {
        let (_, i) = self.compiled()?;
        let md = self.metadata()?;
        // Device runs of the small `test` preset are checked for data
        // races (the check logs every access, too slow for the large
        // presets).
        let races = self.options.preset == "test";
        let run = simulate(k, i, md, races, self.given.as_ref()).map_err(|e| fail(&e))?;
        let reference = self.host_outputs()?;
        compare_outputs(
            &md.outputs,
            &run.outputs,
            &reference,
            what,
            "host run",
            &md.tolerance,
        )?;
        Ok(run.report)
    }

    /// **device**: the offloaded kernel on the simulated accelerator
    /// against the host run, and its static count against the run's.
    fn device(&mut self) -> Result<(), Verdict> {
        let k = self
            .offloaded
            .as_ref()
            .ok_or_else(|| missing("nothing offloaded"))?;
        self.device_report = self.device_run(k, "device run")?;
        // The static count must be the simulator's wherever it is exact:
        // `compare-dace` counts large presets with it.
        let md = self.metadata()?;
        let counted = count_run(k, md, self.given.as_ref());
        self.not_countable = counted.as_ref().err().map(|e| e.to_string());
        if let Ok(c) = counted {
            let simulated = (
                self.device_report.launches,
                self.device_report.to_device.bytes,
                self.device_report.to_host.bytes,
            );
            if (c.launches, c.to_device_bytes, c.to_host_bytes) != simulated {
                return Err(Verdict::Fail(format!(
                    "the static count ({} launches, {} bytes in, {} out) is not the run's ({} launches, {} in, {} out)",
                    c.launches,
                    c.to_device_bytes,
                    c.to_host_bytes,
                    simulated.0,
                    simulated.1,
                    simulated.2
                )));
            }
            self.counted_statically = true;
        }
        Ok(())
    }

    /// **lower**: library nodes lowered for the target's dialect, the
    /// result simulated on the device against the host run.
    fn lower(&mut self, target: &Target) -> Result<(), Verdict> {
        let mut k = self
            .offloaded
            .clone()
            .ok_or_else(|| missing("nothing offloaded"))?;
        sdfg_passes::lower_library_nodes(&mut k, target.dialect).map_err(|e| fail(&e))?;
        let r = self.device_run(&k, "lowered run")?;
        self.lowered = Some((k, r));
        Ok(())
    }

    /// **emit**: the translation unit of the lowered kernel.
    fn emit(&mut self, target: &Target) -> Result<(), Verdict> {
        let (k, _) = self
            .lowered
            .as_ref()
            .ok_or_else(|| missing("nothing lowered"))?;
        self.unit = Some(sdfg_codegen::emit(k, target.dialect).map_err(|e| fail(&e))?);
        Ok(())
    }

    /// **cc**: the unit written out and checked by the target's compilers.
    fn cc(&mut self, target: &Target) -> Result<(), Verdict> {
        let dir = self.unit_dir(target);
        let unit = self
            .unit
            .as_ref()
            .ok_or_else(|| missing("nothing emitted"))?;
        std::fs::create_dir_all(&dir).map_err(|e| fail(&e))?;
        let path = dir.join(&unit.file_name);
        std::fs::write(&path, &unit.source).map_err(|e| fail(&e))?;
        let check = match sdfg_exec::toolchain(target.name) {
            Some(t) => (t.check)(&path, self.options.tools),
            None => sdfg_exec::Check::Missing(format!(
                "the `{}` backend registered no compile check",
                target.name
            )),
        };
        match check {
            sdfg_exec::Check::Passed => Ok(()),
            sdfg_exec::Check::Failed(why) => Err(Verdict::Fail(why)),
            sdfg_exec::Check::Missing(why) => Err(Verdict::Skip(why)),
        }
    }

    /// Compiles the unit for `device` (in a folder named after `stage`),
    /// runs it with the initializer's inputs and compares every output
    /// with NumPy (with the host run where NumPy cannot run); a unit with a
    /// persistent kernel again under each adversarial interleaving of its
    /// threads.
    fn run_unit(
        &mut self,
        target: &Target,
        device: &dyn sdfg_exec::Device,
        stage: Stage,
    ) -> Result<sdfg_exec::Execution, Verdict> {
        let dir = self.unit_dir(target);
        let unit = self
            .unit
            .as_ref()
            .ok_or_else(|| missing("nothing emitted"))?;
        let md = self.meta.as_ref().ok_or_else(|| missing("no metadata"))?;
        let h = self.host.as_ref().ok_or_else(|| missing("no host run"))?;
        let compiled = device
            .compile(unit, &dir.join(stage.name()))
            .map_err(exec_verdict)?;
        // NumPy's answer where NumPy runs; the host simulation's otherwise.
        let (against, what) = match self.numpy.get(&self.meta) {
            Ok(r) => (r.outputs, "NumPy"),
            Err(Verdict::Fail(why)) => return Err(Verdict::Fail(why)),
            Err(_) => (h.outputs.clone(), "the host run (NumPy not available)"),
        };
        // One run, checked: `run` executes the compiled unit.
        let checked = |run: &mut UnitRun<'_>| {
            checked_run(
                unit,
                &h.inputs,
                md,
                (&against, what),
                "the emitted program",
                run,
            )
        };
        let execution = checked(&mut |a| Some(device.execute(&compiled, a)))?
            .ok_or_else(|| Verdict::Fail("the device ran nothing".to_owned()))?;
        // A persistent kernel's threads share values between grid-wide
        // barriers: a race among them shows under some interleaving of
        // its threads (where the device lets the order be chosen).
        if unit.cooperative {
            for order in sdfg_exec::Interleaving::ADVERSARIAL {
                checked(&mut |a| device.execute_interleaved(&compiled, a, order)).map_err(|v| {
                    match v {
                        Verdict::Fail(why) => Verdict::Fail(format!(
                            "with the threads interleaved {}: {why}",
                            order.variable()
                        )),
                        other => other,
                    }
                })?;
            }
        }
        Ok(execution)
    }

    /// **exec**: the unit on the emulated GPU ([`RunOptions::device`]),
    /// and what the device counted beside the simulator's counts.
    fn exec(&mut self, target: &Target) -> Result<(), Verdict> {
        let device = self
            .options
            .device
            .map_err(|why| Verdict::Skip(why.to_owned()))?;
        let execution = self.run_unit(target, device, Stage::Exec)?;
        let (_, simulated) = self
            .lowered
            .as_ref()
            .ok_or_else(|| missing("nothing lowered"))?;
        if let Some(c) = execution.counts {
            // A program with factorizations reads their status flag
            // back once per run: no program data.
            let factorizations = self.unit.as_ref().map_or(0, |u| u.factorizations);
            let status_read = if factorizations > 0 { 8 } else { 0 };
            self.report.exec_counts = Some(ExecCounts {
                launches: c.launches + c.library_operations(),
                simulated_launches: simulated.launches,
                helper_launches: c.helper_launches,
                to_device_bytes: c.host_to_device.bytes,
                simulated_to_device_bytes: simulated.to_device.bytes,
                to_host_bytes: c.device_to_host.bytes.saturating_sub(status_read),
                simulated_to_host_bytes: simulated.to_host.bytes,
                api_calls: c.api_calls,
                copies: c.host_to_device.count + c.device_to_host.count + c.device_to_device.count,
                synchronizations: c.synchronizations,
                metrics: sdfg_exec::metrics::RunMetrics::of(&c.kernel_metrics),
                estimates: sdfg_exec::metrics::DEVICES
                    .iter()
                    .map(|d| sdfg_exec::metrics::Estimate::of(&c, d))
                    .collect(),
                kernels: c.kernel_metrics,
            });
        }
        Ok(())
    }

    /// **gpu**: the unit on a real GPU ([`RunOptions::gpu`]), timed beside
    /// NumPy and CuPy.
    fn gpu(&mut self, target: &Target) -> Result<(), Verdict> {
        let device = self
            .options
            .gpu
            .map_err(|why| Verdict::Skip(why.to_owned()))?;
        // One program on the GPU at a time: timings of programs sharing
        // it would be each other's.
        let execution = {
            let _gpu = GPU
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            self.run_unit(target, device, Stage::Gpu)?
        };
        let device_ms = sdfg_exec::median(&execution.run_millis)
            .ok_or_else(|| Verdict::Fail("the device timed no run of the program".to_owned()))?;
        let mut t = GpuTiming {
            device: device.describe(),
            device_ms,
            device_runs_ms: execution.run_millis.clone(),
            ..GpuTiming::default()
        };
        if let Case::Corpus(kernel) = self.case {
            for module in ["numpy", "cupy"] {
                // CuPy runs on the GPU: one user of it at a time.
                let _gpu = (module == "cupy").then(|| {
                    GPU.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                });
                let timed = python_timing(kernel, self.options, module);
                match (module, timed) {
                    ("numpy", Ok((ms, _))) => t.numpy_ms = Some(ms),
                    (_, Ok((ms, matches))) => {
                        t.cupy_ms = Some(ms);
                        t.cupy_matches_numpy = Some(matches);
                    }
                    (_, Err(why)) => t.notes.push(format!("{module}: {why}")),
                }
            }
        } else {
            t.notes
                .push("NumPy and CuPy are timed for corpus kernels only".to_owned());
        }
        // The model beside the measurement, for the device at hand.
        t.estimate = sdfg_exec::metrics::describing(&t.device).and_then(|d| {
            let counted = self.report.exec_counts.as_ref()?;
            counted
                .estimates
                .iter()
                .find(|e| e.device == d.name)
                .cloned()
        });
        t.speedup_vs_numpy = t.numpy_ms.map(|n| n / device_ms);
        t.speedup_vs_cupy = t.cupy_ms.map(|c| c / device_ms);
        self.report.gpu = Some(t);
        Ok(())
    }

    /// **numpy**: the host run against NumPy.
    fn numpy(&mut self) -> Result<(), Verdict> {
        let md = self.meta.as_ref().ok_or_else(|| missing("no metadata"))?;
        let reference = self.numpy.get(&self.meta)?.outputs;
        let ours = self.host_outputs()?;
        compare_outputs(
            &md.outputs,
            &ours,
            &reference,
            "the simulated run",
            "NumPy",
            &md.tolerance,
        )
    }

    /// **dace-import**: DaCe's own SDFG of a corpus kernel through the
    /// pipeline; a client case's offloaded SDFG written in DaCe's format.
    fn dace_import(&mut self) -> Result<(), Verdict> {
        let kernel = match self.case {
            Case::Client(c) => {
                let out = self
                    .offloaded
                    .as_ref()
                    .ok_or_else(|| missing("nothing offloaded"))?;
                let text = sdfg_dace_format::to_dace_string(out)
                    .map_err(|e| Verdict::Refused(format!("on export: {e}")))?;
                let target = c.offloaded_file(self.options.backend.name());
                return std::fs::write(&target, text)
                    .map_err(|e| fail(&format!("cannot write `{}`: {e}", target.display())));
            }
            Case::Corpus(kernel) => kernel,
            Case::Program { .. } => {
                return Err(missing("DaCe's SDFGs are written for corpus kernels"));
            }
        };
        let options = self.options;
        let dir = options.dace_sdfgs.ok_or_else(|| {
            missing(
                "no DaCe SDFGs of the corpus (`cargo xtask dace-sdfg` writes them where DaCe is installed)",
            )
        })?;
        let file = if options.args_on_device {
            dace_gpu_storage_file(dir, &kernel.name)
        } else {
            dace_sdfg_file(dir, &kernel.name)
        };
        if !file.is_file() {
            return Err(Verdict::Skip(format!(
                "DaCe wrote no SDFG of this kernel ({})",
                file.display()
            )));
        }
        // A construct outside the supported subset is refused by name: a
        // limit of the import, reported, not a wrong answer.
        let sdfg = crate::load_sdfg(&file).map_err(|e| Verdict::Refused(e.to_string()))?;
        sdfg_ir::validate(&sdfg).map_err(|e| fail(&format!("the import is invalid: {e}")))?;
        let (_, init) = self
            .sdfgs
            .as_ref()
            .ok_or_else(|| missing("nothing compiled"))?;
        let init = init.as_ref();
        let md = self.meta.as_ref().ok_or_else(|| missing("no metadata"))?;
        let reference = self.numpy.get(&self.meta)?.outputs;
        let given = self.given.as_ref();
        // Data already on the GPU is simulated as the host program it is
        // before offloading: on the host.
        let mut on_host = sdfg.clone();
        for d in on_host.containers.values_mut() {
            if d.storage == sdfg_ir::Storage::DeviceGlobal {
                d.storage = sdfg_ir::Storage::Default;
            }
        }
        let run = simulate(&on_host, init, md, false, given)
            .map_err(|e| Verdict::Fail(format!("DaCe's SDFG, imported: {e}")))?;
        compare_outputs(
            &md.outputs,
            &run.outputs,
            &reference,
            "DaCe's SDFG, imported and simulated,",
            "NumPy",
            &md.tolerance,
        )?;
        let out = offload_for(&sdfg, options)
            .map_err(|e| Verdict::Fail(format!("DaCe's SDFG, offloaded: {e}")))?;
        let run = simulate(&out, init, md, false, given)
            .map_err(|e| Verdict::Fail(format!("DaCe's SDFG, offloaded: {e}")))?;
        compare_outputs(
            &md.outputs,
            &run.outputs,
            &reference,
            "DaCe's SDFG, offloaded and simulated on the device,",
            "NumPy",
            &md.tolerance,
        )?;
        // On the emulated GPU (or a real one), as emitted, against NumPy.
        if let (Backend::Code(target), Ok(device), Some(h)) =
            (options.backend, options.device, self.host.as_ref())
        {
            let mut lowered = out.clone();
            sdfg_passes::lower_library_nodes(&mut lowered, target.dialect)
                .map_err(|e| Verdict::Fail(format!("DaCe's SDFG, lowered: {e}")))?;
            let unit = sdfg_codegen::emit(&lowered, target.dialect)
                .map_err(|e| Verdict::Fail(format!("DaCe's SDFG, emitted: {e}")))?;
            let dir = scratch_dir(&format!("dace-{}-{}", target.name, self.case.name()));
            let compiled = device.compile(&unit, &dir).map_err(exec_verdict)?;
            let run = checked_run(
                &unit,
                &h.inputs,
                md,
                (&reference, "NumPy"),
                "DaCe's SDFG, offloaded, emitted and executed,",
                &mut |a| Some(device.execute(&compiled, a)),
            );
            let _ = std::fs::remove_dir_all(&dir);
            run?;
        }
        let text = sdfg_dace_format::to_dace_string(&out)
            .map_err(|e| Verdict::Refused(format!("on export: {e}")))?;
        let target = if options.args_on_device {
            dace_gpu_storage_offloaded_file(dir, &kernel.name)
        } else {
            dace_offloaded_file(dir, &kernel.name)
        };
        std::fs::write(&target, text)
            .map_err(|e| fail(&format!("cannot write `{}`: {e}", target.display())))
    }
}
