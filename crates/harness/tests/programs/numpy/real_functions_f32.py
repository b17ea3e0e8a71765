"""NumPy's real functions of float32 arrays stay float32 (compared at
float32's precision: NumPy's float32 loops round differently from C's)."""
import numpy as np
import dace as dc

N = dc.symbol("N", dtype=dc.int64)


@dc.program
def kernel(y: dc.float32[N], b: dc.float32[6, N]):
    b[0] = np.log10(y)
    b[1] = np.sinh(y)
    b[2] = np.cbrt(y) * 2
    b[3] = np.clip(y, 0.5, 2.5)
    b[4] = np.arctan(np.expm1(y))
    b[5] = np.square(y) - np.log2(y)


@dc.program
def initialize(y: dc.float32[N]):
    for i in dc.map[0:N]:
        y[i] = i * 0.5 + 0.125


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "outputs": ["b"],
    "presets": {"test": {"N": 7}},
    "tolerance": {"rtol": 1e-6, "atol": 1e-6, "norm_error": 1e-6},
}
