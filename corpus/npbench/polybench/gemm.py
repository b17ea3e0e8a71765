"""GEMM (PolyBench): C = alpha * A @ B + beta * C."""
import numpy as np
import dace as dc

NI, NJ, NK = (dc.symbol(s, dtype=dc.int64) for s in ("NI", "NJ", "NK"))


@dc.program
def kernel(alpha: dc.float64, beta: dc.float64, C: dc.float64[NI, NJ],
           A: dc.float64[NI, NK], B: dc.float64[NK, NJ]):
    C[:] = alpha * A @ B + beta * C


@dc.program
def initialize(C: dc.float64[NI, NJ], A: dc.float64[NI, NK],
               B: dc.float64[NK, NJ]):
    i = np.arange(NI)
    j = np.arange(NJ)
    k = np.arange(NK)
    C[:] = ((i[:, np.newaxis] * j[np.newaxis, :] + 1) % NI) / NI
    A[:] = ((i[:, np.newaxis] * (k[np.newaxis, :] + 1)) % NK) / NK
    B[:] = ((k[:, np.newaxis] * (j[np.newaxis, :] + 2)) % NJ) / NJ


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {"alpha": 1.5, "beta": 1.2},
    "outputs": ["C"],
    "presets": {
        "test": {"NI": 20, "NJ": 25, "NK": 30},
        "S": {"NI": 1000, "NJ": 1100, "NK": 1200},
        "M": {"NI": 2500, "NJ": 2750, "NK": 3000},
        "L": {"NI": 7000, "NJ": 7500, "NK": 8000},
        "paper": {"NI": 2000, "NJ": 2300, "NK": 2600},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
