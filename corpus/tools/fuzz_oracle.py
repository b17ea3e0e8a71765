#!/usr/bin/env python3
"""NumPy oracle for ``cargo xtask fuzz``: runs generated programs as Python.

The fuzzer's ``programs`` target compares what the compiled SDFG computes
with what the program computes as NumPy, the answer users hold us to. One
process serves a whole campaign (importing NumPy per program would cost more
than compiling it): it reads one JSON request per line on stdin and writes
one JSON reply per line on stdout.

Request::

    {"file": PATH, "program": NAME, "symbols": {"N": 4, ...},
     "arrays": [NAME, ...], "inputs": DIR, "outputs": DIR}

It imports ``PATH`` (with the stand-in ``dace`` of ``corpus/tools/dace`` when
the real one is not installed, as ``reference.py`` does), binds the symbols,
calls the program on the arrays read from ``DIR/NAME.npy`` (in place, as
DaCe's calling convention is), and writes every array after the call to
``outputs/NAME.npy`` (a returned value to ``outputs/__return.npy``).

Reply: ``{"ok": true}``, or ``{"error": "..."}`` naming what failed (the
program raised, or the request was malformed). Only NumPy is needed.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402  (the loader and symbol binding the corpus uses)


def handle(req):
    module = reference.load_module(req["file"])
    symbols = {k: int(v) for k, v in req["symbols"].items()}
    for name, value in symbols.items():
        setattr(module, name, value)
    dace = sys.modules.get("dace")
    if dace is not None and getattr(dace, "STANDIN", False):
        dace.bind_symbols(symbols)
    prog = getattr(module, req["program"], None)
    if prog is None:
        raise reference.CorpusError(f"no program {req['program']!r}")
    arrays = {n: np.load(os.path.join(req["inputs"], n + ".npy")) for n in req["arrays"]}
    with np.errstate(all="ignore"):
        ret = reference._python_callable(prog)(**arrays)
    for name, value in arrays.items():
        np.save(os.path.join(req["outputs"], name + ".npy"), value)
    if ret is not None:
        np.save(os.path.join(req["outputs"], "__return.npy"), np.asarray(ret))


def main():
    for line in sys.stdin:
        try:
            handle(json.loads(line))
            reply = {"ok": True}
        except Exception as e:  # the program's failure is the reply, not ours
            reply = {"error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
