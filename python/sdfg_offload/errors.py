"""The exceptions of ``sdfg_offload``: one class per stage that can refuse.

Every error the Rust side reports is raised as the class of the stage that
found it, with the stage's own message and its location as attributes (the
JSON path of a DaCe element, the line and column of a Python statement, the
pass, the parameter), so a caller can catch exactly what it can handle::

    try:
        sdfg_offload.offload(sdfg)
    except sdfg_offload.errors.ImportRefused as e:
        print("DaCe element", e.path, "is not supported:", e)

All derive from :class:`Error`; those about a call's arguments are also
:class:`TypeError`, usage errors :class:`ValueError`, as Python's own.
"""

from __future__ import annotations

from typing import Any

import numpy


class Error(Exception):
    """Base of every ``sdfg_offload`` error. ``str(e)`` is the full message;
    keyword attributes say where."""

    def __init__(self, message: str, **location: Any) -> None:
        super().__init__(message)
        self.message = message
        self.location = dict(location)
        for key, value in location.items():
            setattr(self, key, value)


class ParseError(Error):
    """The input is not an SDFG at all: not JSON, not UTF-8, unreadable."""


class ImportRefused(Error):
    """A DaCe SDFG holds an element this project refuses. ``path`` is the
    element's JSON path in the file (``nodes[3].nodes[5]``)."""

    path: str


class FrontendError(Error):
    """A Python program outside the supported subset, or wrong. ``file``,
    ``line`` and ``column`` say where."""

    file: str
    line: int
    column: int


class InvalidSdfg(Error):
    """The SDFG as given breaks the IR's rules. ``sdfg`` is its name,
    ``errors`` every violation, each naming its element."""

    sdfg: str
    errors: list[str]


class BackendError(Error, ValueError):
    """No such backend, or one this build lacks (a cargo feature)."""


class PassError(Error):
    """A pass refused the SDFG (an unsupported construct) or broke it.
    ``pass_name`` is the pass (``offload``, ``loop-to-map``, ...)."""

    pass_name: str


class ExportError(Error):
    """The offloaded SDFG cannot be written in DaCe's format."""


class EmitError(Error):
    """The code generator cannot emit a construct of the offloaded SDFG."""


class CompileError(Error):
    """The C++ compiler rejected the emitted unit. ``compiler`` and ``file``
    name it and the unit's source."""

    compiler: str
    file: str


class ToolMissing(Error):
    """A compiler, library or device the request needs is not there (g++,
    OpenBLAS, a GPU for ``device="gpu"``)."""


class ArgumentError(Error, TypeError):
    """A call's argument does not fit its parameter (dtype, shape, layout,
    memory side), or one is missing. ``parameter`` names it."""

    parameter: str


class ExecutionError(Error):
    """The program failed while running: a runtime or vendor-library call
    (its message is on standard error, where the runtime printed it)."""


class LinAlgError(ExecutionError, numpy.linalg.LinAlgError):
    """A factorization failed (a matrix not positive definite for
    Cholesky, singular for a solve): also a ``numpy.linalg.LinAlgError``,
    which NumPy raises there."""


class UsageError(Error, ValueError):
    """A request that cannot be met as asked (a program name for an SDFG,
    an unknown device, a file with several programs and none chosen)."""


class DaceMissing(Error, ImportError):
    """A DaCe-facing function was called where the ``dace`` package cannot
    be imported (``pip install sdfg-offload[dace]``)."""


__all__ = [
    "ArgumentError",
    "BackendError",
    "CompileError",
    "DaceMissing",
    "EmitError",
    "Error",
    "ExecutionError",
    "ExportError",
    "FrontendError",
    "ImportRefused",
    "InvalidSdfg",
    "LinAlgError",
    "ParseError",
    "PassError",
    "ToolMissing",
    "UsageError",
]
