//! Phase 3: which containers the device uses, and which the host reads.
//!
//! Device code is everything in a kernel scope (including the kernel's entry
//! and exit) and every device-wide library call. Copies between two access
//! nodes at host level of a state with device code are device copies.
//! Interstate code (transition assignments, loop and branch conditions) is
//! host code, and so are callbacks and maps that stay on the host.

use sdfg_ir::{BlockKind, Node, NodeId, Sdfg, Side, State};
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
    /// Scalars device code only reads, and only as kernels' inputs (an
    /// access node outside every kernel feeding a kernel's entry): where
    /// the accelerator passes scalars to kernels by value, they need no
    /// device twin and no copy.
    pub by_value: BTreeSet<String>,
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

/// One access of device or host code in a state to a container, as the
/// placement walk needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    /// The container.
    pub data: String,
    /// Where the code runs.
    pub side: Side,
    /// Whether it reads the container.
    pub read: bool,
    /// Whether it writes the container.
    pub write: bool,
    /// Whether the write replaces the whole container with plain values
    /// (no write-conflict resolution, not dynamic, the full subset): such a
    /// write needs no valid copy of the old contents on its side.
    pub full_write: bool,
}

/// Every access of a state, one entry per memlet end (a container may appear
/// several times). Copies between two access nodes are device code; a memlet
/// between two non-access nodes names a container too (a transient passed
/// from one tasklet or scope to the next): the node it leaves writes it, the
/// node it enters reads it.
pub fn state_accesses(
    containers: &BTreeMap<String, sdfg_ir::DataDesc>,
    state: &State,
) -> Vec<Access> {
    let Ok(tree) = state.scope_tree() else {
        return Vec::new();
    };
    let side = |n: NodeId| {
        if is_device(state, &tree, n) {
            Side::Device
        } else {
            Side::Host
        }
    };
    // Whether memlet `m` writes all of `x`; `from` is the source of a copy
    // into `x`, whose memlet names its source when both ends are one
    // container.
    let full = |x: &str, from: Option<&str>, m: Option<&sdfg_ir::Memlet>| {
        let (Some(m), Some(desc)) = (m, containers.get(x)) else {
            return false;
        };
        // The subset of `x` written: a copy into `x` named by its source
        // gives it as the (possibly implied) other subset.
        let subset = if m.data == x && from != Some(x) {
            m.subset.clone()
        } else {
            m.copy_subsets(&m.data, &desc.shape()).1
        };
        m.wcr.is_none() && !m.dynamic && subset == sdfg_ir::Subset::full(&desc.shape())
    };
    let read = |data: &str, side| Access {
        data: data.to_owned(),
        side,
        read: true,
        write: false,
        full_write: false,
    };
    let write = |data: &str, side, full_write| Access {
        data: data.to_owned(),
        side,
        read: false,
        write: true,
        full_write,
    };
    // What a map exit's outer edges write, as its inner memlets make it
    // (`propagate_state`: exact, or dynamic where it cannot be exact). The
    // outer memlet a file holds may claim more than the map writes: DaCe's
    // propagation over-approximates, and a changed range leaves it stale.
    // Taken for a write of the whole container, it skipped the copy-in of
    // the rest, and the copy back overwrote those elements with garbage.
    let writes_through_exits = state.edges().any(|(_, src, dst, _)| {
        matches!(state.node(src), Some(Node::MapExit(_)))
            && state.node(dst).and_then(Node::as_access).is_some()
    });
    let exact = writes_through_exits.then(|| {
        let mut exact = state.clone();
        sdfg_ir::propagate::propagate_state(&mut exact, containers);
        exact
    });
    let mut out = Vec::new();
    for (id, src, dst, edge) in state.edges() {
        let (Some(s), Some(d)) = (state.node(src), state.node(dst)) else {
            continue;
        };
        let m = edge.memlet.as_ref();
        match (s.as_access(), d.as_access()) {
            (Some(a), Some(b)) => {
                // The link between a view and its origin belongs to the
                // code using the view; any other such edge is a device copy.
                let view = if edge.dst_conn.as_deref() == Some(sdfg_ir::VIEW_CONNECTOR) {
                    Some(dst)
                } else if edge.src_conn.as_deref() == Some(sdfg_ir::VIEW_CONNECTOR) {
                    Some(src)
                } else {
                    None
                };
                let side = view.map_or(Side::Device, |v| view_side(state, &tree, v));
                // A transfer between memories the SDFG has decided touches
                // each end on its own side: an argument (host memory unless
                // its home is the device), a host twin, device data. A
                // transient in default storage goes wherever the copy runs.
                let decided = |x: &str| {
                    containers.get(x).and_then(|d| match d.storage {
                        sdfg_ir::Storage::Host | sdfg_ir::Storage::HostPinned => Some(Side::Host),
                        sdfg_ir::Storage::Default if !d.transient => Some(Side::Host),
                        sdfg_ir::Storage::DeviceGlobal => Some(Side::Device),
                        _ => None,
                    })
                };
                let (side_a, side_b) = match (view, decided(a), decided(b)) {
                    (None, Some(x), Some(y)) if x != y => (x, y),
                    _ => (side, side),
                };
                out.push(read(a, side_a));
                out.push(write(b, side_b, full(b, Some(a), m)));
                // A memlet naming a third container (a view's origin, say).
                if let Some(m) = m.filter(|m| m.data != a && m.data != b) {
                    out.push(read(&m.data, side));
                }
            }
            (Some(a), None) => out.push(read(a, side(dst))),
            (None, Some(b)) => {
                // Whole only where both the edge and its inner memlets say so.
                let exact = match (s, &exact) {
                    (Node::MapExit(_), Some(exact)) => {
                        let m = exact.graph.edge_weight(id).and_then(|e| e.memlet.as_ref());
                        full(b, None, m)
                    }
                    _ => true,
                };
                out.push(write(b, side(src), exact && full(b, None, m)));
            }
            (None, None) => {
                let Some(m) = m else { continue };
                // What reaches an access node is judged there (a partial
                // write through a scope exit shows on the exit's outer
                // edge); a memlet from code to code defines what it passes.
                if s.is_code() || matches!(s, Node::MapExit(_)) {
                    out.push(write(&m.data, side(src), true));
                }
                if d.is_code() || matches!(d, Node::MapEntry(_)) {
                    out.push(read(&m.data, side(dst)));
                }
            }
        }
    }
    out
}

/// The side of the code using view node `v`: the host if any code node
/// next to it (other than through access nodes) runs on the host.
fn view_side(state: &State, tree: &sdfg_ir::ScopeTree, v: NodeId) -> Side {
    let host = state
        .in_edges(v)
        .map(|(_, n, _)| n)
        .chain(state.out_edges(v).map(|(_, n, _)| n))
        .any(|n| state.node(n).and_then(Node::as_access).is_none() && !is_device(state, tree, n));
    if host { Side::Host } else { Side::Device }
}

/// Analyses every state and every piece of interstate code.
pub fn analyse(sdfg: &Sdfg) -> Usage {
    let mut u = Usage::default();
    // Per container: the kernels (state, top-level device map) its access
    // nodes are in; `None` for an access node outside every kernel.
    let mut homes: BTreeMap<String, BTreeSet<Option<(String, NodeId)>>> = BTreeMap::new();
    let (mut kernel_inputs, mut other_device_reads) = (BTreeSet::new(), BTreeSet::new());
    sdfg.walk_blocks(&mut |_, _, block| {
        match &block.kind {
            BlockKind::State(state) => {
                let Ok(tree) = state.scope_tree() else { return };
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
                // Scalars read by device code other than as a kernel's
                // input: a device library call, a device copy.
                for (_, src, dst, _) in state.edges() {
                    let (Some(x), Some(d)) = (
                        state.node(src).and_then(Node::as_access),
                        state.node(dst),
                    ) else {
                        continue;
                    };
                    let kernel_input = tree.parent(dst).is_none()
                        && matches!(d, Node::MapEntry(m) if m.map.schedule.is_device());
                    if kernel_input {
                        kernel_inputs.insert(x.to_owned());
                    } else if is_device(state, &tree, dst) || d.as_access().is_some() {
                        other_device_reads.insert(x.to_owned());
                    }
                }
                let mut here = BTreeSet::new();
                let mut written = BTreeSet::new();
                for a in state_accesses(&sdfg.containers, state) {
                    match a.side {
                        Side::Host => {
                            u.host_used.insert(a.data.clone());
                        }
                        Side::Device => {
                            if a.read {
                                u.device_read.insert(a.data.clone());
                            }
                            if a.write {
                                u.device_written.insert(a.data.clone());
                                written.insert(a.data.clone());
                            }
                            here.insert(a.data);
                        }
                    }
                }
                u.per_state.insert(block.label.clone(), here);
                u.per_state_written.insert(block.label.clone(), written);
            }
            BlockKind::Loop(_) | BlockKind::Conditional(_) => {}
            BlockKind::Break | BlockKind::Continue | BlockKind::Return => {}
        }
        u.host_read.extend(interstate_reads(block));
    });
    u.by_value = kernel_inputs
        .into_iter()
        .filter(|x: &String| {
            sdfg.containers.get(x).is_some_and(|d| {
                d.is_scalar() && !d.is_view() && d.storage.side() != Some(Side::Device)
            }) && !other_device_reads.contains(x)
                && !u.device_written.contains(x)
                && homes.get(x).is_some_and(|h| h.iter().all(Option::is_none))
        })
        .collect();
    u.kernel_local = homes
        .into_iter()
        .filter(|(_, h)| h.len() == 1 && h.iter().all(Option::is_some))
        .map(|(c, _)| c)
        .collect();
    u
}

/// The containers the interstate code of a block reads: a loop's init,
/// condition and update, a conditional's branch conditions, and the
/// assignments of the transition leaving the block.
pub fn interstate_reads(block: &sdfg_ir::ControlBlock) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    match &block.kind {
        BlockKind::Loop(l) => {
            out.extend(l.condition.reads());
            for e in [&l.init, &l.update].into_iter().flatten() {
                out.extend(e.reads());
            }
        }
        BlockKind::Conditional(c) => {
            for (cond, _) in &c.branches {
                out.extend(cond.reads());
            }
        }
        _ => {}
    }
    out.extend(block.transition.reads());
    out
}
