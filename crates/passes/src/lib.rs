//! Transformations over the SDFG.
//!
//! Today this crate holds the [`Accelerator`]
//! description every device-specific decision goes through, the generic
//! **offload pass** ([`mod@offload`]) and **library lowering**
//! ([`mod@library`], pure expansions of library nodes). The rest of the GPU
//! pipeline (simplification, loop-to-map, map fusion, vendor-call lowering,
//! register promotion) arrives with its issues.
//! Every pass keeps the SDFG valid (`sdfg_ir::validate`) and serializable.

pub mod accelerator;
pub mod library;
pub mod offload;

pub use accelerator::{Accelerator, CopyKind, VendorCall};
pub use library::{LibraryError, lower_library_nodes};
pub use offload::{HostMaps, OffloadError, Options, Report, offload};
