//! Loop sinking: a sequential loop whose every iteration runs maps of the
//! same range, each point touching only its own elements, becomes one map
//! over that range whose threads run the whole loop.
//!
//! ```text
//! for n in range(maxiter):              for (p, q) in map[0:YN, 0:XN]:
//!     map (i, j): I[i, j] = |Z[i, j]| <     for n in range(maxiter):
//!     map (i, j): N[i, j] = ... I[i, j]  =>      I[p, q] = |Z[p, q]| < h
//!     map (i, j): Z[i, j] = ... I[i, j]          N[p, q] = ... I[p, q]
//!                                                Z[p, q] = ... I[p, q]
//! ```
//!
//! One launch runs what took a launch per map per iteration (mandelbrot's
//! iteration loop over its grid of points). The rewrite is an interchange
//! of the loop with the maps, legal when no point of one iteration reads
//! what another point wrote:
//!
//! - the loop's body is states only, each holding exactly one map at its
//!   top level (with the access nodes it reads and writes), all maps of the
//!   same range, a range the loop's iterations do not change; no
//!   transitions inside the body, a header that reads no data;
//! - every container the body writes is accessed, inside every map, only at
//!   elements of the point: with the map's parameters renamed to the first
//!   map's, any two of its accesses by distinct points touch distinct
//!   elements, in whatever iterations (the dependence test, the loop's
//!   variable varying: vadv's `ccol[i, j, k - 1]` read where `ccol[i, j,
//!   k]` was written); containers it only reads may be read anywhere;
//! - the loop's variable is not used after the loop;
//! - a container written inside the maps' scopes, on no map's entry or
//!   exit, is a small transient the rest of the SDFG does not use (a
//!   point's own value, such as map fusion's registers): it moves into the
//!   nested SDFG, so each thread has its own.
//!
//! The result is a map over the range whose scope is a nested SDFG running
//! the loop; in it each map of the body is gone, its parameters symbols of
//! the nested SDFG bound to the new map's (so its memlets and code stay as
//! they were), its nodes joined to the access nodes directly.

use crate::dependence::{RegionUse, independent};
use crate::nest::{
    Nesting, bind_renames, mapped_symbols, nest_in_map, privatizable, rewrite_loops, strip_maps,
    top_map,
};
use sdfg_ir::{BlockKind, LoopBlock, Region, Sdfg, SymExpr};
use std::collections::{BTreeMap, BTreeSet};

/// Sinks every loop it can (see the [module docs](self)); returns the
/// labels of the loops sunk.
pub fn sink_loops(sdfg: &mut Sdfg) -> Vec<String> {
    if !sdfg.body.has_loops() {
        return Vec::new();
    }
    let symbols: BTreeSet<String> = sdfg.symbols.keys().cloned().collect();
    let whole = RegionUse::of(&sdfg.body, &symbols);
    let mut body = std::mem::take(&mut sdfg.body);
    let mut sunk = Vec::new();
    rewrite_loops(&mut body, &mut |block| {
        let BlockKind::Loop(l) = &block.kind else {
            return false;
        };
        let Some((mut nesting, renames)) = plan(sdfg, &block.label, l, &whole, &symbols) else {
            return false;
        };
        strip_maps(&mut nesting.body);
        let state = bind_renames(nest_in_map(sdfg, &block.label, nesting), &renames);
        block.kind = BlockKind::State(state);
        sunk.push(block.label.clone());
        true
    });
    sdfg.body = body;
    sunk
}

/// The nesting of loop `l`, and the renaming of every map's parameters to
/// the new map's, if the loop sinks.
#[allow(clippy::type_complexity)]
fn plan(
    sdfg: &Sdfg,
    label: &str,
    l: &LoopBlock,
    whole: &RegionUse,
    symbols: &BTreeSet<String>,
) -> Option<(Nesting, BTreeMap<String, String>)> {
    if l.body.blocks.is_empty()
        || !l.condition.reads().is_empty()
        || [&l.init, &l.update]
            .into_iter()
            .flatten()
            .any(|e| !e.reads().is_empty())
    {
        return None;
    }
    let mut maps = Vec::new();
    for b in &l.body.blocks {
        let BlockKind::State(s) = &b.kind else {
            return None;
        };
        if !b.transition.is_empty() {
            return None;
        }
        maps.push((s, top_map(s)?));
    }
    let (_, (_, params, ranges)) = &maps[0];
    let mut renames: BTreeMap<String, String> = BTreeMap::new();
    for (_, (_, p, r)) in &maps {
        if r != ranges || p.len() != params.len() {
            return None;
        }
        for (a, b) in p.iter().zip(params) {
            if renames
                .insert(a.clone(), b.clone())
                .is_some_and(|old| old != *b)
            {
                return None;
            }
        }
    }
    let subs: BTreeMap<String, SymExpr> = renames
        .iter()
        .map(|(a, b)| (a.clone(), SymExpr::symbol(b.clone())))
        .collect();
    // Accesses inside the maps (the edges from the entry and into the exit),
    // in the new map's parameters.
    let mut at: BTreeMap<String, Vec<sdfg_ir::Subset>> = BTreeMap::new();
    let mut written: BTreeSet<String> = BTreeSet::new();
    for (s, (entry, ..)) in &maps {
        let exit = s.exit_of(*entry)?;
        for (_, _, e) in s.out_edges(*entry) {
            if let Some(m) = &e.memlet {
                at.entry(m.data.clone())
                    .or_default()
                    .push(m.subset.subs(&subs));
            }
        }
        for (_, _, e) in s.in_edges(exit) {
            if let Some(m) = &e.memlet {
                if m.wcr.is_some() {
                    return None;
                }
                written.insert(m.data.clone());
                at.entry(m.data.clone())
                    .or_default()
                    .push(m.subset.subs(&subs));
            }
        }
    }
    // Every two accesses of a container the body writes, by two distinct
    // points, touch distinct elements, whatever iterations they are in
    // (the loop's variable and what the body assigns vary).
    let inside = RegionUse::of_loop(l, label, symbols);
    let mut varying: BTreeSet<String> = l.variable.iter().cloned().collect();
    varying.extend(inside.assigned.iter().cloned());
    // The new map's range is evaluated once, before the loop: a range the
    // loop's iterations change (a triangle `Y[:j, j]`) cannot be hoisted.
    if ranges
        .iter()
        .any(|r| r.free_symbols().iter().any(|s| varying.contains(s)))
    {
        return None;
    }
    for x in &written {
        let mut subsets = at.get(x)?.clone();
        subsets.sort_by_key(ToString::to_string);
        subsets.dedup();
        for (k, a) in subsets.iter().enumerate() {
            if subsets[k..]
                .iter()
                .any(|b| !independent(a, b, params, &[], &varying))
            {
                return None;
            }
        }
    }
    // The loop's own symbols stay inside.
    if inside
        .assigned
        .iter()
        .any(|s| whole.symbol_outside(&inside, s))
    {
        return None;
    }
    // A container no map's entry or exit carries lives inside the maps'
    // scopes, one per point (map fusion's registers, `tmp_p0`): it moves
    // into the nested SDFG, each thread's own, rather than being passed in
    // as an input the body would write.
    let mut inputs = BTreeSet::new();
    let mut private = BTreeSet::new();
    for a in &inside.accesses {
        let desc = sdfg.containers.get(&a.data)?;
        if at.contains_key(&a.data) {
            inputs.insert(a.data.clone());
        } else if desc.transient && !whole.container_outside(&inside, &a.data) && privatizable(desc)
        {
            private.insert(a.data.clone());
        } else if a.write {
            return None;
        } else {
            inputs.insert(a.data.clone());
        }
    }
    let mut mapped = mapped_symbols(sdfg, &inside, inputs.iter().chain(&private));
    for r in ranges {
        mapped.extend(r.free_symbols());
    }
    let one = Region::new(vec![sdfg_ir::ControlBlock {
        label: label.to_owned(),
        kind: BlockKind::Loop(l.clone()),
        transition: Default::default(),
    }]);
    Some((
        Nesting {
            named_outside: inside
                .assigned
                .iter()
                .filter(|s| whole.named_outside(&inside, s))
                .cloned()
                .collect(),
            params: params.clone(),
            ranges: ranges.clone(),
            body: one,
            private,
            inputs,
            outputs: written,
            mapped,
            assigned: inside.assigned.clone(),
        },
        renames,
    ))
}
