"""SYRK (PolyBench): symmetric rank-k update of the lower triangle of C,
C = alpha * A @ A.T + beta * C."""
import numpy as np
import dace as dc

M, N = (dc.symbol(s, dtype=dc.int64) for s in ("M", "N"))


@dc.program
def kernel(alpha: dc.float64, beta: dc.float64, C: dc.float64[N, N],
           A: dc.float64[N, M]):
    for i in range(N):
        C[i, :i + 1] *= beta
        for k in range(M):
            C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]


@dc.program
def initialize(C: dc.float64[N, N], A: dc.float64[N, M]):
    for i, j in dc.map[0:N, 0:M]:
        A[i, j] = ((i * j + 1) % N) / N
    for i, j in dc.map[0:N, 0:N]:
        C[i, j] = ((i * j + 2) % N) / M


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {"alpha": 1.5, "beta": 1.2},
    "outputs": ["C"],
    "presets": {
        "test": {"M": 12, "N": 16},
        "S": {"M": 50, "N": 70},
        "M": {"M": 150, "N": 200},
        "L": {"M": 500, "N": 600},
        "paper": {"M": 1000, "N": 1200},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
