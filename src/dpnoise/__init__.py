"""dpnoise: exact, secure differential-privacy noise.

The public surface: the secure generator (`default_rng`, `Generator`, `ChaCha20`) and the
library's exception family.
"""
from dpnoise._errors import BudgetExceededError, DPError, EntropyError
from dpnoise.bit_generator import ChaCha20
from dpnoise.generator import Generator, default_rng

__version__ = "0.1.0"

__all__ = [
    "BudgetExceededError",
    "ChaCha20",
    "DPError",
    "EntropyError",
    "Generator",
    "default_rng",
    "__version__",
]
