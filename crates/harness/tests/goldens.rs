//! The emitted CUDA and HIP source of the golden kernels equals the
//! committed files (`cargo xtask bless` accepts an intended change).

use sdfg_harness::{Backend, goldens};
use std::path::PathBuf;

#[test]
fn emitted_sources_match_the_goldens() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let targets = sdfg_codegen::targets();
    assert_eq!(targets.len(), 2, "both GPU backends are linked in tests");
    let mut differ = Vec::new();
    for target in targets {
        for kernel in goldens::KERNELS {
            let path = goldens::path(&root, &Backend::Code(target), kernel);
            let want = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e} (run `cargo xtask bless`)", path.display()));
            let got = goldens::generate(&root, target, kernel).unwrap_or_else(|e| panic!("{e}"));
            if got != want {
                let line = got
                    .lines()
                    .zip(want.lines())
                    .position(|(a, b)| a != b)
                    .unwrap_or_else(|| got.lines().count().min(want.lines().count()));
                differ.push(format!(
                    "{} differs at line {}:\n  golden:  {}\n  emitted: {}",
                    path.display(),
                    line + 1,
                    want.lines().nth(line).unwrap_or("<end>"),
                    got.lines().nth(line).unwrap_or("<end>")
                ));
            }
        }
    }
    assert!(
        differ.is_empty(),
        "{}\n\nif the change is intended, run `cargo xtask bless`",
        differ.join("\n")
    );
}

/// Every corpus kernel's emitted CUDA moves each argument to and from the
/// device with one `MemcpyAsync` per array: contiguity is decided on the
/// canonical symbolic strides, so a whole array of any rank (softmax's
/// `(N, H, SM, SM)` input, conv2d_bias's 4-D tensors) is one run, never
/// a `Memcpy2DAsync` or a host loop of copies.
#[test]
fn every_corpus_kernel_moves_each_array_with_one_copy() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = sdfg_codegen::targets()
        .into_iter()
        .find(|t| t.dialect.name() == "cuda")
        .expect("the CUDA backend is linked in tests");
    let mut kernels = Vec::new();
    for dir in std::fs::read_dir(root.join("corpus/npbench")).unwrap() {
        let dir = dir.unwrap().path();
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "py") {
                let category = dir.file_name().unwrap().to_string_lossy().into_owned();
                let name = f.file_stem().unwrap().to_string_lossy().into_owned();
                kernels.push(format!("{category}/{name}"));
            }
        }
    }
    kernels.sort();
    assert!(kernels.len() >= 50, "{kernels:?}");
    let mut wrong = Vec::new();
    let mut copies = 0;
    for kernel in &kernels {
        let source = goldens::generate(&root, target, kernel).unwrap_or_else(|e| panic!("{e}"));
        if source.contains("for (int64_t sdfg_c") {
            wrong.push(format!("{kernel}: a host loop of copies"));
        }
        // The states moving arguments in and out: `// offload_copy_...`,
        // then a block of copies.
        let lines: Vec<&str> = source.lines().collect();
        for (k, line) in lines.iter().enumerate() {
            if !line.trim_start().starts_with("// offload_copy_") {
                continue;
            }
            let indent = line.len() - line.trim_start().len();
            let close = format!("{}}}", " ".repeat(indent));
            for body in lines[k + 1..].iter().skip(1).take_while(|l| **l != close) {
                if body.contains("Memcpy") && !body.contains("Event") {
                    copies += 1;
                    if !body.contains("cudaMemcpyAsync(") {
                        wrong.push(format!("{kernel}: {}", body.trim()));
                    }
                }
            }
        }
    }
    assert!(
        copies >= kernels.len(),
        "only {copies} argument copies found"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
