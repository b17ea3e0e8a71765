"""This project as a framework of NPBench (https://github.com/spcl/npbench),
beside ``dace_gpu`` and ``cupy``: the unchanged ``*_dace.py`` programs,
compiled by this package, called with the benchmark's arrays (on the GPU
as CuPy arrays where there is one, as ``dace_gpu`` does; NumPy arrays on
the emulated GPU otherwise) and validated by NPBench against NumPy.

NPBench is a checkout, not a package, and finds its frameworks by name in
its own tree (``framework_info/NAME.json`` names a class that
``npbench.infrastructure`` exports), so :func:`install` writes both into a
checkout::

    python -m sdfg_offload.npbench install PATH/TO/npbench
    cd PATH/TO/npbench
    python run_benchmark.py -b gemm -f sdfg_offload -p S

The framework class itself is :class:`sdfg_offload.npbench.framework.SdfgOffloadFramework`;
the file written into the checkout only imports it, so upgrading this
package upgrades the framework.
"""

from __future__ import annotations

import json
from pathlib import Path

#: The framework's name in NPBench (``-f sdfg_offload``).
NAME = "sdfg_offload"

#: ``framework_info/sdfg_offload.json``: ``postfix`` ``dace`` makes NPBench
#: load the benchmarks' ``*_dace.py`` implementations, unchanged.
FRAMEWORK_INFO = {
    "framework": {
        "simple_name": NAME,
        "full_name": "sdfg-offload (CUDA)",
        "prefix": "so",
        "postfix": "dace",
        "class": "SdfgOffloadFramework",
        "arch": "gpu",
    }
}

#: The module written into ``npbench/infrastructure/``.
SHIM = '''"""NPBench's framework `sdfg_offload` (written by `python -m sdfg_offload.npbench install`)."""
from sdfg_offload.npbench.framework import SdfgOffloadFramework

__all__ = ["SdfgOffloadFramework"]
'''

SHIM_IMPORT = "from .sdfg_offload_framework import *\n"


class NotAnNpbenchCheckout(ValueError):
    """The path given to :func:`install` is no NPBench checkout."""


def install(checkout: str | Path) -> list[Path]:
    """Installs the framework into the NPBench checkout at ``checkout``
    (idempotent): writes ``framework_info/sdfg_offload.json`` and
    ``npbench/infrastructure/sdfg_offload_framework.py``, and makes
    ``npbench/infrastructure/__init__.py`` export the class. Returns the
    files written or changed."""
    root = Path(checkout)
    infrastructure = root / "npbench" / "infrastructure"
    if not (infrastructure / "framework.py").is_file() or not (root / "framework_info").is_dir():
        raise NotAnNpbenchCheckout(
            f"`{root}` is no NPBench checkout (it lacks npbench/infrastructure/framework.py "
            "or framework_info/)"
        )
    changed = []
    info = root / "framework_info" / f"{NAME}.json"
    text = json.dumps(FRAMEWORK_INFO, indent=4) + "\n"
    if not info.exists() or info.read_text() != text:
        info.write_text(text)
        changed.append(info)
    shim = infrastructure / "sdfg_offload_framework.py"
    if not shim.exists() or shim.read_text() != SHIM:
        shim.write_text(SHIM)
        changed.append(shim)
    init = infrastructure / "__init__.py"
    exports = init.read_text()
    if SHIM_IMPORT not in exports:
        init.write_text(exports.rstrip("\n") + "\n" + SHIM_IMPORT)
        changed.append(init)
    return changed
