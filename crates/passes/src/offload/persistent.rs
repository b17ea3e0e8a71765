//! Phase 0b: a loop whose tests read what device code inside it writes
//! becomes one persistent kernel.
//!
//! mandelbrot2's `while length > 0 and k < maxiter` loop computes the next
//! `length` on the device (the compaction counter); channel_flow's `while`
//! tests a norm the device computes. At host level such a loop copies a
//! value back and waits for it on every iteration, and launches a kernel
//! per parallel state per iteration. Where the accelerator has a grid-wide
//! barrier ([`Accelerator::grid_barrier`]), the whole loop runs inside one
//! persistent kernel instead ([`Schedule::DevicePersistent`], DaCe's
//! `GPU_Persistent`): a map over one point whose scope is a nested SDFG
//! running the loop, with the same nesting the single-thread loops of
//! [`super::sequential`] use. Inside it the loop's top-level maps become
//! maps the kernel's threads share ([`Schedule::DeviceKernel`] in a
//! persistent kernel's body), its other code runs on one thread, its
//! tests and interstate assignments run on the device where the data is,
//! and the threads meet at a grid-wide barrier between states.
//!
//! A loop qualifies when
//!
//! - its tests or interstate assignments (at any depth) read a container
//!   that device code inside the loop writes: the host would wait for the
//!   device on every iteration;
//! - it holds parallel work (a top-level map in one of its states; a loop
//!   of single-thread code is [`super::sequential`]'s);
//! - everything in it can run inside a kernel: no library call but
//!   reductions without a vendor call at the top of its states (the
//!   threads share them: a thread per output, or partial results combined
//!   once per thread for a full reduction; other calls are issued by the
//!   host), no host callback, no nested SDFG outside a map, no `return`;
//! - the data it shares has a size fixed before it runs (a temporary
//!   sized by a symbol the loop assigns would need allocating inside).
//!
//! Containers the loop uses stay outside the kernel as device data shared
//! by its threads (only views, re-bound by each thread, and small
//! transients private to the points of one map move inside);
//! symbols it assigns that later code reads are handed back once, after
//! the loop, as the single-thread loops hand theirs back.

use super::partitions::HostStates;
use super::sequential::{replace_loop, walk_states};
use crate::accelerator::Accelerator;
use crate::dependence::RegionUse;
use crate::nest::{Nesting, mapped_symbols, privatizable, rewrite_loops};
use sdfg_ir::{BlockKind, ControlBlock, Node, NodeId, Range, Region, Schedule, Sdfg, SymExpr};
use std::collections::{BTreeMap, BTreeSet};

/// Wraps every maximal qualifying loop of `sdfg` in a persistent kernel
/// (nothing where `acc` has no grid-wide barrier); returns their labels.
pub(crate) fn wrap_persistent_loops(
    sdfg: &mut Sdfg,
    acc: &dyn Accelerator,
    param: &str,
) -> Vec<String> {
    if !acc.grid_barrier() || !sdfg.body.has_loops() {
        return Vec::new();
    }
    let host = HostStates::of(sdfg, acc.scalars_by_value());
    let symbols: BTreeSet<String> = sdfg.symbols.keys().cloned().collect();
    let whole = RegionUse::of(&sdfg.body, &symbols);
    let mut body = std::mem::take(&mut sdfg.body);
    let mut wrapped = Vec::new();
    rewrite_loops(&mut body, &mut |block| {
        let Some((nesting, live)) = qualifies(sdfg, acc, &host, &whole, &symbols, param, block)
        else {
            return false;
        };
        let label = format!("{}_persistent", block.label);
        replace_loop(
            sdfg,
            block,
            &label,
            nesting,
            &live,
            Schedule::DevicePersistent,
        );
        wrapped.push(block.label.clone());
        true
    });
    sdfg.body = body;
    wrapped
}

/// The nesting of loop `block` into a persistent kernel, if it qualifies
/// (see the [module docs](self)), and the symbols it assigns that the rest
/// of the SDFG uses.
fn qualifies(
    sdfg: &Sdfg,
    acc: &dyn Accelerator,
    host: &HostStates,
    whole: &RegionUse,
    symbols: &BTreeSet<String>,
    param: &str,
    block: &ControlBlock,
) -> Option<(Nesting, Vec<String>)> {
    let BlockKind::Loop(l) = &block.kind else {
        return None;
    };
    let mut fits = true;
    let mut parallel = false;
    let mut device_written = BTreeSet::new();
    // Per container: the top-level maps (state, entry) its access nodes
    // are inside; `None` for one outside every map.
    let mut homes: BTreeMap<String, BTreeSet<Option<(String, NodeId)>>> = BTreeMap::new();
    walk_states(&l.body, &mut |label, state| {
        let Ok(tree) = state.scope_tree() else {
            fits = false;
            return;
        };
        for (id, node) in state.nodes() {
            if let Node::Access(a) = node {
                let map = tree
                    .ancestors(id)
                    .last()
                    .map(|&top| (label.to_owned(), top));
                homes.entry(a.data.clone()).or_default().insert(map);
            }
        }
        for (id, node) in state.nodes() {
            let top = tree.parent(id).is_none();
            match node {
                // A reduction the threads share (library lowering expands
                // it into their maps); any other library call is the
                // host's to issue.
                Node::Library(l) if top && shared_by_the_grid(acc, &l.op) => parallel = true,
                Node::Library(_) | Node::Callback(_) => fits = false,
                Node::NestedSdfg(_) if top => fits = false,
                Node::NestedSdfg(_) => fits &= super::schedules::issuable(acc, node),
                Node::MapEntry(_) if top => parallel = true,
                _ => {}
            }
        }
        if !host.stays(label) {
            for (id, node) in state.nodes() {
                if let Node::Access(a) = node
                    && state.in_edges(id).next().is_some()
                {
                    device_written.insert(a.data.clone());
                }
            }
        }
    });
    if !fits || !parallel {
        return None;
    }
    let mut tested = super::locations::interstate_reads(block);
    walk_blocks(&l.body, &mut |b| {
        tested.extend(super::locations::interstate_reads(b));
    });
    if tested.is_disjoint(&device_written) {
        return None;
    }
    let inside = RegionUse::of_loop(l, &block.label, symbols);
    if inside.jumps.contains(&"return") {
        return None;
    }
    let live: Vec<String> = inside
        .assigned
        .iter()
        .filter(|s| whole.symbol_outside(&inside, s))
        .cloned()
        .collect();
    // Data the threads share stays outside as device memory. Views are
    // re-bound inside by each thread, and so is what is private to each
    // point of one map (a small transient only that map's scope uses).
    let mut private = BTreeSet::new();
    let (mut inputs, mut outputs) = (BTreeSet::new(), BTreeSet::new());
    for a in &inside.accesses {
        let x = &a.data;
        let desc = sdfg.containers.get(x)?;
        let one_map = homes
            .get(x)
            .is_some_and(|h| h.len() == 1 && h.iter().all(Option::is_some));
        if desc.transient
            && !whole.container_outside(&inside, x)
            && (desc.is_view() || (one_map && privatizable(desc)))
        {
            private.insert(x.clone());
            continue;
        }
        // Shared data is allocated before the kernel: its size cannot
        // change inside the loop.
        if desc
            .free_symbols()
            .iter()
            .any(|s| inside.assigned.contains(s))
        {
            return None;
        }
        inputs.insert(x.clone());
        if a.write {
            outputs.insert(x.clone());
        }
    }
    let mapped = mapped_symbols(sdfg, &inside, inputs.iter().chain(&private));
    let named_outside = inside
        .assigned
        .iter()
        .filter(|s| whole.named_outside(&inside, s))
        .cloned()
        .collect();
    let nesting = Nesting {
        named_outside,
        params: vec![param.to_owned()],
        ranges: vec![Range::index(SymExpr::int(0))],
        body: Region::new(vec![ControlBlock {
            label: block.label.clone(),
            kind: BlockKind::Loop(l.clone()),
            transition: Default::default(),
        }]),
        private,
        inputs,
        outputs,
        mapped,
        assigned: inside.assigned.clone(),
    };
    Some((nesting, live))
}

/// Whether the threads of a persistent kernel can share library operation
/// `op` at the top of its body: a reduction the accelerator keeps as a pure
/// expansion (no vendor call, which only the host issues).
pub(crate) fn shared_by_the_grid(acc: &dyn Accelerator, op: &sdfg_ir::LibraryOp) -> bool {
    matches!(op, sdfg_ir::LibraryOp::Reduce { .. }) && acc.vendor_library(op).is_none()
}

/// Calls `f` on every block of `region`, at any depth.
fn walk_blocks(region: &Region, f: &mut dyn FnMut(&ControlBlock)) {
    for b in &region.blocks {
        b.walk(f);
    }
}
