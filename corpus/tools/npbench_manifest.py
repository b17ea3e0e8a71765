#!/usr/bin/env python3
"""Writes a programs manifest (docs/corpus.md, "Programs as they are") for
the DaCe programs of an NPBench checkout, unmodified:

    python3 corpus/tools/npbench_manifest.py NPBENCH_ROOT > npbench.json
    cargo xtask corpus --programs npbench.json --backend cuda

Each benchmark's `bench_info/<name>.json` says where its files are: the DaCe
program (`<module>_dace.py`), the NumPy version it is compared with
(`<module>_numpy.py`), the initializer (`<module>.py`) and the arguments.
The sizes are those of this project's corpus kernel of the same name
(its `test` preset, small enough for the simulator), with NPBench's `S`
values for parameters the corpus kernel does not name.
"""

import ast
import glob
import json
import os
import sys

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "npbench")


def corpus_presets():
    """Kernel name (file stem) -> (test preset symbols + scalars, tolerance)."""
    out = {}
    for path in glob.glob(os.path.join(CORPUS, "*", "*.py")):
        tree = ast.parse(open(path).read())
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "BENCHMARK" for t in node.targets):
                bench = ast.literal_eval(node.value)
                test = dict(bench.get("presets", {}).get("test", {}))
                scalars = dict(bench.get("scalars", {}))
                scalars.update(test.pop("scalars", {}))
                test.update(scalars)
                out[os.path.splitext(os.path.basename(path))[0]] = (test, bench.get("tolerance"))
    return out


def returns(path, function):
    """Whether `function` of the file has a `return` with a value."""
    tree = ast.parse(open(path).read())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            return any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(node))
    return False


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = os.path.abspath(sys.argv[1])
    presets = corpus_presets()
    programs = []
    for info_path in sorted(glob.glob(os.path.join(root, "bench_info", "*.json"))):
        b = json.load(open(info_path))["benchmark"]
        rel, module = b["relative_path"], b["module_name"]
        base = f"npbench/benchmarks/{rel}/{module}"
        if not os.path.isfile(os.path.join(root, f"{base}_dace.py")):
            continue
        stem = os.path.basename(rel)
        sizes, tolerance = presets.get(stem, ({}, None))
        parameters = {}
        for k, v in b["parameters"]["S"].items():
            parameters[k] = sizes.get(k, v)
        outputs = b.get("output_args", [])
        if not outputs and not returns(os.path.join(root, f"{base}_numpy.py"), b["func_name"]):
            # NPBench compares nothing for an in-place kernel without
            # output arguments; its array arguments are what it computes.
            outputs = b.get("array_args", [])
        entry = {
            "name": rel,
            "file": f"{base}_dace.py",
            "program": b["func_name"],
            "parameters": parameters,
            "reference": {"file": f"{base}_numpy.py", "function": b["func_name"]},
            "arguments": b["input_args"],
            "outputs": outputs,
        }
        init = b.get("init")
        if init:
            entry["init"] = {
                "file": f"{base}.py",
                "function": init["func_name"],
                "args": init.get("input_args", []),
                "outputs": init.get("output_args", []),
            }
        if tolerance:
            entry["tolerance"] = tolerance
        programs.append(entry)
    json.dump({"root": root, "programs": programs}, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
