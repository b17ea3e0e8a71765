//! The import's refusals: each names the element and its place in the
//! file. (That it reads what DaCe writes, and gives back what the export
//! wrote, is tested on the corpus in `crates/harness/tests/dace_format.rs`
//! and `dace_fixture.rs`.)

use sdfg_dace_format::{export, from_dace_str, import};
use serde_json::{Value, json};

fn axpy() -> Value {
    export(&sdfg_ir::examples::axpy().unwrap()).unwrap()
}

fn first_state(v: &mut Value) -> &mut Value {
    v["nodes"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|b| b["type"] == "SDFGState")
        .unwrap()
}

fn refusal(v: &Value) -> String {
    import(v).unwrap_err().to_string()
}

#[test]
fn the_example_imports() {
    let sdfg = import(&axpy()).unwrap();
    sdfg_ir::validate(&sdfg).unwrap();
}

#[test]
fn not_json_and_not_an_sdfg_are_errors() {
    assert!(
        from_dace_str("{")
            .unwrap_err()
            .to_string()
            .contains("not JSON")
    );
    let err = import(&json!({"type": "SDFGState"}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("expected an SDFG"), "{err}");
}

#[test]
fn a_state_machine_edge_with_a_condition_is_refused() {
    let mut v = axpy();
    v["nodes"].as_array_mut().unwrap().push(json!({
        "type": "SDFGState", "label": "other", "nodes": [], "edges": [], "attributes": {}
    }));
    let last = v["nodes"].as_array().unwrap().len() - 1;
    v["edges"].as_array_mut().unwrap().push(json!({
        "type": "Edge", "src": (last - 1).to_string(), "dst": last.to_string(),
        "attributes": {"data": {"type": "InterstateEdge", "attributes": {
            "condition": {"string_data": "N > 3", "language": "Python"}}}}
    }));
    let err = refusal(&v);
    assert!(err.contains("the condition `N > 3`"), "{err}");
    assert!(err.contains("edges["), "names the edge: {err}");
}

/// DaCe's state machine for `i = 1; while i <= N: (body); i += 1` and
/// `if N > 3: ... else: ...`, as DaCe's Fortran frontend writes every
/// loop and branch: raised to a loop and a conditional.
#[test]
fn a_state_machine_of_a_loop_and_a_branch_is_raised() {
    let mut v = axpy();
    let state = |label: &str| json!({"type": "SDFGState", "label": label, "nodes": [], "edges": [], "attributes": {}});
    let edge = |src: usize, dst: usize, cond: Option<&str>, assign: Value| {
        let mut a = json!({"assignments": assign});
        if let Some(c) = cond {
            a["condition"] = json!({"string_data": c, "language": "Python"});
        }
        json!({"type": "Edge", "src": src.to_string(), "dst": dst.to_string(),
               "attributes": {"data": {"type": "InterstateEdge", "attributes": a}}})
    };
    let nodes = v["nodes"].as_array_mut().unwrap();
    let compute = nodes.len() - 1;
    // compute -> guard; guard -(i <= N)-> body -> guard; guard -(not)-> branch.
    let base = nodes.len();
    nodes.extend([
        state("guard"),
        state("body"),
        state("branch"),
        state("then"),
        state("else"),
        state("merge"),
    ]);
    v["attributes"]["symbols"]["i"] = json!("int64");
    let edges = v["edges"].as_array_mut().unwrap();
    edges.extend([
        edge(compute, base, None, json!({"i": "1"})),
        edge(base, base + 1, Some("(i <= N)"), json!({})),
        edge(base + 1, base, None, json!({"i": "(i + 1)"})),
        edge(base, base + 2, Some("(not (i <= N))"), json!({})),
        edge(base + 2, base + 3, Some("N > 3"), json!({})),
        edge(base + 2, base + 4, Some("not (N > 3)"), json!({})),
        edge(base + 3, base + 5, None, json!({})),
        edge(base + 4, base + 5, None, json!({})),
    ]);
    let sdfg = import(&v).unwrap();
    sdfg_ir::validate(&sdfg).unwrap();
    let kinds: Vec<&str> = sdfg.body.blocks.iter().map(|b| b.kind.name()).collect();
    assert!(kinds.contains(&"loop"), "{kinds:?}");
    assert!(kinds.contains(&"conditional"), "{kinds:?}");
    // A branch whose conditions leave a case uncovered is refused.
    let mut w = v.clone();
    let n = w["edges"].as_array().unwrap().len();
    w["edges"][n - 3]["attributes"]["data"]["attributes"]["condition"]["string_data"] =
        json!("N > 5");
    let err = refusal(&w);
    assert!(err.contains("do not cover every case"), "{err}");
}

#[test]
fn cpp_tasklets_and_unknown_nodes_are_refused_by_name() {
    let mut v = axpy();
    let state = first_state(&mut v);
    let tasklet = state["nodes"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|n| n["type"] == "Tasklet")
        .unwrap();
    tasklet["attributes"]["code"]["language"] = json!("CPP");
    let err = refusal(&v);
    assert!(err.contains("C++ code other than GT4Py's timers"), "{err}");
    assert!(err.contains("nodes["), "names the node: {err}");

    let mut v = axpy();
    first_state(&mut v)["nodes"][0]["type"] = json!("Consume");
    assert!(refusal(&v).contains("a Consume node"));
}

#[test]
fn data_outside_the_subset_is_refused_naming_the_container() {
    let mut v = axpy();
    let arrays = v["attributes"]["_arrays"].as_object_mut().unwrap();
    let (name, desc) = arrays
        .iter_mut()
        .find(|(_, d)| d["type"] == "Array")
        .unwrap();
    let name = name.clone();
    desc["attributes"]["offset"] = json!(["1", "0"]);
    let err = refusal(&v);
    assert!(
        err.contains(&format!("`{name}` has 2 index offsets for 1 dimensions")),
        "{err}"
    );
}

/// `v` with a block appended after its last one, entered by an edge
/// assigning `x_index = x[0]`, a symbol of type `float64` (DaCe's
/// spelling of a data-dependent value).
fn with_data_symbol(mut v: Value, block: Value) -> Value {
    v["attributes"]["symbols"]["x_index"] = json!("float64");
    let nodes = v["nodes"].as_array_mut().unwrap();
    nodes.push(block);
    let last = nodes.len() - 1;
    v["edges"].as_array_mut().unwrap().push(json!({
        "type": "Edge", "src": (last - 1).to_string(), "dst": last.to_string(),
        "attributes": {"data": {"type": "InterstateEdge", "attributes": {
            "assignments": {"x_index": "x[0]"}}}}
    }));
    v
}

#[test]
fn a_data_symbol_is_read_where_the_next_condition_tests_it_and_promoted_elsewhere() {
    let branch = json!({
        "type": "ControlFlowRegion", "label": "then", "attributes": {}, "edges": [],
        "nodes": [{"type": "SDFGState", "label": "inside", "nodes": [], "edges": [], "attributes": {}}],
    });
    let conditional = json!({
        "type": "ConditionalBlock", "label": "if_x", "attributes": {},
        "branches": [[{"string_data": "x_index", "language": "Python"}, branch]],
    });
    let sdfg = import(&with_data_symbol(axpy(), conditional)).unwrap();
    assert!(!sdfg.symbols.contains_key("x_index"));
    let Some(sdfg_ir::BlockKind::Conditional(c)) = sdfg.body.blocks.last().map(|b| &b.kind) else {
        panic!("the conditional block");
    };
    assert!(
        c.branches[0].0.reads().contains("x"),
        "{:?}",
        c.branches[0].0
    );

    // Entering a state, the value is kept in a container of its type,
    // which a state before the next block computes.
    let state =
        json!({"type": "SDFGState", "label": "after", "nodes": [], "edges": [], "attributes": {}});
    let sdfg = import(&with_data_symbol(axpy(), state)).unwrap();
    sdfg_ir::validate(&sdfg).unwrap();
    assert!(!sdfg.symbols.contains_key("x_index"));
    assert_eq!(sdfg.containers["x_index"].dtype, sdfg_ir::DType::Float64);
    assert!(sdfg.containers["x_index"].transient);
    let labels: Vec<&str> = sdfg.body.blocks.iter().map(|b| b.label.as_str()).collect();
    assert_eq!(labels[labels.len() - 2..], ["assign_x_index", "after"]);
}

#[test]
fn a_symbol_sizing_a_map_that_the_symbolic_layer_cannot_hold_is_refused_by_name() {
    // `N = (N >> 1) | 1` is outside the symbolic layer, so `N` would have
    // to be kept in a container, and it sizes the map and the arrays.
    let mut v = axpy();
    v["nodes"].as_array_mut().unwrap().insert(
        0,
        json!({"type": "SDFGState", "label": "first", "nodes": [], "edges": [], "attributes": {}}),
    );
    for e in v["edges"].as_array_mut().unwrap() {
        for end in ["src", "dst"] {
            let k: usize = e[end].as_str().unwrap().parse().unwrap();
            e[end] = json!((k + 1).to_string());
        }
    }
    v["start_block"] = json!(0);
    v["edges"].as_array_mut().unwrap().push(json!({
        "type": "Edge", "src": "0", "dst": "1",
        "attributes": {"data": {"type": "InterstateEdge", "attributes": {
            "assignments": {"N": "(((N) >> (1)) | (1))"}}}}
    }));
    let err = refusal(&v);
    assert!(err.contains("the symbol `N` of type int64"), "{err}");
    assert!(err.contains("sizes a map, a memlet"), "{err}");
}

#[test]
fn an_inverted_loop_updating_after_its_test_is_refused() {
    let mut sdfg = sdfg_ir::examples::jacobi_1d().unwrap();
    sdfg.name = "inverted".into();
    let mut v = export(&sdfg).unwrap();
    let l = v["nodes"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|b| b["type"] == "LoopRegion")
        .unwrap();
    l["attributes"]["inverted"] = json!(true);
    // A do-while loop is read (`dace_clients.rs`); one whose update follows
    // its test is not.
    l["attributes"]["update_before_condition"] = json!(false);
    let err = refusal(&v);
    assert!(err.contains("updates its variable after the test"), "{err}");
}

#[test]
fn an_unknown_library_node_and_reduction_are_refused() {
    let v = export(&sdfg_ir::examples::linear_algebra().unwrap()).unwrap();
    let text = v.to_string();
    let changed: Value = serde_json::from_str(&text.replace(
        "dace.libraries.blas.nodes.matmul.MatMul",
        "dace.libraries.blas.nodes.ger.Ger",
    ))
    .unwrap();
    assert!(text.contains("dace.libraries.blas.nodes.matmul.MatMul"));
    assert!(refusal(&changed).contains("of class `dace.libraries.blas.nodes.ger.Ger`"));
    let mut w = axpy();
    let state = first_state(&mut w);
    let edge = state["edges"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .next()
        .unwrap();
    edge["attributes"]["data"]["attributes"]["wcr"] = json!("(lambda x, y: (x / y))");
    assert!(refusal(&w).contains("the write-conflict resolution `(lambda x, y: (x / y))`"));
}

#[test]
fn a_subtracting_write_conflict_resolution_is_a_sum_of_the_negated_value() {
    // DaCe's `A[...] -= value` over a map: the tasklet's output edge and
    // the map exit's carry `(lambda x, y: (x - y))`.
    let mut v = axpy();
    let state = first_state(&mut v);
    let nodes = state["nodes"].as_array().unwrap().clone();
    let tasklet = nodes.iter().position(|n| n["type"] == "Tasklet").unwrap();
    let exit = nodes.iter().position(|n| n["type"] == "MapExit").unwrap();
    let mut marked = 0;
    for e in state["edges"].as_array_mut().unwrap() {
        let src: usize = e["src"].as_str().unwrap().parse().unwrap();
        if src == tasklet || src == exit {
            e["attributes"]["data"]["attributes"]["wcr"] = json!("(lambda x, y: (x - y))");
            marked += 1;
        }
    }
    assert_eq!(marked, 2);
    let sdfg = import(&v).unwrap();
    sdfg_ir::validate(&sdfg).unwrap();
    let sdfg_ir::BlockKind::State(s) = &sdfg.body.blocks[0].kind else {
        panic!("a state")
    };
    let wcrs: Vec<_> = s
        .edges()
        .filter_map(|(_, _, _, e)| e.memlet.as_ref()?.wcr)
        .collect();
    assert_eq!(wcrs, [sdfg_ir::Wcr::Sum, sdfg_ir::Wcr::Sum]);
    let body = s
        .nodes()
        .find_map(|(_, n)| match n {
            sdfg_ir::Node::Tasklet(t) => Some(&t.body),
            _ => None,
        })
        .unwrap();
    assert!(
        matches!(
            &body[0],
            sdfg_ir::code::Stmt::Assign {
                value: sdfg_ir::code::Expr::Unary {
                    op: sdfg_ir::code::UnaryOp::Neg,
                    ..
                },
                ..
            }
        ),
        "{body:?}"
    );
}

#[test]
fn compressed_files_read_back_and_other_bytes_are_refused() {
    let sdfg = sdfg_ir::examples::jacobi_1d().unwrap();
    let bytes = sdfg_dace_format::to_dace_gz(&sdfg).unwrap();
    assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip's magic number");
    assert_eq!(sdfg_dace_format::from_dace_gz(&bytes).unwrap(), sdfg);
    let err = sdfg_dace_format::from_dace_gz(b"{\"type\": \"SDFG\"}").unwrap_err();
    assert!(
        err.to_string().contains("not a gzip-compressed SDFG"),
        "{err}"
    );
}

/// DaCe's SDFGs with loops and branches (made by DaCe 2.0.0b1, see
/// `fixtures/values_in_symbols.py`) and exports with a nested SDFG and a
/// loop: every kind of control-flow region the import reads.
fn files_with_regions() -> Vec<(&'static str, Value)> {
    let fixture = |name: &str| -> Value {
        let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    vec![
        ("checksum", fixture("values_in_symbols.checksum.sdfg")),
        ("relax", fixture("values_in_symbols.relax.sdfg")),
        ("weighted", fixture("values_in_symbols.weighted.sdfg")),
        (
            "nested_flip",
            export(&sdfg_ir::examples::nested_flip().unwrap()).unwrap(),
        ),
        (
            "jacobi_1d",
            export(&sdfg_ir::examples::jacobi_1d().unwrap()).unwrap(),
        ),
    ]
}

/// Every control-flow region of `v` (the SDFG, nested SDFGs, loops,
/// conditional branches): its JSON pointer and its path as the import's
/// errors write it.
fn regions(v: &Value, pointer: &str, path: &str, out: &mut Vec<(String, String)>) {
    let join = |key: &str| {
        if path.is_empty() {
            key.to_owned()
        } else if key.starts_with('[') {
            format!("{path}{key}")
        } else {
            format!("{path}.{key}")
        }
    };
    match v {
        Value::Object(map) => {
            if map.contains_key("nodes")
                && map.contains_key("edges")
                && map.get("type").and_then(Value::as_str) != Some("SDFGState")
            {
                out.push((pointer.to_owned(), path.to_owned()));
            }
            for (k, x) in map {
                regions(x, &format!("{pointer}/{k}"), &join(k), out);
            }
        }
        Value::Array(items) => {
            for (k, x) in items.iter().enumerate() {
                regions(x, &format!("{pointer}/{k}"), &join(&format!("[{k}]")), out);
            }
        }
        _ => {}
    }
}

/// What `start_block` may hold in a file: past the end, negative, null,
/// not an integer, missing (`None`).
fn bad_starts(len: usize) -> Vec<Option<Value>> {
    vec![
        Some(json!(len)),
        Some(json!(len + 7)),
        Some(json!(u64::MAX)),
        Some(json!(-1)),
        Some(json!(i64::MIN)),
        Some(Value::Null),
        Some(json!("0")),
        Some(json!(0.5)),
        Some(json!([0])),
        None,
    ]
}

fn set_start(v: &mut Value, pointer: &str, start: Option<Value>) {
    let region = v.pointer_mut(pointer).unwrap().as_object_mut().unwrap();
    match start {
        Some(s) => region.insert("start_block".to_owned(), s),
        None => region.remove("start_block"),
    };
}

#[test]
fn a_region_with_one_block_without_predecessors_starts_there_whatever_start_block_says() {
    // DaCe's transformations add a block before a region's start and leave
    // `start_block` behind (jacobi_1d after `auto_optimize` for the GPU);
    // DaCe starts such a region at its one source block, and so does the
    // import. A `start_block` past the end used to index out of bounds.
    let mut checked = 0;
    for (name, file) in files_with_regions() {
        let want = import(&file).unwrap();
        let mut found = Vec::new();
        regions(&file, "", "", &mut found);
        for (pointer, path) in found {
            let region = file.pointer(&pointer).unwrap();
            let len = region["nodes"].as_array().unwrap().len();
            if len == 0 {
                continue;
            }
            let mut starts = bad_starts(len);
            starts.extend((0..len).map(|k| Some(json!(k))));
            for start in starts {
                let mut v = file.clone();
                set_start(&mut v, &pointer, start.clone());
                match import(&v) {
                    Ok(got) => assert_eq!(got, want, "{name}, {path}: start_block {start:?}"),
                    Err(e) => panic!("{name}, {path}: start_block {start:?}: {e}"),
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 100, "{checked}");
}

#[test]
fn an_ambiguous_start_is_the_start_block_which_must_name_a_block() {
    // A second block without predecessors (an empty state with no edges)
    // makes the start ambiguous: only then is `start_block` read, and a
    // value that is not a block's index is refused naming the field.
    let empty = json!({
        "type": "SDFGState", "label": "unreached", "nodes": [], "edges": [], "attributes": {}
    });
    let mut checked = 0;
    for (name, file) in files_with_regions() {
        let mut found = Vec::new();
        regions(&file, "", "", &mut found);
        for (pointer, path) in found {
            let mut v = file.clone();
            let nodes = v.pointer_mut(&format!("{pointer}/nodes")).unwrap();
            let nodes = nodes.as_array_mut().unwrap();
            if nodes.is_empty() {
                continue;
            }
            nodes.push(empty.clone());
            let len = nodes.len();
            for start in bad_starts(len) {
                let mut v = v.clone();
                set_start(&mut v, &pointer, start.clone());
                let e = import(&v).unwrap_err();
                let field = if path.is_empty() {
                    "start_block".to_owned()
                } else {
                    format!("{path}.start_block")
                };
                assert_eq!(e.path, field, "{name}: start_block {start:?}: {e}");
                assert!(e.message.contains("has no start"), "{name}, {path}: {e}");
                checked += 1;
            }
            // A valid index decides; what it leaves unreachable is refused.
            for start in [0, len - 1] {
                let mut v = v.clone();
                set_start(&mut v, &pointer, Some(json!(start)));
                let e = import(&v).unwrap_err();
                assert!(
                    e.message.contains("cannot be reached from its start"),
                    "{name}, {path}: start_block {start}: {e}"
                );
            }
        }
    }
    assert!(checked > 50, "{checked}");
}

#[test]
fn a_region_whose_every_block_has_a_predecessor_is_refused_by_name() {
    // A cycle through the region's start: no block without predecessors.
    let mut v = export(&sdfg_ir::examples::jacobi_1d().unwrap()).unwrap();
    let len = v["nodes"].as_array().unwrap().len();
    assert!(len >= 2, "{len}");
    v["edges"].as_array_mut().unwrap().push(json!({
        "type": "Edge", "src": (len - 1).to_string(), "dst": "0",
        "attributes": {"data": {"type": "InterstateEdge", "attributes": {}}}
    }));
    v["start_block"] = json!(len);
    let e = import(&v).unwrap_err();
    assert_eq!(e.path, "start_block", "{e}");
    assert!(e.message.contains("every block has a predecessor"), "{e}");
    v["start_block"] = json!(0);
    let e = import(&v).unwrap_err();
    assert!(e.message.contains("cycle"), "{e}");
}

#[test]
fn symbolic_text_whose_arithmetic_overflows_is_refused_and_i64_min_is_written_readably() {
    use sdfg_dace_format::symbolic::{parse_cond, parse_expr, write_expr, write_serialized_expr};
    use sdfg_ir::SymExpr;
    // Found by `cargo xtask fuzz --target dace-mutants`: sympy's integers do
    // not wrap, the import's arithmetic did (`Abs(-2**63)` was read as
    // `-2**63`), and the export wrote `i64::MIN` as a literal that no
    // reader takes back.
    for text in [
        "9223372036854775807 + 1",
        "Abs(-9223372036854775807 - 1)",
        "-(-9223372036854775807 - 1)",
        "4611686018427387904*2",
        "(-9223372036854775807 - 1) // -1",
    ] {
        let err = parse_expr(text).unwrap_err().to_string();
        assert!(err.contains("does not fit in 64 bits"), "{text}: {err}");
    }
    let err = parse_cond("i < 9223372036854775807 + 1")
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not fit in 64 bits"), "{err}");
    assert_eq!(
        parse_expr("-9223372036854775807 - 1").unwrap(),
        SymExpr::int(i64::MIN)
    );
    let n = || SymExpr::symbol("N");
    let m = || SymExpr::symbol("M");
    for e in [
        SymExpr::int(i64::MIN),
        n() + SymExpr::int(i64::MIN),
        n() * SymExpr::int(i64::MIN),
        m() + n() * SymExpr::int(i64::MIN),
        n() * SymExpr::int(i64::MIN) + SymExpr::int(i64::MIN),
        n() * SymExpr::int(i64::MAX) - m() + SymExpr::int(-i64::MAX),
    ] {
        let python = write_expr(&e);
        assert_eq!(parse_expr(&python).unwrap(), e, "{python}");
        let serialized = write_serialized_expr(&e).unwrap();
        assert_eq!(parse_expr(&serialized).unwrap(), e, "{serialized}");
    }
}

/// `axpy` with the memlet of its first edge out of an access node widened
/// to start at index -1, dynamic or not.
fn widened_to_minus_one(dynamic: bool) -> (Value, String) {
    let mut v = axpy();
    let state = first_state(&mut v);
    let nodes = state["nodes"].as_array().unwrap().clone();
    let edge = state["edges"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|e| {
            let src: usize = e["src"].as_str().unwrap().parse().unwrap();
            nodes[src]["type"] == "AccessNode"
        })
        .unwrap();
    let memlet = &mut edge["attributes"]["data"]["attributes"];
    memlet["subset"]["ranges"][0]["start"] = json!("-1");
    memlet["dynamic"] = json!(dynamic);
    let data = memlet["data"].as_str().unwrap().to_owned();
    (v, data)
}

#[test]
fn a_dynamic_memlet_wider_than_its_array_is_bounded_by_it_and_another_is_refused() {
    // GT4Py's horizontal regions: DaCe warns and accepts; the accesses lie
    // inside the array, and so does the bound the import keeps.
    let (v, data) = widened_to_minus_one(true);
    let sdfg = import(&v).unwrap();
    sdfg_ir::validate(&sdfg).unwrap();
    // A memlet that is not dynamic accesses its whole subset: refused by
    // the validator, naming the container and the index.
    let (v, data_again) = widened_to_minus_one(false);
    assert_eq!(data, data_again);
    let err = sdfg_ir::validate(&import(&v).unwrap())
        .expect_err("a memlet from index -1 is refused")
        .to_string();
    assert!(
        err.contains(&format!("of `{data}`: index `-1` is out of bounds")),
        "{err}"
    );
}
