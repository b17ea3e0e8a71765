"""Correlation (PolyBench): Pearson correlation matrix of the M columns of an
N x M data matrix.

``data`` is normalised in place (centred and scaled by sqrt(N) * stddev, with
stddev <= 0.1 replaced by 1); the M x M correlation matrix is returned.

As NPBench's DaCe version does, the standard deviation is spelled out as
sqrt(mean((data - mean)**2)): DaCe's frontend has no ``np.std`` (it would
become a Python callback).  Deviation: the number of observations
(PolyBench's ``float_n``, an argument in NPBench) is the symbol N here.
"""
import numpy as np
import dace as dc

M, N = (dc.symbol(s, dtype=dc.int64) for s in ("M", "N"))


@dc.program
def kernel(data: dc.float64[N, M]):
    mean = np.mean(data, axis=0)
    stddev = np.sqrt(np.mean(np.subtract(data, mean)**2, axis=0))
    stddev[stddev <= 0.1] = 1.0
    np.subtract(data, mean, out=data)
    np.divide(data, np.sqrt(N * 1.0) * stddev, out=data)

    corr = np.eye(M, dtype=np.float64)
    for i in range(M - 1):
        corr[i, i + 1:M] = data[:, i] @ data[:, i + 1:M]
        corr[i + 1:M, i] = corr[i, i + 1:M]
    return corr


@dc.program
def initialize(data: dc.float64[N, M]):
    i = np.arange(N)
    j = np.arange(M)
    data[:] = (i[:, np.newaxis] * j[np.newaxis, :]) / M + i[:, np.newaxis]


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
