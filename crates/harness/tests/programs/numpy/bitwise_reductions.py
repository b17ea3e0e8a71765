"""Bitwise and logical reductions: `np.bitwise_and.reduce`,
`np.bitwise_or.reduce`, `np.bitwise_xor.reduce` of int32 and int64 arrays
along an axis and over everything, `np.logical_and.reduce` /
`np.logical_or.reduce` of truth values, and their scans."""
import numpy as np
import dace as dc

N = dc.symbol("N", dtype=dc.int64)


@dc.program
def kernel(a: dc.int32[N, 4], b: dc.int64[N], r: dc.int32[3, 4], s: dc.int64[3], t: dc.bool_[4, 4],
           x: dc.int64[N]):
    r[0] = np.bitwise_and.reduce(a, axis=0)
    r[1] = np.bitwise_or.reduce(a, axis=0)
    r[2] = np.bitwise_xor.reduce(a)
    s[0] = np.bitwise_and.reduce(b)
    s[1] = np.bitwise_or.reduce(b, axis=None)
    s[2] = np.bitwise_xor.reduce(b * 3)
    t[0] = np.logical_and.reduce(a > 2, axis=0)
    t[1] = np.logical_or.reduce(a > 40, axis=0)
    t[2] = np.logical_xor.reduce(a > 20)
    t[3] = np.logical_or.reduce(a == 7)
    t[3, 0] = np.logical_or.reduce(a == 7, axis=None)
    t[3, 1] = np.logical_and.reduce(b > 64, axis=None)
    x[:] = np.bitwise_xor.accumulate(b)


@dc.program
def initialize(a: dc.int32[N, 4], b: dc.int64[N]):
    for i in dc.map[0:N]:
        b[i] = (i * 37 + 11) % 64 + 64
        for j in dc.map[0:4]:
            a[i, j] = (i * 13 + j * 7 + 3) % 50


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "outputs": ["r", "s", "t", "x"],
    "presets": {"test": {"N": 9}},
}
