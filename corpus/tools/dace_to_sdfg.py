#!/usr/bin/env python3
"""Writes DaCe's own SDFGs of corpus kernels, for this project to import.

    python3 corpus/tools/dace_to_sdfg.py OUTDIR PROGRAM.py [PROGRAM.py ...]

For every file, the program its ``BENCHMARK`` names (else ``kernel``) goes
through DaCe's frontend and DaCe's default simplification
(``to_sdfg(simplify=True)``), and the SDFG is saved as
``OUTDIR/<category>__<name>.dace.sdfg`` (the file's directory and stem): the
``lowered`` variant, which the corpus's ``dace-import`` stage reads. Two
variants that DaCe's users hand over for GPUs are written beside it, each
made from the lowered file as saved:

- ``gpu``: after ``SDFG.apply_gpu_transformations()``, as
  ``<category>__<name>.dace.gpu.sdfg``;
- ``auto-gpu``: after ``auto_optimize(sdfg, dace.DeviceType.GPU)``, as
  ``<category>__<name>.dace.auto-gpu.sdfg``;
- ``gpu-storage``: after ``apply_gpu_storage(sdfg)`` (its inputs and
  outputs in GPU global memory, no schedule decided: what NPBench's
  ``dace_gpu`` framework and GT4Py hand over), as
  ``<category>__<name>.dace.gpu-storage.sdfg``; the ``dace-import`` stage
  reads it with ``--args-on-device``.

One JSON object per line and variant says what happened:

    {"program": ..., "variant": "lowered" | "gpu" | "auto-gpu" | "gpu-storage",
     "file": ..., "status": "ok" | "failed", "message": ...}

Exit status: 0 when every file was written, 1 when any failed, 2 on a
usage problem, 3 when the ``dace`` package cannot be imported (skipped).
"""

import contextlib
import importlib.util
import io
import json
import os
import sys
import tempfile
import warnings

sys.dont_write_bytecode = True
SKIPPED = 3


def gpu_variants(dace):
    """The GPU variants: (name, file suffix, transformation in place)."""
    from dace.transformation.auto.auto_optimize import (  # noqa: PLC0415
        apply_gpu_storage,
        auto_optimize,
    )

    return [
        ("gpu", ".dace.gpu.sdfg", lambda sdfg: sdfg.apply_gpu_transformations()),
        ("auto-gpu", ".dace.auto-gpu.sdfg", lambda sdfg: auto_optimize(sdfg, dace.DeviceType.GPU)),
        ("gpu-storage", ".dace.gpu-storage.sdfg", apply_gpu_storage),
    ]


def quietly(work):
    """Runs ``work()`` without DaCe's warnings and prints; raises what it raises."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        return work()


def failure(error):
    """A one-line message of at most 600 characters."""
    return " ".join(f"{type(error).__name__}: {error}".split())[:600]


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out, programs = argv[0], [os.path.abspath(p) for p in argv[1:]]
    tools = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != tools]  # never the stand-in
    try:
        import dace  # noqa: PLC0415 - only here, so a missing DaCe is "skipped"
    except ImportError as error:
        print(f"skipped: the dace package cannot be imported ({error})")
        return SKIPPED
    out = os.path.abspath(out)
    os.makedirs(out, exist_ok=True)
    # DaCe saves an SDFG its validation refuses under `_dacegraphs` of the
    # working directory: a temporary one, not the repository.
    os.chdir(tempfile.mkdtemp(prefix="dace-to-sdfg-"))
    variants = gpu_variants(dace)
    failed = 0
    for path in programs:
        category = os.path.basename(os.path.dirname(path))
        stem = os.path.splitext(os.path.basename(path))[0]
        base = os.path.join(out, f"{category}__{stem}")
        target = base + ".dace.sdfg"
        record = {"program": path, "variant": "lowered", "file": target, "status": "ok", "message": ""}

        def lower(path=path, stem=stem, target=target):
            spec = importlib.util.spec_from_file_location(f"dace_to_sdfg_{stem}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            name = getattr(module, "BENCHMARK", {}).get("program", "kernel")
            getattr(module, name).to_sdfg(simplify=True).save(target)

        try:
            quietly(lower)
        except Exception as error:  # noqa: BLE001 - every failure is reported
            failed += 1
            record["status"] = "failed"
            record["message"] = failure(error)
        lowered = record["status"] == "ok"
        print(json.dumps(record), flush=True)
        for variant, suffix, transform in variants:
            file = base + suffix
            # A stale file of an earlier run must not stand in for this one.
            with contextlib.suppress(FileNotFoundError):
                os.remove(file)
            record = {"program": path, "variant": variant, "file": file, "status": "ok", "message": ""}
            if not lowered:
                record["status"] = "failed"
                record["message"] = "DaCe could not lower the program"
            else:

                def derive(transform=transform, file=file, target=target):
                    sdfg = dace.SDFG.from_file(target)
                    transform(sdfg)
                    sdfg.save(file)

                try:
                    quietly(derive)
                except Exception as error:  # noqa: BLE001 - every failure is reported
                    record["status"] = "failed"
                    record["message"] = failure(error)
            if record["status"] != "ok":
                failed += 1
            print(json.dumps(record), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
