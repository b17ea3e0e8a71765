#!/usr/bin/env python3
"""Runs DaCe's own frontend over corpus files: are they still DaCe programs?

    python3 corpus/tools/dace_check.py [PATH ...]     (default: corpus/npbench)

The corpus promises that every kernel is a DaCe program as DaCe itself reads
it, not only as this project's frontend does.  For every ``.py`` file under
the given paths this script imports the file with the real ``dace`` package
and, for every ``@dace.program`` the file defines (the kernel, its helpers and
its ``initialize``), runs DaCe's ``to_sdfg()`` (parsing and DaCe's default
simplification) and ``validate()``.  One line per program says ``ok`` or what
DaCe said.

Exit status: 0 when DaCe accepts every program, 1 when it refuses any, 2 on a
usage problem, and 3 when the ``dace`` package cannot be imported (the check
is then *skipped*, never passed: ``cargo xtask dace`` reports it so).  The
stand-in ``dace`` of ``corpus/tools/dace`` is never used here.

DaCe 2.0.0b1 from PyPI is the version checked against
(``pip install --pre dace==2.0.0b1`` in a virtual environment); 1.0.2 fails
to simplify some kernels.
"""

import argparse
import contextlib
import importlib.util
import io
import os
import sys
import tempfile
import time
import traceback
import warnings

sys.dont_write_bytecode = True  # keep __pycache__ out of the corpus tree

TOOLS_DIR = os.path.dirname(os.path.abspath(__file__))
SKIPPED = 3
CALLER_DIR = os.getcwd()  # refusals name files relative to it


def corpus_files(paths):
    files = []
    for path in paths:
        if os.path.isfile(path):
            files.append(os.path.abspath(path))
        elif os.path.isdir(path):
            for root, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))
                files.extend(os.path.abspath(os.path.join(root, n)) for n in sorted(names)
                             if n.endswith(".py") and not n.startswith("_"))
        else:
            raise SystemExit(f"dace_check: {path}: no such file or directory")
    return files


def programs_of(path, dace):
    """Imports `path` and returns its own ``@dace.program`` objects by name."""
    stem = os.path.splitext(os.path.basename(path))[0]
    name = f"dace_check_{stem}_{abs(hash(os.path.abspath(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    program_type = dace.frontend.python.parser.DaceProgram
    return [(attr, value) for attr, value in vars(module).items()
            if isinstance(value, program_type)
            and getattr(value.f, "__module__", None) == name]


def first_line(error):
    text = f"{type(error).__name__}: {error}".strip()
    return text.splitlines()[0] if text else type(error).__name__


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*",
                        default=[os.path.join(TOOLS_DIR, "..", "npbench")])
    parser.add_argument("--traceback", action="store_true",
                        help="print DaCe's traceback for every refusal")
    args = parser.parse_args()

    if TOOLS_DIR in sys.path:
        sys.path.remove(TOOLS_DIR)  # never the stand-in
    try:
        import dace
    except ImportError as error:
        print(f"skipped: the dace package cannot be imported ({error})")
        return SKIPPED

    files = corpus_files(args.paths)
    global CALLER_DIR
    CALLER_DIR = os.getcwd()
    # DaCe writes build folders under `.dacecache` of the working directory;
    # keep them out of the tree.
    os.chdir(tempfile.mkdtemp(prefix="sdfg-dace-check-"))
    dace.Config.set("debugprint", value=False)
    if not args.traceback:
        # DaCe's performance and dimensionality warnings are not verdicts.
        warnings.simplefilter("ignore")

    refused = checked = 0
    start = time.monotonic()
    for path in files:
        shown = os.path.relpath(path, CALLER_DIR)
        try:
            programs = programs_of(path, dace)
        except Exception as error:  # noqa: BLE001 - report, go on
            print(f"{shown}: not importable with DaCe: {first_line(error)}")
            refused += 1
            continue
        if not programs:
            print(f"{shown}: defines no @dace.program")
            refused += 1
            continue
        for attr, program in programs:
            checked += 1
            said = io.StringIO()  # DaCe prints its parse errors, too
            try:
                with contextlib.redirect_stdout(said):
                    sdfg = program.to_sdfg()
                    sdfg.validate()
            except Exception as error:  # noqa: BLE001 - report, go on
                refused += 1
                print(f"{shown}::{attr}: refused by DaCe: {first_line(error)}")
                if args.traceback:
                    print(said.getvalue(), end="")
                    traceback.print_exc()
                continue
            print(f"{shown}::{attr}: ok")
    seconds = time.monotonic() - start
    print(f"DaCe {dace.__version__}: {checked} programs in {len(files)} files, "
          f"{refused} refused ({seconds:.1f} s)")
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
