//! Running emitted HIP units on a real AMD GPU (the `runtime` feature).
//!
//! [`HipGpu`] is the HIP twin of the CUDA backend's `CudaGpu`: the same
//! [`Device`] interface, loader and child process, with `hipcc
//! --offload-arch=<gcnArchName>` compiling the unit into a shared library
//! linked with hipBLAS and hipSOLVER where it calls them, and HIP events on
//! the null stream timing each call of `NAME_run` (the timer registered
//! here as `hip`).
//!
//! The runtime is `libamdhip64`, linked through hip-sys (Debian's
//! `libamdhip64-dev` provides it). On a machine without an AMD GPU it loads
//! and reports `hipErrorNoDevice`, which [`detect`] turns into "no HIP
//! device (...)". Without the library the feature does not build, and the
//! harness, built without it, says so for the `gpu` stage.

#![allow(unsafe_code)]

use hip_sys::hiprt::{self, hipError_t};
use sdfg_codegen::TranslationUnit;
use sdfg_exec::vendor::{Vendor, VendorGpu};
use sdfg_exec::{Device, ExecError, GpuRuntime, RunTimer, RuntimeOptions, TimerFactory};
use std::ffi::{CStr, OsString, c_char, c_int};
use std::path::{Path, PathBuf};
use std::process::Command;
use thiserror::Error;

/// The name of the timer this crate registers with `sdfg-exec`.
pub const TIMER: &str = "hip";

/// Why the HIP runtime cannot be used, or what failed in it.
#[derive(Debug, Error)]
pub enum HipError {
    /// The runtime is there, but reports no device.
    #[error("no HIP device ({call}: {message})")]
    NoDevice {
        /// The runtime call that said so.
        call: &'static str,
        /// The runtime's error.
        message: String,
    },
    /// A runtime call failed.
    #[error("{call} failed: {message}")]
    Runtime {
        /// The call, with what it was for.
        call: String,
        /// The runtime's error name and description.
        message: String,
    },
    /// No `hipcc` was found.
    #[error("hipcc not found (looked on PATH, in $HIP_PATH/bin, $ROCM_PATH/bin and /opt/rocm/bin)")]
    NoCompiler,
}

impl From<HipError> for ExecError {
    fn from(e: HipError) -> ExecError {
        match e {
            HipError::Runtime { call, message } => ExecError::Device { call, message },
            other => ExecError::Missing(other.to_string()),
        }
    }
}

/// The runtime's name and description of `e` ("hipErrorNoDevice: no
/// ROCm-capable device is detected").
pub fn describe_error(e: hipError_t) -> String {
    // SAFETY: both functions return pointers to static NUL-terminated
    // strings of the runtime (never freed), or null.
    let text = |p: *const c_char| {
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    };
    let name = text(unsafe { hiprt::hipGetErrorName(e) }).unwrap_or_else(|| format!("{e:?}"));
    // Some runtimes describe an error by its name alone.
    match text(unsafe { hiprt::hipGetErrorString(e) }) {
        Some(s) if s != name => format!("{name}: {s}"),
        _ => name,
    }
}

/// `Ok` for `hipSuccess`, else the error of call `call`.
fn check(e: hipError_t, call: impl Into<String>) -> Result<(), HipError> {
    if e == hipError_t::hipSuccess {
        Ok(())
    } else {
        Err(HipError::Runtime {
            call: call.into(),
            message: describe_error(e),
        })
    }
}

/// One AMD GPU, as the runtime describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The runtime's ordinal.
    pub ordinal: usize,
    /// Its name ("AMD Instinct MI250X").
    pub name: String,
    /// Its architecture with target features (`gfx90a:sramecc+:xnack-`),
    /// what `--offload-arch` takes.
    pub gcn_arch_name: String,
    /// Its memory in bytes.
    pub memory: u64,
}

impl DeviceInfo {
    /// The architecture `hipcc --offload-arch` compiles for: the whole
    /// `gcnArchName`, target features included (code for `gfx90a:xnack-`
    /// does not load on a device running with XNACK on).
    pub fn arch(&self) -> &str {
        &self.gcn_arch_name
    }
}

impl std::fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "device {}: {} ({}, {:.1} GiB)",
            self.ordinal,
            self.name,
            self.gcn_arch_name,
            self.memory as f64 / f64::from(1u32 << 30)
        )
    }
}

/// A NUL-terminated string in a fixed-size field.
fn field(bytes: &[c_char]) -> String {
    let bytes: Vec<u8> = bytes
        .iter()
        .take_while(|c| **c != 0)
        .map(|c| *c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The device properties, with room to spare: a runtime whose
/// `hipDeviceProp_t` is larger than the bindings' writes into the padding,
/// never past the buffer.
#[repr(C)]
struct Properties {
    prop: hiprt::hipDeviceProp_t,
    _spare: [u8; 4096],
}

/// The AMD GPUs of this machine; with none, the error says so in one line
/// ([`HipError::NoDevice`]).
pub fn detect() -> Result<Vec<DeviceInfo>, HipError> {
    let mut count: c_int = 0;
    // SAFETY: `count` is a valid out-pointer for the call.
    let e = unsafe { hiprt::hipGetDeviceCount(&mut count) };
    if e == hipError_t::hipErrorNoDevice || (e == hipError_t::hipSuccess && count <= 0) {
        return Err(HipError::NoDevice {
            call: "hipGetDeviceCount",
            message: if e == hipError_t::hipSuccess {
                "0 devices".to_owned()
            } else {
                describe_error(e)
            },
        });
    }
    check(e, "hipGetDeviceCount")?;
    (0..count)
        .map(|ordinal| {
            // SAFETY: all-zero bytes are a valid value of the plain C
            // struct; the runtime fills it (and at most the padding after).
            let mut p: Box<Properties> = Box::new(unsafe { std::mem::zeroed() });
            check(
                unsafe { hiprt::hipGetDeviceProperties(&mut p.prop, ordinal) },
                format!("hipGetDeviceProperties (device {ordinal})"),
            )?;
            Ok(DeviceInfo {
                ordinal: ordinal as usize,
                name: field(&p.prop.name),
                gcn_arch_name: field(&p.prop.gcnArchName),
                memory: p.prop.totalGlobalMem as u64,
            })
        })
        .collect()
}

/// The first `hipcc` of: `$SDFG_HIPCC`, `PATH`, `$HIP_PATH/bin`,
/// `$ROCM_PATH/bin`, `/opt/rocm/bin`.
pub fn find_hipcc() -> Result<PathBuf, HipError> {
    let env_dir = |var: &str| std::env::var_os(var).map(|d| PathBuf::from(d).join("bin/hipcc"));
    [
        std::env::var_os("SDFG_HIPCC").map(PathBuf::from),
        sdfg_exec::on_path("hipcc"),
        env_dir("HIP_PATH"),
        env_dir("ROCM_PATH"),
        Some(PathBuf::from("/opt/rocm/bin/hipcc")),
    ]
    .into_iter()
    .flatten()
    .find(|p| p.is_file())
    .ok_or(HipError::NoCompiler)
}

/// The libraries a unit links for its vendor calls (`hipblas`), as it lists
/// them ([`TranslationUnit::libraries`]) and this backend's dialect names
/// them.
fn vendor_libraries(unit: &TranslationUnit) -> Vec<&'static str> {
    unit.libraries.iter().map(|l| l.link(&crate::Hip)).collect()
}

/// The `hipcc` arguments that compile `source` for `arch` (a
/// `gcnArchName`) into the shared library `library`, linked with
/// `libraries` (`hipblas`, `hipsolver`).
pub fn hipcc_arguments(
    arch: &str,
    source: &Path,
    library: &Path,
    libraries: &[&str],
) -> Vec<OsString> {
    let mut args: Vec<OsString> = [
        &format!("--offload-arch={arch}"),
        "-std=c++17",
        "-O3",
        "-shared",
        "-fPIC",
        "-o",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    args.push(library.into());
    args.push(source.into());
    args.extend(libraries.iter().map(|l| OsString::from(format!("-l{l}"))));
    args
}

/// What HIP supplies to the shared [`VendorGpu`]: the detected device and
/// the `hipcc` that compiles for it.
#[derive(Clone, Debug)]
pub struct Amd {
    /// The device programs run on.
    pub device: DeviceInfo,
    /// The compiler.
    pub hipcc: PathBuf,
}

/// A real AMD GPU as a [`Device`].
pub type HipGpu = VendorGpu<Amd>;

/// The first GPU [`detect`] finds, with the `hipcc` [`find_hipcc`] finds;
/// its programs run in `runner` (a binary that passes its arguments to
/// `sdfg_exec::child::dispatch` and links this crate with the `runtime`
/// feature, so that the child has the `hip` timer).
pub fn open(runner: impl Into<PathBuf>) -> Result<HipGpu, HipError> {
    let device = detect()?.remove(0);
    let hipcc = find_hipcc()?;
    Ok(VendorGpu::new(Amd { device, hipcc }, runner))
}

impl Vendor for Amd {
    fn describe(&self) -> String {
        format!(
            "{} with {} (--offload-arch={})",
            self.device,
            self.hipcc.display(),
            self.device.arch()
        )
    }

    fn timer(&self) -> &'static str {
        TIMER
    }

    fn visible_device(&self) -> (&'static str, String) {
        ("HIP_VISIBLE_DEVICES", self.device.ordinal.to_string())
    }

    fn compile_command(
        &self,
        unit: &TranslationUnit,
        source: &Path,
        library: &Path,
    ) -> (Command, String) {
        let mut cmd = Command::new(&self.hipcc);
        cmd.env("HIP_PLATFORM", "amd").args(hipcc_arguments(
            self.device.arch(),
            source,
            library,
            &vendor_libraries(unit),
        ));
        (
            cmd,
            format!("hipcc (--offload-arch={})", self.device.arch()),
        )
    }
}

/// Times runs with two HIP events recorded on the null stream, which waits
/// for the emitted program's (blocking) streams.
struct HipEvents {
    start: hiprt::hipEvent_t,
    end: hiprt::hipEvent_t,
}

impl HipEvents {
    fn new() -> Result<HipEvents, HipError> {
        detect()?;
        // Destroyed in `Drop`, also when the second creation fails.
        let mut events = HipEvents {
            start: std::ptr::null_mut(),
            end: std::ptr::null_mut(),
        };
        // SAFETY: valid out-pointers.
        check(
            unsafe { hiprt::hipEventCreate(&mut events.start) },
            "hipEventCreate",
        )?;
        check(
            unsafe { hiprt::hipEventCreate(&mut events.end) },
            "hipEventCreate",
        )?;
        Ok(events)
    }
}

impl Drop for HipEvents {
    fn drop(&mut self) {
        for e in [self.start, self.end] {
            if !e.is_null() {
                // SAFETY: created by `hipEventCreate`, destroyed once.
                unsafe { hiprt::hipEventDestroy(e) };
            }
        }
    }
}

impl RunTimer for HipEvents {
    fn start(&mut self) -> Result<(), ExecError> {
        // SAFETY: a live event; the null stream.
        check(
            unsafe { hiprt::hipEventRecord(self.start, std::ptr::null_mut()) },
            "hipEventRecord (the start of a run)",
        )
        .map_err(Into::into)
    }

    fn stop(&mut self) -> Result<f64, ExecError> {
        // SAFETY: live events, the null stream, a valid out-pointer.
        check(
            unsafe { hiprt::hipEventRecord(self.end, std::ptr::null_mut()) },
            "hipEventRecord (the end of a run)",
        )?;
        check(
            unsafe { hiprt::hipEventSynchronize(self.end) },
            "hipEventSynchronize",
        )?;
        let mut ms = 0f32;
        check(
            unsafe { hiprt::hipEventElapsedTime(&mut ms, self.start, self.end) },
            "hipEventElapsedTime",
        )?;
        Ok(f64::from(ms))
    }
}

fn make_timer() -> Result<Box<dyn RunTimer>, ExecError> {
    Ok(Box::new(HipEvents::new()?))
}

inventory::submit! {
    TimerFactory { name: TIMER, make: make_timer }
}

/// Opens the first GPU for the registry ([`sdfg_exec::gpu_runtime`]).
fn open_registered(o: &RuntimeOptions) -> Result<Box<dyn Device + Sync>, String> {
    open(&o.runner)
        .map(|g| Box::new(g.timing(o.warmup, o.runs).timeout(o.timeout)) as Box<_>)
        .map_err(|e| e.to_string())
}

/// Lists the GPUs for the registry.
fn detect_registered() -> Result<Vec<String>, String> {
    detect()
        .map(|d| d.iter().map(ToString::to_string).collect())
        .map_err(|e| e.to_string())
}

inventory::submit! {
    GpuRuntime { backend: "hip", open: open_registered, detect: detect_registered }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hipcc_compiles_a_shared_library_for_the_gcn_architecture_with_the_vendor_libraries() {
        let args = hipcc_arguments(
            "gfx90a:sramecc+:xnack-",
            Path::new("/w/gemm.hip"),
            Path::new("/w/libgemm.so"),
            &["hipblas", "hipsolver"],
        );
        let text: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            text.join(" "),
            "--offload-arch=gfx90a:sramecc+:xnack- -std=c++17 -O3 -shared -fPIC -o /w/libgemm.so /w/gemm.hip -lhipblas -lhipsolver"
        );
        let none = hipcc_arguments("gfx942", Path::new("a.hip"), Path::new("liba.so"), &[]);
        assert!(none.iter().any(|a| a == "--offload-arch=gfx942"));
        assert!(
            !none
                .iter()
                .any(|a| a.to_string_lossy().starts_with("-lhip"))
        );
    }

    #[test]
    fn the_vendor_libraries_are_those_the_unit_lists_not_those_its_text_names() {
        use sdfg_codegen::VendorLibrary::{Blas, Solver};
        let unit = |libraries| TranslationUnit {
            file_name: "u.hip".to_owned(),
            source: "#include <hipblas/hipblas.h>\n".to_owned(),
            kernels: Vec::new(),
            entry: "u".to_owned(),
            parameters: Vec::new(),
            factorizations: 0,
            cooperative: false,
            libraries,
        };
        assert_eq!(vendor_libraries(&unit(vec![Blas])), vec!["hipblas"]);
        assert_eq!(
            vendor_libraries(&unit(vec![Blas, Solver])),
            vec!["hipblas", "hipsolver"]
        );
        assert!(vendor_libraries(&unit(Vec::new())).is_empty());
    }

    #[test]
    fn fixed_size_name_fields_end_at_their_nul() {
        let mut bytes = [0 as c_char; 16];
        for (b, c) in bytes.iter_mut().zip(b"gfx90a:xnack-") {
            *b = *c as c_char;
        }
        assert_eq!(field(&bytes), "gfx90a:xnack-");
        assert_eq!(field(&[0; 4]), "");
    }

    #[test]
    fn runtime_errors_name_the_call_and_the_runtimes_error() {
        let e = check(
            hipError_t::hipErrorInvalidValue,
            "hipEventRecord (the end of a run)",
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with("hipEventRecord (the end of a run) failed: hipErrorInvalidValue"),
            "{text}"
        );
        assert!(matches!(ExecError::from(e), ExecError::Device { .. }));
        assert!(check(hipError_t::hipSuccess, "hipInit").is_ok());
        let missing: ExecError = HipError::NoDevice {
            call: "hipGetDeviceCount",
            message: "hipErrorNoDevice: no ROCm-capable device is detected".to_owned(),
        }
        .into();
        assert!(matches!(missing, ExecError::Missing(_)));
    }

    /// On a machine without an AMD GPU (CI), detection says so in one line;
    /// on one with a GPU, it lists the devices with their architectures.
    #[test]
    fn detection_lists_devices_or_says_why_there_are_none() {
        match detect() {
            Ok(devices) => {
                assert!(!devices.is_empty());
                for d in &devices {
                    assert!(d.gcn_arch_name.starts_with("gfx"), "{d}");
                    assert!(d.memory > 0, "{d}");
                }
            }
            Err(e @ HipError::NoDevice { .. }) => {
                let text = e.to_string();
                assert!(
                    text.starts_with("no HIP device (hipGetDeviceCount: "),
                    "{text}"
                );
                assert!(!text.contains('\n'), "{text}");
                assert!(open("runner").is_err());
                let timer = sdfg_exec::make_timer(Some(TIMER))
                    .err()
                    .map(|e| e.to_string());
                assert_eq!(timer, Some(text));
            }
            Err(other) => panic!("detection failed: {other}"),
        }
    }

    #[test]
    fn the_hip_timer_is_registered_with_the_exec_crate() {
        assert!(
            inventory::iter::<TimerFactory>
                .into_iter()
                .any(|f| f.name == TIMER)
        );
    }
}
