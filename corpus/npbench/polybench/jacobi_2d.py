"""Jacobi-2D (PolyBench): 2-D 5-point Jacobi stencil applied alternately
A -> B and B -> A for TSTEPS - 1 steps."""
import numpy as np
import dace as dc

TSTEPS, N = (dc.symbol(s, dtype=dc.int64) for s in ("TSTEPS", "N"))


@dc.program
def kernel(A: dc.float64[N, N], B: dc.float64[N, N]):
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:]
                               + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:]
                               + B[2:, 1:-1] + B[:-2, 1:-1])


@dc.program
def initialize(A: dc.float64[N, N], B: dc.float64[N, N]):
    for i, j in dc.map[0:N, 0:N]:
        A[i, j] = i * (j + 2) / N
        B[i, j] = i * (j + 3) / N


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["A", "B"],
    "presets": {
        "test": {"TSTEPS": 6, "N": 14},
        "S": {"TSTEPS": 50, "N": 150},
        "M": {"TSTEPS": 80, "N": 350},
        "L": {"TSTEPS": 200, "N": 700},
        "paper": {"TSTEPS": 1000, "N": 2800},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
