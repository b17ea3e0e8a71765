"""A vertical gradient with one-sided differences at the column's ends:
`concat_where` (from `gt4py.next.experimental`) picks, by a condition on
the K index, between a forward difference at the top level, a backward one
at the bottom level and a centred one in between; the column's height is an
int32 argument."""

import numpy as np

import gt4py.next as gtx
from gt4py.next import float64
from gt4py.next.experimental import concat_where

I = gtx.Dimension("I")
K = gtx.Dimension("K", kind=gtx.DimensionKind.VERTICAL)

NI, NK = 5, 7

offset_provider = {}

IKField = gtx.Field[gtx.Dims[I, K], float64]


@gtx.field_operator
def vertical_gradient(f: IKField, nk: gtx.int32) -> IKField:
    return concat_where(
        K == 0,
        f(K + 1) - f,
        concat_where(K == nk - 1, f - f(K - 1), 0.5 * (f(K + 1) - f(K - 1))),
    )


@gtx.program
def concat_where_boundary(f: IKField, nk: gtx.int32, out: IKField):
    vertical_gradient(f, nk, out=out)


program = concat_where_boundary


def arguments(rng):
    return {
        "f": gtx.as_field([I, K], rng.uniform(-1, 1, (NI, NK))),
        "nk": np.int32(NK),
        "out": gtx.as_field([I, K], np.zeros((NI, NK))),
    }
