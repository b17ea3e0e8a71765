"""FDTD-2D (PolyBench): 2-D finite-difference time-domain electromagnetic
kernel (Yee scheme) over TMAX steps, with the source row ey[0, :] driven by
_fict_[t]."""
import numpy as np
import dace as dc

TMAX, NX, NY = (dc.symbol(s, dtype=dc.int64) for s in ("TMAX", "NX", "NY"))


@dc.program
def kernel(ex: dc.float64[NX, NY], ey: dc.float64[NX, NY], hz: dc.float64[NX, NY],
           _fict_: dc.float64[TMAX]):
    for t in range(TMAX):
        ey[0, :] = _fict_[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])


@dc.program
def initialize(ex: dc.float64[NX, NY], ey: dc.float64[NX, NY], hz: dc.float64[NX, NY],
               _fict_: dc.float64[TMAX]):
    i = np.arange(NX)
    j = np.arange(NY)
    t = np.arange(TMAX)
    ex[:] = (i[:, np.newaxis] * (j[np.newaxis, :] + 1)) / NX
    ey[:] = (i[:, np.newaxis] * (j[np.newaxis, :] + 2)) / NY
    hz[:] = (i[:, np.newaxis] * (j[np.newaxis, :] + 3)) / NX
    _fict_[:] = t * 1.0


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["ex", "ey", "hz"],
    "presets": {
        "test": {"TMAX": 6, "NX": 12, "NY": 14},
        "S": {"TMAX": 20, "NX": 200, "NY": 220},
        "M": {"TMAX": 60, "NX": 400, "NY": 450},
        "L": {"TMAX": 150, "NX": 800, "NY": 900},
        "paper": {"TMAX": 500, "NX": 1000, "NY": 1200},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
