"""The NPBench adapter: installed into a checkout (here the small NPBench
of ``mini_npbench.py``, which follows NPBench's framework protocol),
NPBench's runner runs the unchanged ``*_dace.py`` programs through this
project and validates them against NumPy."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import require_dace
from mini_npbench import BENCHMARKS, make_checkout
from sdfg_offload import npbench

# The benchmarks' `*_dace.py` files import DaCe, as NPBench's do.
require_dace()


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    root = make_checkout(tmp_path_factory.mktemp("npbench"))
    changed = npbench.install(root)
    assert {p.name for p in changed} == {"sdfg_offload.json", "sdfg_offload_framework.py", "__init__.py"}
    assert npbench.install(root) == [], "installing again changes nothing"
    return root


@pytest.mark.parametrize("benchmark", sorted(BENCHMARKS))
def test_npbench_runs_the_framework_and_validates_it_against_numpy(checkout, benchmark):
    out = subprocess.run(
        [sys.executable, "run_benchmark.py", benchmark, npbench.NAME, "T"],
        cwd=checkout, capture_output=True, text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "sdfg-offload (CUDA) - default - validation: SUCCESS" in out.stdout, out.stdout + out.stderr


def test_the_install_command_refuses_what_is_no_checkout(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "sdfg_offload.npbench", "install", str(tmp_path)], capture_output=True, text=True
    )
    assert out.returncode == 2 and "is no NPBench checkout" in out.stderr
