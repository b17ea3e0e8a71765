"""Which subscripts bound to a name are views and which are copies, decided
by writing through the name (and into the array after binding it), in 1-D,
2-D and 3-D: an integer in every axis (negative ones too) selects an element,
NumPy's scalar, a copy; fewer integers than axes, slices, mixed slices and
integers, and every form with `...` (`A[4, ...]` is a 0-d view) are views.
An element passed to a program is a copy too, and so is a scalar parameter
or local bound to another name or passed to a program (a Python number:
`v = s; v += 1` rebinds `v`)."""
import numpy as np
import dace as dc

N, M, K = (dc.symbol(s, dtype=dc.int64) for s in ("N", "M", "K"))


@dc.program
def bump(x: dc.int64):
    x += 1000
    return x


@dc.program
def kernel(A: dc.int64[N], B: dc.int64[N, M], C: dc.int64[N, M, K], out: dc.int64[16], s: dc.int64):
    # 1-D.
    a = A[4]
    a += 1
    out[0] = a
    an = A[-2]
    an *= 3
    out[1] = an
    kept = A[1]
    A[1] = 50
    out[2] = kept
    av = A[5:7]
    av += 10
    ae = A[0, ...]
    ae += 100
    aw = A[...]
    aw[2] -= 7
    out[3] = bump(A[3])
    # 2-D.
    b = B[1, 2]
    b += 1
    out[4] = b
    bn = B[-1, -2]
    bn -= 5
    out[5] = bn
    row = B[2]
    row += 20
    last = B[-2]
    last[0] = -1
    col = B[:, 3]
    col *= 2
    blk = B[0:2, 0:2]
    blk += 300
    be = B[3, ...]
    be[1] = 77
    b0 = B[0, 4, ...]
    b0 += 9
    # 3-D.
    c = C[1, 2, 3]
    c += 1
    out[6] = c
    cn = C[-1, 0, -1]
    cn += 2
    out[7] = cn
    plane = C[1]
    plane[0, 0] = -5
    line = C[0, 1]
    line += 40
    mixed = C[:, 2, 1]
    mixed -= 3
    mixed2 = C[2, :, -1]
    mixed2 += 11
    ce = C[..., 0]
    ce[0, 2] = 123
    cm = C[1, ..., 2]
    cm[1] = 456
    c0 = C[2, 2, 2, ...]
    c0 += 8
    ckept = C[0, 0, 0]
    C[0, 0, 0] = 999
    out[8] = ckept
    # Scalars: a parameter and a local.
    v = s
    v += 1
    out[9] = s
    out[10] = v
    t = s * 2
    u = t
    u -= 5
    out[11] = t
    out[12] = u
    out[13] = bump(s)
    out[14] = s
    out[15] = bump(t) + t


@dc.program
def initialize(A: dc.int64[N], B: dc.int64[N, M], C: dc.int64[N, M, K]):
    for i in dc.map[0:N]:
        A[i] = i * 3 + 1
    for i, j in dc.map[0:N, 0:M]:
        B[i, j] = i * 10 + j
    for i, j, k in dc.map[0:N, 0:M, 0:K]:
        C[i, j, k] = i * 100 + j * 10 + k


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {"s": 7},
    "outputs": ["A", "B", "C", "out"],
    "presets": {"test": {"N": 8, "M": 5, "K": 4}},
}
