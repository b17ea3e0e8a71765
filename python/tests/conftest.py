"""Shared fixtures of the package's tests: the repository, the corpus,
``sdfgc``, and DaCe's own SDFGs of the corpus kernels.

- ``SDFGC``: the ``sdfgc`` binary to compare with (default: the newest of
  ``target/release/sdfgc`` and ``target/debug/sdfgc``);
- ``SDFG_DACE_SDFGS``: a directory of DaCe's SDFGs of the corpus as
  ``corpus/tools/dace_to_sdfg.py`` writes it (default:
  ``target/dace-sdfg/own`` where ``cargo xtask dace-sdfg`` left it, else
  written into a temporary directory by that script, which needs DaCe).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpus" / "npbench"
TOOLS = ROOT / "corpus" / "tools"
# Appended, not prepended: `corpus/tools/dace` is a stand-in for DaCe that
# must not shadow the real one.
sys.path.append(str(TOOLS))


def require_dace():
    """The real ``dace`` module, or a skip: where DaCe is not installed,
    ``import dace`` finds the corpus's stand-in (``corpus/tools/dace``, on
    the path for ``reference.py``), which has no SDFGs."""
    dace = pytest.importorskip("dace")
    if getattr(dace, "STANDIN", False):
        pytest.skip("DaCe is not installed (only the corpus's stand-in is importable)", allow_module_level=True)
    return dace


def corpus_kernels() -> list[Path]:
    """Every corpus kernel file, in path order."""
    return sorted(p for p in CORPUS.glob("*/*.py"))


def kernel_id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


@pytest.fixture(scope="session")
def sdfgc() -> Path:
    given = os.environ.get("SDFGC")
    if given:
        return Path(given)
    built = [p for p in (ROOT / "target/release/sdfgc", ROOT / "target/debug/sdfgc") if p.exists()]
    if not built:
        pytest.fail("no sdfgc: build it (`cargo build -p sdfg-harness`) or set SDFGC")
    return max(built, key=lambda p: p.stat().st_mtime)


@pytest.fixture(scope="session")
def dace_sdfgs(tmp_path_factory) -> Path:
    given = os.environ.get("SDFG_DACE_SDFGS")
    if given:
        return Path(given)
    left = ROOT / "target/dace-sdfg/own"
    if left.is_dir() and any(left.glob("*.dace.sdfg")):
        return left
    out = tmp_path_factory.mktemp("dace-sdfgs")
    subprocess.run(
        [sys.executable, str(TOOLS / "dace_to_sdfg.py"), str(out), *map(str, corpus_kernels())],
        check=False,
        capture_output=True,
    )
    return out


def dace_sdfg(directory: Path, kernel: Path, variant: str = "") -> Path:
    """The file ``dace_to_sdfg.py`` writes for ``kernel`` (``variant``:
    ``""`` for the lowered SDFG, ``"gpu-storage"``, ...)."""
    suffix = f".dace.{variant}.sdfg" if variant else ".dace.sdfg"
    return directory / f"{kernel.parent.name}__{kernel.stem}{suffix}"
