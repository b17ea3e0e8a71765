"""Offloading DaCe SDFGs in process: the same passes, options and bytes as
``sdfgc offload``, without files or a second process."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
from typing import TYPE_CHECKING, Any, Sequence, Union

from . import _native
from .errors import DaceMissing, UsageError

if TYPE_CHECKING:  # pragma: no cover
    import dace

#: What :func:`offload` takes: a ``dace.SDFG``, a path to a ``.sdfg`` or
#: ``.sdfgz`` file, DaCe's JSON as text, or DaCe's JSON as a dict.
SdfgLike = Union["dace.SDFG", str, os.PathLike, dict]


@dataclasses.dataclass(frozen=True)
class Report:
    """What offloading decided, as ``sdfgc compile --emit report`` prints it
    (:attr:`text`) and as data.

    Example::

        sdfg, report = sdfg_offload.offload_json(text)
        print(report.kernels)         # maps that became kernels
        for copy in report.copies:    # every copy with its reason
            print(copy["from"], "->", copy["to"], copy["reason"])
    """

    #: The report as text.
    text: str
    #: The passes that ran, in order.
    passes: list[str]
    #: The accelerator offloaded for.
    accelerator: str
    #: Maps that became kernels (and host tasklets wrapped into kernels).
    kernels: list[str]
    #: Loops that became one persistent kernel each.
    persistent_loops: list[str]
    #: Library nodes that became device-wide (vendor) calls.
    library_calls: list[str]
    #: Every container's placement: ``container``, ``twin``, ``storage``,
    #: ``reason``.
    placements: list[dict[str, Any]]
    #: Every copy inserted: ``from``, ``to``, ``direction``, ``bytes``,
    #: ``block``, ``reason``.
    copies: list[dict[str, Any]]
    #: Whether the SDFG was offloaded already (nothing changed).
    already_offloaded: bool

    @staticmethod
    def _from_native(text: str, data: str) -> "Report":
        d = json.loads(data)
        o = d.get("offload") or {}
        return Report(
            text=text,
            passes=d["passes"],
            accelerator=o.get("accelerator", ""),
            kernels=o.get("kernels", []),
            persistent_loops=o.get("persistent_loops", []),
            library_calls=o.get("library_calls", []),
            placements=o.get("placements", []),
            copies=o.get("copies", []),
            already_offloaded=o.get("already_offloaded", False),
        )

    def __str__(self) -> str:
        return self.text


def require_dace(what: str):
    """The ``dace`` module, or :class:`DaceMissing` naming ``what`` needs it."""
    try:
        import dace
    except ImportError as e:
        raise DaceMissing(
            f"{what} needs DaCe, which cannot be imported here ({e}); "
            "install it with `pip install sdfg-offload[dace]`"
        ) from e
    return dace


def dace_json_text(sdfg: SdfgLike) -> str:
    """DaCe's JSON text of ``sdfg`` (see :data:`SdfgLike`)."""
    if isinstance(sdfg, dict):
        return json.dumps(sdfg)
    if isinstance(sdfg, os.PathLike) or (
        isinstance(sdfg, str) and not sdfg.lstrip().startswith("{")
    ):
        path = os.fspath(sdfg)
        if path.endswith(".sdfgz"):
            with gzip.open(path, "rt", encoding="utf-8") as f:
                return f.read()
        with open(path, encoding="utf-8") as f:
            return f.read()
    if isinstance(sdfg, str):
        return sdfg
    to_json = getattr(sdfg, "to_json", None)
    if to_json is None:
        raise UsageError(
            f"cannot offload a {type(sdfg).__name__}: give a dace.SDFG, a path, "
            "or DaCe's JSON as text or a dict"
        )
    return json.dumps(to_json())


def host_maps_option(host_maps: Union[None, str, Sequence[str]]) -> str:
    """``--host-maps`` for ``host_maps``: ``None`` (no map stays on the
    host), ``"auto"``, or map labels."""
    if host_maps is None:
        return "none"
    if isinstance(host_maps, str):
        return host_maps
    return ",".join(host_maps)


def offload_json(
    sdfg: SdfgLike,
    backend: str = "cuda",
    host_maps: Union[None, str, Sequence[str]] = None,
    persistent: bool = True,
    args_on_device: bool = False,
) -> tuple[str, Report]:
    """Offloads ``sdfg`` and returns DaCe's JSON of the result (exactly the
    text ``sdfgc offload FILE.sdfg`` prints, less its final newline) and the
    :class:`Report`. Needs no DaCe.

    Example::

        text, report = sdfg_offload.offload_json("jacobi_2d.sdfg")
        print(report)
    """
    text = dace_json_text(sdfg)
    out, report_text, report_data = _native.offload_dace(
        text, backend, host_maps_option(host_maps), persistent, args_on_device
    )
    return out, Report._from_native(report_text, report_data)


def offload(
    sdfg: SdfgLike,
    backend: str = "cuda",
    host_maps: Union[None, str, Sequence[str]] = None,
    persistent: bool = True,
    args_on_device: bool = False,
    *,
    with_report: bool = False,
):
    """Offloads ``sdfg`` for ``backend`` (``"cuda"``, ``"hip"``, ``"sim"``)
    and returns a new ``dace.SDFG`` (``with_report``: and the
    :class:`Report`): every data placement, copy, kernel and vendor call
    decided by this project's one offload pass, in place of DaCe's
    ``apply_gpu_transformations()``.

    ``host_maps``: maps that stay on the host (``"auto"`` or labels);
    ``persistent``: loops whose tests read device data may become one
    persistent kernel; ``args_on_device``: the arguments already live on
    the GPU (CuPy arrays, DaCe's ``GPU_Global``).

    Example::

        import dace, sdfg_offload
        sdfg = my_program.to_sdfg(simplify=True)
        gpu_sdfg = sdfg_offload.offload(sdfg)
        gpu_sdfg.compile()
    """
    dace = require_dace("offload()")
    out, report = offload_json(sdfg, backend, host_maps, persistent, args_on_device)
    result = dace.SDFG.from_json(json.loads(out))
    return (result, report) if with_report else result
