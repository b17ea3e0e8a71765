//! The offload pass: moves the work of an SDFG to an accelerator and places
//! its data, written once against [`Accelerator`].
//!
//! The phases, each a module named for what it decides:
//!
//! 1. [`schedules`]: one walk over every state; maps at host level become
//!    kernels, library nodes at host level device-wide calls, maps inside
//!    kernels run sequentially per thread. Host maps (`--host-maps auto`
//!    or by label) stay on the host and launch the maps inside them.
//!    A nested SDFG at host level is a host level of its own ([`nested`]):
//!    its maps become kernels on data the caller keeps on the device; one
//!    inside a kernel is code of each thread (its maps sequential, its
//!    transients registers).
//! 0. [`sequential`]: a loop whose body is only single-thread device code
//!    (tasklets and access nodes, not all staying on the host) becomes one
//!    single-thread kernel holding the loop, instead of a launch per state
//!    per iteration. Then [`persistent`]: a loop whose tests read what
//!    device code inside it writes becomes one persistent kernel (where
//!    the accelerator has a grid-wide barrier), its tests evaluated on the
//!    device, instead of a copy back and a wait per iteration.
//! 2. [`partitions`]: host tasklets left at host level in a state are
//!    grouped into partitions (joined by memlets and by data only they
//!    touch, never reaching across a kernel or callback) and each partition
//!    is wrapped in one single-thread kernel, so no state mixes host and
//!    device computation (callbacks stay on the host). A state that only
//!    computes what interstate code reads, from data no state writes, stays
//!    on the host whole.
//!    Then [`mixed`]: a state in which host code that cannot run on the
//!    device (a callback) and device code share a container is split in
//!    dataflow order, so that the walk below can put a copy between them.
//! 3. [`locations`]: which containers device code uses, reads and writes,
//!    and which ones host code (interstate conditions and assignments,
//!    callbacks) reads.
//! 4. [`placement`]: signature containers never move: a device *twin* is
//!    staged beside each one the device uses (and beside each transient
//!    both sides use); transients only kernels use are placed in device
//!    memory (a transient live only inside one kernel becomes a register, a
//!    scalar kernels write a length-one array since scalars are passed by
//!    value); views take their origin's storage, and a view both sides use
//!    gets a twin view of the twin. Copies come from one walk over the
//!    structured control flow that tracks which side holds each twinned
//!    container's value: a copy goes right before code that needs the value
//!    on the other side, loops are entered holding what their body uses
//!    first (so a loop's copy-in runs once) with every back edge, `continue`
//!    and `break` restoring that, branches meet where they agree (else where
//!    the first one leaves the container), and `return` and the exit restore
//!    signature containers on the host. Copy-ins nothing before could affect
//!    are hoisted into one state at the start. A container already in
//!    device storage (an argument whose home is the device) stays there:
//!    host code reaches it through a host twin, and the exit restores it on
//!    the device.
//!
//! Still to come (later versions of this pass): nested SDFGs at host level
//! (or inside maps kept on the host) whose interstate code reads data. Where the input needs one of them the pass returns
//! [`OffloadError::Unsupported`] rather than a wrong program, and so it does
//! for a container that host code and device code use in a state [`mixed`]
//! cannot split (one with copies between access nodes or views).
//!
//! The pass is idempotent: an SDFG in which code already runs on a device
//! is returned unchanged ([`is_offloaded`]); one it left without device
//! code is a fixed point of it. Device storage alone is input, not a sign
//! of an offloaded SDFG: arguments whose home is the device (DaCe's
//! `GPU_Global` arguments) are placed as they are, host code reaching them
//! through a host twin ([`placement`]).

pub mod locations;
pub mod mixed;
pub mod nested;
pub mod partitions;
pub mod persistent;
pub mod placement;
pub mod schedules;
pub mod sequential;

use crate::accelerator::{Accelerator, CopyKind};
use sdfg_ir::{BlockKind, Region, Sdfg, State, SymExpr};
use std::fmt;
use thiserror::Error;

/// Which maps stay on the host, launching the kernels inside them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum HostMaps {
    /// Every map at host level becomes a kernel.
    #[default]
    None,
    /// Maps that only launch work (hold inner maps and no computation of their own).
    Auto,
    /// The maps with these labels.
    Named(Vec<String>),
}

/// Options of the pass.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Which maps stay on the host.
    pub host_maps: HostMaps,
    /// Print each decision to stderr as it is made.
    pub verbose: bool,
    /// Keep loops whose tests read device data on the host, with no
    /// persistent kernel ([`persistent`]) even where the accelerator has a
    /// grid-wide barrier: for SDFGs handed on to a code generator that
    /// does not take every persistent kernel (DaCe's takes only those
    /// whose device maps share a dimensionality), or to compare.
    pub no_persistent: bool,
}

/// Why the pass refused an SDFG.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum OffloadError {
    /// A construct this version of the pass does not offload.
    #[error("cannot offload {what} (in `{location}`)")]
    Unsupported {
        /// What.
        what: String,
        /// Where (block or node).
        location: String,
    },
    /// The pass produced an invalid SDFG: a bug, reported instead of hidden.
    #[error("the offloaded SDFG is invalid:\n{0}")]
    Invalid(String),
}

/// Where one container ended up.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    /// The container.
    pub container: String,
    /// Its device twin, if it has one.
    pub twin: Option<String>,
    /// Its storage after the pass (of the container itself).
    pub storage: sdfg_ir::Storage,
    /// Why.
    pub reason: String,
}

/// One copy the pass inserted.
#[derive(Clone, Debug, PartialEq)]
pub struct CopyRecord {
    /// Source container.
    pub from: String,
    /// Destination container.
    pub to: String,
    /// Direction.
    pub kind: CopyKind,
    /// Bytes moved per execution of the copy.
    pub bytes: SymExpr,
    /// The block the copy state was inserted at.
    pub block: String,
    /// Why the copy is there.
    pub reason: String,
}

/// Every decision of the pass, as data and (through `Display`) as text,
/// like an OpenACC compiler's remarks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// The accelerator.
    pub accelerator: String,
    /// Maps that became kernels, by label, and host tasklets wrapped into single-thread kernels.
    pub kernels: Vec<String>,
    /// Maps kept on the host that launch the kernels inside them.
    pub host_maps: Vec<String>,
    /// States left on the host whole (see [`partitions`]), by label, with why.
    pub host_states: Vec<String>,
    /// Sequential loops of single-thread device code that became one
    /// single-thread kernel each (see [`sequential`]), by label.
    pub sequential_loops: Vec<String>,
    /// Loops whose tests read what device code inside them writes, each
    /// become one persistent kernel (see [`persistent`]), by label.
    pub persistent_loops: Vec<String>,
    /// States in which host code that cannot run on the device and device
    /// code shared a container, split in dataflow order (see [`mixed`]),
    /// by label, with how and why.
    pub split_states: Vec<String>,
    /// Library nodes that became device-wide calls, with the vendor call if any.
    pub library_calls: Vec<String>,
    /// Container placements.
    pub placements: Vec<Placement>,
    /// Inserted copies.
    pub copies: Vec<CopyRecord>,
    /// Whether the input was already offloaded (and returned unchanged).
    pub already_offloaded: bool,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "offload report ({})", self.accelerator)?;
        if self.already_offloaded {
            return writeln!(f, "  the SDFG is already offloaded; nothing changed");
        }
        for h in &self.host_maps {
            writeln!(f, "  host map: {h}")?;
        }
        for h in &self.host_states {
            writeln!(f, "  host state: {h}")?;
        }
        for l in &self.sequential_loops {
            writeln!(
                f,
                "  sequential loop: {l} (single-thread device code: one single-thread kernel runs the whole loop)"
            )?;
        }
        for l in &self.persistent_loops {
            writeln!(
                f,
                "  persistent loop: {l} (its tests read what the device writes: one persistent kernel runs the whole loop, its threads meeting at grid-wide barriers)"
            )?;
        }
        for k in &self.kernels {
            writeln!(f, "  kernel: {k}")?;
        }
        for s in &self.split_states {
            writeln!(f, "  split state: {s}")?;
        }
        for l in &self.library_calls {
            writeln!(f, "  device library call: {l}")?;
        }
        for p in &self.placements {
            match &p.twin {
                Some(t) if p.storage.side() == Some(sdfg_ir::Side::Device) => writeln!(
                    f,
                    "  {}: stays on the device, host twin `{t}` ({})",
                    p.container, p.reason
                )?,
                Some(t) => writeln!(
                    f,
                    "  {}: stays on the host, device twin `{t}` ({})",
                    p.container, p.reason
                )?,
                None => writeln!(f, "  {}: {} ({})", p.container, p.storage, p.reason)?,
            }
        }
        for c in &self.copies {
            let dir = c.kind.direction();
            writeln!(
                f,
                "  copy {} -> {} ({dir}, {} bytes) at `{}`: {}",
                c.from, c.to, c.bytes, c.block, c.reason
            )?;
        }
        Ok(())
    }
}

/// Offloads `sdfg` to `acc`, and validates the result (an invalid one is
/// a bug of the pass, [`OffloadError::Invalid`]).
pub fn offload(
    sdfg: &Sdfg,
    acc: &dyn Accelerator,
    options: &Options,
) -> Result<(Sdfg, Report), OffloadError> {
    let (out, report) = offload_unvalidated(sdfg.clone(), acc, options)?;
    sdfg_ir::validate(&out).map_err(|e| OffloadError::Invalid(e.to_string()))?;
    Ok((out, report))
}

/// [`offload()`] in place and without the validation of its result: for
/// the pipeline, which owns its SDFG (a copy of a large one costs as much
/// as a pass) and validates after every pass that changed it.
pub(crate) fn offload_unvalidated(
    sdfg: Sdfg,
    acc: &dyn Accelerator,
    options: &Options,
) -> Result<(Sdfg, Report), OffloadError> {
    let mut report = Report {
        accelerator: acc.name().to_owned(),
        ..Report::default()
    };
    if is_offloaded(&sdfg) {
        report.already_offloaded = true;
        return Ok((sdfg, report));
    }
    let mut out = sdfg;
    let param = partitions::single_thread_param(&out);
    report.sequential_loops =
        sequential::wrap_sequential_loops(&mut out, &param, acc.scalars_by_value());
    if !options.no_persistent {
        report.persistent_loops = persistent::wrap_persistent_loops(&mut out, acc, &param);
    }
    schedules::assign(&mut out, acc, &options.host_maps, &mut report)?;
    partitions::wrap_host_tasklets(&mut out, acc, &mut report, true)?;
    mixed::split_mixed_states(&mut out, &mut report);
    let usage = locations::analyse(&out);
    placement::place(&mut out, acc, &usage, &mut report)?;
    if options.verbose {
        eprint!("{report}");
    }
    Ok((out, report))
}

/// Whether the SDFG is already offloaded, judged by what the pass decides
/// rather than by storage: some code is scheduled on a device
/// ([`Sdfg::schedules_decided`]). Device storage alone is input: DaCe's
/// `GPU_Global` arguments before any schedule is decided.
pub fn is_offloaded(sdfg: &Sdfg) -> bool {
    sdfg.schedules_decided()
}

/// Calls `f` on every state of a region, recursively, with its label.
/// Makes every host-parallel map of `sdfg` (and of SDFGs nested in it) a
/// parallel map of undecided place; whether it changed one.
///
/// DaCe's CPU pipelines schedule parallel maps `CPU_Multicore` (GT4Py's
/// `dace:cpu` every horizontal map): parallel, on the CPU, the place a
/// CPU build gives them. Offloading such an SDFG for an accelerator
/// decides that place again, as DaCe's own `GPUTransformSDFG` does for
/// `CPU_Multicore` maps; maps meant to stay on the host are named with
/// [`HostMaps::Named`].
pub fn release_host_parallel(sdfg: &mut Sdfg) -> bool {
    let mut changed = false;
    let _ = for_each_state_mut(&mut sdfg.body, &mut |_, state| {
        for n in state.graph.node_weights_mut() {
            match n {
                sdfg_ir::Node::MapEntry(e) if e.map.schedule == sdfg_ir::Schedule::HostParallel => {
                    e.map.schedule = sdfg_ir::Schedule::Default;
                    changed = true;
                }
                sdfg_ir::Node::NestedSdfg(n) => changed |= release_host_parallel(&mut n.sdfg),
                _ => {}
            }
        }
        Ok(())
    });
    changed
}

pub(crate) fn for_each_state_mut(
    region: &mut Region,
    f: &mut dyn FnMut(&str, &mut State) -> Result<(), OffloadError>,
) -> Result<(), OffloadError> {
    for block in &mut region.blocks {
        match &mut block.kind {
            BlockKind::State(s) => f(&block.label, s)?,
            BlockKind::Loop(l) => for_each_state_mut(&mut l.body, f)?,
            BlockKind::Conditional(c) => {
                for (_, r) in &mut c.branches {
                    for_each_state_mut(r, f)?;
                }
                if let Some(r) = &mut c.otherwise {
                    for_each_state_mut(r, f)?;
                }
            }
            BlockKind::Break | BlockKind::Continue | BlockKind::Return => {}
        }
    }
    Ok(())
}
