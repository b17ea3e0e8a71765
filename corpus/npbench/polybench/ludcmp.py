"""LUDCMP (PolyBench): solve A x = b by LU decomposition (in place, no
pivoting), forward substitution L y = b and backward substitution U x = y
(a negative-step loop).  Returns x and y; A holds the LU factors."""
import numpy as np
import dace as dc

N = dc.symbol("N", dtype=dc.int64)


@dc.program
def kernel(A: dc.float64[N, N], b: dc.float64[N]):
    for i in range(N):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, N):
            A[i, j] -= A[i, :i] @ A[:i, j]
    y = np.zeros_like(b)
    for i in range(N):
        y[i] = b[i] - A[i, :i] @ y[:i]
    x = np.zeros_like(b)
    for i in range(N - 1, -1, -1):
        x[i] = (y[i] - A[i, i + 1:] @ x[i + 1:]) / A[i, i]
    return x, y


@dc.program
def initialize(A: dc.float64[N, N], b: dc.float64[N]):
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
    for i in dc.map[0:N]:
        b[i] = (i + 1) / N / 2.0 + 4.0


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["__return_0", "__return_1", "A"],
    "presets": {
        "test": {"N": 20},
        "S": {"N": 60},
        "M": {"N": 220},
        "L": {"N": 650},
        "paper": {"N": 2000},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
