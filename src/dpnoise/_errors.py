"""The dpnoise exception family: every library-specific error derives from DPError."""
from dpnoise._core import DPError, EntropyError


class BudgetExceededError(DPError):
    """A release would exceed the privacy budget; raised before any noise is drawn."""


__all__ = ["BudgetExceededError", "DPError", "EntropyError"]
