"""Sparse matrix-vector product (NPBench misc): y = A @ x with A in
compressed sparse row form. Each row's bounds are read from the row pointer
array (data-dependent slice bounds), its column indices gather from x."""
import numpy as np
import dace as dc

M, N, nnz = (dc.symbol(s, dtype=dc.int64) for s in ("M", "N", "nnz"))


@dc.program
def kernel(A_row: dc.uint32[M + 1], A_col: dc.uint32[nnz], A_val: dc.float64[nnz],
           x: dc.float64[N]):
    y = np.empty(M, A_val.dtype)
    for i in range(M):
        start = dc.define_local_scalar(dc.uint32)
        stop = dc.define_local_scalar(dc.uint32)
        start = A_row[i]
        stop = A_row[i + 1]
        cols = A_col[start:stop]
        vals = A_val[start:stop]
        y[i] = vals @ x[cols]
    return y


@dc.program
def initialize(A_row: dc.uint32[M + 1], A_col: dc.uint32[nnz], A_val: dc.float64[nnz],
               x: dc.float64[N]):
    # A deterministic CSR pattern of nnz entries: row i holds
    # floor((i + 1) * nnz / M) - floor(i * nnz / M) of them (between
    # rows with none and rows with several, as a random matrix has), at
    # distinct, increasing, scattered columns.
    for i in dc.map[0:M + 1]:
        A_row[i] = (i * nnz) // M
    for k in dc.map[0:nnz]:
        A_col[k] = (k * 7919 + (k * nnz) // M) % N
        A_val[k] = ((k * 37 + 11) % 101) / 101
    for j in dc.map[0:N]:
        x[j] = ((j * 53 + 7) % 97) / 97


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["__return"],
    "presets": {
        "test": {"M": 12, "N": 10, "nnz": 20},
        "S": {"M": 4096, "N": 4096, "nnz": 8192},
        "M": {"M": 32768, "N": 32768, "nnz": 65536},
        "L": {"M": 262144, "N": 262144, "nnz": 262144},
        "paper": {"M": 131072, "N": 131072, "nnz": 262144},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
