"""Cavity flow (NPBench misc, from Barba's "12 steps to Navier-Stokes"):
lid-driven cavity flow; each time step builds the pressure source term,
runs `nit` Jacobi iterations of the pressure Poisson equation with its
boundary conditions, then updates the velocities and their boundaries.
dx, dy and dt follow from the grid size: each preset gives its own.

As in NPBench's DaCe version, the nested program is called with
``nit=nit``: DaCe requires a callee's free symbols to be passed.  Deviation:
``nt`` and ``nit`` are symbols of the presets here, where NPBench passes them
as ``int64`` scalar arguments (equal values, so equal results)."""
import numpy as np
import dace as dc

nx, ny, nt, nit = (dc.symbol(s, dtype=dc.int64) for s in ("nx", "ny", "nt", "nit"))


@dc.program
def build_up_b(b: dc.float64[ny, nx], rho: dc.float64, dt: dc.float64, u: dc.float64[ny, nx],
               v: dc.float64[ny, nx], dx: dc.float64, dy: dc.float64):
    b[1:-1, 1:-1] = (rho * (1 / dt * ((u[1:-1, 2:] - u[1:-1, 0:-2]) / (2 * dx) +
                                      (v[2:, 1:-1] - v[0:-2, 1:-1]) / (2 * dy)) -
                            ((u[1:-1, 2:] - u[1:-1, 0:-2]) / (2 * dx))**2 - 2 *
                            ((u[2:, 1:-1] - u[0:-2, 1:-1]) / (2 * dy) *
                             (v[1:-1, 2:] - v[1:-1, 0:-2]) / (2 * dx)) -
                            ((v[2:, 1:-1] - v[0:-2, 1:-1]) / (2 * dy))**2))


@dc.program
def pressure_poisson(p: dc.float64[ny, nx], dx: dc.float64, dy: dc.float64,
                     b: dc.float64[ny, nx]):
    pn = np.empty_like(p)
    pn[:] = p.copy()
    for q in range(nit):
        pn[:] = p.copy()
        p[1:-1, 1:-1] = (((pn[1:-1, 2:] + pn[1:-1, 0:-2]) * dy**2 +
                          (pn[2:, 1:-1] + pn[0:-2, 1:-1]) * dx**2) / (2 * (dx**2 + dy**2)) -
                         dx**2 * dy**2 / (2 * (dx**2 + dy**2)) * b[1:-1, 1:-1])
        p[:, -1] = p[:, -2]  # dp/dx = 0 at x = 2
        p[0, :] = p[1, :]  # dp/dy = 0 at y = 0
        p[:, 0] = p[:, 1]  # dp/dx = 0 at x = 0
        p[-1, :] = 0  # p = 0 at y = 2


@dc.program
def kernel(u: dc.float64[ny, nx], v: dc.float64[ny, nx], dt: dc.float64, dx: dc.float64,
           dy: dc.float64, p: dc.float64[ny, nx], rho: dc.float64, nu: dc.float64):
    un = np.empty_like(u)
    vn = np.empty_like(v)
    b = np.zeros((ny, nx))
    for n in range(nt):
        un[:] = u.copy()
        vn[:] = v.copy()
        build_up_b(b, rho, dt, u, v, dx, dy)
        pressure_poisson(p, dx, dy, b, nit=nit)
        u[1:-1, 1:-1] = (un[1:-1, 1:-1] - un[1:-1, 1:-1] * dt / dx *
                         (un[1:-1, 1:-1] - un[1:-1, 0:-2]) -
                         vn[1:-1, 1:-1] * dt / dy * (un[1:-1, 1:-1] - un[0:-2, 1:-1]) -
                         dt / (2 * rho * dx) * (p[1:-1, 2:] - p[1:-1, 0:-2]) + nu *
                         (dt / dx**2 * (un[1:-1, 2:] - 2 * un[1:-1, 1:-1] + un[1:-1, 0:-2]) +
                          dt / dy**2 * (un[2:, 1:-1] - 2 * un[1:-1, 1:-1] + un[0:-2, 1:-1])))
        v[1:-1, 1:-1] = (vn[1:-1, 1:-1] - un[1:-1, 1:-1] * dt / dx *
                         (vn[1:-1, 1:-1] - vn[1:-1, 0:-2]) -
                         vn[1:-1, 1:-1] * dt / dy * (vn[1:-1, 1:-1] - vn[0:-2, 1:-1]) -
                         dt / (2 * rho * dy) * (p[2:, 1:-1] - p[0:-2, 1:-1]) + nu *
                         (dt / dx**2 * (vn[1:-1, 2:] - 2 * vn[1:-1, 1:-1] + vn[1:-1, 0:-2]) +
                          dt / dy**2 * (vn[2:, 1:-1] - 2 * vn[1:-1, 1:-1] + vn[0:-2, 1:-1])))
        u[0, :] = 0
        u[:, 0] = 0
        u[:, -1] = 0
        u[-1, :] = 1  # the lid moves
        v[0, :] = 0
        v[-1, :] = 0
        v[:, 0] = 0
        v[:, -1] = 0


@dc.program
def initialize(u: dc.float64[ny, nx], v: dc.float64[ny, nx], p: dc.float64[ny, nx]):
    # At rest, as in NPBench.
    for i, j in dc.map[0:ny, 0:nx]:
        u[i, j] = 0.0
        v[i, j] = 0.0
        p[i, j] = 0.0


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {"rho": 1.0, "nu": 0.1},
    "outputs": ["u", "v", "p"],
    # dx = 2 / (nx - 1), dy = 2 / (ny - 1), dt = 0.1 / ((nx - 1) * (ny - 1)).
    "presets": {
        "test": {"ny": 11, "nx": 11, "nt": 5, "nit": 3,
                 "scalars": {"dx": 0.2, "dy": 0.2, "dt": 0.001}},
        "S": {"ny": 61, "nx": 61, "nt": 25, "nit": 5,
              "scalars": {"dx": 0.03333333333333333, "dy": 0.03333333333333333,
                          "dt": 2.777777777777778e-05}},
        "M": {"ny": 121, "nx": 121, "nt": 50, "nit": 10,
              "scalars": {"dx": 0.016666666666666666, "dy": 0.016666666666666666,
                          "dt": 6.944444444444444e-06}},
        "L": {"ny": 201, "nx": 201, "nt": 100, "nit": 20,
              "scalars": {"dx": 0.01, "dy": 0.01, "dt": 2.5e-06}},
        "paper": {"ny": 101, "nx": 101, "nt": 700, "nit": 50,
                  "scalars": {"dx": 0.02, "dy": 0.02, "dt": 1e-05}},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}
