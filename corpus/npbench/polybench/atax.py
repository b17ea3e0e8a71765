"""ATAX (PolyBench): y = A^T (A x), written as (A @ x) @ A."""
import numpy as np
import dace as dc

M, N = (dc.symbol(s, dtype=dc.int64) for s in ("M", "N"))


@dc.program
def kernel(A: dc.float64[M, N], x: dc.float64[N]):
    return (A @ x) @ A


@dc.program
def initialize(A: dc.float64[M, N], x: dc.float64[N]):
    i = np.arange(M)
    j = np.arange(N)
    x[:] = 1.0 + j / N
    A[:] = ((i[:, np.newaxis] + j[np.newaxis, :]) % N) / (5 * M)


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["__return"],
    "presets": {
        "test": {"M": 24, "N": 30},
        "S": {"M": 4000, "N": 5000},
        "M": {"M": 10000, "N": 12500},
        "L": {"M": 20000, "N": 25000},
        "paper": {"M": 18000, "N": 22000},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
