//! DaCe's format both ways on every corpus kernel and every IR example:
//! exporting an SDFG and importing the export gives back the SDFG (its
//! states' nodes renumbered from 0, as the export numbers them), before
//! and after offloading, and the imported SDFG is valid.

use sdfg_ir::node::{Node, NodeId};
use sdfg_ir::{Sdfg, State};
use std::collections::BTreeMap;
use std::path::Path;

/// `sdfg` with every state's nodes (nested SDFGs included) numbered from
/// 0 in their order, as DaCe's files number them.
fn compacted(mut sdfg: Sdfg) -> Sdfg {
    sdfg.body.for_each_region_mut(&mut |region| {
        for block in &mut region.blocks {
            if let sdfg_ir::BlockKind::State(s) = &mut block.kind {
                *s = compact_state(s);
            }
        }
    });
    sdfg
}

fn compact_state(s: &State) -> State {
    let mut out = State::new();
    let mut ids: BTreeMap<NodeId, NodeId> = BTreeMap::new();
    for (id, _) in s.nodes() {
        ids.insert(id, NodeId::new(ids.len()));
    }
    for (_, n) in s.nodes() {
        let n = match n {
            Node::MapExit(x) => {
                let mut x = x.clone();
                x.entry = ids[&x.entry];
                Node::MapExit(x)
            }
            Node::NestedSdfg(nested) => {
                let mut nested = nested.clone();
                nested.sdfg = Box::new(compacted(*nested.sdfg));
                Node::NestedSdfg(nested)
            }
            other => other.clone(),
        };
        out.add_node(n);
    }
    for (_, src, dst, e) in s.edges() {
        out.graph.add_edge(ids[&src], ids[&dst], e.clone());
    }
    out
}

/// Exports and imports `sdfg`, checking that the import is the SDFG and
/// valid; the first difference otherwise.
fn round_trip(name: &str, sdfg: &Sdfg) -> Result<(), String> {
    let text =
        sdfg_dace_format::to_dace_string(sdfg).map_err(|e| format!("{name}: export: {e}"))?;
    let back =
        sdfg_dace_format::from_dace_str(&text).map_err(|e| format!("{name}: import: {e}"))?;
    let original = compacted(sdfg.clone());
    if back != original {
        let (a, b) = (original.to_json(), back.to_json());
        let line = a
            .lines()
            .zip(b.lines())
            .position(|(x, y)| x != y)
            .unwrap_or(0);
        let context = |t: &str| {
            t.lines()
                .skip(line.saturating_sub(6))
                .take(12)
                .collect::<Vec<_>>()
                .join("\n")
        };
        return Err(format!(
            "{name}: the import differs from the SDFG at line {line} of its JSON:\n--- original\n{}\n--- imported\n{}",
            context(&a),
            context(&b)
        ));
    }
    sdfg_ir::validate(&back).map_err(|e| format!("{name}: the import is invalid: {e}"))?;
    Ok(())
}

#[test]
fn every_ir_example_that_exports_imports_back_equal() {
    let mut failures = Vec::new();
    for (name, build) in sdfg_ir::examples::all() {
        let sdfg = build().unwrap();
        if sdfg_dace_format::export(&sdfg).is_err() {
            continue; // Refused by name (tested in the crate).
        }
        if let Err(e) = round_trip(name, &sdfg) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_corpus_kernel_imports_back_equal_as_lowered_and_offloaded() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/npbench");
    let kernels = sdfg_harness::corpus::discover(&root).unwrap();
    assert!(kernels.len() >= 50, "the corpus is there");
    let cuda = sdfg_harness::backend("cuda").unwrap();
    let mut failures = Vec::new();
    for k in &kernels {
        let text = std::fs::read_to_string(&k.path).unwrap();
        let module = sdfg_frontend::Module::parse(&k.name, &text).unwrap();
        let program = sdfg_harness::default_program(&module).unwrap();
        let host = module.compile_with(&program, &BTreeMap::new()).unwrap();
        let (offloaded, _) = sdfg_passes::pipeline::run_owned(
            host.clone(),
            Some(cuda.accelerator()),
            &sdfg_passes::PipelineOptions::default(),
            &sdfg_passes::Pass::TO_OFFLOAD,
        )
        .unwrap();
        for (variant, sdfg) in [("host", &host), ("cuda", &offloaded)] {
            if let Err(e) = round_trip(&format!("{} ({variant})", k.name), sdfg) {
                failures.push(e);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} round trips failed:\n{}",
        failures.len(),
        2 * kernels.len(),
        failures.join("\n\n")
    );
}
