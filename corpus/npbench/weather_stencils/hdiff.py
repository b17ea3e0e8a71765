"""Horizontal diffusion (NPBench weather stencils, from COSMO): a fourth-
order diffusion of a 3-D field with flux limiting (np.where), on slices with
symbolic offsets."""
import numpy as np
import dace as dc

I, J, K = (dc.symbol(s, dtype=dc.int64) for s in ("I", "J", "K"))


@dc.program
def kernel(in_field: dc.float64[I + 4, J + 4, K], out_field: dc.float64[I, J, K],
           coeff: dc.float64[I, J, K]):
    lap_field = 4.0 * in_field[1:I + 3, 1:J + 3, :] - (
        in_field[2:I + 4, 1:J + 3, :] + in_field[0:I + 2, 1:J + 3, :] +
        in_field[1:I + 3, 2:J + 4, :] + in_field[1:I + 3, 0:J + 2, :])

    res1 = lap_field[1:, 1:J + 1, :] - lap_field[:-1, 1:J + 1, :]
    flx_field = np.where(
        (res1 * (in_field[2:I + 3, 2:J + 2, :] - in_field[1:I + 2, 2:J + 2, :])) > 0,
        0,
        res1,
    )

    res2 = lap_field[1:I + 1, 1:, :] - lap_field[1:I + 1, :-1, :]
    fly_field = np.where(
        (res2 * (in_field[2:I + 2, 2:J + 3, :] - in_field[2:I + 2, 1:J + 2, :])) > 0,
        0,
        res2,
    )

    out_field[:, :, :] = in_field[2:I + 2, 2:J + 2, :] - coeff[:, :, :] * (
        flx_field[1:, :, :] - flx_field[:-1, :, :] + fly_field[:, 1:, :] -
        fly_field[:, :-1, :])


@dc.program
def initialize(in_field: dc.float64[I + 4, J + 4, K], out_field: dc.float64[I, J, K],
               coeff: dc.float64[I, J, K]):
    # Values in [0, 1), like NPBench's uniform random draws.
    for i, j, k in dc.map[0:I + 4, 0:J + 4, 0:K]:
        in_field[i, j, k] = ((i * 41 + j * 23 + k * 7 + 1) % 89) / 89
    for i, j, k in dc.map[0:I, 0:J, 0:K]:
        out_field[i, j, k] = ((i * 19 + j * 43 + k * 11 + 2) % 83) / 83
        coeff[i, j, k] = ((i * 29 + j * 13 + k * 31 + 3) % 79) / 79


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["out_field"],
    "presets": {
        "test": {"I": 6, "J": 7, "K": 5},
        "S": {"I": 64, "J": 64, "K": 60},
        "M": {"I": 128, "J": 128, "K": 160},
        "L": {"I": 384, "J": 384, "K": 160},
        "paper": {"I": 256, "J": 256, "K": 160},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
