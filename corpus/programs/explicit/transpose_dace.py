# DaCe's explicit-dataflow tutorial, unmodified: a `@dace.map` function
# whose parameters carry their ranges, with one input and one output memlet.
import dace

M = dace.symbol('M')
N = dace.symbol('N')


@dace.program
def transpose(A: dace.float32[M, N], B: dace.float32[N, M]):
    # Inside the function we will define a tasklet in a map, which is shortened
    # to dace.map. We define the map range in the arguments:
    @dace.map
    def mytasklet(i: _[0:M], j: _[0:N]):
        # Pre-declaring the memlets is required in explicit dataflow, tasklets
        # cannot use any external memory apart from data flowing to/from it.
        a << A[i, j]  # Input memlet (<<)
        b >> B[j, i]  # Output memlet (>>)

        # The code
        b = a
