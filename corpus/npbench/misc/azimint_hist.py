"""Azimuthal integration with histograms (NPBench misc): the mean of `data`
over `npt` equal radial bins, as a histogram of the data weighted by itself
over the unweighted one. Each point's bin is computed from the data (a
float-to-int cast, clamped to the last bin) and the histograms are updated
through it inside a parallel map: indirect, conflicting updates (atomic on a
device)."""
import numpy as np
import dace as dc

N, bins, npt = (dc.symbol(s, dtype=dc.int64) for s in ("N", "bins", "npt"))


@dc.program
def get_bin_edges(a: dc.float64[N], bin_edges: dc.float64[bins + 1]):
    a_min = np.amin(a)
    a_max = np.amax(a)
    delta = (a_max - a_min) / bins
    for i in dc.map[0:bins]:
        bin_edges[i] = a_min + i * delta
    bin_edges[bins] = a_max  # no round-off on the last edge


@dc.program
def compute_bin(x: dc.float64, bin_edges: dc.float64[bins + 1]):
    # Uniform bins.
    a_min = bin_edges[0]
    a_max = bin_edges[bins]
    return dc.int64(bins * (x - a_min) / (a_max - a_min))


@dc.program
def histogram(a: dc.float64[N], bin_edges: dc.float64[bins + 1]):
    hist = np.ndarray((bins, ), dtype=np.int64)
    hist[:] = 0
    get_bin_edges(a, bin_edges)
    for i in dc.map[0:N]:
        bin = min(compute_bin(a[i], bin_edges), bins - 1)
        hist[bin] += 1
    return hist


@dc.program
def histogram_weights(a: dc.float64[N], bin_edges: dc.float64[bins + 1],
                      weights: dc.float64[N]):
    hist = np.ndarray((bins, ), dtype=weights.dtype)
    hist[:] = 0
    get_bin_edges(a, bin_edges)
    for i in dc.map[0:N]:
        bin = min(compute_bin(a[i], bin_edges), bins - 1)
        hist[bin] += weights[i]
    return hist


@dc.program
def kernel(data: dc.float64[N], radius: dc.float64[N]):
    bin_edges_u = np.ndarray((npt + 1, ), dtype=np.float64)
    histu = histogram(radius, bin_edges_u)
    bin_edges_w = np.ndarray((npt + 1, ), dtype=np.float64)
    histw = histogram_weights(radius, bin_edges_w, data)
    return histw / histu


@dc.program
def initialize(data: dc.float64[N], radius: dc.float64[N]):
    # Values in [0, 1), like NPBench's uniform random draws; the radii
    # cover every bin.
    for i in dc.map[0:N]:
        data[i] = ((i * 37 + 11) % 101) / 101
        radius[i] = ((i * 7919) % N) / N


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["__return"],
    "presets": {
        "test": {"N": 200, "npt": 10},
        "S": {"N": 400000, "npt": 1000},
        "M": {"N": 4000000, "npt": 1000},
        "L": {"N": 40000000, "npt": 1000},
        "paper": {"N": 1000000, "npt": 1000},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
