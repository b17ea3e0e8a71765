"""sdfg_offload: DaCe SDFGs and DaCe-style NumPy programs offloaded to GPUs
(CUDA, HIP) by one generic pass, in process.

- :func:`offload` / :func:`offload_json`: a DaCe SDFG offloaded (exactly what
  ``sdfgc offload`` writes), as a ``dace.SDFG`` or as JSON text;
- :class:`OffloadToAccelerator`: the same as a DaCe pass, for ``Pipeline``s
  and in place of ``sdfg.apply_gpu_transformations()`` (needs DaCe);
- :func:`compile` and :func:`program`: programs compiled and called on
  NumPy and CuPy arrays, on the GPU or the emulated GPU;
- :mod:`sdfg_offload.errors`: one exception class per stage.

Importing this package needs NumPy only; DaCe-facing functions say so when
DaCe is missing.
"""

from . import errors
from ._native import __version__
from .offload import Report, offload, offload_json
from .program import DeviceArray, Program, compile, program

__all__ = [
    "DeviceArray",
    "OffloadToAccelerator",
    "Program",
    "Report",
    "__version__",
    "compile",
    "errors",
    "offload",
    "offload_json",
    "program",
]


def __getattr__(name: str):
    # The DaCe pass imports DaCe, which this package does not need otherwise.
    if name == "OffloadToAccelerator":
        from .dace_pass import OffloadToAccelerator

        return OffloadToAccelerator
    raise AttributeError(f"module 'sdfg_offload' has no attribute {name!r}")
