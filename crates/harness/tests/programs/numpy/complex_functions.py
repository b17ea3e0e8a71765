"""Functions of complex arrays (`np.tan`, `np.arctan`, `np.tanh`) and the
conjugate and real part of real arrays (the identity)."""
import numpy as np
import dace as dc

N = dc.symbol("N", dtype=dc.int64)


@dc.program
def kernel(z: dc.complex128[N], r: dc.float64[N], t: dc.complex128[N], a: dc.complex128[N],
           h: dc.complex128[N], c: dc.float64[N]):
    t[:] = np.tan(z)
    a[:] = np.arctan(z)
    h[:] = np.tanh(z)
    c[:] = np.conj(r) + np.real(r) * 2.0


@dc.program
def initialize(z: dc.complex128[N], r: dc.float64[N]):
    for i in dc.map[0:N]:
        z[i] = (i - 3) * 0.4 + (i % 3 - 1) * 0.7j
        r[i] = i * 0.5 - 1.0


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "outputs": ["t", "a", "h", "c"],
    "presets": {"test": {"N": 8}},
    "tolerance": {"rtol": 1e-10, "atol": 1e-12, "norm_error": 1e-10},
}
