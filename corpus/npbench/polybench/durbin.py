"""Durbin (PolyBench): Levinson-Durbin recursion for the Yule-Walker equations.

Each step k uses reversed copies of the length-k prefixes of r and y,
produced by the nested program ``flip``, whose size symbol M is bound to the
loop variable k at the call.  The copy matters: ``y[:k] += alpha * flip(y[:k])``
reads and writes y.
"""
import numpy as np
import dace as dc

N = dc.symbol("N", dtype=dc.int64)
M = dc.symbol("M", dtype=dc.int64)


@dc.program
def flip(A: dc.float64[M]):
    B = np.empty_like(A)
    for i in dc.map[0:M]:
        B[i] = A[M - 1 - i]
    return B


@dc.program
def kernel(r: dc.float64[N]):
    y = np.empty_like(r)
    alpha = -r[0]
    beta = 1.0
    y[0] = -r[0]
    for k in range(1, N):
        beta *= 1.0 - alpha * alpha
        alpha = -(r[k] + np.dot(flip(r[:k]), y[:k])) / beta
        y[:k] += alpha * flip(y[:k])
        y[k] = alpha
    return y


@dc.program
def initialize(r: dc.float64[N]):
    for i in dc.map[0:N]:
        r[i] = N + 1 - i


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["__return"],
    "presets": {
        "test": {"N": 24},
        "S": {"N": 1000},
        "M": {"N": 6000},
        "L": {"N": 20000},
        "paper": {"N": 16000},
    },
    "tolerance": {"rtol": 1e-3, "atol": 1e-3, "norm_error": 1e-5},
}
