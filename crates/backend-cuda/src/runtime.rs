//! Running emitted CUDA units on a real NVIDIA GPU (the `runtime` feature).
//!
//! [`CudaGpu`] is one more [`Device`] beside the emulated GPU: the same
//! entry points (`NAME_init`, `NAME_run`, `NAME_exit`), the same loader and
//! the same child process, with three differences, which [`Nvidia`]
//! supplies to the runtime CUDA and HIP share ([`VendorGpu`]):
//!
//! - the unit is compiled by `nvcc` for the detected device's architecture
//!   (`-arch=sm_XY`) into a shared library linked with cuBLAS and cuSOLVER
//!   where it calls them ([`Toolkit`], [`nvcc_arguments`]);
//! - the child times each call of `NAME_run` with CUDA events on the
//!   default stream (the timer registered here as `cuda`): the emitted
//!   streams are blocking ones, and `NAME_run` waits for its own work
//!   before it returns, so the events bracket everything the run did;
//! - a fault is reported by the CUDA runtime inside the program (status 1
//!   and a message naming the call and the kernel, `docs/codegen.md`), and
//!   since CUDA's errors are sticky for the rest of a process, the child is
//!   what keeps one kernel's fault from failing the next.
//!
//! The driver is opened with cudarc's dynamic loading: this crate builds,
//! and its tests run, on machines without CUDA; [`detect`] then says "no
//! CUDA device (driver not found)". `docs/gpu.md` describes the whole path.

#![allow(unsafe_code)]

use cudarc::driver::{CudaContext, CudaEvent, CudaStream, DriverError, sys};
use sdfg_codegen::TranslationUnit;
use sdfg_exec::vendor::{Vendor, VendorGpu};
use sdfg_exec::{Device, ExecError, GpuRuntime, RunTimer, RuntimeOptions, TimerFactory};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use thiserror::Error;

/// The name of the timer this crate registers with `sdfg-exec`.
pub const TIMER: &str = "cuda";

/// Why the CUDA runtime cannot be used, or what failed in it.
#[derive(Debug, Error)]
pub enum CudaError {
    /// The driver library (`libcuda.so`) is not installed.
    #[error("no CUDA device (driver not found: no libcuda.so on the library path)")]
    NoDriver,
    /// The driver is there, but reports no device.
    #[error("no CUDA device ({call}: {message})")]
    NoDevice {
        /// The driver call that said so.
        call: &'static str,
        /// The driver's error.
        message: String,
    },
    /// A driver call failed.
    #[error("{call} failed: {message}")]
    Driver {
        /// The call, with what it was for.
        call: String,
        /// The driver's error name and description.
        message: String,
    },
    /// No `nvcc` was found.
    #[error(
        "nvcc not found (looked on PATH, in $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin and NVIDIA's PyPI wheels `nvidia/cu13/bin`)"
    )]
    NoCompiler,
}

impl From<CudaError> for ExecError {
    fn from(e: CudaError) -> ExecError {
        match e {
            CudaError::Driver { call, message } => ExecError::Device { call, message },
            other => ExecError::Missing(other.to_string()),
        }
    }
}

/// The driver's name and description of `e` ("CUDA_ERROR_NO_DEVICE: no
/// CUDA-capable device is detected").
pub fn describe_error(e: &DriverError) -> String {
    let name = e
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", e.0));
    match e.error_string() {
        Ok(text) => format!("{name}: {}", text.to_string_lossy()),
        Err(_) => name,
    }
}

/// The error of driver call `call` (with what it was for).
pub fn driver_error(call: impl Into<String>, e: &DriverError) -> CudaError {
    CudaError::Driver {
        call: call.into(),
        message: describe_error(e),
    }
}

/// One NVIDIA GPU, as the driver describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The driver's ordinal.
    pub ordinal: usize,
    /// Its name ("NVIDIA H200").
    pub name: String,
    /// Its compute capability (major, minor).
    pub compute_capability: (i32, i32),
    /// Its memory in bytes.
    pub memory: u64,
}

impl DeviceInfo {
    /// The architecture `nvcc` compiles for (`sm_90` for compute
    /// capability 9.0).
    pub fn arch(&self) -> String {
        let (major, minor) = self.compute_capability;
        format!("sm_{major}{minor}")
    }
}

impl std::fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (major, minor) = self.compute_capability;
        write!(
            f,
            "device {}: {} (compute capability {major}.{minor}, {:.1} GiB)",
            self.ordinal,
            self.name,
            self.memory as f64 / f64::from(1u32 << 30)
        )
    }
}

/// Whether the driver library can be opened. cudarc panics on the first
/// call into a driver it cannot load, so this is asked first.
fn driver_present() -> bool {
    // SAFETY: tries to open each of the driver library's usual names with
    // libloading; opening libcuda runs its initializers, which have no
    // preconditions. Nothing is called.
    unsafe { sys::is_culib_present() }
}

/// The NVIDIA GPUs of this machine. Without a driver, or with a driver that
/// sees no device, the error says so in one line ([`CudaError::NoDriver`],
/// [`CudaError::NoDevice`]).
pub fn detect() -> Result<Vec<DeviceInfo>, CudaError> {
    if !driver_present() {
        return Err(CudaError::NoDriver);
    }
    let count = CudaContext::device_count().map_err(|e| {
        if e.0 == sys::cudaError_enum::CUDA_ERROR_NO_DEVICE {
            CudaError::NoDevice {
                call: "cuDeviceGetCount",
                message: describe_error(&e),
            }
        } else {
            driver_error("cuInit / cuDeviceGetCount", &e)
        }
    })?;
    if count <= 0 {
        return Err(CudaError::NoDevice {
            call: "cuDeviceGetCount",
            message: "0 devices".to_owned(),
        });
    }
    (0..count as usize)
        .map(|ordinal| {
            let ctx = CudaContext::new(ordinal).map_err(|e| {
                driver_error(format!("cuDevicePrimaryCtxRetain (device {ordinal})"), &e)
            })?;
            Ok(DeviceInfo {
                ordinal,
                name: ctx
                    .name()
                    .map_err(|e| driver_error("cuDeviceGetName", &e))?,
                compute_capability: ctx
                    .compute_capability()
                    .map_err(|e| driver_error("cuDeviceGetAttribute (compute capability)", &e))?,
                memory: ctx
                    .total_mem()
                    .map_err(|e| driver_error("cuDeviceTotalMem", &e))?
                    as u64,
            })
        })
        .collect()
}

/// A CUDA toolkit: `nvcc` and where the libraries the emitted code links
/// (cuBLAS, cuSOLVER) are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toolkit {
    /// The compiler.
    pub nvcc: PathBuf,
    /// Directories searched for the vendor libraries, and put on the
    /// library's run path so that it loads without `LD_LIBRARY_PATH`.
    pub library_dirs: Vec<PathBuf>,
}

impl Toolkit {
    /// The toolkit whose `nvcc` is `nvcc`: its libraries are in the
    /// directories a toolkit (`lib64`, `lib`, `targets/x86_64-linux/lib`) or
    /// NVIDIA's wheels (`nvidia/cu13/lib`) keep them in, beside `bin/`.
    pub fn at(nvcc: PathBuf) -> Toolkit {
        let root = nvcc
            .parent()
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let library_dirs = ["lib64", "lib", "targets/x86_64-linux/lib"]
            .iter()
            .map(|d| root.join(d))
            .filter(|d| d.is_dir())
            .collect();
        Toolkit { nvcc, library_dirs }
    }

    /// The first `nvcc` of: `$SDFG_NVCC`, `PATH`, `$CUDA_HOME/bin`,
    /// `$CUDA_PATH/bin`, `/usr/local/cuda/bin`, NVIDIA's PyPI wheels
    /// (`nvidia-cuda-nvcc`, `nvidia/cu13/bin`, found under
    /// `$SDFG_NVIDIA_WHEELS` or by asking `python3`).
    pub fn find() -> Result<Toolkit, CudaError> {
        let env_dir = |var: &str| std::env::var_os(var).map(|d| PathBuf::from(d).join("bin/nvcc"));
        let candidates = [
            std::env::var_os("SDFG_NVCC").map(PathBuf::from),
            sdfg_exec::on_path("nvcc"),
            env_dir("CUDA_HOME"),
            env_dir("CUDA_PATH"),
            Some(PathBuf::from("/usr/local/cuda/bin/nvcc")),
            sdfg_exec::nvidia_wheels().map(|w| w.join("cu13/bin/nvcc")),
        ];
        candidates
            .into_iter()
            .flatten()
            .find(|p| p.is_file())
            .map(Toolkit::at)
            .ok_or(CudaError::NoCompiler)
    }

    /// How the linker is given library `name` (`cublas`): `-lcublas` where
    /// `libcublas.so` is in a library directory, else the versioned file
    /// itself (the wheels ship only `libcublas.so.13`), else `-lcublas` for
    /// the linker's own search.
    fn link(&self, name: &str) -> Vec<OsString> {
        let plain = format!("lib{name}.so");
        if self.library_dirs.iter().any(|d| d.join(&plain).is_file()) {
            return vec![format!("-l{name}").into()];
        }
        let versioned = self.library_dirs.iter().find_map(|d| {
            let mut files: Vec<String> = std::fs::read_dir(d)
                .ok()?
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|f| f.starts_with(&format!("{plain}.")))
                .collect();
            files.sort();
            files.into_iter().next()
        });
        match versioned {
            Some(file) => vec!["-Xlinker".into(), format!("-l:{file}").into()],
            None => vec![format!("-l{name}").into()],
        }
    }
}

/// The libraries a unit links for its vendor calls (`cublas`), as it lists
/// them ([`TranslationUnit::libraries`]) and this backend's dialect names
/// them.
fn vendor_libraries(unit: &TranslationUnit) -> Vec<&'static str> {
    unit.libraries
        .iter()
        .map(|l| l.link(&crate::Cuda))
        .collect()
}

/// The `nvcc` arguments that compile `source` for `arch` (`sm_90`) into
/// the shared library `library`, linked with `libraries` (`cublas`,
/// `cusolver`) from the toolkit, with the toolkit's library directories on
/// its run path.
pub fn nvcc_arguments(
    toolkit: &Toolkit,
    arch: &str,
    source: &Path,
    library: &Path,
    libraries: &[&str],
) -> Vec<OsString> {
    let mut args: Vec<OsString> = [
        "-std=c++17",
        "-O3",
        &format!("-arch={arch}"),
        "-shared",
        "-Xcompiler",
        "-fPIC",
        "-o",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    args.push(library.into());
    args.push(source.into());
    for d in &toolkit.library_dirs {
        let mut l = OsString::from("-L");
        l.push(d);
        args.push(l);
        args.extend(["-Xlinker".into(), "-rpath".into(), "-Xlinker".into()]);
        args.push(d.into());
    }
    for name in libraries {
        args.extend(toolkit.link(name));
    }
    args
}

/// What CUDA supplies to the shared [`VendorGpu`]: the detected device and
/// the toolkit that compiles for it.
#[derive(Clone, Debug)]
pub struct Nvidia {
    /// The device programs run on.
    pub device: DeviceInfo,
    /// The compiler and the vendor libraries' directories.
    pub toolkit: Toolkit,
}

/// A real NVIDIA GPU as a [`Device`].
pub type CudaGpu = VendorGpu<Nvidia>;

/// The first GPU [`detect`] finds, with the [`Toolkit`] found on the
/// machine; its programs run in `runner` (a binary that passes its
/// arguments to `sdfg_exec::child::dispatch` and links this crate with the
/// `runtime` feature, so that the child has the `cuda` timer).
pub fn open(runner: impl Into<PathBuf>) -> Result<CudaGpu, CudaError> {
    let device = detect()?.remove(0);
    let toolkit = Toolkit::find()?;
    Ok(VendorGpu::new(Nvidia { device, toolkit }, runner))
}

impl Vendor for Nvidia {
    fn describe(&self) -> String {
        format!(
            "{} with {} (-arch={})",
            self.device,
            self.toolkit.nvcc.display(),
            self.device.arch()
        )
    }

    fn timer(&self) -> &'static str {
        TIMER
    }

    fn visible_device(&self) -> (&'static str, String) {
        ("CUDA_VISIBLE_DEVICES", self.device.ordinal.to_string())
    }

    fn compile_command(
        &self,
        unit: &TranslationUnit,
        source: &Path,
        library: &Path,
    ) -> (Command, String) {
        let arch = self.device.arch();
        let mut cmd = Command::new(&self.toolkit.nvcc);
        cmd.args(nvcc_arguments(
            &self.toolkit,
            &arch,
            source,
            library,
            &vendor_libraries(unit),
        ));
        (cmd, format!("nvcc (-arch={arch})"))
    }
}

/// Times runs with two CUDA events recorded on the default stream of the
/// primary context (the one the emitted program's runtime calls use).
struct CudaEvents {
    stream: Arc<CudaStream>,
    start: CudaEvent,
    end: CudaEvent,
}

impl CudaEvents {
    fn new() -> Result<CudaEvents, CudaError> {
        if !driver_present() {
            return Err(CudaError::NoDriver);
        }
        let ctx = CudaContext::new(0).map_err(|e| driver_error("cuDevicePrimaryCtxRetain", &e))?;
        let event = || {
            ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(|e| driver_error("cuEventCreate", &e))
        };
        Ok(CudaEvents {
            stream: ctx.default_stream(),
            start: event()?,
            end: event()?,
        })
    }
}

impl RunTimer for CudaEvents {
    fn start(&mut self) -> Result<(), ExecError> {
        self.start
            .record(&self.stream)
            .map_err(|e| driver_error("cuEventRecord (the start of a run)", &e).into())
    }

    fn stop(&mut self) -> Result<f64, ExecError> {
        self.end
            .record(&self.stream)
            .map_err(|e| ExecError::from(driver_error("cuEventRecord (the end of a run)", &e)))?;
        let ms = self
            .start
            .elapsed_ms(&self.end)
            .map_err(|e| ExecError::from(driver_error("cuEventElapsedTime", &e)))?;
        Ok(f64::from(ms))
    }
}

fn make_timer() -> Result<Box<dyn RunTimer>, ExecError> {
    Ok(Box::new(CudaEvents::new()?))
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
    GpuRuntime { backend: "cuda", open: open_registered, detect: detect_registered }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toolkit(root: &Path) -> Toolkit {
        Toolkit {
            nvcc: root.join("bin/nvcc"),
            library_dirs: vec![root.join("lib64")],
        }
    }

    #[test]
    fn the_architecture_comes_from_the_compute_capability() {
        let d = DeviceInfo {
            ordinal: 0,
            name: "NVIDIA H200".to_owned(),
            compute_capability: (9, 0),
            memory: 150_000_000_000,
        };
        assert_eq!(d.arch(), "sm_90");
        let ada = DeviceInfo {
            compute_capability: (8, 9),
            ..d.clone()
        };
        assert_eq!(ada.arch(), "sm_89");
        assert!(
            d.to_string()
                .contains("NVIDIA H200 (compute capability 9.0, 139.7 GiB)")
        );
    }

    #[test]
    fn nvcc_compiles_a_shared_library_for_the_architecture_with_the_vendor_libraries() {
        let tk = toolkit(Path::new("/opt/cuda"));
        let args = nvcc_arguments(
            &tk,
            "sm_90",
            Path::new("/w/gemm.cu"),
            Path::new("/w/libgemm.so"),
            &["cublas", "cusolver"],
        );
        let text: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            text.join(" "),
            "-std=c++17 -O3 -arch=sm_90 -shared -Xcompiler -fPIC -o /w/libgemm.so /w/gemm.cu \
             -L/opt/cuda/lib64 -Xlinker -rpath -Xlinker /opt/cuda/lib64 -lcublas -lcusolver"
        );
        let none = nvcc_arguments(&tk, "sm_80", Path::new("a.cu"), Path::new("liba.so"), &[]);
        assert!(none.iter().any(|a| a == "-arch=sm_80"));
        assert!(!none.iter().any(|a| a.to_string_lossy().starts_with("-lcu")));
    }

    #[test]
    fn a_library_shipped_only_versioned_is_linked_by_its_file_name() {
        let dir = std::env::temp_dir().join(format!("sdfg-cuda-tk-{}", std::process::id()));
        let lib = dir.join("lib");
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(lib.join("libcublas.so.13"), b"").unwrap();
        std::fs::write(lib.join("libcusolver.so"), b"").unwrap();
        let tk = Toolkit::at(dir.join("bin/nvcc"));
        assert_eq!(tk.library_dirs, vec![lib.clone()]);
        assert_eq!(tk.link("cublas"), vec!["-Xlinker", "-l:libcublas.so.13"]);
        assert_eq!(tk.link("cusolver"), vec!["-lcusolver"]);
        // Not there at all: left to the linker's own search.
        assert_eq!(tk.link("cufft"), vec!["-lcufft"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_vendor_libraries_are_those_the_unit_lists_not_those_its_text_names() {
        use sdfg_codegen::VendorLibrary::{Blas, Solver};
        let unit = |libraries| TranslationUnit {
            file_name: "u.cu".to_owned(),
            source: "#include <cublas_v2.h>\n".to_owned(),
            kernels: Vec::new(),
            entry: "u".to_owned(),
            parameters: Vec::new(),
            factorizations: 0,
            cooperative: false,
            libraries,
        };
        assert_eq!(vendor_libraries(&unit(vec![Blas])), vec!["cublas"]);
        assert_eq!(
            vendor_libraries(&unit(vec![Blas, Solver])),
            vec!["cublas", "cusolver"]
        );
        assert!(vendor_libraries(&unit(Vec::new())).is_empty());
    }

    #[test]
    fn driver_errors_name_the_call_and_the_driver_error() {
        let e = CudaError::Driver {
            call: "cuEventRecord (the end of a run)".to_owned(),
            message: "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"
                .to_owned(),
        };
        let exec: ExecError = e.into();
        assert_eq!(
            exec.to_string(),
            "cuEventRecord (the end of a run) failed: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"
        );
        assert!(matches!(exec, ExecError::Device { .. }));
        // Not having a device is a missing tool, not a failure.
        let missing: ExecError = CudaError::NoDriver.into();
        assert!(matches!(missing, ExecError::Missing(_)));
        assert_eq!(
            missing.to_string(),
            "no CUDA device (driver not found: no libcuda.so on the library path)"
        );
    }

    /// On a machine without the driver (CI), detection says so in one line;
    /// on one with a GPU, it lists the devices. Either way it never panics.
    #[test]
    fn detection_lists_devices_or_says_why_there_are_none() {
        match detect() {
            Ok(devices) => {
                assert!(!devices.is_empty());
                for d in &devices {
                    assert!(d.compute_capability.0 >= 3, "{d}");
                    assert!(d.memory > 0, "{d}");
                }
            }
            Err(e @ (CudaError::NoDriver | CudaError::NoDevice { .. })) => {
                let text = e.to_string();
                assert!(text.starts_with("no CUDA device ("), "{text}");
                assert!(!text.contains('\n'), "{text}");
                if !driver_present() {
                    assert!(matches!(e, CudaError::NoDriver));
                    assert!(open("runner").is_err());
                    assert!(make_timer().is_err());
                }
            }
            Err(other) => panic!("detection failed: {other}"),
        }
    }

    #[test]
    fn the_cuda_timer_is_registered_with_the_exec_crate() {
        let names: Vec<&str> = inventory::iter::<TimerFactory>
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert!(names.contains(&TIMER), "{names:?}");
        if !driver_present() {
            let e = sdfg_exec::make_timer(Some(TIMER))
                .err()
                .map(|e| e.to_string());
            assert_eq!(
                e.as_deref(),
                Some("no CUDA device (driver not found: no libcuda.so on the library path)")
            );
        }
    }
}
