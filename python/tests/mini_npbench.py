"""A small NPBench of this project's own, following NPBench's framework
protocol (https://github.com/spcl/npbench, ``npbench/infrastructure``), so
that CI tests the adapter without a checkout of NPBench, which is no
package: a checkout tree with ``framework_info/``, ``bench_info/``,
``npbench/infrastructure`` (``Benchmark``, ``Framework``,
``generate_framework``), three benchmarks with NumPy and DaCe
implementations, and a ``run_benchmark.py`` that copies, calls, and
validates against NumPy as NPBench does. The real NPBench is run by hand
(docs/python.md)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

INFRASTRUCTURE = {
    "__init__.py": """
        from .benchmark import *
        from .framework import *
    """,
    "benchmark.py": '''
        import json
        import pathlib

        __all__ = ["Benchmark"]


        class Benchmark:
            def __init__(self, bname):
                self.bname = bname
                root = pathlib.Path(__file__).parent.parent.parent
                with open(root / "bench_info" / f"{bname}.json") as f:
                    self.info = json.load(f)["benchmark"]

            def get_data(self, preset):
                data = dict(self.info["parameters"][preset])
                init = self.info["init"]
                module = "npbench.benchmarks.{}.{}".format(
                    self.info["relative_path"].replace("/", "."), self.info["module_name"])
                exec(f"from {module} import {init['func_name']}", data)
                exec("{} = {}({})".format(",".join(init["output_args"]), init["func_name"],
                                          ",".join(init["input_args"])), data)
                del data[init["func_name"]]
                return data
    ''',
    "framework.py": '''
        import importlib
        import json
        import pathlib

        import numpy as np

        __all__ = ["Framework", "generate_framework"]

        ROOT = pathlib.Path(__file__).parent.parent.parent


        class Framework:
            def __init__(self, fname):
                self.fname = fname
                with open(ROOT / "framework_info" / f"{fname}.json") as f:
                    self.info = json.load(f)["framework"]

            def version(self):
                return "0"

            def imports(self):
                return {}

            def copy_func(self):
                return np.copy

            def copy_back_func(self):
                return lambda x: x

            def implementations(self, bench):
                module = importlib.import_module("npbench.benchmarks.{}.{}_{}".format(
                    bench.info["relative_path"].replace("/", "."), bench.info["module_name"],
                    self.info.get("postfix", self.fname)))
                return [(getattr(module, bench.info["func_name"]), "default")]

            def args(self, bench, impl=None):
                return ["__npb_{}_{}".format(self.info["prefix"], a) if a in bench.info["array_args"] else a
                        for a in bench.info["input_args"]]

            def mutable_args(self, bench, impl=None):
                return ["__npb_{}_{}".format(self.info["prefix"], a) for a in bench.info["array_args"]]

            def inout_args(self, bench, impl=None):
                return ["__npb_{}_{}".format(self.info["prefix"], a) for a in bench.info["output_args"]]

            def arg_str(self, bench, impl=None):
                return ", ".join(self.args(bench, impl))

            def setup_str(self, bench, impl=None):
                if not bench.info["array_args"]:
                    return "pass"
                copies = ", ".join(f"__npb_copy({a})" for a in bench.info["array_args"])
                return ", ".join(self.mutable_args(bench, impl)) + " = " + copies

            def exec_str(self, bench, impl=None):
                return "__npb_result = __npb_impl({})".format(self.arg_str(bench, impl))


        def generate_framework(fname):
            with open(ROOT / "framework_info" / f"{fname}.json") as f:
                info = json.load(f)["framework"]
            return getattr(importlib.import_module("npbench.infrastructure"), info["class"])(fname)
    ''',
}

RUN_BENCHMARK = '''
    """Runs one benchmark as NPBench's run_benchmark.py does: NumPy first,
    then the framework (copy, call, copy back), validated against NumPy."""
    import sys

    import numpy as np

    from npbench.infrastructure import Benchmark, generate_framework


    def execute(frmwrk, bench, impl, data):
        ldict = {"__npb_impl": impl, "__npb_copy": frmwrk.copy_func(), **data, **frmwrk.imports()}
        exec(frmwrk.setup_str(bench, impl), ldict)
        exec(frmwrk.exec_str(bench, impl), ldict)
        out = ldict["__npb_result"]
        out = [] if out is None else list(out) if isinstance(out, (tuple, list)) else [out]
        out += [ldict[a] for a in frmwrk.inout_args(bench)]
        return [frmwrk.copy_back_func()(o) for o in out]


    def relative_error(ref, val):
        return np.linalg.norm(ref - val) / np.linalg.norm(ref)


    def main(bname, fname, preset):
        bench = Benchmark(bname)
        data = bench.get_data(preset)
        numpy = generate_framework("numpy")
        (reference, _), = numpy.implementations(bench)
        expected = execute(numpy, bench, reference, data)
        frmwrk = generate_framework(fname)
        print("version", frmwrk.version())
        for impl, name in frmwrk.implementations(bench):
            got = execute(frmwrk, bench, impl, data)
            valid = len(got) == len(expected) and all(
                np.allclose(r, np.asarray(v), rtol=1e-5, atol=1e-8) or relative_error(r, np.asarray(v)) < 1e-5
                for r, v in zip(expected, got))
            print(f"{frmwrk.info['full_name']} - {name} - validation: {'SUCCESS' if valid else 'FAILURE'}")


    if __name__ == "__main__":
        main(*sys.argv[1:4])
'''

#: name -> (relative path, function, init, parameters, input, array, output args, NumPy, DaCe, init code)
BENCHMARKS = {
    "gemm": dict(
        path="polybench/gemm", func="kernel",
        parameters={"T": {"NI": 20, "NJ": 25, "NK": 30}},
        init={"func_name": "initialize", "input_args": ["NI", "NJ", "NK"],
              "output_args": ["alpha", "beta", "C", "A", "B"]},
        input_args=["alpha", "beta", "C", "A", "B"], array_args=["C", "A", "B"], output_args=["C"],
        initialize="""
            import numpy as np

            def initialize(NI, NJ, NK):
                C = np.fromfunction(lambda i, j: ((i * j + 1) % NI) / NI, (NI, NJ))
                A = np.fromfunction(lambda i, k: ((i * (k + 1)) % NK) / NK, (NI, NK))
                B = np.fromfunction(lambda k, j: ((k * (j + 2)) % NJ) / NJ, (NK, NJ))
                return 1.5, 1.2, C, A, B
        """,
        numpy="""
            def kernel(alpha, beta, C, A, B):
                C[:] = alpha * A @ B + beta * C
        """,
        dace="""
            import dace as dc

            NI, NJ, NK = (dc.symbol(s, dtype=dc.int64) for s in ("NI", "NJ", "NK"))

            @dc.program
            def kernel(alpha: dc.float64, beta: dc.float64, C: dc.float64[NI, NJ],
                       A: dc.float64[NI, NK], B: dc.float64[NK, NJ]):
                C[:] = alpha * A @ B + beta * C
        """,
    ),
    "jacobi_2d": dict(
        path="polybench/jacobi_2d", func="kernel",
        parameters={"T": {"TSTEPS": 6, "N": 14}},
        init={"func_name": "initialize", "input_args": ["N"], "output_args": ["A", "B"]},
        input_args=["TSTEPS", "A", "B"], array_args=["A", "B"], output_args=["A", "B"],
        initialize="""
            import numpy as np

            def initialize(N):
                A = np.fromfunction(lambda i, j: i * (j + 2) / N, (N, N))
                B = np.fromfunction(lambda i, j: i * (j + 3) / N, (N, N))
                return A, B
        """,
        numpy="""
            def kernel(TSTEPS, A, B):
                for t in range(1, TSTEPS):
                    B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
                    A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])
        """,
        dace="""
            import dace as dc

            N = dc.symbol("N", dtype=dc.int64)

            @dc.program
            def kernel(TSTEPS: dc.int64, A: dc.float64[N, N], B: dc.float64[N, N]):
                for t in range(1, TSTEPS):
                    B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
                    A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])
        """,
    ),
    "softmax": dict(
        path="deep_learning/softmax", func="softmax",
        parameters={"T": {"N": 2, "H": 3, "SM": 8}},
        init={"func_name": "initialize", "input_args": ["N", "H", "SM"], "output_args": ["x"]},
        input_args=["x"], array_args=["x"], output_args=[],
        initialize="""
            import numpy as np

            def initialize(N, H, SM):
                rng = np.random.default_rng(42)
                return rng.random((N, H, SM, SM), dtype=np.float32)
        """,
        numpy="""
            import numpy as np

            def softmax(x):
                tmp_max = np.max(x, axis=-1, keepdims=True)
                tmp_out = np.exp(x - tmp_max)
                tmp_sum = np.sum(tmp_out, axis=-1, keepdims=True)
                return tmp_out / tmp_sum
        """,
        dace="""
            import numpy as np
            import dace as dc

            N, H, SM = (dc.symbol(s, dc.int64) for s in ("N", "H", "SM"))

            @dc.program
            def softmax(x: dc.float32[N, H, SM, SM]):
                tmp_max = np.maximum.reduce(x, axis=-1, keepdims=True, initial=-9999)
                tmp_out = np.exp(x - tmp_max)
                tmp_sum = np.add.reduce(tmp_out, axis=-1, keepdims=True)
                return tmp_out / tmp_sum
        """,
    ),
}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))


def make_checkout(root: Path) -> Path:
    """Writes the small NPBench into ``root``; returns ``root``."""
    _write(root / "npbench" / "__init__.py", "")
    for name, text in INFRASTRUCTURE.items():
        _write(root / "npbench" / "infrastructure" / name, text)
    _write(root / "run_benchmark.py", RUN_BENCHMARK)
    numpy_info = {"framework": {"simple_name": "numpy", "full_name": "NumPy", "prefix": "np",
                                "postfix": "numpy", "class": "Framework", "arch": "cpu"}}
    _write(root / "framework_info" / "numpy.json", json.dumps(numpy_info))
    for bname, b in BENCHMARKS.items():
        module = b["path"].split("/")[-1]
        info = {"benchmark": {
            "short_name": bname, "relative_path": b["path"], "module_name": module,
            "func_name": b["func"], "parameters": b["parameters"], "init": b["init"],
            "input_args": b["input_args"], "array_args": b["array_args"], "output_args": b["output_args"],
        }}
        _write(root / "bench_info" / f"{bname}.json", json.dumps(info))
        package = root / "npbench" / "benchmarks"
        for part in ["", *b["path"].split("/")]:
            package = package / part if part else package
            _write(package / "__init__.py", "")
        _write(package / f"{module}.py", b["initialize"])
        _write(package / f"{module}_numpy.py", b["numpy"])
        _write(package / f"{module}_dace.py", b["dace"])
    return root
