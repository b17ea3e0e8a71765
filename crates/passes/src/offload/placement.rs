//! Phase 4: where every container lives, and the copies between twins.
//!
//! Signature containers (arguments and return values) never move: each one
//! the device uses gets a *twin* in the accelerator's global storage, with a
//! name that collides with nothing (and never starts with `__return`). The
//! twin is copied in once, at the start, if the device reads it or may leave
//! part of it unwritten (see `needs_copy_in_for_writes`), and copied
//! back at the exit and before every `return` if the device wrote it. A
//! container that interstate code reads keeps its host copy current: it is
//! copied back after every state that writes its twin (and before the
//! transition that may read it). Transients only device code uses are placed
//! in device memory directly; views take their origin's storage.

use super::locations::Usage;
use super::{CopyRecord, OffloadError, Placement, Report, for_each_state_mut};
use crate::accelerator::{Accelerator, CopyKind};
use sdfg_ir::{
    BlockKind, ControlBlock, Lifetime, Memlet, Node, Region, Sdfg, State, Storage, Subset,
};
use std::collections::{BTreeMap, BTreeSet};

pub(crate) fn place(
    sdfg: &mut Sdfg,
    acc: &dyn Accelerator,
    usage: &Usage,
    report: &mut Report,
) -> Result<(), OffloadError> {
    let used = usage.device_used();
    if let Some(both) = used.intersection(&usage.host_used).next() {
        return Err(OffloadError::Unsupported {
            what: format!(
                "container `{both}`, used by device code and by host code inside states (a callback or a host map)"
            ),
            location: sdfg.name.clone(),
        });
    }
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
    let global = acc.global_storage();
    let mut twins: BTreeMap<String, String> = BTreeMap::new();
    for x in &used {
        let Some(desc) = sdfg.containers.get(x).cloned() else {
            continue;
        };
        if desc.is_view() {
            if let Some(d) = sdfg.containers.get_mut(x) {
                d.storage = global;
            }
            report.placements.push(Placement {
                container: x.clone(),
                twin: None,
                storage: global,
                reason: "a view used by device code takes its origin's storage".to_owned(),
            });
            continue;
        }
        let is_return = x.starts_with("__return");
        let needs_twin = !desc.transient || is_return || usage.host_read.contains(x);
        if needs_twin {
            let twin = fresh_name(sdfg, &format!("dev_{}", x.trim_start_matches('_')));
            let mut t = desc.clone();
            t.transient = true;
            t.storage = global;
            t.lifetime = Lifetime::Sdfg;
            sdfg.containers.insert(twin.clone(), t);
            let reason = if !desc.transient || is_return {
                "signature container: stays on the host, the device works on a twin"
            } else {
                "read by interstate code on the host: the device works on a twin"
            };
            report.placements.push(Placement {
                container: x.clone(),
                twin: Some(twin.clone()),
                storage: desc.storage,
                reason: reason.to_owned(),
            });
            twins.insert(x.clone(), twin);
        } else if usage.kernel_local.contains(x) && !is_return {
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

    // Which signature twins are copied in. Decided before the states are
    // renamed, on the original names.
    //
    // Fix (tests/offload.rs): this used to copy in only twins the device
    // *reads*. A twin the device only writes was left uninitialised, and the
    // copy back then overwrote the host container with garbage wherever the
    // device had not written: a write-conflict resolution (`y[i] += ...`,
    // which combines with the old value), a partial write (`B[1:] = ...`), or
    // a write the run never reaches (a branch not taken, a loop of zero
    // trips). A write-only twin now skips its copy-in only when every copy
    // back is known to follow a plain write of the whole container.
    let mut copy_in: Vec<(String, String)> = Vec::new();
    let mut copy_in_reasons: Vec<String> = Vec::new();
    for (x, t) in &twins {
        if sdfg.containers.get(x).is_none_or(|d| d.transient) {
            continue;
        }
        let reason = if usage.device_read.contains(x) {
            format!("the device reads `{x}`: copied in once, before any use")
        } else if needs_copy_in_for_writes(sdfg, usage, x) {
            format!(
                "the device writes `{x}` but may leave part of it as it was \
                 (a partial, conditional or combining write): copied in once, \
                 so that copying it back keeps the rest"
            )
        } else {
            continue;
        };
        copy_in.push((x.clone(), t.clone()));
        copy_in_reasons.push(reason);
    }

    // Device code works on the twins.
    for_each_state_mut(&mut sdfg.body, &mut |label, state| {
        let Some(here) = usage.per_state.get(label) else {
            return Ok(());
        };
        for (x, twin) in &twins {
            if here.contains(x) {
                rename(state, x, twin);
            }
        }
        Ok(())
    })?;

    let mut labels = all_labels(sdfg);
    let bytes = |sdfg: &Sdfg, x: &str| {
        sdfg.containers
            .get(x)
            .and_then(|d| d.total_bytes())
            .unwrap_or(sdfg_ir::SymExpr::int(0))
    };

    // Copy-in, once, at the start.
    if !copy_in.is_empty() {
        let label = fresh_label(&mut labels, "offload_copy_in");
        for ((x, t), reason) in copy_in.iter().zip(&copy_in_reasons) {
            report.copies.push(CopyRecord {
                from: x.clone(),
                to: t.clone(),
                kind: CopyKind::HostToDevice,
                bytes: bytes(sdfg, x),
                block: label.clone(),
                reason: reason.clone(),
            });
        }
        let state = copy_state(&sdfg.containers, &copy_in);
        sdfg.body
            .blocks
            .insert(0, ControlBlock::new(label, BlockKind::State(state)));
    }

    // Host reads of interstate code: copy back after every state that writes the twin.
    let host_twins: Vec<(String, String)> = twins
        .iter()
        .filter(|(x, _)| usage.host_read.contains(*x))
        .map(|(x, t)| (x.clone(), t.clone()))
        .collect();
    if !host_twins.is_empty() {
        let containers = sdfg.containers.clone();
        let mut body = std::mem::take(&mut sdfg.body);
        copy_back_after_writes(
            &mut body,
            &host_twins,
            usage,
            &containers,
            &mut labels,
            report,
        );
        sdfg.body = body;
    }

    // Copy-out at the exit and before every return.
    let copy_out: Vec<(String, String)> = twins
        .iter()
        .filter(|(x, _)| {
            let signature =
                sdfg.containers.get(*x).is_some_and(|d| !d.transient) || x.starts_with("__return");
            signature && usage.device_written.contains(*x) && !usage.host_read.contains(*x)
        })
        .map(|(t, x)| (x.clone(), t.clone()))
        .collect();
    if !copy_out.is_empty() {
        let containers = sdfg.containers.clone();
        let mut body = std::mem::take(&mut sdfg.body);
        copy_out_before_returns(&mut body, &copy_out, &containers, &mut labels, report);
        // A region ending in `return` has just copied back: its exit is unreachable.
        let ends_in_return = body
            .blocks
            .last()
            .is_some_and(|b| matches!(b.kind, BlockKind::Return));
        if !ends_in_return {
            let label = fresh_label(&mut labels, "offload_copy_out");
            record_out(
                &copy_out,
                &containers,
                &label,
                "the device wrote it: copied back once, at the exit",
                report,
            );
            let state = copy_state(&containers, &copy_out);
            body.blocks
                .push(ControlBlock::new(label, BlockKind::State(state)));
        }
        sdfg.body = body;
    }
    Ok(())
}

fn record_out(
    pairs: &[(String, String)],
    containers: &BTreeMap<String, sdfg_ir::DataDesc>,
    label: &str,
    reason: &str,
    report: &mut Report,
) {
    for (t, x) in pairs {
        report.copies.push(CopyRecord {
            from: t.clone(),
            to: x.clone(),
            kind: CopyKind::DeviceToHost,
            bytes: containers
                .get(x)
                .and_then(|d| d.total_bytes())
                .unwrap_or(sdfg_ir::SymExpr::int(0)),
            block: label.to_owned(),
            reason: reason.to_owned(),
        });
    }
}

/// Inserts a device-to-host copy state after every state that writes one of the twins.
fn copy_back_after_writes(
    body: &mut Region,
    pairs: &[(String, String)],
    usage: &Usage,
    containers: &BTreeMap<String, sdfg_ir::DataDesc>,
    labels: &mut BTreeSet<String>,
    report: &mut Report,
) {
    body.for_each_region_mut(&mut |region| {
        let mut i = 0;
        while i < region.blocks.len() {
            if matches!(region.blocks[i].kind, BlockKind::State(_)) {
                let label = region.blocks[i].label.clone();
                let written = usage.per_state_written.get(&label);
                let copies: Vec<(String, String)> = pairs
                    .iter()
                    .filter(|(x, _)| written.is_some_and(|w| w.contains(x)))
                    .map(|(x, t)| (t.clone(), x.clone()))
                    .collect();
                if !copies.is_empty() {
                    let new_label = fresh_label(labels, &format!("{label}_to_host"));
                    record_out(
                        &copies,
                        containers,
                        &new_label,
                        &format!(
                            "read on the host by interstate code after state `{label}` writes it"
                        ),
                        report,
                    );
                    let state = copy_state(containers, &copies);
                    // The transition after the state may read the copied data:
                    // it now leaves the copy state instead.
                    let transition = std::mem::take(&mut region.blocks[i].transition);
                    let mut block = ControlBlock::new(new_label, BlockKind::State(state));
                    block.transition = transition;
                    region.blocks.insert(i + 1, block);
                    i += 1;
                }
            }
            i += 1;
        }
    });
}

/// Inserts the copy-out state before every `return` block.
fn copy_out_before_returns(
    body: &mut Region,
    pairs: &[(String, String)],
    containers: &BTreeMap<String, sdfg_ir::DataDesc>,
    labels: &mut BTreeSet<String>,
    report: &mut Report,
) {
    body.for_each_region_mut(&mut |region| {
        let mut i = 0;
        while i < region.blocks.len() {
            if matches!(region.blocks[i].kind, BlockKind::Return) {
                let label = fresh_label(labels, "offload_copy_out_return");
                record_out(
                    pairs,
                    containers,
                    &label,
                    "the device wrote it: copied back before `return`",
                    report,
                );
                let state = copy_state(containers, pairs);
                region
                    .blocks
                    .insert(i, ControlBlock::new(label, BlockKind::State(state)));
                i += 1;
            }
            i += 1;
        }
    });
}

/// Whether the twin of `x`, which the device writes but never reads, must
/// still be copied in: unless every copy back of it follows a plain write of
/// all of `x` (no write-conflict resolution, not dynamic, the whole subset),
/// the copy back would carry elements the device never wrote.
fn needs_copy_in_for_writes(sdfg: &Sdfg, usage: &Usage, x: &str) -> bool {
    let Some(desc) = sdfg.containers.get(x) else {
        return true;
    };
    let whole = Subset::full(&desc.shape());
    // (writes x at all, writes all of x with a plain memlet)
    let writes = |state: &State| {
        let mut any = false;
        let mut full = false;
        for (_, _, dst, edge) in state.edges() {
            if state.node(dst).and_then(Node::as_access) != Some(x) {
                continue;
            }
            any = true;
            full |= edge.memlet.as_ref().is_some_and(|m| {
                // The subset of `x` written: a copy into `x` named by its
                // source gives it as the other subset (or the same subset).
                let subset = match &m.other_subset {
                    Some(other) if m.data != x => other,
                    _ => &m.subset,
                };
                m.wcr.is_none() && !m.dynamic && *subset == whole
            });
        }
        (any, full)
    };
    if usage.host_read.contains(x) {
        // Copied back after every state that writes it: each must write it all.
        let mut partial = false;
        sdfg.walk_blocks(&mut |_, _, b| {
            if let BlockKind::State(s) = &b.kind {
                let (any, full) = writes(s);
                partial |= any && !full;
            }
        });
        return partial;
    }
    // Copied back at the exit and before every `return`: a state of the root
    // region, reached before any `return`, must write it all.
    for block in &sdfg.body.blocks {
        match &block.kind {
            BlockKind::State(s) if writes(s).1 => return false,
            BlockKind::State(_) => {}
            _ if contains_return(block) => return true,
            _ => {}
        }
    }
    true
}

fn contains_return(block: &ControlBlock) -> bool {
    let region_has = |r: &Region| r.blocks.iter().any(contains_return);
    match &block.kind {
        BlockKind::Return => true,
        BlockKind::Loop(l) => region_has(&l.body),
        BlockKind::Conditional(c) => {
            c.branches.iter().any(|(_, r)| region_has(r))
                || c.otherwise.as_ref().is_some_and(region_has)
        }
        BlockKind::State(_) | BlockKind::Break | BlockKind::Continue => false,
    }
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

/// A container name starting with `base` that is not a container or symbol,
/// and not a reserved return name.
fn fresh_name(sdfg: &Sdfg, base: &str) -> String {
    // Map parameters are symbols inside their scopes: a container may not share their names.
    let mut params = BTreeSet::new();
    for (_, state) in sdfg.states() {
        for (_, node) in state.nodes() {
            if let Node::MapEntry(m) = node {
                params.extend(m.map.params.iter().cloned());
            }
        }
    }
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
