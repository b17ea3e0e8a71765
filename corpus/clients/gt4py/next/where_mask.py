"""Selection with `where`: a boolean mask field and'ed with a comparison
picks, per point, between two computed branches. GT4Py lowers `where` to an
`if_` whose branches it evaluates lazily, in a nested SDFG with one state per
branch and the condition on the interstate edges."""

import numpy as np

import gt4py.next as gtx
from gt4py.next import abs, exp, float64, minimum, sqrt, where  # noqa: A004

I = gtx.Dimension("I")
K = gtx.Dimension("K", kind=gtx.DimensionKind.VERTICAL)

NI, NK = 6, 4

offset_provider = {}

IKField = gtx.Field[gtx.Dims[I, K], float64]
IKMask = gtx.Field[gtx.Dims[I, K], bool]


@gtx.field_operator
def select(f: IKField, g: IKField, mask: IKMask) -> IKField:
    return where(mask & (f > g), sqrt(abs(f - g)), exp(minimum(f, g)))


@gtx.program
def where_mask(f: IKField, g: IKField, mask: IKMask, out: IKField):
    select(f, g, mask, out=out)


program = where_mask


def arguments(rng):
    shape = (NI, NK)
    return {
        "f": gtx.as_field([I, K], rng.uniform(-1, 1, shape)),
        "g": gtx.as_field([I, K], rng.uniform(-1, 1, shape)),
        "mask": gtx.as_field([I, K], rng.integers(0, 2, shape).astype(bool)),
        "out": gtx.as_field([I, K], np.zeros(shape)),
    }
