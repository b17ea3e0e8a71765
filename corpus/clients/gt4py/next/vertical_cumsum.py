"""A vertical cumulative sum: a forward `scan_operator` along K, carrying a
float64 state from level to level, applied on an (I, K) domain."""

import gt4py.next as gtx
from gt4py.next import float64

I = gtx.Dimension("I")
K = gtx.Dimension("K", kind=gtx.DimensionKind.VERTICAL)

NI, NK = 6, 8

offset_provider = {}


@gtx.scan_operator(axis=K, forward=True, init=0.0)
def cumsum(state: float64, x: float64) -> float64:
    return state + x


@gtx.program
def vertical_cumsum(
    x: gtx.Field[gtx.Dims[I, K], float64], out: gtx.Field[gtx.Dims[I, K], float64]
):
    cumsum(x, out=out)


program = vertical_cumsum


def arguments(rng):
    return {
        "x": gtx.as_field([I, K], rng.uniform(-1, 1, (NI, NK))),
        "out": gtx.as_field([I, K], rng.uniform(-1, 1, (NI, NK))),
    }
