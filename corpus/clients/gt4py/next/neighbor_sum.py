"""A discrete divergence on an unstructured mesh: the difference of a vertex
field along each edge (`f(E2V[1]) - f(E2V[0])`), then at each vertex the sum
over its edges (`neighbor_sum(g(V2E), axis=V2EDim)`), weighted by a
sign field with the local dimension. The mesh is a hand-built periodic grid
of quadrilaterals (a torus): every vertex has four edges, so the
connectivity tables have no missing neighbours."""

import numpy as np

import gt4py.next as gtx
from gt4py.next import float64, neighbor_sum

Vertex = gtx.Dimension("Vertex")
Edge = gtx.Dimension("Edge")
V2EDim = gtx.Dimension("V2E", kind=gtx.DimensionKind.LOCAL)
E2VDim = gtx.Dimension("E2V", kind=gtx.DimensionKind.LOCAL)
V2E = gtx.FieldOffset("V2E", source=Edge, target=(Vertex, V2EDim))
E2V = gtx.FieldOffset("E2V", source=Vertex, target=(Edge, E2VDim))

NX, NY = 4, 3
N_VERTICES = NX * NY
N_EDGES = 2 * NX * NY


def torus_tables():
    """E2V and V2E of the NX x NY periodic grid: vertex (x, y) is x * NY + y;
    edge 2 * v goes from v to its +x neighbour, edge 2 * v + 1 to its +y one."""
    vertex = lambda x, y: (x % NX) * NY + (y % NY)  # noqa: E731
    e2v = np.zeros((N_EDGES, 2), dtype=np.int32)
    v2e = np.zeros((N_VERTICES, 4), dtype=np.int32)
    for x in range(NX):
        for y in range(NY):
            v = vertex(x, y)
            e2v[2 * v] = (v, vertex(x + 1, y))
            e2v[2 * v + 1] = (v, vertex(x, y + 1))
            v2e[v] = (2 * v, 2 * v + 1, 2 * vertex(x - 1, y), 2 * vertex(x, y - 1) + 1)
    return e2v, v2e


_e2v, _v2e = torus_tables()
offset_provider = {
    "E2V": gtx.as_connectivity([Edge, E2VDim], codomain=Vertex, data=_e2v),
    "V2E": gtx.as_connectivity([Vertex, V2EDim], codomain=Edge, data=_v2e),
}


@gtx.field_operator
def edge_difference(f: gtx.Field[[Vertex], float64]) -> gtx.Field[[Edge], float64]:
    return f(E2V[1]) - f(E2V[0])


@gtx.field_operator
def divergence(
    f: gtx.Field[[Vertex], float64], sign: gtx.Field[[Vertex, V2EDim], float64]
) -> gtx.Field[[Vertex], float64]:
    g = edge_difference(f)
    return neighbor_sum(sign * g(V2E), axis=V2EDim)


@gtx.program
def neighbor_divergence(
    f: gtx.Field[[Vertex], float64],
    sign: gtx.Field[[Vertex, V2EDim], float64],
    out: gtx.Field[[Vertex], float64],
):
    divergence(f, sign, out=out)


program = neighbor_divergence


def arguments(rng):
    sign = np.tile(np.array([1.0, 1.0, -1.0, -1.0]), (N_VERTICES, 1))
    return {
        "f": gtx.as_field([Vertex], rng.uniform(-1, 1, N_VERTICES)),
        "sign": gtx.as_field([Vertex, V2EDim], sign),
        "out": gtx.as_field([Vertex], np.zeros(N_VERTICES)),
    }
