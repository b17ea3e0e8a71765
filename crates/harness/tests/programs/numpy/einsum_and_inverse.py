"""`np.einsum` with explicit and implicit outputs: products of matrices
and of a matrix and a vector (MatMul nodes on permuted views, the result
transposed where the output asks), a dot, a transpose, an outer product,
a batched contraction and a sum over two letters (broadcast products
reduced); `np.linalg.inv` (a solve against the identity), float32 and
float64."""
import numpy as np
import dace as dc

N = dc.symbol("N", dtype=dc.int64)


@dc.program
def kernel(A: dc.float64[N, N], B: dc.float64[N, N], v: dc.float64[N], X: dc.float32[N, N],
           P: dc.float64[6, N, N], q: dc.float64[3, N], s: dc.float64[3], Z: dc.float64[2, N, N],
           I: dc.float64[N, N], I32: dc.float32[N, N]):
    P[0] = np.einsum('ij,jk->ik', A, B)
    P[1] = np.einsum('ij,kj->ik', A, B)
    P[2] = np.einsum('ji,jk->ki', A, B)
    P[3] = np.einsum('ij->ji', A)
    P[4] = np.einsum('i,j', v, v)
    P[5] = np.einsum('ij,jk', A, B)
    q[0] = np.einsum('ij,j->i', A, v)
    q[1] = np.einsum('j,jk->k', v, B)
    q[2] = np.einsum('ij->i', A)
    s[0] = np.einsum('i,i->', v, v)
    s[1] = np.einsum('ij,ij->', A, B)
    s[2] = np.einsum('ij->', A)
    Z[:] = np.einsum('bij,bjk->bik', np.stack((A, B)), np.stack((B, A)))
    I[:] = np.linalg.inv(A) @ B
    I32[:] = np.linalg.inv(X)


@dc.program
def initialize(A: dc.float64[N, N], B: dc.float64[N, N], v: dc.float64[N], X: dc.float32[N, N]):
    for i in dc.map[0:N]:
        v[i] = i * 0.5 - 1.0
        for j in dc.map[0:N]:
            A[i, j] = (i * 3 + j * 5) % 7 * 0.25 + (i == j) * 4.0
            B[i, j] = i - j * 0.5
            X[i, j] = (i + 2 * j) % 5 * 0.5 + (i == j) * 3.0


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "outputs": ["P", "q", "s", "Z", "I", "I32"],
    "presets": {"test": {"N": 6}},
    "tolerance": {"rtol": 1e-5, "atol": 1e-6, "norm_error": 1e-6},
}
