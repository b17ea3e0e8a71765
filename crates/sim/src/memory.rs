//! Separate host and device address spaces, and transfer counters.

use crate::value::{Elements, Value};
use sdfg_ir::{DType, Side};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

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
    /// Shared storage: one copy per thread block (not checked for races
    /// between blocks, which each have their own).
    pub shared: bool,
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
    /// While a kernel runs with race checking on: its accesses to global
    /// device memory, per thread.
    pub race: RefCell<Option<RaceLog>>,
    /// The most bytes the run may allocate in all, where limited
    /// ([`crate::Simulator::max_memory`]).
    pub limit: Option<u64>,
    /// The bytes allocated so far (allocations are never freed).
    pub used: u64,
    /// Which memory each side may touch: the run's root SDFG's model,
    /// as the accelerator it was offloaded for answered.
    pub model: sdfg_ir::MemoryModel,
}

/// How two threads of one kernel met at an element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RaceKind {
    /// Both wrote it, not both through the same write-conflict resolution.
    WriteWrite,
    /// One wrote it and another read it: the value read depends on the order.
    ReadWrite,
}

impl std::fmt::Display for RaceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RaceKind::WriteWrite => "two threads write",
            RaceKind::ReadWrite => "one thread writes and another reads",
        })
    }
}

/// The accesses of one kernel launch to global device memory, by thread (an
/// iteration of the kernel's map, which is one thread on a GPU). The
/// simulator runs the threads one after the other, so a conflict between
/// two of them gives a result that a GPU, running them in any order or at
/// once, need not give: a data race. Like compute-sanitizer's racecheck,
/// but for global memory and exact, since every access is seen.
#[derive(Debug, Default)]
pub struct RaceLog {
    /// The thread running now.
    pub thread: u64,
    /// Per element, the thread that wrote it ([`SEVERAL`] for several
    /// combining writers) and whether its writes combined.
    writes: HashMap<(AllocId, usize), (u64, bool)>,
    /// Per element, the thread that read it ([`SEVERAL`] for several).
    reads: HashMap<(AllocId, usize), u64>,
}

/// Several threads.
const SEVERAL: u64 = u64::MAX;

impl RaceLog {
    /// Records a read of element `i`; the race it completes, if any.
    pub fn read(&mut self, alloc: AllocId, i: usize) -> Option<RaceKind> {
        let t = self.thread;
        if self.writes.get(&(alloc, i)).is_some_and(|&(w, _)| w != t) {
            return Some(RaceKind::ReadWrite);
        }
        self.reads
            .entry((alloc, i))
            .and_modify(|r| {
                if *r != t {
                    *r = SEVERAL;
                }
            })
            .or_insert(t);
        None
    }

    /// Records a write of element `i` (`combining` under a write-conflict
    /// resolution); the race it completes, if any.
    pub fn write(&mut self, alloc: AllocId, i: usize, combining: bool) -> Option<RaceKind> {
        let t = self.thread;
        if self.reads.get(&(alloc, i)).is_some_and(|&r| r != t) {
            return Some(RaceKind::ReadWrite);
        }
        match self.writes.get_mut(&(alloc, i)) {
            Some((w, c)) if *w != t => {
                if !(combining && *c) {
                    return Some(RaceKind::WriteWrite);
                }
                *w = SEVERAL;
            }
            Some((_, c)) => *c = *c && combining,
            None => {
                self.writes.insert((alloc, i), (t, combining));
            }
        }
        None
    }
}

impl Memory {
    /// An empty memory that may allocate `limit` bytes in all (`None`: no
    /// limit).
    pub fn with_limit(limit: Option<u64>) -> Memory {
        Memory {
            limit,
            ..Memory::default()
        }
    }

    /// Whether code on `side` may touch `a` (registers aside, which the
    /// callers check where they can occur): memory of its own side, or the
    /// other side's global memory where the memory model allows it.
    pub fn reaches(&self, a: &Allocation, side: Side) -> bool {
        a.space == side
            || (!a.shared
                && match side {
                    Side::Device => self.model.device_touches_host,
                    Side::Host => self.model.host_touches_device,
                })
    }

    /// Records an access of element `i` of `alloc` by the running thread
    /// when a race check is on and the element is global device memory
    /// (registers are private, shared memory is per block); the race it
    /// completes, if any.
    pub fn note_access(&self, alloc: AllocId, i: usize, write: Option<bool>) -> Option<RaceKind> {
        let mut log = self.race.borrow_mut();
        let log = log.as_mut()?;
        let a = &self.allocations[alloc];
        if a.space != Side::Device || a.register || a.shared {
            return None;
        }
        match write {
            None => log.read(alloc, i),
            Some(combining) => log.write(alloc, i, combining),
        }
    }

    /// Reserves `bytes` for the container `name` within the memory limit,
    /// before anything is allocated: a program asking for more than the
    /// machine has is an error naming the container, not an abort.
    pub(crate) fn reserve(&mut self, name: &str, bytes: u64) -> Result<(), crate::SimError> {
        let used = self.used.saturating_add(bytes);
        match self.limit {
            Some(limit) if used > limit => Err(crate::SimError::OutOfMemory {
                container: name.to_owned(),
                bytes,
                used: self.used,
                limit,
            }),
            _ => {
                self.used = used;
                Ok(())
            }
        }
    }

    /// Allocates `len` zeroed elements; `tracked` ones start uninitialised.
    /// Where the machine's allocator refuses the memory (a size the memory
    /// limit did not stop), an error naming the container, never an abort.
    pub fn allocate(
        &mut self,
        name: &str,
        dtype: DType,
        len: usize,
        space: Side,
        tracked: bool,
    ) -> Result<AllocId, crate::SimError> {
        let failed = || crate::SimError::AllocationFailed {
            container: name.to_owned(),
            bytes: (len as u64).saturating_mul(dtype.size_bytes()),
        };
        let elements = Elements::try_zeros(dtype, len).map_err(|_| failed())?;
        let init = if tracked {
            let mut flags = Vec::new();
            flags.try_reserve_exact(len).map_err(|_| failed())?;
            flags.resize(len, false);
            Some(flags)
        } else {
            None
        };
        self.allocations.push(Allocation {
            name: name.to_owned(),
            space,
            elements,
            init,
            register: false,
            shared: false,
        });
        Ok(self.allocations.len() - 1)
    }

    /// Adds an allocation holding `elements`, fully initialised.
    pub fn adopt(&mut self, name: &str, elements: Elements, space: Side) -> AllocId {
        self.allocations.push(Allocation {
            name: name.to_owned(),
            space,
            elements,
            init: None,
            register: false,
            shared: false,
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
        // Registers belong to the code that runs, wherever the state that
        // holds it allocated them (a kernel's private scalars, allocated
        // before its launch): a copy to or from one moves nothing between
        // host and device.
        if self.allocations[src].register || self.allocations[dst].register {
            return;
        }
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
