"""The Thomas algorithm for one tridiagonal system per column: a forward
scan with a tuple state (the modified coefficients c', d') and a backward
scan for the substitution, the two composed in one field operator whose
intermediate is a tuple of fields."""

import numpy as np

import gt4py.next as gtx
from gt4py.next import float64

I = gtx.Dimension("I")
J = gtx.Dimension("J")
K = gtx.Dimension("K", kind=gtx.DimensionKind.VERTICAL)

NI, NJ, NK = 4, 3, 10

offset_provider = {}

Column = gtx.Field[gtx.Dims[I, J, K], float64]


@gtx.scan_operator(axis=K, forward=True, init=(0.0, 0.0))
def forward_sweep(
    state: tuple[float64, float64], a: float64, b: float64, c: float64, d: float64
) -> tuple[float64, float64]:
    cp, dp = state
    denominator = b - a * cp
    return c / denominator, (d - a * dp) / denominator


@gtx.scan_operator(axis=K, forward=False, init=0.0)
def back_substitution(x_above: float64, cp: float64, dp: float64) -> float64:
    return dp - cp * x_above


@gtx.field_operator
def solve(a: Column, b: Column, c: Column, d: Column) -> Column:
    cp, dp = forward_sweep(a, b, c, d)
    return back_substitution(cp, dp)


@gtx.program
def tridiagonal(a: Column, b: Column, c: Column, d: Column, x: Column):
    solve(a, b, c, d, out=x)


program = tridiagonal


def arguments(rng):
    shape = (NI, NJ, NK)
    a = rng.uniform(-1, 1, shape)
    c = rng.uniform(-1, 1, shape)
    a[:, :, 0] = 0.0
    c[:, :, -1] = 0.0
    b = 4.0 + rng.uniform(0, 1, shape)  # diagonally dominant: no pivoting needed
    return {
        "a": gtx.as_field([I, J, K], a),
        "b": gtx.as_field([I, J, K], b),
        "c": gtx.as_field([I, J, K], c),
        "d": gtx.as_field([I, J, K], rng.uniform(-1, 1, shape)),
        "x": gtx.as_field([I, J, K], np.zeros(shape)),
    }
