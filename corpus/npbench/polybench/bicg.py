"""BiCG (PolyBench): the two matrix-vector products of a BiCGStab step,
s = A^T r and q = A p."""
import numpy as np
import dace as dc

M, N = (dc.symbol(s, dtype=dc.int64) for s in ("M", "N"))


@dc.program
def kernel(A: dc.float64[N, M], p: dc.float64[M], r: dc.float64[N]):
    return r @ A, A @ p


@dc.program
def initialize(A: dc.float64[N, M], p: dc.float64[M], r: dc.float64[N]):
    i = np.arange(N)
    j = np.arange(M)
    A[:] = ((i[:, np.newaxis] * (j[np.newaxis, :] + 1)) % N) / N
    p[:] = (j % M) / M
    r[:] = (i % N) / N


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["__return_0", "__return_1"],
    "presets": {
        "test": {"M": 24, "N": 30},
        "S": {"M": 4000, "N": 5000},
        "M": {"M": 10000, "N": 12500},
        "L": {"M": 20000, "N": 25000},
        "paper": {"M": 18000, "N": 22000},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
