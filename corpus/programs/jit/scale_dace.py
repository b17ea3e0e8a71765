# A DaCe program without annotations: DaCe's JIT types its parameters from
# the arguments of the call. The manifest's `signature` gives them here.
import dace


@dace.program
def scale(A, alpha, B):
    B[:] = alpha * A + B.T
