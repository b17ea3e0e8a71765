#!/usr/bin/env python3
"""Loads SDFG files with the real DaCe: validated, and code generated?

    python3 corpus/tools/dace_sdfg_check.py FILE.sdfg[=PROGRAM.py[:gpu]] ...

This project writes its SDFGs in DaCe's ``.sdfg`` format
(``sdfgc compile --emit dace-sdfg``, ``sdfgc offload -o OUT.sdfg``) so that
a DaCe user can carry on in DaCe.  That promise is only kept if DaCe itself
reads the files: for every file this script runs ``dace.SDFG.from_file``,
DaCe's ``validate()`` and DaCe's code generation (``generate_code()``,
which needs no GPU and no compiler, also for ``GPU_Device`` maps), and
prints one JSON object per line:

    {"file": ..., "status": "ok" | "load" | "validate" | "codegen",
     "message": ..., "warnings": [...], "seconds": ...}

Where a file names the program it was made from (``FILE.sdfg=PROGRAM.py``,
with ``:gpu`` for a file offloaded to the GPU) and DaCe refuses the file,
DaCe's own pipeline runs on that program too (``to_sdfg(simplify=True)``,
then ``apply_gpu_transformations()`` for ``:gpu``, validation and code
generation); the program may be the ``.sdfg`` a tool wrote
(``FILE.sdfg=TOOLS.sdfg:gpu``: GT4Py's, DaCe's Fortran frontend's), which
DaCe's pipeline takes as it is.  If DaCe refuses its own SDFG of the program at the same step
with the same kind of error, the status is ``dace-limitation`` (with
``dace_own`` holding DaCe's message): the file asks no more of DaCe than
DaCe's own pipeline does.  So is a file DaCe validates but whose code
generation raises ``NotImplementedError`` (DaCe saying it does not
implement a construct yet, such as a persistent kernel whose device maps
differ in dimensionality).  Such a file does not count as failed.

    python3 corpus/tools/dace_sdfg_check.py --build FILE.sdfg ...

builds each file with DaCe instead (load, validate, ``compile()``: DaCe's
C++ through CMake and the host compiler), with the status ``build`` where
the compiler fails.  The import of this project refuses some SDFGs DaCe
writes because DaCe could not build them either (a tasklet assigning one
value through a memlet of many elements): this is how that is verified.

Exit status: 0 when every file passes, 1 when any fails, 2 on a usage
problem, and 3 when the ``dace`` package cannot be imported (the check is
then *skipped*, never passed).  DaCe 2.0.0b1 from PyPI is the version
checked against (``pip install --pre dace==2.0.0b1``).
"""

import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
import warnings

sys.dont_write_bytecode = True
SKIPPED = 3


def describe(error):
    """One line: the error, and what caused it where DaCe wraps it (a
    transformation's validation failing names the real problem there)."""
    text = f"{type(error).__name__}: {error}"
    cause = error.__cause__ or error.__context__
    if cause is not None:
        text += f" (cause: {type(cause).__name__}: {cause})"
    return " ".join(text.split())[:900]


def cause_of(message):
    """The part of a `describe` line two failures must share to be one."""
    if " (cause: " in message:
        return message.split(" (cause: ", 1)[1]
    return message.split(":", 1)[0]


def steps(load):
    """Runs `load()` (an SDFG), DaCe's validation and DaCe's code
    generation: None, or the failing step and what DaCe said."""
    stage = "load"
    try:
        sdfg = load()
        stage = "validate"
        sdfg.validate()
        stage = "codegen"
        with tempfile.TemporaryDirectory() as build:
            sdfg.build_folder = build
            sdfg.generate_code()
    except Exception as error:  # noqa: BLE001 - every refusal is reported
        return stage, describe(error)
    return None


def compiler_error(error):
    """The first line of a compiler's output that says `error:`, else the
    description of `error`."""
    for line in str(error).splitlines():
        if "error:" in line:
            return " ".join(line.split())[:900]
    return describe(error)


def build(path, dace):
    """Loads, validates and compiles `path` with DaCe: a record as
    `check` writes, with the status ``build`` where compiling fails."""
    started = time.time()
    record = {"file": path, "status": "ok", "message": ""}
    if shutil.which("cmake") is None:
        record["status"] = "unavailable"
        record["message"] = "DaCe builds with CMake, which is not installed (pip install cmake)"
        return record
    stage = "load"
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            sdfg = dace.SDFG.from_file(path)
            stage = "validate"
            sdfg.validate()
            stage = "build"
            with tempfile.TemporaryDirectory() as folder:
                sdfg.build_folder = folder
                sdfg.compile()
    except Exception as error:  # noqa: BLE001 - every failure is reported
        record["status"] = stage
        record["message"] = compiler_error(error) if stage == "build" else describe(error)
    record["seconds"] = round(time.time() - started, 2)
    return record


def check(path, dace):
    started = time.time()
    record = {"file": path, "status": "ok", "message": "", "warnings": []}
    with warnings.catch_warnings(record=True) as caught, \
            contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("always")
        failure = steps(lambda: dace.SDFG.from_file(path))
    if failure is not None:
        record["status"], record["message"] = failure
    # Unknown properties are DaCe's own warning about the schema: worth
    # seeing, and a test can require that there are none.
    record["warnings"] = sorted({" ".join(str(w.message).split())[:200] for w in caught
                                 if "Unused properties" in str(w.message)})
    record["seconds"] = round(time.time() - started, 2)
    return record


def own_pipeline(program, gpu):
    """DaCe's own SDFG of `program` (its BENCHMARK program, else `kernel`;
    or, for a `.sdfg` file, the SDFG a tool wrote, as DaCe's user hands it
    to DaCe) through the same steps: None, or the failing step and message."""
    import importlib.util  # noqa: PLC0415

    import dace  # noqa: PLC0415 - imported where the check runs

    def load():
        if program.endswith(".sdfg"):
            sdfg = dace.SDFG.from_file(program)
            # A tool's SDFG DaCe refuses for nested SDFGs in its convention
            # before 2.0 (GT4Py 1.1.12's scans and `where`): restated as
            # DaCe's message asks its users to.
            try:
                sdfg.validate()
            except dace.sdfg.InvalidSDFGError:
                dace.sdfg.dealias.convert_legacy_nested_sdfgs(sdfg)
            if gpu:
                sdfg.apply_gpu_transformations()
            return sdfg
        spec = importlib.util.spec_from_file_location("dace_sdfg_check_program", program)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        name = getattr(module, "BENCHMARK", {}).get("program", "kernel")
        sdfg = getattr(module, name).to_sdfg(simplify=True)
        if gpu:
            sdfg.apply_gpu_transformations()
        return sdfg

    return steps(load)


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    tools = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != tools]  # never the stand-in
    # A part DaCe cannot read is an error, not a warning and a placeholder.
    os.environ.setdefault("DACE_testing_deserialize_exception", "1")
    try:
        import dace  # noqa: PLC0415 - only here, so a missing DaCe is "skipped"
    except ImportError as error:
        print(f"skipped: the dace package cannot be imported ({error})")
        return SKIPPED
    if argv[0] == "--build":
        # DaCe's build runs CMake, which the virtual environment installs.
        os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]
        paths = [os.path.abspath(p) for p in argv[1:]]
        os.chdir(tempfile.mkdtemp(prefix="dace-sdfg-build-"))
        failed = 0
        for name, path in zip(argv[1:], paths):
            record = build(path, dace)
            record["file"] = name
            failed += record["status"] != "ok"
            print(json.dumps(record), flush=True)
        return 1 if failed else 0
    entries = []
    for arg in argv:
        path, _, program = arg.partition("=")
        program, _, target = program.partition(":")
        entries.append((path, os.path.abspath(path), program and os.path.abspath(program),
                        target == "gpu"))
    # DaCe saves an SDFG it finds invalid under `_dacegraphs` of the
    # working directory: a scratch one, not the caller's.
    os.chdir(tempfile.mkdtemp(prefix="dace-sdfg-check-"))
    failed = 0
    for name, path, program, gpu in entries:
        record = check(path, dace)
        record["file"] = name
        if record["status"] != "ok" and program:
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                warnings.simplefilter("ignore")
                own = own_pipeline(program, gpu)
            record["dace_own"] = "ok" if own is None else f"{own[0]}: {own[1]}"
            if own is not None and own[0] == record["status"] \
                    and cause_of(own[1]) == cause_of(record["message"]):
                record["status"] = "dace-limitation"
            elif record["status"] == "codegen" and record["message"].startswith("NotImplementedError"):
                # A valid file (DaCe validated it) using a construct DaCe's
                # code generator says it does not implement yet (a
                # persistent kernel whose device maps differ in
                # dimensionality): DaCe's limitation, named as such.
                record["status"] = "dace-limitation"
        failed += record["status"] not in ("ok", "dace-limitation")
        print(json.dumps(record), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
