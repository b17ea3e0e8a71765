//! Golden outputs of the example SDFGs: JSON (every example) and DOT (every example).
//!
//! The JSON of each example is an insta snapshot under `tests/snapshots/`;
//! CI fails when it changes. The same text is also written to
//! `tests/out/<name>.json` on every run, as plain files that `sdfgc validate`
//! and `sdfgc dot` can be pointed at. To accept an intended change run
//! `INSTA_UPDATE=always cargo test -p sdfg-ir --test snapshots` (or `cargo insta review`).

use sdfg_ir::{Sdfg, examples, validate};
use std::path::PathBuf;

fn out_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/out")
}

fn build(name: &str, make: examples::ExampleFn) -> Sdfg {
    match make() {
        Ok(sdfg) => sdfg,
        Err(e) => panic!("example `{name}` does not build: {e}"),
    }
}

#[test]
fn json_snapshots_of_every_example() {
    std::fs::create_dir_all(out_dir()).expect("create tests/out");
    for (name, make) in examples::all() {
        let sdfg = build(name, make);
        let json = sdfg.to_json();
        std::fs::write(out_dir().join(format!("{name}.json")), &json).expect("write output");
        insta::assert_snapshot!(format!("{name}.json"), json);
    }
}

#[test]
fn dot_snapshots_of_every_example() {
    for (name, make) in examples::all() {
        let sdfg = build(name, make);
        insta::assert_snapshot!(format!("{name}.dot"), sdfg_ir::dot::to_dot(&sdfg));
    }
}

#[test]
fn every_example_is_valid() {
    for (name, make) in examples::all() {
        let sdfg = build(name, make);
        if let Err(errors) = validate(&sdfg) {
            panic!("example `{name}` is invalid:\n{errors}");
        }
    }
}

#[test]
fn json_round_trip_is_exact_and_deterministic() {
    for (name, make) in examples::all() {
        let sdfg = build(name, make);
        let text = sdfg.to_json();
        let back = Sdfg::from_json(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(back, sdfg, "{name}: round trip changed the SDFG");
        assert_eq!(back.to_json(), text, "{name}: second serialization differs");
        // Building the same program twice gives the same bytes (no random ids).
        assert_eq!(
            build(name, make).to_json(),
            text,
            "{name}: not deterministic"
        );
    }
}

#[test]
fn examples_cover_every_construct() {
    use sdfg_ir::{BlockKind, DataKind, Node};
    let sdfgs: Vec<Sdfg> = examples::all()
        .into_iter()
        .map(|(n, m)| build(n, m))
        .collect();
    let mut kinds = std::collections::BTreeSet::new();
    fn visit(sdfg: &Sdfg, kinds: &mut std::collections::BTreeSet<String>) {
        for desc in sdfg.containers.values() {
            kinds.insert(format!("data:{}", desc.kind_name()));
            if let DataKind::Array(_) = desc.kind {
                kinds.insert(format!("storage:{}", desc.storage));
            }
            kinds.insert(format!("storage:{}", desc.storage));
        }
        sdfg.walk_blocks(&mut |_, _, b| {
            kinds.insert(format!("block:{}", b.kind.name()));
            if let BlockKind::Loop(l) = &b.kind {
                kinds.insert(format!(
                    "loop:{}",
                    if l.variable.is_some() { "for" } else { "while" }
                ));
            }
            if !b.transition.is_empty() {
                kinds.insert("transition:assign".to_owned());
            }
            if let BlockKind::State(s) = &b.kind {
                for (_, n) in s.nodes() {
                    kinds.insert(format!("node:{}", n.kind_name()));
                    if let Node::NestedSdfg(ns) = n {
                        visit(&ns.sdfg, kinds);
                    }
                    if let Node::MapEntry(m) = n {
                        kinds.insert(format!("schedule:{}", m.map.schedule));
                    }
                    if let Node::Library(l) = n {
                        kinds.insert(format!("library:{}", l.op.name()));
                    }
                }
                for (_, _, _, e) in s.edges() {
                    match &e.memlet {
                        None => {
                            kinds.insert("memlet:empty".to_owned());
                        }
                        Some(m) => {
                            if let Some(w) = m.wcr {
                                kinds.insert(format!("memlet:wcr-{w}"));
                            }
                            if m.dynamic {
                                kinds.insert("memlet:dynamic".to_owned());
                            }
                            if m.other_subset.is_some() {
                                kinds.insert("memlet:other-subset".to_owned());
                            }
                        }
                    }
                }
            }
        });
    }
    for s in &sdfgs {
        visit(s, &mut kinds);
    }
    let required = [
        "data:scalar",
        "data:array",
        "data:view",
        "data:stream",
        "data:structure",
        "data:container array",
        "block:state",
        "block:loop",
        "block:conditional",
        "block:break",
        "block:continue",
        "block:return",
        "loop:for",
        "loop:while",
        "transition:assign",
        "node:access node",
        "node:map entry",
        "node:map exit",
        "node:tasklet",
        "node:nested SDFG",
        "node:library node",
        "node:host callback",
        "memlet:empty",
        "memlet:wcr-sum",
        "memlet:dynamic",
        "memlet:other-subset",
        "storage:default",
        "storage:host_pinned",
        "storage:device_global",
        "storage:device_shared",
        "storage:register",
        "schedule:default",
        "schedule:device_kernel",
        "schedule:device_thread_block",
        "library:matmul",
        "library:gemm",
        "library:gemv",
        "library:dot",
        "library:reduce",
        "library:transpose",
        "library:tensor_transpose",
        "library:cholesky",
        "library:solve",
        "library:batched_matmul",
    ];
    let missing: Vec<&str> = required
        .iter()
        .copied()
        .filter(|k| !kinds.contains(*k))
        .collect();
    assert!(
        missing.is_empty(),
        "constructs no example uses: {missing:?}"
    );
}
