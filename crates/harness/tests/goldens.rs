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
