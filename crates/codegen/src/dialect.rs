//! The parts a [`Dialect`](crate::Dialect) is made of.
//!
//! As cubecl's C++ compiler splits its dialect into sub-traits, the
//! emitter's dialect is the sum of four parts, each a supertrait of
//! [`Dialect`](crate::Dialect) and each a seam where GPU programming
//! dialects differ:
//!
//! - [`DialectKernel`]: the syntax of kernels and their builtins (the
//!   kernel and block-shared qualifiers, thread and block indices, the
//!   address space of a kernel's pointer parameters, the warp shuffle);
//! - [`DialectMemory`]: the host's runtime API (its names, copies,
//!   launches and the templates behind them, the multiprocessor count);
//! - [`DialectSync`]: barriers and atomics (the block barrier, the
//!   grid-wide barrier where there is one, atomic updates);
//! - [`DialectIncludes`]: the headers and the vendor libraries.
//!
//! CUDA and HIP are nearly one dialect: the parts' provided methods write
//! the CUDA-family form (from [`DialectMemory::api_prefix`] where a name
//! differs), so that their backends implement only what is named
//! differently. A dialect of another family (OpenCL C: address-space
//! qualifiers, C kernels without templates, launches through a host API
//! that sets arguments one by one, no grid-wide barrier) overrides the
//! provided methods instead of the emitter learning about it.

use crate::{Blas, Solver};
use sdfg_accelerator::CopyKind;

/// One axis of a grid or of a block, as the index builtins name them.
///
/// The emitter maps a map's innermost dimension to `X`, as the
/// dialects' coalescing wants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    /// The fastest-varying axis.
    X,
    /// The middle axis.
    Y,
    /// The slowest-varying axis.
    Z,
}

impl Axis {
    /// The axes, fastest-varying first, for loops over them.
    pub const ALL: [Axis; 3] = [Axis::X, Axis::Y, Axis::Z];

    /// The axis's letter (`"x"`), as CUDA's builtin members spell it.
    pub fn letter(self) -> &'static str {
        match self {
            Axis::X => "x",
            Axis::Y => "y",
            Axis::Z => "z",
        }
    }

    /// The axis's number (`0` for `X`), as OpenCL's `get_local_id(0)`
    /// takes it.
    pub fn number(self) -> usize {
        match self {
            Axis::X => 0,
            Axis::Y => 1,
            Axis::Z => 2,
        }
    }
}

/// The syntax of kernels: how a kernel, its shared memory and its
/// parameters are declared, and how a thread finds itself in the grid.
///
/// Separate from the host API because a kernel compiler (NVRTC, an OpenCL
/// driver) sees only this part of the unit.
pub trait DialectKernel {
    /// The qualifier that makes a function a kernel (`"__global__"`;
    /// OpenCL's `"__kernel"`).
    fn kernel_qualifier(&self) -> &'static str {
        "__global__"
    }

    /// The qualifier of an array every thread of a block shares
    /// (`"__shared__"`; OpenCL's `"__local"`).
    fn shared_qualifier(&self) -> &'static str {
        "__shared__"
    }

    /// The address-space qualifier of a kernel's pointer parameter, with a
    /// trailing space where there is one: empty for CUDA and HIP, whose
    /// pointers are generic; OpenCL needs `"__global "`.
    fn pointer_address_space(&self) -> &'static str {
        ""
    }

    /// The qualifier that promises a pointer parameter aliases no other
    /// (`"__restrict__"`; C99's `"restrict"` in OpenCL C).
    fn restrict_qualifier(&self) -> &'static str {
        "__restrict__"
    }

    /// The thread's index in its block along `axis` (`"threadIdx.x"`).
    fn thread_index(&self, axis: Axis) -> String {
        format!("threadIdx.{}", axis.letter())
    }

    /// The block's index in the grid along `axis` (`"blockIdx.x"`).
    fn block_index(&self, axis: Axis) -> String {
        format!("blockIdx.{}", axis.letter())
    }

    /// The threads of a block along `axis` (`"blockDim.x"`).
    fn block_size(&self, axis: Axis) -> String {
        format!("blockDim.{}", axis.letter())
    }

    /// The blocks of the grid along `axis` (`"gridDim.x"`).
    fn grid_size(&self, axis: Axis) -> String {
        format!("gridDim.{}", axis.letter())
    }

    /// The dialect's warp shuffle "down" of a value `v` by `d` lanes, over a
    /// whole warp, as a C++ expression in `v` and `d`: the building block of
    /// the prelude's block reductions (CUDA's `__shfl_down_sync` takes a lane
    /// mask, HIP's `__shfl_down` does not).
    fn shuffle_down(&self) -> &'static str;
}

/// Memory the host allocates through the runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Memory {
    /// Device memory (`cudaMalloc`).
    Device,
    /// Page-locked host memory, which copies read and write
    /// asynchronously (`cudaMallocHost`).
    PinnedHost,
}

/// One pitched two-dimensional copy: `height` rows of `width` bytes,
/// consecutive rows `dst_pitch` and `src_pitch` bytes apart, each a C++
/// expression.
///
/// A struct rather than arguments because the runtimes' calls take them
/// in different orders.
#[derive(Clone, Copy, Debug)]
pub struct PitchedCopy<'a> {
    /// The first destination byte (a pointer expression).
    pub dst: &'a str,
    /// Bytes between consecutive destination rows.
    pub dst_pitch: &'a str,
    /// The first source byte (a pointer expression).
    pub src: &'a str,
    /// Bytes between consecutive source rows.
    pub src_pitch: &'a str,
    /// Bytes per row.
    pub width: &'a str,
    /// Rows.
    pub height: &'a str,
    /// Between which memories it copies.
    pub kind: CopyKind,
    /// The stream it is queued on.
    pub stream: &'a str,
}

/// How a kernel's launch sizes its grid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LaunchGrid {
    /// Blocks per axis (fastest-varying first), each a C++ expression
    /// already clamped to the accelerator's limits.
    Blocks(Vec<String>),
    /// As many blocks as can be resident on the device at once (the
    /// occupancy of the kernel at its block size, times the
    /// multiprocessors), as a cooperative launch requires.
    Resident,
}

/// A kernel launch, decided from the IR before it is printed: which
/// kernel, on how many blocks of how many threads, with what arguments.
///
/// The emitter decides it; [`DialectMemory::launch`] prints it, so that a
/// dialect whose host launches kernels otherwise (OpenCL's argument
/// setting and `clEnqueueNDRangeKernel`) changes the printing only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchPlan {
    /// The kernel's name.
    pub kernel: String,
    /// The grid.
    pub grid: LaunchGrid,
    /// Threads per block, per axis (fastest-varying first), as C++
    /// expressions.
    pub block: Vec<String>,
    /// Bytes of dynamically sized shared memory (a C++ expression; the
    /// emitter's shared arrays are sized statically, so `"0"`).
    pub shared_bytes: String,
    /// Whether the launch is cooperative: the grid waits for itself at
    /// grid-wide barriers, so all its blocks must be resident at once.
    pub cooperative: bool,
    /// Whether the kernel's threads wait for each other at block barriers,
    /// which a runtime that runs threads itself (the emulated GPU) must
    /// know before the launch.
    pub synchronizing: bool,
    /// The arguments, in the kernel's parameter order, as C++ expressions
    /// of the host code.
    pub arguments: Vec<String>,
    /// Conditions under which the kernel runs at all (every map dimension
    /// non-empty), as C++ expressions; empty: always.
    pub guard: Vec<String>,
}

/// The host's runtime API: its names, copies and kernel launches.
///
/// Separate from the kernel syntax because the host part of a unit
/// compiles on its own (`-DSDFG_HOST_ONLY`) against the runtime alone.
pub trait DialectMemory {
    /// The prefix of runtime API names and types (`"cuda"`: `cudaMalloc`,
    /// `cudaStream_t`, `cudaMemcpyHostToDevice`).
    fn api_prefix(&self) -> &'static str;

    /// The device attribute giving the number of multiprocessors (compute
    /// units), which with the occupancy API sizes a persistent kernel's
    /// grid to what can be resident at once (`cudaDevAttrMultiProcessorCount`).
    fn multiprocessor_count_attribute(&self) -> &'static str;

    /// The runtime API's `name` (`"Malloc"` gives `"cudaMalloc"`): the
    /// CUDA family names its functions, types and constants alike.
    fn api(&self, name: &str) -> String {
        format!("{}{name}", self.api_prefix())
    }

    /// The type of the unit's stream, which orders its copies, kernels and
    /// vendor calls (`"cudaStream_t"`).
    fn stream_type(&self) -> String {
        self.api("Stream_t")
    }

    /// The type of the event a state records after its copies back to the
    /// host, to wait for them (`"cudaEvent_t"`).
    fn event_type(&self) -> String {
        self.api("Event_t")
    }

    /// The call that allocates `bytes` of `memory` into the pointer at
    /// `address` (a `void**` expression), without its check.
    fn allocate(&self, memory: Memory, address: &str, bytes: &str) -> String {
        let f = match memory {
            Memory::Device => "Malloc",
            Memory::PinnedHost => "MallocHost",
        };
        format!("{}({address}, {bytes})", self.api(f))
    }

    /// The call that releases `pointer`, allocated as `memory`, without
    /// its check.
    fn release(&self, memory: Memory, pointer: &str) -> String {
        let f = match memory {
            Memory::Device => "Free",
            Memory::PinnedHost => "FreeHost",
        };
        format!("{}({pointer})", self.api(f))
    }

    /// The call that waits for everything queued on `stream`, without its
    /// check.
    fn synchronize(&self, stream: &str) -> String {
        format!("{}({stream})", self.api("StreamSynchronize"))
    }

    /// The call that records `event` after what is queued on `stream` so
    /// far, without its check.
    fn record_event(&self, event: &str, stream: &str) -> String {
        format!("{}({event}, {stream})", self.api("EventRecord"))
    }

    /// The call that waits for `event`, without its check.
    fn wait_event(&self, event: &str) -> String {
        format!("{}({event})", self.api("EventSynchronize"))
    }

    /// The runtime's constant for a copy of `kind`
    /// (`"cudaMemcpyDeviceToHost"`).
    fn copy_kind(&self, kind: CopyKind) -> String {
        self.api(match kind {
            CopyKind::HostToDevice => "MemcpyHostToDevice",
            CopyKind::DeviceToHost => "MemcpyDeviceToHost",
            CopyKind::DeviceToDevice => "MemcpyDeviceToDevice",
            CopyKind::HostToHost => "MemcpyHostToHost",
        })
    }

    /// The call that queues a copy of `bytes` from `src` to `dst` on
    /// `stream` (each a C++ expression), without its check.
    fn copy_async(
        &self,
        dst: &str,
        src: &str,
        bytes: &str,
        kind: CopyKind,
        stream: &str,
    ) -> String {
        format!(
            "{}({dst}, {src}, {bytes}, {}, {stream})",
            self.api("MemcpyAsync"),
            self.copy_kind(kind)
        )
    }

    /// The call that queues a pitched two-dimensional copy, without its
    /// check.
    fn copy_2d_async(&self, c: &PitchedCopy<'_>) -> String {
        format!(
            "{}({}, {}, {}, {}, {}, {}, {}, {})",
            self.api("Memcpy2DAsync"),
            c.dst,
            c.dst_pitch,
            c.src,
            c.src_pitch,
            c.width,
            c.height,
            self.copy_kind(c.kind),
            c.stream
        )
    }

    /// The definitions launches go through, for the unit whose entry point
    /// is `entry`: the error check `SDFG_CHECK`, the typed launch
    /// `SDFG_LAUNCH` (and, where `cooperative`, `SDFG_LAUNCH_COOPERATIVE`)
    /// with the checked forms `SDFG_KERNEL` and `SDFG_COOPERATIVE_KERNEL`,
    /// and `SDFG_SYNCHRONIZING`. The CUDA family launches through
    /// `LaunchKernel` with the arguments converted to the kernel's
    /// parameter types by a C++ template; a runtime that runs kernels
    /// itself (the emulated GPU) defines `SDFG_LAUNCH` first.
    fn launch_support(&self, entry: &str, cooperative: bool) -> String {
        let p = self.api_prefix();
        let mut src = String::new();
        src.push_str(&format!(
            "#define SDFG_CHECK(call) do {{ {p}Error_t sdfg_e = (call); if (sdfg_e != {p}Success) {{ \
             std::fprintf(stderr, \"{entry}: %s failed: %s\\n\", #call, {p}GetErrorString(sdfg_e)); return 1; }} }} while (0)\n"
        ));
        // Launches pass their arguments converted to the kernel's parameter
        // types; a runtime that executes kernels itself (the emulated GPU)
        // defines SDFG_LAUNCH before this point and launches them typed.
        src.push_str(&launch_template(p, "launch", "LaunchKernel", "SDFG_LAUNCH"));
        if cooperative {
            // A persistent kernel's launch: cooperative, so that its grid
            // may wait for itself; a runtime that executes kernels itself
            // defines SDFG_LAUNCH_COOPERATIVE before this point.
            src.push_str(&launch_template(
                p,
                "launch_cooperative",
                "LaunchCooperativeKernel",
                "SDFG_LAUNCH_COOPERATIVE",
            ));
            src.push_str(&checked_launch(
                p,
                entry,
                "SDFG_COOPERATIVE_KERNEL",
                "SDFG_LAUNCH_COOPERATIVE",
            ));
        }
        // A kernel whose threads synchronize is declared so before its
        // launch; only a runtime that runs the threads itself needs to know.
        src.push_str(
            "#if !defined(SDFG_SYNCHRONIZING)\n#define SDFG_SYNCHRONIZING(kernel) ((void)0)\n#endif\n",
        );
        // Every launch is followed by a check that names the kernel, so
        // that a launch error is never reported under the next runtime call.
        src.push_str(&checked_launch(p, entry, "SDFG_KERNEL", "SDFG_LAUNCH"));
        src
    }

    /// The checked launch of `kernel` on one block of one thread with
    /// `arguments`, as one statement (without its semicolon): the prelude's
    /// bookkeeping kernels, which run where the stream has reached them.
    fn single_thread_launch(&self, kernel: &str, arguments: &[&str]) -> String {
        let args: String = arguments.iter().map(|a| format!(", {a}")).collect();
        format!("SDFG_KERNEL({kernel}, dim3(1), dim3(1), 0{args})")
    }

    /// The statements of `plan`'s launch, each line starting with `pad`,
    /// inside a block (`if` its guard) that scopes the grid and block.
    fn launch(&self, plan: &LaunchPlan, pad: &str) -> String {
        let open = if plan.guard.is_empty() {
            format!("{pad}{{\n")
        } else {
            format!("{pad}if ({}) {{\n", plan.guard.join(" && "))
        };
        format!(
            "{open}{}{pad}}}\n",
            self.launch_statements(plan, &format!("{pad}  "))
        )
    }

    /// The statements of `plan`'s launch without a block around them (its
    /// guard ignored), each line starting with `pad`, for code that scopes
    /// them itself: the grid and block as `dim3` (a resident grid through
    /// the occupancy API), the kernel declared synchronizing where it is,
    /// and the checked launch macro.
    fn launch_statements(&self, plan: &LaunchPlan, pad: &str) -> String {
        let p = self.api_prefix();
        let name = &plan.kernel;
        let mut out = String::new();
        match &plan.grid {
            LaunchGrid::Blocks(blocks) => {
                out.push_str(&format!("{pad}dim3 sdfg_grid({});\n", blocks.join(", ")));
            }
            LaunchGrid::Resident => {
                out.push_str(&format!(
                    "{pad}int sdfg_device = 0, sdfg_units = 0, sdfg_resident = 0;\n\
                     {pad}SDFG_CHECK({p}GetDevice(&sdfg_device));\n\
                     {pad}SDFG_CHECK({p}DeviceGetAttribute(&sdfg_units, {attr}, sdfg_device));\n\
                     {pad}SDFG_CHECK({p}OccupancyMaxActiveBlocksPerMultiprocessor(&sdfg_resident, (const void*){name}, {threads}, {shared}));\n\
                     {pad}dim3 sdfg_grid((unsigned)sdfg::imax(1, (int64_t)sdfg_units * sdfg_resident));\n",
                    attr = self.multiprocessor_count_attribute(),
                    threads = plan.block.join(" * "),
                    shared = plan.shared_bytes,
                ));
            }
        }
        out.push_str(&format!(
            "{pad}dim3 sdfg_block({});\n",
            plan.block.join(", ")
        ));
        if plan.synchronizing {
            out.push_str(&format!("{pad}SDFG_SYNCHRONIZING({name});\n"));
        }
        let launch = if plan.cooperative {
            "SDFG_COOPERATIVE_KERNEL"
        } else {
            "SDFG_KERNEL"
        };
        let args: String = plan.arguments.iter().map(|a| format!(", {a}")).collect();
        out.push_str(&format!(
            "{pad}{launch}({name}, sdfg_grid, sdfg_block, {}{args});\n",
            plan.shared_bytes
        ));
        out
    }
}

/// The CUDA-family template `sdfg::{function}` that launches a kernel
/// through the runtime's `{call}` with its arguments converted to the
/// kernel's parameter types, and the macro `{mac}` that names it unless a
/// runtime defined it first.
fn launch_template(p: &str, function: &str, call: &str, mac: &str) -> String {
    format!(
        "#if !defined({mac})\n#include <tuple>\n#include <utility>\nnamespace sdfg {{\n\
         template <class... P, class... A>\n\
         inline {p}Error_t {function}(void (*kernel)(P...), dim3 grid, dim3 block, size_t shared, {p}Stream_t stream, A&&... args) {{\n  \
         std::tuple<P...> typed(std::forward<A>(args)...);\n  \
         return std::apply([&](P&... p) {{ void* ptrs[] = {{(void*)&p..., nullptr}}; \
         return {p}{call}((const void*)kernel, grid, block, ptrs, shared, stream); }}, typed);\n\
         }}\n}}  // namespace sdfg\n\
         #define {mac}(kernel, grid, block, shared, stream, ...) sdfg::{function}(kernel, grid, block, shared, stream, ##__VA_ARGS__)\n\
         #endif\n"
    )
}

/// The macro `{name}` that launches through `{launch}` on the unit's
/// stream and checks both the launch and the kernel's launch error,
/// naming the kernel.
fn checked_launch(p: &str, entry: &str, name: &str, launch: &str) -> String {
    format!(
        "#define {name}(kernel, grid, block, shared, ...) do {{ \
         SDFG_CHECK({launch}(kernel, grid, block, shared, stream, ##__VA_ARGS__)); \
         {p}Error_t sdfg_l = {p}GetLastError(); if (sdfg_l != {p}Success) {{ \
         std::fprintf(stderr, \"{entry}: kernel %s: %s\\n\", #kernel, {p}GetErrorString(sdfg_l)); return 1; }} }} while (0)\n"
    )
}

/// Barriers and atomics: how threads wait for each other and update
/// memory they share.
///
/// Separate because it is where dialects differ in what exists, not only
/// in names: OpenCL has no grid-wide barrier.
pub trait DialectSync {
    /// The statement that makes a block's threads wait for each other,
    /// their writes to shared memory visible (`"__syncthreads()"`, without
    /// the semicolon; OpenCL's `barrier(CLK_LOCAL_MEM_FENCE)`).
    fn block_barrier(&self) -> &'static str {
        "__syncthreads()"
    }

    /// The expression that makes the whole grid of a cooperative launch
    /// wait for itself (cooperative groups' grid sync); `None` where the
    /// dialect has no grid-wide barrier (OpenCL), which then cannot run
    /// persistent kernels.
    fn grid_sync(&self) -> Option<&'static str> {
        Some("cooperative_groups::this_grid().sync()")
    }

    /// The atomic update of `target` (an lvalue) with `value` by the
    /// prelude's atomic `function` (`atomic_add`): the prelude implements
    /// every combination with the dialect's atomics.
    fn atomic_update(&self, function: &str, target: &str, value: &str) -> String {
        format!("sdfg::{function}(&{target}, {value})")
    }
}

/// The headers a unit includes and the vendor libraries it calls.
///
/// Separate because what a unit links beyond the runtime is decided by
/// what it calls, and recorded in the unit
/// ([`TranslationUnit::libraries`](crate::TranslationUnit)).
pub trait DialectIncludes {
    /// The runtime header (`"cuda_runtime.h"`).
    fn runtime_header(&self) -> &'static str;

    /// The header of the dialect's cooperative groups, whose grid sync is
    /// the grid-wide barrier ([`DialectSync::grid_sync`]) of persistent
    /// kernels ([`sdfg_ir::Schedule::DevicePersistent`]).
    fn cooperative_groups_header(&self) -> &'static str;

    /// The BLAS library device-wide GEMM, GEMV and DOT calls go to.
    fn blas(&self) -> Blas;

    /// The dense solver library device-wide Cholesky factorizations and
    /// linear solves go to.
    fn solver(&self) -> Solver;
}
