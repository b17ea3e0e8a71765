"""Compute (NPBench misc): clip(array_1, 2, 10) * a + array_2 * b + c on
int64 arrays, written with np.minimum and np.maximum."""
import numpy as np
import dace as dc

M, N = (dc.symbol(s, dtype=dc.int64) for s in ("M", "N"))


@dc.program
def kernel(array_1: dc.int64[M, N], array_2: dc.int64[M, N], a: dc.int64, b: dc.int64,
           c: dc.int64):
    return np.minimum(np.maximum(array_1, 2), 10) * a + array_2 * b + c


@dc.program
def initialize(array_1: dc.int64[M, N], array_2: dc.int64[M, N]):
    # Integers in [0, 1000), like NPBench's uniform draws cast to int64.
    for i, j in dc.map[0:M, 0:N]:
        array_1[i, j] = (i * 37 + j * 101 + 13) % 1000
        array_2[i, j] = (i * 53 + j * 29 + 7) % 1000


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {"a": 4, "b": 3, "c": 9},
    "outputs": ["__return"],
    "presets": {
        "test": {"M": 40, "N": 50},
        "S": {"M": 2000, "N": 2000},
        "M": {"M": 5000, "N": 5000},
        "L": {"M": 16000, "N": 16000},
        "paper": {"M": 12500, "N": 12500},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
