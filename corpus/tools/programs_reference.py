#!/usr/bin/env python3
"""NumPy reference runner for unmodified DaCe programs (see docs/corpus.md,
"Programs as they are").

    python3 corpus/tools/programs_reference.py MANIFEST NAME --root DIR --out OUT

For the manifest entry ``NAME`` it does what the entry says, with plain
Python and NumPy only (the DaCe program itself is not run here):

1. ``env`` := the entry's ``parameters`` (sizes and scalars by name);
2. if the entry has an ``init``: call ``init.function`` of ``init.file`` with
   the values of ``init.args`` and bind its results to ``init.outputs``;
3. write every value of ``env`` (arrays, and numbers as 0-d arrays) to
   ``OUT/inputs/<name>.npy``: the program's inputs;
4. call ``reference.function`` of ``reference.file`` with the values of
   ``arguments`` (a NumPy version of the program);
5. write ``OUT/<name>.npy`` for every name in ``outputs`` (arguments the
   reference updated), or, where ``outputs`` is empty, its return values as
   ``__return`` (one value) or ``__return_0``, ``__return_1``, ...

Files are relative to ``--root``. Any problem exits with status 1 and a
message on stderr.
"""

import argparse
import importlib.util
import json
import os
import sys

import numpy as np

sys.dont_write_bytecode = True


class ProgramsError(Exception):
    """A problem with the manifest or a run; reported without a traceback."""


def load_function(root, file, function):
    path = os.path.join(root, file)
    if not os.path.isfile(path):
        raise ProgramsError(f"{path}: no such file")
    directory = os.path.dirname(os.path.abspath(path))
    if directory not in sys.path:
        sys.path.insert(0, directory)
    name = f"programs_{os.path.splitext(os.path.basename(path))[0]}_{abs(hash(os.path.abspath(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ProgramsError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise ProgramsError(f"{path}: import failed: {type(e).__name__}: {e}") from e
    f = getattr(module, function, None)
    if not callable(f):
        raise ProgramsError(f"{path}: no function {function}")
    return f


def entry_of(manifest_path, name):
    with open(manifest_path) as f:
        manifest = json.load(f)
    for entry in manifest.get("programs", []):
        if entry.get("name") == name:
            return entry
    raise ProgramsError(f"{manifest_path}: no program named {name}")


def save(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    array = np.asarray(value)
    if array.dtype == object:
        raise ProgramsError(f"{path}: not an array of numbers")
    np.save(path, np.ascontiguousarray(array), allow_pickle=False)


def run(manifest_path, name, root, out):
    entry = entry_of(manifest_path, name)
    env = dict(entry.get("parameters", {}))
    init = entry.get("init")
    if init:
        f = load_function(root, init["file"], init["function"])
        try:
            values = f(*[env[a] for a in init.get("args", [])])
        except KeyError as e:
            raise ProgramsError(f"{name}: the init argument {e} is no parameter") from e
        except Exception as e:
            raise ProgramsError(f"{name}: init failed: {type(e).__name__}: {e}") from e
        names = init.get("outputs", [])
        if len(names) == 1:
            values = (values,)
        if len(values) != len(names):
            raise ProgramsError(f"{name}: init gave {len(values)} values for {len(names)} outputs")
        env.update(zip(names, values))
    for key, value in env.items():
        save(os.path.join(out, "inputs", f"{key}.npy"), value)
    f = load_function(root, entry["reference"]["file"], entry["reference"]["function"])
    try:
        args = [env[a] for a in entry.get("arguments", [])]
    except KeyError as e:
        raise ProgramsError(f"{name}: the argument {e} is neither a parameter nor an init output") from e
    try:
        result = f(*args)
    except Exception as e:
        raise ProgramsError(f"{name}: the reference failed: {type(e).__name__}: {e}") from e
    outputs = entry.get("outputs", [])
    if outputs:
        for o in outputs:
            if o not in env:
                raise ProgramsError(f"{name}: output {o} is no argument")
            save(os.path.join(out, f"{o}.npy"), env[o])
    elif isinstance(result, tuple):
        for k, v in enumerate(result):
            save(os.path.join(out, f"__return_{k}.npy"), v)
    elif result is not None:
        save(os.path.join(out, "__return.npy"), result)
    else:
        raise ProgramsError(f"{name}: no outputs listed and the reference returns nothing")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("manifest")
    p.add_argument("name")
    p.add_argument("--root", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    try:
        run(a.manifest, a.name, a.root, a.out)
    except ProgramsError as e:
        print(f"programs_reference.py: error: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
