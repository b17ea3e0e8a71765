#!/usr/bin/env python3
"""Writes DaCe's own SDFG of corpus kernels, for this project to import.

    python3 corpus/tools/dace_to_sdfg.py OUTDIR PROGRAM.py [PROGRAM.py ...]

For every file, the program its ``BENCHMARK`` names (else ``kernel``) goes
through DaCe's frontend and DaCe's default simplification
(``to_sdfg(simplify=True)``), and the SDFG is saved as
``OUTDIR/<category>__<name>.dace.sdfg`` (the file's directory and stem).
One JSON object per line says what happened:

    {"program": ..., "file": ..., "status": "ok" | "failed", "message": ...}

Exit status: 0 when every program was written, 1 when any failed, 2 on a
usage problem, 3 when the ``dace`` package cannot be imported (skipped).
"""

import contextlib
import importlib.util
import io
import json
import os
import sys
import warnings

sys.dont_write_bytecode = True
SKIPPED = 3


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out, programs = argv[0], [os.path.abspath(p) for p in argv[1:]]
    tools = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != tools]  # never the stand-in
    try:
        import dace  # noqa: F401, PLC0415 - only here, so a missing DaCe is "skipped"
    except ImportError as error:
        print(f"skipped: the dace package cannot be imported ({error})")
        return SKIPPED
    os.makedirs(out, exist_ok=True)
    failed = 0
    for path in programs:
        category = os.path.basename(os.path.dirname(path))
        stem = os.path.splitext(os.path.basename(path))[0]
        target = os.path.join(out, f"{category}__{stem}.dace.sdfg")
        record = {"program": path, "file": target, "status": "ok", "message": ""}
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                warnings.simplefilter("ignore")
                spec = importlib.util.spec_from_file_location(f"dace_to_sdfg_{stem}", path)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                name = getattr(module, "BENCHMARK", {}).get("program", "kernel")
                getattr(module, name).to_sdfg(simplify=True).save(target)
        except Exception as error:  # noqa: BLE001 - every failure is reported
            failed += 1
            record["status"] = "failed"
            record["message"] = " ".join(f"{type(error).__name__}: {error}".split())[:600]
        print(json.dumps(record), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
