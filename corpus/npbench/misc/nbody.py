"""N-body simulation (NPBench misc, after Philip Mocz's "Create Your Own
N-body Simulation"): leapfrog integration of N gravitating particles. The
accelerations come from pairwise separations (outer sums) with softened
inverse cubes taken only where positive (`np.power(..., where=)`) and three
matrix-vector products; each step records the kinetic energy and the
potential energy, the latter summed over the upper triangle by a sequential
scalar loop. Nested programs return tuples of energies."""
import numpy as np
import dace as dc

N, Nt = (dc.symbol(s, dtype=dc.int64) for s in ("N", "Nt"))


@dc.program
def getAcc(pos: dc.float64[N, 3], mass: dc.float64[N], G: dc.float64,
           softening: dc.float64):
    # Separations: dx[i, j] = x[j] - x[i].
    dx = np.add.outer(-pos[:, 0], pos[:, 0])
    dy = np.add.outer(-pos[:, 1], pos[:, 1])
    dz = np.add.outer(-pos[:, 2], pos[:, 2])
    inv_r3 = dx**2 + dy**2 + dz**2 + softening**2
    I = inv_r3 > 0
    np.power(inv_r3, -1.5, out=inv_r3, where=I)
    ax = G * (dx * inv_r3) @ mass
    ay = G * (dy * inv_r3) @ mass
    az = G * (dz * inv_r3) @ mass
    a = np.ndarray((N, 3), dtype=np.float64)
    a[:, 0] = ax
    a[:, 1] = ay
    a[:, 2] = az
    return a


@dc.program
def getEnergy(pos: dc.float64[N, 3], vel: dc.float64[N, 3], mass: dc.float64[N],
              G: dc.float64):
    KE = 0.5 * np.sum(np.reshape(mass, (N, 1)) * vel**2)
    dx = np.add.outer(-pos[:, 0], pos[:, 0])
    dy = np.add.outer(-pos[:, 1], pos[:, 1])
    dz = np.add.outer(-pos[:, 2], pos[:, 2])
    inv_r = np.sqrt(dx**2 + dy**2 + dz**2)
    I = inv_r > 0
    np.divide(1.0, inv_r, out=inv_r, where=I)
    tmp = -np.multiply.outer(mass, mass) * inv_r
    PE = 0.0
    for j in range(N):
        for k in range(j + 1, N):
            PE += tmp[j, k]
    PE *= G
    return KE, PE


@dc.program
def kernel(mass: dc.float64[N], pos: dc.float64[N, 3], vel: dc.float64[N, 3],
           dt: dc.float64, G: dc.float64, softening: dc.float64,
           KE: dc.float64[Nt + 1], PE: dc.float64[Nt + 1]):
    # Centre-of-mass frame.
    np.subtract(vel, np.mean(np.reshape(mass, (N, 1)) * vel, axis=0) / np.mean(mass),
                out=vel)
    acc = getAcc(pos, mass, G, softening)
    KE[0], PE[0] = getEnergy(pos, vel, mass, G)
    for i in range(Nt):
        vel += acc * dt / 2.0
        pos += vel * dt
        acc[:] = getAcc(pos, mass, G, softening)
        vel += acc * dt / 2.0
        KE[i + 1], PE[i + 1] = getEnergy(pos, vel, mass, G)


@dc.program
def initialize(mass: dc.float64[N], pos: dc.float64[N, 3], vel: dc.float64[N, 3],
               KE: dc.float64[Nt + 1], PE: dc.float64[Nt + 1]):
    # Equal masses summing to 20, as in NPBench; positions and velocities
    # in [0, 1), like its uniform random draws.
    for i in dc.map[0:N]:
        mass[i] = 20.0 / N
    for i, d in dc.map[0:N, 0:3]:
        pos[i, d] = ((i * 37 + d * 17 + 5) % 101) / 101
        vel[i, d] = ((i * 23 + d * 41 + 3) % 97) / 97
    for t in dc.map[0:Nt + 1]:
        KE[t] = 0.0
        PE[t] = 0.0


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {"G": 1.0, "softening": 0.1},
    "outputs": ["KE", "PE", "pos", "vel"],
    # Nt = ceil(tEnd / dt).
    "presets": {
        "test": {"N": 8, "Nt": 5, "scalars": {"dt": 0.05}},
        "S": {"N": 25, "Nt": 40, "scalars": {"dt": 0.05}},
        "M": {"N": 50, "Nt": 250, "scalars": {"dt": 0.02}},
        "L": {"N": 100, "Nt": 900, "scalars": {"dt": 0.01}},
        "paper": {"N": 100, "Nt": 1000, "scalars": {"dt": 0.01}},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
