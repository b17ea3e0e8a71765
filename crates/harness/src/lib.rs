//! The corpus harness and the `sdfgc` command-line tool.
//!
//! It loads SDFGs from JSON files with errors a user can act on (the file,
//! and the line and column of malformed JSON), backs the `sdfgc`
//! subcommands, selects backends ([`backend`]: the simulated accelerator or
//! any code target linked through the `cuda` / `hip` features), runs the
//! corpus ([`corpus`]: every kernel through parse, compile, validate, JSON
//! round trip, simulation, offload, and for code backends lowering,
//! emission, real compilers (each backend's registered [`sdfg_exec::Toolchain`]) and execution of the emitted
//! code on a `sdfg_exec::Device`, and comparison with NumPy, one report row
//! per kernel), and keeps the golden sources ([`goldens`]).
//!
//! # Compile time
//!
//! `cargo bench -p sdfg-harness --bench pipeline` measures the whole
//! pipeline per kernel, release build on the 2-core development machine.
//! Group `pipeline` (parse, lower, validate, offload for the simulated
//! accelerator, validate again): gemm 0.34 ms, cholesky 0.42 ms, jacobi_2d
//! 0.50 ms, durbin 0.67 ms, correlation 1.05 ms, adi 2.2 ms. Group `to_cuda`
//! (parse to the CUDA translation unit: offload for CUDA, library lowering,
//! emission): gemm 0.49 ms, cholesky 0.63 ms, jacobi_2d 0.63 ms, durbin
//! 0.93 ms, correlation 1.6 ms, adi 2.8 ms.
//!
//! Group `generated` (generated programs of 1,000 and 10,000 statements of
//! six shapes, parse to the CUDA translation unit, with `sdfgc`'s
//! allocator) must grow linearly; medians on 2026-12-02, 1,000 → 10,000
//! statements: loop nests 213 ms → 2.51 s (exponent 1.07), arguments 132
//! ms → 1.73 s (1.12), a chain 93 ms → 1.33 s (1.15), recurrences 68 →
//! 865 ms (1.10), a loop 45 → 510 ms (1.06), `elif` arms 59 → 642 ms
//! (1.04). The same programs through `sdfgc compile --backend cuda --emit
//! source` (release, whole process, best of three, 2-core machine,
//! 2026-12-05), 1,000 / 10,000 of each: `k` loop nests 0.10 / 1.17 s,
//! `k` arguments 0.07 / 0.95 s, a chain of `k` element-wise statements
//! 0.05 / 0.62 s, a sequential loop of `k` scalar recurrences 0.04 / 0.45
//! s, a loop of `k` statements 0.02 / 0.25 s, `k` `elif` arms 0.02 / 0.28
//! s: exponents 1.05 to 1.15. A loop nest is three Python statements (two
//! `for` and an assignment): the program of 10,000 statements, 3,334
//! nests, takes 0.36 s; every shape's 10,000-statement program is under
//! one second. Instruction counts (callgrind, repeatable where wall time
//! on a shared machine is not) grow by 10.2 (nests) to 10.5 (arguments) for 10 times
//! the statements. Where the time went before (2 to 8 s at 10,000
//! statements), and what removed it: validation after every pass, about
//! half (it now runs only after a pass that changed the SDFG, debug builds
//! checking that the others changed nothing, and not again in the emitter,
//! which takes the pipeline's proof, `sdfg_ir::ValidSdfg`), copies of the
//! whole SDFG per pass (the pipeline owns it), symbol sets built per
//! memlet (visitors instead), a walk of the SDFG per new container name,
//! map fusion recounting and copying the growing fused state per fusion,
//! whole-SDFG analyses on programs without loops, and the system allocator
//! (mimalloc in `sdfgc`). Since then: connector checks that compared
//! every connector with every edge of a fused map, and map fusion's scope
//! walk of the growing fused state where no in-place update needs it.
//! What remains is spread thin over validation (about a fifth), map
//! fusion (a quarter), emission, the frontend and the analyses. The operating
//! system also spends up to a fifth of the wall time zeroing pages that
//! mimalloc purged and takes back (`MIMALLOC_PURGE_DELAY=-1` removes it; setting it
//! from the program needs `unsafe`, which the workspace forbids).

pub mod clients;
pub mod corpus;
pub mod driver;
pub mod goldens;

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
    /// The file is not UTF-8 text (JSON and Python sources are).
    #[error("`{}` is not UTF-8 text: invalid byte at line {line}, column {column}", path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// Line of the first invalid byte (1-based).
        line: usize,
        /// Its column, in characters of the valid text before it (1-based).
        column: usize,
    },
    /// The file is not a JSON SDFG.
    #[error("`{}` is not a valid SDFG{}: {message}", path.display(), position(*.line, *.column))]
    Json {
        /// The file.
        path: PathBuf,
        /// Line of the problem (1-based; 0 where it is named in the
        /// message, as for nesting too deep and for cut messages).
        line: usize,
        /// Column of the problem (1-based, or 0).
        column: usize,
        /// What serde_json found.
        message: String,
    },
    /// The file is a DaCe SDFG this project cannot read.
    #[error("`{}`: {source}", path.display())]
    Dace {
        /// The file.
        path: PathBuf,
        /// What the import found, with its place in the file.
        #[source]
        source: sdfg_dace_format::ImportError,
    },
}

/// Whether `path` names a DaCe SDFG file (`.sdfg`, or `.sdfgz`
/// compressed), which is read with DaCe's schema rather than this
/// project's JSON.
pub fn is_dace_file(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e == "sdfg" || e == "sdfgz")
}

/// Whether `path` names a compressed DaCe SDFG file (`.sdfgz`).
pub fn is_compressed_dace_file(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "sdfgz")
}

/// Reads a text file (a Python program or an SDFG), naming the line and
/// column of the first byte that is not UTF-8 where it is not text.
pub fn read_text(path: &Path) -> Result<String, LoadError> {
    let bytes = std::fs::read(path).map_err(|source| LoadError::Io {
        path: path.to_owned(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        // The prefix is valid UTF-8 by construction.
        let valid = std::str::from_utf8(valid).unwrap_or_default();
        let line_start = valid.rfind('\n').map_or(0, |i| i + 1);
        LoadError::NotUtf8 {
            path: path.to_owned(),
            line: valid.matches('\n').count() + 1,
            column: valid[line_start..].chars().count() + 1,
        }
    })
}

/// Makes every array argument's and array return value's home the device
/// (DaCe's `GPU_Global` storage, as `apply_gpu_storage` sets it on every
/// non-transient array): the SDFG a caller whose data already lives on the
/// GPU (CuPy arrays, NPBench's `dace_gpu` framework) offloads, and which
/// returns device arrays as CuPy does. Scalars and symbols stay on the
/// host, where kernels take them by value.
pub fn arguments_on_device(sdfg: &mut Sdfg) {
    for (x, d) in sdfg.containers.iter_mut() {
        let signature = !d.transient || x.starts_with("__return");
        if signature && !d.is_scalar() && !d.is_view() {
            d.storage = sdfg_ir::Storage::DeviceGlobal;
        }
    }
}

/// Reads and parses an SDFG file: this project's JSON, or DaCe's format
/// where the name ends in `.sdfg` or `.sdfgz` ([`is_dace_file`]).
pub fn load_sdfg(path: &Path) -> Result<Sdfg, LoadError> {
    if is_compressed_dace_file(path) {
        let bytes = std::fs::read(path).map_err(|source| LoadError::Io {
            path: path.to_owned(),
            source,
        })?;
        return sdfg_dace_format::from_dace_gz(&bytes).map_err(|source| LoadError::Dace {
            path: path.to_owned(),
            source,
        });
    }
    let text = read_text(path)?;
    if is_dace_file(path) {
        return sdfg_dace_format::from_dace_str(&text).map_err(|source| LoadError::Dace {
            path: path.to_owned(),
            source,
        });
    }
    Sdfg::from_json(&text).map_err(|e| LoadError::Json {
        path: path.to_owned(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })
}

/// A `--symbols` list that cannot be used: malformed, or naming a symbol
/// twice or one the SDFG does not have (a typo would otherwise run the
/// program with a default silently).
#[derive(Debug, Error, PartialEq, Eq)]
pub enum SymbolListError {
    /// An item that is not `NAME=INTEGER`.
    #[error(
        "symbol list {}: expected `NAME=INTEGER[,NAME=INTEGER...]` at {}",
        sdfg_ir::quote(.text),
        sdfg_ir::quote(.item)
    )]
    Malformed {
        /// The whole list.
        text: String,
        /// The offending item.
        item: String,
    },
    /// The same symbol given twice.
    #[error("symbol list {}: {} is given twice", sdfg_ir::quote(.text), sdfg_ir::quote(.name))]
    Duplicate {
        /// The whole list.
        text: String,
        /// The symbol.
        name: String,
    },
    /// A symbol the SDFG does not declare.
    #[error(
        "symbol list {}: {} is not a symbol of SDFG `{sdfg}` (its symbols: {known})",
        sdfg_ir::quote(.text),
        sdfg_ir::quote(.name)
    )]
    Unknown {
        /// The whole list.
        text: String,
        /// The symbol.
        name: String,
        /// The SDFG's name.
        sdfg: String,
        /// Its symbols, comma-separated (`none` for none).
        known: String,
    },
}

/// Parses `N=10,M=20` into symbol values; each symbol at most once.
pub fn parse_symbols(
    text: &str,
) -> Result<std::collections::BTreeMap<String, i64>, SymbolListError> {
    let mut values = std::collections::BTreeMap::new();
    for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let err = || SymbolListError::Malformed {
            text: text.to_owned(),
            item: item.to_owned(),
        };
        let (name, value) = item.split_once('=').ok_or_else(err)?;
        let value = value.trim().parse::<i64>().map_err(|_| err())?;
        let name = name.trim();
        if !sdfg_ir::validate::is_identifier(name) {
            return Err(err());
        }
        if values.insert(name.to_owned(), value).is_some() {
            return Err(SymbolListError::Duplicate {
                text: text.to_owned(),
                name: name.to_owned(),
            });
        }
    }
    Ok(values)
}

/// [`parse_symbols`], refusing any symbol `sdfg` does not declare.
pub fn parse_symbols_of(
    text: &str,
    sdfg: &Sdfg,
) -> Result<std::collections::BTreeMap<String, i64>, SymbolListError> {
    let values = parse_symbols(text)?;
    if let Some(name) = values.keys().find(|n| !sdfg.symbols.contains_key(*n)) {
        let known: Vec<&str> = sdfg.symbols.keys().map(String::as_str).collect();
        return Err(SymbolListError::Unknown {
            text: text.to_owned(),
            name: name.clone(),
            sdfg: sdfg.name.clone(),
            known: if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            },
        });
    }
    Ok(values)
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

// Backends linked only for their registrations must be referenced, or the
// linker drops them and their `inventory` entries with them.
#[cfg(feature = "cuda")]
use sdfg_backend_cuda as _;
#[cfg(feature = "hip")]
use sdfg_backend_hip as _;

/// A backend named by `--backend`.
#[derive(Clone, Copy)]
pub enum Backend {
    /// The simulated accelerator: offload and simulate, no code.
    Sim,
    /// A code-generating target registered with `sdfg-codegen`.
    Code(&'static sdfg_codegen::Target),
}

impl Backend {
    /// The accelerator the offload pass places data and work for.
    pub fn accelerator(&self) -> &'static dyn sdfg_passes::Accelerator {
        match self {
            Backend::Sim => &sdfg_sim::SimAccelerator,
            Backend::Code(t) => t.dialect,
        }
    }

    /// The backend's name.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Sim => "sim",
            Backend::Code(t) => t.name,
        }
    }
}

/// The backend named by `--backend`: `sim`, or any linked code target
/// (found through the `sdfg-codegen` registry, not a list here). A backend
/// whose crate is not linked (its cargo feature off) is unknown, and the
/// message says that backends are cargo features.
pub fn backend(name: &str) -> Result<Backend, String> {
    if name == "sim" {
        return Ok(Backend::Sim);
    }
    if let Some(t) = sdfg_codegen::target(name) {
        return Ok(Backend::Code(t));
    }
    let mut known = vec!["sim"];
    known.extend(sdfg_codegen::targets().iter().map(|t| t.name));
    Err(format!(
        "unknown backend `{name}` (linked: {}; each GPU backend is a cargo feature of this build, off when its crate is not linked)",
        known.join(", ")
    ))
}

/// The real GPU of `backend` on this machine, with its programs run in
/// `runner` (a binary that dispatches `sdfg_exec::child` requests: `cargo
/// xtask`'s and `sdfgc`'s do), one untimed and `repeat` timed calls of
/// `NAME_run`, and `timeout` per program; or why there is none, in one line:
/// the runtime's reason ("no CUDA device (driver not found ...)"), or that
/// this build links no runtime for the backend (found through the
/// `sdfg-exec` registry, which each backend crate's `runtime` feature
/// fills).
pub fn gpu(
    backend: Backend,
    runner: &Path,
    repeat: u32,
    timeout: std::time::Duration,
) -> Result<Box<dyn sdfg_exec::Device + Sync>, String> {
    let runtime = registered_runtime(backend)?;
    (runtime.open)(&sdfg_exec::RuntimeOptions {
        runner: runner.to_path_buf(),
        warmup: 1,
        runs: repeat,
        timeout,
    })
}

/// Every GPU of `backend` the runtime finds on this machine, one line each,
/// or why there are none (as [`gpu`] says it).
pub fn gpu_devices(backend: Backend) -> Result<Vec<String>, String> {
    (registered_runtime(backend)?.detect)()
}

/// The runtime `backend`'s crate registered, or why there is none.
fn registered_runtime(backend: Backend) -> Result<&'static sdfg_exec::GpuRuntime, String> {
    match backend {
        Backend::Sim => Err("the `sim` backend has no GPU".to_owned()),
        Backend::Code(t) => sdfg_exec::gpu_runtime(t.name).ok_or_else(|| {
            format!(
                "the `{0}` runtime is not built in (build with the `{0}-runtime` feature; `docs/gpu.md`)",
                t.name
            )
        }),
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

/// ` (line L, column C)`, or nothing for the position 0 that errors made
/// outside the parser have (their message names the line).
fn position(line: usize, column: usize) -> String {
    if line == 0 {
        String::new()
    } else {
        format!(" (line {line}, column {column})")
    }
}

#[cfg(test)]
mod backend_tests {
    use super::*;

    /// Built with `--no-default-features`, the GPU backends are not linked:
    /// asking for one says it is unknown and that backends are cargo
    /// features (CI runs this).
    #[cfg(not(feature = "cuda"))]
    #[test]
    fn a_backend_whose_feature_is_off_is_unknown_and_features_are_named() {
        let Err(e) = backend("cuda") else {
            panic!("the cuda backend is linked without its feature")
        };
        assert!(e.contains("unknown backend `cuda`"), "{e}");
        assert!(e.contains("cargo feature"), "{e}");
    }

    #[cfg(all(feature = "cuda", feature = "hip"))]
    #[test]
    fn linked_backends_are_found_through_the_registry() {
        for name in ["cuda", "hip"] {
            let b = backend(name).unwrap_or_else(|e| panic!("{e}"));
            assert!(
                sdfg_exec::toolchain(name).is_some(),
                "`{name}` registered no compile check"
            );
            assert_eq!(b.name(), name);
            assert_eq!(b.accelerator().name(), name);
        }
        assert_eq!(backend("sim").map(|b| b.name()), Ok("sim"));
    }
}
