"""GT4Py's `gt4py.next` programs as cases for `cargo xtask clients`.

Each module of `corpus/clients/gt4py/next/` defines:

- `program`: a `@gtx.program` without a backend, so that calling it runs
  GT4Py's embedded (NumPy) execution, the reference;
- `offset_provider`: what the program is called with: `{}` where it only
  shifts along Cartesian dimensions (`f(I + 1)`), else the connectivity
  tables (`gtx.as_connectivity`) by offset name;
- `arguments(rng)`: the program's arguments by parameter name: fields
  (`gtx.as_field`, on the domains the program expects, sized by the
  module's constants) and NumPy scalars.

For each program and each variant (`VARIANTS`: options of GT4Py's
`make_dace_backend`), the driver writes the SDFG that the translation step
of GT4Py's DaCe backend (`workflow/translation.py`, `DaCeTranslator`)
returns: the GTIR lowered by `build_sdfg_from_gtir`, then `gt_auto_optimize`
or, for the GPU without it, `gt_gpu_transformation`, the call made
synchronous or asynchronous, and with `use_metrics` the timer's
instrumentation. The driver reads it back from JSON as the compilation step
does (`workflow/compilation.py`) and stops there: it compiles nothing.

The arguments are bound as GT4Py binds them on the first call of the
compiled SDFG (`workflow/decoration.py`, `convert_args`, which calls
`sdfg_callable.get_sdfg_args`): each field by the SDFG's name for its
parameter, with its range symbols from the field's domain (`__f_I_range_0`
the start, `__f_I_range_1` the stop) and its stride symbols from its
buffer; scalars by value; each connectivity table the SDFG reads
(`gt_conn_<offset>`) with its size and stride symbols; and the metrics
arguments, `gt_metrics_level` at GT4Py's current level (0 unless
`GT4PY_COLLECT_METRICS_LEVEL` says otherwise, so the timer's branch does
not run) and `gt_compute_time` as `[1.0]`. The buffers are those GT4Py's
allocators make for the variant's device (horizontal dimensions
contiguous, padded to 64 bytes on the CPU, 128 on the GPU), so the stride
symbols are GT4Py's own; the inputs are their values in logical shape. The
expected values are the same containers after the embedded call.

Where GT4Py's own validation of the SDFG it built fails (GT4Py 1.1.12
writes nested SDFGs in DaCe's convention before 2.0, whose connectors
describe a window of the outer array, and DaCe 2.0.0b1 refuses them), DaCe
has saved that SDFG (`_dacegraphs/invalid.sdfgz`): the case is that SDFG,
as GT4Py wrote it, marked with DaCe's refusal (`dace_refused`); the
translation's later steps (optimization, instrumentation) did not run.

Usage: gt4py_next.py OUT_DIR [NAME ...]
"""

import contextlib
import importlib.util
import inspect
import pathlib
import sys
import tempfile
import warnings

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from common import run_all, selected, write_case  # noqa: E402

import dace  # noqa: E402
import gt4py.next as gtx  # noqa: E402
from gt4py._core import definitions as core_defs  # noqa: E402
from gt4py.next import custom_layout_allocators, utils as gtx_utils  # noqa: E402
from gt4py.next.instrumentation import metrics  # noqa: E402
from gt4py.next.otf import arguments as otf_arguments, definitions  # noqa: E402
from gt4py.next.program_processors.runners.dace import make_dace_backend  # noqa: E402
from gt4py.next.program_processors.runners.dace import sdfg_args, sdfg_callable  # noqa: E402
from gt4py.next.program_processors.runners.dace.workflow import common as wf_common  # noqa: E402
from gt4py.storage import allocators as core_allocators  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[3]
PROGRAMS = ROOT / "corpus" / "clients" / "gt4py" / "next"

# `make_dace_backend` options by variant; `-metrics` ones are GT4Py's own
# `run_dace_cpu` and `run_dace_gpu`, the others leave the timer out.
VARIANTS = {
    "next:cpu": dict(gpu=False, auto_optimize=False, use_metrics=False),
    "next:cpu-opt": dict(gpu=False, auto_optimize=True, use_metrics=False),
    "next:cpu-opt-metrics": dict(gpu=False, auto_optimize=True, async_sdfg_call=False),
    "next:gpu": dict(gpu=True, auto_optimize=False, use_metrics=False),
    "next:gpu-opt": dict(gpu=True, auto_optimize=True, use_metrics=False),
    "next:gpu-opt-metrics": dict(gpu=True, auto_optimize=True, async_sdfg_call=True),
}

# The layouts of GT4Py's field buffers: its CPU allocator, and its CUDA one
# (`custom_layout_allocators.py`, defined only where CuPy is) on the host.
CPU_LAYOUT = custom_layout_allocators.StandardCPUFieldBufferAllocator()
GPU_LAYOUT = custom_layout_allocators.BaseFieldBufferAllocator(
    device_type=core_defs.DeviceType.CPU,
    array_utils=core_allocators.numpy_array_utils,
    layout_mapper=custom_layout_allocators.horizontal_first_layout_mapper,
    byte_alignment=128,
)


def load(path):
    spec = importlib.util.spec_from_file_location(f"gt4py_next_case_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def positional(module, values):
    """The arguments in the order of the program's parameters, as GT4Py
    passes them to the SDFG."""
    return [values[p] for p in inspect.signature(module.program.definition).parameters]


def relayout(allocator, args, offset_provider):
    """The arguments and connectivity tables in fresh buffers of `allocator`."""
    args = [
        gtx.as_field(a.domain, a.asnumpy(), allocator=allocator) if hasattr(a, "domain") else a
        for a in args
    ]
    offset_provider = {
        k: v
        if isinstance(v, gtx.Dimension)
        else gtx.as_connectivity(
            v.domain, v.codomain, v.asnumpy(), skip_value=v.skip_value, allocator=allocator
        )
        for k, v in offset_provider.items()
    }
    return args, offset_provider


class RefusedByDace(Exception):
    """GT4Py built an SDFG that DaCe's validation refuses: `sdfg` is it, as
    DaCe saved it, and `refusal` DaCe's exception."""

    def __init__(self, refusal, sdfg):
        super().__init__(str(refusal))
        self.refusal = refusal
        self.sdfg = sdfg


def translate(program, args, offset_provider, options):
    """The SDFG the DaCe backend's translation step writes for this call;
    `RefusedByDace` where DaCe refuses the SDFG GT4Py built."""
    backend = make_dace_backend(**options)
    compile_time_args = otf_arguments.CompileTimeArgs.from_concrete(
        *args, offset_provider=offset_provider
    )
    compilable = backend.transforms(
        definitions.ConcreteProgramDef(data=program.definition_stage, args=compile_time_args)
    )
    # The bare step: the backend's own wraps it in an on-disk cache.
    translator = backend.executor.translation.step
    # DaCe saves an SDFG that fails validation to `_dacegraphs/` in the
    # working directory: keep that out of the caller's.
    with tempfile.TemporaryDirectory() as scratch, contextlib.chdir(scratch):
        try:
            source = translator(compilable)
        except dace.sdfg.InvalidSDFGError as e:
            invalid = pathlib.Path(scratch) / "_dacegraphs" / "invalid.sdfgz"
            if not invalid.is_file():
                raise
            raise RefusedByDace(e, dace.SDFG.from_file(str(invalid))) from e
    return dace.SDFG.from_json(source.source_code)


def bind(sdfg, offset_provider, args):
    """The SDFG's arguments and symbols by name, as GT4Py's first call of
    the compiled SDFG makes them: `convert_args` in `workflow/decoration.py`
    with `get_sdfg_args` of `sdfg_callable.py`, whose body this repeats but
    for its check that each connectivity table lives on the SDFG's device
    (the GPU SDFGs are bound to host buffers here, to be laid out by the
    harness)."""
    call = sdfg_callable._get_args(sdfg, gtx_utils.flatten_nested_tuple(tuple(args)))
    for offset, connectivity in offset_provider.items():
        name = sdfg_args.connectivity_identifier(offset)
        if name in sdfg.arrays:
            table = connectivity.ndarray
            call |= sdfg_callable.get_array_shape_symbols(sdfg.arrays[name], table)
            call |= sdfg_callable.get_array_stride_symbols(sdfg.arrays[name], table)
            call[name] = table
    dtype = wf_common.SDFG_ARG_METRIC_COMPUTE_TIME_DTYPE.as_numpy_dtype()
    call[wf_common.SDFG_ARG_METRIC_LEVEL] = metrics.get_current_level()
    call[wf_common.SDFG_ARG_METRIC_COMPUTE_TIME] = np.array([1], dtype=dtype)
    return call


def containers(sdfg, call):
    """Each non-transient container's value, in its logical shape and dtype."""
    out = {}
    for name, desc in sdfg.arrays.items():
        if desc.transient:
            continue
        if name not in call:
            raise RuntimeError(f"GT4Py binds nothing to the SDFG's container `{name}`")
        out[name] = np.asarray(call[name], dtype=desc.dtype.as_numpy_dtype())
    return out


def symbols_of(sdfg, call, inputs):
    """The values of the SDFG's free symbols, checked against the inputs'
    logical shapes. GT4Py makes scalar arguments symbols of their own type
    (`float64` ones `double`): those stay floats, which the case passes as
    scalars."""
    types = sdfg.symbols
    symbols = {
        k: (float(v) if k in types and types[k].as_numpy_dtype().kind == "f" else int(v))
        for k, v in call.items()
        if k in sdfg.free_symbols
    }
    missing = sorted(str(s) for s in sdfg.free_symbols if str(s) not in symbols)
    if missing:
        raise RuntimeError(f"GT4Py binds no value to the SDFG's symbols {missing}")
    for name, value in inputs.items():
        desc = sdfg.arrays[name]
        shape = [] if isinstance(desc, dace.data.Scalar) else [
            int(dace.symbolic.evaluate(s, symbols)) for s in desc.shape
        ]
        if list(value.shape) != shape:
            raise RuntimeError(f"`{name}`: shape {value.shape} for the SDFG's {shape}")
    return symbols


def case(path, out_root):
    module = load(path)
    values = positional(module, module.arguments(np.random.default_rng(43)))
    after, _ = relayout(CPU_LAYOUT, values, {})
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Using Python execution.*")
        module.program(*after, offset_provider=module.offset_provider)
    source = str(path.relative_to(ROOT))
    for variant in selected(VARIANTS):
        options = VARIANTS[variant]
        layout = GPU_LAYOUT if options["gpu"] else CPU_LAYOUT
        args, offset_provider = relayout(layout, values, module.offset_provider)
        results, _ = relayout(layout, after, {})
        dace_refused = None
        try:
            sdfg = translate(module.program, args, offset_provider, options)
        except RefusedByDace as e:
            sdfg = e.sdfg
            why = str(e.refusal).splitlines()[0] if str(e.refusal) else ""
            dace_refused = f"{type(e.refusal).__name__}: {why}"
        except Exception as e:  # the tool's own refusal, recorded as such
            why = str(e).splitlines()[0] if str(e) else ""
            write_case(out_root, "gt4py", path.stem, variant, source=source,
                       refused=f"GT4Py writes no SDFG: {type(e).__name__}: {why}")
            continue
        call = bind(sdfg, offset_provider, args)
        inputs = containers(sdfg, call)
        symbols = symbols_of(sdfg, call, inputs)
        _, writes = sdfg.read_and_write_sets()
        expected = {
            k: v
            for k, v in containers(sdfg, bind(sdfg, offset_provider, results)).items()
            if k in writes
        }
        write_case(out_root, "gt4py", path.stem, variant, source=source, sdfg=sdfg,
                   inputs=inputs, expected=expected, symbols=symbols,
                   reference="GT4Py's embedded execution (gt4py.next without a backend)",
                   dace_refused=dace_refused)


def main():
    run_all(PROGRAMS.glob("*.py"), case)


if __name__ == "__main__":
    main()
