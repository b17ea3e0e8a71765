"""Seidel-2D (PolyBench): 2-D 9-point Gauss-Seidel sweeps, in place.

Each row update uses the already updated row above and, through the
sequential recurrence along j, the already updated left neighbour.
"""
import numpy as np
import dace as dc

TSTEPS, N = (dc.symbol(s, dtype=dc.int64) for s in ("TSTEPS", "N"))


@dc.program
def kernel(A: dc.float64[N, N]):
    for t in range(0, TSTEPS - 1):
        for i in range(1, N - 1):
            A[i, 1:-1] += (A[i - 1, :-2] + A[i - 1, 1:-1] + A[i - 1, 2:] + A[i, 2:]
                           + A[i + 1, :-2] + A[i + 1, 1:-1] + A[i + 1, 2:])
            for j in range(1, N - 1):
                A[i, j] += A[i, j - 1]
                A[i, j] /= 9.0


@dc.program
def initialize(A: dc.float64[N, N]):
    for i, j in dc.map[0:N, 0:N]:
        A[i, j] = (i * (j + 2) + 2) / N


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["A"],
    "presets": {
        "test": {"TSTEPS": 4, "N": 12},
        "S": {"TSTEPS": 8, "N": 50},
        "M": {"TSTEPS": 15, "N": 100},
        "L": {"TSTEPS": 40, "N": 200},
        "paper": {"TSTEPS": 100, "N": 400},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
