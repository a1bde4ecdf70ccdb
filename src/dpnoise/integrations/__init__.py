"""Adapters to other libraries (docs/integrations.md). Optional: each adapter imports its
library only when called, and none of them is a dependency of dpnoise.

* :mod:`dpnoise.integrations.numpy_random`: ``numpy.random.Generator`` / ``RandomState`` over
  dpnoise's ChaCha20 (for any consumer that takes a NumPy generator), and exact grid noise
  added in place to float32/float64 arrays (:func:`~.numpy_random.gaussian_noise_`).
* :mod:`dpnoise.integrations.diffprivlib`: a ``random_state=`` that diffprivlib accepts.
* :mod:`dpnoise.integrations.torch`: exact Gaussian noise added in place to PyTorch CPU
  tensors, and a noise function with the signature Opacus' optimizers call.
"""

__all__ = ["diffprivlib", "numpy_random", "torch"]
