//! Reference interpreter and simulated accelerator.
//!
//! This crate will execute any valid SDFG on the CPU with host and device
//! storage in *separate* address spaces: a kernel that reads host memory, or
//! host code that reads device memory, faults and names the container, as a
//! real GPU would. Copies move bytes explicitly and are counted, so the
//! transfer ratio of an offloaded program (bytes moved over the lower bound)
//! is measured without hardware. Running the un-offloaded SDFG on the host is
//! the reference the offloaded one is compared with.
//!
//! Nothing is implemented yet; the interpreter arrives with its own issue.
