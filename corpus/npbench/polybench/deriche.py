"""Deriche (PolyBench): recursive edge-detection filter on a W x H image.

A causal and an anti-causal first-order-pair IIR filter run along each row
(over j) and their sum is filtered the same way along each column (over i).
The recurrences are vectorised over the other axis.
"""
import numpy as np
import dace as dc

W, H = (dc.symbol(s, dtype=dc.int64) for s in ("W", "H"))


@dc.program
def kernel(alpha: dc.float64, imgIn: dc.float64[W, H]):
    k = (1.0 - np.exp(-alpha)) * (1.0 - np.exp(-alpha)) / (
        1.0 + 2.0 * alpha * np.exp(-alpha) - np.exp(2.0 * alpha))
    a1 = k
    a5 = k
    a2 = k * np.exp(-alpha) * (alpha - 1.0)
    a6 = a2
    a3 = k * np.exp(-alpha) * (alpha + 1.0)
    a7 = a3
    a4 = -k * np.exp(-2.0 * alpha)
    a8 = a4
    b1 = np.power(2.0, -alpha)
    b2 = -np.exp(-2.0 * alpha)
    c1 = 1.0
    c2 = 1.0

    y1 = np.empty_like(imgIn)
    y2 = np.empty_like(imgIn)

    # rows: causal pass over j
    y1[:, 0] = a1 * imgIn[:, 0]
    y1[:, 1] = a1 * imgIn[:, 1] + a2 * imgIn[:, 0] + b1 * y1[:, 0]
    for j in range(2, H):
        y1[:, j] = (a1 * imgIn[:, j] + a2 * imgIn[:, j - 1] + b1 * y1[:, j - 1]
                    + b2 * y1[:, j - 2])
    # rows: anti-causal pass over j
    y2[:, -1] = 0.0
    y2[:, -2] = a3 * imgIn[:, -1]
    for j in range(H - 3, -1, -1):
        y2[:, j] = (a3 * imgIn[:, j + 1] + a4 * imgIn[:, j + 2] + b1 * y2[:, j + 1]
                    + b2 * y2[:, j + 2])
    imgOut = c1 * (y1 + y2)

    # columns: causal pass over i
    y1[0, :] = a5 * imgOut[0, :]
    y1[1, :] = a5 * imgOut[1, :] + a6 * imgOut[0, :] + b1 * y1[0, :]
    for i in range(2, W):
        y1[i, :] = (a5 * imgOut[i, :] + a6 * imgOut[i - 1, :] + b1 * y1[i - 1, :]
                    + b2 * y1[i - 2, :])
    # columns: anti-causal pass over i
    y2[-1, :] = 0.0
    y2[-2, :] = a7 * imgOut[-1, :]
    for i in range(W - 3, -1, -1):
        y2[i, :] = (a7 * imgOut[i + 1, :] + a8 * imgOut[i + 2, :] + b1 * y2[i + 1, :]
                    + b2 * y2[i + 2, :])
    imgOut[:] = c2 * (y1 + y2)
    return imgOut


@dc.program
def initialize(imgIn: dc.float64[W, H]):
    i = np.arange(W)
    j = np.arange(H)
    imgIn[:] = ((313 * i[:, np.newaxis] + 991 * j[np.newaxis, :]) % 65536) / 65535.0


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {"alpha": 0.25},
    "outputs": ["__return"],
    "presets": {
        "test": {"W": 20, "H": 16},
        "S": {"W": 400, "H": 200},
        "M": {"W": 1500, "H": 1000},
        "L": {"W": 6000, "H": 3000},
        "paper": {"W": 7680, "H": 4320},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
