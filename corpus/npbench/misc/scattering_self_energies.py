"""Scattering self-energies (NPBench misc, from the OMEN quantum transport
simulator): eight nested loops accumulate Sigma[k, E, a] += (G[k, E - w, n] @
dH[a, b, i]) @ (dH[a, b, j] * D[q, w, a, b, i, j]) over energies that stay
non-negative, where n = neigh_idx[a, b] is read from data (a gather of a
whole Norb x Norb block). Tiny complex matrix products."""
import numpy as np
import dace as dc

NA, NB, Nkz, NE, Nqz, Nw, Norb, N3D = (
    dc.symbol(s, dtype=dc.int64)
    for s in ("NA", "NB", "Nkz", "NE", "Nqz", "Nw", "Norb", "N3D"))


@dc.program
def kernel(neigh_idx: dc.int32[NA, NB], dH: dc.complex128[NA, NB, N3D, Norb, Norb],
           G: dc.complex128[Nkz, NE, NA, Norb, Norb],
           D: dc.complex128[Nqz, Nw, NA, NB, N3D, N3D],
           Sigma: dc.complex128[Nkz, NE, NA, Norb, Norb]):
    for k in range(Nkz):
        for E in range(NE):
            for q in range(Nqz):
                for w in range(Nw):
                    for i in range(N3D):
                        for j in range(N3D):
                            for a in range(NA):
                                for b in range(NB):
                                    if E - w >= 0:
                                        dHG = G[k, E - w, neigh_idx[a, b]] @ dH[a, b, i]
                                        dHD = dH[a, b, j] * D[q, w, a, b, i, j]
                                        Sigma[k, E, a] += dHG @ dHD


@dc.program
def initialize(neigh_idx: dc.int32[NA, NB], dH: dc.complex128[NA, NB, N3D, Norb, Norb],
               G: dc.complex128[Nkz, NE, NA, Norb, Norb],
               D: dc.complex128[Nqz, Nw, NA, NB, N3D, N3D],
               Sigma: dc.complex128[Nkz, NE, NA, Norb, Norb]):
    # Neighbours as in NPBench: row a holds a - NB // 2, ..., a + NB // 2 - 1
    # modulo NA. Complex values with parts in [0, 1), like its random draws.
    for a, b in dc.map[0:NA, 0:NB]:
        neigh_idx[a, b] = (a - NB // 2 + b + NA) % NA
    for a, b, i, r, c in dc.map[0:NA, 0:NB, 0:N3D, 0:Norb, 0:Norb]:
        dH[a, b, i, r, c] = (((a * 7 + b * 5 + i * 3 + r * 11 + c * 13 + 1) % 17) / 17 +
                             ((a * 3 + b * 11 + i * 7 + r * 5 + c * 2 + 2) % 19) / 19 * 1j)
    for k, e, a, r, c in dc.map[0:Nkz, 0:NE, 0:NA, 0:Norb, 0:Norb]:
        G[k, e, a, r, c] = (((k * 5 + e * 3 + a * 7 + r * 2 + c * 11 + 3) % 23) / 23 +
                            ((k * 11 + e * 7 + a * 3 + r * 13 + c * 5 + 1) % 29) / 29 * 1j)
        Sigma[k, e, a, r, c] = 0.0
    for q, w, a, b, i, j in dc.map[0:Nqz, 0:Nw, 0:NA, 0:NB, 0:N3D, 0:N3D]:
        D[q, w, a, b, i, j] = (((q * 3 + w * 5 + a * 7 + b * 11 + i * 2 + j * 13 + 5) % 31) / 31 +
                               ((q * 7 + w * 2 + a * 5 + b * 3 + i * 11 + j * 17 + 4) % 37) / 37 *
                               1j)


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["Sigma"],
    "presets": {
        "test": {"Nkz": 2, "NE": 3, "Nqz": 1, "Nw": 2, "N3D": 2, "NA": 3, "NB": 2, "Norb": 2},
        "S": {"Nkz": 2, "NE": 4, "Nqz": 2, "Nw": 2, "N3D": 2, "NA": 6, "NB": 2, "Norb": 3},
        "M": {"Nkz": 3, "NE": 5, "Nqz": 3, "Nw": 2, "N3D": 2, "NA": 10, "NB": 3, "Norb": 4},
        "L": {"Nkz": 3, "NE": 10, "Nqz": 3, "Nw": 3, "N3D": 3, "NA": 12, "NB": 4, "Norb": 4},
        "paper": {"Nkz": 4, "NE": 10, "Nqz": 4, "Nw": 3, "N3D": 3, "NA": 20, "NB": 4,
                  "Norb": 4},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
