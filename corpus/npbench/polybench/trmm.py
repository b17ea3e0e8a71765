"""TRMM (PolyBench): triangular matrix multiply B = alpha * A^T B with A unit
lower triangular (the strictly lower part of column i multiplies rows below
i; the diagonal is taken as 1)."""
import numpy as np
import dace as dc

M, N = (dc.symbol(s, dtype=dc.int64) for s in ("M", "N"))


@dc.program
def kernel(alpha: dc.float64, A: dc.float64[M, M], B: dc.float64[M, N]):
    for i in range(M):
        for j in range(N):
            B[i, j] += np.dot(A[i + 1:, i], B[i + 1:, j])
    B *= alpha


@dc.program
def initialize(A: dc.float64[M, M], B: dc.float64[M, N]):
    for i, j in dc.map[0:M, 0:M]:
        if i == j:
            A[i, j] = 1.0
        else:
            A[i, j] = ((i * j) % M) / M
    for i, j in dc.map[0:M, 0:N]:
        B[i, j] = ((N + i - j) % N) / N


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {"alpha": 1.5},
    "outputs": ["B"],
    "presets": {
        "test": {"M": 14, "N": 18},
        "S": {"M": 65, "N": 80},
        "M": {"M": 200, "N": 250},
        "L": {"M": 600, "N": 700},
        "paper": {"M": 1000, "N": 1200},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
