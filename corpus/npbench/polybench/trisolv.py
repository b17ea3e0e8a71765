"""Trisolv (PolyBench): forward substitution for a lower triangular system
L x = b (only the lower triangle of L is read; x starts as -999 and must be
overwritten)."""
import numpy as np
import dace as dc

N = dc.symbol("N", dtype=dc.int64)


@dc.program
def kernel(L: dc.float64[N, N], x: dc.float64[N], b: dc.float64[N]):
    for i in range(N):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]


@dc.program
def initialize(L: dc.float64[N, N], x: dc.float64[N], b: dc.float64[N]):
    i = np.arange(N)
    L[:] = (i[:, np.newaxis] + N - i[np.newaxis, :] + 1) * 2 / N
    x[:] = -999.0
    b[:] = i * 1.0


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["x"],
    "presets": {
        "test": {"N": 24},
        "S": {"N": 2000},
        "M": {"N": 5000},
        "L": {"N": 14000},
        "paper": {"N": 16000},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
