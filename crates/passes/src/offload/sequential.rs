//! Phase 0: a sequential loop of single-thread device code becomes one
//! single-thread kernel holding the loop.
//!
//! A loop whose body is only tasklets and access nodes (no maps, library
//! calls, nested SDFGs or callbacks, at any depth) would otherwise give
//! every state of every iteration a single-thread kernel of its own (see
//! [`super::partitions`]), and every condition on data a copy back to the
//! host. When at least one of its states would be such device code (not
//! all of them stay on the host as sequential scalar code), the whole loop
//! moves into one single-thread kernel: a map over one point whose scope
//! is a nested SDFG running the loop (the same nesting as loop-to-map's,
//! [`crate::nest`]). Its interstate code then runs on the device too, where
//! the data is. Transients only the loop uses move inside where they are
//! small ([`crate::nest::privatizable`]); larger ones stay device arrays
//! outside.
//!
//! The loop is kept as it is when a symbol it assigns (its variable
//! included) is used after it: the host would need the last value.

use super::partitions::HostStates;
use crate::dependence::RegionUse;
use crate::nest::{Nesting, mapped_symbols, nest_in_map, privatizable, rewrite_loops};
use sdfg_ir::{BlockKind, ControlBlock, Node, Range, Region, Sdfg, SymExpr};
use std::collections::BTreeSet;

/// Wraps every maximal qualifying loop of `sdfg`; returns their labels.
pub(crate) fn wrap_sequential_loops(sdfg: &mut Sdfg, param: &str, by_value: bool) -> Vec<String> {
    let host = HostStates::of(sdfg, by_value);
    let symbols: BTreeSet<String> = sdfg.symbols.keys().cloned().collect();
    let whole = RegionUse::of(&sdfg.body, &symbols);
    let mut body = std::mem::take(&mut sdfg.body);
    let mut wrapped = Vec::new();
    let mut cx = Cx {
        sdfg,
        host: &host,
        whole: &whole,
        symbols: &symbols,
        param,
        wrapped: &mut wrapped,
    };
    rewrite_loops(&mut body, &mut |block| cx.wrap(block));
    sdfg.body = body;
    wrapped
}

struct Cx<'a> {
    sdfg: &'a mut Sdfg,
    host: &'a HostStates,
    whole: &'a RegionUse,
    symbols: &'a BTreeSet<String>,
    param: &'a str,
    wrapped: &'a mut Vec<String>,
}

impl Cx<'_> {
    /// Wraps `block` (a loop) if it qualifies; returns whether it did.
    fn wrap(&mut self, block: &mut ControlBlock) -> bool {
        let Some(nesting) = self.qualifies(block) else {
            return false;
        };
        let state = nest_in_map(self.sdfg, &format!("{}_single", block.label), nesting);
        self.wrapped.push(block.label.clone());
        block.kind = BlockKind::State(state);
        true
    }

    /// The nesting of loop `block` into a single-thread kernel, if it
    /// qualifies (see the [module docs](self)).
    fn qualifies(&self, block: &ControlBlock) -> Option<Nesting> {
        let BlockKind::Loop(l) = &block.kind else {
            return None;
        };
        let mut plain = true;
        let mut device = false;
        let mut states = 0usize;
        walk_states(&l.body, &mut |label, state| {
            states += 1;
            plain &= state
                .nodes()
                .all(|(_, n)| matches!(n, Node::Tasklet(_) | Node::Access(_)));
            device |= !self.host.stays(label);
        });
        if !plain || !device || states == 0 {
            return None;
        }
        let inside = RegionUse::of_loop(l, &block.label, self.symbols);
        if !inside.jumps.iter().all(|j| *j != "return") {
            return None;
        }
        if inside
            .assigned
            .iter()
            .any(|s| self.whole.symbol_outside(&inside, s))
        {
            return None;
        }
        let mut private = BTreeSet::new();
        let (mut inputs, mut outputs) = (BTreeSet::new(), BTreeSet::new());
        for a in &inside.accesses {
            let x = &a.data;
            let desc = self.sdfg.containers.get(x)?;
            let local = desc.transient && !self.whole.container_outside(&inside, x);
            if local && privatizable(desc) {
                private.insert(x.clone());
                continue;
            }
            inputs.insert(x.clone());
            if a.write {
                outputs.insert(x.clone());
            }
        }
        let mapped = mapped_symbols(self.sdfg, &inside, inputs.iter().chain(&private));
        let one = Region::new(vec![ControlBlock {
            label: block.label.clone(),
            kind: BlockKind::Loop(l.clone()),
            transition: Default::default(),
        }]);
        let named_outside = inside
            .assigned
            .iter()
            .filter(|s| self.whole.named_outside(&inside, s))
            .cloned()
            .collect();
        Some(Nesting {
            named_outside,
            params: vec![self.param.to_owned()],
            ranges: vec![Range::index(SymExpr::int(0))],
            body: one,
            private,
            inputs,
            outputs,
            mapped,
            assigned: inside.assigned.clone(),
        })
    }
}

/// Calls `f` on every state of `region` with its label.
fn walk_states(region: &Region, f: &mut dyn FnMut(&str, &sdfg_ir::State)) {
    for block in &region.blocks {
        match &block.kind {
            BlockKind::State(s) => f(&block.label, s),
            BlockKind::Loop(l) => walk_states(&l.body, f),
            BlockKind::Conditional(c) => {
                for (_, r) in &c.branches {
                    walk_states(r, f);
                }
                if let Some(r) = &c.otherwise {
                    walk_states(r, f);
                }
            }
            BlockKind::Break | BlockKind::Continue | BlockKind::Return => {}
        }
    }
}
