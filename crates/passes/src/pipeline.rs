//! The named, ordered pipeline from a host SDFG to one an emitter takes.
//!
//! | pass | what it does |
//! |---|---|
//! | `inline-nested` | SDFGs nested at host level become part of their caller, as DaCe's `InlineSDFG` makes them ([`crate::inline_nested`]) |
//! | `elide-copies` | `y = x` or `return x` of a dead temporary `x` computes `x` in `y`, with no copy ([`crate::elide_copies`]) |
//! | `map-fusion` | consecutive maps of one range, each point needing only its own, become one ([`crate::map_fusion`]) |
//! | `loop-to-map` | independent `for` loops become maps ([`mod@crate::loop_to_map`]) |
//! | `map-fusion` | again: maps made from loops fuse like the frontend's |
//! | `sink-loop` | a loop around per-point maps becomes one map running the loop ([`crate::sink_loop`]) |
//! | `map-to-copy` | a map copying one contiguous block into another becomes a copy ([`crate::copies`]) |
//! | `horizontal-fusion` | consecutive maps sharing nothing they write, of different extents, become one over their bounding box ([`crate::horizontal_fusion`]) |
//! | `offload` | maps become kernels, data gets device twins and copies ([`crate::offload()`]) |
//! | `lower-library` | library nodes become maps or vendor calls ([`crate::lower_library_nodes`]) |
//!
//! Every pass keeps the SDFG valid; the pipeline validates after each one
//! that changed it (a failure is a bug of that pass, reported with its
//! name). A pass that reports no change made none, so the SDFG is as valid
//! as before it: skipping those validations keeps compile time low (they
//! were half of it on large programs), and debug builds, which every test,
//! the corpus and the fuzzer use, check that claim by comparing the SDFG's
//! JSON before and after ([`sdfg_ir::ValidSdfg::update`] holds that rule).
//! The pipeline's output carries the proof of its last validation
//! ([`sdfg_ir::ValidSdfg`]), so the emitter does not validate it again:
//! from a Python program to CUDA the validator runs three times (the
//! frontend's output, after offloading, after library lowering), not four.
//! Each pass can
//! be turned off by name (`sdfgc compile --no-loop-to-map`, or
//! `--passes offload,lower-library`), except that code generation needs
//! `offload` and `lower-library`. An SDFG that is already offloaded goes
//! through unchanged, so the pipeline is idempotent.

use crate::accelerator::Accelerator;
use crate::loop_to_map::{LoopReport, loop_to_map};
use crate::offload::{Options, Report};
use sdfg_ir::validate::UpdateError;
use sdfg_ir::{Sdfg, ValidSdfg, ValidationErrors};
use std::collections::BTreeSet;
use std::fmt;
use thiserror::Error;

/// One pass of the pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Pass {
    /// SDFGs nested at host level are inlined into their caller.
    InlineNested,
    /// Dead temporaries copied whole into another container are computed there.
    ElideCopies,
    /// Consecutive maps over one range fuse.
    MapFusion,
    /// Independent loops become maps.
    LoopToMap,
    /// Loops around per-point maps sink into one map.
    SinkLoop,
    /// Maps that only copy a contiguous block become copies.
    MapToCopy,
    /// Independent maps of different extents fuse over their bounding box.
    HorizontalFusion,
    /// Work moves to the accelerator.
    Offload,
    /// Library nodes are expanded or specialized for vendor calls.
    LowerLibrary,
}

impl Pass {
    /// Every pass, in pipeline order.
    pub const ALL: [Pass; 9] = [
        Pass::InlineNested,
        Pass::ElideCopies,
        Pass::MapFusion,
        Pass::LoopToMap,
        Pass::SinkLoop,
        Pass::MapToCopy,
        Pass::HorizontalFusion,
        Pass::Offload,
        Pass::LowerLibrary,
    ];

    /// The order in which the passes run: [`Pass::ALL`]'s, with map fusion
    /// once more after loop-to-map, so that maps made from loops fuse like
    /// the frontend's (DaCe's GPU `auto_optimize` also fuses after
    /// `LoopToMap`). The first fusion stays before loop-to-map: a transient
    /// two maps share becomes a scalar of the point, which lets loop-to-map
    /// privatize a loop around them (azimint's bins). Running a pass twice
    /// changes nothing more than running it once would at its second place:
    /// every pass is idempotent.
    pub const SCHEDULE: [Pass; 10] = [
        Pass::InlineNested,
        Pass::ElideCopies,
        Pass::MapFusion,
        Pass::LoopToMap,
        Pass::MapFusion,
        Pass::SinkLoop,
        Pass::MapToCopy,
        Pass::HorizontalFusion,
        Pass::Offload,
        Pass::LowerLibrary,
    ];

    /// Every pass up to offloading (all but library lowering): what the
    /// corpus's `offload` stage and `sdfgc compile --backend` run.
    pub const TO_OFFLOAD: [Pass; 8] = [
        Pass::InlineNested,
        Pass::ElideCopies,
        Pass::MapFusion,
        Pass::LoopToMap,
        Pass::SinkLoop,
        Pass::MapToCopy,
        Pass::HorizontalFusion,
        Pass::Offload,
    ];

    /// The pass's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Pass::InlineNested => "inline-nested",
            Pass::ElideCopies => "elide-copies",
            Pass::MapFusion => "map-fusion",
            Pass::LoopToMap => "loop-to-map",
            Pass::SinkLoop => "sink-loop",
            Pass::MapToCopy => "map-to-copy",
            Pass::HorizontalFusion => "horizontal-fusion",
            Pass::Offload => "offload",
            Pass::LowerLibrary => "lower-library",
        }
    }

    /// One line on what the pass does.
    pub fn describe(self) -> &'static str {
        match self {
            Pass::InlineNested => {
                "SDFGs nested at host level become part of the SDFG calling them, as DaCe's InlineSDFG makes them"
            }
            Pass::ElideCopies => {
                "`y = x` or `return x` of a temporary dead after it computes x in y instead of copying it"
            }
            Pass::MapFusion => {
                "consecutive maps over one range, each point reading only what the same point wrote, become one"
            }
            Pass::LoopToMap => "for loops whose iterations are independent become maps",
            Pass::MapToCopy => {
                "a map that only copies one contiguous block into another becomes a runtime copy"
            }
            Pass::SinkLoop => {
                "a sequential loop around maps of per-point work becomes one map whose threads run the loop"
            }
            Pass::HorizontalFusion => {
                "consecutive maps sharing nothing they write, of different extents, become one map over their bounding box"
            }
            Pass::Offload => {
                "maps become kernels, library nodes device calls, data gets device twins and copies"
            }
            Pass::LowerLibrary => "library nodes become maps, or stay for a vendor library call",
        }
    }

    /// The pass named `name`.
    pub fn from_name(name: &str) -> Option<Pass> {
        Pass::ALL.into_iter().find(|p| p.name() == name)
    }
}

impl fmt::Display for Pass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which passes run, with the options of each.
#[derive(Clone, Debug)]
pub struct PipelineOptions {
    /// The passes that run (in pipeline order, whatever the set's order).
    pub enabled: BTreeSet<Pass>,
    /// The offload pass's options.
    pub offload: Options,
}

impl Default for PipelineOptions {
    fn default() -> Self {
        PipelineOptions {
            enabled: Pass::ALL.into_iter().collect(),
            offload: Options::default(),
        }
    }
}

impl PipelineOptions {
    /// The options with `pass` turned off.
    pub fn without(mut self, pass: Pass) -> PipelineOptions {
        self.enabled.remove(&pass);
        self
    }
}

/// What each pass that ran reported.
#[derive(Clone, Debug, Default)]
pub struct PipelineReport {
    /// The passes that ran, in order.
    pub ran: Vec<Pass>,
    /// Nested SDFGs inlined, and those kept nested with why.
    pub inlined: crate::inline_nested::InlineReport,
    /// Loop-to-map's report.
    pub loops: Option<LoopReport>,
    /// Loops sunk into maps, by label.
    pub sunk: Vec<String>,
    /// Copies elided (`` `x` as `y` ``).
    pub elided: Vec<String>,
    /// Fused states (`S2` into `S1`).
    pub fused: Vec<String>,
    /// Copy maps made copies.
    pub copies: Vec<String>,
    /// Independent maps fused horizontally (`S2` with `S1`).
    pub horizontal: Vec<String>,
    /// The offload pass's report.
    pub offload: Option<Report>,
    /// Library lowering's lines.
    pub library: Vec<String>,
}

impl fmt::Display for PipelineReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for n in &self.inlined.inlined {
            writeln!(f, "  inlined: nested SDFG `{n}`")?;
        }
        for n in &self.inlined.kept {
            writeln!(f, "  kept nested: {n}")?;
        }
        for r in &self.elided {
            writeln!(f, "  copy elided: {r} in place")?;
        }
        for l in &self.fused {
            writeln!(f, "  fused: {l}")?;
        }
        if let Some(l) = &self.loops {
            write!(f, "{l}")?;
        }
        for c in &self.copies {
            writeln!(f, "  copy: {c}")?;
        }
        for h in &self.horizontal {
            writeln!(f, "  fused horizontally: {h}")?;
        }
        for l in &self.sunk {
            writeln!(f, "  sunk: loop `{l}` runs inside one map over its points")?;
        }
        if let Some(o) = &self.offload {
            write!(f, "{o}")?;
        }
        for l in &self.library {
            writeln!(f, "  library: {l}")?;
        }
        Ok(())
    }
}

/// Why the pipeline stopped.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum PipelineError {
    /// A pass refused the SDFG (an unsupported construct), or broke it.
    #[error("pass `{pass}`: {message}")]
    Pass {
        /// The pass.
        pass: Pass,
        /// What it said.
        message: String,
    },
    /// No pass changed the SDFG, and it was invalid as given (the caller
    /// broke [`run`]'s contract).
    #[error("the SDFG given to the pipeline is invalid:\n{0}")]
    Invalid(String),
}

/// Runs the enabled passes among `passes` (in pipeline order) on a copy of
/// `sdfg`, which must be valid (the frontend's output is; a loaded JSON
/// file is once `sdfg_ir::validate` accepts it). An SDFG already offloaded
/// is returned unchanged by every pass.
/// Without an accelerator only the passes that need none can run.
pub fn run(
    sdfg: &Sdfg,
    acc: Option<&dyn Accelerator>,
    options: &PipelineOptions,
    passes: &[Pass],
) -> Result<(ValidSdfg, PipelineReport), PipelineError> {
    run_owned(sdfg.clone(), acc, options, passes)
}

/// Where the SDFG stands between passes: as the caller gave it (valid by
/// [`run`]'s contract, not checked here) until a pass changes it, then
/// with the proof of the validation after that pass.
enum Current {
    Given(Sdfg),
    Valid(ValidSdfg),
}

/// [`run`] on an SDFG the caller gives up: no copy is made (on a large
/// program a copy costs as much as a pass). The result carries its proof
/// of validity, so code generation does not validate it again; it was
/// validated after the last pass that changed it, or here where no pass
/// changed it.
pub fn run_owned(
    sdfg: Sdfg,
    acc: Option<&dyn Accelerator>,
    options: &PipelineOptions,
    passes: &[Pass],
) -> Result<(ValidSdfg, PipelineReport), PipelineError> {
    let mut report = PipelineReport::default();
    let offloaded = crate::offload::is_offloaded(&sdfg);
    let mut sdfg = sdfg;
    // Offloading decides where DaCe's host-parallel maps run
    // ([`crate::offload::release_host_parallel`]), before any pass.
    let released = acc.is_some()
        && !offloaded
        && passes.contains(&Pass::Offload)
        && options.enabled.contains(&Pass::Offload)
        && crate::offload::release_host_parallel(&mut sdfg);
    let mut current = if released {
        Current::Valid(ValidSdfg::new(sdfg).map_err(|e| PipelineError::Invalid(e.to_string()))?)
    } else {
        Current::Given(sdfg)
    };
    for pass in Pass::SCHEDULE {
        if !passes.contains(&pass) || !options.enabled.contains(&pass) {
            continue;
        }
        // The passes before offloading work on host SDFGs: an offloaded
        // one goes through them unchanged.
        if offloaded && pass < Pass::Offload {
            continue;
        }
        let fail = |message: String| PipelineError::Pass { pass, message };
        let invalid =
            |e: ValidationErrors| fail(format!("left the SDFG invalid (a bug of the pass):\n{e}"));
        let unreported =
            || fail("changed the SDFG but reported no change (a bug of the pass)".to_owned());
        let mut step = |s: &mut Sdfg| run_pass(pass, s, acc, options, &mut report);
        current = match current {
            Current::Valid(v) => match v.update(step) {
                Ok((v, _)) => Current::Valid(v),
                Err(UpdateError::Failed(e)) => return Err(e),
                Err(UpdateError::Invalid(e)) => return Err(invalid(e)),
                Err(UpdateError::Unreported) => return Err(unreported()),
            },
            // The same rule as `update`'s before the first change: a pass
            // that reports no change made none (debug builds check it).
            Current::Given(mut s) => {
                let before = cfg!(debug_assertions).then(|| s.to_json());
                if step(&mut s)? {
                    Current::Valid(ValidSdfg::new(s).map_err(invalid)?)
                } else if before.is_some_and(|b| b != s.to_json()) {
                    return Err(unreported());
                } else {
                    Current::Given(s)
                }
            }
        };
        report.ran.push(pass);
    }
    let out = match current {
        Current::Valid(v) => v,
        Current::Given(s) => {
            ValidSdfg::new(s).map_err(|e| PipelineError::Invalid(e.to_string()))?
        }
    };
    Ok((out, report))
}

/// Runs one pass on `out`, recording what it did in `report`; whether it
/// changed the SDFG.
fn run_pass(
    pass: Pass,
    out: &mut Sdfg,
    acc: Option<&dyn Accelerator>,
    options: &PipelineOptions,
    report: &mut PipelineReport,
) -> Result<bool, PipelineError> {
    let fail = |message: String| PipelineError::Pass { pass, message };
    let needs_acc = || fail("needs an accelerator (a backend)".to_owned());
    Ok(match pass {
        Pass::InlineNested => {
            report.inlined = crate::inline_nested::inline_nested_sdfgs(out);
            !report.inlined.inlined.is_empty()
        }
        Pass::ElideCopies => {
            report.elided = crate::elide_copies::elide_copies(out);
            !report.elided.is_empty()
        }
        Pass::MapFusion => {
            let fused = crate::map_fusion::fuse_maps(out);
            let changed = !fused.is_empty();
            report.fused.extend(fused);
            changed
        }
        Pass::LoopToMap => {
            let loops = loop_to_map(out);
            let changed = !loops.converted.is_empty();
            report.loops = Some(loops);
            changed
        }
        Pass::SinkLoop => {
            report.sunk = crate::sink_loop::sink_loops(out);
            !report.sunk.is_empty()
        }
        Pass::MapToCopy => {
            report.copies = crate::copies::maps_to_copies(out);
            !report.copies.is_empty()
        }
        Pass::HorizontalFusion => {
            report.horizontal = crate::horizontal_fusion::fuse_independent_maps(out);
            !report.horizontal.is_empty()
        }
        Pass::Offload => {
            let acc = acc.ok_or_else(needs_acc)?;
            // Offloading builds a new SDFG from the old one.
            let host = std::mem::replace(out, Sdfg::new(out.name.clone()));
            let (o, r) = crate::offload::offload_unvalidated(host, acc, &options.offload)
                .map_err(|e| fail(e.to_string()))?;
            *out = o;
            let changed = !r.already_offloaded;
            report.offload = Some(r);
            changed
        }
        Pass::LowerLibrary => {
            let acc = acc.ok_or_else(needs_acc)?;
            report.library = crate::library::lower_library_unvalidated(out, acc)
                .map_err(|e| fail(e.to_string()))?;
            !report.library.is_empty()
        }
    })
}
