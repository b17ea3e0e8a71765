"""GT4Py's `gt4py.cartesian` stencils as cases for `cargo xtask clients`.

For each stencil of `corpus/clients/gt4py/cartesian/` and each DaCe backend
of GT4Py (`dace:cpu`, `dace:gpu`), writes the SDFG GT4Py compiles for every
call of the stencil (`SDFGManager.sdfg_via_schedule_tree`, before GT4Py
wraps it in C++), with inputs and GT4Py's `numpy` backend's answer (or that
of the GT4Py backend a program names instead).

GT4Py's SDFG sees each field from a pointer GT4Py shifts (its generated
`multi_shifted` call): the origin less the field's lower extent, with the
domain in the symbols `__I`, `__J`, `__K`. The driver passes each field's
window exactly so (`generate_dace_args` of GT4Py's DaCe backend), and the
expected values are the same windows of the reference backend's fields.
The strides of GT4Py's transients, which it fixes only in its C++ glue,
are bound as that glue fixes them.

Usage: gt4py_cartesian.py OUT_DIR [NAME ...]
"""

import importlib.util
import pathlib
import sys
import zlib

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from common import run_all, c_strides, selected, write_case  # noqa: E402

import dace  # noqa: E402
import gt4py.cartesian.gtscript as gs  # noqa: E402
from gt4py.cartesian import backend as gtback  # noqa: E402
from gt4py.cartesian.backend.dace_backend import SDFGManager  # noqa: E402
from gt4py.cartesian.backend.module_generator import make_args_data_from_gtir  # noqa: E402
from gt4py.cartesian.gtc.dace.utils import array_dimensions, replace_strides  # noqa: E402
from gt4py.cartesian.gtc.gtir_to_oir import GTIRToOIR  # noqa: E402
from gt4py.cartesian.gtc.passes.oir_optimizations.utils import compute_fields_extents  # noqa: E402
from gt4py.cartesian.stencil_builder import StencilBuilder  # noqa: E402
from gt4py.cartesian.gtc.passes.gtir_k_boundary import compute_k_boundary  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[3]
PROGRAMS = ROOT / "corpus" / "clients" / "gt4py" / "cartesian"
BACKENDS = ("dace:cpu", "dace:gpu")
HALO = 3  # every field's halo on each side, in I, J and K


def load(path):
    spec = importlib.util.spec_from_file_location(f"gt4py_case_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def full_inputs(module, builder, domain, rng):
    """Whole fields (domain plus HALO on every side of each axis they have)
    and scalar parameters."""
    info = make_args_data_from_gtir(builder.gtir_pipeline)
    fields, scalars = {}, {}
    for name, fi in info.field_info.items():
        if fi is None:
            continue
        shape = [domain["IJK".index(a)] + 2 * HALO for a in fi.axes] + list(fi.data_dims)
        dtype = np.dtype(fi.dtype)
        if dtype.kind == "f":
            v = rng.uniform(-1.0, 1.0, shape)
        elif dtype.kind == "b":
            v = rng.integers(0, 2, shape)
        else:
            v = rng.integers(-5, 6, shape)
        fields[name] = v.astype(dtype)
    for name, pi in info.parameter_info.items():
        if pi is None:
            continue
        scalars[name] = np.dtype(pi.dtype).type(getattr(module, "SCALARS", {}).get(name, 0.75))
    return info, fields, scalars


def gt_call(stencil, fields, scalars, domain, origin):
    args = {k: v.copy() for k, v in fields.items()}
    stencil(**args, **scalars, origin=origin, domain=domain)
    return args


def windows(builder, sdfg, info, domain, origin):
    """Each SDFG array's window of its whole field: (slices, strides symbols)."""
    oir = GTIRToOIR().visit(builder.gtir)
    extents = compute_fields_extents(oir, add_k=True)
    k_origins = {k: max(b[0], 0) for k, b in compute_k_boundary(builder.gtir).items()}
    symbols = {"__I": domain[0], "__J": domain[1], "__K": domain[2]}
    cut = {}
    for name, array in sdfg.arrays.items():
        if array.transient or isinstance(array, dace.data.Scalar):
            continue
        ext = extents.get(name)
        off = (
            max(-ext[0][0], 0) if ext else 0,
            max(-ext[1][0], 0) if ext else 0,
            k_origins.get(name, 0),
        )
        dims = [d for d, on in zip("IJK", array_dimensions(array)) if on]
        shape = [int(dace.symbolic.evaluate(s, symbols)) for s in array.shape]
        slices = []
        for k, extent in enumerate(shape):
            if k < len(dims):
                axis = "IJK".index(dims[k])
                start = origin[axis] - off[axis]
                slices.append(slice(start, start + extent))
            else:
                slices.append(slice(0, extent))
        cut[name] = tuple(slices)
        strides = c_strides(shape)
        for k, d in enumerate(dims):
            symbols[f"__{name}_{d}_stride"] = strides[k]
        for k in range(len(dims), len(shape)):
            symbols[f"__{name}_d{k - len(dims)}_stride"] = strides[k]
    return cut, symbols


def transient_strides(builder, sdfg, symbols):
    """The strides GT4Py gives the transients of every (nested) SDFG: it
    substitutes them before code generation (`_specialize_transient_strides`),
    so the SDFG it writes leaves them free."""
    arrays = [
        array
        for nested in sdfg.all_sdfgs_recursive()
        for array in nested.arrays.values()
        if isinstance(array, dace.data.Array) and array.transient
    ]
    layout = builder.backend.storage_info
    return {
        name: int(dace.symbolic.evaluate(stride, symbols))
        for name, stride in replace_strides(arrays, layout).items()
    }


def case(path, out_root):
    """Writes the program's cases. Besides `definition`, a program may set
    `DOMAIN`, `SCALARS` (values of its scalar parameters), `TOLERANCE`,
    `EXTERNALS` (GTScript's `from __externals__ import ...`) and
    `REFERENCE_BACKEND` (a GT4Py backend other than `numpy` computing the
    reference, where `numpy` lacks a construct or gets it wrong)."""
    module = load(path)
    domain = tuple(getattr(module, "DOMAIN", (7, 6, 5)))
    origin = (HALO, HALO, HALO)
    externals = getattr(module, "EXTERNALS", {})
    reference_backend = getattr(module, "REFERENCE_BACKEND", "numpy")
    reference = gs.stencil(backend=reference_backend, definition=module.definition,
                           name=f"ref_{path.stem}", externals=externals)
    for backend in selected(BACKENDS):
        source = str(path.relative_to(ROOT))
        try:
            builder = StencilBuilder(
                module.definition, backend=gtback.from_name(backend)
            ).with_options(
                name=path.stem, module=f"gt4py_case_{path.stem}", rebuild=True
            ).with_externals(externals)
            sdfg = SDFGManager(builder).sdfg_via_schedule_tree()
            sdfg.validate()
        except Exception as e:  # the tool's own refusal, recorded as such
            write_case(out_root, "gt4py", path.stem, backend, source=source,
                       refused=f"GT4Py writes no SDFG: {type(e).__name__}: {e}")
            continue
        # Seeded by the program alone: the same inputs for both backends and
        # whichever programs a run selects.
        rng = np.random.default_rng([41, zlib.crc32(path.stem.encode())])
        info, fields, scalars = full_inputs(module, builder, domain, rng)
        after = gt_call(reference, fields, scalars, domain, origin)
        cut, symbols = windows(builder, sdfg, info, domain, origin)
        symbols.update(transient_strides(builder, sdfg, symbols))
        inputs, expected = {}, {}
        _, writes = sdfg.read_and_write_sets()
        for name, array in sdfg.arrays.items():
            if array.transient:
                continue
            if name in cut:
                inputs[name] = fields[name][cut[name]]
                if name in writes:
                    expected[name] = after[name][cut[name]]
            elif name in scalars:
                inputs[name] = np.asarray(scalars[name], dtype=array.dtype.as_numpy_dtype())
            else:
                raise RuntimeError(f"`{name}` of the SDFG is no argument of the stencil")
        for name in sdfg.free_symbols:
            if name not in symbols:
                raise RuntimeError(f"no value for the SDFG's symbol `{name}`")
        write_case(out_root, "gt4py", path.stem, backend, source=source, sdfg=sdfg,
                   inputs=inputs, expected=expected, symbols=symbols,
                   reference=f"GT4Py's {reference_backend} backend",
                   tolerance=getattr(module, "TOLERANCE", None))


def main():
    run_all(PROGRAMS.glob("*.py"), case)


if __name__ == "__main__":
    main()
