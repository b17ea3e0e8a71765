"""Type stubs of the Rust extension ``sdfg_offload._native`` (``python/src/lib.rs``).

The public API is the package's (``sdfg_offload``); these are the calls it
makes."""

from typing import Optional

__version__: str

#: A buffer: (address, dtype name, shape, strides in elements, on the device).
Buffer = tuple[int, str, list[int], list[int], bool]

def offload_dace(
    text: str,
    backend: str = "cuda",
    host_maps: str = "none",
    persistent: bool = True,
    args_on_device: bool = False,
) -> tuple[str, str, str]:
    """DaCe's JSON offloaded: (DaCe's JSON, the report's text, the report as JSON)."""

def compile(
    kind: str,
    text: str,
    file: str,
    program: Optional[str] = None,
    signature: Optional[dict[str, str]] = None,
    backend: str = "cuda",
    device: str = "auto",
    host_maps: str = "none",
    persistent: bool = True,
    args_on_device: bool = False,
) -> NativeProgram:
    """Compiles ``text`` (``kind``: ``python``, ``dace`` or ``json``) and loads it."""

class NativeProgram:
    """A compiled unit loaded in this process."""

    @property
    def parameters(self) -> list[tuple[str, str, str, list[str], str]]: ...
    @property
    def argument_names(self) -> list[str]: ...
    @property
    def source(self) -> Optional[str]: ...
    @property
    def entry(self) -> str: ...
    @property
    def report(self) -> str: ...
    @property
    def device(self) -> str: ...
    @property
    def library(self) -> Optional[str]: ...
    @property
    def states(self) -> int: ...
    def bind(self, buffers: list[Optional[Buffer]], given: dict[str, int]) -> dict[str, int]: ...
    def shape(self, index: int, symbols: dict[str, int]) -> list[int]: ...
    def run(self, values: list[int | Buffer]) -> int: ...
    def device_alloc(self, bytes: int) -> int: ...
    def device_copy(self, device: int, host: int, bytes: int, to_device: bool) -> None: ...
    def device_free(self, device: int) -> None: ...
    def counts(self) -> Optional[str]: ...
    def reset_counts(self) -> None: ...
