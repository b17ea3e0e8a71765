"""Neighbour reductions over a connectivity with missing neighbours: on a
hand-built grid of quadrilaterals with a boundary, vertices on the edge of
the grid have fewer than four edges and their V2E rows are padded with the
skip value -1. Computes, per vertex and level, the sum, maximum and minimum
of an (Edge, K) field over the vertex's edges (`neighbor_sum`, `max_over`,
`min_over`) and returns them as a tuple of fields into a tuple of outputs."""

import numpy as np

import gt4py.next as gtx
from gt4py.next import float64, max_over, min_over, neighbor_sum

Vertex = gtx.Dimension("Vertex")
Edge = gtx.Dimension("Edge")
K = gtx.Dimension("K", kind=gtx.DimensionKind.VERTICAL)
V2EDim = gtx.Dimension("V2E", kind=gtx.DimensionKind.LOCAL)
V2E = gtx.FieldOffset("V2E", source=Edge, target=(Vertex, V2EDim))

NX, NY, NK = 4, 3, 2
SKIP = -1


def bounded_v2e():
    """V2E of the NX x NY grid without wrap-around: vertex (x, y) is
    x * NY + y; the edges to +x neighbours come first, then those to +y."""
    vertex = lambda x, y: x * NY + y  # noqa: E731
    x_edge = {(x, y): x * NY + y for x in range(NX - 1) for y in range(NY)}
    y_edge = {(x, y): (NX - 1) * NY + x * (NY - 1) + y for x in range(NX) for y in range(NY - 1)}
    v2e = np.full((NX * NY, 4), SKIP, dtype=np.int32)
    for x in range(NX):
        for y in range(NY):
            row = [
                x_edge.get((x, y), SKIP),
                y_edge.get((x, y), SKIP),
                x_edge.get((x - 1, y), SKIP),
                y_edge.get((x, y - 1), SKIP),
            ]
            row.sort(key=lambda e: e == SKIP)  # the skip values pad the end of the row
            v2e[vertex(x, y)] = row
    return v2e, len(x_edge) + len(y_edge)


_v2e, N_EDGES = bounded_v2e()
N_VERTICES = NX * NY
offset_provider = {
    "V2E": gtx.as_connectivity([Vertex, V2EDim], codomain=Edge, data=_v2e, skip_value=SKIP),
}

EdgeField = gtx.Field[gtx.Dims[Edge, K], float64]
VertexField = gtx.Field[gtx.Dims[Vertex, K], float64]


@gtx.field_operator
def reductions(e: EdgeField) -> tuple[VertexField, VertexField, VertexField]:
    return (
        neighbor_sum(e(V2E), axis=V2EDim),
        max_over(e(V2E), axis=V2EDim),
        min_over(e(V2E), axis=V2EDim),
    )


@gtx.program
def neighbor_skip_values(
    e: EdgeField, total: VertexField, largest: VertexField, smallest: VertexField
):
    reductions(e, out=(total, largest, smallest))


program = neighbor_skip_values


def arguments(rng):
    return {
        "e": gtx.as_field([Edge, K], rng.uniform(-1, 1, (N_EDGES, NK))),
        "total": gtx.as_field([Vertex, K], np.zeros((N_VERTICES, NK))),
        "largest": gtx.as_field([Vertex, K], np.zeros((N_VERTICES, NK))),
        "smallest": gtx.as_field([Vertex, K], np.zeros((N_VERTICES, NK))),
    }
