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
//! A symbol the loop assigns and the rest of the SDFG uses (mandelbrot's
//! compaction counter `count`, read after the loop as the next length)
//! travels with it: the kernel takes its value on entry (unless it is the
//! loop's variable, which the loop sets first), and after the loop writes
//! the last value into a device scalar `{symbol}_last`, from which the host
//! assigns the symbol once the kernel is done. One scalar crosses once per
//! run of the loop, where a host loop copied a condition back per
//! iteration.

use super::partitions::HostStates;
use super::placement::{fresh_name, map_params};
use crate::dependence::RegionUse;
use crate::nest::{Nesting, mapped_symbols, nest_in_map, privatizable, rewrite_loops};
use sdfg_ir::code::{Expr, Stmt};
use sdfg_ir::{
    Assignment, BlockKind, Connector, ControlBlock, DType, DataDesc, Memlet, Node, Range, Region,
    Schedule, Sdfg, State, Subset, SymExpr, Tasklet,
};
use std::collections::BTreeSet;

/// Wraps every maximal qualifying loop of `sdfg`; returns their labels.
pub(crate) fn wrap_sequential_loops(sdfg: &mut Sdfg, param: &str, by_value: bool) -> Vec<String> {
    if !sdfg.body.has_loops() {
        return Vec::new();
    }
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
        let Some((nesting, live)) = self.qualifies(block) else {
            return false;
        };
        replace_loop(
            self.sdfg,
            block,
            &format!("{}_single", block.label),
            nesting,
            &live,
            Schedule::Default,
        );
        self.wrapped.push(block.label.clone());
        true
    }
}

/// Replaces the loop `block` by the state running `nesting` (the loop, in a
/// map over one point labelled `label` with `schedule`), handing the
/// symbols `live` back to the code after it ([`hand_back`]): the block's
/// transition first assigns them from their scalars.
pub(super) fn replace_loop(
    sdfg: &mut Sdfg,
    block: &mut ControlBlock,
    label: &str,
    mut nesting: Nesting,
    live: &[String],
    schedule: Schedule,
) {
    let handed_back = hand_back(sdfg, &mut nesting, &block.label, live);
    let mut state = nest_in_map(sdfg, label, nesting);
    for n in state.graph.node_weights_mut() {
        if let Node::MapEntry(e) = n {
            e.map.schedule = schedule;
        }
    }
    block.kind = BlockKind::State(state);
    let reads = handed_back.into_iter().map(|(symbol, scalar)| Assignment {
        symbol,
        value: SymExpr::read(scalar, vec![SymExpr::int(0)]),
    });
    let later = std::mem::take(&mut block.transition.assignments);
    block.transition.assignments = reads.chain(later).collect();
}

/// Makes the nested loop hand the symbols `live` back: a state after the
/// loop writes each into a new scalar (an output of the kernel); each
/// symbol but the loop's variable is also mapped in, for its value on
/// entry. Returns (symbol, scalar) pairs for the host's assignments.
fn hand_back(
    sdfg: &mut Sdfg,
    nesting: &mut Nesting,
    label: &str,
    live: &[String],
) -> Vec<(String, String)> {
    if live.is_empty() {
        return Vec::new();
    }
    let variable = match &nesting.body.blocks[0].kind {
        BlockKind::Loop(l) => l.variable.clone(),
        _ => None,
    };
    let params = map_params(sdfg);
    let mut state = State::new();
    let mut pairs = Vec::new();
    for s in live {
        let dtype = sdfg.symbols.get(s).copied().unwrap_or(DType::Int64);
        let scalar = fresh_name(sdfg, &params, &format!("{s}_last"));
        sdfg.containers
            .insert(scalar.clone(), DataDesc::scalar(dtype).into_transient());
        let t = state.add_node(Node::Tasklet(Tasklet {
            label: format!("{s}_last"),
            inputs: vec![],
            outputs: vec![Connector::scalar("value", dtype)],
            // Code reads symbols as int64 whatever their declared type
            // (DaCe's Fortran frontend declares loop variables int32).
            body: vec![Stmt::assign(
                "value",
                if dtype == DType::Int64 {
                    Expr::var(s.as_str())
                } else {
                    Expr::cast(dtype, Expr::var(s.as_str()))
                },
            )],
        }));
        let a = state.add_access(scalar.clone());
        state.add_edge(
            t,
            Some("value"),
            a,
            None,
            Memlet::new(scalar.clone(), Subset::at(vec![SymExpr::int(0)])),
        );
        nesting.outputs.insert(scalar.clone());
        if variable.as_deref() != Some(s.as_str()) {
            nesting.mapped.insert(s.clone());
        }
        pairs.push((s.clone(), scalar));
    }
    nesting.body.blocks.push(ControlBlock {
        label: format!("{label}_hand_back"),
        kind: BlockKind::State(state),
        transition: Default::default(),
    });
    pairs
}

impl Cx<'_> {
    /// The nesting of loop `block` into a single-thread kernel, if it
    /// qualifies (see the [module docs](self)).
    /// Also returns the symbols it assigns that the rest of the SDFG uses.
    fn qualifies(&self, block: &ControlBlock) -> Option<(Nesting, Vec<String>)> {
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
            // A state without code (a loop's empty body state, whose
            // work is its transition's assignments) does nothing anywhere.
            let code = state.nodes().any(|(_, n)| matches!(n, Node::Tasklet(_)));
            device |= code && !self.host.stays(label);
        });
        if !plain || !device || states == 0 {
            return None;
        }
        let inside = RegionUse::of_loop(l, &block.label, self.symbols);
        if !inside.jumps.iter().all(|j| *j != "return") {
            return None;
        }
        let live: Vec<String> = inside
            .assigned
            .iter()
            .filter(|s| self.whole.symbol_outside(&inside, s))
            .cloned()
            .collect();
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
        let nesting = Nesting {
            named_outside,
            params: vec![self.param.to_owned()],
            ranges: vec![Range::index(SymExpr::int(0))],
            body: one,
            private,
            inputs,
            outputs,
            mapped,
            assigned: inside.assigned.clone(),
        };
        Some((nesting, live))
    }
}

/// Calls `f` on every state of `region` with its label.
pub(super) fn walk_states(region: &Region, f: &mut dyn FnMut(&str, &sdfg_ir::State)) {
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
