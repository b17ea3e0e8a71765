"""Jacobi-1D (PolyBench): 1-D 3-point Jacobi stencil applied alternately
A -> B and B -> A for TSTEPS - 1 steps."""
import numpy as np
import dace as dc

TSTEPS, N = (dc.symbol(s, dtype=dc.int64) for s in ("TSTEPS", "N"))


@dc.program
def kernel(A: dc.float64[N], B: dc.float64[N]):
    for t in range(1, TSTEPS):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


@dc.program
def initialize(A: dc.float64[N], B: dc.float64[N]):
    for i in dc.map[0:N]:
        A[i] = (i + 2) / N
        B[i] = (i + 3) / N


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["A", "B"],
    "presets": {
        "test": {"TSTEPS": 10, "N": 30},
        "S": {"TSTEPS": 800, "N": 3200},
        "M": {"TSTEPS": 3000, "N": 12000},
        "L": {"TSTEPS": 8500, "N": 34000},
        "paper": {"TSTEPS": 4000, "N": 32000},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
