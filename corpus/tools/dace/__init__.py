"""A small stand-in for the parts of DaCe that corpus kernels use.

It is only imported when the real ``dace`` package is not installed
(``corpus/tools/reference.py`` puts ``corpus/tools`` on ``sys.path`` after
``import dace`` fails).  With it, a corpus file runs as a plain NumPy program.

What it provides:

* ``symbol(name, dtype=int64)``: a symbolic integer.  Symbols support
  ``+ - * // % **`` with ints and other symbols, and unary ``-``; the result is
  an expression that ``evaluate(expr, values)`` (or ``expr.evaluate(values)``)
  turns into an ``int``.
* dtypes ``float64 float32 int64 int32 int16 int8 uint64 uint32 uint16 uint8
  bool_ bool complex64 complex128``.  ``float64[N, M + 1]`` is an
  :class:`ArrayAnnotation` (``.dtype``, ``.shape``); ``float64`` alone
  annotates a scalar; ``int64(x)`` casts like NumPy (arrays with
  ``astype``).  ``dtype.type`` is the NumPy scalar type.
* ``program``: decorator (``@program`` or ``@program(...)``).
* ``map``: ``for i in map[0:N]`` iterates a range, ``for i, j in
  map[0:N, 0:M]`` iterates the product (last index fastest).
* ``define_local_scalar(dtype)``: a scalar of that type.

How symbols get their values (the binding mechanism)
----------------------------------------------------
Inside a kernel a symbol must behave as a Python ``int``.  The runner does
that by *rebinding the module globals*: for a preset ``{"N": 30}`` it sets
``module.N = 30`` (a plain ``int``) before it calls ``init`` and the kernel,
so every use of ``N`` in a function body of that module reads ``30``.  The
annotations were evaluated when the functions were defined and still hold
the symbolic shapes, which the runner evaluates against the preset.  The
runner also calls :func:`bind_symbols`, which records the values in this
module so that a leftover ``Symbol`` object (for example one bound to another
name) converts with ``int()``/``operator.index`` and works as a ``map`` or
``range`` bound.

``program`` returns a thin wrapper (``functools.wraps``; the undecorated
function is ``wrapper.f``, as in real DaCe) that does one more thing: on each
call it infers the value of every symbol that is a whole dimension of an
array parameter (``A: float64[M]`` called with an array of length ``k`` gives
``M = k``; ``float64[M + 1]`` gives ``M = k - 1``) and binds it, in the callee's module globals and in the table, for
the duration of the call, restoring the previous binding afterwards.  That is
how a nested program whose symbol is bound per call (durbin's ``flip`` with
``M = k``) runs as plain Python.  For the top-level kernel, the inferred
values equal the preset's.  A keyword argument that is no parameter of the
program binds the symbol of that name for the call, as DaCe binds a
callee's symbols (``triu(A, k=1)``).
"""

import builtins
import functools
import inspect
import itertools
import operator

import numpy as np

__all__ = [
    "symbol", "Symbol", "Expr", "evaluate", "free_symbols", "bind_symbols",
    "bound_symbols", "ArrayAnnotation", "DType", "program", "map",
    "float64", "float32", "int64", "int32", "int16", "int8", "uint64",
    "uint32", "uint16", "uint8", "bool_", "complex64", "complex128",
    "define_local_scalar",
]

STANDIN = True  # lets tools tell this module from the real DaCe

# --------------------------------------------------------------------------
# Symbol binding table
# --------------------------------------------------------------------------

_BINDINGS = {}


def bind_symbols(values):
    """Record symbol values (name -> int) used when a Symbol is evaluated."""
    for name, value in values.items():
        _BINDINGS[name] = operator.index(value)


def bound_symbols():
    """A copy of the current symbol table."""
    return dict(_BINDINGS)


# --------------------------------------------------------------------------
# Symbolic integer expressions
# --------------------------------------------------------------------------

def _wrap(x):
    if isinstance(x, Expr):
        return x
    if isinstance(x, (builtins.bool, np.bool_)):
        raise TypeError("symbolic expressions take integers, not bool")
    if isinstance(x, (int, np.integer)):
        return _Const(int(x))
    raise TypeError(f"symbolic expressions take integers and symbols, not {type(x).__name__}")


def evaluate(expr, values=None):
    """Evaluate an int or symbolic expression to an int.

    ``values`` maps symbol names to ints; names not in it come from the table
    filled by :func:`bind_symbols`.
    """
    if isinstance(expr, Expr):
        return expr.evaluate(values)
    return operator.index(expr)


def free_symbols(expr):
    """The set of symbol names in an int or expression."""
    if isinstance(expr, Expr):
        return expr.free_symbols()
    return set()


class Expr:
    """Integer-valued symbolic expression."""

    # arithmetic builds new expressions
    def __add__(self, o):
        return _BinOp("+", self, _wrap(o))

    def __radd__(self, o):
        return _BinOp("+", _wrap(o), self)

    def __sub__(self, o):
        return _BinOp("-", self, _wrap(o))

    def __rsub__(self, o):
        return _BinOp("-", _wrap(o), self)

    def __mul__(self, o):
        return _BinOp("*", self, _wrap(o))

    def __rmul__(self, o):
        return _BinOp("*", _wrap(o), self)

    def __floordiv__(self, o):
        return _BinOp("//", self, _wrap(o))

    def __rfloordiv__(self, o):
        return _BinOp("//", _wrap(o), self)

    def __mod__(self, o):
        return _BinOp("%", self, _wrap(o))

    def __rmod__(self, o):
        return _BinOp("%", _wrap(o), self)

    def __pow__(self, o):
        return _BinOp("**", self, _wrap(o))

    def __rpow__(self, o):
        return _BinOp("**", _wrap(o), self)

    def __neg__(self):
        return _Neg(self)

    def __pos__(self):
        return self

    # conversion to int uses the binding table
    def __index__(self):
        return self.evaluate(None)

    def __int__(self):
        return self.evaluate(None)

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def evaluate(self, values=None):
        raise NotImplementedError

    def free_symbols(self):
        raise NotImplementedError


class _Const(Expr):
    def __init__(self, value):
        self.value = value

    def evaluate(self, values=None):
        return self.value

    def free_symbols(self):
        return set()

    def __repr__(self):
        return repr(self.value)


class Symbol(Expr):
    """A named symbolic integer (``dace.symbol``)."""

    def __init__(self, name, dtype=None):
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"symbol name must be an identifier, got {name!r}")
        self.name = name
        self.dtype = dtype if dtype is not None else int64

    def evaluate(self, values=None):
        if values is not None and self.name in values:
            return operator.index(values[self.name])
        if self.name in _BINDINGS:
            return _BINDINGS[self.name]
        raise NameError(
            f"symbol {self.name} has no value (bind it with dace.bind_symbols or by "
            f"setting the module global {self.name} to an int)")

    def free_symbols(self):
        return {self.name}

    def __repr__(self):
        return self.name


class _BinOp(Expr):
    _OPS = {
        "+": operator.add, "-": operator.sub, "*": operator.mul,
        "//": operator.floordiv, "%": operator.mod, "**": operator.pow,
    }

    def __init__(self, op, lhs, rhs):
        self.op, self.lhs, self.rhs = op, lhs, rhs

    def evaluate(self, values=None):
        a = self.lhs.evaluate(values)
        b = self.rhs.evaluate(values)
        if self.op == "**" and b < 0:
            raise ValueError(f"negative exponent in symbolic expression {self!r}")
        return self._OPS[self.op](a, b)

    def free_symbols(self):
        return self.lhs.free_symbols() | self.rhs.free_symbols()

    def __repr__(self):
        return f"({self.lhs!r} {self.op} {self.rhs!r})"


class _Neg(Expr):
    def __init__(self, arg):
        self.arg = arg

    def evaluate(self, values=None):
        return -self.arg.evaluate(values)

    def free_symbols(self):
        return self.arg.free_symbols()

    def __repr__(self):
        return f"(-{self.arg!r})"


def symbol(name, dtype=None, **_kwargs):
    """``dace.symbol(name, dtype=dace.int64)``."""
    return Symbol(name, dtype)


# --------------------------------------------------------------------------
# Data types and array annotations
# --------------------------------------------------------------------------

class ArrayAnnotation:
    """``dtype[shape...]``: an array parameter annotation."""

    def __init__(self, dtype, shape):
        self.dtype = dtype
        self.shape = tuple(shape)
        for d in self.shape:
            _wrap(d)  # type check: ints and symbolic expressions only

    def free_symbols(self):
        out = set()
        for d in self.shape:
            out |= free_symbols(d)
        return out

    def evaluate_shape(self, values=None):
        return tuple(evaluate(d, values) for d in self.shape)

    def __repr__(self):
        return f"{self.dtype.name}[{', '.join(repr(d) for d in self.shape)}]"


class DType:
    """A scalar data type: annotation, array-annotation factory and cast."""

    def __init__(self, name, nptype):
        self.name = name
        self.type = nptype

    def __getitem__(self, shape):
        if not isinstance(shape, tuple):
            shape = (shape,)
        return ArrayAnnotation(self, shape)

    def __call__(self, x):
        if isinstance(x, np.ndarray):
            return x.astype(self.type)
        if isinstance(x, Expr):
            x = x.evaluate(None)
        return self.type(x)

    def __repr__(self):
        return f"dace.{self.name}"

    def __eq__(self, other):
        return isinstance(other, DType) and other.type is self.type

    def __hash__(self):
        return hash(self.type)


float64 = DType("float64", np.float64)
float32 = DType("float32", np.float32)
int64 = DType("int64", np.int64)
int32 = DType("int32", np.int32)
int16 = DType("int16", np.int16)
int8 = DType("int8", np.int8)
uint64 = DType("uint64", np.uint64)
uint32 = DType("uint32", np.uint32)
uint16 = DType("uint16", np.uint16)
uint8 = DType("uint8", np.uint8)
bool_ = DType("bool_", np.bool_)
complex64 = DType("complex64", np.complex64)
complex128 = DType("complex128", np.complex128)
# ``dace.bool`` (code in this module spells the builtin ``builtins.bool``).
globals()["bool"] = bool_


def define_local_scalar(dtype=float64):
    """``dace.define_local_scalar(dtype)``: a scalar of that type (zero here;
    DaCe leaves it uninitialised, so kernels assign it before reading)."""
    return dtype.type(0)


# --------------------------------------------------------------------------
# dace.map
# --------------------------------------------------------------------------

def _range_of(s):
    if not isinstance(s, slice):
        raise TypeError("dace.map takes slices: map[0:N] or map[0:N, 0:M]")
    start = 0 if s.start is None else evaluate(s.start)
    if s.stop is None:
        raise TypeError("dace.map ranges need an explicit stop")
    stop = evaluate(s.stop)
    step = 1 if s.step is None else evaluate(s.step)
    return range(start, stop, step)


class _MapFactory:
    def __getitem__(self, key):
        if isinstance(key, tuple):
            ranges = [_range_of(s) for s in key]
            if len(ranges) == 1:
                return iter(ranges[0])
            return itertools.product(*ranges)
        return iter(_range_of(key))


map = _MapFactory()  # noqa: A001 (shadows the builtin, as in real DaCe)


# --------------------------------------------------------------------------
# dace.program
# --------------------------------------------------------------------------

_MISSING = object()


def _solve_extent(dim, size):
    """``S + k == size`` or ``S - k == size`` (k an int): ``(S, size - k)``
    or ``(S, size + k)``; any other dimension is returned unchanged."""
    if isinstance(dim, _BinOp) and dim.op in ("+", "-") and isinstance(dim.lhs, Symbol) \
            and not dim.rhs.free_symbols():
        k = dim.rhs.evaluate(None)
        return dim.lhs, size - k if dim.op == "+" else size + k
    return dim, size


def _make_program(f):
    if not callable(f):
        raise TypeError("dace.program decorates functions")
    sig = inspect.signature(f)
    arrays = {name: ann for name, ann in getattr(f, "__annotations__", {}).items()
              if isinstance(ann, ArrayAnnotation)}

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        # A keyword that is no parameter binds a symbol of the callee for
        # the call, as in DaCe (`pressure_poisson(p, dx, dy, b, nit=nit)`).
        inferred = {}
        for name in [k for k in kwargs if k not in sig.parameters]:
            value = kwargs.pop(name)
            if isinstance(value, Expr):
                value = value.evaluate(None)
            inferred[name] = operator.index(value)
        bound = sig.bind(*args, **kwargs)
        for name, ann in arrays.items():
            if name not in bound.arguments:
                continue
            shape = np.shape(bound.arguments[name])
            if len(shape) != len(ann.shape):
                raise TypeError(
                    f"{f.__name__}: argument {name} has rank {len(shape)}, "
                    f"annotation {ann!r} has rank {len(ann.shape)}")
            for dim, size in zip(ann.shape, shape):
                dim, size = _solve_extent(dim, size)
                if isinstance(dim, Symbol):
                    prev = inferred.setdefault(dim.name, size)
                    if prev != size:
                        raise TypeError(
                            f"{f.__name__}: symbol {dim.name} is {prev} and {size} "
                            f"in the shapes of the arguments")
        g = f.__globals__
        saved_globals = {n: g.get(n, _MISSING) for n in inferred}
        saved_table = {n: _BINDINGS.get(n, _MISSING) for n in inferred}
        g.update(inferred)
        _BINDINGS.update(inferred)
        try:
            return f(*args, **kwargs)
        finally:
            for n, v in saved_globals.items():
                if v is _MISSING:
                    g.pop(n, None)
                else:
                    g[n] = v
            for n, v in saved_table.items():
                if v is _MISSING:
                    _BINDINGS.pop(n, None)
                else:
                    _BINDINGS[n] = v

    wrapper.f = f
    wrapper.__dace_program__ = True
    return wrapper


def program(*args, **kwargs):
    """``@dace.program`` and ``@dace.program(...)`` (options are ignored)."""
    if len(args) == 1 and not kwargs and callable(args[0]):
        return _make_program(args[0])
    return _make_program
