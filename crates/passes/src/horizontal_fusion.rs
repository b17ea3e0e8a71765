//! Horizontal fusion: two consecutive maps that share no data they write,
//! over ranges of different extents, become one map over their bounding
//! box whose points run each body where they lie in its own range.
//!
//! ```text
//! map (i, j) in [0:I+1, 0:J]: flx[i, j] = ...     map (i, j) in [0:I+1, 0:J+1]:
//! map (i, j) in [0:I, 0:J+1]: fly[i, j] = ...  =>     if j <= J - 1: flx[i, j] = ...
//!                                                     if i <= I - 1: fly[i, j] = ...
//! ```
//!
//! One launch does what took two (hdiff's two flux limiters); DaCe's
//! subgraph fusion does the same. Vertical fusion ([`crate::map_fusion`])
//! joins maps of one range where one feeds the other; this pass joins maps
//! that do not communicate at all, whatever their extents.
//!
//! Two states fuse when
//! - each holds exactly one map at its top level (with the access nodes it
//!   uses), of the default schedule, of the same rank, every dimension with
//!   step 1 and the same start in both;
//! - in every dimension one extent is at least the other (the symbolic
//!   comparison decides, `I + 1` against `I`), and they differ in some
//!   dimension (maps of one range are map fusion's);
//! - neither writes a container the other reads or writes, and no
//!   transition (symbol assignments) stands between them;
//! - the second map's parameters take the first's names position by
//!   position without clashing with the first's other parameters.
//!
//! The result is a map over the bounding box whose scope is a nested SDFG
//! holding both states with their maps stripped (the parameters symbols of
//! the nested SDFG bound to the new map's), each behind a condition on its
//! own range where that range is smaller. Small transients only these two
//! maps use move inside, one per point. Consecutive states fuse in turn,
//! so running the pass again changes nothing.

use crate::dependence::RegionUse;
use crate::nest::{
    Nesting, bind_renames, mapped_symbols, nest_in_map, privatizable, strip_maps, top_map,
};
use sdfg_ir::symbolic::{CmpOp, SymCond};
use sdfg_ir::{
    BlockKind, ConditionalBlock, ControlBlock, Node, Range, Region, Schedule, Sdfg, State, SymExpr,
};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

/// Fuses every pair of consecutive independent maps it can (see the
/// [module docs](self)); returns one line per fusion (`` `S2` with `S1` ``).
pub fn fuse_independent_maps(sdfg: &mut Sdfg) -> Vec<String> {
    let symbols: BTreeSet<String> = sdfg.symbols.keys().cloned().collect();
    // Accesses per container in the whole SDFG, kept current as states
    // fuse: a fused state is a nested SDFG, which accesses its containers
    // once more (outside and inside), and may fuse again with the next.
    let mut counts = RegionUse::of(&sdfg.body, &symbols).into_per_container();
    let mut body = std::mem::take(&mut sdfg.body);
    let mut fused = Vec::new();
    body.for_each_region_mut(&mut |region| {
        let mut k = 0;
        while k + 1 < region.blocks.len() {
            let Some(plan) = plan(
                sdfg,
                &region.blocks[k],
                &region.blocks[k + 1],
                &counts,
                &symbols,
            ) else {
                k += 1;
                continue;
            };
            let second = region.blocks.remove(k + 1);
            let first = &mut region.blocks[k];
            let state = bind_renames(nest_in_map(sdfg, &first.label, plan.nesting), &plan.renames);
            for (x, n) in &plan.replaced {
                if let Some(c) = counts.get_mut(x) {
                    *c = c.saturating_sub(*n);
                }
            }
            for (x, n) in RegionUse::of_state(&first.label, &state, &symbols).into_per_container() {
                *counts.entry(x).or_default() += n;
            }
            first.kind = BlockKind::State(state);
            first.transition = second.transition;
            fused.push(format!("`{}` with `{}`", second.label, first.label));
        }
    });
    sdfg.body = body;
    fused
}

/// What fusing two states takes.
struct Plan {
    nesting: Nesting,
    /// Every stripped map's parameters to the new map's.
    renames: BTreeMap<String, String>,
    /// The accesses per container of the two states the fused one replaces.
    replaced: BTreeMap<String, usize>,
}

/// The fusion of blocks `a` and `b` (consecutive), if they fuse.
fn plan(
    sdfg: &Sdfg,
    a: &ControlBlock,
    b: &ControlBlock,
    counts: &BTreeMap<String, usize>,
    symbols: &BTreeSet<String>,
) -> Option<Plan> {
    let (BlockKind::State(sa), BlockKind::State(sb)) = (&a.kind, &b.kind) else {
        return None;
    };
    if !a.transition.is_empty() {
        return None;
    }
    let (ea, pa, ra) = top_map(sa)?;
    let (eb, pb, rb) = top_map(sb)?;
    let default = |s: &State, e| matches!(s.node(e), Some(Node::MapEntry(m)) if m.map.schedule == Schedule::Default);
    if !default(sa, ea) || !default(sb, eb) || pa.len() != pb.len() {
        return None;
    }
    // The bounding box, and which dimensions of each map are smaller.
    let mut bounds = Vec::new();
    let (mut smaller_a, mut smaller_b) = (Vec::new(), Vec::new());
    for (d, (x, y)) in ra.iter().zip(&rb).enumerate() {
        if x.step.as_int() != Some(1) || y.step.as_int() != Some(1) || x.begin != y.begin {
            return None;
        }
        match x.end.try_compare(&y.end)? {
            Ordering::Less => {
                smaller_a.push(d);
                bounds.push(y.clone());
            }
            Ordering::Greater => {
                smaller_b.push(d);
                bounds.push(x.clone());
            }
            Ordering::Equal => bounds.push(x.clone()),
        }
    }
    if smaller_a.is_empty() && smaller_b.is_empty() {
        return None;
    }
    // The second map's parameters become the first's, position by position.
    let mut renames: BTreeMap<String, String> = pa.iter().map(|p| (p.clone(), p.clone())).collect();
    for (q, p) in pb.iter().zip(&pa) {
        if renames
            .insert(q.clone(), p.clone())
            .is_some_and(|old| old != *p)
        {
            return None;
        }
    }
    // Independent: neither writes what the other touches.
    let (ua, ub) = (
        RegionUse::of_state(&a.label, sa, symbols),
        RegionUse::of_state(&b.label, sb, symbols),
    );
    let touched =
        |u: &RegionUse| -> BTreeSet<String> { u.accesses.iter().map(|x| x.data.clone()).collect() };
    let (wa, wb) = (ua.written(), ub.written());
    let (ta, tb) = (touched(&ua), touched(&ub));
    if wa.iter().any(|x| tb.contains(*x)) || wb.iter().any(|x| ta.contains(*x)) {
        return None;
    }
    // Each state behind the condition of its own range where it is smaller.
    let guarded =
        |label: &str, state: &State, params: &[String], ranges: &[Range], dims: &[usize]| {
            let block = ControlBlock::new(label, BlockKind::State(state.clone()));
            if dims.is_empty() {
                return block;
            }
            let cond = SymCond::and_all(dims.iter().map(|&d| {
                SymCond::cmp(
                    SymExpr::symbol(params[d].clone()),
                    CmpOp::Le,
                    ranges[d].end.clone(),
                )
            }));
            ControlBlock::new(
                format!("{label}_in_range"),
                BlockKind::Conditional(ConditionalBlock {
                    branches: vec![(cond, Region::new(vec![block]))],
                    otherwise: None,
                }),
            )
        };
    let mut body = Region::new(vec![
        guarded(&a.label, sa, &pa, &ra, &smaller_a),
        guarded(&b.label, sb, &pb, &rb, &smaller_b),
    ]);
    let inside = RegionUse::of(&body, symbols);
    strip_maps(&mut body);
    // Transients only these two maps use, small enough for each point.
    let private: BTreeSet<String> = ta
        .union(&tb)
        .filter(|x| {
            sdfg.containers
                .get(*x)
                .is_some_and(|d| d.transient && !d.is_view() && privatizable(d))
                && counts.get(*x).copied().unwrap_or(0) <= inside.count(x)
        })
        .cloned()
        .collect();
    let outputs: BTreeSet<String> = wa
        .union(&wb)
        .map(|x| (*x).to_owned())
        .filter(|x| !private.contains(x))
        .collect();
    let inputs: BTreeSet<String> = ta
        .union(&tb)
        .filter(|x| !private.contains(*x))
        .cloned()
        .collect();
    let mut mapped = mapped_symbols(sdfg, &inside, inputs.iter().chain(&private));
    for r in ra.iter().chain(&rb) {
        mapped.extend(r.free_symbols());
    }
    mapped.retain(|s| !renames.contains_key(s));
    Some(Plan {
        nesting: Nesting {
            params: pa,
            ranges: bounds,
            body,
            private,
            inputs,
            outputs,
            mapped,
            assigned: BTreeSet::new(),
            named_outside: BTreeSet::new(),
        },
        renames,
        replaced: ua
            .into_per_container()
            .into_iter()
            .chain(ub.into_per_container())
            .fold(BTreeMap::new(), |mut m, (x, n)| {
                *m.entry(x).or_default() += n;
                m
            }),
    })
}
