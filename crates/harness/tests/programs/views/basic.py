"""A basic slice bound to a name is a view: writes through it reach the
viewed array (integer indices, slices with steps, `...`, `np.newaxis`, `.T`,
a reshape of a whole array, a slice of a view, augmented assignment)."""
import numpy as np
import dace as dc

N, M = (dc.symbol(s, dtype=dc.int64) for s in ("N", "M"))


@dc.program
def kernel(A: dc.float64[N, M], B: dc.float64[N, M], C: dc.float64[N]):
    row = A[1]
    row[:] = row * 2.0
    v = A
    v += 1.0
    part = B[2:6]
    part[:] = np.pi
    col = B[:, 1]
    col[::2] = -1.0
    t = A.T
    t[0, 1] = 7.0
    e = B[..., 0]
    e[1] = 3.0
    n = C[np.newaxis, :]
    n[0, 2] = 9.0
    r = np.reshape(C, (2, N // 2))
    r[1, 0] = 5.0
    sub = row[1:3]
    sub[:] = 0.0
    s = B[::2, 1:]
    s[1, 0] += 4.0
    w = A[3:5]
    w *= 0.5


@dc.program
def initialize(A: dc.float64[N, M], B: dc.float64[N, M], C: dc.float64[N]):
    for i, j in dc.map[0:N, 0:M]:
        A[i, j] = i * 10.0 + j
        B[i, j] = i - j * 0.5
    for i in dc.map[0:N]:
        C[i] = i * 1.5


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "outputs": ["A", "B", "C"],
    "presets": {"test": {"N": 8, "M": 5}},
}
