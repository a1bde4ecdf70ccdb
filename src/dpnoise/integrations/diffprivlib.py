"""diffprivlib on dpnoise's secure keystream: a ``random_state=`` that diffprivlib accepts.

diffprivlib's mechanisms and models take ``random_state=`` as an int, ``None`` or a
``numpy.random.RandomState`` (``check_random_state``); a ``numpy.random.Generator`` and
``dpnoise.Generator`` are refused. :func:`random_state` gives a ``RandomState`` over dpnoise's
ChaCha20, so every random bit diffprivlib draws comes from a cryptographically secure stream
keyed from the operating system instead of MT19937 (whose state an observer can recover from
its outputs).

What this does NOT change: diffprivlib's samplers (Laplace, GaussianAnalytic, ...) remain
floating-point transformations of those bits, with the floating-point weaknesses Mironov (2012)
showed (the low-order bits of a float Laplace sample can reveal the input). For releases where
that matters, use dpnoise's mechanisms (``dpnoise.LaplaceMechanism``,
``dpnoise.GaussianMechanism``), which sample exactly on a grid; see docs/integrations.md.
"""
from __future__ import annotations

import numpy as np

from .numpy_random import random_state as _numpy_random_state


def random_state(seed: int | None = None, *, allow_insecure: bool = False) -> np.random.RandomState:
    """A ``random_state=`` for diffprivlib, drawing from dpnoise's secure ChaCha20.

    Parameters
    ----------
    seed : None or int
        None (default): keyed from the operating system, secure. An int gives a reproducible,
        NOT secure state, refused unless ``allow_insecure=True`` (tests only).
    allow_insecure : bool
        Allow a seed.

    Returns
    -------
    numpy.random.RandomState
        Pass it as ``random_state=`` to any diffprivlib mechanism, model or tool.

    Examples
    --------
    >>> from diffprivlib.mechanisms import Laplace  # doctest: +SKIP
    >>> from dpnoise.integrations.diffprivlib import random_state
    >>> Laplace(epsilon=1.0, sensitivity=1.0, random_state=random_state()).randomise(3.0)  # doctest: +SKIP
    """
    return _numpy_random_state(seed, allow_insecure=allow_insecure)


__all__ = ["random_state"]
