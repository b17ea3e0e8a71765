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
use crate::map_fusion::{WINDOW, commutes};
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
        // Block `k` against the map states a few blocks back that can move
        // down to it past the states between (which touch nothing they
        // touch: mandelbrot's scalar `dist` between its grid and its
        // vector).
        let mut k = 1;
        while k < region.blocks.len() {
            let found = (k.saturating_sub(WINDOW)..k).rev().find_map(|j| {
                let between = &region.blocks[j + 1..k];
                if !commutes(&region.blocks[j], between) {
                    return None;
                }
                plan(
                    sdfg,
                    &region.blocks[j],
                    &region.blocks[k],
                    &counts,
                    &symbols,
                )
                .map(|p| (j, p))
            });
            let Some((j, plan)) = found else {
                k += 1;
                continue;
            };
            let first = region.blocks.remove(j);
            k -= 1;
            let second = &mut region.blocks[k];
            let state = bind_renames(nest_in_map(sdfg, &first.label, plan.nesting), &plan.renames);
            for (x, n) in &plan.replaced {
                if let Some(c) = counts.get_mut(x) {
                    *c = c.saturating_sub(*n);
                }
            }
            for (x, n) in RegionUse::of_state(&first.label, &state, &symbols).into_per_container() {
                *counts.entry(x).or_default() += n;
            }
            fused.push(format!("`{}` with `{}`", second.label, first.label));
            second.label = first.label;
            second.kind = BlockKind::State(state);
            // The fused state may fuse again with the next.
            k = k.max(1);
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

/// The fused map's box: its parameters and ranges, every stripped map's
/// parameters to its own, and the condition under which each of the two
/// bodies runs.
struct Fused {
    params: Vec<String>,
    bounds: Vec<Range>,
    renames: BTreeMap<String, String>,
    guard_a: Vec<SymCond>,
    guard_b: Vec<SymCond>,
}

/// Two maps of one rank: the bounding box, each body where its own range
/// is smaller behind `p <= end`, the second's parameters named as the
/// first's, position by position.
fn same_rank(pa: &[String], ra: &[Range], pb: &[String], rb: &[Range]) -> Option<Fused> {
    let mut bounds = Vec::new();
    let (mut guard_a, mut guard_b) = (Vec::new(), Vec::new());
    let below =
        |p: &String, r: &Range| SymCond::cmp(SymExpr::symbol(p.clone()), CmpOp::Le, r.end.clone());
    for (d, (x, y)) in ra.iter().zip(rb).enumerate() {
        if x.step.as_int() != Some(1) || y.step.as_int() != Some(1) || x.begin != y.begin {
            return None;
        }
        match x.end.try_compare(&y.end)? {
            Ordering::Less => {
                guard_a.push(below(&pa[d], x));
                bounds.push(y.clone());
            }
            Ordering::Greater => {
                guard_b.push(below(&pa[d], y));
                bounds.push(x.clone());
            }
            Ordering::Equal => bounds.push(x.clone()),
        }
    }
    if guard_a.is_empty() && guard_b.is_empty() {
        return None;
    }
    Some(Fused {
        params: pa.to_vec(),
        bounds,
        renames: renamed(pa, pb, pa)?,
        guard_a,
        guard_b,
    })
}

/// A map of lower rank whose ranges are, in order, ranges of the other's
/// (mandelbrot's two `linspace` vectors beside its `(XN, YN)` grid): it
/// runs at the points of the other's box whose other parameters are at
/// their first index, its parameters named as those of the dimensions it
/// matches. `low_first`: the lower-rank map is the first of the two.
fn embedded(
    ph: &[String],
    rh: &[Range],
    pl: &[String],
    rl: &[Range],
    low_first: bool,
) -> Option<Fused> {
    let mut matched = Vec::new();
    let mut next = 0;
    for r in rl {
        let d = (next..rh.len()).find(|&d| rh[d] == *r)?;
        matched.push(d);
        next = d + 1;
    }
    let guard: Vec<SymCond> = (0..ph.len())
        .filter(|d| !matched.contains(d))
        .map(|d| {
            SymCond::cmp(
                SymExpr::symbol(ph[d].clone()),
                CmpOp::Eq,
                rh[d].begin.clone(),
            )
        })
        .collect();
    let targets: Vec<String> = matched.iter().map(|&d| ph[d].clone()).collect();
    let renames = renamed(ph, pl, &targets)?;
    let (guard_a, guard_b) = if low_first {
        (guard, Vec::new())
    } else {
        (Vec::new(), guard)
    };
    Some(Fused {
        params: ph.to_vec(),
        bounds: rh.to_vec(),
        renames,
        guard_a,
        guard_b,
    })
}

/// The fused map's parameters `keep` named as themselves and `other`'s
/// named `targets`, position by position; `None` where a name would stand
/// for two.
fn renamed(
    keep: &[String],
    other: &[String],
    targets: &[String],
) -> Option<BTreeMap<String, String>> {
    let mut renames: BTreeMap<String, String> =
        keep.iter().map(|p| (p.clone(), p.clone())).collect();
    for (q, p) in other.iter().zip(targets) {
        if renames
            .insert(q.clone(), p.clone())
            .is_some_and(|old| old != *p)
        {
            return None;
        }
    }
    Some(renames)
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
    if !default(sa, ea) || !default(sb, eb) {
        return None;
    }
    let Fused {
        params,
        bounds,
        renames,
        guard_a,
        guard_b,
    } = if pa.len() == pb.len() {
        same_rank(&pa, &ra, &pb, &rb)?
    } else if pa.len() > pb.len() {
        embedded(&pa, &ra, &pb, &rb, false)?
    } else {
        embedded(&pb, &rb, &pa, &ra, true)?
    };
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
    // Each state behind the condition of the points it runs at.
    let guarded = |label: &str, state: &State, guard: Vec<SymCond>| {
        let block = ControlBlock::new(label, BlockKind::State(state.clone()));
        if guard.is_empty() {
            return block;
        }
        ControlBlock::new(
            format!("{label}_in_range"),
            BlockKind::Conditional(ConditionalBlock {
                branches: vec![(SymCond::and_all(guard), Region::new(vec![block]))],
                otherwise: None,
            }),
        )
    };
    let mut body = Region::new(vec![
        guarded(&a.label, sa, guard_a),
        guarded(&b.label, sb, guard_b),
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
            params,
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
