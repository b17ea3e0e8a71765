//! `sdfgc`: the command-line front door of the SDFG offloading toolchain.
//!
//! Exit status: 0 on success, 1 when the input is an invalid SDFG, 2 when the
//! input cannot be read or parsed at all.

use clap::{Parser, Subcommand};
use sdfg_harness::load_sdfg;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "sdfgc", version, about = "Compile and inspect SDFGs")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate an SDFG JSON file: prints every error; silent when valid.
    Validate {
        /// The SDFG, as written by `Sdfg::to_json`.
        file: PathBuf,
    },
    /// Print an SDFG JSON file as Graphviz DOT.
    Dot {
        /// The SDFG, as written by `Sdfg::to_json`.
        file: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Validate { file } => match load_sdfg(&file) {
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
            Ok(sdfg) => match sdfg_ir::validate(&sdfg) {
                Ok(_) => ExitCode::SUCCESS,
                Err(errors) => {
                    for e in &errors.0 {
                        println!("error: {e}");
                    }
                    ExitCode::from(1)
                }
            },
        },
        Command::Dot { file } => match load_sdfg(&file) {
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
            Ok(sdfg) => {
                print!("{}", sdfg_ir::dot::to_dot(&sdfg));
                ExitCode::SUCCESS
            }
        },
    }
}
