# An unmodified DaCe program as a user writes it: a dtype alias, test code
# at module level, the program updating its argument in place.
import numpy as np
import dace

N = dace.symbol("N")
dtype = dace.float64


@dace.program
def axpy(a: dtype, x: dtype[N], y: dtype[N]):
    y[:] = a * x + y


if __name__ == "__main__":
    x = np.arange(10, dtype=np.float64)
    y = np.ones(10)
    axpy(2.0, x, y)
    print(y)
