//! What the emitter's tests share: a program compiled from DaCe-style
//! Python, and its unit for a dialect as the pipeline makes it.

#![allow(dead_code)] // Each test crate uses its own part of this module.

use sdfg_codegen::{Dialect, TranslationUnit, emit};
use sdfg_ir::Sdfg;
use sdfg_passes::{Options, offload};

/// The program `f` of the Python module `source`.
pub(crate) fn program(source: &str) -> Sdfg {
    let module = sdfg_frontend::Module::parse("test.py", source).unwrap();
    module
        .compile("f")
        .unwrap_or_else(|e| panic!("{e}\n{source}"))
}

/// The translation unit of `sdfg` for `d`: offloaded, library nodes lowered
/// (or kept for `d`'s vendor libraries), emitted.
pub(crate) fn emitted(sdfg: &Sdfg, d: &dyn Dialect) -> TranslationUnit {
    let (mut out, _) = offload(sdfg, d, &Options::default()).unwrap();
    sdfg_passes::lower_library_nodes(&mut out, d).unwrap();
    emit(&out, d).unwrap()
}

/// A time loop of two 1-D stencils: two kernels, launched per iteration.
pub(crate) const STENCIL: &str = "import dace as dc\nN = dc.symbol('N')\nT = dc.symbol('T')\n\n@dc.program\ndef f(A: dc.float64[N], B: dc.float64[N]):\n    for t in range(T):\n        B[1:-1] = 0.5 * (A[:-2] + A[2:])\n        A[1:-1] = 0.5 * (B[:-2] + B[2:])\n";
