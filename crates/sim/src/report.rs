//! The run report: what moved between host and device, and what had to.

use crate::memory::{ContainerTraffic, Memory, Traffic};
use std::collections::BTreeMap;
use std::fmt;

/// Counters of one simulated run.
///
/// The *lower bound* counts, per host container, the distinct elements the
/// run copied to the device and the distinct elements it copied back, each
/// once: what a transfer-optimal placement of the same data would move. The
/// *transfer ratio* is the bytes actually moved divided by that bound; it is
/// 1.00 when nothing is copied twice (a copy-in inside a loop, a copy-back of
/// data that was already copied back, both show up as a ratio above 1).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunReport {
    /// Host to device, all containers.
    pub to_device: Traffic,
    /// Device to host, all containers.
    pub to_host: Traffic,
    /// Device to device.
    pub device_to_device: Traffic,
    /// Host to host.
    pub host_to_host: Traffic,
    /// Kernel launches: device maps and device-wide library calls issued by the host.
    pub launches: u64,
    /// Per host container.
    pub per_container: BTreeMap<String, ContainerTraffic>,
    /// Bytes a transfer-optimal run would move between host and device.
    pub lower_bound_bytes: u64,
}

impl RunReport {
    pub(crate) fn from_memory(mem: &Memory) -> RunReport {
        let mut r = RunReport {
            device_to_device: mem.device_to_device,
            host_to_host: mem.host_to_host,
            launches: mem.launches,
            per_container: mem.traffic.clone(),
            ..RunReport::default()
        };
        for t in mem.traffic.values() {
            r.to_device.bytes += t.to_device.bytes;
            r.to_device.copies += t.to_device.copies;
            r.to_host.bytes += t.to_host.bytes;
            r.to_host.copies += t.to_host.copies;
            r.lower_bound_bytes += t.needed_to_device + t.needed_to_host;
        }
        r
    }

    /// Bytes moved between host and device, both directions.
    pub fn transfer_bytes(&self) -> u64 {
        self.to_device.bytes + self.to_host.bytes
    }

    /// Bytes moved over the lower bound; `None` when nothing was moved.
    pub fn transfer_ratio(&self) -> Option<f64> {
        (self.lower_bound_bytes > 0)
            .then(|| self.transfer_bytes() as f64 / self.lower_bound_bytes as f64)
    }
}

impl fmt::Display for RunReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "kernel launches:   {}", self.launches)?;
        writeln!(
            f,
            "host -> device:    {} bytes in {} copies",
            self.to_device.bytes, self.to_device.copies
        )?;
        writeln!(
            f,
            "device -> host:    {} bytes in {} copies",
            self.to_host.bytes, self.to_host.copies
        )?;
        writeln!(
            f,
            "device -> device:  {} bytes in {} copies",
            self.device_to_device.bytes, self.device_to_device.copies
        )?;
        writeln!(f, "lower bound:       {} bytes", self.lower_bound_bytes)?;
        match self.transfer_ratio() {
            Some(r) => writeln!(f, "transfer ratio:    {r:.2}")?,
            None => writeln!(f, "transfer ratio:    n/a (no host-device transfers)")?,
        }
        for (name, t) in &self.per_container {
            writeln!(
                f,
                "  {name}: in {} B / {} copies, out {} B / {} copies (needed {} B in, {} B out)",
                t.to_device.bytes,
                t.to_device.copies,
                t.to_host.bytes,
                t.to_host.copies,
                t.needed_to_device,
                t.needed_to_host
            )?;
        }
        Ok(())
    }
}
