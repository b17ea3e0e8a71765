"""The cost of ``Program.__call__`` against calling the unit directly, on
the emulated GPU (by hand; docs/python.md has the numbers):

    python python/benches/call_overhead.py

Three ways to run the same unit (an axpy of 16 elements, symbols and
states already made), each the best of five rounds of 20,000 calls:

- ``Program.__call__``: what a user calls (binds arguments, describes
  arrays from their interfaces, infers symbols, checks, runs);
- ``_native.run``: the extension's run on descriptions made once (the
  Rust side's checks and the unit);
- ``NAME_run_packed`` through ctypes: the unit's own entry point.
"""

import ctypes
import os
import tempfile
import timeit

import numpy as np

import sdfg_offload
from sdfg_offload.program import _describe

SOURCE = '''import dace
N = dace.symbol("N")

@dace.program
def axpy(a: dace.float64, x: dace.float64[N], y: dace.float64[N]):
    y[:] = a * x + y
'''


def best(f, n=20000):
    return min(timeit.repeat(f, number=n, repeat=5)) / n * 1e6


def main():
    path = os.path.join(tempfile.mkdtemp(), "axpy.py")
    with open(path, "w") as f:
        f.write(SOURCE)
    program = sdfg_offload.compile(path, device="emulated")
    a, x, y = np.array(2.0), np.ones(16), np.zeros(16)
    program(a, x, y)
    arrays = {"a": a, "x": x, "y": y}
    names = [p[0] for p in program.parameters]
    values = [_describe(arrays[n], n) if n in arrays else 16 for n in names]
    native = program._native

    library = ctypes.CDLL(native.library)
    init = getattr(library, f"{native.entry}_init_packed")
    init.restype, init.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
    run = getattr(library, f"{native.entry}_run_packed")
    run.restype, run.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]
    n = ctypes.c_int64(16)
    state = init((ctypes.c_void_p * 1)(ctypes.addressof(n)))
    pointers = {k: ctypes.c_void_p(v.ctypes.data) for k, v in arrays.items()}
    slots = (ctypes.c_void_p * len(names))(
        *[ctypes.addressof(pointers[k]) if k in pointers else ctypes.addressof(n) for k in names]
    )

    call = best(lambda: program(a, x, y))
    described = best(lambda: native.run(values))
    direct = best(lambda: run(state, slots))
    print(f"Program.__call__:                 {call:6.1f} us")
    print(f"_native.run (descriptions made):  {described:6.1f} us")
    print(f"NAME_run_packed through ctypes:   {direct:6.1f} us")


if __name__ == "__main__":
    main()
