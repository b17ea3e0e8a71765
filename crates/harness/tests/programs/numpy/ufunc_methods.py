"""ufunc methods: `reduce` (axis 0 by default, negative axes, tuples,
`keepdims`, `initial`), `accumulate` along an axis, `outer`."""
import numpy as np
import dace as dc

N, M = (dc.symbol(s, dtype=dc.int64) for s in ("N", "M"))


@dc.program
def kernel(x: dc.float64[N, M], v: dc.float64[M], a: dc.float64[N, 1], b: dc.float64[M], c: dc.float64[N],
           d: dc.float64[1], e: dc.float64[N, M], f: dc.float64[N, M], g: dc.float64[M, M]):
    a[:] = np.maximum.reduce(x, axis=-1, keepdims=True, initial=-9999)
    b[:] = np.add.reduce(x)
    c[:] = np.minimum.reduce(x, axis=1, initial=0.5)
    d[0] = np.multiply.reduce(x, axis=(0, 1))
    e[:] = np.add.accumulate(x, axis=1)
    f[:] = np.multiply.accumulate(x)
    g[:] = np.subtract.outer(v, v)


@dc.program
def initialize(x: dc.float64[N, M], v: dc.float64[M]):
    for i, j in dc.map[0:N, 0:M]:
        x[i, j] = ((i * 7 + j * 3) % 11) / 10.0 + 0.5
    for j in dc.map[0:M]:
        v[j] = j * 0.5


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "outputs": ["a", "b", "c", "d", "e", "f", "g"],
    "presets": {"test": {"N": 4, "M": 5}},
}
