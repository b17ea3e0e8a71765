"""Floyd-Warshall (PolyBench): all-pairs shortest paths on an int32 distance
matrix, one relaxation through vertex k per step."""
import numpy as np
import dace as dc

N = dc.symbol("N", dtype=dc.int64)


@dc.program
def kernel(path: dc.int32[N, N]):
    for k in range(N):
        path[:] = np.minimum(path, path[:, k, np.newaxis] + path[np.newaxis, k, :])


@dc.program
def initialize(path: dc.int32[N, N]):
    # 999 stands for "no edge"
    for i, j in dc.map[0:N, 0:N]:
        if (i + j) % 13 == 0 or (i + j) % 7 == 0 or (i + j) % 11 == 0:
            path[i, j] = 999
        else:
            path[i, j] = (i * j) % 7 + 1


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["path"],
    "presets": {
        "test": {"N": 20},
        "S": {"N": 200},
        "M": {"N": 400},
        "L": {"N": 850},
        "paper": {"N": 2800},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
