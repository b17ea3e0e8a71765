"""Reversed axes as views (`x[::-1]`, `x[::-2]`, `x[5:1:-1]`, `np.flip`,
`np.fliplr`, `np.flipud`, `np.rot90`, written through too), arrays made
from parts (`np.concatenate`, `np.stack`, `np.hstack`, `np.vstack`,
`np.column_stack`, `np.array` of a literal), `np.full`, `np.full_like`,
`np.linspace`, `np.tril`, `np.triu`, `np.diag` both ways, `np.trace`,
`np.outer`, on float64 and int32 arrays."""
import numpy as np
import dace as dc

N = dc.symbol("N", dtype=dc.int64)
M = dc.symbol("M", dtype=dc.int64)


@dc.program
def kernel(v: dc.float64[N], A: dc.float64[N, M], B: dc.float64[N, N], K: dc.int32[N, M], W: dc.float64[N, M],
           r: dc.float64[4, N], F: dc.float64[4, N, M], R: dc.float64[4, M, N],
           J: dc.float64[2 * N, M], S: dc.float64[2, N, M], H: dc.float64[N, 2 * M],
           V: dc.float64[2, N], C: dc.float64[N, 2], L: dc.float64[2, 3], G: dc.int64[2, 3],
           P: dc.float64[N, M], Q: dc.float32[N, M], s: dc.float64[3, 9], one: dc.float64[2], T: dc.int32[2, N, M],
           D: dc.float64[N + 1, N + 1], d: dc.float64[3, N - 1], t: dc.float64[3],
           O: dc.float64[N, M]):
    r[0] = v[::-1]
    r[1, :(N + 1) // 2] = v[::-2]
    r[2, :4] = v[5:1:-1]
    r[3] = np.flip(v) * 2.0
    F[0] = np.flip(A)
    F[1] = np.fliplr(A)
    F[2] = np.flipud(A)
    F[3] = np.flip(A, axis=1) + np.flip(A, 0)
    R[0] = np.rot90(A)
    R[1] = np.rot90(A, 3)
    R[2] = np.rot90(A, -1) * 1.5
    R[3] = np.transpose(np.rot90(A, 2))
    W[::-1, :] = A
    J[:] = np.concatenate((A, A * 2.0))
    S[:] = np.stack((A, A + 1.0))
    H[:] = np.hstack((A, np.flip(A)))
    V[:] = np.vstack((v, v * 3.0))
    C[:] = np.column_stack((v, v - 1.0))
    L[:] = np.array([[1.0, 2.5, 3], [4, 5, v[0]]])
    G[:] = np.array([[1, 2, 3], [4, 5, 6]])
    P[:] = np.full((N, M), 7.5) + np.full_like(A, 2)
    Q[:] = np.full(A.shape, 0.25, dtype=np.float32)
    s[0] = np.linspace(0.0, 1.0, 9)
    s[1] = np.linspace(-2.0, v[1], 9, endpoint=False)
    s[2] = np.linspace(1, 5, 9)
    one[:1] = np.linspace(2.5, 7.0, 1)
    one[1:] = np.linspace(-1.0, 3.0, 1, endpoint=False)
    T[0] = np.tril(K)
    T[1] = np.triu(K, 1) + np.tril(K, -2)
    D[:] = np.diag(v, 1) + np.diag(np.ones(N + 1))
    d[0] = np.diag(A, 1)[:N - 1]
    d[1] = np.diag(B)[1:]
    d[2] = np.diag(A[:, 1:], -1)[:N - 1]
    t[0] = np.trace(A)
    t[1] = np.trace(A, 1)
    t[2] = np.trace(K, -1)
    O[:] = np.outer(v, A[0])


@dc.program
def initialize(v: dc.float64[N], A: dc.float64[N, M], B: dc.float64[N, N], K: dc.int32[N, M], W: dc.float64[N, M]):
    for i in dc.map[0:N]:
        v[i] = i * 0.5 - 1.0
        for j in dc.map[0:M]:
            A[i, j] = i * 10.0 + j
            K[i, j] = i * 3 - j
            W[i, j] = 0.0
        for j in dc.map[0:N]:
            B[i, j] = i - j * 0.5


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "outputs": ["r", "F", "R", "W", "J", "S", "H", "V", "C", "L", "G", "P", "Q", "s", "one", "T", "D", "d",
                "t", "O"],
    "presets": {"test": {"N": 6, "M": 6}},
    "tolerance": {"rtol": 1e-12, "atol": 1e-12, "norm_error": 1e-12},
}
