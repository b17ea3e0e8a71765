"""Implicit vertical advection of the COSMO dynamical core, modelled on
`vertical_advection_dycore` of GT4Py's test suite.

Exercises a `computation(FORWARD)` sweep (the Thomas algorithm's
elimination) and a `computation(BACKWARD)` sweep (its substitution), each
split into `interval(0, 1)`, `interval(1, -1)` and `interval(-1, None)`;
temporaries read at K offsets of the previous level (`ccol[0, 0, -1]`),
fields read at mixed offsets (`wcon[1, 0, 1]`), externals (`BET_M`,
`BET_P`) and a float scalar.
"""

import numpy as np
from gt4py.cartesian.gtscript import BACKWARD, FORWARD, Field, computation, interval

EXTERNALS = {"BET_M": 0.5, "BET_P": 0.5}
SCALARS = {"dtr_stage": 3.0}
TOLERANCE = {"rtol": 1e-10, "atol": 1e-10}


def definition(
    utens_stage: Field[np.float64],
    u_stage: Field[np.float64],
    wcon: Field[np.float64],
    u_pos: Field[np.float64],
    utens: Field[np.float64],
    *,
    dtr_stage: float,
):
    from __externals__ import BET_M, BET_P

    with computation(FORWARD):
        with interval(0, 1):
            gcv = 0.25 * (wcon[1, 0, 1] + wcon[0, 0, 1])
            cs = gcv * BET_M
            ccol = gcv * BET_P
            bcol = dtr_stage - ccol
            correction = -cs * (u_stage[0, 0, 1] - u_stage)
            dcol = dtr_stage * u_pos + utens + utens_stage + correction
            divided = 1.0 / bcol
            ccol = ccol * divided
            dcol = dcol * divided
        with interval(1, -1):
            gav = -0.25 * (wcon[1, 0, 0] + wcon)
            gcv = 0.25 * (wcon[1, 0, 1] + wcon[0, 0, 1])
            as_ = gav * BET_M
            cs = gcv * BET_M
            acol = gav * BET_P
            ccol = gcv * BET_P
            bcol = dtr_stage - acol - ccol
            correction = -as_ * (u_stage[0, 0, -1] - u_stage) - cs * (u_stage[0, 0, 1] - u_stage)
            dcol = dtr_stage * u_pos + utens + utens_stage + correction
            divided = 1.0 / (bcol - ccol[0, 0, -1] * acol)
            ccol = ccol * divided
            dcol = (dcol - dcol[0, 0, -1] * acol) * divided
        with interval(-1, None):
            gav = -0.25 * (wcon[1, 0, 0] + wcon)
            as_ = gav * BET_M
            acol = gav * BET_P
            bcol = dtr_stage - acol
            correction = -as_ * (u_stage[0, 0, -1] - u_stage)
            dcol = dtr_stage * u_pos + utens + utens_stage + correction
            divided = 1.0 / (bcol - ccol[0, 0, -1] * acol)
            dcol = (dcol - dcol[0, 0, -1] * acol) * divided

    with computation(BACKWARD):
        with interval(-1, None):
            datacol = dcol
            data_col = datacol
            utens_stage = dtr_stage * (datacol - u_pos)
        with interval(0, -1):
            datacol = dcol - ccol * data_col[0, 0, 1]
            data_col = datacol
            utens_stage = dtr_stage * (datacol - u_pos)
