"""The offload pass as a DaCe pass, for DaCe ``Pipeline``s and scripts:
``OffloadToAccelerator().apply_pass(sdfg, {})`` where a script called
``sdfg.apply_gpu_transformations()``."""

from __future__ import annotations

from typing import Any, Optional

from .offload import Report, offload, require_dace

_dace = require_dace("sdfg_offload.OffloadToAccelerator")
from dace import properties  # noqa: E402
from dace.transformation import pass_pipeline as ppl  # noqa: E402


def _adopt(target, source) -> None:
    """Makes ``target`` (the caller's SDFG object) the SDFG ``source`` is:
    its contents move over, and everything inside that pointed at
    ``source`` (as its SDFG, parent graph, parent SDFG) points at
    ``target``, as DaCe's passes change the SDFG they are given in place."""
    target.__dict__.clear()
    target.__dict__.update(source.__dict__)
    owners = [target]
    owners += list(target.all_control_flow_regions(recursive=True))
    owners += list(target.all_control_flow_blocks(recursive=True))
    owners += list(target.all_sdfgs_recursive())
    for state in target.states():
        owners += list(state.nodes())
    seen = set()
    for owner in owners:
        if id(owner) in seen:
            continue
        seen.add(id(owner))
        attributes = vars(owner)
        for key, value in list(attributes.items()):
            if value is source:
                attributes[key] = target
    target.reset_cfg_list()


@properties.make_properties
class OffloadToAccelerator(ppl.Pass):
    """Offloads an SDFG to an accelerator with this project's pass, in
    place, and returns the :class:`~sdfg_offload.Report`.

    A DaCe pass: it can sit in a ``Pipeline`` and replaces
    ``sdfg.apply_gpu_transformations()`` in a script with one line::

        from sdfg_offload import OffloadToAccelerator
        OffloadToAccelerator(backend="cuda").apply_pass(sdfg, {})

    Offloading is idempotent (offloading the result again changes nothing),
    so the pass never asks to be applied again.
    """

    CATEGORY: str = "Offloading"
    __explicit_cf_compatible__ = True

    backend = properties.Property(dtype=str, default="cuda", desc="The accelerator: cuda, hip or sim")
    host_maps = properties.Property(dtype=str, default="none", desc="Maps that stay on the host: none, auto, or labels separated by commas")
    persistent = properties.Property(dtype=bool, default=True, desc="Whether loops whose tests read device data may become persistent kernels")
    args_on_device = properties.Property(dtype=bool, default=False, desc="Whether the arguments already live on the device (CuPy arrays)")

    def __init__(
        self,
        backend: str = "cuda",
        host_maps: Optional[str] = None,
        persistent: bool = True,
        args_on_device: bool = False,
    ) -> None:
        super().__init__()
        self.backend = backend
        self.host_maps = host_maps or "none"
        self.persistent = persistent
        self.args_on_device = args_on_device

    def modifies(self) -> ppl.Modifies:
        return ppl.Modifies.Everything

    def should_reapply(self, modified: ppl.Modifies) -> bool:
        return False

    def apply_pass(self, sdfg, pipeline_results: dict[str, Any]) -> Report:
        result, report = offload(
            sdfg,
            backend=self.backend,
            host_maps=self.host_maps,
            persistent=self.persistent,
            args_on_device=self.args_on_device,
            with_report=True,
        )
        _adopt(sdfg, result)
        return report

    def report(self, pass_retval: Any) -> Optional[str]:
        return None if pass_retval is None else str(pass_retval)
