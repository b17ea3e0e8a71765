"""Mandelbrot set with stream compaction (NPBench misc): the points are
flattened to 1-D; while some remain and k < maxiter, iterate z = z**2 + c on
the data-dependent prefix Z[:length], scatter the step count and the final
iterate of the points that escaped to their grid positions (indices read
from data), then compact the survivors to the front with a sequential
counter. Returns the transposes. The flattened index arrays are explicit
copies (`Xiv[:] = np.reshape(Xi, ...)`): in NumPy the reshape is a view of
Xi, which is not read again, so the results are the same."""
import numpy as np
import dace as dc

XN, YN, M, N = (dc.symbol(s, dtype=dc.int64) for s in ("XN", "YN", "M", "N"))


@dc.program
def mgrid(X: dc.int64[M, N], Y: dc.int64[M, N]):
    for i in range(M):
        X[i, :] = i
    for j in range(N):
        Y[:, j] = j


@dc.program
def linspace(start: dc.float64, stop: dc.float64, X: dc.float64[N]):
    dist = (stop - start) / (N - 1)
    for i in dc.map[0:N]:
        X[i] = start + i * dist


@dc.program
def kernel(xmin: dc.float64, xmax: dc.float64, ymin: dc.float64, ymax: dc.float64,
           maxiter: dc.int64, horizon: dc.float64):
    Xi = np.ndarray((XN, YN), dtype=np.int64)
    Yi = np.ndarray((XN, YN), dtype=np.int64)
    mgrid(Xi, Yi)
    X = np.ndarray((XN, ), dtype=np.float64)
    Y = np.ndarray((YN, ), dtype=np.float64)
    linspace(xmin, xmax, X)
    linspace(ymin, ymax, Y)
    C = np.ndarray((XN, YN), dtype=np.complex128)
    for i, j in dc.map[0:XN, 0:YN]:
        C[i, j] = X[i] + Y[j] * 1j
    N_ = np.zeros(C.shape, dtype=np.int64)
    Z_ = np.zeros(C.shape, dtype=np.complex128)
    Xiv = np.ndarray((XN * YN, ), dtype=np.int64)
    Yiv = np.ndarray((XN * YN, ), dtype=np.int64)
    Cv = np.ndarray((XN * YN, ), dtype=np.complex128)
    Xiv[:] = np.reshape(Xi, (XN * YN, ))
    Yiv[:] = np.reshape(Yi, (XN * YN, ))
    Cv[:] = np.reshape(C, (XN * YN, ))
    Z = np.zeros(Cv.shape, np.complex128)
    I = np.ndarray((XN * YN, ), dtype=np.bool_)
    length = XN * YN
    k = 0
    while length > 0 and k < maxiter:
        Z[:length] = np.multiply(Z[:length], Z[:length])
        Z[:length] = np.add(Z[:length], Cv[:length])
        I[:length] = np.absolute(Z[:length]) > horizon
        for j in range(length):
            if I[j]:
                N_[Xiv[j], Yiv[j]] = k + 1
        for j in range(length):
            if I[j]:
                Z_[Xiv[j], Yiv[j]] = Z[j]
        I[:length] = np.logical_not(I[:length])
        count = 0
        for j in range(length):
            if I[j]:
                Z[count] = Z[j]
                Xiv[count] = Xiv[j]
                Yiv[count] = Yiv[j]
                Cv[count] = Cv[j]
                count += 1
        length = count
        k += 1
    return Z_.T, N_.T


BENCHMARK = {
    "program": "kernel",
    "scalars": {"horizon": 2.0},
    "outputs": ["__return_0", "__return_1"],
    "presets": {
        "test": {"XN": 12, "YN": 10,
                 "scalars": {"xmin": -2.0, "xmax": 0.5, "ymin": -1.25, "ymax": 1.25,
                             "maxiter": 15}},
        "S": {"XN": 200, "YN": 200,
              "scalars": {"xmin": -2.0, "xmax": 0.5, "ymin": -1.25, "ymax": 1.25,
                          "maxiter": 40}},
        "M": {"XN": 500, "YN": 500,
              "scalars": {"xmin": -2.0, "xmax": 0.5, "ymin": -1.25, "ymax": 1.25,
                          "maxiter": 80}},
        "L": {"XN": 1000, "YN": 1000,
              "scalars": {"xmin": -2.25, "xmax": 0.75, "ymin": -1.5, "ymax": 1.5,
                          "maxiter": 100}},
        "paper": {"XN": 1000, "YN": 1000,
                  "scalars": {"xmin": -2.25, "xmax": 0.75, "ymin": -1.25, "ymax": 1.25,
                              "maxiter": 200}},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-3},
}
