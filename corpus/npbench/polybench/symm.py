"""SYMM (PolyBench): symmetric matrix multiply C = alpha * A @ B + beta * C,
with A symmetric and only its lower triangle read (the upper triangle holds
-999 and must never be used)."""
import numpy as np
import dace as dc

M, N = (dc.symbol(s, dtype=dc.int64) for s in ("M", "N"))


@dc.program
def kernel(alpha: dc.float64, beta: dc.float64, C: dc.float64[M, N],
           A: dc.float64[M, M], B: dc.float64[M, N]):
    temp2 = np.empty((N, ), dtype=np.float64)
    C *= beta
    for i in range(M):
        for j in range(N):
            C[:i, j] += alpha * B[i, j] * A[i, :i]
            temp2[j] = B[:i, j] @ A[i, :i]
        C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2


@dc.program
def initialize(C: dc.float64[M, N], A: dc.float64[M, M], B: dc.float64[M, N]):
    for i, j in dc.map[0:M, 0:N]:
        C[i, j] = ((i + j) % 100) / M
        B[i, j] = ((N + i - j) % 100) / M
    for i, j in dc.map[0:M, 0:M]:
        if j <= i:
            A[i, j] = ((i + j) % 100) / M
        else:
            A[i, j] = -999.0


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {"alpha": 1.5, "beta": 1.2},
    "outputs": ["C"],
    "presets": {
        "test": {"M": 14, "N": 18},
        "S": {"M": 40, "N": 50},
        "M": {"M": 120, "N": 150},
        "L": {"M": 350, "N": 550},
        "paper": {"M": 1000, "N": 1200},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
