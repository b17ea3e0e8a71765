"""MVT (PolyBench): matrix-vector product and transpose,
x1 += A y_1; x2 += A^T y_2."""
import numpy as np
import dace as dc

N = dc.symbol("N", dtype=dc.int64)


@dc.program
def kernel(x1: dc.float64[N], x2: dc.float64[N], y_1: dc.float64[N],
           y_2: dc.float64[N], A: dc.float64[N, N]):
    x1 += A @ y_1
    x2 += y_2 @ A


@dc.program
def initialize(x1: dc.float64[N], x2: dc.float64[N], y_1: dc.float64[N],
               y_2: dc.float64[N], A: dc.float64[N, N]):
    i = np.arange(N)
    x1[:] = (i % N) / N
    x2[:] = ((i + 1) % N) / N
    y_1[:] = ((i + 3) % N) / N
    y_2[:] = ((i + 4) % N) / N
    A[:] = ((i[:, np.newaxis] * i[np.newaxis, :]) % N) / N


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["x1", "x2"],
    "presets": {
        "test": {"N": 24},
        "S": {"N": 5500},
        "M": {"N": 11000},
        "L": {"N": 22000},
        "paper": {"N": 16000},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
