"""2MM (PolyBench): two chained matrix multiplications,
D = alpha * A @ B @ C + beta * D."""
import numpy as np
import dace as dc

NI, NJ, NK, NL = (dc.symbol(s, dtype=dc.int64) for s in ("NI", "NJ", "NK", "NL"))


@dc.program
def kernel(alpha: dc.float64, beta: dc.float64, A: dc.float64[NI, NK],
           B: dc.float64[NK, NJ], C: dc.float64[NJ, NL], D: dc.float64[NI, NL]):
    D[:] = alpha * A @ B @ C + beta * D


@dc.program
def initialize(A: dc.float64[NI, NK], B: dc.float64[NK, NJ], C: dc.float64[NJ, NL],
               D: dc.float64[NI, NL]):
    i = np.arange(NI)
    j = np.arange(NJ)
    k = np.arange(NK)
    m = np.arange(NL)
    A[:] = ((i[:, np.newaxis] * k[np.newaxis, :] + 1) % NI) / NI
    B[:] = ((k[:, np.newaxis] * (j[np.newaxis, :] + 1)) % NJ) / NJ
    C[:] = ((j[:, np.newaxis] * (m[np.newaxis, :] + 3) + 1) % NL) / NL
    D[:] = ((i[:, np.newaxis] * (m[np.newaxis, :] + 2)) % NK) / NK


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {"alpha": 1.5, "beta": 1.2},
    "outputs": ["D"],
    "presets": {
        "test": {"NI": 12, "NJ": 14, "NK": 16, "NL": 18},
        "S": {"NI": 800, "NJ": 850, "NK": 900, "NL": 950},
        "M": {"NI": 2000, "NJ": 2250, "NK": 2500, "NL": 2750},
        "L": {"NI": 6000, "NJ": 6500, "NK": 7000, "NL": 7500},
        "paper": {"NI": 3200, "NJ": 3600, "NK": 4400, "NL": 4800},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
