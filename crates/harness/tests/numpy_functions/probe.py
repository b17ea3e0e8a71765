#!/usr/bin/env python3
"""What NumPy makes of each case of the elementwise-function test
(`crates/harness/tests/numpy_functions/mod.rs`).

Reads one JSON object from stdin:

    {"n": 9, "cases": [{"function": "add",
                        "operands": [{"dtype": "int8", "formula": "i - 4"},
                                     {"scalar": "2"}]}, ...]}

Each array operand is ``formula`` evaluated for ``i`` in ``range(n)``,
converted to ``dtype`` (as the generated initializer fills it); a scalar is
the Python number the text spells (weak in NumPy 2's promotion). Writes one
JSON list to stdout, one entry per case, in order:

- ``{"dtype": "float64"}``: the dtype of ``np.<function>(*operands)``;
- ``{"refused": "..."}``: NumPy raised an error (the function has no loop
  for these operands);
- ``{"warns": "..."}``: NumPy computed it but warned (invalid value,
  division by zero, overflow) or produced a NaN or an infinity: the
  operands are outside the function's domain, a mistake of the test.
"""

import json
import sys
import warnings

import numpy as np


def operand(spec, n):
    if "scalar" in spec:
        return eval(spec["scalar"], {})  # a Python number literal of the test
    values = [eval(spec["formula"], {"i": i}) for i in range(n)]
    return np.array(values).astype(spec["dtype"])


def probe(case, n):
    args = [operand(o, n) for o in case["operands"]]
    f = getattr(np, case["function"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            with np.errstate(all="raise"):
                r = np.asarray(f(*args))
        except (FloatingPointError, RuntimeWarning) as e:
            return {"warns": f"{type(e).__name__}: {e}"}
        except Exception as e:  # NumPy's refusal: no loop for these types
            return {"refused": f"{type(e).__name__}: {e}"}
    if r.dtype.kind in "fc" and not np.all(np.isfinite(r)):
        return {"warns": f"non-finite results {r.tolist()}"}
    return {"dtype": str(r.dtype)}


def main():
    request = json.load(sys.stdin)
    n = request["n"]
    json.dump([probe(c, n) for c in request["cases"]], sys.stdout)


if __name__ == "__main__":
    main()
