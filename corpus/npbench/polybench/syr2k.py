"""SYR2K (PolyBench): symmetric rank-2k update of the lower triangle of C,
C = alpha * A @ B.T + alpha * B @ A.T + beta * C."""
import numpy as np
import dace as dc

M, N = (dc.symbol(s, dtype=dc.int64) for s in ("M", "N"))


@dc.program
def kernel(alpha: dc.float64, beta: dc.float64, C: dc.float64[N, N],
           A: dc.float64[N, M], B: dc.float64[N, M]):
    for i in range(N):
        C[i, :i + 1] *= beta
        for k in range(M):
            C[i, :i + 1] += (A[:i + 1, k] * alpha * B[i, k]
                             + B[:i + 1, k] * alpha * A[i, k])


@dc.program
def initialize(C: dc.float64[N, N], A: dc.float64[N, M], B: dc.float64[N, M]):
    for i, j in dc.map[0:N, 0:M]:
        A[i, j] = ((i * j + 1) % N) / N
        B[i, j] = ((i * j + 2) % M) / M
    for i, j in dc.map[0:N, 0:N]:
        C[i, j] = ((i * j + 3) % N) / M


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {"alpha": 1.5, "beta": 1.2},
    "outputs": ["C"],
    "presets": {
        "test": {"M": 12, "N": 16},
        "S": {"M": 35, "N": 50},
        "M": {"M": 110, "N": 140},
        "L": {"M": 350, "N": 400},
        "paper": {"M": 1000, "N": 1200},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
