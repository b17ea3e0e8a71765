"""Azimuthal integration, naive (NPBench misc): the mean of `data` over each
of `npt` radial bins, one bin after the other, with a masked conditional
accumulation inside a parallel map."""
import numpy as np
import dace as dc

N, npt = (dc.symbol(s, dtype=dc.int64) for s in ("N", "npt"))


@dc.program
def kernel(data: dc.float64[N], radius: dc.float64[N]):
    rmax = np.amax(radius)
    res = np.zeros((npt, ), dtype=np.float64)
    for i in range(npt):
        r1 = rmax * i / npt
        r2 = rmax * (i + 1) / npt
        mask_r12 = np.logical_and((r1 <= radius), (radius < r2))
        on_values = 0
        tmp = np.float64(0)
        for j in dc.map[0:N]:
            if mask_r12[j]:
                tmp += data[j]
                on_values += 1
        res[i] = tmp / on_values
    return res


@dc.program
def initialize(data: dc.float64[N], radius: dc.float64[N]):
    # Values in [0, 1), like NPBench's uniform random draws; the radii
    # cover every bin.
    for i in dc.map[0:N]:
        data[i] = ((i * 37 + 11) % 101) / 101
        radius[i] = ((i * 7919) % N) / N


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["__return"],
    "presets": {
        "test": {"N": 400, "npt": 10},
        "S": {"N": 400000, "npt": 1000},
        "M": {"N": 4000000, "npt": 1000},
        "L": {"N": 40000000, "npt": 1000},
        "paper": {"N": 1000000, "npt": 1000},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
