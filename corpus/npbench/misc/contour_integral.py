"""Contour integral (NPBench misc, from the OMEN quantum transport
simulator's FEAST-like eigensolver): for each of 32 complex quadrature
points z, T(z) = sum_n z**(slab_per_bc / 2 - n) * Ham[n] (a complex power
with a real exponent), X = solve(T(z), Y) (a complex linear solve), X
negated when |z| < 1 (a branch on complex data), and the moments P0 += X,
P1 += z * X."""
import numpy as np
import dace as dc

NR, NM, slab_per_bc = (dc.symbol(s, dtype=dc.int64) for s in ("NR", "NM", "slab_per_bc"))


@dc.program
def kernel(Ham: dc.complex128[slab_per_bc + 1, NR, NR], int_pts: dc.complex128[32],
           Y: dc.complex128[NR, NM]):
    P0 = np.zeros((NR, NM), dtype=np.complex128)
    P1 = np.zeros((NR, NM), dtype=np.complex128)
    for idx in range(32):
        z = int_pts[idx]
        Tz = np.zeros((NR, NR), dtype=np.complex128)
        for n in range(slab_per_bc + 1):
            zz = np.power(z, slab_per_bc / 2 - n)
            Tz += zz * Ham[n]
        X = np.linalg.solve(Tz, Y)
        if np.absolute(z) < 1.0:
            X[:] = -X
        P0 += X
        P1 += z * X
    return P0, P1


@dc.program
def initialize(Ham: dc.complex128[slab_per_bc + 1, NR, NR], int_pts: dc.complex128[32],
               Y: dc.complex128[NR, NM]):
    # Parts in [0, 1), like NPBench's random draws; the quadrature points
    # fall inside and outside the unit circle. Ham[n] gets a dominant
    # diagonal so that every T(z) is well conditioned.
    for n, i, j in dc.map[0:slab_per_bc + 1, 0:NR, 0:NR]:
        Ham[n, i, j] = (((n * 7 + i * 5 + j * 3 + 1) % 17) / 17 +
                        ((n * 3 + i * 11 + j * 7 + 2) % 19) / 19 * 1j)
    for n, i in dc.map[0:slab_per_bc + 1, 0:NR]:
        Ham[n, i, i] = Ham[n, i, i] + NR
    for k in dc.map[0:32]:
        int_pts[k] = ((k * 37 + 11) % 101) / 101 * 1.4 + ((k * 53 + 7) % 97) / 97 * 1.4j
    for i, j in dc.map[0:NR, 0:NM]:
        Y[i, j] = ((i * 13 + j * 5 + 3) % 23) / 23 + ((i * 7 + j * 11 + 1) % 29) / 29 * 1j


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["__return_0", "__return_1"],
    "presets": {
        "test": {"NR": 6, "NM": 8, "slab_per_bc": 2},
        "S": {"NR": 50, "NM": 150, "slab_per_bc": 2},
        "M": {"NR": 200, "NM": 400, "slab_per_bc": 2},
        "L": {"NR": 600, "NM": 1000, "slab_per_bc": 2},
        "paper": {"NR": 500, "NM": 1000, "slab_per_bc": 2},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
