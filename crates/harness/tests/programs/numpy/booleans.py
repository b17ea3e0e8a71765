"""NumPy's functions of booleans: `np.abs` is the identity, `np.maximum` /
`np.minimum` and `np.max` / `np.min` are `or` / `and`, `np.square` is
int8, `np.argmax` finds the first true, and `np.einsum` of booleans is the
`or` of `and`s (fuzz findings: the first three were internal errors)."""
import numpy as np
import dace as dc

N = dc.symbol("N", dtype=dc.int64)


@dc.program
def kernel(a: dc.float64[N, N], b: dc.float64[N, N], m: dc.bool_[6, N, N], k: dc.int64[4, N],
           e: dc.bool_[2, N, N]):
    p = a > 0.5
    q = b > 0.5
    m[0] = np.abs(p)
    m[1] = np.maximum(p, q)
    m[2] = np.minimum(p, q)
    m[3] = np.square(p) > 0
    m[4, 0] = np.max(p, axis=0)
    m[4, 1] = np.min(q, axis=1)
    m[4, 2:] = False
    m[5] = np.logical_xor(p, q)
    k[0] = np.argmax(p, axis=0)
    k[1] = np.argmin(q, axis=1)
    k[2] = np.square(p)[0] + np.sum(q, axis=0)
    k[3] = np.count_nonzero(np.einsum('ij,jk->ik', p, q), axis=0)
    e[0] = np.einsum('ij,jk->ik', p, q)
    e[1] = np.einsum('ij,kj', p, q)


@dc.program
def initialize(a: dc.float64[N, N], b: dc.float64[N, N]):
    for i in dc.map[0:N]:
        for j in dc.map[0:N]:
            a[i, j] = ((i * 7 + j * 3) % 5) * 0.25
            b[i, j] = ((i * 2 + j * 5) % 4) * 0.3


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "outputs": ["m", "k", "e"],
    "presets": {"test": {"N": 5}},
}
