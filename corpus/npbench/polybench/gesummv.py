"""GESUMMV (PolyBench): scalar, vector and matrix multiplication,
y = alpha * A x + beta * B x."""
import numpy as np
import dace as dc

N = dc.symbol("N", dtype=dc.int64)


@dc.program
def kernel(alpha: dc.float64, beta: dc.float64, A: dc.float64[N, N],
           B: dc.float64[N, N], x: dc.float64[N]):
    return alpha * A @ x + beta * B @ x


@dc.program
def initialize(A: dc.float64[N, N], B: dc.float64[N, N], x: dc.float64[N]):
    i = np.arange(N)
    A[:] = ((i[:, np.newaxis] * i[np.newaxis, :] + 1) % N) / N
    B[:] = ((i[:, np.newaxis] * i[np.newaxis, :] + 2) % N) / N
    x[:] = (i % N) / N


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {"alpha": 1.5, "beta": 1.2},
    "outputs": ["__return"],
    "presets": {
        "test": {"N": 24},
        "S": {"N": 2000},
        "M": {"N": 4000},
        "L": {"N": 14000},
        "paper": {"N": 11200},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
