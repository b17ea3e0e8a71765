"""Compile and call: every corpus kernel, compiled by the package and
called with NumPy arrays on this machine's device (the emulated GPU
without a GPU), gives NumPy's answer within the kernel's tolerance; and a
call behaves as a DaCe program's (symbols from shapes, arrays written in
place, returns, one ``init`` per set of symbols, device arrays passed
without a copy)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import reference
import sdfg_offload
from conftest import TOOLS, corpus_kernels, kernel_id


def close(expected: np.ndarray, actual, tolerance: dict) -> bool:
    """The corpus's rule (docs/corpus.md): integers and booleans exactly,
    numbers within ``rtol``/``atol`` or a relative Frobenius error below
    ``norm_error``."""
    actual = np.asarray(actual)
    if actual.shape != expected.shape:
        # (`reference.py` writes a scalar as shape (1,), as DaCe returns it.)
        return False
    if expected.dtype.kind in "biu":
        return np.array_equal(actual, expected)
    if np.allclose(expected, actual, rtol=tolerance["rtol"], atol=tolerance["atol"], equal_nan=True):
        return True
    norm = np.linalg.norm(expected)
    return bool(norm > 0 and np.linalg.norm(actual - expected) / norm <= tolerance["norm_error"])


def numpy_reference(kernel, out):
    """NumPy's inputs and outputs for the kernel's `test` preset, by
    ``corpus/tools/reference.py`` in a process of its own: run as a script,
    it finds the stand-in ``dace`` beside it first, so that programs
    calling programs run as NumPy code (the real DaCe would compile them)."""
    subprocess.run(
        [sys.executable, str(TOOLS / "reference.py"), str(kernel), "--preset", "test", "--out", str(out)],
        check=True,
        capture_output=True,
    )
    inputs = {p.stem: np.load(p) for p in (out / "inputs").glob("*.npy")}
    outputs = {p.stem: np.load(p) for p in out.glob("*.npy")}
    return inputs, outputs


@pytest.mark.parametrize("device", ["auto", "sim"])
@pytest.mark.parametrize("kernel", corpus_kernels(), ids=kernel_id)
def test_every_corpus_kernel_gives_numpys_answer(kernel, device, tmp_path):
    inputs, expected = numpy_reference(kernel, tmp_path)
    bench = reference.read_benchmark(reference.load_module(str(kernel)), str(kernel))
    preset = dict(bench["presets"]["test"])
    scalars = dict(bench.get("scalars", {}))
    scalars.update(preset.pop("scalars", {}))
    program = sdfg_offload.compile(kernel, device=device)
    arrays = {name: value.copy() for name, value in inputs.items()}
    symbols = {k: v for k, v in preset.items() if k in program.symbols}
    result = program(**arrays, **scalars, **symbols)
    returned = result if isinstance(result, tuple) else (result,)
    tolerance = {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5, **bench.get("tolerance", {})}
    for name, want in expected.items():
        if name in arrays:
            got = arrays[name]
        elif name == "__return":
            got = result
        else:
            got = returned[int(name.rsplit("_", 1)[1])]
        if isinstance(got, sdfg_offload.DeviceArray):
            got = got.get()
        assert close(want, got, tolerance), f"{name}: {np.asarray(got).ravel()[:6]} vs NumPy's {want.ravel()[:6]}"




def write(tmp_path, text: str):
    path = tmp_path / "program.py"
    path.write_text(text)
    return path


def test_symbols_come_from_shapes_and_init_runs_once_per_set_of_them(tmp_path):
    program = sdfg_offload.compile(write(tmp_path, (
        "import dace\nN = dace.symbol('N')\n\n"
        "@dace.program\ndef scale(a: dace.float64, x: dace.float64[N]):\n    return a * x\n"
    )))
    for n in (3, 3, 5, 3):
        x = np.arange(n, dtype=np.float64)
        assert np.array_equal(program(2.0, x), 2.0 * x)
    assert program.states == 2
    # Keywords, and a symbol given that the shapes contradict.
    assert np.array_equal(program(x=np.ones(2), a=3), np.full(2, 3.0))
    with pytest.raises(sdfg_offload.errors.ArgumentError, match="dimension 0 of `x` gives 2, but it is 4"):
        program(1.0, np.ones(2), N=4)


def test_the_decorator_compiles_the_function_at_its_first_call():
    from decorated import axpy, pair

    x, y = np.arange(4.0), np.ones(4)
    axpy(2.0, x, y)
    assert np.array_equal(y, 2.0 * x + 1.0)
    s, d = pair(x, y)
    assert np.array_equal(s, x + y) and np.array_equal(d, x - y)
    assert isinstance(axpy.compile(), sdfg_offload.Program)


def test_device_arrays_are_passed_without_a_copy(tmp_path):
    program = sdfg_offload.compile(write(tmp_path, (
        "import dace\nN = dace.symbol('N')\n\n"
        "@dace.program\ndef double(x: dace.float64[N], y: dace.float64[N]):\n    y[:] = 2.0 * x\n"
    )), device="emulated", args_on_device=True)
    x = program.to_device(np.arange(6.0))
    y = program.to_device(np.zeros(6))
    assert "__cuda_array_interface__" in dir(x)
    program.reset_counts()
    program(x, y)
    counts = program.counts()
    assert counts["host_to_device"]["count"] == 0 and counts["device_to_host"]["count"] == 0, counts
    assert np.array_equal(y.get(), 2.0 * np.arange(6.0))
    # Host arrays still work: copied there and back around the run.
    z = np.zeros(6)
    program(np.arange(6.0), z)
    assert np.array_equal(z, 2.0 * np.arange(6.0))


class DlpackOnly:
    """An array known only by DLPack (as a PyTorch or JAX tensor is)."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, stream=None, **kwargs):
        return self._array.__dlpack__()

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_dlpack_producers_are_taken_without_a_copy_on_the_host_and_the_device(tmp_path):
    source = write(tmp_path, (
        "import dace\nN = dace.symbol('N')\n\n"
        "@dace.program\ndef double(x: dace.float64[N], y: dace.float64[N]):\n    y[:] = 2.0 * x\n"
    ))
    host = sdfg_offload.compile(source, device="emulated")
    y = np.zeros(5)
    host(DlpackOnly(np.arange(5.0)), DlpackOnly(y))
    assert np.array_equal(y, 2.0 * np.arange(5.0)), "written in place through DLPack"
    device = sdfg_offload.compile(source, device="emulated", args_on_device=True)
    x, out = device.to_device(np.arange(5.0)), device.to_device(np.zeros(5))
    device.reset_counts()
    device(DlpackOnly(x), DlpackOnly(out))
    counts = device.counts()
    assert counts["host_to_device"]["count"] == 0 and counts["device_to_host"]["count"] == 0, counts
    assert np.array_equal(out.get(), 2.0 * np.arange(5.0))


def test_programs_of_one_process_share_one_device(tmp_path):
    # As programs share one device context on a GPU, every emulated unit in
    # a process shares one emulated GPU: a device array made for one
    # program is device memory for another.
    make = lambda name, body: sdfg_offload.compile(write(tmp_path / name, (  # noqa: E731
        "import dace\nN = dace.symbol('N')\n\n"
        f"@dace.program\ndef f(x: dace.float64[N], y: dace.float64[N]):\n    {body}\n"
    )), device="emulated", args_on_device=True)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    double, increment = make("a", "y[:] = 2.0 * x"), make("b", "y[:] = x + 1.0")
    x, y, z = double.to_device(np.arange(4.0)), double.to_device(np.zeros(4)), double.to_device(np.zeros(4))
    double(x, y)
    increment(y, z)
    assert np.array_equal(z.get(), 2.0 * np.arange(4.0) + 1.0)
