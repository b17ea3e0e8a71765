"""Keyword arguments of a call of another program bind its parameters and
the module-level symbols its body uses (`inner(x, y, n=n)` runs the
callee's `range(n)` with the caller's `n`, a parameter of the same name as
the symbol; `shift(..., k=1)` its map with 1)."""
import dace as dc

N, n, k = (dc.symbol(s, dtype=dc.int64) for s in ("N", "n", "k"))


@dc.program
def inner(x: dc.float64[N], step: dc.float64):
    for q in range(n):
        x[:] = x + step


@dc.program
def shift(a: dc.float64[N], out: dc.float64[N]):
    for i in dc.map[0:N - k]:
        out[i] = a[i + k]


@dc.program
def kernel(x: dc.float64[N], out: dc.float64[N], n: dc.int64):
    inner(x, n=n, step=0.5)
    shift(x, out, k=1)


@dc.program
def initialize(x: dc.float64[N]):
    for i in dc.map[0:N]:
        x[i] = i * 1.0


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {"n": 3},
    "outputs": ["x", "out"],
    "presets": {"test": {"N": 6}},
}
