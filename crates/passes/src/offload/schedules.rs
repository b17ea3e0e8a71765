//! Phase 1: where every map and library node runs.
//!
//! One walk over every state: a map at host level becomes a kernel (the
//! accelerator's kernel schedule) unless a host callback is inside it (a
//! kernel cannot issue one, so the map stays on the host whatever is said);
//! maps inside a kernel run sequentially per thread; library nodes at host
//! level become device-wide calls.
//!
//! Host maps (`--host-maps auto` or by label) stay on the host and launch
//! the maps directly inside them as kernels, once per iteration. `auto`
//! picks the maps that only launch work: their scope holds inner maps and
//! nothing else. A named map that does work of its own, or whose inner map's
//! range depends on its parameter (the inner kernel's launch geometry would
//! change per iteration), is refused with an error naming both.

use super::{HostMaps, OffloadError, Report, for_each_state_mut};
use crate::accelerator::Accelerator;
use sdfg_ir::{Node, NodeId, Schedule, ScopeTree, Sdfg, State};
use std::collections::BTreeSet;

/// The host maps of a state chosen by `option`, checked.
fn host_maps(
    state: &State,
    tree: &ScopeTree,
    option: &HostMaps,
    label: &str,
    matched: &mut BTreeSet<String>,
) -> Result<Vec<NodeId>, OffloadError> {
    let mut out = Vec::new();
    for (id, node) in state.nodes() {
        let Node::MapEntry(h) = node else { continue };
        if tree.parent(id).is_some() || h.map.schedule != Schedule::Default {
            continue;
        }
        let children: Vec<NodeId> = tree
            .children(Some(id))
            .into_iter()
            .filter(|c| !matches!(state.node(*c), Some(Node::MapExit(x)) if x.entry == id))
            .collect();
        let inner_maps: Vec<NodeId> = children
            .iter()
            .copied()
            .filter(|c| matches!(state.node(*c), Some(Node::MapEntry(_))))
            .collect();
        let only_launches = !inner_maps.is_empty() && children.iter().all(|c| {
            matches!(state.node(*c), Some(Node::MapEntry(_)))
                || matches!(state.node(*c), Some(Node::MapExit(x)) if inner_maps.contains(&x.entry))
        });
        let chosen = match option {
            HostMaps::None => false,
            HostMaps::Auto => only_launches,
            HostMaps::Named(names) => names.contains(&h.map.label),
        };
        if !chosen {
            continue;
        }
        matched.insert(h.map.label.clone());
        if !only_launches {
            return Err(OffloadError::Unsupported {
                what: format!(
                    "host map `{}`: it does work of its own (a host map may only hold maps that become kernels)",
                    h.map.label
                ),
                location: label.to_owned(),
            });
        }
        for c in &inner_maps {
            if let Some(Node::MapEntry(inner)) = state.node(*c) {
                let used: BTreeSet<String> = inner
                    .map
                    .ranges
                    .iter()
                    .flat_map(|r| r.free_symbols())
                    .collect();
                if let Some(p) = h.map.params.iter().find(|p| used.contains(*p)) {
                    return Err(OffloadError::Unsupported {
                        what: format!(
                            "host map `{}`: the range of inner map `{}` depends on its parameter `{p}`",
                            h.map.label, inner.map.label
                        ),
                        location: label.to_owned(),
                    });
                }
            }
        }
        out.push(id);
    }
    Ok(out)
}

pub(crate) fn assign(
    sdfg: &mut Sdfg,
    acc: &dyn Accelerator,
    option: &HostMaps,
    report: &mut Report,
) -> Result<(), OffloadError> {
    let mut matched = BTreeSet::new();
    for_each_state_mut(&mut sdfg.body, &mut |label, state| {
        let tree = state
            .scope_tree()
            .map_err(|e| OffloadError::Invalid(e.to_string()))?;
        let launchers = host_maps(state, &tree, option, label, &mut matched)?;
        for h in &launchers {
            if let Some(Node::MapEntry(e)) = state.node(*h) {
                report
                    .host_maps
                    .push(format!("{} (state `{label}`)", e.map.label));
            }
        }
        let ids: Vec<_> = state.nodes().map(|(id, _)| id).collect();
        // Persistent kernels (phase 0b) are already scheduled: their
        // bodies are the threads' shared code.
        let persistent: Vec<NodeId> = ids
            .iter()
            .copied()
            .filter(|&n| {
                matches!(state.node(n), Some(Node::MapEntry(e))
                    if e.map.schedule == Schedule::DevicePersistent)
            })
            .collect();
        for &p in &persistent {
            if let Some(Node::MapEntry(e)) = state.node(p) {
                report.kernels.push(format!(
                    "{} (persistent: the whole loop, state `{label}`)",
                    e.map.label
                ));
            }
        }
        // Maps whose scope holds something a kernel cannot issue stay on the host.
        let host_bound: Vec<_> = ids
            .iter()
            .filter(|&&n| state.node(n).is_some_and(|node| !issuable(acc, node)))
            .flat_map(|&n| tree.ancestors(n))
            .collect();
        for id in ids {
            let parent = tree.parent(id);
            match state.graph.node_weight_mut(id) {
                Some(Node::NestedSdfg(n)) if parent.is_none() => {
                    // A nested SDFG at host level is a host level of its own:
                    // its maps become kernels on the data the caller passes,
                    // which the caller keeps on the device.
                    super::nested::offload_inner(&mut n.sdfg, acc, report).map_err(
                        |e| match e {
                            OffloadError::Unsupported { what, location } => {
                                OffloadError::Unsupported {
                                    what,
                                    location: format!("{label}/{location}"),
                                }
                            }
                            other => other,
                        },
                    )?;
                }
                Some(Node::NestedSdfg(n)) if parent.is_some_and(|p| persistent.contains(&p)) => {
                    super::nested::offload_in_persistent(&mut n.sdfg, acc, report)?;
                }
                Some(Node::NestedSdfg(n)) => {
                    // Inside a map that stays on the host it would be a host
                    // level of its own once per iteration: not offloaded yet.
                    if tree
                        .ancestors(id)
                        .iter()
                        .any(|a| host_bound.contains(a) || launchers.contains(a))
                    {
                        return Err(OffloadError::Unsupported {
                            what: format!(
                                "the nested SDFG `{}` inside a map that stays on the host",
                                n.label
                            ),
                            location: label.to_owned(),
                        });
                    }
                    super::nested::offload_in_kernel(&mut n.sdfg, acc, report)?;
                }
                Some(Node::MapEntry(e)) if e.map.schedule == Schedule::Default => {
                    e.map.schedule = match parent {
                        None if host_bound.contains(&id) || launchers.contains(&id) => {
                            Schedule::Sequential
                        }
                        Some(p) if launchers.contains(&p) => {
                            report.kernels.push(format!(
                                "{} (launched by a host map, state `{label}`)",
                                e.map.label
                            ));
                            acc.kernel_schedule()
                        }
                        None => {
                            report
                                .kernels
                                .push(format!("{} (state `{label}`)", e.map.label));
                            acc.kernel_schedule()
                        }
                        // Inside a map kept on the host, inner maps stay on the host too.
                        Some(_) if tree.ancestors(id).iter().any(|a| host_bound.contains(a)) => {
                            Schedule::Sequential
                        }
                        Some(_) => acc.inner_schedule(),
                    };
                }
                Some(Node::Library(l)) if parent.is_none() => {
                    l.schedule = acc.kernel_schedule();
                    let vendor = acc
                        .vendor_library(&l.op)
                        .map_or("pure expansion".to_owned(), |v| {
                            format!("{} {}", v.library, v.function)
                        });
                    report.library_calls.push(format!(
                        "{} `{}` -> {vendor} (state `{label}`)",
                        l.op.name(),
                        l.label
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    })?;
    if let HostMaps::Named(names) = option
        && let Some(missing) = names.iter().find(|n| !matched.contains(*n))
    {
        return Err(OffloadError::Unsupported {
            what: format!("host map `{missing}`: no map at host level has this label"),
            location: sdfg.name.clone(),
        });
    }
    Ok(())
}

/// Whether a kernel may contain `node`: what the accelerator says, and for a
/// nested SDFG, of everything inside it.
pub(super) fn issuable(acc: &dyn Accelerator, node: &Node) -> bool {
    if !acc.kernel_can_issue(node) {
        return false;
    }
    let Node::NestedSdfg(n) = node else {
        return true;
    };
    let mut ok = true;
    n.sdfg.walk_blocks(&mut |_, _, b| {
        if let sdfg_ir::BlockKind::State(s) = &b.kind {
            ok &= s.nodes().all(|(_, inner)| issuable(acc, inner));
        }
    });
    ok
}
