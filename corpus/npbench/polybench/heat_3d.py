"""Heat-3D (PolyBench): 3-D heat equation, 7-point Jacobi stencil applied
alternately A -> B and B -> A for TSTEPS - 1 steps."""
import numpy as np
import dace as dc

TSTEPS, N = (dc.symbol(s, dtype=dc.int64) for s in ("TSTEPS", "N"))


@dc.program
def kernel(A: dc.float64[N, N, N], B: dc.float64[N, N, N]):
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1, 1:-1] = (
            0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1])
            + 0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1])
            + 0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, :-2])
            + A[1:-1, 1:-1, 1:-1])
        A[1:-1, 1:-1, 1:-1] = (
            0.125 * (B[2:, 1:-1, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[:-2, 1:-1, 1:-1])
            + 0.125 * (B[1:-1, 2:, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, :-2, 1:-1])
            + 0.125 * (B[1:-1, 1:-1, 2:] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, 1:-1, :-2])
            + B[1:-1, 1:-1, 1:-1])


@dc.program
def initialize(A: dc.float64[N, N, N], B: dc.float64[N, N, N]):
    i = np.arange(N)
    A[:] = (i[:, np.newaxis, np.newaxis] + i[np.newaxis, :, np.newaxis]
            + (N - i[np.newaxis, np.newaxis, :])) * 10 / N
    B[:] = np.copy(A)


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["A", "B"],
    "presets": {
        "test": {"TSTEPS": 4, "N": 8},
        "S": {"TSTEPS": 25, "N": 25},
        "M": {"TSTEPS": 50, "N": 40},
        "L": {"TSTEPS": 100, "N": 70},
        "paper": {"TSTEPS": 500, "N": 120},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
