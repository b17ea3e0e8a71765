"""Dot products with a gathered operand (`v @ x[idx]`, `x[idx] @ v`, both
gathered, integer vectors): one map summing the products, no temporary for
the gather; `np.dot` of the same operands agrees."""
import numpy as np
import dace as dc

N, K = (dc.symbol(s, dtype=dc.int64) for s in ("N", "K"))


@dc.program
def kernel(x: dc.float64[N], v: dc.float64[K], idx: dc.int64[K], w: dc.int32[N], out: dc.float64[4],
           iout: dc.int64[1]):
    out[0] = v @ x[idx]
    out[1] = x[idx] @ v
    out[2] = x[idx] @ x[idx]
    out[3] = np.dot(v, x[idx])
    iout[0] = w[idx] @ idx


@dc.program
def initialize(x: dc.float64[N], v: dc.float64[K], idx: dc.int64[K], w: dc.int32[N]):
    for i in dc.map[0:N]:
        x[i] = i * 0.25 - 1.0
        w[i] = i * 3 - 7
    for k in dc.map[0:K]:
        v[k] = k + 0.5
        idx[k] = (k * 5 + 2) % N


BENCHMARK = {"program": "kernel", "init": "initialize", "outputs": ["out", "iout"],
             "presets": {"test": {"N": 7, "K": 11}}}
