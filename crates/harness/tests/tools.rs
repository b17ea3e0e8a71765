//! The Python tools of `corpus/tools` that the harness and `cargo xtask`
//! drive, on the paths that need no optional package.

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python_has(module: &str) -> Option<bool> {
    let out = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .ok()?;
    Some(out.status.success())
}

/// Without the `dace` package, the comparison with DaCe's GPU pipeline is
/// skipped (status 3, which `cargo xtask compare-dace` reports as skipped),
/// never run against the project's stand-in `dace` module that lives beside
/// it in `corpus/tools`.
#[test]
fn the_dace_comparison_is_skipped_without_dace_and_never_uses_the_stand_in() {
    let Some(false) = python_has("dace") else {
        // CI's python3 has no dace (DaCe lives in a virtual environment).
        assert!(std::env::var_os("CI").is_none(), "CI runs this check");
        eprintln!("skipped: python3 is missing, or has the real dace package");
        return;
    };
    let out_file = std::env::temp_dir().join(format!("dace-compare-{}.json", std::process::id()));
    let out = Command::new("python3")
        .arg(root().join("corpus/tools/dace_compare.py"))
        .arg("--out")
        .arg(&out_file)
        .arg(root().join("corpus/npbench/polybench/gemm.py"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("skipped"), "{stderr}");
    assert!(!out_file.exists());
    // A usage problem is status 2, not a skip.
    let out = Command::new("python3")
        .arg(root().join("corpus/tools/dace_compare.py"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// The GPU summary reads corpus reports and says what passed; a report
/// without a `gpu` stage (a simulated backend) gives an empty table.
#[test]
fn the_gpu_summary_tabulates_the_gpu_stage_of_corpus_reports() {
    if python_has("json") != Some(true) {
        eprintln!("skipped: no python3");
        return;
    }
    let dir = std::env::temp_dir().join(format!("gpu-summary-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let report = dir.join("corpus-S.json");
    std::fs::write(
        &report,
        r#"[{"kernel": "polybench/gemm", "preset": "S",
             "stages": [["emit", {"verdict": "pass", "millis": 1.0}],
                        ["gpu", {"verdict": "pass", "millis": 9.0}]],
             "gpu": {"device": "d", "device_ms": 0.5, "device_runs_ms": [0.5],
                     "numpy_ms": 5.0, "cupy_ms": 1.0, "cupy_matches_numpy": true,
                     "notes": [], "speedup_vs_numpy": 10.0, "speedup_vs_cupy": 2.0}},
            {"kernel": "misc/crc16", "preset": "S",
             "stages": [["gpu", {"verdict": "fail", "reason": "nvcc rejected it", "millis": 1.0}]],
             "gpu": null}]"#,
    )
    .unwrap();
    let out = Command::new("python3")
        .arg(root().join("corpus/tools/gpu_summary.py"))
        .arg(&report)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("| polybench/gemm | S | pass | 0.500 | 5.000 | 1.000 | 10.0x | 2.0x |"),
        "{text}"
    );
    assert!(
        text.contains("| misc/crc16 | S | fail: nvcc rejected it |"),
        "{text}"
    );
    assert!(
        text.contains("geometric mean speed-up over NumPy: 10.00x (1 kernels)"),
        "{text}"
    );
    assert!(
        text.contains("1 of 2 kernel runs passed the gpu stage"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
