"""Cholesky, library version (PolyBench/NPBench cholesky2).

A := cholesky(A) + triu(A, 1): the lower factor (upper triangle zero) plus the
strict upper triangle of the original matrix.  ``triu`` is a nested program
whose inner map range starts at the outer map index plus k.
"""
import numpy as np
import dace as dc

N = dc.symbol("N", dtype=dc.int64)


@dc.program
def triu(A: dc.float64[N, N], k: dc.int64):
    B = np.zeros_like(A)
    for i in dc.map[0:N]:
        for j in dc.map[i + k:N]:
            B[i, j] = A[i, j]
    return B


@dc.program
def kernel(A: dc.float64[N, N]):
    A[:] = np.linalg.cholesky(A) + triu(A, k=1)


@dc.program
def initialize(A: dc.float64[N, N]):
    # A = L @ L.T, the SPD matrix of PolyBench/NPBench: L is unit lower
    # triangular with L[i, k] = ((-k) mod N) / N + 1 below the diagonal (Python
    # modulo, non-negative), i.e. N * L[i, k] = (-k) % N + N = 2N - k for
    # 0 < k < i and N for k = 0 and k = i.  N^2 * A[i, j] is the integer sum
    # over k <= min(i, j), in closed form (sums of squares); one final
    # division makes A bit-identical wherever it is computed.
    i = np.arange(N)
    m = np.minimum(i[:, np.newaxis], i[np.newaxis, :])
    hi = 2 * N - 1
    lo = 2 * N - m
    # (`m * 0 + N`: DaCe's np.where takes arrays here, not a bare symbol.)
    tail = N * np.where(i[:, np.newaxis] == i[np.newaxis, :], m * 0 + N, (-m) % N + N)
    inner = hi * (hi + 1) * (2 * hi + 1) // 6 - lo * (lo + 1) * (2 * lo + 1) // 6
    acc = N * N + np.where(m > 0, inner + tail, 0)
    A[:] = acc / (N * N)


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["A"],
    "presets": {
        "test": {"N": 20},
        "S": {"N": 1000},
        "M": {"N": 2200},
        "L": {"N": 8000},
        "paper": {"N": 2000},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
