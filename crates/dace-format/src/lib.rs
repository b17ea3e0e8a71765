//! DaCe's `.sdfg` file format, for interoperating with DaCe.
//!
//! DaCe's users hand over SDFGs (GT4Py, DaCe's Fortran frontend, DaCe's
//! own transformations), so reading and writing DaCe's schema is what lets
//! them use this project's offload pass without writing Python for it.
//! The crate has, in layers:
//!
//! - [`symbolic`]: DaCe's symbolic strings (sympy syntax as DaCe writes it:
//!   `symbol($N, dtype=dace.int64)`, `$N`, `int_floor`, `Min`, `Max`, `Mod`,
//!   `ceiling`, ...) read into the IR's canonical [`SymExpr`] and
//!   [`SymCond`], and written back in the spellings DaCe reads with the
//!   same meaning;
//! - [`python`]: tasklet code, which DaCe stores as Python, written from
//!   and read into the IR's typed statements; [`cpp`]: the C++ tasklets
//!   read (GT4Py's timers);
//! - [`names`]: the vocabulary both directions share (storage, schedule
//!   and lifetime names, library classes and their connectors, reductions);
//! - [`mod@export`] and [`mod@import`]: whole SDFGs, whose round trip is exact
//!   (the export's `_meta_sdfg_*` marks undo what it had to add); both
//!   write a copy's other end out, whose default differs between DaCe and
//!   the IR (`copies.rs`);
//! - [`rename`]: renaming a container, for the names DaCe treats as return
//!   values.
//!
//! `docs/dace-format.md` has the mapping, the refusals and the results
//! against DaCe itself.
//!
//! Anything outside the supported subset is refused by name, never
//! guessed: a C remainder (`%`, `CMod`), whose sign rule differs from
//! Python's, is an error rather than a silently different `Mod`.
//!
//! [`SymExpr`]: sdfg_ir::SymExpr
//! [`SymCond`]: sdfg_ir::SymCond

mod copies;
pub mod cpp;
pub mod export;
pub mod import;
pub mod names;
pub mod python;
pub mod rename;
pub mod symbolic;
mod windows;

pub use export::{ExportError, export, to_dace_string};
pub use import::{ImportError, from_dace_str, import};

/// Reads a DaCe `.sdfgz` file: the `.sdfg` text, gzip-compressed, as
/// DaCe's `SDFG.save(..., compress=True)` writes it.
pub fn from_dace_gz(bytes: &[u8]) -> Result<sdfg_ir::Sdfg, ImportError> {
    from_dace_str(&dace_text_from_gz(bytes)?)
}

/// The `.sdfg` text of a DaCe `.sdfgz` file, for tools that work on the
/// JSON itself (the fuzzer mutates it before [`from_dace_str`] reads it).
pub fn dace_text_from_gz(bytes: &[u8]) -> Result<String, ImportError> {
    use std::io::Read;
    let mut text = String::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_string(&mut text)
        .map_err(|e| ImportError {
            path: "(file)".into(),
            message: format!("not a gzip-compressed SDFG: {e}"),
        })?;
    Ok(text)
}

/// Writes `sdfg` as a DaCe `.sdfgz` file (the `.sdfg` text, gzip-compressed).
pub fn to_dace_gz(sdfg: &sdfg_ir::Sdfg) -> Result<Vec<u8>, ExportError> {
    use std::io::Write;
    let text = to_dace_string(sdfg)?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing into a vector cannot fail.
    let _ = gz.write_all(text.as_bytes());
    Ok(gz.finish().unwrap_or_default())
}
