"""Every stage's refusal is raised as its own exception class with the
stage's message and its location; a call's failures as Python's own
kinds (``TypeError``, ``numpy.linalg.LinAlgError``)."""

from __future__ import annotations

import json
import os
import stat
import subprocess

import numpy as np
import pytest

import sdfg_offload
from sdfg_offload import errors
from conftest import CORPUS, ROOT


def test_text_that_is_no_sdfg_is_a_parse_error():
    with pytest.raises(errors.ImportRefused, match="not JSON"):
        sdfg_offload.offload_json("{ not json")
    with pytest.raises(errors.ParseError, match="not a valid SDFG"):
        sdfg_offload.compile(_write("broken.json", "[1, 2"))


def test_a_dace_element_this_project_refuses_names_its_json_path(tmp_path):
    # A tasklet in a language DaCe has but this project does not read.
    sdfg = json.loads((ROOT / "target/dace-sdfg/own/polybench__gemm.dace.sdfg").read_text())
    tasklets = [
        (k, n) for k, state in enumerate(sdfg["nodes"]) for n in state.get("nodes", [])
        if n.get("type") == "Tasklet"
    ]
    state, tasklet = tasklets[0]
    tasklet["attributes"]["code"]["language"] = "MLIR"
    with pytest.raises(errors.ImportRefused) as e:
        sdfg_offload.offload_json(sdfg)
    assert e.value.path.startswith(f"nodes[{state}].nodes["), e.value.path


def test_a_python_program_outside_the_subset_names_its_line(tmp_path):
    path = _write("bad.py", "import dace\n\n@dace.program\ndef f(A: dace.float64[4]):\n    A[:] = undefined_name\n")
    with pytest.raises(errors.FrontendError) as e:
        sdfg_offload.compile(path)
    assert (e.value.line, e.value.file) == (5, str(path))
    assert "`undefined_name` is not defined" in str(e.value)


def test_an_invalid_sdfg_lists_every_violation():
    out = subprocess.run(
        [str(_sdfgc()), "compile", str(CORPUS / "polybench/gemm.py")], capture_output=True, text=True, check=True
    ).stdout
    sdfg = json.loads(out)
    del sdfg["containers"]["A"]
    with pytest.raises(errors.InvalidSdfg) as e:
        sdfg_offload.compile(_write("invalid.json", json.dumps(sdfg)))
    assert e.value.sdfg == "kernel"
    assert any("container `A` does not exist" in x for x in e.value.errors), e.value.errors


def test_an_unknown_backend_or_device_is_a_value_error():
    gemm = CORPUS / "polybench/gemm.py"
    with pytest.raises(errors.BackendError, match="unknown backend `metal`") as e:
        sdfg_offload.compile(gemm, backend="metal")
    assert isinstance(e.value, ValueError)
    with pytest.raises(errors.UsageError, match="unknown device `tpu`"):
        sdfg_offload.compile(gemm, device="tpu")
    with pytest.raises(errors.UsageError, match="applies to a Python file"):
        sdfg_offload.compile(ROOT / "target/dace-sdfg/own/polybench__gemm.dace.sdfg", "kernel")


def test_a_pass_refusal_names_the_pass():
    with pytest.raises(errors.PassError, match="no map at host level has this label") as e:
        sdfg_offload.offload_json(ROOT / "target/dace-sdfg/own/polybench__gemm.dace.sdfg", host_maps=["no_such_map"])
    assert e.value.pass_name == "offload"


def test_a_compiler_that_rejects_the_unit_and_one_that_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("SDFG_OFFLOAD_CACHE", str(tmp_path / "cache"))
    program = _write("axpy.py", (
        "import dace\nN = dace.symbol('N')\n\n@dace.program\n"
        "def axpy(x: dace.float64[N], y: dace.float64[N]):\n    y[:] = 2.0 * x + y\n"
    ))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "g++"
    fake.write_text("#!/bin/sh\necho 'kernel.cu:1:1: error: this compiler refuses everything' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(errors.CompileError, match="refuses everything") as e:
        sdfg_offload.compile(program, device="emulated")
    assert e.value.compiler.startswith("g++")
    fake.unlink()
    with pytest.raises(errors.ToolMissing, match="g\\+\\+ not found"):
        sdfg_offload.compile(program, device="emulated")


def test_device_gpu_without_one_is_a_missing_tool():
    if _has_gpu():
        pytest.skip("this machine has a GPU")
    with pytest.raises(errors.ToolMissing, match="no GPU"):
        sdfg_offload.compile(CORPUS / "polybench/gemm.py", device="gpu")


def test_arguments_that_do_not_fit_are_type_errors_naming_the_parameter():
    gemm = sdfg_offload.compile(CORPUS / "polybench/gemm.py", device="emulated")
    c, a, b = np.zeros((2, 3)), np.zeros((2, 4)), np.zeros((4, 3))
    cases = [
        (dict(C=c.astype(np.float32), A=a, B=b), "C", "a float32 array for a float64 parameter"),
        (dict(C=c, A=np.zeros((2, 5)), B=b), "NK", "dimension 0 of `B` gives 4, but it is 5"),
        (dict(C=np.asfortranarray(np.zeros((2, 3))), A=a, B=b), "C", "strides"),
        (dict(C=c, A=a), "B", "missing argument `B`"),
        (dict(C=c, A=a, B=b, D=b), "D", "unexpected arguments"),
        (dict(C=c, A=a, B=[[1.0]]), "B", "no array"),
    ]
    for arrays, parameter, message in cases:
        with pytest.raises(errors.ArgumentError, match=message) as e:
            gemm(alpha=1.0, beta=1.0, **arrays)
        assert isinstance(e.value, TypeError)
        assert e.value.parameter == parameter, (e.value.parameter, message)


def test_a_runtime_call_that_fails_is_an_execution_error(tmp_path):
    # The emulated GPU's first device allocation fails (in a process of its
    # own: the emulated GPU is one per process).
    program = _write("double.py", (
        "import dace\nN = dace.symbol('N')\n\n@dace.program\n"
        "def double(x: dace.float64[N], y: dace.float64[N]):\n    y[:] = 2.0 * x\n"
    ))
    code = (
        "import numpy as np, sdfg_offload\n"
        f"p = sdfg_offload.compile({program!r}, device='emulated')\n"
        "try:\n    p(np.ones(3), np.zeros(3))\n"
        "except sdfg_offload.errors.ExecutionError as e:\n    print('raised:', e)\n"
    )
    env = dict(os.environ, SDFG_EMULATION_FAIL_ALLOCATION="1")
    out = subprocess.run([os.sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert "raised: " in out.stdout and "_init` failed" in out.stdout, out.stdout + out.stderr
    assert "cudaMalloc" in out.stderr and "out of memory" in out.stderr, out.stderr


def test_a_failed_factorization_is_numpys_lin_alg_error():
    program = sdfg_offload.compile(CORPUS / "polybench/cholesky2.py", device="emulated")
    not_positive_definite = -np.eye(4)
    with pytest.raises(np.linalg.LinAlgError):
        program(A=not_positive_definite)


def test_dace_facing_functions_say_when_dace_is_missing():
    code = (
        "import sys; sys.modules['dace'] = None\n"
        "import sdfg_offload\n"
        "try:\n    sdfg_offload.offload('{}')\n"
        "except sdfg_offload.errors.DaceMissing as e:\n    print('missing:', e)\n"
    )
    out = subprocess.run([os.sys.executable, "-c", code], capture_output=True, text=True)
    assert "missing: offload() needs DaCe" in out.stdout, out.stderr


def _write(name: str, text: str):
    import tempfile

    path = os.path.join(tempfile.mkdtemp(prefix="sdfg-offload-test-"), name)
    with open(path, "w") as f:
        f.write(text)
    return path


def _sdfgc():
    from conftest import ROOT as root

    given = os.environ.get("SDFGC")
    if given:
        return given
    built = [p for p in (root / "target/release/sdfgc", root / "target/debug/sdfgc") if p.exists()]
    return max(built, key=lambda p: p.stat().st_mtime)


def _has_gpu() -> bool:
    try:
        sdfg_offload.compile(CORPUS / "polybench/gemm.py", device="gpu")
        return True
    except errors.ToolMissing:
        return False
