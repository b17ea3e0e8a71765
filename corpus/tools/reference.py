#!/usr/bin/env python3
"""NumPy reference runner for corpus kernels (see docs/corpus.md).

    python3 corpus/tools/reference.py FILE --preset test --out DIR
    python3 corpus/tools/reference.py FILE --list-presets
    python3 corpus/tools/reference.py FILE --preset S --out DIR --time 10 [--array-module cupy]

For the chosen preset it does what the harness does:

1. symbols := ``BENCHMARK["presets"][preset]`` (its optional ``"scalars"``
   dict gives scalar values of its own over ``BENCHMARK["scalars"]``);
2. every array parameter of the kernel := zeros of its annotated dtype and
   shape;
3. run ``init`` on the arrays it takes (by name);
4. run the kernel with those arrays and ``BENCHMARK["scalars"]`` (each a
   NumPy scalar of the parameter's annotated dtype);
5. collect ``BENCHMARK["outputs"]``.

It writes ``DIR/<output>.npy`` for every output (``__return`` for a single
returned value, ``__return_0``, ``__return_1``, ... for a returned tuple) and
``DIR/inputs/<array>.npy`` for every array parameter of the kernel as it was
after step 3, before the kernel ran.

Symbols are bound by setting the kernel module's globals of the same names to
plain ``int``s (and, with the stand-in ``dace`` of ``corpus/tools/dace``, by
``dace.bind_symbols``), so inside the kernel body ``N`` is the preset's int.
Annotations are read before that, while they still hold the symbolic shapes.

With ``--time K`` it then times the kernel alone: one warm-up call, then K
calls, each on fresh copies of the inputs (copied outside the timed region),
and writes ``DIR/timing.json`` (``{"module", "runs_ms", "median_ms",
"matches_numpy"}``).  ``--array-module cupy`` times the same program with
CuPy as its ``np`` (what a user would pick instead of a compiler): the inputs
are moved to the GPU before the clock starts, and each call ends with a
device synchronization; its outputs are compared with NumPy's within the
kernel's tolerance (``matches_numpy``), and a kernel CuPy cannot run is an
error naming what failed.

``corpus/tools`` goes on ``sys.path`` (for the stand-in ``dace``) only when
``import dace`` fails.  Only NumPy is needed.  Any problem exits with status 1
and a message on stderr.
"""

import argparse
import importlib.util
import inspect
import operator
import os
import sys
import time

import numpy as np

sys.dont_write_bytecode = True  # keep __pycache__ out of the corpus tree

TOOLS_DIR = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TOLERANCE = {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5}
BENCHMARK_KEYS = {"program", "init", "scalars", "outputs", "presets", "tolerance"}
REQUIRED_KEYS = {"program", "outputs", "presets"}


class CorpusError(Exception):
    """A problem with a corpus file or its run; reported without a traceback."""


# --------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------

def import_dace():
    try:
        import dace  # noqa: F401
    except ImportError:
        if TOOLS_DIR not in sys.path:
            sys.path.insert(0, TOOLS_DIR)
        import dace  # noqa: F401
    return sys.modules["dace"]


def load_module(path):
    if not os.path.isfile(path):
        raise CorpusError(f"{path}: no such file")
    import_dace()
    stem = os.path.splitext(os.path.basename(path))[0]
    name = f"corpus_kernel_{stem}_{abs(hash(os.path.abspath(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CorpusError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # the file itself is broken
        raise CorpusError(f"{path}: import failed: {type(e).__name__}: {e}") from e
    return module


def read_benchmark(module, path):
    bench = getattr(module, "BENCHMARK", None)
    if not isinstance(bench, dict):
        raise CorpusError(f"{path}: no BENCHMARK dict")
    unknown = set(bench) - BENCHMARK_KEYS
    if unknown:
        raise CorpusError(f"{path}: unknown BENCHMARK keys {sorted(unknown)}")
    missing = REQUIRED_KEYS - set(bench)
    if missing:
        raise CorpusError(f"{path}: BENCHMARK lacks {sorted(missing)}")
    if not isinstance(bench["presets"], dict) or not bench["presets"]:
        raise CorpusError(f"{path}: BENCHMARK['presets'] must be a non-empty dict")
    for pname, preset in bench["presets"].items():
        if not isinstance(preset, dict):
            raise CorpusError(f"{path}: preset {pname!r} must be a dict of symbol values")
        for sym, val in preset.items():
            if sym == "scalars":
                if not isinstance(val, dict):
                    raise CorpusError(f"{path}: preset {pname!r}: 'scalars' must be a dict")
                continue
            if isinstance(val, bool) or not isinstance(val, int):
                raise CorpusError(f"{path}: preset {pname!r}: {sym} = {val!r} is not an int")
    if not isinstance(bench["outputs"], list) or not bench["outputs"]:
        raise CorpusError(f"{path}: BENCHMARK['outputs'] must be a non-empty list")
    scalars = bench.get("scalars", {})
    if not isinstance(scalars, dict):
        raise CorpusError(f"{path}: BENCHMARK['scalars'] must be a dict")
    tol = bench.get("tolerance", {})
    if not isinstance(tol, dict) or set(tol) - set(DEFAULT_TOLERANCE):
        raise CorpusError(f"{path}: BENCHMARK['tolerance'] may only set {sorted(DEFAULT_TOLERANCE)}")
    return bench


# --------------------------------------------------------------------------
# Annotations
# --------------------------------------------------------------------------

def _unwrap(prog):
    """The plain Python function of a ``@dace.program`` (real or stand-in)."""
    return getattr(prog, "f", prog)


def _python_callable(prog):
    """What to call to run a program as Python: the stand-in's wrapper (it
    binds per-call symbols), or real DaCe's undecorated ``.f`` (calling the
    DaceProgram itself would compile it)."""
    dace = sys.modules.get("dace")
    if dace is not None and getattr(dace, "STANDIN", False):
        return prog
    return _unwrap(prog)


def _is_array_annotation(ann):
    return hasattr(ann, "shape") and hasattr(ann, "dtype")


def _numpy_type(dtype, where):
    t = getattr(dtype, "type", None)
    if t is None:
        raise CorpusError(f"{where}: {dtype!r} is not a dace data type")
    return np.dtype(t)


def _free_symbols(dim):
    if isinstance(dim, (int, np.integer)):
        return set()
    fs = getattr(dim, "free_symbols", None)
    if callable(fs):  # stand-in expression
        return set(fs())
    if fs is not None:  # sympy / real dace
        return {str(s) for s in fs}
    raise CorpusError(f"cannot read the symbols of shape expression {dim!r}")


def _eval_dim(dim, values):
    if isinstance(dim, (int, np.integer)):
        return int(dim)
    ev = getattr(dim, "evaluate", None)
    if callable(ev):  # stand-in expression
        return ev(values)
    try:  # sympy / real dace
        subs = {s: values[str(s)] for s in dim.free_symbols}
        return operator.index(int(dim.subs(subs)))
    except Exception as e:
        raise CorpusError(f"cannot evaluate shape expression {dim!r}: {e}") from e


def parameters(prog, where):
    """name -> ("array", numpy dtype, shape exprs) | ("scalar", numpy dtype, None)."""
    func = _unwrap(prog)
    if not callable(func):
        raise CorpusError(f"{where} is not a function")
    out = {}
    sig = inspect.signature(func)
    annotations = getattr(func, "__annotations__", {})
    for name, p in sig.parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise CorpusError(f"{where}: *args/**kwargs parameters are not supported")
        ann = annotations.get(name, inspect.Parameter.empty)
        if isinstance(ann, str):
            ann = eval(ann, func.__globals__)  # postponed annotations
        if ann is inspect.Parameter.empty:
            raise CorpusError(f"{where}: parameter {name} has no annotation")
        if _is_array_annotation(ann):
            out[name] = ("array", _numpy_type(ann.dtype, f"{where}: {name}"), tuple(ann.shape))
        else:
            out[name] = ("scalar", _numpy_type(ann, f"{where}: {name}"), None)
    return out


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------

def _get_program(module, name, path, what):
    if not isinstance(name, str):
        raise CorpusError(f"{path}: BENCHMARK[{what!r}] must be a function name")
    prog = getattr(module, name, None)
    if prog is None:
        raise CorpusError(f"{path}: BENCHMARK[{what!r}] names {name!r}, which the file does not define")
    return prog


def bind_symbols(module, preset, path):
    dace = sys.modules.get("dace")
    # The preset's own scalar values are arguments, not symbols.
    preset = {k: v for k, v in preset.items() if k != "scalars"}
    for name, value in preset.items():
        if not hasattr(module, name):
            raise CorpusError(f"{path}: preset symbol {name} is not defined in the file")
        current = getattr(module, name)
        # stand-in Symbol or real DaCe (sympy) symbol: both have free_symbols
        if not hasattr(current, "free_symbols") or isinstance(current, np.ndarray):
            raise CorpusError(f"{path}: preset key {name} is not a symbol of the file")
        setattr(module, name, int(value))
    if dace is not None and getattr(dace, "STANDIN", False):
        dace.bind_symbols(preset)


def run(path, preset_name, timing=None):
    """Run FILE for a preset.

    Returns (bench, inputs, outputs, seconds, timed): inputs maps every
    kernel array parameter to its value after ``init``; outputs maps every
    name in ``BENCHMARK["outputs"]`` to its value after the kernel; timed is
    ``time_kernel``'s result for ``timing = (runs, module name)``, else None.
    """
    module = load_module(path)
    bench = read_benchmark(module, path)
    presets = bench["presets"]
    if preset_name not in presets:
        raise CorpusError(f"{path}: no preset {preset_name!r} (has {', '.join(presets)})")
    preset = dict(presets[preset_name])

    kernel = _get_program(module, bench["program"], path, "program")
    kparams = parameters(kernel, f"{path}: kernel {bench['program']}")
    init = None
    iparams = {}
    if bench.get("init") is not None:
        init = _get_program(module, bench["init"], path, "init")
        iparams = parameters(init, f"{path}: init {bench['init']}")

    # every symbol a shape uses must be in the preset
    for pname, (kind, _dt, shape) in list(kparams.items()) + list(iparams.items()):
        if kind != "array":
            continue
        for dim in shape:
            missing = _free_symbols(dim) - set(preset)
            if missing:
                raise CorpusError(
                    f"{path}: preset {preset_name!r} lacks symbol(s) {sorted(missing)} "
                    f"used in the shape of {pname}")

    # 2. arrays := zeros
    arrays = {}
    for name, (kind, dt, shape) in kparams.items():
        if kind != "array":
            continue
        dims = tuple(_eval_dim(d, preset) for d in shape)
        if any(d < 0 for d in dims):
            raise CorpusError(f"{path}: array {name} has negative shape {dims} in preset {preset_name!r}")
        arrays[name] = np.zeros(dims, dtype=dt)

    # scalars
    # A preset may give scalar values of its own over BENCHMARK's.
    scalar_values = dict(bench.get("scalars", {}))
    scalar_values.update(preset.get("scalars", {}))
    scalars = {}
    for name, (kind, dt, _shape) in kparams.items():
        if kind != "scalar":
            continue
        if name not in scalar_values:
            raise CorpusError(f"{path}: kernel scalar parameter {name} has no value in BENCHMARK['scalars']")
        v = scalar_values[name]
        if isinstance(v, bool) and dt != np.bool_ or not isinstance(v, (int, float, bool)):
            raise CorpusError(f"{path}: scalar {name} = {v!r} is not a number")
        scalars[name] = dt.type(v)
    extra = set(scalar_values) - set(scalars)
    if extra:
        raise CorpusError(f"{path}: BENCHMARK['scalars'] names {sorted(extra)}, which are not kernel scalar parameters")

    # outputs must name arrays or returns
    outputs_spec = bench["outputs"]
    for o in outputs_spec:
        if not isinstance(o, str):
            raise CorpusError(f"{path}: output {o!r} is not a name")
        if not (o in arrays or o == "__return" or o.startswith("__return_") and o[9:].isdigit()):
            raise CorpusError(f"{path}: output {o} is neither an array parameter of the kernel nor __return[_i]")

    bind_symbols(module, preset, path)

    # 3. init
    if init is not None:
        for name, (kind, dt, shape) in iparams.items():
            if kind != "array" or name not in arrays:
                raise CorpusError(f"{path}: init parameter {name} is not an array parameter of the kernel")
            kkind, kdt, kshape = kparams[name]
            ishape = tuple(_eval_dim(d, preset) for d in shape)
            if dt != kdt or ishape != arrays[name].shape:
                raise CorpusError(
                    f"{path}: init parameter {name} is {dt}{list(ishape)}, "
                    f"the kernel's is {kdt}{list(arrays[name].shape)}")
        try:
            ret = _python_callable(init)(**{name: arrays[name] for name in iparams})
        except Exception as e:
            raise CorpusError(f"{path}: init {bench['init']} failed: {type(e).__name__}: {e}") from e
        if ret is not None:
            raise CorpusError(f"{path}: init {bench['init']} returned a value; it must fill its arrays in place")
        for name in iparams:
            a = arrays[name]
            if a.dtype.kind in "fc" and not np.all(np.isfinite(a)):
                raise CorpusError(f"{path}: init left non-finite values in {name}")
    inputs = {name: a.copy() for name, a in arrays.items()}

    # 4. kernel
    args = {}
    for name, (kind, _dt, _shape) in kparams.items():
        args[name] = arrays[name] if kind == "array" else scalars[name]
    t0 = time.perf_counter()
    try:
        result = _python_callable(kernel)(**args)
    except Exception as e:
        raise CorpusError(f"{path}: kernel {bench['program']} failed: {type(e).__name__}: {e}") from e
    seconds = time.perf_counter() - t0

    # 5. outputs
    returns = {}
    if isinstance(result, tuple):
        for i, r in enumerate(result):
            returns[f"__return_{i}"] = np.asarray(r)
    elif result is not None:
        returns["__return"] = np.asarray(result)
    outputs = {}
    for o in outputs_spec:
        if o in arrays:
            outputs[o] = arrays[o]
        elif o in returns:
            outputs[o] = returns[o]
        else:
            have = ", ".join(returns) or "nothing"
            raise CorpusError(f"{path}: output {o} was not returned (the kernel returned {have})")
    unlisted = set(returns) - set(outputs_spec)
    if unlisted:
        raise CorpusError(f"{path}: the kernel returns {sorted(unlisted)}, which BENCHMARK['outputs'] does not list")
    for o, a in outputs.items():
        if a.dtype.kind in "fc" and not np.all(np.isfinite(a)):
            raise CorpusError(f"{path}: output {o} has non-finite values")
    timed = None
    if timing is not None:
        runs, module_name = timing
        timed = time_kernel(module, bench, kernel, kparams, inputs, scalars, outputs,
                            runs, module_name, path)
    return bench, inputs, outputs, seconds, timed


def time_kernel(module, bench, kernel, kparams, inputs, scalars, outputs, runs, module_name, path):
    """One warm-up call and ``runs`` timed calls of the kernel with
    ``module_name`` (numpy or cupy) as its ``np``."""
    if module_name == "numpy":
        xp = np
        to_device = np.array
        sync = lambda: None  # noqa: E731
        to_host = np.asarray
    elif module_name == "cupy":
        try:
            import cupy as xp
        except ImportError as e:
            raise CorpusError(f"CuPy is not installed ({e})") from e
        to_device = xp.array
        sync = lambda: xp.cuda.Device().synchronize()  # noqa: E731
        to_host = xp.asnumpy
    else:
        raise CorpusError(f"unknown array module {module_name!r} (numpy, cupy)")
    module.np = xp  # the kernel's globals: every np.<f> is the module's
    call = _python_callable(kernel)
    times = []
    result = None
    for k in range(runs + 1):
        args = {}
        for name, (kind, _dt, _shape) in kparams.items():
            args[name] = to_device(inputs[name]) if kind == "array" else scalars[name]
        sync()
        t0 = time.perf_counter()
        try:
            result = call(**args)
        except Exception as e:
            raise CorpusError(f"{path}: kernel {bench['program']} failed under {module_name}: "
                              f"{type(e).__name__}: {e}") from e
        sync()
        if k > 0:
            times.append((time.perf_counter() - t0) * 1e3)
    module.np = np
    returns = {}
    if isinstance(result, tuple):
        for i, r in enumerate(result):
            returns[f"__return_{i}"] = r
    elif result is not None:
        returns["__return"] = result
    tol = dict(DEFAULT_TOLERANCE)
    tol.update(bench.get("tolerance", {}))
    matches = True
    for o, expected in outputs.items():
        got = returns[o] if o in returns else args.get(o)
        if got is None:
            matches = False
            continue
        got = np.asarray(to_host(got))
        if got.shape != expected.shape or not np.allclose(
                got, expected, rtol=tol["rtol"], atol=tol["atol"]):
            matches = False
    return {
        "module": module_name,
        "runs_ms": times,
        "median_ms": float(np.median(times)),
        "matches_numpy": matches,
    }


def write_npys(out_dir, inputs, outputs):
    in_dir = os.path.join(out_dir, "inputs")
    os.makedirs(in_dir, exist_ok=True)
    for name, a in outputs.items():
        np.save(os.path.join(out_dir, f"{name}.npy"), np.ascontiguousarray(a))
    for name, a in inputs.items():
        np.save(os.path.join(in_dir, f"{name}.npy"), np.ascontiguousarray(a))


def main(argv=None):
    ap = argparse.ArgumentParser(description="Run a corpus kernel under NumPy and write .npy files.")
    ap.add_argument("file", help="corpus kernel file (corpus/npbench/<category>/<kernel>.py)")
    ap.add_argument("--preset", default="test", help="preset name (default: test)")
    ap.add_argument("--out", help="output directory")
    ap.add_argument("--list-presets", action="store_true", help="print the presets and exit")
    ap.add_argument("--time", type=int, metavar="K", help="then time K calls of the kernel alone")
    ap.add_argument("--array-module", default="numpy", choices=["numpy", "cupy"],
                    help="the array module the timed calls use (default: numpy)")
    ns = ap.parse_args(argv)
    try:
        if ns.list_presets:
            module = load_module(ns.file)
            bench = read_benchmark(module, ns.file)
            for pname, preset in bench["presets"].items():
                print(pname, " ".join(f"{k}={v}" for k, v in preset.items()))
            return 0
        if not ns.out:
            raise CorpusError("--out DIR is required (or --list-presets)")
        timing = (max(1, ns.time), ns.array_module) if ns.time else None
        _bench, inputs, outputs, seconds, timed = run(ns.file, ns.preset, timing)
        write_npys(ns.out, inputs, outputs)
        if timed is not None:
            import json
            with open(os.path.join(ns.out, "timing.json"), "w") as f:
                json.dump(timed, f)
            print(f"{timed['module']}: median {timed['median_ms']:.3f} ms over {len(timed['runs_ms'])} "
                  f"run(s); matches NumPy: {timed['matches_numpy']}")
        for name, a in outputs.items():
            print(f"{name}: {a.dtype}{list(a.shape)}")
        print(f"kernel ran in {seconds:.3f} s; wrote {len(outputs)} output(s) and "
              f"{len(inputs)} input(s) to {ns.out}")
        return 0
    except CorpusError as e:
        print(f"reference.py: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"reference.py: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
