"""3MM (PolyBench): three chained matrix multiplications, (A @ B) @ (C @ D),
evaluated left to right as A @ B @ C @ D."""
import numpy as np
import dace as dc

NI, NJ, NK, NL, NM = (dc.symbol(s, dtype=dc.int64) for s in ("NI", "NJ", "NK", "NL", "NM"))


@dc.program
def kernel(A: dc.float64[NI, NK], B: dc.float64[NK, NJ], C: dc.float64[NJ, NM],
           D: dc.float64[NM, NL]):
    return A @ B @ C @ D


@dc.program
def initialize(A: dc.float64[NI, NK], B: dc.float64[NK, NJ], C: dc.float64[NJ, NM],
               D: dc.float64[NM, NL]):
    i = np.arange(NI)
    j = np.arange(NJ)
    k = np.arange(NK)
    l = np.arange(NL)
    m = np.arange(NM)
    A[:] = ((i[:, np.newaxis] * k[np.newaxis, :] + 1) % NI) / (5 * NI)
    B[:] = ((k[:, np.newaxis] * (j[np.newaxis, :] + 1) + 2) % NJ) / (5 * NJ)
    C[:] = ((j[:, np.newaxis] * (m[np.newaxis, :] + 3)) % NL) / (5 * NL)
    D[:] = ((m[:, np.newaxis] * (l[np.newaxis, :] + 2) + 2) % NK) / (5 * NK)


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["__return"],
    "presets": {
        "test": {"NI": 10, "NJ": 12, "NK": 14, "NL": 16, "NM": 18},
        "S": {"NI": 800, "NJ": 850, "NK": 900, "NL": 950, "NM": 1000},
        "M": {"NI": 2000, "NJ": 2200, "NK": 2400, "NL": 2600, "NM": 2800},
        "L": {"NI": 5500, "NJ": 6000, "NK": 6500, "NL": 7000, "NM": 7500},
        "paper": {"NI": 3200, "NJ": 3600, "NK": 4000, "NL": 4400, "NM": 4800},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
