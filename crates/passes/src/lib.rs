//! Transformations over the SDFG.
//!
//! Today this crate holds the [`Accelerator`]
//! description every device-specific decision goes through, and the first
//! version of the generic **offload pass** ([`mod@offload`]). The rest of the
//! GPU pipeline (simplification, loop-to-map, map fusion, library
//! specialization and lowering, register promotion) arrives with its issues.
//! Every pass keeps the SDFG valid (`sdfg_ir::validate`) and serializable.

pub mod accelerator;
pub mod offload;

pub use accelerator::{Accelerator, CopyKind, VendorCall};
pub use offload::{HostMaps, OffloadError, Options, Report, offload};
