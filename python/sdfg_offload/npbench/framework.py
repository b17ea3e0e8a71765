"""The NPBench framework class (imported by NPBench, from the shim
:func:`sdfg_offload.npbench.install` writes into its checkout).

It follows NPBench's ``Framework`` protocol as ``DaceFramework`` does for
``dace_gpu``, with this project in place of DaCe's GPU pipeline:

- ``implementations``: the benchmark's ``*_dace.py`` program, unchanged,
  compiled by :func:`sdfg_offload.compile` (one implementation, named
  ``default``);
- ``copy_func``: the arrays on the device before the timed call, as
  ``dace_gpu`` copies them (``cupy.asarray`` and a synchronization) where
  there is a GPU and CuPy, the programs then compiled with
  ``args_on_device=True``; NumPy copies for the emulated GPU;
- ``arg_str``: the inputs by keyword, and those of the benchmark's
  parameters that are the program's symbols (the rest are read off the
  arrays' shapes).

A program's run waits for its own device work before it returns, so the
time NPBench takes around the call is the program's.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Sequence, Tuple

import numpy as np
from npbench.infrastructure.benchmark import Benchmark
from npbench.infrastructure.framework import Framework

import sdfg_offload


def _on_gpu() -> bool:
    """Whether calls run on a GPU with CuPy arrays (else the emulated GPU
    with NumPy arrays)."""
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


class SdfgOffloadFramework(Framework):
    """This project as an NPBench framework (see the module)."""

    def __init__(self, fname: str) -> None:
        super().__init__(fname)
        self.backend = "cuda"
        self.on_gpu = _on_gpu()

    def version(self) -> str:
        return sdfg_offload.__version__

    def copy_func(self) -> Callable:
        if not self.on_gpu:
            return np.copy
        import cupy

        def to_device(array):
            on_device = cupy.asarray(array)
            cupy.cuda.stream.get_current_stream().synchronize()
            return on_device

        return to_device

    def copy_back_func(self) -> Callable:
        if not self.on_gpu:
            return lambda x: x
        import cupy

        return lambda x: cupy.asnumpy(x) if isinstance(x, cupy.ndarray) else x

    def implementations(self, bench: Benchmark) -> Sequence[Tuple[Callable, str]]:
        module_name = "npbench.benchmarks.{r}.{m}_{p}".format(
            r=bench.info["relative_path"].replace("/", "."),
            m=bench.info["module_name"],
            p=self.info.get("postfix", "dace"),
        )
        program = getattr(importlib.import_module(module_name), bench.info["func_name"])
        compiled = sdfg_offload.compile(
            program,
            backend=self.backend,
            device="gpu" if self.on_gpu else "auto",
            args_on_device=self.on_gpu,
        )
        return [(compiled, "default")]

    def arg_str(self, bench: Benchmark, impl: Any = None) -> str:
        inputs = self.args(bench, impl)
        names = bench.info["input_args"]
        symbols = sorted(getattr(impl, "symbols", set()))
        parameters = next(iter(bench.info["parameters"].values()), {})
        given = [s for s in symbols if s in parameters and s not in names]
        return ", ".join(
            [f"{name}={value}" for name, value in zip(names, inputs)] + [f"{s}={s}" for s in given]
        )
