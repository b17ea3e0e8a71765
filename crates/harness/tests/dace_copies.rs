//! The end of a copy that its memlet does not name, both ways between
//! DaCe and the IR (issue #39).
//!
//! DaCe leaves a copy's `other_subset` null where its default will do: the
//! whole other container where the element counts are equal, the same
//! subset where they differ. The IR's default is the same subset whatever
//! the counts, so the import read a 1 by 1 register copied into
//! `bcol[__i0, __i1]` (vadv after DaCe's `auto_optimize`) at
//! `[__i0, __i1]`. The fixture `null_other_subset.sdfg`, built with DaCe
//! 2.0.0b1 by the script beside it (whose `--run` has DaCe compile it and
//! print what each copy wrote), holds one copy of each kind; the values
//! here are what the script's run printed, worked out from the inputs.
//! The export writes the other subset out for every copy, so that DaCe
//! does not apply its own default to the IR's copies.

use sdfg_ir::builder::SdfgBuilder;
use sdfg_ir::{DType, DataDesc, Memlet, Sdfg, Subset, SymExpr, Wcr};
use sdfg_sim::{Arguments, ArrayValue, Simulator};
use std::collections::BTreeMap;
use std::path::Path;

fn fixture_text() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../dace-format/tests/fixtures/null_other_subset.sdfg");
    std::fs::read_to_string(path).expect("the fixture is there")
}

/// Every array argument of `sdfg`: sources count up from 100 (element `k`
/// holds `100 + k`), destinations hold -1 (the elements no copy writes).
fn arguments(sdfg: &Sdfg) -> Arguments {
    let mut args = Arguments::default();
    for (name, desc) in &sdfg.containers {
        if desc.transient {
            continue;
        }
        let shape: Vec<usize> = desc
            .shape()
            .iter()
            .map(|e| usize::try_from(e.as_int().expect("a constant shape")).unwrap())
            .collect();
        let len = shape.iter().product();
        let fill = if name.ends_with("_dst") || name == "col" || name == "B" {
            vec![-1.0; len]
        } else {
            (0..len).map(|k| 100.0 + k as f64).collect()
        };
        args = args.array(name, ArrayValue::f64(shape, fill));
    }
    args
}

fn run(sdfg: &Sdfg, args: &Arguments) -> BTreeMap<String, Vec<f64>> {
    let valid = sdfg_ir::validate(sdfg).expect("valid");
    let out = Simulator::new().run(valid, args).expect("runs").outputs;
    out.iter()
        .map(|(name, v)| {
            let values = (0..v.elements.len())
                .map(|k| v.get(k).unwrap().to_f64())
                .collect();
            (name.clone(), values)
        })
        .collect()
}

/// `dst` after `count` elements of `src` from `from` land at `to` (flat
/// indices), the rest left at -1.
fn landed(len: usize, src: &[f64], from: usize, to: usize, count: usize) -> Vec<f64> {
    let mut dst = vec![-1.0; len];
    dst[to..to + count].copy_from_slice(&src[from..from + count]);
    dst
}

#[test]
fn a_null_other_subset_is_read_as_dace_computes_it_on_the_host_and_offloaded() {
    let sdfg = sdfg_dace_format::from_dace_str(&fixture_text()).expect("imports");
    let args = arguments(&sdfg);
    let input = |name: &str| -> Vec<f64> {
        let v = &args.arrays[name];
        (0..v.elements.len())
            .map(|k| v.get(k).unwrap().to_f64())
            .collect()
    };
    let want: BTreeMap<&str, Vec<f64>> = BTreeMap::from([
        // `whole_src[2:5]` into the three elements of `whole_dst`.
        ("whole_dst", landed(3, &input("whole_src"), 2, 0, 3)),
        // Three elements into ten: the same indices.
        ("same_dst", landed(10, &input("same_src"), 2, 2, 3)),
        (
            "named_dst_dst",
            landed(10, &input("named_dst_src"), 2, 2, 3),
        ),
        // Row 4, columns 2 to 4, of a 10 by 10 source, into a 3 by 1 column.
        (
            "row_to_column_dst",
            landed(3, &input("row_to_column_src"), 42, 0, 3),
        ),
        // The register of one element holds `2 u[i, j]` when it is copied
        // into `col[i, j]`.
        ("col", input("u").iter().map(|u| 2.0 * u).collect()),
    ]);
    let backend = sdfg_harness::backend("cuda").unwrap();
    let (offloaded, _) = sdfg_passes::pipeline::run_owned(
        sdfg.clone(),
        Some(backend.accelerator()),
        &sdfg_passes::PipelineOptions::default(),
        &sdfg_passes::Pass::TO_OFFLOAD,
    )
    .unwrap();
    for (form, sdfg) in [("host", &sdfg), ("offloaded", &offloaded)] {
        let got = run(sdfg, &args);
        for (name, want) in &want {
            assert_eq!(&got[*name], want, "{form}: {name}");
        }
    }
}

/// The fixture with the container `name`'s shape replaced.
fn with_shape(name: &str, shape: &[&str]) -> String {
    let mut v: serde_json::Value = serde_json::from_str(&fixture_text()).unwrap();
    let desc = &mut v["attributes"]["_arrays"][name]["attributes"];
    desc["shape"] = serde_json::json!(shape);
    let strides: Vec<String> = (0..shape.len())
        .map(|k| shape[k + 1..].join("*"))
        .map(|s| if s.is_empty() { "1".to_owned() } else { s })
        .collect();
    desc["strides"] = serde_json::json!(strides);
    desc["total_size"] = serde_json::json!(shape.join("*"));
    desc["offset"] = serde_json::json!(vec!["0"; shape.len()]);
    v.to_string()
}

#[test]
fn a_null_other_subset_whose_meaning_cannot_be_told_is_refused_by_name() {
    // Counts that the canonical form can neither prove equal nor prove
    // different: DaCe decides with sympy's assumptions.
    let mut v: serde_json::Value = serde_json::from_str(&with_shape("whole_dst", &["N"])).unwrap();
    v["attributes"]["symbols"]["N"] = serde_json::json!("int64");
    let e = sdfg_dace_format::from_dace_str(&v.to_string()).unwrap_err();
    assert_eq!(e.path, "nodes[0].edges[0].attributes.data", "{e}");
    assert!(e.message.contains("cannot tell"), "{e}");
    assert!(e.message.contains("`whole_dst`"), "{e}");
    // Counts that differ, ranks that differ: DaCe takes the same subset,
    // which does not index the other container.
    let e = sdfg_dace_format::from_dace_str(&with_shape("same_dst", &["2", "5"])).unwrap_err();
    assert_eq!(e.path, "nodes[1].edges[0].attributes.data", "{e}");
    assert!(e.message.contains("rank differs"), "{e}");
    // A copy with a write-conflict resolution: DaCe's older copy code
    // writes `same_dst[0:3]`, its copy nodes would write `same_dst[2:5]`.
    let mut v: serde_json::Value = serde_json::from_str(&fixture_text()).unwrap();
    v["nodes"][1]["edges"][0]["attributes"]["data"]["attributes"]["wcr"] =
        serde_json::json!("(lambda a, b: (a + b))");
    let e = sdfg_dace_format::from_dace_str(&v.to_string()).unwrap_err();
    assert_eq!(e.path, "nodes[1].edges[0].attributes.data", "{e}");
    assert!(e.message.contains("older copy code"), "{e}");
    // Where the subset fills the other container, both read it whole.
    v["nodes"][0]["edges"][0]["attributes"]["data"]["attributes"]["wcr"] =
        serde_json::json!("(lambda a, b: (a + b))");
    v["nodes"][1]["edges"][0]["attributes"]["data"]["attributes"]["wcr"] = serde_json::Value::Null;
    let sdfg = sdfg_dace_format::import(&v).expect("imports");
    sdfg_ir::validate(&sdfg).expect("valid");
}

/// One state copying `A[2:M+2]` into `B`, whose other subset the IR leaves
/// implied (`B[2:M+2]`), with write-conflict resolution `wcr`.
fn ir_copy(wcr: Option<Wcr>, symbolic: bool) -> Sdfg {
    let mut b = SdfgBuilder::new("implied_other_subset");
    let count = if symbolic {
        b.symbol("M");
        SymExpr::symbol("M")
    } else {
        SymExpr::int(3)
    };
    b.container("A", DataDesc::array(DType::Float64, vec![SymExpr::int(10)]))
        .container("B", DataDesc::array(DType::Float64, vec![SymExpr::int(10)]));
    b.state("copy", |s| {
        let (a, dst) = (s.access("A"), s.access("B"));
        let two = SymExpr::int(2);
        let subset = Subset::new(vec![sdfg_ir::Range::slice(two.clone(), &two + &count)]);
        let mut m = Memlet::new("A", subset);
        m.wcr = wcr;
        s.edge(a, None, dst, None, m);
    });
    b.build().expect("builds")
}

#[test]
fn an_implied_other_subset_is_written_out_and_reads_back_as_the_ir_means_it() {
    for (wcr, symbolic) in [(None, false), (Some(Wcr::Sum), false), (None, true)] {
        let what = format!("wcr {wcr:?}, symbolic {symbolic}");
        let sdfg = ir_copy(wcr, symbolic);
        let mut args = arguments(&sdfg);
        if wcr.is_some() {
            // Combining into elements nothing wrote reads garbage.
            args.arrays
                .insert("B".into(), ArrayValue::f64(vec![10], vec![0.5; 10]));
        }
        if symbolic {
            args = args.symbol("M", 3);
        }
        let want = run(&sdfg, &args);
        let text = sdfg_dace_format::to_dace_string(&sdfg).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let memlet = &mut v["nodes"][0]["edges"][0]["attributes"]["data"]["attributes"];
        let other = &memlet["other_subset"]["ranges"][0];
        assert_eq!(other["start"], "2", "{what}: {memlet}");
        // The export's mark gives back the IR's SDFG exactly.
        let back = sdfg_dace_format::from_dace_str(&text).unwrap();
        assert_eq!(back, sdfg, "{what}");
        // DaCe drops the mark when it saves the file again; read as DaCe
        // reads it, the copy still lands at `B[2:5]`.
        memlet
            .as_object_mut()
            .unwrap()
            .remove(sdfg_dace_format::export::IMPLIED_OTHER_MARK);
        let as_dace_saves_it = sdfg_dace_format::import(&v).unwrap();
        assert_eq!(run(&as_dace_saves_it, &args), want, "{what}");
    }
}
