//! Nested SDFGs' connectors as DaCe 2.0 binds them: whole arrays.
//!
//! The IR binds a nested SDFG's connector to the region its memlet selects
//! (`sdfg_ir::window`): a connector of one column may stand for column `j`
//! of a matrix, a scalar for one element. DaCe 2.0 passes the outer array
//! from its start and wants the connector's descriptor to be the outer
//! one; before 2.0 DaCe meant windows too, and 2.0 refuses such files
//! until `convert_legacy_nested_sdfgs` restates them. The export restates
//! them the same way before writing: the inner container takes the outer
//! descriptor, every memlet inside that names it is composed with the
//! window (so it indexes the whole array), the symbols the window and the
//! descriptor name are mapped in, and the edge carries the whole array.
//! GT4Py 1.1.12's scans and `where` (read as it writes them, `docs/clients.md`)
//! come back out so.

use sdfg_ir::window::Window;
use sdfg_ir::{BlockKind, DType, Memlet, Node, NodeId, Region, Sdfg, State, Subset, SymExpr};
use std::collections::{BTreeMap, BTreeSet};

/// `sdfg` with every nested SDFG's connectors bound to whole containers
/// from their start, or `None` where they already are; why not, where a
/// binding has no such form (interstate code reading a window, a window
/// whose rank fits no rule).
pub(crate) fn whole_connectors(sdfg: &Sdfg) -> Result<Option<Sdfg>, String> {
    if !has_windows(sdfg) {
        return Ok(None);
    }
    let mut out = sdfg.clone();
    widen_sdfg(&mut out)?;
    Ok(Some(out))
}

/// Whether a connector (at any depth) is bound to a window DaCe 2.0 does
/// not pass as it is.
fn has_windows(sdfg: &Sdfg) -> bool {
    let mut found = false;
    sdfg.walk_blocks(&mut |_, _, b| {
        if let BlockKind::State(s) = &b.kind {
            for (id, n) in s.nodes() {
                if let Node::NestedSdfg(n) = n {
                    found |= bindings(s, id)
                        .iter()
                        .any(|(c, _, m)| needs_widening(&sdfg.containers, &n.sdfg, c, m))
                        || has_windows(&n.sdfg);
                }
            }
        }
    });
    found
}

/// The connector bindings of the nested SDFG `id`: (connector, edge end
/// is the node's input, memlet).
fn bindings(s: &State, id: NodeId) -> Vec<(String, bool, Memlet)> {
    let ins = s
        .in_edges(id)
        .filter_map(|(_, _, e)| Some((e.dst_conn.clone()?, true, e.memlet.clone()?)));
    let outs = s
        .out_edges(id)
        .filter_map(|(_, _, e)| Some((e.src_conn.clone()?, false, e.memlet.clone()?)));
    ins.chain(outs).collect()
}

/// Whether DaCe 2.0 would not read the binding of `c` by `m` as the IR
/// means it: a window of an array not from the array's start (a scalar
/// for an element other than the first among them). A binding from the
/// start is what DaCe passes, and is written as it is.
fn needs_widening(
    outer: &BTreeMap<String, sdfg_ir::DataDesc>,
    inner: &Sdfg,
    c: &str,
    m: &Memlet,
) -> bool {
    let (Some(_), Some(od)) = (inner.container(c), outer.get(&m.data)) else {
        return false;
    };
    od.layout().is_some() && m.subset.ranges.iter().any(|r| r.begin.as_int() != Some(0))
}

/// Widens the windows of every nested SDFG of `sdfg`, outermost first (a
/// widened container's memlets into deeper nested SDFGs become windows
/// of the whole array, which the deeper level then widens).
fn widen_sdfg(sdfg: &mut Sdfg) -> Result<(), String> {
    let outer_symbols = sdfg.symbols.clone();
    let containers = sdfg.containers.clone();
    let mut result = Ok(());
    sdfg.body.for_each_region_mut(&mut |region| {
        for b in &mut region.blocks {
            let BlockKind::State(s) = &mut b.kind else {
                continue;
            };
            if result.is_ok() {
                result = widen_state(s, &outer_symbols, &containers);
            }
        }
    });
    result
}

fn widen_state(
    s: &mut State,
    outer_symbols: &BTreeMap<String, DType>,
    containers: &BTreeMap<String, sdfg_ir::DataDesc>,
) -> Result<(), String> {
    let nested: Vec<NodeId> = s
        .nodes()
        .filter(|(_, n)| matches!(n, Node::NestedSdfg(_)))
        .map(|(id, _)| id)
        .collect();
    for id in nested {
        let binds = bindings(s, id);
        let Some(Node::NestedSdfg(n)) = s.graph.node_weight(id) else {
            continue;
        };
        let mut windows: BTreeMap<String, Window> = BTreeMap::new();
        for (c, _, m) in &binds {
            if !needs_widening(containers, &n.sdfg, c, m) {
                continue;
            }
            let d = &n.sdfg.containers[c];
            let w = Window::bound(&m.data, &m.subset, d.dims()).ok_or_else(|| {
                format!(
                    "the nested SDFG `{}` binds its connector `{c}` of rank {} to `{}[{}]`, a window of another rank",
                    n.label,
                    d.rank(),
                    m.data,
                    m.subset
                )
            })?;
            if windows.get(c).is_some_and(|prev| *prev != w) {
                return Err(format!(
                    "the nested SDFG `{}` binds its connector `{c}` to two windows",
                    n.label
                ));
            }
            windows.insert(c.clone(), w);
        }
        if windows.is_empty() {
            if let Some(Node::NestedSdfg(n)) = s.graph.node_weight_mut(id) {
                widen_sdfg(&mut n.sdfg)?;
            }
            continue;
        }
        let Some(Node::NestedSdfg(n)) = s.graph.node_weight_mut(id) else {
            continue;
        };
        // The outer names the windows and descriptors need, by inner name.
        let mut needed: BTreeSet<String> = BTreeSet::new();
        for w in windows.values() {
            needed.extend(w.free_symbols());
            if let Some(od) = containers.get(&w.data) {
                needed.extend(od.free_symbols());
            }
        }
        let mut taken: BTreeSet<String> = n.sdfg.symbols.keys().cloned().collect();
        taken.extend(n.sdfg.containers.keys().cloned());
        let mut inward: BTreeMap<String, SymExpr> = BTreeMap::new();
        for s_out in needed {
            let existing = n
                .symbol_mapping
                .iter()
                .find(|(_, v)| v.is_symbol() == Some(s_out.as_str()))
                .map(|(k, _)| k.clone());
            let name = match existing {
                Some(k) => k,
                None => {
                    let mut name = s_out.clone();
                    while taken.contains(&name) {
                        name.push('_');
                    }
                    taken.insert(name.clone());
                    let dtype = outer_symbols.get(&s_out).copied().unwrap_or(DType::Int64);
                    n.sdfg.symbols.insert(name.clone(), dtype);
                    n.symbol_mapping
                        .insert(name.clone(), SymExpr::symbol(s_out.clone()));
                    n.sdfg.arguments.push(name.clone());
                    name
                }
            };
            inward.insert(s_out, SymExpr::symbol(name));
        }
        let inner_windows: BTreeMap<String, Window> = windows
            .iter()
            .map(|(c, w)| (c.clone(), w.subs(&inward)))
            .collect();
        compose_region(&mut n.sdfg, &inner_windows);
        for (c, w) in &windows {
            let Some(od) = containers.get(&w.data) else {
                continue;
            };
            let mut desc = od.clone();
            for e in desc.expressions_mut() {
                *e = e.subs(&inward);
            }
            desc.transient = false;
            desc.lifetime = sdfg_ir::Lifetime::External;
            n.sdfg.containers.insert(c.clone(), desc);
        }
        widen_sdfg(&mut n.sdfg)?;
        // The edges carry the whole arrays.
        let edges: Vec<_> = s
            .in_edges(id)
            .map(|(e, _, x)| (e, x.dst_conn.clone()))
            .chain(s.out_edges(id).map(|(e, _, x)| (e, x.src_conn.clone())))
            .collect();
        for (e, conn) in edges {
            let Some(w) = conn.and_then(|c| windows.get(&c)) else {
                continue;
            };
            let Some(od) = containers.get(&w.data) else {
                continue;
            };
            if let Some(m) = s.graph[e].memlet.as_mut() {
                m.subset = Subset::full(&od.shape());
                m.volume = m.subset.num_elements();
            }
        }
    }
    Ok(())
}

/// Composes every memlet of `sdfg`'s states that names a container of
/// `windows` with its window (the container's new indices are the whole
/// array's), and every read of one in interstate code, map ranges and
/// nested SDFGs' symbol mappings.
fn compose_region(sdfg: &mut Sdfg, windows: &BTreeMap<String, Window>) {
    let shapes: BTreeMap<String, Vec<SymExpr>> = sdfg
        .containers
        .iter()
        .map(|(k, d)| (k.clone(), d.shape()))
        .collect();
    let reindex = |x: &str, i: &[SymExpr]| {
        let w = windows.get(x)?;
        Some((x.to_owned(), w.index(i)))
    };
    sdfg.body.for_each_region_mut(&mut |region: &mut Region| {
        for b in &mut region.blocks {
            // Interstate reads of a widened container index the whole.
            b.map_interstate(&|e| e.reindex_reads(&reindex), &|c| {
                c.reindex_reads(&reindex)
            });
            let BlockKind::State(s) = &mut b.kind else {
                continue;
            };
            let edges: Vec<_> = s.graph.edge_indices().collect();
            for e in edges {
                let Some((src, dst)) = s.graph.edge_endpoints(e) else {
                    continue;
                };
                let ends = (
                    s.graph[src].as_access().map(str::to_owned),
                    s.graph[dst].as_access().map(str::to_owned),
                );
                let Some(m) = s.graph[e].memlet.as_mut() else {
                    continue;
                };
                sdfg_ir::window::compose_memlet(
                    m,
                    (ends.0.as_deref(), ends.1.as_deref()),
                    &|c| windows.get(c),
                    &|c| shapes.get(c).cloned().unwrap_or_default(),
                );
            }
            for n in s.graph.node_weights_mut() {
                match n {
                    Node::MapEntry(e) => {
                        for r in &mut e.map.ranges {
                            r.begin = r.begin.reindex_reads(&reindex);
                            r.end = r.end.reindex_reads(&reindex);
                            r.step = r.step.reindex_reads(&reindex);
                        }
                    }
                    Node::NestedSdfg(n) => {
                        for v in n.symbol_mapping.values_mut() {
                            *v = v.reindex_reads(&reindex);
                        }
                    }
                    _ => {}
                }
            }
        }
    });
}
