"""NumPy's tuple-returning functions unpacked into names (`divmod` and
`np.divmod` with Python's signs, `np.modf` of infinities, `np.frexp` with
an int32 exponent, `np.split` into equal parts or at indices and
`np.array_split` into unequal ones, both views along an axis), each value
evaluated before any name is bound (`a, b = divmod(b, a)`); rounding
(`np.trunc`, `np.fix`, `np.rint` and `np.round` to positive and negative
decimals, ties to even), `np.ndarray(shape=..., dtype=...)` and a ufunc
with `where=` into an array that is then filled where the mask is false."""
import numpy as np
import dace as dc

N = dc.symbol("N", dtype=dc.int64)


@dc.program
def kernel(x: dc.float64[N], k: dc.int64[N], A: dc.float64[N, 6], q: dc.int64[4, N],
           f: dc.float64[6, N], e: dc.int32[N], parts: dc.float64[7, 6], cols: dc.float64[N, 6],
           r: dc.float64[7, N], w: dc.float64[N]):
    q[0], q[1] = divmod(k, 3)
    q[2], q[3] = np.divmod(k - 5, -4)
    a = k * 2
    b = k + 1
    a, b = divmod(b, a)
    f[0], f[1] = np.divmod(x, 0.75)
    y = x.copy()
    y[0] = np.inf
    fr, wh = np.modf(y)
    f[2] = fr
    f[3] = np.minimum(wh, 100.0)
    f[4], e[:] = np.frexp(x * 3.0)
    f[5] = a + b * 10.0
    p0, p1 = np.split(A, 2, axis=1)
    parts[0, :3] = p0[1]
    parts[1, :3] = p1[2]
    s0, s1, s2 = np.split(A[0], [1, 4])
    parts[2, :1] = s0
    parts[3, :3] = s1
    parts[4, :2] = s2
    t0, t1, t2, t3 = np.array_split(A[1], 4)
    parts[5, :2] = t0
    parts[5, 2:4] = t1
    parts[6, :1] = t2
    parts[6, 1:2] = t3
    c0, c1, c2 = np.split(A, 3, 1)
    cols[:, :2] = c2
    cols[:, 2:4] = c0
    cols[:, 4:] = c1 * 2.0
    r[0] = np.trunc(x * -1.7)
    r[1] = np.fix(x * 1.3 - 2.0)
    r[2] = np.rint(x * 2.0 - 1.0)
    r[3] = np.round(x * 1.37, 2)
    r[4] = np.round(x * 1234.5, -2)
    r[5] = np.around(x - 0.5)
    r[6] = np.trunc(k) + np.round(k)
    z = np.ndarray(shape=(N,), dtype=np.float64)
    z[:] = 1.5
    w[:] = np.sqrt(x - 0.5, where=x > 0.5) + z
    w[0] = 0.0  # NumPy leaves it uninitialized


@dc.program
def initialize(x: dc.float64[N], k: dc.int64[N], A: dc.float64[N, 6]):
    for i in dc.map[0:N]:
        x[i] = i * 0.5 + 0.25
        k[i] = i * 3 - 7
        for j in dc.map[0:6]:
            A[i, j] = i * 10.0 + j


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "outputs": ["q", "f", "e", "parts", "cols", "r", "w"],
    "presets": {"test": {"N": 8}},
    "tolerance": {"rtol": 1e-12, "atol": 1e-12, "norm_error": 1e-12},
}
