"""Go fast (NPBench misc, from Numba's documentation): the trace of
tanh(a) accumulated along the diagonal in a sequential loop, added to a."""
import numpy as np
import dace as dc

N = dc.symbol("N", dtype=dc.int64)


@dc.program
def kernel(a: dc.float64[N, N]):
    trace = 0.0
    for i in range(N):
        trace += np.tanh(a[i, i])
    return a + trace


@dc.program
def initialize(a: dc.float64[N, N]):
    # Values in [0, 1), like NPBench's uniform random draws.
    for i, j in dc.map[0:N, 0:N]:
        a[i, j] = ((i * 31 + j * 17 + 3) % N) / N


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["__return"],
    "presets": {
        "test": {"N": 30},
        "S": {"N": 2000},
        "M": {"N": 6000},
        "L": {"N": 20000},
        "paper": {"N": 12500},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
