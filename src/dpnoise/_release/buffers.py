"""Arrays from other libraries, and ``out=`` buffers, checked before any charge.

Inputs: any CPU array that exposes the buffer protocol (NumPy, memoryview, array.array, ...)
or ``__dlpack__`` (PyTorch or JAX CPU tensors, CuPy refused) is read as a NumPy view without a
copy. Outputs (``out=``): such an array, writable, contiguous, of the release's exact shape and
dtype; it may be the input itself (in place). Every check runs before the budget is charged and
before any noise is drawn, and the kernel that fills ``out`` cannot fail once it has started,
so ``out`` is either fully noised or untouched.
"""
from __future__ import annotations

from typing import Any

import numpy as np

# DLPack device types (dlpack.h, DLDeviceType): kDLCPU = 1, kDLCUDAHost = 3 (pinned host memory,
# readable by the CPU); every other device's memory is not addressable here.
_CPU_DEVICES = (1, 3)


def _from_dlpack(obj: Any, name: str) -> np.ndarray:
    device = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (1, 0)
    if int(device[0]) not in _CPU_DEVICES:
        raise ValueError(f"{name} must be in CPU memory (DLPack device type {int(device[0])}, not kDLCPU): "
                         "copy it to the CPU first")
    try:
        return np.from_dlpack(obj)
    except (BufferError, TypeError, RuntimeError) as exc:
        raise TypeError(f"{name} could not be read through DLPack: {exc}") from None


def as_array(value: Any, name: str = "value") -> Any:
    """A NumPy view of a DLPack tensor (CPU only); anything else is returned as it is (NumPy
    reads buffer-protocol objects, lists and scalars itself)."""
    if isinstance(value, np.ndarray) or not hasattr(value, "__dlpack__"):
        return value
    return _from_dlpack(value, name)


def out_array(out: Any, shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    """``out`` as a writable, C-contiguous NumPy view of ``shape`` and ``dtype`` (the release's),
    sharing its memory; TypeError for a non-array or the wrong dtype, ValueError for the wrong
    shape, a read-only or non-contiguous buffer, or a device other than the CPU."""
    if isinstance(out, np.ndarray):
        arr = out
    elif hasattr(out, "__dlpack__"):
        arr = _from_dlpack(out, "out")
    else:
        try:
            memoryview(out)
        except TypeError:
            raise TypeError(f"out must be an array (buffer protocol or __dlpack__), got {type(out).__name__}") from None
        arr = np.asarray(out)
    want = np.dtype(dtype)
    if arr.dtype != want:
        kind = "integer " if arr.dtype.kind in "iub" else ""
        extra = ""
        if arr.dtype.kind == "f" and arr.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
            # float16 (or longdouble) gradients: name what out= takes instead of leaving the
            # reader to guess why float64 is asked for
            extra = (f"; {arr.dtype} is not written in place: out= takes float32 or float64 (a {arr.dtype} "
                     f"input is released as {want}: convert it, e.g. x.astype(np.float32))")
        raise TypeError(f"out must have dtype {want} (the release's), got {kind}dtype {arr.dtype}{extra}")
    if tuple(arr.shape) != tuple(shape):
        raise ValueError(f"out must have shape {tuple(shape)}, got {tuple(arr.shape)}")
    if not arr.flags.writeable:
        raise ValueError("out must be writable (it is read-only)")
    if not arr.flags.c_contiguous:
        raise ValueError("out must be C-contiguous (a strided view would leave gaps)")
    return arr


def same_buffer(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether a and b are the same memory with the same layout (in place is then safe)."""
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype)


def source_for(values: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``values`` as the kernel may read it while writing ``out``: itself when the two are the
    same buffer (element i is read before it is written) or do not overlap, else a copy (a
    shifted overlap would read values already overwritten)."""
    if np.may_share_memory(values, out) and not same_buffer(values, out):
        return values.copy()
    return values


__all__ = ["as_array", "out_array", "same_buffer", "source_for"]
