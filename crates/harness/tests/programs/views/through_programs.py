"""Views passed to another program reach the viewed array; a returned view
is its values (written through first); advanced indexing (an index array) is a copy, as in NumPy."""
import numpy as np
import dace as dc

N, M = (dc.symbol(s, dtype=dc.int64) for s in ("N", "M"))


@dc.program
def scale(x: dc.float64[M], f: dc.float64):
    x[:] = x * f


@dc.program
def kernel(A: dc.float64[N, M], idx: dc.int64[3]):
    row = A[2]
    scale(row, 3.0)
    g = A[idx, idx]
    g[:] = 0.0
    ret = A[1:3]
    ret[0, 0] = -2.0
    return ret


@dc.program
def initialize(A: dc.float64[N, M], idx: dc.int64[3]):
    for i, j in dc.map[0:N, 0:M]:
        A[i, j] = i + j * 0.25
    for k in dc.map[0:3]:
        idx[k] = k + 1


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "outputs": ["A", "__return"],
    "presets": {"test": {"N": 6, "M": 4}},
}
