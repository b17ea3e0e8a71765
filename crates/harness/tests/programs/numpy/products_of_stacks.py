"""Products with stacks and lengths of one."""
import numpy as np
import dace as dc

N, M, K = (dc.symbol(s, dtype=dc.int64) for s in ("N", "M", "K"))


@dc.program
def kernel(A: dc.float64[N, 1, K], B: dc.float64[K, M], v: dc.float64[K], S: dc.float64[2, K, M],
           c: dc.float64[N, 1, M], d: dc.float64[N, 1], e: dc.float64[2, M], f: dc.float64[2, N, M]):
    c[:] = A @ B
    d[:] = A @ v
    e[:] = v @ S
    f[:] = np.reshape(A, (N, K)) @ S


@dc.program
def initialize(A: dc.float64[N, 1, K], B: dc.float64[K, M], v: dc.float64[K], S: dc.float64[2, K, M]):
    for i, j, k in dc.map[0:N, 0:1, 0:K]:
        A[i, j, k] = i + k * 0.5
    for k, m in dc.map[0:K, 0:M]:
        B[k, m] = k - m * 0.25
    for k in dc.map[0:K]:
        v[k] = k * 0.1 + 1.0
    for b, k, m in dc.map[0:2, 0:K, 0:M]:
        S[b, k, m] = b + k * 0.3 - m * 0.2


BENCHMARK = {"program": "kernel", "init": "initialize", "outputs": ["c", "d", "e", "f"], "presets": {"test": {"N": 4, "M": 3, "K": 5}}}
