"""ADI (PolyBench): alternating-direction implicit solver for 2-D heat diffusion.

Each time step is a column sweep followed by a row sweep; each sweep solves
tridiagonal systems with the Thomas algorithm (a forward recurrence along j,
then back substitution with a negative-step loop), vectorised over rows
1..N-2.  Coefficients follow NPBench (b = e = 1 + mul2).
"""
import numpy as np
import dace as dc

TSTEPS, N = (dc.symbol(s, dtype=dc.int64) for s in ("TSTEPS", "N"))


@dc.program
def kernel(u: dc.float64[N, N]):
    v = np.empty_like(u)
    p = np.empty_like(u)
    q = np.empty_like(u)

    DX = 1.0 / N
    DY = 1.0 / N
    DT = 1.0 / TSTEPS
    B1 = 2.0
    B2 = 1.0
    mul1 = B1 * DT / (DX * DX)
    mul2 = B2 * DT / (DY * DY)

    a = -mul1 / 2.0
    b = 1.0 + mul2
    c = a
    d = -mul2 / 2.0
    e = 1.0 + mul2
    f = d

    for t in range(1, TSTEPS + 1):
        # column sweep: implicit in the first index, u -> v
        v[0, 1:N - 1] = 1.0
        p[1:N - 1, 0] = 0.0
        q[1:N - 1, 0] = v[0, 1:N - 1]
        for j in range(1, N - 1):
            p[1:N - 1, j] = -c / (a * p[1:N - 1, j - 1] + b)
            q[1:N - 1, j] = (-d * u[j, 0:N - 2] + (1.0 + 2.0 * d) * u[j, 1:N - 1]
                             - f * u[j, 2:N] - a * q[1:N - 1, j - 1]) / (a * p[1:N - 1, j - 1] + b)
        v[N - 1, 1:N - 1] = 1.0
        for j in range(N - 2, 0, -1):
            v[j, 1:N - 1] = p[1:N - 1, j] * v[j + 1, 1:N - 1] + q[1:N - 1, j]

        # row sweep: implicit in the second index, v -> u
        u[1:N - 1, 0] = 1.0
        p[1:N - 1, 0] = 0.0
        q[1:N - 1, 0] = u[1:N - 1, 0]
        for j in range(1, N - 1):
            p[1:N - 1, j] = -f / (d * p[1:N - 1, j - 1] + e)
            q[1:N - 1, j] = (-a * v[0:N - 2, j] + (1.0 + 2.0 * a) * v[1:N - 1, j]
                             - c * v[2:N, j] - d * q[1:N - 1, j - 1]) / (d * p[1:N - 1, j - 1] + e)
        u[1:N - 1, N - 1] = 1.0
        for j in range(N - 2, 0, -1):
            u[1:N - 1, j] = p[1:N - 1, j] * u[1:N - 1, j + 1] + q[1:N - 1, j]


@dc.program
def initialize(u: dc.float64[N, N]):
    for i, j in dc.map[0:N, 0:N]:
        u[i, j] = (i + N - j) / N


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["u"],
    "presets": {
        "test": {"TSTEPS": 4, "N": 12},
        "S": {"TSTEPS": 5, "N": 100},
        "M": {"TSTEPS": 20, "N": 200},
        "L": {"TSTEPS": 50, "N": 500},
        "paper": {"TSTEPS": 100, "N": 200},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
