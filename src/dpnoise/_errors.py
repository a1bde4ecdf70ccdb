"""The dpnoise exception family: every library-specific error derives from DPError.

Defined in Python so that the pure-Python parts (``dpnoise.accounting``) import without the
compiled core; the extension registers these classes for the C++ exceptions it translates
(``dpnoise::entropy_error`` -> EntropyError, ``dpnoise::invariant_error`` -> InvariantError).
"""


class DPError(Exception):
    """Base class of every dpnoise-specific error."""


class EntropyError(DPError):
    """The operating system could not supply entropy; dpnoise never falls back to a weaker source."""


class BudgetExceededError(DPError):
    """A release would exceed the privacy budget; raised before any noise is drawn."""


class InsecureGeneratorError(DPError):
    """A release path was given a seeded or NumPy (non-secure) generator without ``allow_insecure=True``."""


class CapacityError(DPError, ValueError):
    """An aggregator's configuration cannot hold what it was given (e.g. a column sum of the
    public-matrix oracle beyond its bit planes): a configuration error, raised as one and never counted as malformed
    reports. The aggregator is unchanged. A ValueError too."""


class InvariantError(DPError):
    """An internal invariant of the core failed (a bug in dpnoise, never a user error): please report it."""


__all__ = ["BudgetExceededError", "CapacityError", "DPError", "EntropyError", "InsecureGeneratorError",
           "InvariantError"]
