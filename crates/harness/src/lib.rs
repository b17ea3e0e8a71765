//! The corpus harness and the `sdfgc` command-line tool.
//!
//! It loads SDFGs from JSON files with errors a user can act on (the file,
//! and the line and column of malformed JSON), backs the `sdfgc`
//! subcommands, and runs the corpus ([`corpus`]): every kernel through
//! parse, compile, validate, JSON round trip, simulation and comparison with
//! NumPy, one report row per kernel.
//!
//! # Compile time
//!
//! `cargo bench -p sdfg-harness --bench pipeline` measures the whole
//! pipeline per kernel (parse, lower, validate, offload for the simulated
//! accelerator, validate again), release build on the 2-core development
//! machine: gemm 0.31 ms, cholesky 0.37 ms, jacobi_2d 0.49 ms, durbin
//! 0.63 ms, correlation 1.0 ms, adi 2.0 ms.

pub mod corpus;

use sdfg_ir::Sdfg;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Why an SDFG file could not be loaded.
#[derive(Debug, Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read `{}`: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a JSON SDFG.
    #[error("`{}` is not a valid SDFG (line {line}, column {column}): {message}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// Line of the problem (1-based).
        line: usize,
        /// Column of the problem (1-based).
        column: usize,
        /// What serde_json found.
        message: String,
    },
}

/// Reads and parses an SDFG JSON file.
pub fn load_sdfg(path: &Path) -> Result<Sdfg, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Io {
        path: path.to_owned(),
        source,
    })?;
    Sdfg::from_json(&text).map_err(|e| LoadError::Json {
        path: path.to_owned(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })
}

/// A malformed `--symbols` list.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("symbol list `{text}`: expected `NAME=INTEGER[,NAME=INTEGER...]` at `{item}`")]
pub struct SymbolListError {
    /// The whole list.
    pub text: String,
    /// The offending item.
    pub item: String,
}

/// Parses `N=10,M=20` into symbol values.
pub fn parse_symbols(
    text: &str,
) -> Result<std::collections::BTreeMap<String, i64>, SymbolListError> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| {
            let err = || SymbolListError {
                text: text.to_owned(),
                item: item.to_owned(),
            };
            let (name, value) = item.split_once('=').ok_or_else(err)?;
            let value = value.trim().parse::<i64>().map_err(|_| err())?;
            let name = name.trim();
            if !sdfg_ir::validate::is_identifier(name) {
                return Err(err());
            }
            Ok((name.to_owned(), value))
        })
        .collect()
}

/// The program a file means when none is named: the one its `BENCHMARK`
/// metadata names, or its only program.
pub fn default_program(module: &sdfg_frontend::Module) -> Option<String> {
    if let Some(name) = module
        .metadata()
        .and_then(|m| m.get("program"))
        .and_then(|p| p.as_str())
    {
        return Some(name.to_owned());
    }
    match module.programs().as_slice() {
        [only] => Some(only.name.clone()),
        _ => None,
    }
}

/// The accelerator named by `--backend`.
///
/// Only the simulated accelerator exists so far; the CUDA and HIP backends
/// are named so that asking for them says what is missing.
pub fn accelerator(name: &str) -> Result<Box<dyn sdfg_passes::Accelerator>, String> {
    match name {
        "sim" => Ok(Box::new(sdfg_sim::SimAccelerator)),
        "cuda" | "hip" => Err(format!(
            "the `{name}` backend is not built yet; use `--backend sim`"
        )),
        other => Err(format!("unknown backend `{other}` (known: sim)")),
    }
}

/// Parses `--host-maps`: `none`, `auto`, or map labels separated by commas.
pub fn parse_host_maps(text: &str) -> sdfg_passes::HostMaps {
    match text.trim() {
        "" | "none" => sdfg_passes::HostMaps::None,
        "auto" => sdfg_passes::HostMaps::Auto,
        labels => sdfg_passes::HostMaps::Named(
            labels
                .split(',')
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
                .collect(),
        ),
    }
}
