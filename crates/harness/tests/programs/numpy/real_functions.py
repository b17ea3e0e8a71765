"""The rest of NumPy's real functions (`log2`, `log10`, `log1p`, `expm1`,
`exp2`, `sinh`, `cosh`, `arcsin`, `arccos`, `arcsinh`, `arccosh`,
`arctanh`, `cbrt`) and the elementwise compositions (`square`, `negative`,
`sign`, `clip`, `reciprocal`, `fabs`, `deg2rad`, `rad2deg`), on float64,
int32 and int16 arrays (float32 ones in `real_functions_f32.py`): integers compute in float64, 16-bit ones
in float32 (NumPy's loops), so `lf` differs from a float64 logarithm in
the eighth digit and the tolerance sees it."""
import numpy as np
import dace as dc

N = dc.symbol("N", dtype=dc.int64)


@dc.program
def kernel(x: dc.float64[N], y: dc.float32[N], k: dc.int32[N], h: dc.int16[N], u: dc.float64[N],
           a: dc.float64[14, N], lk: dc.float64[N], lf: dc.float64[N],
           c: dc.float64[9, N], s: dc.int32[3, N]):
    a[0] = np.log2(x)
    a[1] = np.log10(x)
    a[2] = np.log1p(x)
    a[3] = np.expm1(u)
    a[4] = np.exp2(u)
    a[5] = np.sinh(u)
    a[6] = np.cosh(u)
    a[7] = np.arcsin(u / 4.0)
    a[8] = np.arccos(u / 4.0)
    a[9] = np.arcsinh(u)
    a[10] = np.arccosh(x + 1.0)
    a[11] = np.arctanh(u / 4.0)
    a[12] = np.cbrt(u)
    a[13] = np.log2(k)
    lk[:] = np.log(k)
    lf[:] = np.log(h)
    c[0] = np.square(u)
    c[1] = np.negative(u)
    c[2] = np.sign(u)
    c[3] = np.clip(u, -1.0, 1.5)
    c[4] = np.clip(k, 2, 3.5)
    c[5] = np.reciprocal(x)
    c[6] = np.fabs(u)
    c[7] = np.deg2rad(k)
    c[8] = np.rad2deg(u)
    s[0] = np.square(k)
    s[1] = np.sign(k - 3)
    s[2] = np.clip(k, 2, 4)


@dc.program
def initialize(x: dc.float64[N], y: dc.float32[N], k: dc.int32[N], h: dc.int16[N],
               u: dc.float64[N]):
    for i in dc.map[0:N]:
        x[i] = i * 0.75 + 0.25
        y[i] = i * 0.5 + 0.125
        k[i] = i + 1
        h[i] = i * 7 + 3
        u[i] = i * 0.6 - 2.1


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "outputs": ["a", "lk", "lf", "c", "s"],
    "presets": {"test": {"N": 7}},
    "tolerance": {"rtol": 1e-12, "atol": 1e-12, "norm_error": 1e-12},
}
