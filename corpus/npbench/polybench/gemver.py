"""GEMVER (PolyBench): rank-2 update of A followed by two matrix-vector
products: A += u1 v1^T + u2 v2^T; x += beta * A^T y + z; w += alpha * A x."""
import numpy as np
import dace as dc

N = dc.symbol("N", dtype=dc.int64)


@dc.program
def kernel(alpha: dc.float64, beta: dc.float64, A: dc.float64[N, N],
           u1: dc.float64[N], v1: dc.float64[N], u2: dc.float64[N],
           v2: dc.float64[N], w: dc.float64[N], x: dc.float64[N],
           y: dc.float64[N], z: dc.float64[N]):
    A += u1[:, np.newaxis] * v1[np.newaxis, :] + u2[:, np.newaxis] * v2[np.newaxis, :]
    x += beta * y @ A + z
    w += alpha * A @ x


@dc.program
def initialize(A: dc.float64[N, N], u1: dc.float64[N], v1: dc.float64[N],
               u2: dc.float64[N], v2: dc.float64[N], w: dc.float64[N],
               x: dc.float64[N], y: dc.float64[N], z: dc.float64[N]):
    i = np.arange(N)
    A[:] = ((i[:, np.newaxis] * i[np.newaxis, :]) % N) / N
    u1[:] = i * 1.0
    u2[:] = ((i + 1) / N) / 2.0
    v1[:] = ((i + 1) / N) / 4.0
    v2[:] = ((i + 1) / N) / 6.0
    y[:] = ((i + 1) / N) / 8.0
    z[:] = ((i + 1) / N) / 9.0
    w[:] = 0.0
    x[:] = 0.0


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {"alpha": 1.5, "beta": 1.2},
    "outputs": ["A", "x", "w"],
    "presets": {
        "test": {"N": 24},
        "S": {"N": 1000},
        "M": {"N": 3000},
        "L": {"N": 10000},
        "paper": {"N": 8000},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
