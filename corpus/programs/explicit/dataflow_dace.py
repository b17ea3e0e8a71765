# Explicit dataflow beyond the tutorial: tasklets in `dace.map` loops and
# at the top level (`with dace.tasklet:`), write-conflict resolutions
# (`hist(1, lambda a, b: a + b)[i % 4]`), a dynamic output written only
# where a condition holds (`total(-1, ...)`), `dace.define_local`, a
# `@dace.mapscope` around a `@dace.map`, and `dace.reduce` with lambdas
# (an output array, an axis, an identity).
import dace

N = dace.symbol('N')


@dace.program
def dataflow(x: dace.float64[N], W: dace.float64[N, 3], hist: dace.int64[4], total: dace.float64[1],
             s: dace.float64[4], rows: dace.float64[N], Z: dace.float64[N, 3], thr: dace.float64):
    tmp = dace.define_local([N], dace.float64)
    for i in dace.map[0:N]:
        with dace.tasklet:
            a << x[i]
            b >> tmp[i]
            b = a * 2.0 + 1.0

    @dace.map
    def count(i: _[0:N]):
        a << tmp[i]
        th << thr
        h >> hist(1, lambda u, v: u + v)[i % 4]
        t >> total(-1, lambda u, v: u + v)[0]
        h = 1
        if a > th:
            t = a

    with dace.tasklet:
        p << total[0]
        q << x[1]
        r >> s[0]
        r = p / q

    @dace.mapscope
    def outer(i: _[0:N]):
        @dace.map
        def inner(j: _[0:3]):
            a << x[i]
            w << W[i, j]
            b >> Z[i, j]
            b = a * j + w

    dace.reduce(lambda a, b: a + b, Z, rows, axis=1)
    s[1] = dace.reduce(lambda a, b: max(a, b), x)
    s[2] = dace.reduce(lambda a, b: a * b, x, identity=2.0)
    s[3] = dace.reduce(lambda a, b: min(a, b), W[:, 1])
