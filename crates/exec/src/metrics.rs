//! What decides a kernel's speed on a GPU beyond launches and copies, as
//! the emulated GPU measures it (`docs/emulation.md`, "What it measures"):
//! how full each launch keeps the device (waves, against a
//! [`DeviceDescription`]), how many 32-byte sectors its warp-wide global
//! accesses touch against the fewest they could (coalescing), the longest
//! thread's serial work, and the atomics it issues.
//!
//! The emulation counts launch shapes and atomics in every build; sectors
//! and serial work in the counting build ([`crate::EmulatedGpu::metrics`]),
//! which compiles the unit unchanged with [`COUNTING_FLAGS`]. Occupancy is
//! worked out here, from the launch shapes and a device's published
//! figures, so that one run is judged against every device described.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The compiler flags of the counting build: GCC's kernel
/// AddressSanitizer calling a hook per load and store (its address and
/// size; the call site tells accesses apart), without its instrumentation
/// of stacks and globals, and the macro that makes the emulation define
/// the hooks (`sdfg_emulation/metrics.h`).
pub const COUNTING_FLAGS: &[&str] = &[
    "-fsanitize=kernel-address",
    "--param",
    "asan-instrumentation-with-call-threshold=0",
    "--param",
    "asan-stack=0",
    "--param",
    "asan-globals=0",
    "-DSDFG_EMULATION_METRICS",
];

/// What the emulation measured of one kernel's launches in a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelMetrics {
    /// Each launch shape: `[blocks, threads per block, launches]`.
    pub shapes: Vec<[u64; 3]>,
    /// Atomic operations its threads issued (a compare-and-swap loop
    /// counts each try).
    pub atomics: u64,
    /// Warp-wide loads and stores of device global memory (each lane's
    /// k-th execution of one access site, gathered per warp).
    pub warp_accesses: u64,
    /// The 32-byte sectors those touched.
    pub sectors: u64,
    /// The fewest sectors their distinct bytes could occupy: per warp-wide
    /// access, `ceil(bytes / 32)`.
    pub ideal_sectors: u64,
    /// Per launch the most global accesses any one thread made, summed
    /// over the launches: the kernel's part of the run's critical path.
    pub serial_accesses: u64,
    /// Whether sectors and serial work were measured (the counting build,
    /// and no launch over the emulation's cap of kept accesses).
    pub traced: bool,
}

impl KernelMetrics {
    /// Ideal sectors over sectors touched: 1 when every warp-wide access
    /// reads whole sectors; `None` where nothing was traced.
    pub fn coalescing(&self) -> Option<f64> {
        (self.traced && self.sectors > 0).then(|| self.ideal_sectors as f64 / self.sectors as f64)
    }

    /// Launches of all shapes.
    pub fn launches(&self) -> u64 {
        self.shapes.iter().map(|s| s[2]).sum()
    }

    /// The waves of its largest launch (most blocks) on `device`.
    pub fn waves(&self, device: &DeviceDescription) -> f64 {
        self.shapes
            .iter()
            .map(|&[blocks, threads, _]| device.waves(blocks, threads))
            .fold(0.0, f64::max)
    }
}

/// A GPU's figures that decide how many blocks run at once, from its
/// vendor's published documents ([`DeviceDescription::source`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeviceDescription {
    /// The product's name.
    pub name: &'static str,
    /// The model, as runtimes name the device (`"H100"`).
    pub model: &'static str,
    /// Streaming multiprocessors (NVIDIA) or compute units (AMD).
    pub multiprocessors: u64,
    /// Threads resident on one multiprocessor at once.
    pub threads_per_multiprocessor: u64,
    /// Blocks (work-groups) resident on one multiprocessor at once.
    pub blocks_per_multiprocessor: u64,
    /// Threads per warp (wavefront); a block occupies whole warps.
    pub warp: u64,
    /// Peak device memory bandwidth, bytes per second.
    pub memory_bandwidth: f64,
    /// Peak host link bandwidth per direction, bytes per second.
    pub transfer_bandwidth: f64,
    /// Seconds from one kernel launch to the next on one stream, for
    /// kernels too small to matter (an assumption, not a datasheet
    /// figure: to be calibrated on the device by the `gpu` stage).
    pub launch_latency: f64,
    /// Seconds one runtime call (a copy, a synchronization) costs the host
    /// beyond its data (an assumption, as `launch_latency`).
    pub api_latency: f64,
    /// Seconds one dependent global load takes when it misses the caches
    /// (an assumption, as `launch_latency`).
    pub memory_latency: f64,
    /// Where the figures come from.
    pub source: &'static str,
}

/// NVIDIA H100 SXM5.
pub const H100: DeviceDescription = DeviceDescription {
    name: "NVIDIA H100 SXM5",
    model: "H100",
    multiprocessors: 132,
    threads_per_multiprocessor: 2048,
    blocks_per_multiprocessor: 32,
    warp: 32,
    memory_bandwidth: 3.35e12,
    transfer_bandwidth: 64e9,
    launch_latency: 3e-6,
    api_latency: 2e-6,
    memory_latency: 6e-7,
    source: "NVIDIA H100 Tensor Core GPU datasheet: HBM3 at 3.35 TB/s, PCIe Gen5 (128 GB/s both ways); NVIDIA H100 Tensor Core GPU Architecture (whitepaper, 2022): 132 SMs in the SXM5 part; CUDA C++ Programming Guide, compute capability 9.0: 2048 resident threads and 32 resident blocks per SM",
};

/// NVIDIA H200 SXM: the H100's GH100 with HBM3e; the same multiprocessors.
pub const H200: DeviceDescription = DeviceDescription {
    name: "NVIDIA H200 SXM",
    model: "H200",
    multiprocessors: 132,
    threads_per_multiprocessor: 2048,
    blocks_per_multiprocessor: 32,
    warp: 32,
    memory_bandwidth: 4.8e12,
    transfer_bandwidth: 64e9,
    launch_latency: 3e-6,
    api_latency: 2e-6,
    memory_latency: 6e-7,
    source: "NVIDIA H200 Tensor Core GPU datasheet (2024): GH100, 132 SMs, HBM3e at 4.8 TB/s, PCIe Gen5 (128 GB/s both ways); compute capability 9.0 limits as for H100",
};

/// AMD Instinct MI300X.
pub const MI300X: DeviceDescription = DeviceDescription {
    name: "AMD Instinct MI300X",
    model: "MI300X",
    multiprocessors: 304,
    threads_per_multiprocessor: 2048,
    blocks_per_multiprocessor: 16,
    warp: 64,
    memory_bandwidth: 5.3e12,
    transfer_bandwidth: 64e9,
    launch_latency: 5e-6,
    api_latency: 3e-6,
    memory_latency: 8e-7,
    source: "AMD Instinct MI300X data sheet: HBM3 at 5.3 TB/s, PCIe Gen5 x16 (128 GB/s both ways); AMD CDNA 3 Instinct MI300 Series architecture (whitepaper, 2023): 304 CUs, wave64; LLVM AMDGPU (gfx942): 8 waves per SIMD, 4 SIMDs per CU (2048 work-items), at most 16 work-groups of several waves per CU",
};

/// Every described device, for reports.
pub const DEVICES: [DeviceDescription; 3] = [H100, H200, MI300X];

impl DeviceDescription {
    /// Blocks of `threads` threads one multiprocessor holds at once, by
    /// threads (rounded up to whole warps) and by blocks; registers and
    /// shared memory are not counted (the emitter's kernels use little of
    /// either), so this is an upper bound.
    pub fn resident_blocks(&self, threads: u64) -> u64 {
        let warps = threads.div_ceil(self.warp).max(1);
        let by_threads = self.threads_per_multiprocessor / (warps * self.warp);
        by_threads.min(self.blocks_per_multiprocessor)
    }

    /// How many times a launch of `blocks` blocks of `threads` threads
    /// fills the device: `blocks / (multiprocessors * resident blocks)`.
    /// Under 1 leaves multiprocessors idle; 2 and more lets the scheduler
    /// balance; 0 for a block the device cannot hold.
    pub fn waves(&self, blocks: u64, threads: u64) -> f64 {
        let at_once = self.multiprocessors * self.resident_blocks(threads);
        if at_once == 0 {
            return 0.0;
        }
        blocks as f64 / at_once as f64
    }
}

/// What a run would take on a described device, by a roofline-plus-latency
/// model of what the emulation counted (`docs/gpu.md`, "The estimate"):
/// it ranks work and is checked against the measured time wherever the
/// `gpu` stage runs; it never replaces a measurement.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The device described.
    pub device: String,
    /// Kernels: per kernel, its launches' latency plus the larger of its
    /// memory traffic (sectors touched, at the memory bandwidth) and its
    /// serial accesses (at the memory latency).
    pub kernels_ms: f64,
    /// Vendor library calls: their launch latency only (their work is not
    /// counted).
    pub vendor_ms: f64,
    /// Copies: bytes at the host link's bandwidth, plus a runtime call
    /// each.
    pub copies_ms: f64,
    /// Host waits: a runtime call each.
    pub synchronizations_ms: f64,
    /// The sum.
    pub total_ms: f64,
    /// Kernels whose memory traffic was not measured (a plain build, or
    /// over the trace cap): only their launches are counted.
    pub untraced: Vec<String>,
}

impl Estimate {
    /// The estimate of a run that counted `counts`, on `device`.
    pub fn of(counts: &crate::Counts, device: &DeviceDescription) -> Estimate {
        let ms = 1e3;
        let mut untraced = Vec::new();
        let mut kernels = 0.0;
        for (name, m) in &counts.kernel_metrics {
            let launches = m.launches() as f64 * device.launch_latency;
            let work = if m.traced {
                let traffic = m.sectors as f64 * 32.0 / device.memory_bandwidth;
                let serial = m.serial_accesses as f64 * device.memory_latency;
                traffic.max(serial)
            } else {
                untraced.push(name.clone());
                0.0
            };
            kernels += launches + work;
        }
        let vendor = counts.library_operations() as f64 * device.launch_latency;
        // Host and device cross the host link; a copy within the device
        // reads and writes its memory.
        let link = |c: &crate::CopyCount, bandwidth: f64| {
            c.bytes as f64 / bandwidth + c.count as f64 * device.api_latency
        };
        let copies = link(&counts.host_to_device, device.transfer_bandwidth)
            + link(&counts.device_to_host, device.transfer_bandwidth)
            + link(&counts.device_to_device, device.memory_bandwidth / 2.0);
        let synchronizations = counts.synchronizations as f64 * device.api_latency;
        let total = kernels + vendor + copies + synchronizations;
        Estimate {
            device: device.name.to_owned(),
            kernels_ms: kernels * ms,
            vendor_ms: vendor * ms,
            copies_ms: copies * ms,
            synchronizations_ms: synchronizations * ms,
            total_ms: total * ms,
            untraced,
        }
    }
}

/// The description of the device a runtime describes (`"NVIDIA H100 80GB
/// HBM3 (sm_90, ...)"`): the first whose model (`H100`) the text names.
pub fn describing(device: &str) -> Option<&'static DeviceDescription> {
    DEVICES.iter().find(|d| device.contains(d.model))
}

/// A run's metrics over all its kernels.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunMetrics {
    /// Atomics issued.
    pub atomics: u64,
    /// Ideal sectors over sectors touched, over every traced kernel
    /// (`None`: nothing traced).
    pub coalescing: Option<f64>,
    /// The run's critical path in global accesses: every kernel's serial
    /// accesses, summed (launches on one stream run one after another).
    pub serial_accesses: u64,
    /// The least-filled kernel's largest launch, in waves on the H200
    /// ([`H200`]): under 1, a kernel leaves multiprocessors idle however
    /// large the program's input.
    pub min_waves_h200: Option<f64>,
    /// Whether every kernel was traced.
    pub traced: bool,
}

impl RunMetrics {
    /// The summary of `kernels` (the program's kernels; the prelude's
    /// helpers, `sdfg::...`, left out).
    pub fn of(kernels: &BTreeMap<String, KernelMetrics>) -> RunMetrics {
        let program = || {
            kernels
                .iter()
                .filter(|(k, _)| !k.starts_with("sdfg::"))
                .map(|(_, m)| m)
        };
        let (ideal, sectors) = program()
            .filter(|m| m.traced)
            .fold((0, 0), |(i, s), m| (i + m.ideal_sectors, s + m.sectors));
        RunMetrics {
            atomics: program().map(|m| m.atomics).sum(),
            coalescing: (sectors > 0).then(|| ideal as f64 / sectors as f64),
            serial_accesses: program().map(|m| m.serial_accesses).sum(),
            min_waves_h200: program().map(|m| m.waves(&H200)).reduce(f64::min),
            traced: program().all(|m| m.traced),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waves_count_resident_blocks_by_threads_and_by_blocks() {
        // 256 threads: 8 blocks per SM by threads; 132 SMs hold 1,056.
        assert_eq!(H200.resident_blocks(256), 8);
        assert_eq!(H200.waves(2112, 256), 2.0);
        // 32 threads: 64 by threads, but 32 blocks per SM at most.
        assert_eq!(H100.resident_blocks(32), 32);
        // 40 threads take two warps: 32 blocks by threads.
        assert_eq!(H100.resident_blocks(40), 32);
        assert_eq!(H100.resident_blocks(1024), 2);
        // A wavefront of 64: 100 threads are two, 16 blocks per CU.
        assert_eq!(MI300X.resident_blocks(100), 16);
        assert_eq!(MI300X.waves(304 * 16, 100), 1.0);
        // Azimint's 4 blocks of 256 threads at L: 0.004 of a wave.
        assert!(H200.waves(4, 256) < 0.01);
        assert_eq!(H200.waves(1, 4096), 0.0);
    }

    #[test]
    fn the_estimate_adds_latencies_to_the_larger_of_traffic_and_serial_work() {
        let mut counts = crate::Counts {
            launches: 3,
            synchronizations: 1,
            ..Default::default()
        };
        counts.host_to_device = crate::CopyCount {
            count: 2,
            bytes: 64_000_000,
        };
        // Traffic: 1e8 sectors of 32 bytes at 4.8 TB/s, 0.667 ms; serial:
        // 100 accesses, 60 us: the traffic decides.
        counts.kernel_metrics.insert(
            "k".to_owned(),
            KernelMetrics {
                shapes: vec![[1000, 256, 3]],
                sectors: 100_000_000,
                ideal_sectors: 100_000_000,
                serial_accesses: 100,
                traced: true,
                ..Default::default()
            },
        );
        let e = Estimate::of(&counts, &H200);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(
            close(e.kernels_ms, 3.0 * 3e-3 + 3.2e9 / 4.8e12 * 1e3),
            "{e:?}"
        );
        assert!(close(e.copies_ms, 64e6 / 64e9 * 1e3 + 2.0 * 2e-3), "{e:?}");
        assert!(close(e.synchronizations_ms, 2e-3));
        assert!(close(
            e.total_ms,
            e.kernels_ms + e.copies_ms + e.synchronizations_ms
        ));
        assert!(e.untraced.is_empty());
        // A long serial loop decides instead: 1e6 dependent accesses.
        counts.kernel_metrics.get_mut("k").unwrap().serial_accesses = 1_000_000;
        assert!(close(Estimate::of(&counts, &H200).kernels_ms, 9e-3 + 600.0));
        assert_eq!(
            describing("NVIDIA H200 (sm_90, 141 GB)").map(|d| d.name),
            Some(H200.name)
        );
        assert_eq!(
            describing("NVIDIA H100 80GB HBM3").map(|d| d.name),
            Some(H100.name)
        );
        assert_eq!(
            describing("AMD Instinct MI300X (gfx942)").map(|d| d.name),
            Some(MI300X.name)
        );
        assert!(describing("NVIDIA A100").is_none());
    }

    #[test]
    fn a_run_sums_serial_work_and_weighs_coalescing_by_sectors() {
        let m = |sectors, ideal, serial, shapes: Vec<[u64; 3]>| KernelMetrics {
            shapes,
            atomics: 1,
            warp_accesses: 1,
            sectors,
            ideal_sectors: ideal,
            serial_accesses: serial,
            traced: true,
        };
        let kernels = BTreeMap::from([
            ("a".to_owned(), m(10, 10, 5, vec![[2112, 256, 1]])),
            (
                "b".to_owned(),
                m(30, 10, 7, vec![[4, 256, 3], [1056, 256, 1]]),
            ),
            ("sdfg::zero".to_owned(), m(100, 1, 100, vec![[1, 1, 1]])),
        ]);
        let r = RunMetrics::of(&kernels);
        assert_eq!(r.coalescing, Some(0.5));
        assert_eq!(r.serial_accesses, 12);
        assert_eq!(r.atomics, 2);
        assert_eq!(r.min_waves_h200, Some(1.0));
        assert!(r.traced);
        assert_eq!(kernels["b"].launches(), 4);
        assert_eq!(kernels["b"].coalescing(), Some(1.0 / 3.0));
    }
}
