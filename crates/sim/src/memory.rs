//! Separate host and device address spaces, and transfer counters.

use crate::value::{Elements, Value};
use sdfg_ir::{DType, Side};
use std::collections::BTreeMap;

/// Identifies one allocation.
pub type AllocId = usize;

/// One allocation: typed elements in one address space.
#[derive(Clone, Debug)]
pub struct Allocation {
    /// The container it was allocated for (for messages and counters).
    pub name: String,
    /// Which side's memory it is.
    pub space: Side,
    /// The elements.
    pub elements: Elements,
    /// Per-element "was written" flags for transients; `None` when every
    /// element is initialised (arguments).
    pub init: Option<Vec<bool>>,
    /// Register storage: private to the code that declares it, reachable from
    /// either side.
    pub register: bool,
}

/// Bytes and operations moved in one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Bytes moved.
    pub bytes: u64,
    /// Copy operations (one per copy edge executed).
    pub copies: u64,
}

impl Traffic {
    fn add(&mut self, bytes: u64) {
        self.bytes += bytes;
        self.copies += 1;
    }
}

/// Transfers of one host container, with the lower bound of what it needed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerTraffic {
    /// Host to device.
    pub to_device: Traffic,
    /// Device to host.
    pub to_host: Traffic,
    /// Bytes of distinct elements of the container copied to the device.
    pub needed_to_device: u64,
    /// Bytes of distinct elements of the container copied back from the device.
    pub needed_to_host: u64,
}

/// The memory of a simulated machine.
#[derive(Debug, Default)]
pub struct Memory {
    /// Every allocation ever made in the run (never freed: runs are short).
    pub allocations: Vec<Allocation>,
    /// Per host container name.
    pub traffic: BTreeMap<String, ContainerTraffic>,
    /// Copies from device to device.
    pub device_to_device: Traffic,
    /// Copies from host to host.
    pub host_to_host: Traffic,
    /// Kernel launches (device maps and device-wide library calls issued by the host).
    pub launches: u64,
    /// Per host allocation, which elements have been copied in each direction
    /// (for the lower bound).
    seen: BTreeMap<(AllocId, bool), Vec<bool>>,
}

impl Memory {
    /// Allocates `len` zeroed elements; `tracked` ones start uninitialised.
    pub fn allocate(
        &mut self,
        name: &str,
        dtype: DType,
        len: usize,
        space: Side,
        tracked: bool,
    ) -> AllocId {
        self.allocations.push(Allocation {
            name: name.to_owned(),
            space,
            elements: Elements::zeros(dtype, len),
            init: tracked.then(|| vec![false; len]),
            register: false,
        });
        self.allocations.len() - 1
    }

    /// Adds an allocation holding `elements`, fully initialised.
    pub fn adopt(&mut self, name: &str, elements: Elements, space: Side) -> AllocId {
        self.allocations.push(Allocation {
            name: name.to_owned(),
            space,
            elements,
            init: None,
            register: false,
        });
        self.allocations.len() - 1
    }

    /// Records a copy of `elements` elements of `dtype` from `src` to `dst`
    /// allocations, with the linear indices copied (for the lower bound).
    pub(crate) fn count_copy(
        &mut self,
        src: AllocId,
        dst: AllocId,
        dtype: DType,
        indices: &[(i64, i64)],
    ) {
        let bytes = indices.len() as u64 * dtype.size_bytes();
        let (src_space, dst_space) = (self.allocations[src].space, self.allocations[dst].space);
        match (src_space, dst_space) {
            (Side::Host, Side::Device) | (Side::Device, Side::Host) => {
                let to_device = src_space == Side::Host;
                let host = if to_device { src } else { dst };
                let host_len = self.allocations[host].elements.len();
                let name = self.allocations[host].name.clone();
                let entry = self.traffic.entry(name).or_default();
                let seen = self
                    .seen
                    .entry((host, to_device))
                    .or_insert_with(|| vec![false; host_len]);
                let mut fresh = 0u64;
                for &(s, d) in indices {
                    let h = if to_device { s } else { d };
                    if let Some(flag) = usize::try_from(h).ok().and_then(|h| seen.get_mut(h))
                        && !*flag
                    {
                        *flag = true;
                        fresh += 1;
                    }
                }
                let fresh_bytes = fresh * dtype.size_bytes();
                if to_device {
                    entry.to_device.add(bytes);
                    entry.needed_to_device += fresh_bytes;
                } else {
                    entry.to_host.add(bytes);
                    entry.needed_to_host += fresh_bytes;
                }
            }
            (Side::Device, Side::Device) => self.device_to_device.add(bytes),
            (Side::Host, Side::Host) => self.host_to_host.add(bytes),
        }
    }

    /// Element `index` of an allocation, unchecked for space and initialisation.
    pub fn peek(&self, alloc: AllocId, index: usize) -> Option<Value> {
        self.allocations.get(alloc)?.elements.get(index)
    }
}
