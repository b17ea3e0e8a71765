"""Stockham FFT (NPBench misc): a radix-R FFT of N = R**K complex points in
K stages. Each stage views y as an (R**i, R, R**(K-i-1)) array (a reshape
whose shape depends on the stage), permutes its first two axes, multiplies
by twiddle factors replicated along the last axis through another view, and
applies the R x R DFT matrix with one matrix product. (NPBench's DaCe
version assigns an (R, R**i, 1) reshape into the (R, R**i) slice, which
NumPy refuses; the slice is assigned directly here.)"""
import numpy as np
import dace as dc

R, K = (dc.symbol(s, dtype=dc.int64) for s in ("R", "K"))
N = R**K


@dc.program
def mgrid1(X: dc.uint32[R, R], Y: dc.uint32[R, R]):
    for i in range(R):
        X[i, :] = i
    for j in range(R):
        Y[:, j] = j


@dc.program
def mgrid2(X: dc.uint32[R, N], Y: dc.uint32[R, N]):
    for i in range(R):
        X[i, :] = i
    for j in range(R**K):
        Y[:, j] = j


@dc.program
def kernel(x: dc.complex128[R**K], y: dc.complex128[R**K]):
    # The DFT matrix.
    i_coord = np.ndarray((R, R), dtype=np.uint32)
    j_coord = np.ndarray((R, R), dtype=np.uint32)
    mgrid1(i_coord, j_coord)
    dft_mat = np.empty((R, R), dtype=np.complex128)
    dft_mat[:] = np.exp(-2j * np.pi * i_coord * j_coord / R)
    y[:] = x[:]
    ii_coord = np.ndarray((R, N), dtype=np.uint32)
    jj_coord = np.ndarray((R, N), dtype=np.uint32)
    mgrid2(ii_coord, jj_coord)
    tmp_perm = np.empty_like(y)
    D = np.empty_like(y)
    tmp = np.empty_like(y)
    for i in range(K):
        # Stride permutation.
        yv = np.reshape(y, (R**i, R, R**(K - i - 1)))
        tmp_perm[:] = np.reshape(np.transpose(yv, axes=(1, 0, 2)), (N, ))
        # Twiddle factors, written through views of D and tmp.
        Dv = np.reshape(D, (R, R**i, R**(K - i - 1)))
        tmpv = np.reshape(tmp, (R**(K - i - 1), R, R**i))
        tmpv[0] = np.exp(-2j * np.pi * ii_coord[:, :R**i] * jj_coord[:, :R**i] / R**(i + 1))
        for k in range(R**(K - i - 1)):
            Dv[:, :, k] = tmpv[0]
        tmp_twid = tmp_perm * D
        # Butterflies.
        y[:] = np.reshape(dft_mat @ np.reshape(tmp_twid, (R, R**(K - 1))), (N, ))


@dc.program
def initialize(x: dc.complex128[R**K], y: dc.complex128[R**K]):
    # Parts in [0, 1), like NPBench's random draws; y starts at zero.
    for n in dc.map[0:R**K]:
        x[n] = ((n * 37 + 11) % 101) / 101 + ((n * 53 + 7) % 97) / 97 * 1j
        y[n] = 0.0


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["y"],
    "presets": {
        "test": {"R": 2, "K": 4},
        "S": {"R": 2, "K": 15},
        "M": {"R": 2, "K": 18},
        "L": {"R": 2, "K": 21},
        "paper": {"R": 4, "K": 10},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
