#!/usr/bin/env python3
"""Counts what DaCe's own GPU pipeline launches and copies for corpus kernels.

    python3 corpus/tools/dace_compare.py --preset test --out FILE.json PATH...

For every corpus file (``BENCHMARK`` names the kernel program and its
presets), with the real ``dace`` package: ``to_sdfg(simplify=True)``, then
DaCe's ``auto_optimize`` for ``DeviceType.GPU`` (which applies DaCe's GPU
transformation, as a DaCe user would), then one walk over the result's
control flow with the preset's symbol values, counting per run:

- **launches**: every map at the top level of a state (or of a nested SDFG
  the host runs) scheduled on the GPU (``GPU_Device``, ``GPU_Persistent``),
  and every library node at the top level of a state that touches GPU
  memory, or tasklet that does (DaCe's expansion of a library node into a
  vendor call: host code touches GPU memory no other way), one launch each,
  as this project counts its own vendor calls;
- **bytes**: every copy between an access node in GPU memory and one in
  host memory (its memlet's elements times the element size).

Loops run with the symbols they assign (their bounds evaluated, iteration by
iteration, so triangular loops count exactly). Where control flow depends on
data (a condition or a loop bound that reads a container, an interstate
assignment from data), the count is not exact and the report says so: a
data-dependent branch counts its most expensive arm (an upper bound), and a
data-dependent loop is counted as one iteration per entry (so its total is
neither bound; such kernels are marked and left out of the geometric mean).
Callbacks into Python and DaCe's own runtime costs (stream synchronizations,
allocations) are not counted; neither side of the comparison counts them.

It writes ``{"preset", "kernels": {name: {"launches", "bytes", "exact",
"notes"} or {"error"}}}``.  Exit status 3 when ``dace`` cannot be imported
(skipped), 2 on a usage problem, else 0 (a kernel DaCe fails on is an entry
with its error).  DaCe 2.0.0b1 from PyPI is the version this was written
against.
"""

import argparse
import contextlib
import fractions
import importlib.util
import io
import json
import math
import os
import shutil
import sys
import tempfile
import time
import traceback
import warnings

sys.dont_write_bytecode = True
TOOLS_DIR = os.path.dirname(os.path.abspath(__file__))
SKIPPED = 3
ITERATION_LIMIT = 10_000_000


class Count:
    def __init__(self):
        self.launches = 0
        self.bytes = 0
        self.notes = []

    def note(self, text):
        if text not in self.notes:
            self.notes.append(text)

    def add(self, other):
        self.launches += other.launches
        self.bytes += other.bytes
        for n in other.notes:
            self.note(n)


class VerifyError(Exception):
    """``--verify`` found the fast path disagreeing with the reference."""


class ExactPrinter:
    """Python source for a sympy expression, evaluated with exact integers
    and fractions (never floats), so that it agrees with sympy's own
    substitution. Anything it does not know raises, and the caller takes
    sympy's path for that expression."""

    NAMESPACE = {
        "__builtins__": {},
        "_F": fractions.Fraction,
        "_floor": math.floor,
        "_ceil": math.ceil,
        "_min": min,
        "_max": max,
        "_abs": abs,
        "_bool": bool,
    }
    RELATIONS = {"Equality": "==", "Unequality": "!=", "StrictLessThan": "<",
                 "LessThan": "<=", "StrictGreaterThan": ">", "GreaterThan": ">="}

    def doprint(self, e):
        import sympy
        if e is sympy.true or e is True:
            return "True"
        if e is sympy.false or e is False:
            return "False"
        if isinstance(e, sympy.Integer):
            return f"({int(e)})"
        if isinstance(e, sympy.Rational):
            return f"_F({int(e.p)}, {int(e.q)})"
        if isinstance(e, sympy.Symbol):
            if not str(e).isidentifier():
                raise ValueError(f"symbol `{e}`")
            return str(e)
        args = [self.doprint(a) for a in e.args]
        name = type(e).__name__
        if name in self.RELATIONS:
            return f"({args[0]} {self.RELATIONS[name]} {args[1]})"
        if isinstance(e, sympy.Add):
            return "(" + " + ".join(args) + ")"
        if isinstance(e, sympy.Mul):
            return "(" + " * ".join(args) + ")"
        if isinstance(e, sympy.Pow):
            exp = e.args[1]
            if isinstance(exp, sympy.Integer) and exp < 0:
                return f"(_F(1) / ({args[0]} ** {-int(exp)}))"
            if isinstance(exp, sympy.Integer):
                return f"({args[0]} ** {int(exp)})"
            raise ValueError(f"power `{e}`")
        simple = {"floor": "_floor", "ceiling": "_ceil", "Min": "_min", "Max": "_max",
                  "Abs": "_abs"}
        if name in simple:
            return f"{simple[name]}({', '.join(args)})"
        if name == "Mod":
            return f"({args[0]} % {args[1]})"
        if name == "int_floor":
            return f"({args[0]} // {args[1]})"
        if name == "int_ceil":
            return f"(-((-{args[0]}) // {args[1]}))"
        if name == "And":
            return "_bool(" + " and ".join(args) + ")"
        if name == "Or":
            return "_bool(" + " or ".join(args) + ")"
        if name == "Not":
            return f"(not {args[0]})"
        raise ValueError(f"`{name}` is not compiled")


class Walker:
    def __init__(self, dace):
        self.dace = dace
        from dace.sdfg import state as st
        self.st = st
        self.gpu_storage = {
            dace.StorageType.GPU_Global,
            dace.StorageType.GPU_Shared,
        }
        self.gpu_schedules = {
            dace.ScheduleType.GPU_Device,
            dace.ScheduleType.GPU_Persistent,
        }
        self.printer = ExactPrinter()
        self.namespace = ExactPrinter.NAMESPACE
        self.compiled_cache = {}
        self.state_cache = {}
        self.state_symbols = {}
        self.verify = False
        self.fallbacks = 0

    # -- expressions ------------------------------------------------------

    def value(self, expr, env):
        """The integer or boolean value of a symbolic expression or string
        under ``env``, or None where it reads anything ``env`` lacks.

        Each distinct expression is turned into Python once (`compile`) and
        then evaluated with plain integers; sympy's substitution, the
        reference, runs only for what cannot be compiled, or for every value
        with ``--verify``, which fails on any disagreement."""
        fast = self.compiled(expr)
        if fast is None:
            return self.slow_value(expr, env)
        names, code = fast
        if code is None:
            r = None  # it reads data: never a count
            if self.verify and self.slow_value(expr, env) is not None:
                raise VerifyError(f"`{expr}` reads data, yet sympy gives it a value under {env}")
            return r
        args = {}
        for n in names:
            v = env.get(n)
            if v is None:
                return None
            args[n] = v
        try:
            r = eval(code, self.namespace, args)
            r = self.as_count(r)
        except Exception:
            r = self.slow_value(expr, env)
            self.fallbacks += 1
        if self.verify:
            slow = self.slow_value(expr, env)
            if slow != r or type(slow) is not type(r):
                raise VerifyError(f"compiled `{expr}` gives {r!r}, sympy {slow!r} under {args}")
        return r

    @staticmethod
    def as_count(r):
        # The slow path's rules: booleans stay booleans, integral numbers
        # are counts, anything else (a fraction) is not a count.
        if isinstance(r, bool):
            return r
        if isinstance(r, int):
            return r
        if isinstance(r, fractions.Fraction):
            return int(r) if r.denominator == 1 else None
        raise TypeError(f"not a number: {r!r}")

    def compiled(self, expr):
        key = expr if isinstance(expr, str) else ("sym", expr)
        try:
            return self.compiled_cache[key]
        except KeyError:
            pass
        except TypeError:
            return None  # unhashable: the slow path
        result = None
        try:
            from sympy.core.function import AppliedUndef
            sym = self.dace.symbolic
            e = sym.pystr_to_symbolic(expr) if isinstance(expr, str) else expr
            if isinstance(e, (bool, int)):
                result = ((), compile(repr(e), "<expr>", "eval"))
            elif e.atoms(AppliedUndef):
                # `A[i]` in interstate code is the function `A(i)` to sympy:
                # a read of data, which no symbol value decides.
                result = ((), None)
            else:
                free = sorted(str(f) for f in getattr(e, "free_symbols", ()))
                text = self.printer.doprint(e)
                result = (tuple(free), compile(text, "<expr>", "eval"))
        except Exception:
            result = None
        self.compiled_cache[key] = result
        return result

    def slow_value(self, expr, env):
        sym = self.dace.symbolic
        try:
            e = sym.pystr_to_symbolic(expr) if isinstance(expr, str) else expr
            if isinstance(e, (int, bool)):
                return e
            free = {str(s) for s in getattr(e, "free_symbols", ())}
            if any(env.get(s) is None for s in free):
                return None
            r = e.subs({s: env[str(s)] for s in e.free_symbols})
            if getattr(r, "is_Boolean", False) or isinstance(r, bool):
                return bool(r)
            if getattr(r, "is_number", False) and not getattr(r, "is_Integer", True):
                return None  # a float where an integer is needed: not a count
            return int(r)
        except Exception:
            return None

    def assign(self, assignments, env, count, where):
        # An assignment from data leaves its symbol unknown; only a count
        # that then needs it is marked.
        for name, rhs in assignments.items():
            env[name] = self.value(rhs, env)

    # -- control flow -----------------------------------------------------

    def region(self, sdfg, region, env, count):
        """Runs the blocks of a region; returns 'break', 'continue',
        'return' or None."""
        block = region.start_block
        while block is not None:
            jump = self.block(sdfg, block, env, count)
            if jump is not None:
                return jump
            outs = region.out_edges(block)
            nxt = None
            for e in outs:
                c = True if e.data.is_unconditional() else self.value(e.data.condition.as_string, env)
                if c is None:
                    count.note(f"a data-dependent transition after `{block.label}`: the first taken")
                    c = True
                if c:
                    self.assign(e.data.assignments, env, count, f"`{block.label}`")
                    nxt = e.dst
                    break
            block = nxt
        return None

    def block(self, sdfg, block, env, count):
        st = self.st
        if isinstance(block, self.dace.SDFGState):
            self.state(sdfg, block, env, count)
            return None
        if isinstance(block, st.LoopRegion):
            return self.loop(sdfg, block, env, count)
        if isinstance(block, st.ConditionalBlock):
            return self.conditional(sdfg, block, env, count)
        if isinstance(block, st.BreakBlock):
            return "break"
        if isinstance(block, st.ContinueBlock):
            return "continue"
        if isinstance(block, st.ReturnBlock):
            return "return"
        if isinstance(block, st.ControlFlowRegion):
            return self.region(sdfg, block, env, count)
        count.note(f"`{block.label}`: a {type(block).__name__}, not counted")
        return None

    def loop(self, sdfg, loop, env, count):
        var = loop.loop_variable
        if loop.init_statement is not None:
            text = loop.init_statement.as_string
            if "=" in text and var:
                self.assign({var: text.split("=", 1)[1]}, env, count, f"loop `{loop.label}`")
        iterations = 0
        while True:
            if not (loop.inverted and iterations == 0):
                c = self.value(loop.loop_condition.as_string, env)
                if c is None:
                    count.note(f"loop `{loop.label}` has a data-dependent condition: one iteration counted per entry")
                    if iterations > 0:
                        break
                elif not c:
                    break
            jump = self.region(sdfg, loop, env, count)
            iterations += 1
            if jump in ("break", "return"):
                return "return" if jump == "return" else None
            if c is None:
                break
            if loop.update_statement is not None and var:
                text = loop.update_statement.as_string
                if "=" in text:
                    self.assign({var: text.split("=", 1)[1]}, env, count, f"loop `{loop.label}`")
            if iterations >= ITERATION_LIMIT:
                count.note(f"loop `{loop.label}` stopped after {ITERATION_LIMIT} iterations")
                break
        return None

    def conditional(self, sdfg, cond, env, count):
        unknown = []
        for c, body in cond.branches:
            v = True if c is None else self.value(c.as_string, env)
            if v is None:
                unknown.append(body)
                continue
            if v and not unknown:
                return self.region(sdfg, body, env, count)
            if v:
                unknown.append(body)
                break
        if not unknown:
            return None
        # Data-dependent: the most expensive arm, an upper bound (exact when
        # every arm costs the same; an arm that may be skipped costs 0).
        arms = []
        best, best_env, best_jump = None, None, None
        for body in unknown:
            c, e = Count(), dict(env)
            jump = self.region(sdfg, body, e, c)
            arms.append((c.launches, c.bytes))
            if best is None or (c.launches, c.bytes) > (best.launches, best.bytes):
                best, best_env, best_jump = c, e, jump
        if not any(c is None for c, _ in cond.branches):
            arms.append((0, 0))
        if len(set(arms)) > 1:
            count.note(f"`{cond.label}` branches on data: its most expensive arm counted")
        count.add(best)
        env.update(best_env)
        return best_jump

    # -- states -----------------------------------------------------------

    def state(self, sdfg, state, env, count):
        """Counts a state, once per distinct value of the symbols it uses (a
        loop body's states usually cost the same every iteration)."""
        names = self.state_symbols.get(id(state))
        if names is None:
            names = tuple(sorted(str(s) for s in state.free_symbols))
            self.state_symbols[id(state)] = names
        key = (id(state), tuple(env.get(n) for n in names))
        hit = self.state_cache.get(key)
        if hit is None or self.verify:
            c = Count()
            self.count_state(sdfg, state, env, c)
            fresh = (c.launches, c.bytes, tuple(c.notes))
            if hit is not None and hit != fresh:
                raise VerifyError(f"state `{state.label}` counted {hit} once and {fresh} later")
            hit = fresh
            self.state_cache[key] = hit
        count.launches += hit[0]
        count.bytes += hit[1]
        for n in hit[2]:
            count.note(n)

    def forget_states(self):
        # Keys hold ids of states, which a later kernel's objects may reuse.
        self.state_cache.clear()
        self.state_symbols.clear()

    def count_state(self, sdfg, state, env, count):
        nodes = self.dace.nodes
        for n in state.nodes():
            if state.entry_node(n) is not None:
                continue
            if isinstance(n, nodes.MapEntry):
                if n.map.schedule in self.gpu_schedules:
                    count.launches += 1
            elif isinstance(n, (nodes.LibraryNode, nodes.Tasklet)):
                # A library node, or the tasklet DaCe expanded one into (a
                # cuBLAS call): host code cannot touch GPU memory otherwise.
                touched = [e.src for e in state.in_edges(n)] + [e.dst for e in state.out_edges(n)]
                if any(isinstance(a, nodes.AccessNode)
                       and sdfg.arrays[a.data].storage in self.gpu_storage for a in touched):
                    count.launches += 1
            elif isinstance(n, nodes.NestedSDFG):
                inner = {}
                for s, e in n.symbol_mapping.items():
                    inner[str(s)] = self.value(str(e), env)
                self.region(n.sdfg, n.sdfg, inner, count)
        for e in state.edges():
            if not (isinstance(e.src, nodes.AccessNode) and isinstance(e.dst, nodes.AccessNode)):
                continue
            a, b = sdfg.arrays[e.src.data], sdfg.arrays[e.dst.data]
            if (a.storage in self.gpu_storage) == (b.storage in self.gpu_storage):
                continue
            if e.data.data is None or e.data.subset is None:
                continue
            elements = self.value(e.data.subset.num_elements(), env)
            if elements is None:
                count.note(f"a copy in `{state.label}` has a data-dependent size: not counted")
                continue
            count.bytes += elements * sdfg.arrays[e.data.data].dtype.bytes


def load(path):
    stem = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(f"dace_compare_{stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def count_kernel(path, preset_name, dace, walker):
    from dace.transformation.auto import auto_optimize as ao
    module = load(path)
    bench = module.BENCHMARK
    preset = dict(bench["presets"][preset_name])
    preset.pop("scalars", None)
    prog = getattr(module, bench["program"])
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        sdfg = prog.to_sdfg(simplify=True)
        sdfg = ao.auto_optimize(sdfg, dace.DeviceType.GPU)
    env = {str(k): None for k in sdfg.symbols}
    env.update({k: int(v) for k, v in preset.items()})
    # Scalar arguments (DaCe turns those that bound loops into symbols by
    # interstate assignments that read them).
    scalars = dict(bench.get("scalars", {}))
    scalars.update(bench["presets"][preset_name].get("scalars", {}))
    env.update({k: v for k, v in scalars.items() if isinstance(v, int) and not isinstance(v, bool)})
    count = Count()
    walker.forget_states()
    walker.region(sdfg, sdfg, env, count)
    walker.forget_states()
    return {
        "launches": count.launches,
        "bytes": count.bytes,
        "exact": not count.notes,
        "notes": count.notes,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--preset", default="test")
    ap.add_argument("--root", default=".", help="kernel names are paths relative to ROOT/corpus/npbench")
    ap.add_argument("--out", required=True)
    ap.add_argument("--verify", action="store_true",
                    help="evaluate every expression with sympy too and count every state anew; fail on any difference")
    ns = ap.parse_args(argv)
    if TOOLS_DIR in sys.path:
        sys.path.remove(TOOLS_DIR)  # never the stand-in `dace` of corpus/tools
    try:
        import dace
    except ImportError as e:
        print(f"dace_compare: skipped: the dace package cannot be imported ({e})", file=sys.stderr)
        return SKIPPED
    walker = Walker(dace)
    walker.verify = ns.verify
    base = os.path.join(os.path.abspath(ns.root), "corpus", "npbench")
    paths = [os.path.abspath(p) for p in ns.paths]
    out = os.path.abspath(ns.out)
    # DaCe writes what it fails on (`_dacegraphs/`) into the working
    # directory: a scratch one, never the checkout.
    scratch = tempfile.mkdtemp(prefix="dace-compare-")
    os.chdir(scratch)
    kernels = {}
    for path in paths:
        name = os.path.splitext(os.path.relpath(path, base))[0]
        started = time.monotonic()
        try:
            kernels[name] = count_kernel(path, ns.preset, dace, walker)
        except VerifyError:
            raise  # --verify found a difference: a bug of this script
        except Exception as e:
            last = traceback.format_exception_only(type(e), e)[-1].strip()
            kernels[name] = {"error": last.splitlines()[0][:300]}
        r = kernels[name]
        print(f"{name}: " + (f"error: {r['error']}" if "error" in r else
                             f"{r['launches']} launches, {r['bytes']} bytes"
                             + ("" if r["exact"] else " (not exact)"))
              + f" [{time.monotonic() - started:.1f} s]", flush=True)
    with open(out, "w") as f:
        json.dump({"preset": ns.preset, "dace": dace.__version__, "kernels": kernels}, f, indent=1)
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
