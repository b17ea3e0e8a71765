"""Vertical advection (NPBench weather stencils, from COSMO via GT4Py): an
implicit tridiagonal (Thomas) solve along K for every (i, j) column. A forward
sweep builds the c and d coefficient planes from averaged vertical winds (its
first and last levels have their own formulas); a backward sweep, with a
negative step, substitutes and writes the tendency."""
import numpy as np
import dace as dc

BET_M = 0.5
BET_P = 0.5

I, J, K = (dc.symbol(s, dtype=dc.int64) for s in ("I", "J", "K"))


@dc.program
def kernel(utens_stage: dc.float64[I, J, K], u_stage: dc.float64[I, J, K],
           wcon: dc.float64[I + 1, J, K], u_pos: dc.float64[I, J, K],
           utens: dc.float64[I, J, K], dtr_stage: dc.float64):
    ccol = np.ndarray((I, J, K), dtype=utens_stage.dtype)
    dcol = np.ndarray((I, J, K), dtype=utens_stage.dtype)
    data_col = np.ndarray((I, J), dtype=utens_stage.dtype)

    # Top level: no level above.
    for k in range(1):
        gcv = 0.25 * (wcon[1:, :, k + 1] + wcon[:-1, :, k + 1])
        cs = gcv * BET_M
        ccol[:, :, k] = gcv * BET_P
        bcol = dtr_stage - ccol[:, :, k]
        correction_term = -cs * (u_stage[:, :, k + 1] - u_stage[:, :, k])
        dcol[:, :, k] = (dtr_stage * u_pos[:, :, k] + utens[:, :, k] +
                         utens_stage[:, :, k] + correction_term)
        divided = 1.0 / bcol
        ccol[:, :, k] = ccol[:, :, k] * divided
        dcol[:, :, k] = dcol[:, :, k] * divided

    # Interior levels: the temporaries of the top level are reused in place.
    for k in range(1, K - 1):
        gav = -0.25 * (wcon[1:, :, k] + wcon[:-1, :, k])
        gcv[:] = 0.25 * (wcon[1:, :, k + 1] + wcon[:-1, :, k + 1])
        as_ = gav * BET_M
        cs[:] = gcv * BET_M
        acol = gav * BET_P
        ccol[:, :, k] = gcv * BET_P
        bcol[:] = dtr_stage - acol - ccol[:, :, k]
        correction_term[:] = (-as_ * (u_stage[:, :, k - 1] - u_stage[:, :, k]) -
                              cs * (u_stage[:, :, k + 1] - u_stage[:, :, k]))
        dcol[:, :, k] = (dtr_stage * u_pos[:, :, k] + utens[:, :, k] +
                         utens_stage[:, :, k] + correction_term)
        divided[:] = 1.0 / (bcol - ccol[:, :, k - 1] * acol)
        ccol[:, :, k] = ccol[:, :, k] * divided
        dcol[:, :, k] = (dcol[:, :, k] - dcol[:, :, k - 1] * acol) * divided

    # Bottom level: no level below.
    for k in range(K - 1, K):
        gav[:] = -0.25 * (wcon[1:, :, k] + wcon[:-1, :, k])
        as_[:] = gav * BET_M
        acol[:] = gav * BET_P
        bcol[:] = dtr_stage - acol
        correction_term[:] = -as_ * (u_stage[:, :, k - 1] - u_stage[:, :, k])
        dcol[:, :, k] = (dtr_stage * u_pos[:, :, k] + utens[:, :, k] +
                         utens_stage[:, :, k] + correction_term)
        divided[:] = 1.0 / (bcol - ccol[:, :, k - 1] * acol)
        dcol[:, :, k] = (dcol[:, :, k] - dcol[:, :, k - 1] * acol) * divided

    # Backward substitution, bottom to top.
    for k in range(K - 1, K - 2, -1):
        datacol = dcol[:, :, k]
        data_col[:] = datacol
        utens_stage[:, :, k] = dtr_stage * (datacol - u_pos[:, :, k])

    for k in range(K - 2, -1, -1):
        datacol[:] = dcol[:, :, k] - ccol[:, :, k] * data_col[:, :]
        data_col[:] = datacol
        utens_stage[:, :, k] = dtr_stage * (datacol - u_pos[:, :, k])


@dc.program
def initialize(utens_stage: dc.float64[I, J, K], u_stage: dc.float64[I, J, K],
               wcon: dc.float64[I + 1, J, K], u_pos: dc.float64[I, J, K],
               utens: dc.float64[I, J, K]):
    # Values in [0, 1), like NPBench's uniform random draws.
    for i, j, k in dc.map[0:I, 0:J, 0:K]:
        utens_stage[i, j, k] = ((i * 37 + j * 11 + k * 5 + 1) % 97) / 97
        u_stage[i, j, k] = ((i * 13 + j * 29 + k * 17 + 2) % 89) / 89
        u_pos[i, j, k] = ((i * 7 + j * 19 + k * 23 + 3) % 83) / 83
        utens[i, j, k] = ((i * 31 + j * 3 + k * 41 + 4) % 79) / 79
    for i, j, k in dc.map[0:I + 1, 0:J, 0:K]:
        wcon[i, j, k] = ((i * 43 + j * 17 + k * 13 + 5) % 73) / 73


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {"dtr_stage": 0.15},
    "outputs": ["utens_stage"],
    "presets": {
        "test": {"I": 5, "J": 6, "K": 7},
        "S": {"I": 60, "J": 60, "K": 40},
        "M": {"I": 112, "J": 112, "K": 80},
        "L": {"I": 180, "J": 180, "K": 160},
        "paper": {"I": 256, "J": 256, "K": 160},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
