"""Covariance (PolyBench): sample covariance matrix of the M columns of an
N x M data matrix.

``data`` is centred in place; the M x M covariance matrix (divided by N - 1)
is returned.  The number of observations (PolyBench's float_n) is the symbol N.
"""
import numpy as np
import dace as dc

M, N = (dc.symbol(s, dtype=dc.int64) for s in ("M", "N"))


@dc.program
def kernel(data: dc.float64[N, M]):
    mean = np.mean(data, axis=0)
    data -= mean
    cov = np.zeros((M, M), dtype=np.float64)
    for i in range(M):
        cov[i, i:M] = data[:, i] @ data[:, i:M] / (N - 1.0)
        cov[i:M, i] = cov[i, i:M]
    return cov


@dc.program
def initialize(data: dc.float64[N, M]):
    i = np.arange(N)
    j = np.arange(M)
    data[:] = (i[:, np.newaxis] * j[np.newaxis, :]) / M


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["__return", "data"],
    "presets": {
        "test": {"M": 14, "N": 18},
        "S": {"M": 500, "N": 600},
        "M": {"M": 1400, "N": 1800},
        "L": {"M": 3200, "N": 4000},
        "paper": {"M": 1200, "N": 1400},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
