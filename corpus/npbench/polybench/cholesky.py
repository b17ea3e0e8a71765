"""Cholesky (PolyBench): in-place, row-oriented Cholesky factorisation.

The lower triangle of A (diagonal included) is overwritten with L, where
A = L @ L.T; the strict upper triangle is left as it was.  The dot products
have loop-dependent lengths, zero at j = 0.
"""
import numpy as np
import dace as dc

N = dc.symbol("N", dtype=dc.int64)


@dc.program
def kernel(A: dc.float64[N, N]):
    A[0, 0] = np.sqrt(A[0, 0])
    for i in range(1, N):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= np.dot(A[i, :i], A[i, :i])
        A[i, i] = np.sqrt(A[i, i])


@dc.program
def initialize(A: dc.float64[N, N]):
    # A = L @ L.T, the SPD matrix of PolyBench/NPBench: L is unit lower
    # triangular with L[i, k] = ((-k) mod N) / N + 1 below the diagonal (Python
    # modulo, non-negative), i.e. N * L[i, k] = (-k) % N + N = 2N - k for
    # 0 < k < i and N for k = 0 and k = i.  N^2 * A[i, j] is the integer sum
    # over k <= min(i, j), in closed form (sums of squares); one final
    # division makes A bit-identical wherever it is computed.
    for i, j in dc.map[0:N, 0:N]:
        m = i
        if j < i:
            m = j
        acc = N * N
        if m > 0:
            hi = 2 * N - 1
            lo = 2 * N - m
            acc += hi * (hi + 1) * (2 * hi + 1) // 6 - lo * (lo + 1) * (2 * lo + 1) // 6
            if i == j:
                acc += N * N
            else:
                acc += N * ((-m) % N + N)
        A[i, j] = acc / (N * N)


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["A"],
    "presets": {
        "test": {"N": 20},
        "S": {"N": 100},
        "M": {"N": 300},
        "L": {"N": 900},
        "paper": {"N": 2000},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
