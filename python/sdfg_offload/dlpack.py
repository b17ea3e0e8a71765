"""DLPack (https://dmlc.github.io/dlpack/latest/), the array exchange
protocol of PyTorch, JAX, CuPy and NumPy, both ways, without copies:

- :func:`interface` reads an object's ``__dlpack__`` capsule into the same
  description ``__array_interface__`` and ``__cuda_array_interface__``
  give (address, typestr, shape, strides), so a program takes any DLPack
  producer's memory, on the host or on the device;
- :func:`capsule` makes a capsule for memory this package owns
  (:class:`~sdfg_offload.DeviceArray`), so DLPack consumers take it.

The structures are DLPack's stable C ABI (``DLManagedTensor``, version 0.8
and later), read and written with ctypes.
"""

from __future__ import annotations

import ctypes
from typing import Any, Optional

import numpy as np

#: DLPack's device types this package uses.
CPU, CUDA, CUDA_HOST, ROCM = 1, 2, 3, 10
#: DLPack's type codes: int, uint, float, complex, bool.
_CODES = {0: "i", 1: "u", 2: "f", 5: "c", 6: "b"}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype = ctypes.py_object
_new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


def interface(array: Any) -> Optional[tuple[dict[str, Any], bool, Any]]:
    """``(interface, on the device, capsule)`` of a DLPack producer, or
    ``None`` for an object that is none. The capsule must be kept alive
    while the memory is used (it is not consumed: its producer's deleter
    runs when it is collected, as for a capsule nobody took)."""
    if not hasattr(array, "__dlpack__"):
        return None
    capsule = array.__dlpack__()
    address = _get_pointer(capsule, b"dltensor")
    tensor = DLManagedTensor.from_address(address).dl_tensor
    kind = _CODES.get(tensor.dtype.code)
    if kind is None or tensor.dtype.lanes != 1:
        raise TypeError(f"a DLPack tensor of type code {tensor.dtype.code} x{tensor.dtype.lanes}")
    itemsize = tensor.dtype.bits // 8
    typestr = ("|" if itemsize == 1 else "<") + kind + str(itemsize)
    shape = tuple(tensor.shape[d] for d in range(tensor.ndim))
    strides = None
    if tensor.strides:
        strides = tuple(tensor.strides[d] * itemsize for d in range(tensor.ndim))
    device = tensor.device.device_type in (CUDA, ROCM)
    return (
        {
            "shape": shape,
            "typestr": typestr,
            "data": ((tensor.data or 0) + tensor.byte_offset, False),
            "strides": strides,
        },
        device,
        capsule,
    )


class _Owned:
    """What a produced capsule keeps alive: the tensor and its shape."""

    def __init__(self, tensor: DLManagedTensor, shape, owner: Any) -> None:
        self.tensor, self.shape, self.owner = tensor, shape, owner


#: Capsules' keep-alives, by the address of their managed tensor; the
#: deleter a consumer calls removes the entry.
_LIVE: dict[int, _Owned] = {}


@_DELETER
def _delete(address: int) -> None:
    _LIVE.pop(address, None)


def capsule(address: int, shape: tuple[int, ...], dtype: np.dtype, device_type: int, owner: Any):
    """A ``dltensor`` capsule over ``address`` (C-contiguous ``shape`` of
    ``dtype`` on ``device_type``), keeping ``owner`` alive until the
    consumer calls its deleter."""
    dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    codes = {v: k for k, v in _CODES.items()}
    managed = DLManagedTensor()
    managed.dl_tensor.data = address
    managed.dl_tensor.device = DLDevice(device_type, 0)
    managed.dl_tensor.ndim = len(shape)
    managed.dl_tensor.dtype = DLDataType(codes[dtype.kind], dtype.itemsize * 8, 1)
    managed.dl_tensor.shape = ctypes.cast(dims, ctypes.POINTER(ctypes.c_int64))
    managed.dl_tensor.strides = None
    managed.dl_tensor.byte_offset = 0
    managed.deleter = _delete
    key = ctypes.addressof(managed)
    _LIVE[key] = _Owned(managed, dims, owner)
    return _new_capsule(key, b"dltensor", None)
