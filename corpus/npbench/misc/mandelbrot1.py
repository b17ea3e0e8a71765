"""Mandelbrot set, masked iteration (NPBench misc): the grid of complex
points C from two linspaces; for `maxiter` steps, the points whose iterate
is still inside the horizon get the step number (a masked assignment) and
iterate z = z**2 + c (a data-dependent branch inside a map). Finally points
that never escaped get 0. Complex arithmetic throughout; the bounds, sizes
and the iteration count are scalar parameters, given per preset."""
import numpy as np
import dace as dc

XN, YN, L = (dc.symbol(s, dtype=dc.int64) for s in ("XN", "YN", "L"))


@dc.program
def linspace(start: dc.float64, stop: dc.float64, X: dc.float64[L]):
    dist = (stop - start) / (L - 1)
    for i in dc.map[0:L]:
        X[i] = start + i * dist


@dc.program
def kernel(xmin: dc.float64, xmax: dc.float64, ymin: dc.float64, ymax: dc.float64,
           maxiter: dc.int64, horizon: dc.float64):
    X = np.ndarray((XN, ), dtype=np.float64)
    Y = np.ndarray((YN, ), dtype=np.float64)
    linspace(xmin, xmax, X)
    linspace(ymin, ymax, Y)
    C = np.ndarray((YN, XN), dtype=np.complex128)
    for i, j in dc.map[0:YN, 0:XN]:
        C[i, j] = X[j] + Y[i] * 1j
    N = np.zeros(C.shape, dtype=np.int64)
    Z = np.zeros(C.shape, dtype=np.complex128)
    for n in range(maxiter):
        I = np.less(np.absolute(Z), horizon)
        N[I] = n
        for j, k in dc.map[0:YN, 0:XN]:
            if I[j, k]:
                Z[j, k] = Z[j, k]**2 + C[j, k]
    N[N == maxiter - 1] = 0
    return Z, N


BENCHMARK = {
    "program": "kernel",
    "scalars": {"horizon": 2.0},
    "outputs": ["__return_0", "__return_1"],
    "presets": {
        "test": {"XN": 12, "YN": 10,
                 "scalars": {"xmin": -1.75, "xmax": 0.25, "ymin": -1.0, "ymax": 1.0,
                             "maxiter": 20}},
        "S": {"XN": 125, "YN": 125,
              "scalars": {"xmin": -1.75, "xmax": 0.25, "ymin": -1.0, "ymax": 1.0,
                          "maxiter": 60}},
        "M": {"XN": 250, "YN": 250,
              "scalars": {"xmin": -1.75, "xmax": 0.25, "ymin": -1.0, "ymax": 1.0,
                          "maxiter": 150}},
        "L": {"XN": 833, "YN": 833,
              "scalars": {"xmin": -2.0, "xmax": 0.5, "ymin": -1.25, "ymax": 1.25,
                          "maxiter": 200}},
        "paper": {"XN": 1000, "YN": 1000,
                  "scalars": {"xmin": -2.25, "xmax": 0.75, "ymin": -1.25, "ymax": 1.25,
                              "maxiter": 200}},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-3},
}
