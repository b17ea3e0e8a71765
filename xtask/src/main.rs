//! Project automation, run as `cargo xtask <command>`.
//!
//! - `corpus`: runs the corpus through the pipeline and prints one row per
//!   program. Until the Python corpus (`corpus/npbench/`) and the frontend
//!   exist, it runs the built-in example SDFGs of `sdfg_ir::examples` through
//!   the stages that exist today (build, validate, JSON round trip, DOT) and
//!   says so. It exits non-zero when any stage fails.

use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("corpus") => corpus(),
        Some(other) => {
            eprintln!("unknown xtask command `{other}`\n\n{USAGE}");
            ExitCode::from(2)
        }
        None => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

const USAGE: &str = "usage: cargo xtask <command>\n\ncommands:\n  corpus    run every corpus program through the pipeline and print a table";

/// Verdict of one stage.
fn verdict(ok: bool) -> &'static str {
    if ok { "ok" } else { "FAIL" }
}

fn corpus() -> ExitCode {
    println!(
        "note: the NPBench corpus and the Python frontend are not built yet; \
         running the built-in example SDFGs (sdfg_ir::examples) through the stages that exist."
    );
    println!(
        "{:<26} {:>6} {:>6} {:>8} {:>8} {:>6} {:>6} {:>10}",
        "program", "build", "valid", "json", "dot", "states", "nodes", "time"
    );
    let mut failures = 0;
    for (name, make) in sdfg_ir::examples::all() {
        let start = Instant::now();
        let (build, valid, json, dot, states, nodes) = match make() {
            Err(e) => {
                eprintln!("{name}: build failed: {e}");
                (false, false, false, false, 0, 0)
            }
            Ok(sdfg) => {
                let valid = match sdfg_ir::validate(&sdfg) {
                    Ok(_) => true,
                    Err(errors) => {
                        eprintln!("{name}:\n{errors}");
                        false
                    }
                };
                let text = sdfg.to_json();
                let json = sdfg_ir::Sdfg::from_json(&text)
                    .map(|back| back == sdfg && back.to_json() == text)
                    .unwrap_or(false);
                let dot = sdfg_ir::dot::to_dot(&sdfg).starts_with("digraph");
                let states = sdfg.states();
                let nodes = states.iter().map(|(_, s)| s.graph.node_count()).sum();
                (true, valid, json, dot, states.len(), nodes)
            }
        };
        let elapsed = start.elapsed();
        if !(build && valid && json && dot) {
            failures += 1;
        }
        println!(
            "{:<26} {:>6} {:>6} {:>8} {:>8} {:>6} {:>6} {:>8.2}ms",
            name,
            verdict(build),
            verdict(valid),
            verdict(json),
            verdict(dot),
            states,
            nodes,
            elapsed.as_secs_f64() * 1e3
        );
    }
    if failures > 0 {
        eprintln!("{failures} program(s) failed a stage");
        ExitCode::FAILURE
    } else {
        println!("all programs passed every stage");
        ExitCode::SUCCESS
    }
}
