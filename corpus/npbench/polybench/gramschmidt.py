"""Gram-Schmidt (PolyBench): modified Gram-Schmidt QR decomposition of an
M x N matrix (M >= N).  Returns Q (M x N, orthonormal columns) and R (N x N,
upper triangular); A is overwritten by the orthogonalised remainders.

NPBench draws A at random (re-drawing until it has full rank); here A is a
deterministic pseudo-random pattern with values in [0, 1) and full column
rank for every preset (modulus 1009 exceeds every M, so no two rows repeat).
"""
import numpy as np
import dace as dc

M, N = (dc.symbol(s, dtype=dc.int64) for s in ("M", "N"))


@dc.program
def kernel(A: dc.float64[M, N]):
    Q = np.zeros_like(A)
    R = np.zeros((N, N), dtype=np.float64)
    for k in range(N):
        nrm = np.dot(A[:, k], A[:, k])
        R[k, k] = np.sqrt(nrm)
        Q[:, k] = A[:, k] / R[k, k]
        for j in range(k + 1, N):
            R[k, j] = np.dot(Q[:, k], A[:, j])
            A[:, j] -= Q[:, k] * R[k, j]
    return Q, R


@dc.program
def initialize(A: dc.float64[M, N]):
    for i, j in dc.map[0:M, 0:N]:
        A[i, j] = ((13 * i * i + 29 * (i + 3) * (j + 7) + 17 * j * j) % 1009) / 1009


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["__return_0", "__return_1", "A"],
    "presets": {
        "test": {"M": 20, "N": 16},
        "S": {"M": 70, "N": 60},
        "M": {"M": 220, "N": 180},
        "L": {"M": 600, "N": 500},
        "paper": {"M": 240, "N": 200},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
