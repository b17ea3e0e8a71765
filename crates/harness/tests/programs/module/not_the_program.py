"""A real user's file: test code under `if __name__ == "__main__":`, a
class, `try:`, helper functions and other module-level code the compiler
ignores, beside what programs use: symbols, a dtype alias, tuple and
chained constants."""
import numpy as np
import dace as dc

N = dc.symbol("N", dtype=dc.int64)
datatype = dc.float64
SCALE, SHIFT = 2.0, 0.5
LOW = HIGH = 3

try:
    import scipy  # noqa: F401
    HAVE_SCIPY = True
except ImportError:
    HAVE_SCIPY = False


class Helper:
    def __init__(self, n):
        self.data = np.ones(n)


def numpy_version(A):
    return A * SCALE + SHIFT


results = [numpy_version(np.ones(3))]
for k in range(2):
    results.append(k)


@dc.program
def kernel(A: datatype[N], B: datatype[N]):
    B[:] = A * SCALE + SHIFT + LOW * HIGH


@dc.program
def initialize(A: datatype[N]):
    for i in dc.map[0:N]:
        A[i] = i * 0.25


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "outputs": ["B"],
    "presets": {"test": {"N": 7}},
}

if __name__ == "__main__":
    A = np.arange(7, dtype=np.float64)
    print(numpy_version(A))
