//! The export to DaCe's schema, checked on the IR's examples: the shape of
//! what DaCe's loader relies on (numbering, references, names), and the
//! refusals. That DaCe itself loads, validates and generates code for the
//! corpus's exports is checked by `cargo xtask dace-sdfg`, which needs
//! DaCe installed.

use sdfg_dace_format::export::{ADDED_MARK, ExportError};
use sdfg_dace_format::{export, names};
use sdfg_ir::control::{BlockKind, ControlBlock, Region, Transition};
use sdfg_ir::{Assignment, SymExpr, examples};
use serde_json::Value;
use std::collections::BTreeSet;

/// Every state of an exported SDFG (nested SDFGs included), with the
/// containers of the SDFG it belongs to.
fn states<'a>(sdfg: &'a Value, out: &mut Vec<(&'a Value, BTreeSet<String>)>) {
    let arrays: BTreeSet<String> = sdfg["attributes"]["_arrays"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    fn blocks<'a>(
        region: &'a Value,
        arrays: &BTreeSet<String>,
        out: &mut Vec<(&'a Value, BTreeSet<String>)>,
    ) {
        for b in region["nodes"].as_array().into_iter().flatten() {
            match b["type"].as_str() {
                Some("SDFGState") => {
                    out.push((b, arrays.clone()));
                    for n in b["nodes"].as_array().into_iter().flatten() {
                        if n["type"] == "NestedSDFG" {
                            states(&n["attributes"]["sdfg"], out);
                        }
                    }
                }
                Some("ConditionalBlock") => {
                    for br in b["branches"].as_array().into_iter().flatten() {
                        blocks(&br[1], arrays, out);
                    }
                }
                _ => blocks(b, arrays, out),
            }
        }
    }
    blocks(sdfg, &arrays, out);
}

fn exported(name: &str) -> Value {
    let (_, build) = examples::all()
        .into_iter()
        .find(|(n, _)| *n == name)
        .unwrap();
    export(&build().unwrap()).unwrap()
}

#[test]
fn every_state_numbers_its_nodes_and_edges_refer_to_them() {
    for (name, build) in examples::all() {
        let sdfg = build().unwrap();
        let Ok(value) = export(&sdfg) else {
            continue; // The refusals are tested below.
        };
        let mut all = Vec::new();
        states(&value, &mut all);
        assert!(!all.is_empty(), "{name}");
        for (state, arrays) in all {
            let nodes = state["nodes"].as_array().unwrap();
            for (k, n) in nodes.iter().enumerate() {
                assert_eq!(n["id"], k, "{name}: node ids count from 0");
                if n["type"] == "AccessNode" {
                    let data = n["attributes"]["data"].as_str().unwrap();
                    assert!(arrays.contains(data), "{name}: `{data}` is declared");
                }
            }
            for e in state["edges"].as_array().unwrap() {
                for end in ["src", "dst"] {
                    let id: usize = e[end].as_str().unwrap().parse().unwrap();
                    assert!(id < nodes.len(), "{name}: edge {end} {id}");
                }
                let memlet = &e["attributes"]["data"]["attributes"];
                if let Some(data) = memlet["data"].as_str() {
                    assert!(arrays.contains(data), "{name}: memlet of `{data}`");
                }
            }
        }
    }
}

#[test]
fn symbolic_properties_mark_symbols_and_code_does_not() {
    let v = exported("jacobi_1d");
    let text = v.to_string();
    // Shapes in DaCe 2.0's serialized spelling.
    let a = &v["attributes"]["_arrays"];
    let shapes: Vec<&Value> = a
        .as_object()
        .unwrap()
        .values()
        .filter_map(|d| d["attributes"]["shape"].as_array())
        .flatten()
        .collect();
    assert!(
        shapes.iter().any(|s| s.as_str().unwrap().contains('$')),
        "{shapes:?}"
    );
    // Loop statements are Python, with the variable alone on the left.
    assert!(text.contains("\"t = 1\""), "{text}");
    assert!(text.contains("(t) < (TSTEPS)"), "{text}");
    assert_eq!(v["dace_version"], sdfg_dace_format::export::DACE_VERSION);
}

#[test]
fn offloaded_sdfgs_use_daces_gpu_names_and_place_host_data() {
    let v = exported("offloaded_scale");
    let text = v.to_string();
    assert!(text.contains("\"GPU_Global\""), "device storage");
    assert!(text.contains("\"GPU_Device\""), "kernel schedule");
    for d in v["attributes"]["_arrays"].as_object().unwrap().values() {
        let storage = d["attributes"]["storage"].as_str().unwrap();
        assert_ne!(
            storage, "Default",
            "an offloaded SDFG's containers are placed"
        );
        assert!(names::storage_from(storage).is_some(), "{storage}");
    }
}

#[test]
fn a_transition_after_the_last_block_gets_a_state_to_leave_from() {
    let mut sdfg = examples::axpy().unwrap();
    sdfg.symbols.insert("k".into(), sdfg_ir::DType::Int64);
    let last = sdfg.body.blocks.last_mut().unwrap();
    last.transition = Transition {
        assignments: vec![
            Assignment {
                symbol: "k".into(),
                value: SymExpr::int(1),
            },
            // Reads `k` just assigned: a second step.
            Assignment {
                symbol: "k".into(),
                value: SymExpr::symbol("k") + 1,
            },
        ],
    };
    let v = export(&sdfg).unwrap();
    let nodes = v["nodes"].as_array().unwrap();
    let edges = v["edges"].as_array().unwrap();
    let added = nodes
        .iter()
        .filter(|n| n["attributes"][ADDED_MARK] == true)
        .count();
    assert_eq!(added, 2, "one state per step: {nodes:#?}");
    assert_eq!(edges.len(), nodes.len() - 1, "a chain");
    let assigned: Vec<&Value> = edges
        .iter()
        .map(|e| &e["attributes"]["data"]["attributes"]["assignments"]["k"])
        .collect();
    assert_eq!(assigned[assigned.len() - 2], "1");
    assert_eq!(assigned[assigned.len() - 1], "k + 1");
}

#[test]
fn host_callbacks_and_streams_are_refused_by_name() {
    let sdfg = examples::containers_and_callbacks().unwrap();
    let err = export(&sdfg).unwrap_err();
    assert!(matches!(err, ExportError::Unsupported { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("SDFG `"), "{text}");
}

#[test]
fn a_symbolic_start_offset_is_refused_naming_the_container() {
    let mut sdfg = examples::axpy().unwrap();
    let (name, desc) = sdfg
        .containers
        .iter_mut()
        .find(|(_, d)| d.layout().is_some())
        .unwrap();
    let name = name.clone();
    if let sdfg_ir::DataKind::Array(l) = &mut desc.kind {
        l.offset = SymExpr::symbol("N");
    }
    let text = export(&sdfg).unwrap_err().to_string();
    assert!(text.contains(&format!("`{name}`")), "{text}");
    assert!(text.contains("start_offset"), "{text}");
}

#[test]
fn blocks_after_a_jump_are_refused() {
    let mut sdfg = examples::axpy().unwrap();
    let body = std::mem::take(&mut sdfg.body.blocks);
    let mut blocks = vec![ControlBlock::new("leave", BlockKind::Return)];
    blocks.extend(body);
    sdfg.body = Region::new(blocks);
    let text = export(&sdfg).unwrap_err().to_string();
    assert!(text.contains("`leave`"), "{text}");
}

#[test]
fn a_reshape_copy_waives_daces_element_count_check_and_only_it() {
    // `B[0:N*M] <- A[0:N, 0:M]`: ends of different ranks, whose element
    // counts DaCe's symbolic engine cannot always prove equal (ceilings of
    // powers); the IR's validator has, so the memlet carries `allow_oob`.
    // A copy of one rank on both ends keeps DaCe's check.
    let mut b = sdfg_ir::builder::SdfgBuilder::new("reshape");
    b.symbol("N")
        .symbol("M")
        .array("A", sdfg_ir::DType::Float64, "N, M")
        .array("B", sdfg_ir::DType::Float64, "N * M")
        .array("C", sdfg_ir::DType::Float64, "N * M");
    b.state("copy", |s| {
        let (a, bb, c) = (s.access("A"), s.access("B"), s.access("C"));
        let flat = sdfg_ir::Memlet::parse("A", "0:N, 0:M")
            .unwrap()
            .with_other_subset(sdfg_ir::Subset::parse("0:N*M").unwrap());
        s.edge(a, None, bb, None, flat);
        let same = sdfg_ir::Memlet::parse("B", "0:N*M")
            .unwrap()
            .with_other_subset(sdfg_ir::Subset::parse("0:N*M").unwrap());
        s.edge(bb, None, c, None, same);
    });
    let sdfg = b.build().unwrap();
    let value = export(&sdfg).unwrap();
    let mut all = Vec::new();
    states(&value, &mut all);
    let edges: Vec<&Value> = all
        .iter()
        .flat_map(|(s, _)| s["edges"].as_array().into_iter().flatten())
        .collect();
    let memlet = |data: &str| {
        edges
            .iter()
            .map(|e| &e["attributes"]["data"]["attributes"])
            .find(|m| m["data"] == data)
            .unwrap_or_else(|| panic!("no memlet of `{data}`: {edges:?}"))
    };
    assert_eq!(memlet("A")["allow_oob"], Value::Bool(true));
    assert!(memlet("B").get("allow_oob").is_none(), "{:?}", memlet("B"));
}

#[test]
fn an_sdfg_placed_for_shared_memory_is_refused_naming_the_sdfg() {
    let mut sdfg = examples::axpy().unwrap();
    sdfg.memory.device_touches_host = true;
    let Err(ExportError::Unsupported { at, what, .. }) = export::export(&sdfg) else {
        panic!("exported an SDFG DaCe would misread");
    };
    assert!(
        at.contains(&sdfg.name) && what.contains("shared"),
        "{at}: {what}"
    );
}
