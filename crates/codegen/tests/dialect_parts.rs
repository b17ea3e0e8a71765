//! A dialect's parts change what a dialect of another family needs,
//! without the emitter knowing: a dialect that spells kernels as OpenCL C
//! does (`__kernel`, `__global` pointers, `get_local_id(0)`, local-memory
//! barriers, no grid-wide barrier) emits no CUDA spelling in its kernels.

use sdfg_backend_cuda::Cuda;
use sdfg_codegen::Dialect;

mod common;
use common::{STENCIL, emitted, program};

/// A dialect that spells kernels as OpenCL C does, on CUDA's accelerator
/// and host API: what the dialect's parts must be able to change without
/// the emitter knowing.
struct KernelSpelling;

impl sdfg_accelerator::Accelerator for KernelSpelling {
    fn name(&self) -> &'static str {
        "spelling"
    }
    fn warp_size(&self) -> u32 {
        Cuda.warp_size()
    }
    fn default_block(&self) -> [u32; 3] {
        Cuda.default_block()
    }
    fn max_grid(&self) -> [u64; 3] {
        Cuda.max_grid()
    }
    fn vendor_library(&self, op: &sdfg_ir::LibraryOp) -> Option<sdfg_accelerator::VendorCall> {
        Cuda.vendor_library(op)
    }
}

impl sdfg_codegen::DialectKernel for KernelSpelling {
    fn kernel_qualifier(&self) -> &'static str {
        "__kernel"
    }
    fn shared_qualifier(&self) -> &'static str {
        "__local"
    }
    fn pointer_address_space(&self) -> &'static str {
        "__global "
    }
    fn restrict_qualifier(&self) -> &'static str {
        "restrict"
    }
    fn thread_index(&self, axis: sdfg_codegen::Axis) -> String {
        format!("get_local_id({})", axis.number())
    }
    fn block_index(&self, axis: sdfg_codegen::Axis) -> String {
        format!("get_group_id({})", axis.number())
    }
    fn block_size(&self, axis: sdfg_codegen::Axis) -> String {
        format!("get_local_size({})", axis.number())
    }
    fn grid_size(&self, axis: sdfg_codegen::Axis) -> String {
        format!("get_num_groups({})", axis.number())
    }
    fn shuffle_down(&self) -> &'static str {
        Cuda.shuffle_down()
    }
}

impl sdfg_codegen::DialectMemory for KernelSpelling {
    fn api_prefix(&self) -> &'static str {
        Cuda.api_prefix()
    }
    fn multiprocessor_count_attribute(&self) -> &'static str {
        Cuda.multiprocessor_count_attribute()
    }
}

impl sdfg_codegen::DialectSync for KernelSpelling {
    fn block_barrier(&self) -> &'static str {
        "barrier(CLK_LOCAL_MEM_FENCE)"
    }
    fn grid_sync(&self) -> Option<&'static str> {
        None
    }
}

impl sdfg_codegen::DialectIncludes for KernelSpelling {
    fn runtime_header(&self) -> &'static str {
        Cuda.runtime_header()
    }
    fn cooperative_groups_header(&self) -> &'static str {
        Cuda.cooperative_groups_header()
    }
    fn blas(&self) -> sdfg_codegen::Blas {
        Cuda.blas()
    }
    fn solver(&self) -> sdfg_codegen::Solver {
        Cuda.solver()
    }
}

impl Dialect for KernelSpelling {
    fn source_extension(&self) -> &'static str {
        "cl"
    }
}

#[test]
fn the_dialects_parts_spell_kernels_builtins_and_barriers() {
    let d = &KernelSpelling;
    let stencil = emitted(&program(STENCIL), d).source;
    for k in &emitted(&program(STENCIL), d).kernels {
        assert!(
            stencil.contains(&format!("__kernel void {k}(")),
            "{stencil}"
        );
    }
    assert!(
        stencil.contains("__global double* restrict dev_A"),
        "{stencil}"
    );
    assert!(stencil.contains("get_group_id(0) * get_local_size(0) + get_local_id(0)"));
    // Block reductions: shared memory, the block's threads, its barrier.
    let reduce = emitted(
        &program(
            "import dace as dc\nimport numpy as np\nN = dc.symbol('N')\nM = dc.symbol('M')\n\n@dc.program\ndef f(A: dc.float64[N, M], r: dc.float64[N]):\n    r[:] = np.max(A, axis=1)\n",
        ),
        d,
    )
    .source;
    assert!(reduce.contains("barrier(CLK_LOCAL_MEM_FENCE);"), "{reduce}");
    // The kernels' code (the prelude, the same for every dialect, aside).
    for s in [&stencil, &reduce] {
        let prelude = s.find(sdfg_codegen::PRELUDE).unwrap();
        let kernels = &s[prelude + sdfg_codegen::PRELUDE.len()..];
        for cuda in [
            "__global__",
            "__restrict__",
            "threadIdx",
            "blockIdx",
            "blockDim",
            "gridDim",
            "__syncthreads",
            "__shared__",
        ] {
            assert!(!kernels.contains(cuda), "{cuda} in {kernels}");
        }
    }
}
