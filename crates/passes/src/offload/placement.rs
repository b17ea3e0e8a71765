//! Phase 4: where every container lives, and the copies between the sides.
//!
//! **Where containers live.** Signature containers (arguments and return
//! values) never move: each one the device uses gets a *twin* in the
//! accelerator's global storage, with a name that collides with nothing (and
//! never starts with `__return`). A transient used by both sides (host code
//! in a state, or interstate code, and device code) gets a twin too.
//! Transients only device code uses are placed in device memory directly (a
//! transient live only inside one kernel becomes a register; a scalar kernels
//! write a length-one array, since scalars are passed to kernels by value).
//! A scalar that device code only reads, as kernels' inputs, stays where
//! it is: where the accelerator passes scalars by value, each launch takes
//! its current value (no twin, no copy).
//! Views take their origin's storage; a view used by both sides gets a twin
//! view, which views the twin (device states are renamed consistently).
//!
//! **Data whose home is the device.** A container already in device global
//! storage (DaCe's `GPU_Global` arguments) never moves either, the other
//! way round: device code uses it in place, and host code that reads or
//! writes it (interstate code, code that stays on the host) gets a *host
//! twin* instead, with the walk below tracking the pair as it tracks any
//! other; host states are renamed, and interstate code reads the twin once
//! the walk has decided its copies. Such a signature container is restored
//! on the device at `return` and the exit.
//!
//! **Where copies go.** One walk over the structured control flow tracks,
//! for every container with a twin, which sides hold its current value
//! ([`Valid`]). Code that reads a container (or writes only part of it) on a
//! side that does not hold it gets a copy just before it; a write makes its
//! side the only valid one. Interstate code (conditions, loop bounds,
//! transition assignments) reads on the host. Control flow:
//!
//! - a loop is entered with each container it uses on the sides its body
//!   uses it on before first writing it (so a loop's copy-in runs once,
//!   before the loop); every back edge, `continue` and `break` restores that;
//! - the branches of a conditional meet where they agree; where they do not,
//!   where the first branch that falls through leaves the container, the
//!   others copying at their end;
//! - `return` and the exit restore signature containers on their home side.
//!
//! Copy optimization falls out of the walk: no copy back for a twin nothing
//! wrote (the host copy stays valid), no copy-in before a plain write of the
//! whole container, read-only data copied once. Copy-ins at the root level
//! that no earlier block could affect are hoisted into one `offload_copy_in`
//! state at the start.

use super::locations::{Access, Usage, interstate_reads, state_accesses};
use super::{CopyRecord, OffloadError, Placement, Report};
use crate::accelerator::{Accelerator, CopyKind};
use sdfg_ir::{
    BlockKind, ConditionalBlock, ControlBlock, DataDesc, Lifetime, LoopBlock, Memlet, Node, Region,
    Sdfg, Side, State, Storage,
};
use std::collections::{BTreeMap, BTreeSet};

pub(crate) fn place(
    sdfg: &mut Sdfg,
    acc: &dyn Accelerator,
    usage: &Usage,
    report: &mut Report,
) -> Result<(), OffloadError> {
    let used = usage.device_used();
    if let Some((name, desc)) = used.iter().find_map(|x| {
        sdfg.containers
            .get(x)
            .filter(|d| d.total_elements().is_none())
            .map(|d| (x, d))
    }) {
        return Err(OffloadError::Unsupported {
            what: format!("the {} `{name}` in device code", desc.kind_name()),
            location: sdfg.name.clone(),
        });
    }
    let given = sdfg.containers.clone();
    let global = acc.global_storage();
    // What the accelerator lets each side touch decides where twins go;
    // the SDFG records it, so that it validates (and simulates) under the
    // memory of the machine it is offloaded for.
    // (The model is `Accelerator::can_access` asked once per storage kind;
    // placing by it keeps every in-place use one the validator accepts.)
    let memory = sdfg_accelerator::memory_model(acc);
    sdfg.memory = memory;
    let host_reaches = |storage: Storage| memory.accessible(storage, Side::Host);
    let device_reaches = |storage: Storage| memory.accessible(storage, Side::Device);
    let params = map_params(sdfg);
    let host_too = |x: &str| usage.host_read.contains(x) || usage.host_used.contains(x);
    // Containers whose home is the device already (DaCe's `GPU_Global`
    // arguments, `@ dace.StorageType.GPU_Global`): they never move either.
    // Device code uses them as they are; host code that reads or writes
    // one does so through a host twin, and the walk copies between the two.
    let mut host_twins: BTreeMap<String, String> = BTreeMap::new();
    let device_home: Vec<(String, DataDesc)> = sdfg
        .containers
        .iter()
        .filter(|(_, d)| !d.is_view() && d.storage == Storage::DeviceGlobal)
        .map(|(x, d)| (x.clone(), d.clone()))
        .collect();
    for (x, desc) in device_home {
        if desc.total_elements().is_none() {
            return Err(OffloadError::Unsupported {
                what: format!("the {} `{x}` in device storage", desc.kind_name()),
                location: sdfg.name.clone(),
            });
        }
        if !host_too(&x) || host_reaches(desc.storage) {
            if host_too(&x) {
                report.placements.push(Placement {
                    container: x.clone(),
                    twin: None,
                    storage: desc.storage,
                    reason: "its home is the device, and host code may touch device memory on this accelerator".to_owned(),
                });
            } else if used.contains(&x) {
                report.placements.push(Placement {
                    container: x.clone(),
                    twin: None,
                    storage: desc.storage,
                    reason: "its home is the device, and only device code uses it".to_owned(),
                });
            }
            continue;
        }
        let twin = fresh_name(
            sdfg,
            &params,
            &format!("host_{}", x.trim_start_matches('_')),
        );
        let mut t = desc.clone();
        t.transient = true;
        t.storage = Storage::Host;
        t.lifetime = Lifetime::Sdfg;
        sdfg.containers.insert(twin.clone(), t);
        report.placements.push(Placement {
            container: x.clone(),
            twin: Some(twin.clone()),
            storage: desc.storage,
            reason: "its home is the device: host code reads or writes it through a host twin"
                .to_owned(),
        });
        host_twins.insert(x, twin);
    }
    // Containers with a data twin (tracked by the walk), and every rename
    // device states get (data twins and view twins).
    let mut twins: BTreeMap<String, String> = BTreeMap::new();
    let mut renames: BTreeMap<String, String> = BTreeMap::new();
    for x in &used {
        let Some(desc) = sdfg.containers.get(x).cloned() else {
            continue;
        };
        if !desc.is_view() && desc.storage == Storage::DeviceGlobal {
            continue; // placed above
        }
        if device_reaches(desc.storage) && (!desc.transient || host_too(x)) {
            // Kernels touch it where it is: no twin, and no copy ever.
            report.placements.push(Placement {
                container: x.clone(),
                twin: None,
                storage: desc.storage,
                reason: format!(
                    "device code may touch {} memory on this accelerator: used in place",
                    desc.storage
                ),
            });
            continue;
        }
        if desc.is_view() {
            if host_too(x) {
                let twin = fresh_name(sdfg, &params, &format!("dev_{}", x.trim_start_matches('_')));
                let mut t = desc.clone();
                t.storage = global;
                sdfg.containers.insert(twin.clone(), t);
                report.placements.push(Placement {
                    container: x.clone(),
                    twin: Some(twin.clone()),
                    storage: desc.storage,
                    reason: "a view used by host and device code: device code uses a twin view of its origin's twin".to_owned(),
                });
                renames.insert(x.clone(), twin);
            } else {
                // A view every access of which lies inside one kernel is a
                // per-thread pointer into its origin: a register.
                let (storage, reason) = if usage.kernel_local.contains(x) {
                    (Storage::Register, "a view inside one kernel: a register")
                } else {
                    (
                        global,
                        "a view used by device code takes its origin's storage",
                    )
                };
                if let Some(d) = sdfg.containers.get_mut(x) {
                    d.storage = storage;
                }
                report.placements.push(Placement {
                    container: x.clone(),
                    twin: None,
                    storage,
                    reason: reason.to_owned(),
                });
            }
            continue;
        }
        if usage.by_value.contains(x) && acc.scalars_by_value() {
            // Kernels take it by value at launch: it stays where the host
            // has it, and no copy ever moves it.
            report.placements.push(Placement {
                container: x.clone(),
                twin: None,
                storage: desc.storage,
                reason: "a scalar kernels only read: passed to them by value".to_owned(),
            });
            continue;
        }
        let is_return = x.starts_with("__return");
        if !desc.transient || is_return || host_too(x) {
            let twin = fresh_name(sdfg, &params, &format!("dev_{}", x.trim_start_matches('_')));
            let mut t = desc.clone();
            t.transient = true;
            t.storage = global;
            t.lifetime = Lifetime::Sdfg;
            sdfg.containers.insert(twin.clone(), t);
            let reason = if !desc.transient || is_return {
                "signature container: stays on the host, the device works on a twin"
            } else {
                "used by host code and device code: the device works on a twin"
            };
            report.placements.push(Placement {
                container: x.clone(),
                twin: Some(twin.clone()),
                storage: desc.storage,
                reason: reason.to_owned(),
            });
            twins.insert(x.clone(), twin.clone());
            renames.insert(x.clone(), twin);
        } else if usage.kernel_local.contains(x) {
            // Live only inside one kernel: a variable of each thread.
            if let Some(d) = sdfg.containers.get_mut(x) {
                d.storage = Storage::Register;
                d.lifetime = Lifetime::Scope;
            }
            report.placements.push(Placement {
                container: x.clone(),
                twin: None,
                storage: Storage::Register,
                reason: "live only inside one kernel: a register".to_owned(),
            });
        } else {
            let mut reason = "transient used only by device code".to_owned();
            if let Some(d) = sdfg.containers.get_mut(x) {
                d.storage = global;
                if d.is_scalar() && usage.device_written.contains(x) && acc.scalars_by_value() {
                    // Scalars are passed to kernels by value: one a kernel
                    // writes must be memory the next kernel can read.
                    d.kind = sdfg_ir::DataKind::Array(sdfg_ir::Layout::contiguous(vec![
                        sdfg_ir::SymExpr::int(1),
                    ]));
                    reason = "a scalar kernels write (scalars are passed by value): a length-one device array".to_owned();
                }
            }
            report.placements.push(Placement {
                container: x.clone(),
                twin: None,
                storage: global,
                reason,
            });
        }
    }
    if twins.is_empty() && renames.is_empty() && host_twins.is_empty() {
        return Ok(());
    }
    let mut pairs: BTreeMap<String, Pair> = BTreeMap::new();
    let sides = twins
        .iter()
        .map(|(x, t)| (x, x, t, Side::Host))
        .chain(host_twins.iter().map(|(x, t)| (x, t, x, Side::Device)));
    for (x, host, device, home) in sides {
        let storage = |name: &str| {
            sdfg.containers
                .get(name)
                .map_or(Storage::Default, |d| d.storage)
        };
        let (h, d) = (storage(host), storage(device));
        // How each direction is issued, asked once per pair: a pair the
        // accelerator cannot copy is refused here, naming the container.
        let (Some(to_device), Some(to_host)) = (acc.copy(h, d), acc.copy(d, h)) else {
            return Err(OffloadError::Unsupported {
                what: format!(
                    "copies of `{x}` between {h} and {d} memory, which the `{}` accelerator cannot copy",
                    acc.name()
                ),
                location: sdfg.name.clone(),
            });
        };
        pairs.insert(
            x.clone(),
            Pair {
                host: host.clone(),
                device: device.clone(),
                home,
                to_device,
                to_host,
            },
        );
    }
    // A signature container starts, and ends, where its home is; a
    // transient holds nothing yet.
    let env: Env = pairs
        .iter()
        .map(|(x, p)| {
            let signature = sdfg.containers.get(x).is_some_and(|d| !d.transient);
            (
                x.clone(),
                if signature {
                    Valid::of(p.home)
                } else {
                    Valid::Uninit
                },
            )
        })
        .collect();
    let signature: BTreeMap<String, Side> = pairs
        .iter()
        .filter(|(x, _)| {
            x.starts_with("__return") || sdfg.containers.get(*x).is_some_and(|d| !d.transient)
        })
        .map(|(x, p)| (x.clone(), p.home))
        .collect();
    let mut walk = Walk {
        containers: sdfg.containers.clone(),
        given: &given,
        labels: all_labels(sdfg),
        pairs: &pairs,
        renames: &renames,
        host_renames: &host_twins,
        signature,
        loops: Vec::new(),
        prologue: Vec::new(),
        report,
    };
    let mut body = std::mem::take(&mut sdfg.body);
    let mut env = env;
    let result = walk.root(&mut body, &mut env);
    sdfg.body = body;
    result?;
    // Interstate code is host code: it reads the host twins. (After the
    // walk, which decides its copies on the containers' own names.)
    if !host_twins.is_empty() {
        sdfg.body.for_each_region_mut(&mut |region| {
            for block in &mut region.blocks {
                block.rename_interstate_reads(&host_twins);
            }
        });
    }
    Ok(())
}

/// A container the walk tracks, by the names each side uses for it, and
/// the side it lives on before and after the program.
struct Pair {
    host: String,
    device: String,
    home: Side,
    /// How a copy to the device twin is issued ([`Accelerator::copy`]).
    to_device: CopyKind,
    /// How a copy back to the host is issued.
    to_host: CopyKind,
}

/// Which sides hold the current value of a container with a twin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Valid {
    /// Nothing written yet (a transient): any side may claim it.
    Uninit,
    /// Only the host container.
    Host,
    /// Only the device twin.
    Device,
    /// Both, equal.
    Both,
}

impl Valid {
    fn of(side: Side) -> Valid {
        match side {
            Side::Host => Valid::Host,
            Side::Device => Valid::Device,
        }
    }

    /// Whether code on `side` needs a copy before it may read.
    fn lacks(self, side: Side) -> bool {
        matches!(
            (self, side),
            (Valid::Host, Side::Device) | (Valid::Device, Side::Host)
        )
    }

    /// `self` plus `side` (a copy to `side` was made, or may be claimed).
    fn with(self, side: Side) -> Valid {
        match self {
            Valid::Uninit => Valid::of(side),
            v if v.lacks(side) => Valid::Both,
            v => v,
        }
    }

    /// Where two paths meeting agree, or `None` if they share no side.
    fn meet(self, other: Valid) -> Option<Valid> {
        match (self, other) {
            (Valid::Uninit, v) | (v, Valid::Uninit) => Some(v),
            (a, b) if a == b => Some(a),
            (Valid::Both, v) | (v, Valid::Both) => Some(v),
            _ => None,
        }
    }

    /// Whether the value is known to be on `side` (not merely claimable).
    fn holds(self, side: Side) -> bool {
        matches!(
            (self, side),
            (Valid::Both, _) | (Valid::Host, Side::Host) | (Valid::Device, Side::Device)
        )
    }
}

type Env = BTreeMap<String, Valid>;

/// A copy the walk asks for: `data` to `to`, and why.
struct Request {
    data: String,
    to: Side,
    reason: String,
}

struct LoopFrame {
    label: String,
    /// Where the loop head holds each container the loop uses.
    head: Env,
    /// Containers the loop's update reads (on the host, before each back edge).
    update_reads: BTreeSet<String>,
}

struct Walk<'a> {
    /// Every container, placed (twins included).
    containers: BTreeMap<String, DataDesc>,
    /// The containers as the pass was given them: who touches what in a
    /// state is decided on these, as [`super::locations`] decided it.
    given: &'a BTreeMap<String, DataDesc>,
    labels: BTreeSet<String>,
    /// Every container with a twin: the host's name and the device's.
    pairs: &'a BTreeMap<String, Pair>,
    /// What device code calls a container (data and view twins).
    renames: &'a BTreeMap<String, String>,
    /// What host code calls a container whose home is the device.
    host_renames: &'a BTreeMap<String, String>,
    /// Signature containers, and the side each is restored on.
    signature: BTreeMap<String, Side>,
    loops: Vec<LoopFrame>,
    /// Host-to-device copies hoisted to the start of the program.
    prologue: Vec<Request>,
    report: &'a mut Report,
}

impl Walk<'_> {
    /// The root region: the prologue of hoisted copy-ins, and the exit
    /// restoring signature containers.
    fn root(&mut self, body: &mut Region, env: &mut Env) -> Result<(), OffloadError> {
        let first_record = self.report.copies.len();
        let falls = self.region(body, env, true)?;
        if falls {
            let reqs =
                self.restore_signature(env, "the device wrote it: copied back once, at the exit");
            if let Some(b) = self.copy_block("offload_copy_out", reqs) {
                body.blocks.push(b);
            }
        }
        let prologue = std::mem::take(&mut self.prologue);
        let hoisted = prologue.len();
        if let Some(b) = self.copy_block("offload_copy_in", prologue) {
            body.blocks.insert(0, b);
            // The report lists copies in program order.
            self.report.copies[first_record..].rotate_right(hoisted);
        }
        Ok(())
    }

    /// Walks a region, inserting copies; returns whether control can leave
    /// it at its end (it does not when it ends in `break`, `continue` or
    /// `return`, or in a conditional none of whose branches falls through).
    fn region(
        &mut self,
        region: &mut Region,
        env: &mut Env,
        root: bool,
    ) -> Result<bool, OffloadError> {
        let blocks = std::mem::take(&mut region.blocks);
        let mut out = Vec::with_capacity(blocks.len());
        let mut falls = true;
        // At the root, containers no block so far could have changed: their
        // copy-ins may move to the start.
        let mut touched: BTreeSet<String> = BTreeSet::new();
        for mut block in blocks {
            let label = block.label.clone();
            // Copies before a block are recorded after the block's own (the
            // walk decides them first, emits them last): the report lists
            // copies in program order.
            let mark = self.report.copies.len();
            let mut before: Vec<Request> = Vec::new();
            match &mut block.kind {
                BlockKind::State(state) => {
                    self.state(&label, state, env, &mut before)?;
                }
                BlockKind::Loop(l) => self.r#loop(&label, l, env, &mut before)?,
                BlockKind::Conditional(c) => {
                    falls &= self.conditional(&label, c, env, &mut before)?;
                }
                BlockKind::Break | BlockKind::Continue => {
                    let continues = matches!(block.kind, BlockKind::Continue);
                    before.extend(self.back_edge(env, continues));
                    falls = false;
                }
                BlockKind::Return => {
                    before.extend(self.restore_signature(
                        env,
                        "the device wrote it: copied back before `return`",
                    ));
                    falls = false;
                }
            }
            if root {
                // (A container whose home is the device is copied there
                // only after host code wrote its twin: never hoisted.)
                let (hoist, keep): (Vec<_>, Vec<_>) = before.into_iter().partition(|r| {
                    r.to == Side::Device
                        && !touched.contains(&r.data)
                        && !self.host_renames.contains_key(&r.data)
                });
                self.prologue.extend(hoist.into_iter().map(|r| Request {
                    reason: format!("{}: copied in once, at the start", r.reason),
                    ..r
                }));
                before = keep;
            }
            match &block.kind {
                BlockKind::Loop(_) => {
                    for r in &mut before {
                        r.reason.push_str(": copied once, before the loop");
                    }
                    touched.extend(touches(&block));
                }
                // What host code writes (a host state's scalar) is copied in
                // after it, not at the start.
                _ => touched.extend(host_writes(self.given, &block)),
            }
            let base = match &block.kind {
                BlockKind::Return => "offload_copy_out_return".to_owned(),
                _ if before.iter().all(|r| r.to == Side::Host) => format!("{label}_to_host"),
                _ => format!("{label}_to_device"),
            };
            let count = before.len();
            if let Some(b) = self.copy_block(&base, before) {
                self.report.copies[mark..].rotate_right(count);
                out.push(b);
            }
            // The transition leaving the block is host code.
            let reads: Vec<Request> = block
                .transition
                .reads()
                .into_iter()
                .filter_map(|x| {
                    self.need(env, &x, Side::Host, || {
                        format!("the transition after `{label}` reads `{x}`")
                    })
                })
                .collect();
            if let Some(mut copy) = self.copy_block(&format!("{label}_to_host"), reads) {
                copy.transition = std::mem::take(&mut block.transition);
                out.push(block);
                out.push(copy);
            } else {
                out.push(block);
            }
        }
        region.blocks = out;
        Ok(falls)
    }

    /// A copy to `side` if `x` (tracked) is not valid there; updates `env`.
    fn need(
        &self,
        env: &mut Env,
        x: &str,
        side: Side,
        reason: impl FnOnce() -> String,
    ) -> Option<Request> {
        let v = env.get_mut(x)?;
        if !v.lacks(side) {
            return None;
        }
        *v = v.with(side);
        Some(Request {
            data: x.to_owned(),
            to: side,
            reason: reason(),
        })
    }

    fn state(
        &mut self,
        label: &str,
        state: &mut State,
        env: &mut Env,
        before: &mut Vec<Request>,
    ) -> Result<(), OffloadError> {
        let accesses = state_accesses(self.given, state);
        // Per container: the side(s) touching it here, whether it needs its
        // old value there, and whether it is written.
        let mut per: BTreeMap<&str, (BTreeSet<Side>, bool, bool)> = BTreeMap::new();
        for a in &accesses {
            if !self.renames.contains_key(&a.data) && !self.host_renames.contains_key(&a.data) {
                continue;
            }
            let e = per.entry(a.data.as_str()).or_default();
            e.0.insert(a.side);
            e.1 |= needs_old(a);
            e.2 |= a.write;
        }
        for (x, (sides, old, written)) in &per {
            if sides.len() > 1 {
                return Err(OffloadError::Unsupported {
                    what: format!(
                        "container `{x}`, used by host code and device code in the same state"
                    ),
                    location: label.to_owned(),
                });
            }
            let Some(&side) = sides.iter().next() else {
                continue;
            };
            if *old {
                before.extend(self.need(env, x, side, || {
                    let what = if *written { "writes part of" } else { "reads" };
                    format!("{side} code in `{label}` {what} `{x}`")
                }));
            }
            if *written && let Some(v) = env.get_mut(*x) {
                *v = Valid::of(side);
            }
        }
        for (x, (sides, ..)) in &per {
            let twin = if sides.contains(&Side::Device) {
                self.renames.get(*x)
            } else {
                self.host_renames.get(*x)
            };
            if let Some(twin) = twin {
                rename(state, x, twin);
            }
        }
        Ok(())
    }

    fn r#loop(
        &mut self,
        label: &str,
        l: &mut LoopBlock,
        env: &mut Env,
        before: &mut Vec<Request>,
    ) -> Result<(), OffloadError> {
        if let Some(init) = &l.init {
            for x in init.reads() {
                before.extend(self.need(env, &x, Side::Host, || {
                    format!("the start of loop `{label}` reads `{x}`")
                }));
            }
        }
        // The loop head: each container the loop uses, on the sides it is
        // used on before its first write (at least the side of that write).
        let mut first = FirstUses::default();
        for x in l.condition.reads() {
            first.access(&x, Side::Host, true, false);
        }
        first.region(self.given, &l.body);
        let update_reads: BTreeSet<String> =
            l.update.as_ref().map(|u| u.reads()).unwrap_or_default();
        for x in &update_reads {
            first.access(x, Side::Host, true, false);
        }
        // A container the loop writes is held at the head only where the
        // body wants it (anything more would be restored on every back
        // edge); one it only reads keeps every side it had.
        let mut head = Env::new();
        for (x, want) in first.sides {
            if !env.contains_key(&x) {
                continue;
            }
            for side in [Side::Host, Side::Device] {
                if want.holds(side) {
                    before.extend(self.need(env, &x, side, || {
                        format!("loop `{label}` uses `{x}` on the {side} before writing it")
                    }));
                }
            }
            let at_head = if first.written.contains(&x) {
                want
            } else {
                env[&x]
            };
            head.insert(x.clone(), at_head);
            env.insert(x, at_head);
        }
        self.loops.push(LoopFrame {
            label: label.to_owned(),
            head,
            update_reads,
        });
        let falls = self.region(&mut l.body, env, false);
        let frame_falls = match falls {
            Ok(f) => f,
            Err(e) => {
                self.loops.pop();
                return Err(e);
            }
        };
        if frame_falls {
            let reqs = self.back_edge(env, true);
            if let Some(b) = self.copy_block(&format!("{label}_back_edge"), reqs) {
                l.body.blocks.push(b);
            }
        }
        if let Some(frame) = self.loops.pop() {
            for (x, v) in frame.head {
                env.insert(x, v);
            }
        }
        Ok(())
    }

    /// Copies restoring the innermost loop's head: before a `break`, and
    /// (after the update's host reads) before a `continue` or back edge.
    fn back_edge(&mut self, env: &mut Env, continues: bool) -> Vec<Request> {
        let Some(frame) = self.loops.last() else {
            return Vec::new();
        };
        let (label, head, update) = (
            frame.label.clone(),
            frame.head.clone(),
            if continues {
                frame.update_reads.clone()
            } else {
                BTreeSet::new()
            },
        );
        let mut out = Vec::new();
        for x in update {
            out.extend(self.need(env, &x, Side::Host, || {
                format!("the update of loop `{label}` reads `{x}`")
            }));
        }
        out.extend(self.restore(env, &head, &|x, side| {
            format!("loop `{label}` holds `{x}` on the {side} at its head: restored before going back or leaving")
        }));
        out
    }

    /// Copies making `env` hold at least what `target` holds.
    fn restore(
        &self,
        env: &mut Env,
        target: &Env,
        reason: &dyn Fn(&str, Side) -> String,
    ) -> Vec<Request> {
        let mut out = Vec::new();
        for (x, want) in target {
            for side in [Side::Host, Side::Device] {
                if want.holds(side) {
                    out.extend(self.need(env, x, side, || reason(x, side)));
                }
            }
        }
        out
    }

    fn restore_signature(&self, env: &mut Env, reason: &str) -> Vec<Request> {
        let target: Env = self
            .signature
            .iter()
            .map(|(x, home)| (x.clone(), Valid::of(*home)))
            .collect();
        self.restore(env, &target, &|_, _| reason.to_owned())
    }

    fn conditional(
        &mut self,
        label: &str,
        c: &mut ConditionalBlock,
        env: &mut Env,
        before: &mut Vec<Request>,
    ) -> Result<bool, OffloadError> {
        for (cond, _) in &c.branches {
            for x in cond.reads() {
                before.extend(self.need(env, &x, Side::Host, || {
                    format!("a condition of `{label}` reads `{x}`")
                }));
            }
        }
        // Walk every branch from the same start; `None` is the implicit
        // empty `else`.
        let mut ends: Vec<Option<Env>> = Vec::new();
        for (_, r) in &mut c.branches {
            let mut e = env.clone();
            let falls = self.region(r, &mut e, false)?;
            ends.push(falls.then_some(e));
        }
        let mut otherwise = c.otherwise.take().unwrap_or_default();
        let mut e = env.clone();
        let falls = self.region(&mut otherwise, &mut e, false)?;
        ends.push(falls.then_some(e));
        // Where they meet: agreement, else the first branch falling through.
        let falling: Vec<&Env> = ends.iter().flatten().collect();
        let Some(first) = falling.first() else {
            c.otherwise = (!otherwise.blocks.is_empty()).then_some(otherwise);
            return Ok(false);
        };
        let mut target = Env::new();
        for (x, v) in first.iter() {
            let met = falling
                .iter()
                .try_fold(*v, |acc, e| e.get(x).and_then(|w| acc.meet(*w)));
            target.insert(x.clone(), met.unwrap_or(*v));
        }
        let count = ends.len();
        for (k, end) in ends.into_iter().enumerate() {
            let Some(mut e) = end else { continue };
            let reqs = self.restore(&mut e, &target, &|x, side| {
                format!("the branches of `{label}` meet with `{x}` on the {side}")
            });
            let Some(b) = self.copy_block(&format!("{label}_meet"), reqs) else {
                continue;
            };
            if k + 1 == count {
                otherwise.blocks.push(b);
            } else {
                c.branches[k].1.blocks.push(b);
            }
        }
        c.otherwise = (!otherwise.blocks.is_empty()).then_some(otherwise);
        *env = target;
        Ok(true)
    }

    /// A state performing `reqs`, recorded in the report; `None` if empty.
    fn copy_block(&mut self, base: &str, reqs: Vec<Request>) -> Option<ControlBlock> {
        if reqs.is_empty() {
            return None;
        }
        let label = fresh_label(&mut self.labels, base);
        let mut pairs = Vec::new();
        for r in reqs {
            let Some(pair) = self.pairs.get(&r.data) else {
                continue;
            };
            let (from, to, kind) = match r.to {
                Side::Device => (pair.host.clone(), pair.device.clone(), pair.to_device),
                Side::Host => (pair.device.clone(), pair.host.clone(), pair.to_host),
            };
            self.report.copies.push(CopyRecord {
                from: from.clone(),
                to: to.clone(),
                kind,
                bytes: self
                    .containers
                    .get(&r.data)
                    .and_then(|d| d.total_bytes())
                    .unwrap_or(sdfg_ir::SymExpr::int(0)),
                block: label.clone(),
                reason: r.reason,
            });
            pairs.push((from, to));
        }
        let state = copy_state(&self.containers, &pairs);
        Some(ControlBlock::new(label, BlockKind::State(state)))
    }
}

/// Whether an access needs the container's current value on its side.
fn needs_old(a: &Access) -> bool {
    a.read || (a.write && !a.full_write)
}

/// For a loop body in program order: the sides each container is used on up
/// to and including its first write.
#[derive(Default)]
struct FirstUses {
    sides: BTreeMap<String, Valid>,
    /// Containers whose first write has been seen on every path so far.
    closed: BTreeSet<String>,
    /// Containers written anywhere.
    written: BTreeSet<String>,
}

impl FirstUses {
    fn access(&mut self, x: &str, side: Side, old: bool, write: bool) {
        if write {
            self.written.insert(x.to_owned());
        }
        if self.closed.contains(x) {
            return;
        }
        let v = self.sides.entry(x.to_owned()).or_insert(Valid::Uninit);
        // A whole write needs no old value; it claims its side only when
        // nothing was used before it (the head must hold the container
        // somewhere, or leaving the loop would lose it).
        if old || *v == Valid::Uninit {
            *v = v.with(side);
        }
        if write {
            self.closed.insert(x.to_owned());
        }
    }

    fn region(&mut self, containers: &BTreeMap<String, DataDesc>, region: &Region) {
        for block in &region.blocks {
            match &block.kind {
                BlockKind::State(s) => {
                    let accesses = state_accesses(containers, s);
                    // A state's reads come before its writes.
                    for a in &accesses {
                        if needs_old(a) {
                            self.access(&a.data, a.side, true, false);
                        }
                    }
                    for a in &accesses {
                        if a.write {
                            self.access(&a.data, a.side, false, true);
                        }
                    }
                }
                BlockKind::Loop(l) => {
                    for x in l.init.iter().chain(l.update.iter()).flat_map(|e| e.reads()) {
                        self.access(&x, Side::Host, true, false);
                    }
                    for x in l.condition.reads() {
                        self.access(&x, Side::Host, true, false);
                    }
                    self.region(containers, &l.body);
                }
                BlockKind::Conditional(c) => {
                    for (cond, _) in &c.branches {
                        for x in cond.reads() {
                            self.access(&x, Side::Host, true, false);
                        }
                    }
                    // A write in one branch closes neither the other branches
                    // nor what follows (the branch may not run).
                    let closed = self.closed.clone();
                    for r in c.branches.iter().map(|(_, r)| r).chain(c.otherwise.iter()) {
                        self.closed = closed.clone();
                        self.region(containers, r);
                    }
                    self.closed = closed;
                }
                BlockKind::Break | BlockKind::Continue | BlockKind::Return => {}
            }
            for x in block.transition.reads() {
                self.access(&x, Side::Host, true, false);
            }
        }
    }
}

/// Every container a block touches: accessed in its states or read by its
/// interstate code, at any depth.
/// The containers host code in the states of `block` writes, at any depth.
fn host_writes(containers: &BTreeMap<String, DataDesc>, block: &ControlBlock) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    block.walk(&mut |b| {
        if let BlockKind::State(s) = &b.kind {
            out.extend(
                state_accesses(containers, s)
                    .into_iter()
                    .filter(|a| a.side == Side::Host && a.write)
                    .map(|a| a.data),
            );
        }
    });
    out
}

/// Every container `block` names, at any depth, interstate code included.
fn touches(block: &ControlBlock) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    block.walk(&mut |b| {
        out.extend(interstate_reads(b));
        if let BlockKind::State(s) = &b.kind {
            out.extend(
                s.nodes()
                    .filter_map(|(_, n)| n.as_access().map(str::to_owned)),
            );
            out.extend(
                s.edges()
                    .filter_map(|(_, _, _, e)| e.memlet.as_ref().map(|m| m.data.clone())),
            );
        }
    });
    out
}

/// A state copying each `(from, to)` pair whole.
fn copy_state(
    containers: &BTreeMap<String, sdfg_ir::DataDesc>,
    pairs: &[(String, String)],
) -> State {
    let mut state = State::new();
    for (from, to) in pairs {
        let shape = containers.get(from).map(|d| d.shape()).unwrap_or_default();
        let a = state.add_access(from);
        let b = state.add_access(to);
        state.add_edge(a, None, b, None, Memlet::full(from, &shape));
    }
    state
}

/// Renames container `from` to `to` in every access node and memlet of a state.
fn rename(state: &mut State, from: &str, to: &str) {
    let nodes: Vec<_> = state.nodes().map(|(id, _)| id).collect();
    for n in nodes {
        if let Some(Node::Access(a)) = state.graph.node_weight_mut(n)
            && a.data == from
        {
            a.data = to.to_owned();
        }
    }
    let edges: Vec<_> = state.edges().map(|(id, ..)| id).collect();
    for e in edges {
        if let Some(m) = state
            .graph
            .edge_weight_mut(e)
            .and_then(|e| e.memlet.as_mut())
            && m.data == from
        {
            m.data = to.to_owned();
        }
    }
}

/// The parameters of every map of `sdfg`'s own states: symbols inside
/// their scopes, which no container may be named after. Collected once per
/// placement (walking the SDFG per new name made offloading quadratic in
/// the number of containers).
pub(super) fn map_params(sdfg: &Sdfg) -> BTreeSet<String> {
    let mut params = BTreeSet::new();
    for (_, state) in sdfg.states() {
        for (_, node) in state.nodes() {
            if let Node::MapEntry(m) = node {
                params.extend(m.map.params.iter().cloned());
            }
        }
    }
    params
}

/// A container name from `base` that no container, symbol or map parameter
/// (`params`, from [`map_params`]) has, and not a reserved return name.
pub(super) fn fresh_name(sdfg: &Sdfg, params: &BTreeSet<String>, base: &str) -> String {
    let mut name = base.to_owned();
    let mut k = 1;
    while sdfg.containers.contains_key(&name)
        || sdfg.symbols.contains_key(&name)
        || params.contains(&name)
        || name.starts_with("__return")
    {
        name = format!("{base}_{k}");
        k += 1;
    }
    name
}

fn all_labels(sdfg: &Sdfg) -> BTreeSet<String> {
    let mut labels = BTreeSet::new();
    sdfg.walk_blocks(&mut |_, _, b| {
        labels.insert(b.label.clone());
    });
    labels
}

fn fresh_label(labels: &mut BTreeSet<String>, base: &str) -> String {
    let mut label = base.to_owned();
    let mut k = 1;
    while labels.contains(&label) {
        label = format!("{base}_{k}");
        k += 1;
    }
    labels.insert(label.clone());
    label
}
