"""Programs marked with ``sdfg_offload.program`` (read by
``test_compile.py``: the decorator compiles them from this file)."""

import dace

import sdfg_offload

N = dace.symbol("N")


@sdfg_offload.program
def axpy(a: dace.float64, x: dace.float64[N], y: dace.float64[N]):
    y[:] = a * x + y


@sdfg_offload.program(device="emulated")
def pair(x: dace.float64[N], y: dace.float64[N]):
    return x + y, x - y
