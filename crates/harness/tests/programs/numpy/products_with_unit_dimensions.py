"""(N, 1) @ (1, M): a product with unit inner dimension."""
import numpy as np
import dace as dc

N, M = (dc.symbol(s, dtype=dc.int64) for s in ("N", "M"))


@dc.program
def kernel(a: dc.float64[N, 1], b: dc.float64[1, M], c: dc.float64[N, M], d: dc.float64[N, 1], e: dc.float64[M, M]):
    c[:] = a @ b
    d[:] = c @ b.T
    e[:] = b.T @ b


@dc.program
def initialize(a: dc.float64[N, 1], b: dc.float64[1, M]):
    for i in dc.map[0:N]:
        a[i, 0] = i + 1.0
    for j in dc.map[0:M]:
        b[0, j] = j * 0.5 + 1.0


BENCHMARK = {"program": "kernel", "init": "initialize", "outputs": ["c", "d", "e"], "presets": {"test": {"N": 4, "M": 3}}}
