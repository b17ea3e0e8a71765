"""Fortran programs through DaCe's Fortran frontend, as cases for `cargo xtask clients`.

For each program of `corpus/clients/fortran/`, writes the SDFG that DaCe's
frontend (`fortran_parser.create_sdfg_from_string`) builds, unchanged, with
deterministic random inputs and DaCe's own answer: its CPU build of that
SDFG, reloaded from its JSON (compiling transforms an SDFG in place).

The frontend of DaCe 2.0.0b1 translates a whole program: the main program
declares the actual arguments and calls the entry subroutine, and the SDFG
it returns is the nested SDFG of the first subroutine whose name contains
`test_function`. A PARAMETER that sizes the entry subroutine's arrays
becomes a free symbol of that SDFG; its value is the one the source gives.
The arrays keep Fortran's column-major strides, and DaCe's `offset` of
every dimension is -1 whatever the declared lower bound:
`normalize_offsets=True` makes the frontend subtract the declared lower
bound from each index (without it, it subtracts 1, and `a(0:9)` is read
and written one element off).

DaCe passes a non-transient scalar by value, so an intent(out) scalar
would never come back from its build: the compiled copy holds each scalar
the program writes as a one-element array instead.

Comment lines `! case: ...` of a program's header direct the driver:
`! case: inputs NAME=LO:HI ...` draws argument NAME uniformly from
[LO, HI] (default [-1, 1] for reals, [-5, 5] for integers); `! case:
refused` says DaCe is known to refuse the program (the driver fails where
that is not what happens).

Usage: fortran.py OUT_DIR [NAME ...]
"""

import os
import pathlib
import re
import sys
import tempfile
import zlib

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from common import run_all, c_strides, f_strides, selected, write_case  # noqa: E402

import dace  # noqa: E402
from dace.frontend.fortran import fortran_parser  # noqa: E402
from dace.frontend.fortran.ast_internal_classes import Int_Literal_Node  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[3]
PROGRAMS = ROOT / "corpus" / "clients" / "fortran"
VARIANT = "dace-fortran"
DEFAULT_RANGE = {"f": (-1.0, 1.0), "i": (-5, 5)}


def directives(source):
    """The `! case:` lines of a program: (input ranges by name, whether DaCe
    is known to refuse it)."""
    ranges, refused = {}, False
    for line in source.splitlines():
        m = re.match(r"\s*!\s*case:\s*(\w+)(.*)", line)
        if not m:
            continue
        if m[1] == "refused":
            refused = True
        elif m[1] == "inputs":
            for name, lo, hi in re.findall(r"(\w+)=([-+.\deE]+):([-+.\deE]+)", m[2]):
                ranges[name] = (float(lo), float(hi))
        else:
            raise ValueError(f"unknown directive `! case: {m[1]}`")
    return ranges, refused


def parameters(source):
    """The values the source gives its integer PARAMETERs, as the frontend
    reads them."""
    _, ast = fortran_parser.create_ast_from_string(source, "parameters")
    return {k: int(v.value) for k, v in ast.symbols.items() if isinstance(v, Int_Literal_Node)}


def random_inputs(sdfg, symbols, ranges, rng):
    """A value for every non-transient container, laid out as its strides
    say (column-major, as the frontend writes them); scalars as 0-d arrays."""
    inputs = {}
    for name, desc in sorted(sdfg.arrays.items()):
        if desc.transient:
            continue
        dtype = desc.dtype.as_numpy_dtype()
        kind = "f" if np.issubdtype(dtype, np.floating) else "i"
        lo, hi = ranges.get(name, DEFAULT_RANGE[kind])
        if isinstance(desc, dace.data.Scalar):
            shape = ()
        else:
            shape = tuple(int(dace.symbolic.evaluate(s, symbols)) for s in desc.shape)
        if kind == "f":
            value = rng.uniform(lo, hi, shape).astype(dtype)
        else:
            value = rng.integers(int(lo), int(hi), shape, endpoint=True).astype(dtype)
        strides = [int(dace.symbolic.evaluate(s, symbols)) for s in desc.strides]
        if shape and strides == f_strides(shape):
            value = np.asfortranarray(value)
        elif shape and strides != c_strides(shape):
            raise RuntimeError(f"`{name}` has strides {strides}, neither C's nor Fortran's")
        inputs[name] = value
    return inputs


def reference(sdfg, inputs, symbols, outputs, build_folder):
    """DaCe's answer: the values of `outputs` after a call of its CPU build
    of `sdfg`, reloaded from its JSON, with each scalar it writes held as a
    one-element array (DaCe passes scalars by value)."""
    compiled = dace.SDFG.from_json(sdfg.to_json())
    args = {}
    for name, value in inputs.items():
        if value.ndim == 0 and name in outputs:
            compiled.arrays[name] = dace.data.Array(compiled.arrays[name].dtype, (1,))
            args[name] = value.reshape(1).copy()
        elif value.ndim == 0:
            args[name] = value[()]
        else:
            args[name] = value.copy(order="K")
    with dace.config.set_temporary("default_build_folder", value=build_folder):
        compiled.compile()(**args, **symbols)
    return {name: args[name].reshape(inputs[name].shape) for name in outputs}


def reason(e):
    """An exception in one line: the compiler's first error where there is
    one (without the build folder's path), else its message's first line."""
    lines = str(e).strip().splitlines() or [""]
    errors = [line[line.index("error:"):] for line in lines if "error:" in line]
    return f"{type(e).__name__}: {(errors or lines)[0].strip()}"


def case(path, out_root, build_folder):
    """Writes the program's case; fails where DaCe's refusal (or its
    absence) is not what the program's directives say."""
    source = path.read_text()
    ranges, known_refused = directives(source)
    refusal = write(path, source, ranges, out_root, build_folder)
    if refusal and not known_refused:
        raise RuntimeError(f"DaCe refuses a program it should handle: {refusal}")
    if known_refused and not refusal:
        raise RuntimeError("DaCe handles a program marked `! case: refused`")
    return refusal


def write(path, source, ranges, out_root, build_folder):
    """Writes the program's case; returns DaCe's refusal, if it refused."""
    rel = str(path.relative_to(ROOT))
    try:
        sdfg = fortran_parser.create_sdfg_from_string(source, path.stem, normalize_offsets=True)
        sdfg.validate()
    except Exception as e:  # the frontend's own refusal, recorded as such
        refusal = f"DaCe's Fortran frontend writes no valid SDFG: {reason(e)}"
        write_case(out_root, "fortran", path.stem, VARIANT, source=rel, refused=refusal)
        return refusal
    params = parameters(source)
    free = sorted(map(str, sdfg.free_symbols))
    missing = [s for s in free if s not in params]
    if missing:
        raise RuntimeError(f"no PARAMETER gives the SDFG's symbols {missing} a value")
    symbols = {s: params[s] for s in free}
    rng = np.random.default_rng(zlib.crc32(path.stem.encode()))
    inputs = random_inputs(sdfg, symbols, ranges, rng)
    _, writes = sdfg.read_and_write_sets()
    outputs = sorted(n for n in writes if n in inputs)
    try:
        expected = reference(sdfg, inputs, symbols, outputs, build_folder)
    except Exception as e:  # DaCe cannot build or run the frontend's SDFG
        refusal = f"DaCe cannot build and run the frontend's SDFG: {reason(e)}"
        write_case(out_root, "fortran", path.stem, VARIANT, source=rel, refused=refusal)
        return refusal
    write_case(out_root, "fortran", path.stem, VARIANT, source=rel, sdfg=sdfg,
               inputs=inputs, expected=expected, symbols=symbols,
               reference="DaCe's CPU build of the SDFG")
    return None


def main():
    # DaCe's build runs `cmake`: the one of this virtual environment.
    os.environ["PATH"] = f"{pathlib.Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    if not selected([VARIANT]):
        return
    with tempfile.TemporaryDirectory(prefix="dace-fortran-") as build_folder:
        run_all(PROGRAMS.glob("*.f90"), lambda path, out: case(path, out, build_folder))


if __name__ == "__main__":
    main()
