"""Reductions that count or locate (`np.any`, `np.all`, `np.count_nonzero`,
`np.argmax`, `np.argmin` with and without an axis, a NaN found first),
scans (`np.cumsum`, `np.cumprod`, flattened without an axis, int32 summed
in int64), `np.sum` of a boolean mask, `np.isclose` / `np.allclose`
(infinities and NaNs included), and the array methods that are the same
functions (`x.any()`, `x.argmax(axis)`, `x.cumsum(0)`, `x.clip`,
`x.transpose`, `x.flatten`, `x.astype`, `x.fill`)."""
import numpy as np
import dace as dc

N = dc.symbol("N", dtype=dc.int64)
M = dc.symbol("M", dtype=dc.int64)


@dc.program
def kernel(A: dc.float64[N, M], K: dc.int32[N, M], xs: dc.float64[N], ys: dc.float64[N],
           b: dc.bool_[4, M], n: dc.int64[6, M], i: dc.int64[8], c: dc.float64[3, N * M],
           ck: dc.int64[N, M], close: dc.bool_[2, N], all_close: dc.bool_[2], m: dc.float64[5, N, M],
           T: dc.float64[M, N], fl: dc.float64[N * M], ki: dc.int64[N, M], fill: dc.float64[N, M]):
    # Infinities and NaNs (inputs must be finite).
    x = xs.copy()
    y = ys.copy()
    x[2] = np.inf
    y[2] = np.inf
    x[3] = np.nan
    y[3] = np.nan
    y[4] = np.nan
    x[5] = -np.inf
    y[5] = np.inf
    b[0] = np.any(A > 20.0, axis=0)
    b[1] = np.all(K > -3, axis=0)
    b[2] = (A > 30.0).any(axis=0)
    b[3, 0] = np.any(K == 7)
    b[3, 1] = np.all(A >= 0.0)
    b[3, 2:] = False
    n[0] = np.count_nonzero(K, axis=0)
    n[1] = np.argmax(A, axis=0)
    n[2] = np.argmin(K, axis=0)
    n[3] = A.argmax(0)
    n[4] = np.sum(A > 15.0, axis=0)
    n[5] = np.argmin(A * -1.0, axis=0)
    i[0] = np.count_nonzero(K)
    i[1] = np.argmax(A)
    i[2] = np.argmin(K)
    i[3] = np.argmax(x)
    i[4] = np.argmax(y)
    i[5] = np.argmin(y)
    i[6] = np.sum(K > 2)
    i[7] = K.argmin()
    c[0] = np.cumsum(A)
    c[1] = np.cumprod(A * 0.1 + 1.0)
    c[2] = A.cumsum()
    ck[:] = np.cumsum(K, axis=1) + np.cumsum(K, 0)
    close[0] = np.isclose(x, y)
    close[1] = np.isclose(x, y, rtol=0.0, atol=0.3, equal_nan=True)
    all_close[0] = np.allclose(x, x + 1e-9)
    all_close[1] = np.allclose(x, y)
    m[0] = np.clip(A, 5.0, 30.0)
    m[1] = A.clip(10.0, 20.0)
    m[2] = np.cumsum(A, axis=0)
    m[3] = A.astype(np.float32) * 3.0
    m[4] = np.flip(A).copy()
    T[:] = A.transpose()
    fl[:] = A.flatten()
    ki[:] = K.astype(np.int64) * 1000000000
    fill[:] = 1.0
    fill[1:].fill(2.5)


@dc.program
def initialize(A: dc.float64[N, M], K: dc.int32[N, M], xs: dc.float64[N], ys: dc.float64[N]):
    for i in dc.map[0:N]:
        xs[i] = i * 0.5
        ys[i] = i * 0.5 + (i % 3) * 0.2
        for j in dc.map[0:M]:
            A[i, j] = (i * 7 + j * 3) % 11 * 4.0
            K[i, j] = (i * 5 + j) % 9 - 2


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "outputs": ["b", "n", "i", "c", "ck", "close", "all_close", "m", "T", "fl", "ki", "fill"],
    "presets": {"test": {"N": 7, "M": 5}},
    "tolerance": {"rtol": 1e-12, "atol": 1e-12, "norm_error": 1e-12},
}
