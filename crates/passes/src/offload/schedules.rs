//! Phase 1: where every map and library node runs.
//!
//! One walk over every state: a map at host level becomes a kernel (the
//! accelerator's kernel schedule) unless a host callback is inside it (a
//! kernel cannot issue one, so the map stays on the host whatever is said);
//! maps inside a kernel run sequentially per thread; library nodes at host
//! level become device-wide calls.

use super::{OffloadError, Report, for_each_state_mut};
use crate::accelerator::Accelerator;
use sdfg_ir::{Node, Schedule, Sdfg};

pub(crate) fn assign(
    sdfg: &mut Sdfg,
    acc: &dyn Accelerator,
    report: &mut Report,
) -> Result<(), OffloadError> {
    for_each_state_mut(&mut sdfg.body, &mut |label, state| {
        let tree = state
            .scope_tree()
            .map_err(|e| OffloadError::Invalid(e.to_string()))?;
        let ids: Vec<_> = state.nodes().map(|(id, _)| id).collect();
        // Maps whose scope holds something a kernel cannot issue stay on the host.
        let host_bound: Vec<_> = ids
            .iter()
            .filter(|&&n| {
                state
                    .node(n)
                    .is_some_and(|node| !acc.kernel_can_issue(node))
            })
            .flat_map(|&n| tree.ancestors(n))
            .collect();
        for id in ids {
            let parent = tree.parent(id);
            match state.graph.node_weight_mut(id) {
                Some(Node::NestedSdfg(n)) => {
                    return Err(OffloadError::Unsupported {
                        what: format!(
                            "the nested SDFG `{}` (nested SDFGs are not offloaded yet)",
                            n.label
                        ),
                        location: label.to_owned(),
                    });
                }
                Some(Node::MapEntry(e)) if e.map.schedule == Schedule::Default => {
                    e.map.schedule = match parent {
                        None if host_bound.contains(&id) => Schedule::Sequential,
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
    })
}
