"""PyTorch CPU tensors: exact Gaussian noise in place, and a noise function for Opacus.

``gaussian_noise_(tensor, std)`` adds the exact discrete Gaussian on a fine grid to a CPU
float32/float64 tensor, in place, through a NumPy view of its memory (no copy of the tensor;
see :func:`dpnoise.integrations.numpy_random.gaussian_noise_` for the grid and the guarantee).

``generate_noise(std, reference, generator=None, secure_mode=False)`` has the signature of
Opacus' ``opacus.optimizers.optimizer._generate_noise`` and returns a noise tensor shaped like
``reference``, drawn from dpnoise's secure ChaCha20 whatever ``secure_mode`` says (torchcsprng,
which Opacus' secure mode relied on, is no longer maintained). Opacus then adds it to the
gradient with a floating-point addition, which is not exact; for an exact release add the noise
in place with ``gaussian_noise_(p.summed_grad, std)`` instead (docs/integrations.md).

torch is imported only when these functions are called; it is never a dependency of dpnoise.
"""
from __future__ import annotations

from typing import Any

from ..generator import Generator
from . import numpy_random


def _numpy_view(tensor: Any) -> Any:
    import torch

    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"tensor must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.device.type != "cpu":
        raise ValueError(f"tensor must be on the CPU, got device {tensor.device}")
    if tensor.dtype not in (torch.float32, torch.float64):
        raise TypeError(f"tensor must be float32 or float64, got {tensor.dtype}")
    if not tensor.is_contiguous():
        raise ValueError("tensor must be contiguous (noise is added in place)")
    if tensor.requires_grad:
        raise ValueError("tensor requires grad: add noise to a gradient (e.g. p.grad or p.summed_grad), "
                         "not to a parameter")
    return tensor.detach().numpy()  # shares the tensor's memory


def gaussian_noise_(tensor: Any, std: float, generator: Generator | None = None, *,
                    allow_insecure: bool = False) -> Any:
    """Add exact discrete Gaussian noise of standard deviation ``std`` to a CPU tensor in place.

    Parameters
    ----------
    tensor : torch.Tensor
        CPU, contiguous, float32 or float64, not a leaf that requires grad.
    std : float
        Positive, finite (DP-SGD: noise multiplier times the clipping norm).
    generator : dpnoise.Generator, optional
        Default a fresh secure one; a seeded one needs ``allow_insecure=True``.

    Returns
    -------
    torch.Tensor
        ``tensor``, noised; untouched if anything raised.

    Raises
    ------
    TypeError, ValueError
        A tensor of another kind (GPU, integer, non-contiguous), bad ``std`` or generator.
    """
    numpy_random.gaussian_noise_(_numpy_view(tensor), std, generator, allow_insecure=allow_insecure)
    return tensor


def generate_noise(std: float, reference: Any, generator: Any = None, secure_mode: bool = False) -> Any:
    """Opacus' ``_generate_noise(std, reference, generator, secure_mode)``, from dpnoise.

    Returns a tensor shaped and typed like ``reference`` (CPU) holding exact discrete Gaussian
    noise of standard deviation ``std`` on the grid of :func:`gaussian_noise_` (zero when
    ``std == 0``, as Opacus does). ``generator`` (a torch generator) and ``secure_mode`` are
    accepted for compatibility and ignored: the noise always comes from a fresh secure
    dpnoise generator.

    Parameters
    ----------
    std : float
        Standard deviation (>= 0, finite).
    reference : torch.Tensor
        Gives the shape and float dtype.
    generator, secure_mode
        Ignored (Opacus' signature).

    Returns
    -------
    torch.Tensor
        A new CPU tensor.
    """
    import torch

    out = torch.zeros_like(reference, device="cpu", memory_format=torch.contiguous_format)
    if std == 0:
        return out
    gaussian_noise_(out, std)
    return out


def add_noise_exact(optimizer: Any) -> None:
    """Opacus' ``DPOptimizer.add_noise``, exact: the noise is added in place to each
    parameter's ``summed_grad`` on the grid of :func:`gaussian_noise_` (no floating-point
    addition of noise), then stored in ``p.grad`` as Opacus does.

    Install it on an optimizer made by Opacus (``PrivacyEngine.make_private``)::

        optimizer.add_noise = functools.partial(add_noise_exact, optimizer)

    It uses Opacus' own processed-flag helpers, so it follows Opacus' checks (a gradient
    noised twice is refused).

    Parameters
    ----------
    optimizer : opacus.optimizers.DPOptimizer
        Its ``noise_multiplier``, ``max_grad_norm`` and parameters' ``summed_grad`` are used.
    """
    from opacus.optimizers.optimizer import _check_processed_flag, _mark_as_processed

    std = optimizer.noise_multiplier * optimizer.max_grad_norm
    for p in optimizer.params:
        _check_processed_flag(p.summed_grad)
        if std > 0:
            gaussian_noise_(p.summed_grad, std)
        p.grad = p.summed_grad.view_as(p)
        _mark_as_processed(p.summed_grad)


__all__ = ["add_noise_exact", "gaussian_noise_", "generate_noise"]
