# Returns a value; a row bound to a name is a view; a ufunc reduction.
import numpy as np
import dace as dc

M, N = (dc.symbol(s, dtype=dc.int64) for s in ("M", "N"))


@dc.program
def row_norms(A: dc.float64[M, N]):
    first = A[0]
    first[:] = first * 2.0
    return np.sqrt(np.add.reduce(A * A, axis=-1, keepdims=True))
