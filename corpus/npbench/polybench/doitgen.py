"""Doitgen (PolyBench): multiresolution analysis kernel (MADNESS).

For every r, the NQ x NP slice A[r] is replaced by A[r] @ C4.
"""
import numpy as np
import dace as dc

NR, NQ, NP = (dc.symbol(s, dtype=dc.int64) for s in ("NR", "NQ", "NP"))


@dc.program
def kernel(A: dc.float64[NR, NQ, NP], C4: dc.float64[NP, NP]):
    for r in range(NR):
        A[r, :, :] = A[r, :, :] @ C4


@dc.program
def initialize(A: dc.float64[NR, NQ, NP], C4: dc.float64[NP, NP]):
    i = np.arange(NR)
    j = np.arange(NQ)
    k = np.arange(NP)
    A[:] = ((i[:, np.newaxis, np.newaxis] * j[np.newaxis, :, np.newaxis]
             + k[np.newaxis, np.newaxis, :]) % NP) / NP
    C4[:] = ((k[:, np.newaxis] * k[np.newaxis, :]) % NP) / NP


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["A"],
    "presets": {
        "test": {"NR": 6, "NQ": 8, "NP": 10},
        "S": {"NR": 60, "NQ": 60, "NP": 128},
        "M": {"NR": 110, "NQ": 125, "NP": 256},
        "L": {"NR": 220, "NQ": 250, "NP": 512},
        "paper": {"NR": 220, "NQ": 250, "NP": 270},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
