"""What every client driver shares: writing a case as `corpus/clients/README.md`
describes it."""

import json
import os
import pathlib
import shutil
import sys
import traceback

import numpy as np


def write_case(out_root, client, program, variant, *, source, sdfg=None, inputs=None,
               expected=None, symbols=None, reference=None, tolerance=None, refused=None,
               dace_refused=None):
    """Writes one case to `out_root/<program>.<variant>/`. `sdfg` is a DaCe SDFG
    (saved as the tool wrote it); `refused` says why the tool could not write one,
    `dace_refused` why DaCe's validation refuses the one it wrote."""
    name = f"{program}.{variant.replace(':', '_')}"
    d = pathlib.Path(out_root) / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    meta = {"client": client, "program": program, "variant": variant, "source": source}
    if dace_refused is not None:
        meta["dace_refused"] = dace_refused
    if refused is not None:
        meta["refused"] = refused
    else:
        sdfg.save(str(d / "program.sdfg"))
        (d / "inputs").mkdir()
        (d / "expected").mkdir()
        for k, v in inputs.items():
            np.save(d / "inputs" / f"{k}.npy", c_order(v))
        for k, v in expected.items():
            np.save(d / "expected" / f"{k}.npy", c_order(v))
        meta.update(
            reference=reference,
            symbols={k: symbol_value(v) for k, v in symbols.items()},
            outputs=sorted(expected),
            tolerance=tolerance or {"rtol": 1e-12, "atol": 1e-12},
        )
    (d / "case.json").write_text(json.dumps(meta, indent=1) + "\n")
    return d


def symbol_value(v):
    """An integer symbol as a JSON integer, a float one (DaCe keeps scalars of
    any type in symbols) as a JSON float, which the harness passes as a scalar."""
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    return float(v)


def c_order(v):
    """`v` in C order; a scalar stays 0-d (`np.ascontiguousarray` makes it 1-d)."""
    v = np.asarray(v)
    return v if v.ndim == 0 else np.ascontiguousarray(v)


def c_strides(shape):
    """Element strides of a C-ordered array of `shape`."""
    out, s = [], 1
    for e in reversed(shape):
        out.append(s)
        s *= max(int(e), 1)
    return list(reversed(out))


def f_strides(shape):
    """Element strides of a Fortran-ordered (column-major) array of `shape`."""
    return list(reversed(c_strides(list(reversed(shape)))))


def selected(variants):
    """The variants among `variants` this run writes: those
    `$SDFG_CLIENT_VARIANTS` names (comma-separated; `cargo xtask clients
    --variant`), every one where it is unset."""
    wanted = os.environ.get("SDFG_CLIENT_VARIANTS", "")
    names = {v for v in wanted.split(",") if v}
    return [v for v in variants if not names or v in names]


def run_all(paths, case):
    """The driver's command line: `DRIVER OUT_DIR [NAME ...]`. Runs
    `case(path, out_root)` for each program of `paths` named (all where none
    is), which returns why the tool refused the program, or None; exits 1
    if any raised."""
    out_root = pathlib.Path(sys.argv[1])
    names = sys.argv[2:]
    failed = 0
    for path in sorted(paths):
        if names and path.stem not in names:
            continue
        try:
            refusal = case(path, out_root)
            print(f"refused {path.stem}: {refusal}" if refusal else f"ok {path.stem}")
        except Exception:
            failed += 1
            print(f"FAILED {path.stem}\n{traceback.format_exc()}", file=sys.stderr)
    sys.exit(1 if failed else 0)
