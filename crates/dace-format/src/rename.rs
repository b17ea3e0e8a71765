//! Renaming a container of an SDFG, for the names DaCe gives a meaning the
//! IR does not.
//!
//! DaCe treats `__return` and `__return_<i>` as the return values of
//! every SDFG, nested ones included, and refuses an SDFG with both. The
//! IR's nested SDFGs (the offload pass nests loop bodies in kernels) may
//! name a container of the outer SDFG `__return` as they get it, so the
//! export renames such containers of nested SDFGs, and the import renames
//! them back (marked `_meta_sdfg_name`).

use sdfg_ir::{BlockKind, Node, Sdfg};

/// Renames the container `old` of `sdfg` (not of SDFGs nested in it) to
/// `new`: its declaration, the argument list, access nodes and memlets.
/// `false`, changing nothing, where a symbolic expression reads it (an
/// interstate assignment, a condition or a subset reading `old[i]`),
/// which this does not rewrite.
pub fn rename_container(sdfg: &mut Sdfg, old: &str, new: &str) -> bool {
    if !sdfg.containers.contains_key(old) || sdfg.containers.contains_key(new) || is_read(sdfg, old)
    {
        return false;
    }
    if let Some(d) = sdfg.containers.remove(old) {
        sdfg.containers.insert(new.to_owned(), d);
    }
    for a in &mut sdfg.arguments {
        if a == old {
            *a = new.to_owned();
        }
    }
    sdfg.body.for_each_region_mut(&mut |region| {
        for block in &mut region.blocks {
            let BlockKind::State(s) = &mut block.kind else {
                continue;
            };
            for w in s.graph.node_weights_mut() {
                if let Node::Access(a) = w
                    && a.data == old
                {
                    a.data = new.to_owned();
                }
            }
            for e in s.graph.edge_weights_mut() {
                if let Some(m) = &mut e.memlet
                    && m.data == old
                {
                    m.data = new.to_owned();
                }
            }
        }
    });
    true
}

/// Whether a symbolic expression of `sdfg` reads the container `name`.
fn is_read(sdfg: &Sdfg, name: &str) -> bool {
    let mut read = false;
    sdfg.walk_blocks(&mut |_, _, b| {
        read |= b.transition.reads().contains(name);
        match &b.kind {
            BlockKind::Loop(l) => {
                read |= l.condition.reads().contains(name)
                    || l.init
                        .iter()
                        .chain(&l.update)
                        .any(|e| e.reads().contains(name));
            }
            BlockKind::Conditional(c) => {
                read |= c
                    .branches
                    .iter()
                    .any(|(cond, _)| cond.reads().contains(name));
            }
            BlockKind::State(s) => {
                read |= s.edges().any(|(_, _, _, e)| {
                    e.memlet.as_ref().is_some_and(|m| {
                        m.subset
                            .ranges
                            .iter()
                            .chain(m.other_subset.iter().flat_map(|o| &o.ranges))
                            .any(|r| {
                                [&r.begin, &r.end, &r.step]
                                    .iter()
                                    .any(|x| x.reads().contains(name))
                            })
                            || m.volume.reads().contains(name)
                    })
                }) || s.nodes().any(|(_, n)| match n {
                    Node::MapEntry(m) => m.map.ranges.iter().any(|r| {
                        [&r.begin, &r.end, &r.step]
                            .iter()
                            .any(|x| x.reads().contains(name))
                    }),
                    _ => false,
                });
            }
            BlockKind::Break | BlockKind::Continue | BlockKind::Return => {}
        }
    });
    read
}
