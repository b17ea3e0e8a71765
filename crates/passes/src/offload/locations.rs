//! Phase 3: which containers the device uses, and which the host reads.
//!
//! Device code is everything in a kernel scope (including the kernel's entry
//! and exit) and every device-wide library call. Copies between two access
//! nodes at host level of a state with device code are device copies.
//! Interstate code (transition assignments, loop and branch conditions) is
//! host code, and so are callbacks and maps that stay on the host.

use sdfg_ir::{BlockKind, Node, NodeId, Sdfg, State};
use std::collections::{BTreeMap, BTreeSet};

/// What the analysis found.
#[derive(Clone, Debug, Default)]
pub struct Usage {
    /// Containers device code reads.
    pub device_read: BTreeSet<String>,
    /// Containers device code writes.
    pub device_written: BTreeSet<String>,
    /// Containers host code in states (callbacks, host maps) touches.
    pub host_used: BTreeSet<String>,
    /// Containers interstate code reads.
    pub host_read: BTreeSet<String>,
    /// Per state label: the containers its device code touches.
    pub per_state: BTreeMap<String, BTreeSet<String>>,
    /// Per state label: the containers its device code writes.
    pub per_state_written: BTreeMap<String, BTreeSet<String>>,
    /// Containers whose every access node lies inside one and the same
    /// kernel (one state, one top-level device map): candidates for registers.
    pub kernel_local: BTreeSet<String>,
}

impl Usage {
    /// Containers device code touches anywhere.
    pub fn device_used(&self) -> BTreeSet<String> {
        self.device_read
            .union(&self.device_written)
            .cloned()
            .collect()
    }
}

fn is_device(state: &State, tree: &sdfg_ir::ScopeTree, n: NodeId) -> bool {
    // A nested SDFG at host level was offloaded as a host level of its own:
    // the data it is given is used by its kernels.
    matches!(state.node(n), Some(Node::NestedSdfg(_))) || tree.runs_on_device(state, n)
}

/// Analyses every state and every piece of interstate code.
pub fn analyse(sdfg: &Sdfg) -> Usage {
    let mut u = Usage::default();
    // Per container: the kernels (state, top-level device map) its access
    // nodes are in; `None` for an access node outside every kernel.
    let mut homes: BTreeMap<String, BTreeSet<Option<(String, NodeId)>>> = BTreeMap::new();
    sdfg.walk_blocks(&mut |_, _, block| {
        match &block.kind {
            BlockKind::State(state) => {
                let Ok(tree) = state.scope_tree() else { return };
                let mut here = BTreeSet::new();
                let mut written = BTreeSet::new();
                for (id, node) in state.nodes() {
                    let Some(data) = node.as_access() else { continue };
                    let kernel = tree.ancestors(id).last().copied().filter(|top| {
                        matches!(state.node(*top), Some(Node::MapEntry(m)) if m.map.schedule.is_device())
                    });
                    homes
                        .entry(data.to_owned())
                        .or_default()
                        .insert(kernel.map(|k| (block.label.clone(), k)));
                }
                for (_, src, dst, edge) in state.edges() {
                    let (Some(s), Some(d)) = (state.node(src), state.node(dst)) else {
                        continue;
                    };
                    match (s.as_access(), d.as_access()) {
                        (Some(a), Some(b)) => {
                            // A copy: device memory on both ends.
                            u.device_read.insert(a.to_owned());
                            u.device_written.insert(b.to_owned());
                            written.insert(b.to_owned());
                            here.insert(a.to_owned());
                            here.insert(b.to_owned());
                            if let Some(m) = &edge.memlet {
                                here.insert(m.data.clone());
                            }
                        }
                        (Some(a), None) => {
                            if is_device(state, &tree, dst) {
                                u.device_read.insert(a.to_owned());
                                here.insert(a.to_owned());
                            } else {
                                u.host_used.insert(a.to_owned());
                            }
                        }
                        (None, Some(b)) => {
                            if is_device(state, &tree, src) {
                                u.device_written.insert(b.to_owned());
                                written.insert(b.to_owned());
                                here.insert(b.to_owned());
                            } else {
                                u.host_used.insert(b.to_owned());
                            }
                        }
                        (None, None) => {
                            // Fix (tests/offload.rs): a memlet between two
                            // non-access nodes (tasklet to tasklet, or across
                            // the scopes of wrapped tasklets) names a container
                            // too, typically a transient scalar passed between
                            // tasklets of a kernel. It used to be ignored, so
                            // the container stayed in host memory and the
                            // kernel faulted on it. The code (or scope exit)
                            // it leaves writes it; the code (or scope entry)
                            // it enters reads it.
                            let Some(m) = &edge.memlet else { continue };
                            let x = &m.data;
                            if s.is_code() || matches!(s, Node::MapExit(_)) {
                                if is_device(state, &tree, src) {
                                    u.device_written.insert(x.clone());
                                    written.insert(x.clone());
                                    here.insert(x.clone());
                                } else {
                                    u.host_used.insert(x.clone());
                                }
                            }
                            if d.is_code() || matches!(d, Node::MapEntry(_)) {
                                if is_device(state, &tree, dst) {
                                    u.device_read.insert(x.clone());
                                    here.insert(x.clone());
                                } else {
                                    u.host_used.insert(x.clone());
                                }
                            }
                        }
                    }
                }
                u.per_state.insert(block.label.clone(), here);
                u.per_state_written.insert(block.label.clone(), written);
            }
            BlockKind::Loop(l) => {
                u.host_read.extend(l.condition.reads());
                for e in [&l.init, &l.update].into_iter().flatten() {
                    u.host_read.extend(e.reads());
                }
            }
            BlockKind::Conditional(c) => {
                for (cond, _) in &c.branches {
                    u.host_read.extend(cond.reads());
                }
            }
            BlockKind::Break | BlockKind::Continue | BlockKind::Return => {}
        }
        u.host_read.extend(block.transition.reads());
    });
    u.kernel_local = homes
        .into_iter()
        .filter(|(_, h)| h.len() == 1 && h.iter().all(Option::is_some))
        .map(|(c, _)| c)
        .collect();
    u
}
