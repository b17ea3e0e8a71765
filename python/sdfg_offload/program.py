"""Compiling programs and calling them on NumPy and CuPy arrays.

A :class:`Program` is the emitted translation unit, compiled and loaded in
this process: ``NAME_init`` runs once per set of symbol values (cached, as
DaCe's compiled programs cache theirs), ``NAME_run`` runs on the caller's
own buffers (host arrays written in place; device arrays, CuPy's or any
object with ``__cuda_array_interface__``, passed through without a copy
where the parameter's home is the device), ``NAME_exit`` when the program
is collected.
"""

from __future__ import annotations

import functools
import gzip
import inspect
import os
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from . import _native, dlpack
from .errors import ArgumentError, ExecutionError, LinAlgError, UsageError
from .offload import dace_json_text, host_maps_option

#: The statuses ``NAME_run`` returns (``sdfg_codegen::status``).
_OK, _RUNTIME_ERROR, _LINALG_ERROR, _ARGUMENT_ERROR = 0, 1, 2, 3


class DeviceArray:
    """An array in a program's device memory: what a CuPy array is on a
    GPU, for any device (on the emulated GPU, its device heap). It has
    ``__cuda_array_interface__``, so a program whose parameter lives on the
    device takes it without a copy, and :meth:`get` copies it back, as
    CuPy's does.

    Made by :meth:`Program.to_device` or returned by a program whose
    return values live on the device; like a CuPy array, it is device
    memory for every program of the process (the emulated GPU is one per
    process, as a GPU's context is).
    """

    def __init__(self, program: "Program", shape: Sequence[int], dtype: Any) -> None:
        self._program = program
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        self._address = program._native.device_alloc(max(self.nbytes, 1))

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self._address, False),
            "strides": None,
            "version": 3,
        }

    def __dlpack__(self, stream: Any = None, **kwargs: Any):
        """A DLPack capsule over this memory (device type CUDA), for any
        DLPack consumer; it keeps this array alive until consumed."""
        return dlpack.capsule(self._address, self.shape, self.dtype, dlpack.CUDA, self)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (dlpack.CUDA, 0)

    def set(self, array: np.ndarray) -> None:
        """Copies ``array`` (of this shape and dtype) to the device."""
        host = np.ascontiguousarray(array, dtype=self.dtype)
        if host.shape != self.shape:
            raise ArgumentError(
                f"an array of shape {host.shape} for a device array of shape {self.shape}",
                parameter="(device array)",
            )
        self._program._native.device_copy(self._address, host.ctypes.data, self.nbytes, True)

    def get(self) -> np.ndarray:
        """A host copy (``cupy.ndarray.get``)."""
        host = np.empty(self.shape, self.dtype)
        self._program._native.device_copy(self._address, host.ctypes.data, self.nbytes, False)
        return host

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        host = self.get()
        return host if dtype is None else host.astype(dtype)

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype})"

    def __del__(self) -> None:
        program = getattr(self, "_program", None)
        if program is not None and getattr(self, "_address", None):
            program._native.device_free(self._address)
            self._address = 0


#: typestr -> (dtype name, item size, native byte order): NumPy's
#: ``dtype.name`` costs microseconds, and a call describes every array.
_TYPES: dict[str, tuple[str, int, bool]] = {}


def _type_of(typestr: str) -> tuple[str, int, bool]:
    known = _TYPES.get(typestr)
    if known is None:
        dtype = np.dtype(typestr)
        known = ("bool" if dtype == np.bool_ else dtype.name, dtype.itemsize, dtype.isnative)
        _TYPES[typestr] = known
    return known


def _describe(array: Any, parameter: str, keep: Optional[list] = None) -> tuple:
    """The buffer tuple of ``array`` for ``_native``: ``(address, dtype,
    shape, strides in elements, on the device)``, from the array's own
    interface (``__cuda_array_interface__`` first, then NumPy's, then
    DLPack's, whose capsule goes into ``keep`` to live until the call
    returns)."""
    interface = getattr(array, "__cuda_array_interface__", None)
    device = interface is not None
    if interface is None:
        interface = getattr(array, "__array_interface__", None)
    if interface is None:
        dl = dlpack.interface(array)
        if dl is None:
            raise ArgumentError(
                f"argument `{parameter}`: a {type(array).__name__}, which is no array "
                "(pass a NumPy array, a CuPy array, a DLPack producer or a scalar)",
                parameter=parameter,
            )
        interface, device, capsule = dl
        if keep is not None:
            keep.append(capsule)
    name, itemsize, native = _type_of(interface["typestr"])
    if not native:
        raise ArgumentError(
            f"argument `{parameter}`: an array of non-native byte order ({interface['typestr']})",
            parameter=parameter,
        )
    shape = interface["shape"]
    strides = interface.get("strides")
    if strides is None:
        elements = [1] * len(shape)
        for d in range(len(shape) - 2, -1, -1):
            elements[d] = elements[d + 1] * max(shape[d + 1], 1)
    else:
        if any(s % itemsize for s in strides):
            raise ArgumentError(
                f"argument `{parameter}`: strides {tuple(strides)} are not whole elements",
                parameter=parameter,
            )
        elements = [s // itemsize for s in strides]
    address = interface["data"][0] or 0
    if "offset" in interface:
        address += interface["offset"]
    return (address, name, list(shape), elements, device)


class Program:
    """A program compiled for an accelerator and loaded in this process.

    Call it like the DaCe program it came from: positional or keyword
    arguments by the program's parameter names, symbols read off the
    arrays' shapes (or given as keywords); arrays are written in place and
    return values come back as DaCe returns them (one value, or a tuple).

    Example::

        gemm = sdfg_offload.compile("corpus/npbench/polybench/gemm.py")
        gemm(alpha=1.5, beta=1.2, C=C, A=A, B=B)   # C updated in place
        print(gemm.device, gemm.counts()["launches"])
    """

    def __init__(self, native: "_native.NativeProgram", name: str) -> None:
        self._native = native
        self.name = name
        self._parameters = native.parameters
        self._names = native.argument_names
        self._symbols = {p[0] for p in self._parameters if p[1] == "symbol"}

    @property
    def source(self) -> Optional[str]:
        """The emitted CUDA or HIP C++ translation unit (``None`` on the
        simulator)."""
        return self._native.source

    @property
    def report(self) -> str:
        """What the passes decided (``sdfgc compile --emit report``)."""
        return self._native.report

    @property
    def device(self) -> str:
        """What runs the program, in words."""
        return self._native.device

    @property
    def parameters(self) -> list[tuple[str, str, str, list[str], str]]:
        """Every parameter of the entry points: ``(name, kind, dtype, shape,
        home)``, kind ``container``/``symbol``/``return``."""
        return list(self._parameters)

    @property
    def symbols(self) -> set[str]:
        """The symbols the program takes (read off shapes, or keywords)."""
        return set(self._symbols)

    @property
    def states(self) -> int:
        """How many ``NAME_init`` states are cached (one per symbol set)."""
        return self._native.states

    def counts(self) -> Optional[dict[str, Any]]:
        """What the emulated GPU counted since :meth:`reset_counts` (launches,
        copies, runtime calls); ``None`` on a real GPU."""
        import json

        text = self._native.counts()
        return None if text is None else json.loads(text)

    def reset_counts(self) -> None:
        """Zeroes the emulated GPU's counts."""
        self._native.reset_counts()

    def to_device(self, array: Any) -> DeviceArray:
        """A copy of ``array`` in this program's device memory, for a
        parameter whose home is the device (compiled with
        ``args_on_device=True``)."""
        host = np.asarray(array)
        d = DeviceArray(self, host.shape, host.dtype)
        d.set(host)
        return d

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) > len(self._names):
            raise ArgumentError(
                f"{self.name}() takes {len(self._names)} positional arguments but {len(args)} were given",
                parameter="(all)",
            )
        named = dict(zip(self._names, args))
        for key, value in kwargs.items():
            if key in named:
                raise ArgumentError(f"{self.name}() got multiple values for argument `{key}`", parameter=key)
            named[key] = value
        keep: list[Any] = []
        buffers: list[Optional[tuple]] = []
        for name, kind, dtype, shape, _home in self._parameters:
            if kind != "container":
                buffers.append(None)
                continue
            if name not in named:
                raise ArgumentError(f"{self.name}() missing argument `{name}`", parameter=name)
            value = named.pop(name)
            if not shape and not hasattr(value, "__cuda_array_interface__"):
                # A scalar: converted to the parameter's type, as DaCe does.
                value = np.array(value, dtype=dtype)
            keep.append(value)
            buffers.append(_describe(value, name, keep))
        given = {}
        for key in list(named):
            if key in self._symbols:
                given[key] = int(named.pop(key))
        if named:
            raise ArgumentError(
                f"{self.name}() got unexpected arguments {sorted(named)}", parameter=sorted(named)[0]
            )
        symbols = self._native.bind(buffers, given)
        values: list[Any] = []
        returns = []
        for k, (name, kind, dtype, _shape, home) in enumerate(self._parameters):
            if kind == "symbol":
                values.append(symbols[name])
            elif kind == "container":
                values.append(buffers[k])
            else:
                shape = self._native.shape(k, symbols)
                if home == "device":
                    out = DeviceArray(self, shape, dtype)
                    values.append(_describe(out, name))
                else:
                    # A scalar comes back as an array of shape (1,), as
                    # DaCe's compiled programs return scalars.
                    out = np.empty(shape or (1,), dtype)
                    values.append(_describe(out.reshape(shape), name))
                keep.append(out)
                returns.append(out)
        status = self._native.run(values)
        del keep
        if status == _LINALG_ERROR:
            raise LinAlgError(f"{self.name}: a factorization failed (its message is on standard error)")
        if status == _ARGUMENT_ERROR:
            raise ArgumentError(f"{self.name}: the program refused its symbols", parameter="(symbols)")
        if status != _OK:
            raise ExecutionError(
                f"{self.name}: the run failed with status {status} (the failing call is named on standard error)"
            )
        if not returns:
            return None
        if len(returns) == 1:
            return returns[0]
        return tuple(returns)

    def __repr__(self) -> str:
        return f"<sdfg_offload.Program {self.name} on {self.device}>"


ProgramLike = Union[str, os.PathLike, Callable[..., Any], Any]


def _source_of(program: ProgramLike, name: Optional[str]) -> tuple[str, str, str, Optional[str]]:
    """``(kind, text, file, program name)`` of what :func:`compile` takes."""
    if isinstance(program, (str, os.PathLike)):
        path = os.fspath(program)
        if path.endswith(".py"):
            with open(path, encoding="utf-8") as f:
                return "python", f.read(), path, name
        if path.endswith(".sdfgz"):
            with gzip.open(path, "rt", encoding="utf-8") as f:
                return "dace", f.read(), path, name
        with open(path, encoding="utf-8") as f:
            text = f.read()
        return ("json" if path.endswith(".json") else "dace"), text, path, name
    if hasattr(program, "to_json") and hasattr(program, "arg_names"):  # a dace.SDFG
        return "dace", dace_json_text(program), getattr(program, "name", "sdfg"), name
    function = getattr(program, "f", None) or getattr(program, "__wrapped__", None) or program
    if not callable(function):
        raise UsageError(f"cannot compile a {type(program).__name__}")
    file = inspect.getsourcefile(function)
    if file is None:
        raise UsageError(f"the source of `{function.__name__}` cannot be found (define it in a file)")
    with open(file, encoding="utf-8") as f:
        return "python", f.read(), file, name or function.__name__


def compile(
    program_or_file: ProgramLike,
    program: Optional[str] = None,
    backend: str = "cuda",
    device: str = "auto",
    *,
    host_maps: Union[None, str, Sequence[str]] = None,
    persistent: bool = True,
    args_on_device: bool = False,
    signature: Optional[dict[str, str]] = None,
) -> Program:
    """Compiles ``program_or_file`` for ``backend`` and loads it: a Python
    file (``program`` picks one of its ``@dace.program``s; default: the only
    one, or the one its ``BENCHMARK`` names), a ``.sdfg``/``.sdfgz`` file or
    ``dace.SDFG``, this project's ``.json``, or a function decorated with
    ``@dace.program`` or :func:`program`.

    ``device``: ``"auto"`` (the backend's GPU where there is one, else the
    emulated GPU), ``"gpu"``, ``"emulated"``, or ``"sim"`` (the simulator
    runs the SDFG the unit is emitted from: no compiler needed, and a
    fault names the access). ``signature`` types
    parameters the program leaves unannotated (``{"A": "float64[N, M]"}``).

    Example::

        gemm = sdfg_offload.compile("corpus/npbench/polybench/gemm.py")
        gemm(1.5, 1.2, C, A, B)
    """
    kind, text, file, name = _source_of(program_or_file, program)
    native = _native.compile(
        kind,
        text,
        file,
        program=name,
        signature=signature,
        backend=backend,
        device=device,
        host_maps=host_maps_option(host_maps),
        persistent=persistent,
        args_on_device=args_on_device,
    )
    return Program(native, name or native.entry)


class LazyProgram:
    """A function decorated with :func:`program`: compiled at its first
    call (as ``@dace.program`` compiles at its first), then a
    :class:`Program`."""

    def __init__(self, function: Callable[..., Any], options: dict[str, Any]) -> None:
        functools.update_wrapper(self, function)
        self.f = function
        self._options = options
        self._compiled: Optional[Program] = None

    def compile(self) -> Program:
        """Compiles now (once); the :class:`Program`."""
        if self._compiled is None:
            self._compiled = compile(self.f, **self._options)
        return self._compiled

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.compile()(*args, **kwargs)


def program(function: Optional[Callable[..., Any]] = None, **options: Any):
    """Marks an annotated function as a program, as ``@dace.program`` does,
    to be compiled by this project (``@program`` or ``@program(backend=
    "hip", device="emulated")``; the options are :func:`compile`'s)::

        import dace, sdfg_offload
        N = dace.symbol("N")

        @sdfg_offload.program
        def axpy(a: dace.float64, x: dace.float64[N], y: dace.float64[N]):
            y[:] = a * x + y

        axpy(2.0, x, y)
    """
    if function is None:
        return lambda f: LazyProgram(f, options)
    return LazyProgram(function, options)
