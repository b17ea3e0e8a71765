"""Arc distance (NPBench misc): the haversine great-circle distance between
two vectors of points given as latitude/longitude pairs (radians)."""
import numpy as np
import dace as dc

N = dc.symbol("N", dtype=dc.int64)


@dc.program
def kernel(theta_1: dc.float64[N], phi_1: dc.float64[N], theta_2: dc.float64[N],
           phi_2: dc.float64[N]):
    temp = np.sin((theta_2 - theta_1) / 2)**2 + np.cos(theta_1) * np.cos(
        theta_2) * np.sin((phi_2 - phi_1) / 2)**2
    distance_matrix = 2 * (np.arctan2(np.sqrt(temp), np.sqrt(1 - temp)))
    return distance_matrix


@dc.program
def initialize(theta_1: dc.float64[N], phi_1: dc.float64[N], theta_2: dc.float64[N],
               phi_2: dc.float64[N]):
    # Values in [0, 1), like NPBench's uniform random draws.
    for i in dc.map[0:N]:
        theta_1[i] = ((i * 7 + 3) % N) / N
        phi_1[i] = ((i * 11 + 5) % N) / N
        theta_2[i] = ((i * 13 + 1) % N) / N
        phi_2[i] = ((i * 17 + 2) % N) / N


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["__return"],
    "presets": {
        "test": {"N": 1000},
        "S": {"N": 100000},
        "M": {"N": 1000000},
        "L": {"N": 10000000},
        "paper": {"N": 10000000},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
