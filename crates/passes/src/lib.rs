//! Transformations over the SDFG, in the order of the named pipeline
//! ([`mod@pipeline`], `docs/pipeline.md`):
//!
//! - [`mod@elide_copies`]: a dead temporary copied whole into another
//!   container (`return x`, `y = x`) is computed there instead;
//! - [`mod@map_fusion`]: consecutive maps over one range, each point
//!   reading only what the same point wrote, become one;
//! - [`mod@loop_to_map`]: independent `for` loops become maps, decided by the
//!   dependence test of [`mod@dependence`] on the memlets' symbolic subsets;
//! - [`mod@sink_loop`]: a sequential loop around maps of per-point work
//!   becomes one map whose threads run the loop;
//! - [`mod@copies`]: a map that only copies a contiguous block becomes a
//!   runtime copy;
//! - [`mod@horizontal_fusion`]: consecutive maps sharing nothing they write,
//!   of different extents, become one map over their bounding box;
//! - the **offload pass** ([`mod@offload`]), written once against the
//!   [`Accelerator`] description every device-specific decision goes
//!   through;
//! - **library lowering** ([`mod@library`], pure expansions of library nodes,
//!   or vendor calls).
//!
//! Loop-to-map, loop sinking and the offload pass's sequential loops share
//! one rewrite, [`mod@nest`]: a region nested in a map as an SDFG of its own;
//! loop-to-map and map fusion share the dependence test. Every pass keeps
//! the SDFG valid (`sdfg_ir::validate`) and serializable, and running it
//! again changes nothing.

mod accumulators;
pub mod copies;
pub mod dependence;
pub mod elide_copies;
mod fold_scales;
pub mod horizontal_fusion;
pub mod inline_nested;
pub mod library;
pub mod loop_to_map;
pub mod map_fusion;
pub mod nest;
pub mod offload;
pub mod pipeline;
pub mod sink_loop;

pub use library::{LibraryError, lower_library_nodes};
pub use loop_to_map::{LoopReport, loop_to_map};
pub use offload::{HostMaps, OffloadError, Options, Report, offload};
pub use pipeline::{Pass, PipelineError, PipelineOptions, PipelineReport};
/// The accelerator description lives below the passes (`sdfg-accelerator`), so
/// that the simulator and the emitters see it without the pass crate.
pub use sdfg_accelerator as accelerator;
pub use sdfg_accelerator::{Accelerator, CopyKind, VendorCall};
