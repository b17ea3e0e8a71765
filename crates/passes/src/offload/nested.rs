//! Nested SDFGs: at host level a host level of their own; inside a kernel,
//! code of each thread.
//!
//! At host level, the caller runs the nested SDFG on the host, so its maps
//! at host level become kernels and its host tasklets single-thread kernels,
//! exactly as at the top level. Its connectors are bound to the caller's
//! device data (the caller's placement gives them device twins), so its
//! non-transient containers are device memory; its transients are placed by
//! the same rules as the caller's, except that none of its states stays on
//! the host (its scalars are the device's too). Interstate code of such a
//! nested SDFG that reads data would need host copies of device data inside
//! it, and is refused for now.
//!
//! Inside a kernel, every thread runs the nested SDFG whole: its maps run
//! sequentially, its interstate code is device code, its connectors are the
//! kernel's device data and its transients are the thread's own (registers).

use super::locations;
use super::{OffloadError, Placement, Report, partitions, schedules};
use crate::accelerator::Accelerator;
use sdfg_ir::{Lifetime, Sdfg, Storage};

pub(crate) fn offload_inner(
    sdfg: &mut Sdfg,
    acc: &dyn Accelerator,
    report: &mut Report,
) -> Result<(), OffloadError> {
    let mut inner = Report::default();
    schedules::assign(sdfg, acc, &super::HostMaps::None, &mut inner)?;
    // No state of it stays on the host: the scalars such a state writes
    // would be host data inside an SDFG whose data is the device's (DaCe's
    // Fortran frontend computes every index into a scalar so).
    partitions::wrap_host_tasklets(sdfg, acc, &mut inner, false)?;
    let usage = locations::analyse(sdfg);
    if let Some(x) = usage.host_read.iter().next() {
        return Err(OffloadError::Unsupported {
            what: format!(
                "nested SDFG `{}`: its interstate code reads `{x}`",
                sdfg.name
            ),
            location: sdfg.name.clone(),
        });
    }
    if let Some(x) = usage.host_used.iter().next() {
        return Err(OffloadError::Unsupported {
            what: format!(
                "nested SDFG `{}`: host code inside it uses `{x}`",
                sdfg.name
            ),
            location: sdfg.name.clone(),
        });
    }
    let global = acc.global_storage();
    for x in usage.device_used() {
        let Some(d) = sdfg.containers.get_mut(&x) else {
            continue;
        };
        let (storage, reason) = if !d.transient {
            (
                global,
                "connector of a nested SDFG: bound to the caller's device data",
            )
        } else if usage.kernel_local.contains(&x) && !d.is_view() {
            (Storage::Register, "live only inside one kernel: a register")
        } else {
            (global, "transient used only by device code")
        };
        d.storage = storage;
        if d.transient {
            d.lifetime = if storage == Storage::Register {
                Lifetime::Scope
            } else {
                Lifetime::Sdfg
            };
        }
        inner.placements.push(Placement {
            container: x,
            twin: None,
            storage,
            reason: reason.to_owned(),
        });
    }
    let name = sdfg.name.clone();
    report
        .kernels
        .extend(inner.kernels.into_iter().map(|k| format!("{name}/{k}")));
    report.library_calls.extend(
        inner
            .library_calls
            .into_iter()
            .map(|k| format!("{name}/{k}")),
    );
    report
        .placements
        .extend(inner.placements.into_iter().map(|p| Placement {
            container: format!("{name}/{}", p.container),
            ..p
        }));
    Ok(())
}

/// Makes `sdfg`, nested inside a kernel, code of each thread.
pub(crate) fn offload_in_kernel(
    sdfg: &mut Sdfg,
    acc: &dyn Accelerator,
    report: &mut Report,
) -> Result<(), OffloadError> {
    offload_device_code(sdfg, acc, report, false)
}

/// Makes `sdfg`, the body of a persistent kernel, the code the kernel's
/// threads run together ([`sdfg_ir::Schedule::DevicePersistent`]): its
/// top-level maps become maps the threads share (the accelerator's kernel
/// schedule), and so do the reductions at its top (library lowering
/// expands them into such maps); maps inside them run sequentially per
/// thread, SDFGs nested in them are code of each thread; its connectors
/// are the kernel's device data, and its transients (views, and small
/// transients private to one map's points) each thread's own.
pub(crate) fn offload_in_persistent(
    sdfg: &mut Sdfg,
    acc: &dyn Accelerator,
    report: &mut Report,
) -> Result<(), OffloadError> {
    offload_device_code(sdfg, acc, report, true)
}

/// [`offload_in_kernel`], or with `shared` [`offload_in_persistent`].
fn offload_device_code(
    sdfg: &mut Sdfg,
    acc: &dyn Accelerator,
    report: &mut Report,
    shared: bool,
) -> Result<(), OffloadError> {
    let name = sdfg.name.clone();
    super::for_each_state_mut(&mut sdfg.body, &mut |label, state| {
        // Which nodes are at the top matters in a persistent body only.
        let tree = if shared {
            Some(
                state
                    .scope_tree()
                    .map_err(|e| OffloadError::Invalid(format!("{label}: {e}")))?,
            )
        } else {
            None
        };
        let ids: Vec<_> = state.nodes().map(|(id, _)| id).collect();
        for id in ids {
            let top = tree.as_ref().is_some_and(|t| t.parent(id).is_none());
            match state.graph.node_weight_mut(id) {
                Some(sdfg_ir::Node::MapEntry(e))
                    if e.map.schedule == sdfg_ir::Schedule::Default =>
                {
                    e.map.schedule = if top {
                        acc.kernel_schedule()
                    } else {
                        acc.inner_schedule()
                    };
                }
                Some(sdfg_ir::Node::Library(l)) if top => {
                    l.schedule = acc.kernel_schedule();
                    report.library_calls.push(format!(
                        "{} `{}` -> shared by a persistent kernel's threads (in `{name}`)",
                        l.op.name(),
                        l.label
                    ));
                }
                Some(sdfg_ir::Node::NestedSdfg(n)) => {
                    let mut sub = Report::default();
                    offload_in_kernel(&mut n.sdfg, acc, &mut sub)?;
                    report
                        .placements
                        .extend(sub.placements.into_iter().map(|p| Placement {
                            container: format!("{name}/{}", p.container),
                            ..p
                        }));
                }
                _ => {}
            }
        }
        Ok(())
    })?;
    let global = acc.global_storage();
    for (x, d) in &mut sdfg.containers {
        let (storage, reason) = match (d.transient, shared) {
            (false, false) => (
                global,
                "connector of a nested SDFG inside a kernel: the kernel's device data",
            ),
            (false, true) => (
                global,
                "connector of a persistent kernel's body: device data its threads share",
            ),
            (true, false) => (
                Storage::Register,
                "transient of a nested SDFG inside a kernel: each thread's own",
            ),
            (true, true) => (
                Storage::Register,
                "view or map-private transient in a persistent kernel's body: each thread's own",
            ),
        };
        d.storage = storage;
        if d.transient {
            d.lifetime = Lifetime::Scope;
        }
        report.placements.push(Placement {
            container: format!("{name}/{x}"),
            twin: None,
            storage,
            reason: reason.to_owned(),
        });
    }
    Ok(())
}
